"""acl-pubsub-default: with allchannels, users made afterwards (and `reset`) get every
channel, so a channel pattern added to them is refused; users made before keep theirs.
And an `aclfile` named relative to `dir` is read from `dir`, as Valkey works from there."""

from __future__ import annotations

import pytest

NOT_AFTER_ALL = (b"ERR Error in ACL SETUSER modifier '&test': Adding a pattern after the * "
                 b"pattern (or the 'allchannels' flag) is not valid and does not have any "
                 b"effect. Try 'resetchannels' to start with an empty list of channels")


@pytest.fixture
def all_channels(r2):
    r2.call("CONFIG", "SET", "acl-pubsub-default", "allchannels")
    yield r2
    r2.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
    r2.call("ACL", "DELUSER", "before", "after", "onechannel")


def acl_list(r2) -> list[bytes]:
    return [line for _, line in r2.call("ACL", "LIST")[1]]


def test_new_users_and_reset_follow_the_setting(r2):
    r2.call("ACL", "SETUSER", "before")
    r2.call("CONFIG", "SET", "acl-pubsub-default", "allchannels")
    try:
        r2.call("ACL", "SETUSER", "after")
        assert b"user before off resetchannels -@all" in acl_list(r2)
        assert b"user after off &* -@all" in acl_list(r2)
        r2.call("ACL", "SETUSER", "before", "reset")
        assert b"user before off &* -@all" in acl_list(r2)
    finally:
        r2.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
        r2.call("ACL", "DELUSER", "before", "after")


def test_a_channel_after_all_channels_is_refused(all_channels):
    assert all_channels.call("ACL", "SETUSER", "onechannel", "&test") == ("-", NOT_AFTER_ALL)
    assert all_channels.call("ACL", "SETUSER", "onechannel", "resetchannels", "&test") == (
        "+", b"OK")


def test_aclfile_is_read_from_dir(private_target, tmp_path):
    (tmp_path / "users.acl").write_text("user alice on nopass ~* &* +@all\n"
                                        "user default on nopass ~* &* +@all\n")
    server = private_target("--dir", str(tmp_path), "--aclfile", "users.acl")
    client = server.raw(2)
    try:
        assert client.call("ACL", "USERS") == ("*", [("$", b"alice"), ("$", b"default")])
        client.call("ACL", "SETUSER", "bob", "on", "nopass")
        assert client.call("ACL", "SAVE") == ("+", b"OK")
        assert "user bob on" in (tmp_path / "users.acl").read_text()
    finally:
        client.close()
