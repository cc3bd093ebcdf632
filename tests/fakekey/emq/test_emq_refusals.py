"""Refusals of the flat job verbs: every check in its order, and a refused call writes
nothing (the keyspace dump is identical, no keyspace event is published, a WATCH on the
queue's keys still lets EXEC through). Then access (NOPERM for keys outside the caller's
patterns, declared or found by a sweep), and the verbs inside MULTI/EXEC, EVAL, FCALL and
EVAL_RO, with their INFO commandstats and errorstats."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from emq_jobs_helpers import (
    ACTIVE,
    DEAD,
    META,
    PENDING,
    PREFIX,
    SCHEDULE,
    advance,
    claim,
    dump,
    enqueue,
    fail,
    key,
    pairs,
)

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

JOBA, JOBP, JOBS, JOBD, JOBL, JOBX = (key(j) for j in ("JOBA", "JOBP", "JOBS", "JOBD", "JOBL", "JOBX"))
B = {s: key(s, "b") for s in ("pending", "schedule", "active", "dead", "meta", "", "JOB1")}


def populate(r: RawClient) -> None:
    """Queue `a` with one job in each state, the clock moved past JOBA's lease and JOBS's
    due time: JOBA active (fence 1, expired), JOBD dead (fence 2), JOBP pending, JOBS due."""
    enqueue(r, "JOBA", "a", 0, -1)
    claim(r, 1000)
    enqueue(r, "JOBD", "d")
    r.call("HSET", JOBD, "max_attempts", 1)
    claim(r, 1000)
    assert fail(r, "JOBD", 2) == ("+", b"dead")
    enqueue(r, "JOBP", "p")
    enqueue(r, "JOBS", "s", 100)
    advance(r, 2000)


def lane_row(state: str, zset: str, score: int = 0) -> list[tuple]:
    return [("HSET", JOBL, "state", state, "attempts", 1, "payload", "l", "group", "g",
             "fence", 1), ("ZADD", zset, score, "JOBL")]


def as_string(name: str) -> list[tuple]:
    """Replace a key with a string (WRONGTYPE for the verb that reads it)."""
    return [("DEL", name), ("SET", name, "x")]


ERR_ARITY = "ERR wrong number of arguments for 'emq.{}' command"
NOT_ACTIVE = "EMQSTATE job is not active"
NOT_DEAD = "EMQSTATE job is not dead"
STALE = "EMQFENCE stale fence"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
HOST = "EMQHOST unexpected reply from host"
LANE = "EMQLANE lane row JOBL is {} by the lane scripts"
POS, NONNEG = "must be a positive integer", "must be a non-negative integer"

CLAIM = ("EMQ.CLAIM", 2, PENDING, ACTIVE, 1000)
ENQ = ("EMQ.ENQUEUE", 3, key("JOBN"), PENDING, SCHEDULE, "n")
PROMOTE = ("EMQ.PROMOTE", 3, SCHEDULE, PENDING, PREFIX, 10)


def extend(row: str, fence: Any = 1, lease: Any = 1000) -> tuple:
    return ("EMQ.EXTEND", 2, row, ACTIVE, fence, lease)


def complete(row: str, fence: Any = 1) -> tuple:
    return ("EMQ.COMPLETE", 2, row, ACTIVE, fence)


def fail_(row: str, fence: Any = 1, backoff: Any = 0) -> tuple:
    return ("EMQ.FAIL", 4, row, ACTIVE, SCHEDULE, DEAD, fence, backoff, "why")


def release(row: str, fence: Any = 1) -> tuple:
    return ("EMQ.RELEASE", 2, row, ACTIVE, fence)


def sweep(limit: Any = 10, max_stalls: Any = 1) -> tuple:
    return ("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, PREFIX, limit, max_stalls)


def reprocess(row: str) -> tuple:
    return ("EMQ.REPROCESS", 3, row, DEAD, PENDING)


def remove(row: str) -> tuple:
    return ("EMQ.REMOVE", 1, row)


# (id, extra setup commands, the refused call, its error), in the spec's check order.
REFUSALS: list[tuple[str, list[tuple], tuple, str]] = [
    # 1. arity, before everything else
    ("arity-claim", [], CLAIM[:-1], ERR_ARITY.format("claim")),
    ("arity-before-shape", [], ("EMQ.CLAIM", 3, PENDING, ACTIVE), ERR_ARITY.format("claim")),
    ("arity-enqueue", [], ENQ, ERR_ARITY.format("enqueue")),
    ("arity-remove", [], ("EMQ.REMOVE", 1), ERR_ARITY.format("remove")),
    ("arity-sweep", [], (*sweep(), 1), ERR_ARITY.format("stalled.check")),
    # 2. shape
    ("shape-count", [], ("EMQ.CLAIM", 3, PENDING, ACTIVE, 1000), "EMQSHAPE numkeys must be 2"),
    ("shape-word", [], ("EMQ.CLAIM", "two", PENDING, ACTIVE, 1000), "EMQSHAPE numkeys must be 2"),
    ("shape-before-layout", [], ("EMQ.FAIL", 3, "x", "y", "z", "w", 0, -1, "r"),
     "EMQSHAPE numkeys must be 4"),
    ("shape-remove", [], ("EMQ.REMOVE", 0, JOBP), "EMQSHAPE numkeys must be 1"),
    # 3. layout
    ("layout-suffix", [], ("EMQ.CLAIM", 2, PENDING, SCHEDULE, 1000),
     "EMQLAYOUT key 2 must be emq:{a}:active"),
    ("layout-no-queue", [], ("EMQ.CLAIM", 2, "pending", ACTIVE, 1000),
     "EMQLAYOUT key 1 must be emq:{<queue>}:pending"),
    ("layout-two-queues", [], ("EMQ.CLAIM", 2, PENDING, B["active"], 1000),
     "EMQLAYOUT key 2 must be emq:{a}:active"),
    ("layout-row-fixes-queue", [], ("EMQ.EXTEND", 2, key("JOBA", "b"), ACTIVE, 1, 1),
     "EMQLAYOUT key 2 must be emq:{b}:active"),
    ("layout-prefix", [], ("EMQ.PROMOTE", 3, SCHEDULE, PENDING, key("x"), 10),
     "EMQLAYOUT key 3 must be emq:{a}:"),
    ("layout-before-kind", [], ("EMQ.EXTEND", 2, key("job1"), SCHEDULE, 1, 1),
     "EMQLAYOUT key 2 must be emq:{a}:active"),
    # 4. kind
    ("kind", [], extend(key("job1")), "EMQKIND job id must be JOB-namespaced"),
    ("kind-case", [], ("EMQ.ENQUEUE", 3, key("JoB1"), PENDING, SCHEDULE, "p", 0, 0),
     "EMQKIND job id must be JOB-namespaced"),
    ("kind-before-args", [], extend(key("xJOB"), 0, 0), "EMQKIND job id must be JOB-namespaced"),
    # 5. arguments, in argument order
    ("arg-lease-zero", [], CLAIM[:-1] + (0,), f"EMQARG lease_ms {POS}"),
    ("arg-lease-word", [], CLAIM[:-1] + ("1.5",), f"EMQARG lease_ms {POS}"),
    ("arg-lease-space", [], CLAIM[:-1] + (" 1",), f"EMQARG lease_ms {POS}"),
    ("arg-delay", [], (*ENQ, -1, 0), f"EMQARG delay_ms {NONNEG}"),
    ("arg-delay-first", [], (*ENQ, -1, "x"), f"EMQARG delay_ms {NONNEG}"),
    ("arg-priority", [], (*ENQ, 0, "x"), "EMQARG priority must be an integer"),
    ("arg-priority-range", [], (*ENQ, 0, 2**63), "EMQARG priority must be an integer"),
    ("arg-fence-first", [], extend(JOBA, 0, 0), f"EMQARG fence {POS}"),
    ("arg-lease", [], extend(JOBA, 1, -3), f"EMQARG lease_ms {POS}"),
    ("arg-backoff", [], fail_(JOBA, 1, -1), f"EMQARG backoff_ms {NONNEG}"),
    ("arg-batch", [], PROMOTE[:-1] + (0,), f"EMQARG batch {POS}"),
    ("arg-limit-first", [], sweep(0, -1), f"EMQARG limit {POS}"),
    ("arg-max-stalls", [], sweep(1, -1), f"EMQARG max_stalls {NONNEG}"),
    ("arg-before-state", [], complete(key("JOB9"), "01"), f"EMQARG fence {POS}"),
    # state, then fence
    ("state-no-row", [], extend(key("JOB9")), NOT_ACTIVE),
    ("state-pending", [], complete(JOBP), NOT_ACTIVE),
    ("state-scheduled", [], fail_(JOBS), NOT_ACTIVE),
    ("state-dead", [], release(JOBD), NOT_ACTIVE),
    ("state-not-in-active", [("ZREM", ACTIVE, "JOBA")], complete(JOBA), NOT_ACTIVE),
    ("state-before-fence", [], extend(JOBP, 9), NOT_ACTIVE),
    ("state-before-wrongtype", as_string(ACTIVE), extend(key("JOB9")), NOT_ACTIVE),
    ("fence-extend", [], extend(JOBA, 2), STALE),
    ("fence-complete", [], complete(JOBA, 3), STALE),
    ("fence-fail", [], fail_(JOBA, 9), STALE),
    ("fence-release", [], release(JOBA, 2), STALE),
    ("fence-missing", [("HDEL", JOBA, "fence")], extend(JOBA), STALE),
    ("fence-before-wrongtype", as_string(SCHEDULE), fail_(JOBA, 2), STALE),
    ("not-dead-no-row", [], reprocess(key("JOB9")), NOT_DEAD),
    ("not-dead-pending", [], reprocess(JOBP), NOT_DEAD),
    ("not-dead-not-in-set", [("ZREM", DEAD, "JOBD")], reprocess(JOBD), NOT_DEAD),
    # lane rows: after the existence check, before the state check
    ("lane-extend", lane_row("active", ACTIVE), extend(JOBL), LANE.format("extended")),
    ("lane-complete", lane_row("active", ACTIVE), complete(JOBL), LANE.format("completed")),
    ("lane-fail", lane_row("active", ACTIVE), fail_(JOBL), LANE.format("failed")),
    ("lane-release", lane_row("active", ACTIVE), release(JOBL), LANE.format("released")),
    ("lane-before-state", lane_row("pending", PENDING, 5), extend(JOBL), LANE.format("extended")),
    ("lane-reprocess", lane_row("dead", DEAD), reprocess(JOBL), LANE.format("reprocessed")),
    ("lane-remove", lane_row("pending", PENDING, 5), remove(JOBL), LANE.format("removed")),
    ("lane-promote", lane_row("scheduled", SCHEDULE, 1_700_000_002_000), PROMOTE,
     "EMQLANE due lane row JOBL needs the lane promotion"),
    ("lane-promote-rowless-first", [("ZADD", SCHEDULE, 1, "JOB0"),
                                    *lane_row("scheduled", SCHEDULE, 2)], PROMOTE,
     "EMQLANE due lane row JOBL needs the lane promotion"),
    ("lane-sweep", [("ZADD", ACTIVE, 1, "JOB0"), *lane_row("active", ACTIVE, 2)], sweep(),
     "EMQLANE expired lane row JOBL needs the lane recovery"),
    # a key of the wrong type, before anything is written
    ("wrongtype-claim-meta", as_string(META), CLAIM, WRONGTYPE),
    ("wrongtype-claim-pending", as_string(PENDING), CLAIM, WRONGTYPE),
    ("wrongtype-claim-row", [("ZADD", PENDING, -9, "JOBX"), ("SET", JOBX, "x")], CLAIM, WRONGTYPE),
    ("wrongtype-claim-active", as_string(ACTIVE), CLAIM, WRONGTYPE),
    ("wrongtype-enqueue-pending", as_string(PENDING), (*ENQ, 0, 0), WRONGTYPE),
    ("wrongtype-enqueue-schedule", as_string(SCHEDULE), (*ENQ, 10, 0), WRONGTYPE),
    ("wrongtype-extend-row", [("SET", JOBX, "x")], extend(JOBX), WRONGTYPE),
    ("wrongtype-extend-active", as_string(ACTIVE), extend(JOBA), WRONGTYPE),
    ("wrongtype-complete-meta", as_string(META), complete(JOBA), WRONGTYPE),
    ("wrongtype-fail-schedule", as_string(SCHEDULE), fail_(JOBA), WRONGTYPE),
    ("wrongtype-fail-dead", [("HSET", JOBA, "max_attempts", 1), *as_string(DEAD)], fail_(JOBA),
     WRONGTYPE),
    ("wrongtype-fail-meta", as_string(META), fail_(JOBA), WRONGTYPE),
    ("wrongtype-promote-schedule", as_string(SCHEDULE), PROMOTE, WRONGTYPE),
    ("wrongtype-promote-pending", as_string(PENDING), PROMOTE, WRONGTYPE),
    ("wrongtype-promote-row", [("ZADD", SCHEDULE, 1, "JOBX"), ("SET", JOBX, "x")], PROMOTE,
     WRONGTYPE),
    ("wrongtype-sweep-pending", as_string(PENDING), sweep(), WRONGTYPE),
    ("wrongtype-sweep-dead", as_string(DEAD), sweep(10, 0), WRONGTYPE),
    ("wrongtype-sweep-meta", as_string(META), sweep(), WRONGTYPE),
    ("wrongtype-reprocess-pending", as_string(PENDING), reprocess(JOBD), WRONGTYPE),
    ("wrongtype-remove-row", [("SET", JOBX, "x")], remove(JOBX), WRONGTYPE),
    ("wrongtype-remove-set", as_string(DEAD), remove(JOBP), WRONGTYPE),
    # an inconsistent row or meta value, before anything is written
    ("host-claim-fence", [("HSET", META, "fence", "x")], CLAIM, HOST),
    ("host-claim-attempts", [("HSET", JOBP, "attempts", "1.0")], CLAIM, HOST),
    ("host-complete-counter", [("HSET", META, "completed", "x")], complete(JOBA), HOST),
    ("host-fail-attempts", [("HSET", JOBA, "attempts", "x")], fail_(JOBA), HOST),
    ("host-fail-row-max", [("HSET", JOBA, "max_attempts", "x")], fail_(JOBA), HOST),
    ("host-fail-meta-max", [("HSET", META, "max_attempts", "x")], fail_(JOBA), HOST),
    ("host-fail-meta-dead", [("HSET", META, "dead", "x")], fail_(JOBA), HOST),
    ("host-promote-priority", [("HSET", JOBS, "priority", "x")], PROMOTE, HOST),
    ("host-promote-second-row", [("ZADD", SCHEDULE, 1_700_000_001_000, "JOBX"),
                                 ("HSET", JOBX, "priority", "")],
     PROMOTE, HOST),
    ("host-sweep-stalls", [("HSET", JOBA, "stalls", "x")], sweep(), HOST),
    ("host-sweep-priority", [("HSET", JOBA, "priority", "x")], sweep(), HOST),
    ("host-sweep-exempt-stalls", [("HSET", JOBA, "restart", 1, "stalls", "x")], sweep(), HOST),
    ("host-sweep-meta-dead", [("HSET", META, "dead", "x")], sweep(), HOST),
    ("host-reprocess-priority", [("HSET", JOBD, "priority", "x")], reprocess(JOBD), HOST),
]


@pytest.fixture
def watcher(server: Server) -> Iterator[RawClient]:
    """A second connection: it dumps the keyspace and WATCHes it across the call."""
    with RawClient(server.host, server.port) as client:
        yield client


@pytest.fixture
def events(server: Server) -> Iterator[RawClient]:
    """A subscriber to every keyspace event of database 0."""
    with RawClient(server.host, server.port) as sub:
        sub.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
        sub.call("PSUBSCRIBE", "__keyspace@0__:*")
        yield sub
    with RawClient(server.host, server.port) as client:
        client.call("CONFIG", "SET", "notify-keyspace-events", "")


def no_events(sub: RawClient) -> list[Any]:
    """The events published since the last look (none expected): PING's pong ends them."""
    sub.send("PING")
    seen = []
    while (message := plain(sub.read()))[0] != b"pong":
        seen.append(message)
    return seen


