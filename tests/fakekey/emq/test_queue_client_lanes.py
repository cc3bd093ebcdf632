"""The lane scripts and their twin verbs under random use, through the `Queue` client on
wire 4 and on wire 6.

After every operation: the ring holds exactly the serviceable groups (unpaused, below
their limit, with a waiting job), each once; gactive counts each group's active lane rows;
the operation pushed one wake token per group that joined the ring and none otherwise
(a claim's turn of the ring pushes none); a refusal is an EMQ error, never a script fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import event, given
from hypothesis import strategies as st

from fakekey.emq import Queue
from fakekey.net.server import Server

NOW = 1_700_000_000_000
GROUPS = ("a", "b", "c")
IDS = st.sampled_from(["JOB1", "JOB2", "JOB3", "JOB4", "JOB5"])
GROUP = st.sampled_from(GROUPS)
TOKEN = st.integers(min_value=1, max_value=3)

STRATEGIES = {
    "enqueue": st.tuples(st.just("enqueue"), IDS, GROUP),
    "claim": st.tuples(st.just("claim"), st.integers(min_value=1, max_value=40)),
    "complete": st.tuples(st.just("complete"), IDS, TOKEN),
    "fail": st.tuples(st.just("fail"), IDS, TOKEN, st.integers(min_value=0, max_value=30)),
    "extend": st.tuples(st.just("extend"), IDS, TOKEN, st.integers(min_value=1, max_value=40)),
    "reap": st.tuples(st.just("reap"), st.integers(min_value=1, max_value=3),
                      st.sampled_from(["", *GROUPS])),
    "sweep": st.tuples(st.just("sweep"), st.integers(min_value=1, max_value=3),
                       st.integers(min_value=0, max_value=2)),
    "promote": st.tuples(st.just("promote"), st.integers(min_value=1, max_value=3)),
    "reprocess": st.tuples(st.just("reprocess"), IDS),
    "remove": st.tuples(st.just("remove"), IDS),
    "pause_group": st.tuples(st.just("pause_group"), GROUP),
    "resume_group": st.tuples(st.just("resume_group"), GROUP),
    "limit_group": st.tuples(st.just("limit_group"), GROUP, st.integers(min_value=0, max_value=2)),
    "move": st.tuples(st.just("move"), IDS, GROUP),
    "repair": st.tuples(st.just("repair"), GROUP),
    "advance": st.tuples(st.just("advance"), st.integers(min_value=1, max_value=50)),
    "complete_held": st.tuples(st.just("complete_held"), st.integers(min_value=0, max_value=4)),
    "fail_held": st.tuples(st.just("fail_held"), st.integers(min_value=0, max_value=4),
                           st.integers(min_value=0, max_value=30)),
}
# admission, claims and the holders' settlements weigh more, so that settling and
# recovery find leased jobs
WEIGHTED = [*STRATEGIES, "enqueue", "claim", "claim", "complete_held", "fail_held", "advance"]
OPS = st.sampled_from(WEIGHTED).flatmap(STRATEGIES.__getitem__)


def _held(q: Queue, index: int) -> tuple[str, int]:
    """A leased lane job and its lease token (its attempts), as its holder knows them."""
    leased = [j.decode() for j in q.client.zrange(q.key("active"), 0, -1)
              if q.client.hget(q.key(j.decode()), "group") is not None]
    if not leased:
        return "JOB1", 1
    job = leased[index % len(leased)]
    return job, int(q.client.hget(q.key(job), "attempts"))


@pytest.fixture(scope="module")
def lane_server() -> Iterator[Server]:
    with Server() as srv:
        yield srv


def _apply(q: Queue, op: tuple[Any, ...]) -> Any:
    name, *args = op
    actions = {
        "enqueue": lambda job, group: q.enqueue(job, b"p", group=group),
        "claim": q.claim_lane,
        "complete": q.complete_lane,
        "fail": lambda job, token, backoff: q.fail_lane(job, token, "why", backoff),
        "extend": q.extend_lane,
        "reap": lambda limit, group: q.reap(limit, group or None),
        "sweep": q.sweep_lanes,
        "promote": q.promote_lanes,
        "reprocess": q.reprocess_lane,
        "remove": q.remove_lane,
        "pause_group": q.pause_group,
        "resume_group": q.resume_group,
        "limit_group": lambda group, limit: q.limit_group(group, limit or None),
        "move": q.move_group,
        "repair": q.repair_group,
        "complete_held": lambda index: q.complete_lane(*_held(q, index)),
        "fail_held": lambda index, backoff: q.fail_lane(*_held(q, index), "why", backoff),
    }
    return actions[name](*args)


def _serviceable(c: redis.Redis, q: Queue, group: str) -> bool:
    if c.sismember(q.key("gpaused"), group):
        return False
    limit = c.hget(q.key("glimit"), group)
    active = int(c.hget(q.key("gactive"), group) or 0)
    if limit is not None and active >= int(limit):
        return False
    return c.zcard(q.key("lane:" + group)) > 0


def _active_by_group(c: redis.Redis, q: Queue) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in c.zrange(q.key("active"), 0, -1):
        group = c.hget(q.key(job.decode()), "group")
        if group is not None:
            counts[group.decode()] = counts.get(group.decode(), 0) + 1
    return counts


def _check_invariants(c: redis.Redis, q: Queue) -> None:
    ring = [g.decode() for g in c.lrange(q.key("ring"), 0, -1)]
    assert len(ring) == len(set(ring)), ring
    assert set(ring) == {g for g in GROUPS if _serviceable(c, q, g)}, ring
    gactive = {k.decode(): int(v) for k, v in c.hgetall(q.key("gactive")).items()}
    assert gactive == _active_by_group(c, q)


@given(ops=st.lists(OPS, min_size=5, max_size=40), wire=st.sampled_from([4, 6]))
def test_lane_invariants_hold(lane_server: Server, ops: list[tuple[Any, ...]], wire: int):
    c = redis.Redis(host=lane_server.host, port=lane_server.port)
    try:
        c.flushall()
        lane_server.freeze(NOW)
        q = Queue(c, "orders", wire=wire)
        c.hset(q.key("meta"), "max_attempts", 2)
        for job, group in (("JOB1", "a"), ("JOB2", "a"), ("JOB3", "b")):
            q.enqueue(job, b"p", group=group)  # a rich start, so that claims find work
        for op in ops:
            if op[0] == "advance":
                lane_server.advance(op[1])
                continue
            ring_before = {g.decode() for g in c.lrange(q.key("ring"), 0, -1)}
            c.delete(q.key("wake"))
            try:
                _apply(q, op)
                event(f"{op[0]} done")
            except redis.ResponseError as error:
                assert str(error).startswith("EMQ"), (op, str(error))
                event(f"{op[0]} refused")
            ring_after = {g.decode() for g in c.lrange(q.key("ring"), 0, -1)}
            joined = len(ring_after - ring_before)
            assert c.llen(q.key("wake")) == joined, op
            _check_invariants(c, q)
    finally:
        c.close()


# --- wire 4 against wire 6: replies, keyspace and keyspace events ---------------------------

WIRE4_DB, WIRE6_DB = 1, 2


def _dump(c: redis.Redis) -> dict[bytes, Any]:
    """Every key: its type and contents (hash fields in order, scores, list order)."""
    out: dict[bytes, Any] = {}
    for k in sorted(c.keys("*")):
        kind = c.type(k)
        if kind == b"hash":
            out[k] = c.execute_command("HGETALL", k)
        elif kind == b"zset":
            out[k] = c.zrange(k, 0, -1, withscores=True)
        elif kind == b"list":
            out[k] = c.lrange(k, 0, -1)
        elif kind == b"set":
            out[k] = sorted(c.smembers(k))
        else:
            out[k] = (kind, c.dump(k))
    return out


def _outcome(q: Queue, op: tuple[Any, ...]) -> Any:
    try:
        return ("ok", _apply(q, op))
    except redis.ResponseError as error:
        return ("error", str(error))


@pytest.fixture(scope="module")
def lane_events(lane_server: Server) -> Iterator[redis.client.PubSub]:
    """A subscriber to every keyspace event of the two wires' databases."""
    admin = redis.Redis(host=lane_server.host, port=lane_server.port)
    admin.config_set("notify-keyspace-events", "KEA")
    pubsub = admin.pubsub()
    pubsub.psubscribe(f"__keyevent@{WIRE4_DB}__:*", f"__keyevent@{WIRE6_DB}__:*")
    yield pubsub
    pubsub.close()
    admin.config_set("notify-keyspace-events", "")
    admin.close()


