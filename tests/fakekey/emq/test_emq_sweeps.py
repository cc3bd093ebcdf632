"""The two sweeps on the frozen clock: EMQ.PROMOTE (due scheduled jobs to pending) and
EMQ.STALLED.CHECK (expired leases recovered, exempt or dead-lettered), and a property:
any run of the verbs keeps every row's state and its set membership in step."""

from __future__ import annotations

from emq_jobs_helpers import (
    ACTIVE,
    DEAD,
    META,
    PENDING,
    SCHEDULE,
    advance,
    claim,
    complete,
    enqueue,
    extend,
    fail,
    key,
    pairs,
    promote,
    release,
    remove,
    reprocess,
    row,
    stalled_check,
    zset,
)
from hypothesis import given
from hypothesis import strategies as st

from fakekey.testing.raw import RawClient, plain


def swept(recovered: int, dead: int, exempt: int) -> tuple[str, list]:
    return ("*", [(":", recovered), (":", dead), (":", exempt)])


# --- PROMOTE -------------------------------------------------------------------------------


def test_promote_moves_only_due_jobs_to_pending_by_priority(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1", delay=100, priority=9)
    enqueue(r, "JOB2", delay=200, priority=-3)
    enqueue(r, "JOB3", delay=300)
    assert promote(r) == (":", 0)
    advance(r, 200)
    assert promote(r) == (":", 2)
    assert zset(r, "pending") == [(b"JOB2", -3), (b"JOB1", 9)]
    assert zset(r, "schedule") == [(b"JOB3", now + 300)]
    assert row(r, "JOB1")[0] == (b"state", b"pending")
    assert row(r, "JOB2")[0] == (b"state", b"pending")


def test_promote_takes_at_most_batch_lowest_first(r: RawClient) -> None:
    for n, delay in enumerate((30, 10, 20, 40), 1):
        enqueue(r, f"JOB{n}", delay=delay)
    advance(r, 50)
    assert promote(r, 2) == (":", 2)
    assert [m for m, _ in zset(r, "pending")] == [b"JOB2", b"JOB3"]
    assert promote(r, 5) == (":", 2)
    assert r.call("EXISTS", SCHEDULE) == (":", 0)


def test_promote_drops_rowless_members_and_counts_them_toward_batch(r: RawClient) -> None:
    enqueue(r, "JOB2", delay=20)
    enqueue(r, "JOB3", delay=30)
    r.call("ZADD", SCHEDULE, 1, "JOB1")  # no row
    advance(r, 30)
    assert promote(r, 2) == (":", 1)
    assert zset(r, "pending") == [(b"JOB2", 0)]
    assert [m for m, _ in zset(r, "schedule")] == [b"JOB3"]


def test_promote_refuses_the_whole_call_on_a_due_lane_row(r: RawClient) -> None:
    r.call("ZADD", SCHEDULE, 1, "JOB0")  # no row: not removed either
    enqueue(r, "JOB1", delay=10)
    r.call("HSET", key("JOB2"), "state", "scheduled", "group", "g")
    r.call("ZADD", SCHEDULE, 5, "JOB2")
    before = zset(r, "schedule")
    advance(r, 10)
    assert promote(r) == ("-", b"EMQLANE due lane row JOB2 needs the lane promotion")
    assert zset(r, "schedule") == before
    assert r.call("EXISTS", PENDING) == (":", 0)


def test_promote_leaves_a_lane_row_beyond_batch_alone(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1", delay=1)
    r.call("HSET", key("JOB2"), "state", "scheduled", "group", "g")
    r.call("ZADD", SCHEDULE, now + 2, "JOB2")
    advance(r, 10)
    assert promote(r, 1) == (":", 1)


# --- STALLED.CHECK -------------------------------------------------------------------------


def test_an_expired_lease_is_recovered_with_a_stall_counted(r: RawClient) -> None:
    enqueue(r, "JOB1", "a", 0, 6)
    claim(r, 1000)
    advance(r, 999)
    assert stalled_check(r) == swept(0, 0, 0)
    advance(r, 1)
    assert stalled_check(r) == swept(1, 0, 0)
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"1"), (b"payload", b"a"),
                              (b"priority", b"6"), (b"stalls", b"1")]
    assert zset(r, "pending") == [(b"JOB1", 6)]
    assert r.call("EXISTS", ACTIVE) == (":", 0)


