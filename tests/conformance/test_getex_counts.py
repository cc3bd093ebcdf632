"""GETEX with EX, PX, EXAT or PXAT counts one change whenever the key is there, even when
the deadline is the one it had (Valkey's getexCommand), and so it is propagated each time
as PEXPIREAT; PERSIST counts only when it removed a deadline."""

from __future__ import annotations

import pytest

from tests.conformance.test_replication_stream import Stream, ops


def dirty(r2) -> int:
    info = r2.call("INFO", "persistence")[1].decode()
    fields = dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)
    return int(fields["rdb_changes_since_last_save"])


@pytest.mark.parametrize(("command", "counted"), [
    (("GETEX", "k"), 0),
    (("GETEX", "k", "PERSIST"), 0),
    (("GETEX", "nope", "EX", "5"), 0),
    (("GETEX", "k", "EX", "100"), 1),
    (("GETEX", "k", "PXAT", "99999999999999"), 1),
    (("GETEX", "k", "PXAT", "1"), 1),
])
def test_getex_dirty_count(r2, command, counted):
    r2.call("SET", "k", "v")
    before = dirty(r2)
    r2.call(*command)
    assert dirty(r2) - before == counted


def test_the_same_deadline_counts_again(r2):
    r2.call("SET", "k", "v")
    r2.call("GETEX", "k", "PXAT", "99999999999999")
    before = dirty(r2)
    r2.call("GETEX", "k", "PXAT", "99999999999999")
    r2.call("GETEX", "k", "PERSIST")
    r2.call("GETEX", "k", "PERSIST")
    assert dirty(r2) - before == 2


def test_the_same_deadline_is_propagated_again(target, r2):
    stream = Stream(target)
    try:
        r2.call("SET", "k", "v")
        r2.call("GETEX", "k", "PXAT", "99999999999999")
        r2.call("GETEX", "k", "PXAT", "99999999999999")
        assert stream.commands(r2) == ops(
            "SELECT 0", "SET k v", "PEXPIREAT k 99999999999999", "PEXPIREAT k 99999999999999")
    finally:
        stream.close()
