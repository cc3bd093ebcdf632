"""The `Queue` client (fakekey.emq.queue) on fakekey, and the wire-4 scripts against the
wire-6 verbs: driven with the same operations on the same frozen clock, both wires give
the same replies and leave the same keyspace.

The differential part needs the verbs (`EMQ.CAPS 0` answers); the rest does not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import event, given
from hypothesis import strategies as st

from fakekey.emq import SCRIPTS, ClaimedJob, LaneJob, Queue, WireError
from fakekey.net.server import Server

NOW = 1_700_000_000_000
WIRE4_DB, WIRE6_DB = 1, 2


@pytest.fixture(scope="module")
def queue_server() -> Iterator[Server]:
    with Server() as srv:
        yield srv


def _client(srv: Server, db: int, protocol: int = 2) -> redis.Redis:
    return redis.Redis(host=srv.host, port=srv.port, db=db, protocol=protocol)


@pytest.fixture
def wire4(queue_server: Server) -> Iterator[Queue]:
    client = _client(queue_server, WIRE4_DB)
    client.flushall()
    queue_server.freeze(NOW)
    yield Queue(client, "orders", wire=4)
    client.close()


def _verbs_served(client: redis.Redis) -> bool:
    try:
        return b"enqueue" in client.execute_command("EMQ.CAPS", 0)
    except redis.ResponseError:
        return False


def _snapshot(client: redis.Redis) -> dict[bytes, Any]:
    """Every key with its type and contents, hash fields in their order."""
    out: dict[bytes, Any] = {}
    for key in sorted(client.keys("*")):
        kind = client.type(key)
        if kind == b"hash":
            flat = client.execute_command("HGETALL", key)
            out[key] = list(flat.items()) if isinstance(flat, dict) else flat
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"list":
            out[key] = client.lrange(key, 0, -1)
        else:
            out[key] = (kind, client.dump(key))
    return out


# --- wire 4, end to end ------------------------------------------------------------------


def test_wire4_flat_lifecycle(wire4: Queue, queue_server: Server):
    assert wire4.enqueue("JOB1", b"hello", priority=2)
    assert not wire4.enqueue("JOB1", b"again")
    assert wire4.enqueue("JOB2", "later", delay_ms=100)
    job = wire4.claim(500)
    assert job == ClaimedJob("JOB1", b"hello", 1, 1)
    assert wire4.extend(job.id, job.fence, 900) == NOW + 900
    wire4.complete(job.id, job.fence)
    assert wire4.claim(500) is None
    queue_server.advance(100)
    assert wire4.promote() == 1
    job = wire4.claim(10)
    assert wire4.fail(job.id, job.fence, "broke", backoff_ms=5) == "scheduled"
    assert wire4.stats() == {"pending": 0, "scheduled": 1, "active": 0, "dead": 0,
                             "paused": 0, "completed": 1}
    wire4.pause()
    assert wire4.is_paused() and wire4.stats()["paused"] == 1
    wire4.resume()
    assert wire4.remove("JOB2") and not wire4.remove("JOB2")


def test_wire4_errors_carry_the_verbs_texts(wire4: Queue):
    wire4.enqueue("JOB1", b"x")
    with pytest.raises(redis.ResponseError, match="^EMQSTATE job is not active$"):
        wire4.complete("JOB1", 1)
    with pytest.raises(redis.ResponseError, match="^EMQARG lease_ms must be a positive integer$"):
        wire4.claim(0)


def test_wire4_sweep_and_reprocess(wire4: Queue, queue_server: Server):
    wire4.client.hset(wire4.key("meta"), "max_attempts", 1)
    wire4.enqueue("JOB1", b"x")
    job = wire4.claim(10)
    queue_server.advance(10)
    result = wire4.sweep(max_stalls=0)
    assert (result.recovered, result.dead, result.exempt) == (0, 1, 0)
    wire4.reprocess(job.id)
    assert wire4.claim(10).attempts == 1


def test_wire4_lanes(wire4: Queue, queue_server: Server):
    lanes_flow(wire4, queue_server)


def lanes_flow(wire4: Queue, queue_server: Server) -> None:
    """Every lane operation once (the name says wire 4: the wire-6 test runs it too)."""
    for job_id, group in (("JOB1", "a"), ("JOB2", "a"), ("JOB3", "b")):
        assert wire4.enqueue(job_id, b"p", group=group)
    assert wire4.park(0.01)
    first = wire4.claim_lane(100)
    assert first == LaneJob("JOB1", b"p", 1, "a")
    assert wire4.claim_lane(100).group == "b"
    assert wire4.extend_lane(first.id, first.attempts, 50) == NOW + 50
    wire4.complete_lane(first.id, first.attempts)
    wire4.limit_group("a", 1)
    wire4.pause_group("b")
    queue_server.advance(100)
    assert wire4.reap(group="b") == 1
    wire4.resume_group("b")
    assert wire4.repair_group("a") == 0
    assert wire4.move_group("JOB2", "b")
    assert wire4.promote_lanes() == 0
    sweep = wire4.sweep_lanes()
    assert (sweep.recovered, sweep.dead, sweep.exempt) == (0, 0, 0)
    wire4.pause()
    assert wire4.claim_lane(100) is None
    wire4.resume()
    job = wire4.claim_lane(100)
    assert job.group == "b"
    assert wire4.fail_lane(job.id, job.attempts, "no") == "scheduled"
    assert wire4.remove_lane(job.id)
    wire4.limit_group("a", None)
    assert wire4.client.hgetall(wire4.key("glimit")) == {}


def test_wire4_reprocess_lane(wire4: Queue):
    wire4.client.hset(wire4.key("meta"), "max_attempts", 1)
    wire4.enqueue("JOB1", b"p", group="g")
    job = wire4.claim_lane(100)
    assert wire4.fail_lane(job.id, job.attempts, "no") == "dead"
    wire4.reprocess_lane(job.id)
    assert wire4.claim_lane(100).attempts == 1


def test_wire4_loads_scripts_after_a_flush(wire4: Queue):
    wire4.client.script_flush()
    assert wire4.enqueue("JOB1", b"x")


def test_wire4_resp3_stats_is_a_dict(queue_server: Server):
    client = _client(queue_server, WIRE4_DB, protocol=3)
    client.flushall()
    queue = Queue(client, "orders")
    queue.enqueue("JOB1", b"x")
    assert queue.stats()["pending"] == 1
    client.close()


# --- wire 6 ------------------------------------------------------------------------------


def test_wire6_runs_every_lane_operation_on_the_verbs(queue_server: Server):
    client = _client(queue_server, WIRE6_DB)
    client.flushall()
    client.script_flush()
    queue_server.freeze(NOW)
    queue = Queue(client, "orders", wire=6)
    lanes_flow(queue, queue_server)  # no script sent: none loaded
    assert client.execute_command("SCRIPT", "EXISTS", *(s.sha for s in SCRIPTS.values())) == [0] * len(SCRIPTS)
    client.close()


def test_wire_error_is_kept_for_its_callers():
    assert issubclass(WireError, Exception)


def test_queue_checks_its_name_and_wire(queue_server: Server):
    client = _client(queue_server, WIRE6_DB)
    with pytest.raises(ValueError):
        Queue(client, "a{b}")
    with pytest.raises(ValueError):
        Queue(client, "orders", wire=5)


# --- the differential: wire 4 against wire 6 ---------------------------------------------

IDS = st.sampled_from(["JOB1", "JOB2", "JOB3", "job4"])
SMALL = st.integers(min_value=-1, max_value=3)
HELD = st.integers(min_value=0, max_value=3)
STRATEGIES = {
    "enqueue": st.tuples(st.just("enqueue"), IDS, st.binary(max_size=3),
                         st.integers(min_value=-1, max_value=50), SMALL),
    "claim": st.tuples(st.just("claim"), st.integers(min_value=0, max_value=50)),
    "extend": st.tuples(st.just("extend"), IDS, SMALL, st.integers(min_value=0, max_value=50)),
    "complete": st.tuples(st.just("complete"), IDS, SMALL),
    "fail": st.tuples(st.just("fail"), IDS, SMALL, st.integers(min_value=-1, max_value=30)),
    "release": st.tuples(st.just("release"), IDS, SMALL),
    "promote": st.tuples(st.just("promote"), st.integers(min_value=0, max_value=3)),
    "sweep": st.tuples(st.just("sweep"), st.integers(min_value=0, max_value=3), SMALL),
    "reprocess": st.tuples(st.just("reprocess"), IDS),
    "remove": st.tuples(st.just("remove"), IDS),
    "pause": st.tuples(st.just("pause")),
    "resume": st.tuples(st.just("resume")),
    "stats": st.tuples(st.just("stats")),
    "lane_row": st.tuples(st.just("lane_row"), st.sampled_from(["JOB1", "JOB2", "JOB3"])),
    "advance": st.tuples(st.just("advance"), st.integers(min_value=1, max_value=60)),
    # the holder of a lease settles it with its own fence (read from the row)
    "extend_held": st.tuples(st.just("extend_held"), HELD, st.integers(min_value=1, max_value=50)),
    "complete_held": st.tuples(st.just("complete_held"), HELD),
    "fail_held": st.tuples(st.just("fail_held"), HELD, st.integers(min_value=0, max_value=30)),
    "release_held": st.tuples(st.just("release_held"), HELD),
    "reprocess_dead": st.tuples(st.just("reprocess_dead"), HELD),
}
# claims and the holders' settlements weigh more, so that every state is reached
WEIGHTED = [*STRATEGIES, "enqueue", "claim", "claim", "complete_held", "fail_held", "fail_held",
            "advance"]
OPS = st.sampled_from(WEIGHTED).flatmap(STRATEGIES.__getitem__)


def _held(client: redis.Redis, index: int) -> tuple[str, int]:
    """A leased job and its fence, as its holder knows them (JOB1 and 1 when none)."""
    leased = [j.decode() for j in client.zrange("emq:{orders}:active", 0, -1)]
    if not leased:
        return "JOB1", 1
    job = leased[index % len(leased)]
    return job, int(client.hget("emq:{orders}:" + job, "fence") or 1)


def _resolve_held(client: redis.Redis, op: tuple[Any, ...]) -> tuple[Any, ...]:
    """An op on a held lease as the plain op, with the holder's job id and fence."""
    name, index, *rest = op
    job, fence = _held(client, index)
    return (name.removesuffix("_held"), job, fence, *rest)