def test_stalls_beyond_max_stalls_dead_letter_the_job(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1")
    for stall in (1, 2):
        claim(r, 100)
        advance(r, 100)
        assert stalled_check(r, max_stalls=1) == (swept(1, 0, 0) if stall == 1 else swept(0, 1, 0))
    assert row(r, "JOB1") == [(b"state", b"dead"), (b"attempts", b"2"), (b"payload", b"p"),
                              (b"priority", b"0"), (b"stalls", b"2"), (b"error", b"stalled")]
    assert zset(r, "dead") == [(b"JOB1", now + 200)]
    assert dict(pairs(r.call("HGETALL", META)))[b"dead"] == b"1"


def test_max_stalls_zero_dead_letters_at_the_first_stall(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r, 100)
    advance(r, 100)
    assert stalled_check(r, max_stalls=0) == swept(0, 1, 0)
    assert reprocess(r, "JOB1") == (":", 1)
    assert dict(row(r, "JOB1"))[b"stalls"] == b"0"


def test_an_announced_restart_is_exempt_from_the_stall_count(r: RawClient) -> None:
    enqueue(r, "JOB1", priority=2)
    claim(r, 100)
    release(r, "JOB1", 1)
    advance(r, 100)
    assert stalled_check(r, max_stalls=0) == swept(0, 0, 1)
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"1"), (b"payload", b"p"),
                              (b"priority", b"2")]
    assert zset(r, "pending") == [(b"JOB1", 2)]
    assert complete(r, "JOB1", 1) == ("-", b"EMQSTATE job is not active")


def test_restart_counts_as_announced_whatever_its_value(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r, 100)
    r.call("HSET", key("JOB1"), "restart", "0")
    advance(r, 100)
    assert stalled_check(r, max_stalls=0) == swept(0, 0, 1)


def test_the_sweep_takes_at_most_limit_and_rowless_members_count(r: RawClient) -> None:
    for job in ("JOB1", "JOB2", "JOB3"):
        enqueue(r, job)
    claim(r, 100)
    claim(r, 200)
    claim(r, 300)
    r.call("ZADD", ACTIVE, 50, "JOB0")  # no row
    advance(r, 300)
    assert stalled_check(r, limit=2) == swept(1, 0, 0)
    assert [m for m, _ in zset(r, "active")] == [b"JOB2", b"JOB3"]
    assert stalled_check(r, limit=5) == swept(2, 0, 0)


def test_the_sweep_mixes_outcomes_in_deadline_order(r: RawClient) -> None:
    for job in ("JOB1", "JOB2", "JOB3"):
        enqueue(r, job)
    claim(r, 100)
    claim(r, 200)
    claim(r, 300)
    r.call("HSET", key("JOB2"), "stalls", 5)
    release(r, "JOB3", 3)
    advance(r, 1000)
    assert stalled_check(r, max_stalls=5) == swept(1, 1, 1)
    assert [m for m, _ in zset(r, "pending")] == [b"JOB1", b"JOB3"]
    assert [m for m, _ in zset(r, "dead")] == [b"JOB2"]


def test_an_expired_lane_row_refuses_the_whole_sweep(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r, 100)
    r.call("HSET", key("JOB2"), "state", "active", "group", "g")
    r.call("ZADD", ACTIVE, 1, "JOB2")
    r.call("ZADD", ACTIVE, 0, "JOB0")  # no row: not removed either
    advance(r, 100)
    before = zset(r, "active")
    assert stalled_check(r) == ("-", b"EMQLANE expired lane row JOB2 needs the lane recovery")
    assert zset(r, "active") == before


def test_the_sweep_never_changes_attempts(r: RawClient) -> None:
    enqueue(r, "JOB1")
    for _ in range(3):
        claim(r, 10)
        advance(r, 10)
        stalled_check(r, max_stalls=10)
    assert dict(row(r, "JOB1"))[b"attempts"] == b"3"
    assert dict(row(r, "JOB1"))[b"stalls"] == b"3"


def test_a_late_fail_after_a_sweep_is_refused(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r, 10)
    advance(r, 10)
    stalled_check(r)
    assert fail(r, "JOB1", 1) == ("-", b"EMQSTATE job is not active")
    assert extend(r, "JOB1", 1) == ("-", b"EMQSTATE job is not active")


def test_the_sweep_on_a_large_active_set_takes_only_the_due(r: RawClient, now: int) -> None:
    r.call("ZADD", ACTIVE, *[x for n in range(2000) for x in (now + 10 + n, f"JOB{n:05}")])
    assert stalled_check(r, limit=10**15) == swept(0, 0, 0)
    assert promote(r, 10**15) == (":", 0)


# --- a property: states and sets stay in step ----------------------------------------------

JOBS = ("JOB1", "JOB2", "JOB3")
SET_OF_STATE = {b"pending": b"pending", b"scheduled": b"schedule", b"active": b"active",
                b"dead": b"dead"}

step = st.one_of(
    st.tuples(st.just("enqueue"), st.sampled_from(JOBS), st.integers(0, 300), st.integers(-2, 2)),
    st.tuples(st.just("claim"), st.integers(1, 300)),
    st.tuples(st.just("settle"), st.sampled_from(("extend", "complete", "fail", "release")),
              st.sampled_from(JOBS), st.integers(1, 4)),
    st.tuples(st.just("sweep"), st.integers(1, 3), st.integers(0, 2)),
    st.tuples(st.just("promote"), st.integers(1, 3)),
    st.tuples(st.just("reprocess"), st.sampled_from(JOBS)),
    st.tuples(st.just("remove"), st.sampled_from(JOBS)),
    st.tuples(st.just("advance"), st.integers(0, 400)),
)