def assert_writes_nothing(r: RawClient, watcher: RawClient, events: RawClient,
                          call: tuple, error: str) -> None:
    """`call` on `r` answers `error` and leaves every key, event and WATCH untouched."""
    before = dump(watcher)
    watched = {name for name, *_ in before} | {w for w in call if isinstance(w, str)
                                               and w.startswith("emq:")}
    watched |= {key(s, q) for q in "ab" for s in ("meta", "pending", "schedule", "active",
                                                  "dead", "JOBN", "JOB0", "JOB9")}
    assert watcher.call("WATCH", *sorted(watched, key=str)) == ("+", b"OK")
    assert r.call(*call) == ("-", error.encode())
    assert no_events(events) == []
    assert dump(watcher) == before
    watcher.call("MULTI")
    watcher.call("PING")
    assert watcher.call("EXEC") == ("*", [("+", b"PONG")])


@pytest.mark.parametrize(("extra", "call", "error"), [row[1:] for row in REFUSALS],
                         ids=[row[0] for row in REFUSALS])
def test_a_refused_call_writes_nothing(r: RawClient, watcher: RawClient, events: RawClient,
                                       extra: list[tuple], call: tuple, error: str) -> None:
    populate(r)
    for command in extra:
        r.call(*command)
    no_events(events)  # the setup's own events
    assert_writes_nothing(r, watcher, events, call, error)