def _apply(queue: Queue, op: tuple[Any, ...]) -> Any:
    name, *args = op
    if name == "enqueue":
        job_id, payload, delay, priority = args
        return queue.enqueue(job_id, payload, delay_ms=delay, priority=priority)
    if name == "claim":
        return queue.claim(args[0])
    if name == "extend":
        return queue.extend(*args)
    if name == "complete":
        return queue.complete(*args)
    if name == "fail":
        job_id, fence, backoff = args
        return queue.fail(job_id, fence, "why", backoff_ms=backoff)
    if name == "release":
        return queue.release(*args)
    if name == "promote":
        return queue.promote(args[0])
    if name == "sweep":
        return queue.sweep(*args)
    if name in ("reprocess", "remove"):
        return getattr(queue, name)(args[0])
    return getattr(queue, name)()


def _outcome(queue: Queue, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _apply(queue, op))
    except redis.ResponseError as error:
        return ("error", str(error))


def _rich_start(queue: Queue) -> None:
    """Two jobs waiting and one dead, so that claims and REPROCESS find work."""
    queue.enqueue("JOB3", b"p", priority=-1)
    queue.client.hset(queue.key("JOB3"), "max_attempts", 1)
    job = queue.claim(10)
    assert queue.fail(job.id, job.fence, "first") == "dead"
    queue.enqueue("JOB1", b"p")
    queue.enqueue("JOB2", b"p")


