"""EMQ.BCLAIM (spec emq.md 7.2): the claim that waits, with Valkey's rules for blocked
clients. The verbs are the module's, so these run on fakekey alone, in RESP2 and RESP3."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.emq.scripts import SCRIPTS
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient

NOW = 1_700_000_000_000  # the conftest freezes the clock here

Q = "emq:{orders}:"
Q2 = "emq:{other}:"


def k(suffix: str, queue: str = Q) -> str:
    return queue + suffix


def empty(proto: int) -> tuple[str, list[object]]:
    return ("*", [])


def bclaim_argv(lease: int = 1000, timeout: int = 0, queue: str = Q) -> tuple[object, ...]:
    return ("EMQ.BCLAIM", 2, k("pending", queue), k("active", queue), lease, timeout)


def enqueue(r: RawClient, job: str, queue: str = Q, delay: int = 0) -> None:
    assert r.call("EMQ.ENQUEUE", 3, k(job, queue), k("pending", queue), k("schedule", queue),
                  "p-" + job, delay, 0) == (":", 1)


def leased(reply: object, job: str, fence: int) -> bool:
    return reply == ("*", [("$", job.encode()), ("$", b"p-" + job.encode()), (":", 1), (":", fence)])


def blocked(r: RawClient) -> int:
    info = r.call("INFO", "clients")[1].decode()
    return int(info.split("blocked_clients:")[1].split("\r\n")[0])


def wait_blocked(r: RawClient, count: int) -> None:
    deadline = time.time() + 2
    while blocked(r) != count:
        assert time.time() < deadline, f"never saw {count} blocked clients"
        time.sleep(0.005)


def parked(conn: RawClient, wait: float = 0.05) -> bool:
    return not conn.is_closed(wait) and conn.buf == b""


@pytest.fixture
def waiters(server: Server, r: RawClient) -> Iterator[list[RawClient]]:
    """Three more connections in the test's protocol."""
    proto = 3 if r.call("HELLO")[0] == "%" else 2
    conns = [RawClient(server.host, server.port) for _ in range(3)]
    for conn in conns:
        conn.call("HELLO", proto)
    yield conns
    for conn in conns:
        conn.close()


def test_leases_at_once_as_claim_does(r):
    enqueue(r, "JOB1")
    assert leased(r.call(*bclaim_argv()), "JOB1", 1)
    assert r.call("ZSCORE", k("active"), "JOB1")[1] == str(NOW + 1000).encode()


def test_parked_claimers_are_served_first_come_first_served(r, waiters):
    for i, conn in enumerate(waiters):
        conn.send(*bclaim_argv())
        wait_blocked(r, i + 1)
    enqueue(r, "JOB1")
    assert leased(waiters[0].read(), "JOB1", 1)
    assert parked(waiters[1]) and parked(waiters[2])
    enqueue(r, "JOB2")
    assert leased(waiters[1].read(), "JOB2", 2)
    enqueue(r, "JOB3")
    assert leased(waiters[2].read(), "JOB3", 3)
    assert blocked(r) == 0


def test_one_job_per_waiter_served_after_exec(r, waiters):
    first, second, third = waiters
    first.send(*bclaim_argv())
    wait_blocked(r, 1)
    second.send(*bclaim_argv())
    wait_blocked(r, 2)
    third.send(*bclaim_argv())
    wait_blocked(r, 3)
    replies = r.pipeline(("MULTI",), ("EMQ.ENQUEUE", 3, k("JOB1"), k("pending"), k("schedule"), "p-JOB1", 0, 0),
                         ("EMQ.ENQUEUE", 3, k("JOB2"), k("pending"), k("schedule"), "p-JOB2", 0, 0), ("EXEC",))
    assert replies[-1] == ("*", [(":", 1), (":", 1)])
    assert leased(first.read(), "JOB1", 1)
    assert leased(second.read(), "JOB2", 2)
    assert parked(third)
    assert r.call("EXISTS", k("pending")) == (":", 0)


def test_a_wire4_script_makes_work_claimable(r, waiters):
    waiters[0].send(*bclaim_argv())
    wait_blocked(r, 1)
    script = SCRIPTS["enqueue"]
    assert r.call("EVAL", script.source, 3, k("JOB1"), k("pending"), k("schedule"), "p-JOB1", 0, 0, NOW) == (":", 1)
    assert leased(waiters[0].read(), "JOB1", 1)


