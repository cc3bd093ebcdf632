"""Keys found expired by a command are propagated as their removal, in the command's
unit: wrapped in MULTI/EXEC with the rest when there is more than one, except for SCAN
and RANDOMKEY, which may touch any key (Valkey's TOUCHES_ARBITRARY_KEYS): theirs go out
one by one."""

from __future__ import annotations

import time

import pytest

from tests.conformance.test_replication_stream import Stream


def server_ms(r2) -> int:
    seconds, micros = r2.call("TIME")[1]
    return int(seconds[1]) * 1000 + int(micros[1]) // 1000


@pytest.fixture
def two_expired(target, r2):
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    r2.call("SET", "foo1", "bar", "PX", "1")
    r2.call("SET", "foo2", "bar", "PX", "1")
    due = server_ms(r2) + 2  # past both deadlines; nothing reads the keys meanwhile
    deadline = time.monotonic() + 10
    while server_ms(r2) <= due:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    stream = Stream(target)
    yield stream
    stream.close()
    r2.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def removals_sorted(commands: list[list[bytes]]) -> list[list[bytes]]:
    """The stream with the UNLINKs of a run put in key order (their order is the walk's)."""
    out, run = [], []
    for argv in commands + [[b"<end>"]]:
        if argv[0] == b"UNLINK":
            run.append(argv)
            continue
        out += sorted(run)
        run = []
        out.append(argv)
    return out[:-1]


@pytest.mark.parametrize("command", [("SCAN", "0"), ("RANDOMKEY",)])
def test_arbitrary_key_commands_do_not_wrap_their_expiries(two_expired, r2, command):
    r2.call(*command)
    assert removals_sorted(two_expired.commands(r2)) == [
        [b"SELECT", b"0"], [b"UNLINK", b"foo1"], [b"UNLINK", b"foo2"]]


@pytest.mark.parametrize("command", [("MGET", "foo1", "foo2"), ("EXISTS", "foo1", "foo2")])
def test_other_commands_wrap_them(two_expired, r2, command):
    r2.call(*command)
    assert removals_sorted(two_expired.commands(r2)) == [
        [b"MULTI"], [b"SELECT", b"0"], [b"UNLINK", b"foo1"], [b"UNLINK", b"foo2"], [b"EXEC"]]
