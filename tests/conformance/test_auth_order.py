"""With a password required, an unauthenticated client hears NOAUTH before anything else,
protected commands (DEBUG with enable-debug-command no, CONFIG SET of a protected
setting) included; authenticated, it gets their refusals."""

from __future__ import annotations

import pytest

NOAUTH = ("-", b"NOAUTH Authentication required.")


@pytest.fixture
def locked(private_target):
    server = private_target("--enable-debug-command", "no", "--enable-protected-configs", "no")
    admin = server.raw(2)
    admin.call("CONFIG", "SET", "requirepass", "mypass")
    client = server.raw(2)
    yield client
    client.close()
    admin.close()


def test_noauth_comes_before_the_protected_refusal(locked):
    assert locked.call("DEBUG", "HELP") == NOAUTH
    assert locked.call("CONFIG", "SET", "dir", "somedir") == NOAUTH
    assert locked.call("NO-SUCH-COMMAND") == NOAUTH
    assert locked.call("AUTH", "mypass") == ("+", b"OK")
    assert locked.call("DEBUG", "HELP")[1].startswith(b"ERR DEBUG command not allowed.")
    assert locked.call("CONFIG", "SET", "dir", "somedir")[1].endswith(b"can't set protected config")