def _plant_lane_row(client: redis.Redis, job_id: str) -> None:
    """A lane row admitted by @genqueue: the same script on both sides."""
    Queue(client, "orders", wire=4).enqueue(job_id, b"lane", group="g")


@pytest.fixture(scope="module")
def keyevents(queue_server: Server) -> Iterator[redis.client.PubSub]:
    """A subscriber to every keyspace event of the two wires' databases."""
    admin = _client(queue_server, 0)
    admin.config_set("notify-keyspace-events", "KEA")
    pubsub = admin.pubsub()
    pubsub.psubscribe(f"__keyevent@{WIRE4_DB}__:*", f"__keyevent@{WIRE6_DB}__:*")
    yield pubsub
    pubsub.close()
    admin.config_set("notify-keyspace-events", "")
    admin.close()


def _events(pubsub: redis.client.PubSub) -> dict[int, list[tuple[bytes, bytes]]]:
    """The (event, key) pairs each database announced since the last call, in order: a
    PING on the subscriber's connection answers after every earlier notification."""
    out: dict[int, list[tuple[bytes, bytes]]] = {WIRE4_DB: [], WIRE6_DB: []}
    pubsub.ping()
    while True:
        message = pubsub.get_message(timeout=5)
        assert message is not None, "the subscriber's PING went unanswered"
        if message["type"] == "pong":
            return out
        if message["type"] == "pmessage":
            head, event = message["channel"].split(b"__:", 1)
            out[int(head.removeprefix(b"__keyevent@"))].append((event, message["data"]))


@given(ops=st.lists(OPS, min_size=3, max_size=30))
def test_wire4_and_wire6_agree(queue_server: Server, keyevents: redis.client.PubSub,
                               ops: list[tuple[Any, ...]]):
    four, six = _client(queue_server, WIRE4_DB), _client(queue_server, WIRE6_DB)
    try:
        if not _verbs_served(six):
            pytest.skip("the EMQ verbs are not served")
        four.flushall()
        queue_server.freeze(NOW)
        q4, q6 = Queue(four, "orders", wire=4), Queue(six, "orders", wire=6)
        for client in (four, six):  # dead jobs come sooner, so that REPROCESS finds them
            client.hset("emq:{orders}:meta", "max_attempts", 2)
        for queue in (q4, q6):  # a rich start: two jobs waiting, one dead
            _rich_start(queue)
        _events(keyevents)
        for op in ops:
            if op[0] == "advance":
                queue_server.advance(op[1])
                continue
            if op[0] == "lane_row":
                _plant_lane_row(four, op[1])
                _plant_lane_row(six, op[1])
                continue
            if op[0].endswith("_held"):
                op = _resolve_held(four, op)
            elif op[0] == "reprocess_dead":
                dead = four.zrange("emq:{orders}:dead", 0, -1)
                op = ("reprocess", dead[op[1] % len(dead)].decode() if dead else "JOB1")
            outcome = _outcome(q4, op)
            event(f"{op[0]} {outcome[0]}")
            assert outcome == _outcome(q6, op), op
            assert _snapshot(four) == _snapshot(six), op
            announced = _events(keyevents)
            assert announced[WIRE4_DB] == announced[WIRE6_DB], op
            if announced[WIRE4_DB]:
                event("keyspace events announced")
    finally:
        four.close()
        six.close()
