"""Users from files: `aclfile` with ACL SAVE / ACL LOAD, and `user` lines in the config
file. Each test starts its own server (fakekey and a real valkey-server) on a fresh
directory, since both settings are read at startup."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fakekey.cli import parse_argv
from fakekey.config.settings import Config, ConfigError
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

Start = Callable[[list[str]], RawClient]
KINDS = [k.strip() for k in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",") if k.strip()]
PW = "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"  # sha256("pw")


def _valkey(args: list[str], stack: list) -> int:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    port = free_port()
    head = args[:1] if not args[0].startswith("--") else []  # the config file comes first
    proc = subprocess.Popen([binary, *head, "--port", str(port), *args[len(head):]],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.append(lambda: (proc.terminate(), proc.wait(10)))
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            with RawClient("127.0.0.1", port, timeout=1) as client:
                if client.call("PING")[0] in ("+", "-"):  # NOAUTH: up, with a password
                    return port
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("valkey-server did not start")


def _fakekey(args: list[str], stack: list) -> int:
    server = Server(config=parse_argv(args))
    server.start()
    stack.append(server.stop)
    return server.port


@pytest.fixture(params=KINDS)
def start(request: pytest.FixtureRequest) -> Iterator[Start]:
    """start([config-file, --flag, value...]) -> a raw client on a new server."""
    stack: list[Callable[[], object]] = []
    clients: list[RawClient] = []

    def run(args: list[str]) -> RawClient:
        flags = ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"]
        launch = _fakekey if request.param == "fakekey" else _valkey
        head = args[:1] if args and not args[0].startswith("--") else []
        port = launch([*head, *flags, *args[len(head):]], stack)
        client = RawClient("127.0.0.1", port)
        clients.append(client)
        return client

    yield run
    for client in clients:
        client.close()
    for stop in reversed(stack):
        stop()


def test_acl_file_save_and_load(start: Start, tmp_path: Path) -> None:
    acl = tmp_path / "users.acl"
    acl.write_text("user alice on >pw ~a* +@all\nuser default on nopass ~* &* +@all\n")
    r = start(["--aclfile", str(acl)])
    assert r.call("ACL", "LIST") == ("*", [
        ("$", f"user alice on #{PW} ~a* resetchannels +@all".encode()),
        ("$", b"user default on nopass ~* &* +@all"),
    ])
    with RawClient(*r.sock.getpeername()[:2]) as alice:
        assert alice.call("AUTH", "alice", "pw") == ("+", b"OK")
    r.call("ACL", "SETUSER", "bob", "on", ">pw", "(~b* +get)")
    assert r.call("ACL", "SAVE") == ("+", b"OK")
    assert acl.read_text() == (
        f"user alice on #{PW} ~a* resetchannels +@all\n"
        f"user bob on #{PW} resetchannels -@all (~b* resetchannels -@all +get)\n"
        "user default on nopass ~* &* +@all\n")
    acl.write_text("user carol on +nosuch foo\nbad line\nuser carol on\n")
    assert r.call("ACL", "LOAD") == ("-", (
        f"ERR {acl}:1: Error in applying operation '+nosuch': Unknown command or category name "
        f"in ACL. {acl}:1: Syntax error. {acl}:2 should start with user keyword followed by the "
        "username. WARNING: Duplicate user 'carol' found on line 3. WARNING: ACL errors "
        "detected, no change to the previously active ACL rules was performed").encode())
    assert len(r.call("ACL", "USERS")[1]) == 3  # unchanged
    acl.write_text("user erin on >pw\n")
    assert r.call("ACL", "LOAD") == ("+", b"OK")
    assert r.call("ACL", "LIST") == ("*", [
        ("$", b"user default on nopass ~* &* +@all"),
        ("$", f"user erin on #{PW} resetchannels -@all".encode()),
    ])
    acl.unlink()
    assert r.call("ACL", "LOAD") == ("-", (
        f"ERR Error loading ACLs, opening file '{acl}': No such file or directory").encode())


def test_user_lines_in_the_config_file(start: Start, tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text("user frank on >pw ~f* +@all\nuser default on nopass ~* +@all -flushall\n")
    r = start([str(conf)])
    assert r.call("ACL", "LIST") == ("*", [
        ("$", b"user default on nopass ~* resetchannels +@all -flushall"),
        ("$", f"user frank on #{PW} ~f* resetchannels +@all".encode()),
    ])
    assert r.call("FLUSHALL") == ("-", b"NOPERM User default has no permissions to run the 'flushall' command")
    assert r.call("ACL", "SAVE")[1].startswith(b"ERR This instance is not configured to use an ACL file.")


def test_a_bad_user_line_is_a_fatal_config_error() -> None:
    """fakekey's own check of `user` lines, worded as Valkey's startup report."""
    with pytest.raises(ConfigError, match=r"^Error in user declaration 'bad': Syntax error$"):
        Server(config=[("user", ["bad", "on", "foo"])])
    Config([("user", ["later", "on", "+nosuch"])])  # unknown commands wait for the command table
    with pytest.raises(ConfigError, match="Aborting startup because of ACL errors"):
        Server(config=[("user", ["later", "on", "+nosuch"])])


def test_config_file_lines_are_split_as_valkey_splits_them(start: Start, tmp_path: Path) -> None:
    """One splitter (sdssplitargs) for config lines, inline requests and shebangs: escapes
    in double quotes, and quoted parts joined to the unquoted ones beside them."""
    conf = tmp_path / "server.conf"
    conf.write_text('requirepass "a\\x41"\n')
    r = start([str(conf)])
    assert r.call("AUTH", "ax41") == ("-", b"WRONGPASS invalid username-password pair or user is disabled.")
    assert r.call("AUTH", "aA") == ("+", b"OK")
    conf.write_text('requirepass a"b c"d\n')
    r = start([str(conf)])
    assert r.call("AUTH", "ab cd") == ("+", b"OK")
    assert r.call("CONFIG", "GET", "requirepass") == ("*", [("$", b"requirepass"), ("$", b"ab cd")])


def test_acl_file_lines_are_split_on_spaces_not_as_config_lines(start: Start, tmp_path: Path) -> None:
    """Valkey splits an ACL file's lines on single spaces (sdssplitlen), not with the
    config file's sdssplitargs: quotes stay part of the name."""
    acl = tmp_path / "users.acl"
    acl.write_text('user default on nopass ~* &* +@all\nuser "bob" on nopass ~* +@all\n')
    r = start(["--aclfile", str(acl)])
    assert r.call("ACL", "USERS") == ("*", [("$", b'"bob"'), ("$", b"default")])