def test_the_refusal_table_covers_every_verb() -> None:
    verbs = {call[0] for _, _, call, _ in REFUSALS}
    assert verbs == {"EMQ.ENQUEUE", "EMQ.CLAIM", "EMQ.EXTEND", "EMQ.COMPLETE", "EMQ.FAIL",
                     "EMQ.RELEASE", "EMQ.PROMOTE", "EMQ.STALLED.CHECK", "EMQ.REPROCESS",
                     "EMQ.REMOVE"}


# --- access --------------------------------------------------------------------------------


def restrict(server: Server, client: RawClient, rules: list[str]) -> None:
    """Make `client`'s connection run as a user allowed every command but only the keys of
    `rules`, through ACL SETUSER and AUTH as a user of Valkey would."""
    assert client.call("ACL", "SETUSER", "u", "reset", "on", "nopass", "+@all", "&*", *rules) == ("+", b"OK")
    assert client.call("AUTH", "u", "any") == ("+", b"OK")


B_CALLS = {
    "enqueue": ("EMQ.ENQUEUE", 3, B["JOB1"], B["pending"], B["schedule"], "p", 0, 0),
    "claim": ("EMQ.CLAIM", 2, B["pending"], B["active"], 1000),
    "extend": ("EMQ.EXTEND", 2, B["JOB1"], B["active"], 1, 1000),
    "complete": ("EMQ.COMPLETE", 2, B["JOB1"], B["active"], 1),
    "fail": ("EMQ.FAIL", 4, B["JOB1"], B["active"], B["schedule"], B["dead"], 1, 0, "r"),
    "release": ("EMQ.RELEASE", 2, B["JOB1"], B["active"], 1),
    "promote": ("EMQ.PROMOTE", 3, B["schedule"], B["pending"], B[""], 10),
    "stalled.check": ("EMQ.STALLED.CHECK", 4, B["active"], B["pending"], B["dead"], B[""], 10, 1),
    "reprocess": ("EMQ.REPROCESS", 3, B["JOB1"], B["dead"], B["pending"]),
    "remove": ("EMQ.REMOVE", 1, B["JOB1"]),
    "pause": ("EMQ.PAUSE", 1, B["meta"]),
    "resume": ("EMQ.RESUME", 1, B["meta"]),
    "stats": ("EMQ.STATS", 1, B["meta"]),
}