def test_claimers_of_another_queue_are_not_woken(r, waiters):
    waiters[0].send(*bclaim_argv(queue=Q2))
    wait_blocked(r, 1)
    waiters[1].send(*bclaim_argv())
    wait_blocked(r, 2)
    enqueue(r, "JOB1")
    assert leased(waiters[1].read(), "JOB1", 1)
    assert parked(waiters[0])
    enqueue(r, "JOB9", queue=Q2)
    assert leased(waiters[0].read(), "JOB9", 1)


@pytest.mark.parametrize("resume_by", ["verb", "script"])
def test_a_paused_queue_parks_its_claimers_until_resumed(r, waiters, resume_by):
    assert r.call("EMQ.PAUSE", 1, k("meta")) == ("+", b"OK")
    enqueue(r, "JOB1")
    waiters[0].send(*bclaim_argv())
    wait_blocked(r, 1)
    enqueue(r, "JOB2")  # pending written while paused: the claimer looks and parks again
    assert parked(waiters[0])
    if resume_by == "verb":
        assert r.call("EMQ.RESUME", 1, k("meta")) == ("+", b"OK")
    else:
        assert r.call("EVAL", SCRIPTS["resume"].source, 1, k("meta"), NOW) == ("+", b"OK")
    assert leased(waiters[0].read(), "JOB1", 1)


def test_timeout_runs_on_the_server_clock(r, waiters):
    waiters[0].send(*bclaim_argv(timeout=500))
    wait_blocked(r, 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 499)
    assert parked(waiters[0])
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1)
    assert waiters[0].read() == ("*", [])
    assert blocked(r) == 0


def test_timeout_on_the_real_clock(r, waiters):
    r.call("FAKEKEY.CLOCK", "REAL")
    waiters[0].send(*bclaim_argv(timeout=30))
    assert waiters[0].read() == ("*", [])


def test_never_blocks_inside_multi_or_a_script(r):
    replies = r.pipeline(("MULTI",), bclaim_argv(), ("EXEC",))
    assert replies[-1] == ("*", [("*", [])])
    reply = r.call("EVAL", "return redis.call('EMQ.BCLAIM', 2, KEYS[1], KEYS[2], 1000, 0)", 2,
                   k("pending"), k("active"))
    assert reply == ("*", [])
    assert blocked(r) == 0


@pytest.mark.parametrize(("how", "reply"), [
    ("TIMEOUT", ("*", [])),
    ("ERROR", ("-", b"UNBLOCKED client unblocked via CLIENT UNBLOCK")),
])
def test_client_unblock_both_ways(r, waiters, how, reply):
    conn = waiters[0]
    client_id = conn.call("CLIENT", "ID")[1]
    conn.send(*bclaim_argv())
    wait_blocked(r, 1)
    assert r.call("CLIENT", "UNBLOCK", client_id, how) == (":", 1)
    assert conn.read() == reply
    enqueue(r, "JOB1")  # the job stays for the next claimer
    assert r.call("ZCARD", k("pending")) == (":", 1)


def test_a_parked_claimer_is_listed_blocked(r, waiters):
    waiters[0].send(*bclaim_argv())
    wait_blocked(r, 1)
    listing = r.call("CLIENT", "LIST")[1].decode()
    line = next(line for line in listing.splitlines() if "cmd=emq.bclaim" in line)
    assert " flags=b " in line


def test_a_claimer_killed_while_parked_takes_nothing(r, waiters):
    waiters[0].send(*bclaim_argv())
    wait_blocked(r, 1)
    waiters[1].send(*bclaim_argv())
    wait_blocked(r, 2)
    waiters[0].close()
    wait_blocked(r, 1)
    enqueue(r, "JOB1")
    assert leased(waiters[1].read(), "JOB1", 1)


def test_command_info_shows_the_blocking_flag(r):
    reply = r.call("COMMAND", "INFO", "emq.bclaim")
    text = repr(reply)
    assert "b'blocking'" in text and "b'@blocking'" in text
    arity = reply[1][0][1][1]
    assert arity == (":", 6)


def test_argument_checks(r):
    assert r.call(*bclaim_argv(timeout=-1)) == ("-", b"EMQARG timeout_ms must be a non-negative integer")
    assert r.call(*bclaim_argv(lease=0)) == ("-", b"EMQARG lease_ms must be a positive integer")
    assert r.call(*bclaim_argv(timeout=2**63 - 1)) == ("-", b"ERR timeout is out of range")
    assert r.call("EMQ.BCLAIM", 2, k("pending"), k("active"), 1000) == (
        "-", b"ERR wrong number of arguments for 'emq.bclaim' command")