def run_step(r: RawClient, s: tuple) -> None:
    verb = s[0]
    if verb == "enqueue":
        enqueue(r, s[1], delay=s[2], priority=s[3])
    elif verb == "claim":
        claim(r, s[1])
    elif verb == "settle":
        settle = {"extend": extend, "complete": complete, "fail": fail, "release": release}[s[1]]
        settle(r, s[2], s[3])
    elif verb == "sweep":
        stalled_check(r, s[1], s[2])
    elif verb == "promote":
        promote(r, s[1])
    elif verb == "reprocess":
        reprocess(r, s[1])
    elif verb == "remove":
        remove(r, s[1])
    else:
        advance(r, s[1])


def check_in_step(r: RawClient) -> None:
    """Each row sits in exactly the set its state names (pending scored by its priority),
    holds a fence exactly while active, and no fence is newer than the queue's last."""
    members = {name: dict(zset(r, name.decode())) for name in SET_OF_STATE.values()}
    last_fence = int(plain(r.call("HGET", META, "fence")) or 0)
    for job in JOBS:
        fields = dict(row(r, job))
        holding = {name for name, ms in members.items() if job.encode() in ms}
        if not fields:
            assert holding == set()
            continue
        assert holding == {SET_OF_STATE[fields[b"state"]]}
        if fields[b"state"] == b"pending":
            assert members[b"pending"][job.encode()] == int(fields[b"priority"])
        assert (b"fence" in fields) == (fields[b"state"] == b"active")
        assert 0 < int(fields.get(b"fence", 1)) <= max(last_fence, 1)
        assert int(fields[b"attempts"]) >= 0


@given(st.lists(step, max_size=30))
def test_any_run_of_the_verbs_keeps_states_and_sets_in_step(server: object, steps: list) -> None:
    with RawClient(server.host, server.port) as r:  # type: ignore[attr-defined]
        r.call("FLUSHALL")
        r.call("FAKEKEY.CLOCK", "SET", 1_700_000_000_000)
        for s in steps:
            run_step(r, s)
            check_in_step(r)
        assert plain(r.call("ZCARD", DEAD)) == len(
            [j for j in JOBS if plain(r.call("HGET", key(j), "state")) == b"dead"])


# --- the events a sweep announces ----------------------------------------------------------


def keyspace_events(server: object, r: RawClient, action: object) -> list[tuple[bytes, bytes]]:
    """(key, event) of every keyspace event `action()` publishes, in order."""
    r.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub = RawClient(server.host, server.port)  # type: ignore[attr-defined]
    try:
        sub.call("PSUBSCRIBE", "__keyspace@0__:*")
        action()  # type: ignore[operator]
        sub.send("PING")
        seen = []
        while (message := plain(sub.read()))[0] != b"pong":
            seen.append((message[2].removeprefix(b"__keyspace@0__:emq:{a}:"), message[3]))
        return seen
    finally:
        sub.close()
        r.call("CONFIG", "SET", "notify-keyspace-events", "")


def test_a_sweep_announces_each_members_builtins_in_deadline_order(
        server: object, r: RawClient) -> None:
    for job in ("JOB1", "JOB2", "JOB3"):
        enqueue(r, job)
    claim(r, 100)
    claim(r, 200)
    claim(r, 300)
    release(r, "JOB1", 1)
    r.call("HSET", key("JOB3"), "stalls", 1)
    advance(r, 300)
    assert keyspace_events(server, r, lambda: stalled_check(r, max_stalls=1)) == [
        (b"active", b"zrem"), (b"JOB1", b"hdel"), (b"JOB1", b"hset"), (b"pending", b"zadd"),
        (b"active", b"zrem"), (b"JOB2", b"hincrby"), (b"JOB2", b"hset"), (b"JOB2", b"hdel"),
        (b"pending", b"zadd"),
        (b"active", b"zrem"), (b"active", b"del"), (b"JOB3", b"hincrby"), (b"JOB3", b"hset"),
        (b"JOB3", b"hdel"), (b"dead", b"zadd"), (b"meta", b"hincrby"),
    ]


def test_a_promotion_announces_zrem_hset_zadd_per_member(server: object, r: RawClient) -> None:
    enqueue(r, "JOB1", delay=5)
    r.call("ZADD", SCHEDULE, 1, "JOB0")  # no row: only its removal is announced
    advance(r, 5)
    assert keyspace_events(server, r, lambda: promote(r)) == [
        (b"schedule", b"zrem"),
        (b"schedule", b"zrem"), (b"schedule", b"del"), (b"JOB1", b"hset"), (b"pending", b"zadd"),
    ]