@pytest.mark.parametrize("name", list(B_CALLS))
def test_a_user_confined_to_queue_a_is_refused_queue_b(
        server: Server, r: RawClient, watcher: RawClient, events: RawClient, name: str) -> None:
    enqueue(watcher, "JOB1", queue="b")
    claim(watcher, 1000, queue="b")
    watcher.call("FAKEKEY.CLOCK", "ADVANCE", 5000)
    no_events(events)
    restrict(server, r, ["~emq:{a}:*"])
    assert_writes_nothing(r, watcher, events, B_CALLS[name], "NOPERM No permissions to access a key")


def test_the_confined_user_works_its_own_queue(server: Server, r: RawClient) -> None:
    restrict(server, r, ["~emq:{a}:*"])
    assert enqueue(r, "JOB1") == (":", 1)
    assert claim(r)[1][0] == ("$", b"JOB1")


QUEUE_A_BUT_ROWS = [f"~emq:{{a}}:{s}" for s in ("pending", "schedule", "active", "dead", "meta")]
QUEUE_A_BUT_ROWS.append("~emq:{a}:")
DUE_LATER = 1_700_000_000_005  # due after the allowed row JOB0 (now + 1)


@pytest.mark.parametrize(("setup", "call"), [
    ([("ZADD", SCHEDULE, DUE_LATER, "JOBR")], PROMOTE),  # a due member without a row
    ([("HSET", key("JOBR"), "state", "scheduled"), ("ZADD", SCHEDULE, DUE_LATER, "JOBR")],
     PROMOTE),
    ([("HSET", key("JOBR"), "state", "active", "fence", 1), ("ZADD", ACTIVE, 0, "JOBR")], sweep()),
    ([("HSET", key("JOBR"), "state", "pending"), ("ZADD", PENDING, 0, "JOBR")], CLAIM),
], ids=["promote-rowless", "promote", "sweep", "claim-head"])
def test_rows_found_by_reading_are_checked_before_the_first_write(
        server: Server, r: RawClient, watcher: RawClient, events: RawClient,
        setup: list[tuple], call: tuple) -> None:
    """The user may touch every key of queue `a` but the rows: a sweep or a claim that
    reaches a row (even a missing one) is refused, whatever it would have written first."""
    enqueue(watcher, "JOB0", delay=1)  # a due row that is allowed ...
    watcher.call("ZADD", ACTIVE, 0, "JOBQ")  # ... and a rowless expired member
    for command in setup:
        watcher.call(*command)
    advance(watcher, 10)
    no_events(events)
    restrict(server, r, [*QUEUE_A_BUT_ROWS, "~emq:{a}:JOB0", "~emq:{a}:JOBQ"])
    assert_writes_nothing(r, watcher, events, call, "NOPERM No permissions to access a key")