def _events(pubsub: redis.client.PubSub) -> dict[int, list[tuple[bytes, bytes]]]:
    """The (event, key) pairs each database announced since the last call, in order."""
    out: dict[int, list[tuple[bytes, bytes]]] = {WIRE4_DB: [], WIRE6_DB: []}
    pubsub.ping()
    while True:
        message = pubsub.get_message(timeout=5)
        assert message is not None, "the subscriber's PING went unanswered"
        if message["type"] == "pong":
            return out
        if message["type"] == "pmessage":
            head, name = message["channel"].split(b"__:", 1)
            out[int(head.removeprefix(b"__keyevent@"))].append((name, message["data"]))


@given(ops=st.lists(OPS, min_size=5, max_size=30))
def test_lane_verbs_and_scripts_announce_the_same_events(
        lane_server: Server, lane_events: redis.client.PubSub, ops: list[tuple[Any, ...]]):
    """The same lane operations on wire 4 (scripts, db 1) and wire 6 (verbs, db 2) on one
    frozen clock: the same outcomes, keyspaces and keyspace events, in order."""
    four = redis.Redis(host=lane_server.host, port=lane_server.port, db=WIRE4_DB)
    six = redis.Redis(host=lane_server.host, port=lane_server.port, db=WIRE6_DB)
    try:
        four.flushall()
        lane_server.freeze(NOW)
        q4, q6 = Queue(four, "orders", wire=4), Queue(six, "orders", wire=6)
        for q in (q4, q6):
            q.client.hset(q.key("meta"), "max_attempts", 2)
            for job, group in (("JOB1", "a"), ("JOB2", "a"), ("JOB3", "b")):
                q.enqueue(job, b"p", group=group)
            q.enqueue("JOB5", b"p", delay_ms=5)  # a flat job, for the sweeps and promotion
            flat = q.client.execute_command("EMQ.CLAIM", 2, q.key("pending"), q.key("active"), 10)
            assert flat == []  # JOB5 is scheduled; it reaches pending by promotion
        _events(lane_events)
        for op in ops:
            if op[0] == "advance":
                lane_server.advance(op[1])
                continue
            outcome = _outcome(q4, op)
            event(f"{op[0]} {outcome[0]}")
            assert outcome == _outcome(q6, op), op
            assert _dump(four) == _dump(six), op
            announced = _events(lane_events)
            assert announced[WIRE4_DB] == announced[WIRE6_DB], op
    finally:
        four.close()
        six.close()