def test_counts_one_call_when_served(r, waiters):
    r.call("CONFIG", "RESETSTAT")
    waiters[0].send(*bclaim_argv())
    wait_blocked(r, 1)
    enqueue(r, "JOB1")
    assert leased(waiters[0].read(), "JOB1", 1)
    stats = r.call("INFO", "commandstats")[1].decode()
    assert "cmdstat_emq.bclaim:calls=1," in stats


# --- EMQ.GBCLAIM: the lane ring's claim that waits -------------------------------------------

LANE_BLOCK = ("ring", "gpaused", "glimit", "gactive", "wake")


def gbclaim_argv(lease: int = 1000, timeout: int = 0) -> tuple[object, ...]:
    return ("EMQ.GBCLAIM", 3, k("ring"), k("active"), Q, lease, timeout)


def genqueue(r: RawClient, job: str, group: str) -> None:
    keys = [k(job), k("lane:" + group), *(k(s) for s in LANE_BLOCK)]
    assert r.call("EMQ.GENQUEUE", len(keys), *keys, "p-" + job, group) == (":", 1)


def lane_leased(reply: object, job: str, group: str, attempts: int = 1) -> bool:
    return reply == ("*", [("$", job.encode()), ("$", b"p-" + job.encode()), (":", attempts),
                           ("$", group.encode())])


def test_gbclaim_leases_at_once_and_waits_for_a_group_to_join_the_ring(r, waiters):
    genqueue(r, "JOB1", "g1")
    assert lane_leased(r.call(*gbclaim_argv()), "JOB1", "g1")
    first, second = waiters[0], waiters[1]
    first.send(*gbclaim_argv())
    wait_blocked(r, 1)
    second.send(*gbclaim_argv())
    wait_blocked(r, 2)
    genqueue(r, "JOB2", "g2")
    assert lane_leased(first.read(), "JOB2", "g2")
    genqueue(r, "JOB3", "g3")
    assert lane_leased(second.read(), "JOB3", "g3")


def test_gbclaim_skips_an_unserviceable_head_group(r):
    genqueue(r, "JOB1", "g1")
    genqueue(r, "JOB2", "g2")
    r.call("SADD", k("gpaused"), "g1")  # g1 stays at the ring's head, no longer serviceable
    assert lane_leased(r.call(*gbclaim_argv()), "JOB2", "g2")


def test_gbclaim_parks_while_the_queue_is_paused(r, waiters):
    genqueue(r, "JOB1", "g1")
    assert r.call("EMQ.PAUSE", 1, k("meta")) == ("+", b"OK")
    waiters[0].send(*gbclaim_argv())
    wait_blocked(r, 1)
    assert r.call("EMQ.RESUME", 1, k("meta")) == ("+", b"OK")
    assert lane_leased(waiters[0].read(), "JOB1", "g1")


def test_gbclaim_times_out_on_the_server_clock(r, waiters):
    waiters[0].send(*gbclaim_argv(timeout=100))
    wait_blocked(r, 1)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 100)
    assert waiters[0].read() == ("*", [])


# --- the Consumer parked on the blocking claim ----------------------------------------------


def test_a_consumer_parked_on_the_claim_takes_flat_work_without_a_doorbell(server: Server):
    import redis

    from fakekey.emq.consumer import Consumer
    from fakekey.emq.queue import Queue

    client = redis.Redis(host=server.host, port=server.port)
    client.execute_command("FAKEKEY.CLOCK", "REAL")
    client.flushall()
    handled: list[str] = []
    consumer = Consumer(client, "orders", lambda job: handled.append(job.id), wire=6, park="claim",
                        beat=30, heartbeat=False)
    consumer.start()
    try:
        deadline = time.time() + 2
        while "cmd=emq.bclaim" not in client.execute_command("CLIENT", "LIST").decode():
            assert time.time() < deadline, "the consumer never parked on EMQ.BCLAIM"
            time.sleep(0.005)
        queue = Queue(client, "orders", wire=6)
        queue.enqueue("JOB1", "p")  # a flat enqueue rings nothing: the claim itself wakes
        deadline = time.time() + 2
        while handled != ["JOB1"]:
            assert time.time() < deadline, "the parked claim never leased the job"
            time.sleep(0.005)
        assert client.llen(queue.key("wake")) == 0
    finally:
        consumer.stop()
        client.close()


def test_park_claim_needs_wire_6(server: Server):
    import redis

    from fakekey.emq.consumer import Consumer
    from fakekey.emq.queue import WireError

    client = redis.Redis(host=server.host, port=server.port)
    with pytest.raises(WireError):
        Consumer(client, "orders", lambda job: None, wire=4, park="claim")
    client.close()