def test_a_read_only_user_may_read_stats_but_not_write(server: Server, r: RawClient) -> None:
    enqueue(r, "JOB1")
    restrict(server, r, ["%R~emq:{a}:*"])
    assert pairs(r.call("EMQ.STATS", 1, META))[0] == (b"pending", 1)
    assert claim(r) == ("-", b"NOPERM No permissions to access a key")
    assert r.call("EMQ.PAUSE", 1, META) == ("-", b"NOPERM No permissions to access a key")


# --- transactions, scripts, functions, stats -----------------------------------------------


def test_verbs_queue_inside_multi_and_run_at_exec(r: RawClient) -> None:
    assert r.call("MULTI") == ("+", b"OK")
    assert enqueue(r, "JOB1", "x") == ("+", b"QUEUED")
    assert claim(r, 100) == ("+", b"QUEUED")
    assert r.call("EMQ.CLAIM", 3, PENDING, ACTIVE, 1) == ("+", b"QUEUED")  # a run-time error
    assert r.call("EXEC") == ("*", [
        (":", 1),
        ("*", [("$", b"JOB1"), ("$", b"x"), (":", 1), (":", 1)]),
        ("-", b"EMQSHAPE numkeys must be 2"),
    ])


def test_a_queue_time_arity_error_aborts_exec(r: RawClient) -> None:
    r.call("MULTI")
    enqueue(r, "JOB1")
    assert r.call("EMQ.CLAIM", 2, PENDING, ACTIVE) == (
        "-", b"ERR wrong number of arguments for 'emq.claim' command")
    assert r.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")
    assert r.call("EXISTS", key("JOB1")) == (":", 0)


