"""A transaction queued before the server became a replica whose link is down, with
replica-serve-stale-data no: EXEC of commands a stale replica refuses is EXECABORT
MASTERDOWN; a transaction of allowed (stale) commands, or run once the link is gone
again (REPLICAOF NO ONE), runs."""

from __future__ import annotations

import pytest

MASTERDOWN_ABORT = ("-", b"EXECABORT Transaction discarded because of: MASTERDOWN Link with "
                         b"MASTER is down and replica-serve-stale-data is set to 'no'.")


@pytest.fixture
def pair(private_target):
    server = private_target()
    r, r1 = server.raw(2), server.raw(2)
    r.call("CONFIG", "SET", "replica-serve-stale-data", "no")
    r.call("SET", "xx", "1")
    yield r, r1
    r1.call("REPLICAOF", "NO", "ONE")
    r.close()
    r1.close()


@pytest.mark.parametrize("queued", [("GET", "xx"), ("PING",)])
def test_exec_after_becoming_a_stale_replica_aborts(pair, queued):
    r, r1 = pair
    r.call("MULTI")
    assert r.call(*queued) == ("+", b"QUEUED")
    r1.call("REPLICAOF", "127.0.0.1", "1")  # nothing listens there: the link stays down
    assert r.call("EXEC") == MASTERDOWN_ABORT


def test_exec_once_a_primary_again_runs(pair):
    r, r1 = pair
    r1.call("REPLICAOF", "127.0.0.1", "1")
    r.call("MULTI")  # MULTI itself is allowed on a stale replica
    r1.call("REPLICAOF", "NO", "ONE")
    r.call("GET", "xx")
    assert r.call("EXEC") == ("*", [("$", b"1")])
