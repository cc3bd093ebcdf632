"""ACL LOAD closes only the affected connections: those of users the file no longer has,
and subscribers to channels their user lost; a client that revokes its own channels
hears its OK first."""

from __future__ import annotations

import pytest

from fakekey.testing.raw import RawClient


@pytest.fixture
def aclfile_server(private_target, tmp_path):
    (tmp_path / "users.acl").write_text("user alice on >alice ~* &* +@all\n"
                                        "user default on nopass ~* &* +@all\n")
    return private_target("--dir", str(tmp_path), "--aclfile", "users.acl")


def closed(client: RawClient) -> bool:
    try:
        client.call("PING")
    except (OSError, EOFError, ConnectionError):
        return True
    return False


def test_only_the_deleted_users_clients_go(aclfile_server):
    server = aclfile_server
    with server.raw(2) as admin, server.raw(2) as alice, server.raw(2) as doug:
        admin.call("ACL", "SETUSER", "doug", "on", "nopass", "+@all", "~*", "&*")
        assert alice.call("AUTH", "alice", "alice") == ("+", b"OK")
        assert doug.call("AUTH", "doug", "x") == ("+", b"OK")
        assert admin.call("ACL", "LOAD") == ("+", b"OK")
        assert admin.call("PING") == ("+", b"PONG")
        assert alice.call("PING") == ("+", b"PONG")
        assert closed(doug)


def test_revoking_ones_own_channels_answers_then_closes(r2, target):
    r2.call("ACL", "SETUSER", "selfrevoker", "on", "nopass", "+@all", "&test")
    try:
        with target.raw(3) as client:
            assert client.call("AUTH", "selfrevoker", "x") == ("+", b"OK")
            client.call("SUBSCRIBE", "test")
            assert client.call("ACL", "SETUSER", "selfrevoker", "resetchannels") == ("+", b"OK")
            assert closed(client)
    finally:
        r2.call("ACL", "DELUSER", "selfrevoker")