def test_verbs_run_from_eval_with_the_scripts_clock(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1", "x")
    script = "return redis.call('EMQ.CLAIM', 2, KEYS[1], KEYS[2], ARGV[1])"
    assert r.call("EVAL", script, 2, PENDING, ACTIVE, 250) == (
        "*", [("$", b"JOB1"), ("$", b"x"), (":", 1), (":", 1)])
    assert int(float(plain(r.call("ZSCORE", ACTIVE, "JOB1")))) == now + 250
    refused = plain(r.call("EVAL", script, 2, PENDING, ACTIVE, 0))
    assert refused.startswith(b"EMQARG lease_ms must be a positive integer")
    caught = "local ok = redis.pcall('EMQ.EXTEND', 2, KEYS[1], KEYS[2], 9, 1) return ok"
    assert r.call("EVAL", caught, 2, key("JOB1"), ACTIVE) == ("-", b"EMQFENCE stale fence")


def test_verbs_run_from_a_function(r: RawClient) -> None:
    library = ("#!lua name=emqjobs\n"
               "redis.register_function('take', function(keys, args) "
               "return redis.call('EMQ.CLAIM', 2, keys[1], keys[2], args[1]) end)")
    r.call("FUNCTION", "LOAD", "REPLACE", library)
    try:
        enqueue(r, "JOB1", "x")
        assert r.call("FCALL", "take", 2, PENDING, ACTIVE, 100) == (
            "*", [("$", b"JOB1"), ("$", b"x"), (":", 1), (":", 1)])
    finally:
        r.call("FUNCTION", "DELETE", "emqjobs")


def test_eval_ro_refuses_a_write_verb_as_it_refuses_a_write_builtin(r: RawClient) -> None:
    builtin = r.call("EVAL_RO", "return redis.call('SET', KEYS[1], 'v')", 1, META)
    verb = r.call("EVAL_RO", "return redis.call('EMQ.PAUSE', 1, KEYS[1])", 1, META)
    assert builtin[0] == "-" and verb == builtin
    assert r.call("EXISTS", META) == (":", 0)
    stats = r.call("EVAL_RO", "return redis.call('EMQ.STATS', 1, KEYS[1])", 1, META)
    assert plain(stats)[:2] == [b"pending", 0]


def info_lines(r: RawClient, section: str) -> dict[bytes, bytes]:
    text = plain(r.call("INFO", section))
    return dict(line.split(b":", 1) for line in text.splitlines() if b":" in line)


def test_info_counts_the_verbs_and_their_error_codes(r: RawClient) -> None:
    r.call("CONFIG", "RESETSTAT")
    enqueue(r, "JOB1")
    claim(r)
    claim(r)
    r.call("EMQ.COMPLETE", 2, key("JOB1"), ACTIVE, 5)
    r.call("EMQ.COMPLETE", 2, key("JOB2"), ACTIVE, 5)
    r.call("EMQ.REPROCESS", 3, key("JOB2"), DEAD, PENDING)
    commands = info_lines(r, "commandstats")
    assert commands[b"cmdstat_emq.claim"].startswith(b"calls=2,")
    assert commands[b"cmdstat_emq.complete"].startswith(b"calls=2,")
    assert b"failed_calls=2" in commands[b"cmdstat_emq.complete"]
    errors = info_lines(r, "errorstats")
    assert errors[b"errorstat_EMQSTATE"] == b"count=2"
    assert errors[b"errorstat_EMQFENCE"] == b"count=1"
