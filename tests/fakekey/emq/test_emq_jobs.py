"""The flat job verbs, one transition at a time, on the frozen clock (spec emq.md section 3):
ENQUEUE, CLAIM, EXTEND, COMPLETE, FAIL, RELEASE, REPROCESS, REMOVE, with PAUSE/RESUME and
the STATS counters. Every test runs in RESP2 and RESP3 and pins the reply's wire type."""

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
    release,
    remove,
    reprocess,
    row,
    stalled_check,
    zset,
)

from fakekey.testing.raw import RawClient, plain

EMPTY = ("*", [])
NOT_ACTIVE = ("-", b"EMQSTATE job is not active")
NOT_DEAD = ("-", b"EMQSTATE job is not dead")
STALE = ("-", b"EMQFENCE stale fence")


def leased(job: str, payload: str, attempts: int, fence: int) -> tuple[str, list]:
    return ("*", [("$", job.encode()), ("$", payload.encode()), (":", attempts), (":", fence)])


def stats(r: RawClient) -> dict[bytes, int]:
    return dict(pairs(r.call("EMQ.STATS", 1, META)))


def kill(r: RawClient, job: str, attempts: int = 3) -> None:
    """Claim and fail `job` until it is dead (the queue's default max attempts is 3)."""
    for n in range(attempts):
        reply = claim(r)
        assert reply[1][0] == ("$", job.encode())
        fence = reply[1][3][1]
        assert fail(r, job, fence) == ("+", b"dead" if n == attempts - 1 else b"scheduled")
        r.call("ZADD", PENDING, 0, job)  # hurry the retry along: back to the head
        r.call("ZREM", SCHEDULE, job)
    r.call("ZREM", PENDING, job)


# --- ENQUEUE -------------------------------------------------------------------------------


def test_enqueue_writes_the_row_in_field_order_and_pending_by_priority(r: RawClient) -> None:
    assert enqueue(r, "JOB1", "hello", 0, -7) == (":", 1)
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"0"),
                              (b"payload", b"hello"), (b"priority", b"-7")]
    assert zset(r, "pending") == [(b"JOB1", -7)]
    assert r.call("EXISTS", SCHEDULE) == (":", 0)


def test_enqueue_with_a_delay_schedules_at_now_plus_delay(r: RawClient, now: int) -> None:
    assert enqueue(r, "JOB1", "x", 2500, 4) == (":", 1)
    assert row(r, "JOB1")[0] == (b"state", b"scheduled")
    assert zset(r, "schedule") == [(b"JOB1", now + 2500)]
    assert r.call("EXISTS", PENDING) == (":", 0)


def test_enqueue_of_an_existing_row_is_a_duplicate_that_writes_nothing(r: RawClient) -> None:
    enqueue(r, "JOB1", "first", 0, 1)
    assert enqueue(r, "JOB1", "second", 100, 2) == (":", 0)
    assert row(r, "JOB1")[2] == (b"payload", b"first")
    assert zset(r, "pending") == [(b"JOB1", 1)]
    assert r.call("EXISTS", SCHEDULE) == (":", 0)


def test_enqueue_counts_any_key_at_the_row_as_a_duplicate(r: RawClient) -> None:
    r.call("SET", key("JOB1"), "not a row")
    assert enqueue(r, "JOB1") == (":", 0)
    assert r.call("EXISTS", PENDING) == (":", 0)


def test_enqueue_finds_the_duplicate_before_a_wrong_type(r: RawClient) -> None:
    enqueue(r, "JOB1")
    r.call("DEL", PENDING)
    r.call("SET", PENDING, "x")
    assert enqueue(r, "JOB1") == (":", 0)
    assert enqueue(r, "JOB2") == ("-", b"WRONGTYPE Operation against a key holding the wrong "
                                  b"kind of value")
    assert r.call("EXISTS", key("JOB2")) == (":", 0)


def test_enqueue_writes_the_priority_canonical(r: RawClient) -> None:
    assert enqueue(r, "JOB1", "p", 0, 9223372036854775807) == (":", 1)
    assert row(r, "JOB1")[3] == (b"priority", b"9223372036854775807")


# --- CLAIM ---------------------------------------------------------------------------------


def test_claim_on_an_empty_queue_answers_an_empty_array_at_once(r: RawClient) -> None:
    assert claim(r) == EMPTY
    assert r.call("KEYS", "*") == ("*", [])


def test_claim_leases_the_lowest_priority_then_the_lowest_id(r: RawClient, now: int) -> None:
    enqueue(r, "JOB3", "c", 0, 5)
    enqueue(r, "JOB2", "b", 0, 1)
    enqueue(r, "JOB1", "a", 0, 1)
    assert claim(r, 1500) == leased("JOB1", "a", 1, 1)
    assert claim(r, 1500) == leased("JOB2", "b", 1, 2)
    assert claim(r, 1500) == leased("JOB3", "c", 1, 3)
    assert claim(r) == EMPTY
    assert zset(r, "active") == [(b"JOB1", now + 1500), (b"JOB2", now + 1500),
                                 (b"JOB3", now + 1500)]
    assert pairs(r.call("HGETALL", META)) == [(b"fence", b"3")]


def test_claim_writes_attempts_then_state_and_fence(r: RawClient) -> None:
    enqueue(r, "JOB1", "a", 0, 2)
    claim(r)
    assert row(r, "JOB1") == [(b"state", b"active"), (b"attempts", b"1"), (b"payload", b"a"),
                              (b"priority", b"2"), (b"fence", b"1")]


def test_claim_answers_empty_while_paused_and_leases_after_resume(r: RawClient) -> None:
    enqueue(r, "JOB1", "a")
    assert r.call("EMQ.PAUSE", 1, META) == ("+", b"OK")
    assert claim(r) == EMPTY
    assert zset(r, "pending") == [(b"JOB1", 0)]
    assert r.call("EMQ.RESUME", 1, META) == ("+", b"OK")
    assert r.call("EXISTS", META) == (":", 0)
    assert claim(r) == leased("JOB1", "a", 1, 1)


def test_claim_pops_a_head_without_a_row_and_answers_empty(r: RawClient) -> None:
    r.call("ZADD", PENDING, 0, "JOB0")
    enqueue(r, "JOB1", "a", 0, 1)
    assert claim(r) == EMPTY
    assert zset(r, "pending") == [(b"JOB1", 1)]
    assert r.call("EXISTS", META, ACTIVE) == (":", 0)
    assert claim(r) == leased("JOB1", "a", 1, 1)


def test_claim_answers_a_null_payload_for_a_row_without_one(r: RawClient) -> None:
    r.call("HSET", key("JOB1"), "state", "pending")
    r.call("ZADD", PENDING, 0, "JOB1")
    null = ("$", None) if _resp2(r) else ("_", None)
    assert claim(r) == ("*", [("$", b"JOB1"), null, (":", 1), (":", 1)])


def _resp2(r: RawClient) -> bool:
    """Whether the connection speaks RESP2 (HELLO answers an array, not a map)."""
    return r.call("HELLO")[0] == "*"


def test_claim_counts_attempts_across_leases_and_fences_per_queue(r: RawClient) -> None:
    enqueue(r, "JOB1", "a")
    assert claim(r) == leased("JOB1", "a", 1, 1)
    assert fail(r, "JOB1", 1) == ("+", b"scheduled")
    r.call("HSET", META, "fence", "41")
    enqueue(r, "JOB2", "b", queue="b")
    assert claim(r, queue="b") == leased("JOB2", "b", 1, 1)
    r.call("ZADD", PENDING, 0, "JOB1")
    assert claim(r) == leased("JOB1", "a", 2, 42)


# --- EXTEND, RELEASE, COMPLETE -------------------------------------------------------------


def test_extend_moves_the_deadline_and_answers_it(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1")
    claim(r, 1000)
    advance(r, 700)
    assert extend(r, "JOB1", 1, 5000) == (":", now + 700 + 5000)
    assert zset(r, "active") == [(b"JOB1", now + 5700)]


def test_a_lease_past_its_deadline_can_be_extended_until_a_sweep_takes_it(
        r: RawClient, now: int) -> None:
    enqueue(r, "JOB1")
    claim(r, 1000)
    advance(r, 3000)
    assert extend(r, "JOB1", 1, 1000) == (":", now + 4000)
    advance(r, 2000)
    assert stalled_check(r) == ("*", [(":", 1), (":", 0), (":", 0)])
    assert extend(r, "JOB1", 1, 1000) == NOT_ACTIVE


def test_settling_checks_state_before_fence(r: RawClient) -> None:
    enqueue(r, "JOB1")
    assert extend(r, "JOB1", 99) == NOT_ACTIVE  # pending: state first, the fence unread
    claim(r)
    assert extend(r, "JOB1", 2) == STALE
    assert complete(r, "JOB1", 2) == STALE
    assert fail(r, "JOB1", 2) == STALE
    assert release(r, "JOB1", 2) == STALE
    assert extend(r, "JOB9", 1) == NOT_ACTIVE


def test_a_row_active_but_missing_from_the_active_set_is_not_active(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r)
    r.call("ZREM", ACTIVE, "JOB1")
    assert complete(r, "JOB1", 1) == NOT_ACTIVE


def test_a_row_without_a_fence_or_with_a_bad_one_is_stale(r: RawClient) -> None:
    enqueue(r, "JOB1")
    claim(r)
    r.call("HSET", key("JOB1"), "fence", "01")
    assert extend(r, "JOB1", 1) == STALE
    r.call("HDEL", key("JOB1"), "fence")
    assert extend(r, "JOB1", 1) == STALE


def test_complete_drops_the_lease_and_row_and_counts_it(r: RawClient) -> None:
    enqueue(r, "JOB1")
    enqueue(r, "JOB2")
    claim(r)
    assert complete(r, "JOB1", 1) == (":", 1)
    assert r.call("EXISTS", key("JOB1"), ACTIVE) == (":", 0)
    assert pairs(r.call("HGETALL", META)) == [(b"fence", b"1"), (b"completed", b"1")]
    assert complete(r, "JOB1", 1) == NOT_ACTIVE
    assert stats(r) == {b"pending": 1, b"scheduled": 0, b"active": 0, b"dead": 0,
                        b"paused": 0, b"completed": 1}


def test_release_marks_the_restart_and_leaves_the_lease(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1")
    claim(r, 1000)
    assert release(r, "JOB1", 1) == (":", 1)
    assert row(r, "JOB1")[-1] == (b"restart", b"1")
    assert zset(r, "active") == [(b"JOB1", now + 1000)]
    assert complete(r, "JOB1", 1) == (":", 1)  # the holder came back in time


# --- FAIL ----------------------------------------------------------------------------------


def test_fail_retries_after_the_backoff(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1", "a", 0, 3)
    claim(r)
    advance(r, 10)
    assert fail(r, "JOB1", 1, 2000, "timeout") == ("+", b"scheduled")
    assert row(r, "JOB1") == [(b"state", b"scheduled"), (b"attempts", b"1"), (b"payload", b"a"),
                              (b"priority", b"3"), (b"error", b"timeout")]
    assert zset(r, "schedule") == [(b"JOB1", now + 2010)]
    assert r.call("EXISTS", ACTIVE, DEAD) == (":", 0)


def test_fail_dead_letters_at_the_default_three_attempts(r: RawClient, now: int) -> None:
    enqueue(r, "JOB1")
    kill(r, "JOB1", 3)
    assert row(r, "JOB1")[0:2] == [(b"state", b"dead"), (b"attempts", b"3")]
    assert dict(row(r, "JOB1"))[b"error"] == b"boom"
    assert b"fence" not in dict(row(r, "JOB1"))
    assert zset(r, "dead") == [(b"JOB1", now)]
    assert stats(r)[b"dead"] == 1
    assert dict(pairs(r.call("HGETALL", META)))[b"dead"] == b"1"


def test_fail_takes_the_rows_max_attempts_over_the_queues(r: RawClient) -> None:
    r.call("HSET", META, "max_attempts", 5)
    enqueue(r, "JOB1")
    r.call("HSET", key("JOB1"), "max_attempts", 1)
    kill(r, "JOB1", 1)
    enqueue(r, "JOB2")
    kill(r, "JOB2", 5)
    assert zset(r, "dead") == [(b"JOB1", 1_700_000_000_000), (b"JOB2", 1_700_000_000_000)]


def test_fail_takes_the_queues_max_attempts(r: RawClient) -> None:
    r.call("HSET", META, "max_attempts", 2)
    enqueue(r, "JOB1")
    kill(r, "JOB1", 2)
    assert dict(pairs(r.call("HGETALL", META)))[b"dead"] == b"1"


# --- REPROCESS -----------------------------------------------------------------------------


def test_reprocess_sends_a_dead_job_back_with_fresh_counters(r: RawClient) -> None:
    enqueue(r, "JOB1", "a", 0, 4)
    kill(r, "JOB1", 3)
    r.call("HSET", key("JOB1"), "stalls", 2)
    assert reprocess(r, "JOB1") == (":", 1)
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"0"), (b"payload", b"a"),
                              (b"priority", b"4"), (b"stalls", b"0")]
    assert zset(r, "pending") == [(b"JOB1", 4)]
    assert r.call("EXISTS", DEAD) == (":", 0)
    assert dict(pairs(r.call("HGETALL", META)))[b"dead"] == b"1"  # left as it is
    assert reprocess(r, "JOB1") == NOT_DEAD


def test_reprocess_refuses_a_job_that_is_not_dead(r: RawClient) -> None:
    assert reprocess(r, "JOB1") == NOT_DEAD
    enqueue(r, "JOB1")
    assert reprocess(r, "JOB1") == NOT_DEAD
    r.call("HSET", key("JOB1"), "state", "dead")
    assert reprocess(r, "JOB1") == NOT_DEAD  # dead by state, missing from the dead set


# --- REMOVE --------------------------------------------------------------------------------


def test_remove_a_job_in_every_state(r: RawClient) -> None:
    enqueue(r, "JOBP")
    enqueue(r, "JOBS", delay=500)
    enqueue(r, "JOBA", priority=-1)
    claim(r)
    enqueue(r, "JOBD", priority=-1)
    kill(r, "JOBD", 3)
    for job in ("JOBP", "JOBS", "JOBA", "JOBD"):
        assert remove(r, job) == (":", 1)
        assert r.call("EXISTS", key(job)) == (":", 0)
    assert r.call("EXISTS", PENDING, SCHEDULE, ACTIVE, DEAD) == (":", 0)
    assert complete(r, "JOBA", 1) == NOT_ACTIVE  # the holder learns at settlement


def test_remove_without_a_row_answers_zero_and_leaves_the_sets(r: RawClient) -> None:
    r.call("ZADD", PENDING, 0, "JOB1")
    assert remove(r, "JOB1") == (":", 0)
    assert zset(r, "pending") == [(b"JOB1", 0)]


# --- lane rows -----------------------------------------------------------------------------


def test_every_flat_verb_refuses_a_lane_row_after_its_existence_check(r: RawClient) -> None:
    r.call("HSET", key("JOBL"), "state", "active", "attempts", 1, "payload", "p",
           "group", "g", "fence", 1)
    r.call("ZADD", ACTIVE, 0, "JOBL")
    r.call("ZADD", DEAD, 0, "JOBL")
    lane = "EMQLANE lane row JOBL is {} by the lane scripts"
    assert extend(r, "JOBL", 7) == ("-", lane.format("extended").encode())
    assert complete(r, "JOBL", 7) == ("-", lane.format("completed").encode())
    assert fail(r, "JOBL", 7) == ("-", lane.format("failed").encode())
    assert release(r, "JOBL", 7) == ("-", lane.format("released").encode())
    assert reprocess(r, "JOBL") == ("-", lane.format("reprocessed").encode())
    assert remove(r, "JOBL") == ("-", lane.format("removed").encode())
    assert enqueue(r, "JOBL") == (":", 0)


# --- the counters, and the events of one claim ---------------------------------------------


def test_stats_follow_the_jobs_through_their_states(r: RawClient) -> None:
    for job, delay in (("JOB1", 0), ("JOB2", 0), ("JOB3", 0), ("JOB4", 100)):
        enqueue(r, job, delay=delay)
    claim(r)
    claim(r)
    complete(r, "JOB1", 1)
    r.call("EMQ.PAUSE", 1, META)
    reply = r.call("EMQ.STATS", 1, META)
    assert reply[0] == ("*" if _resp2(r) else "%")
    assert stats(r) == {b"pending": 1, b"scheduled": 1, b"active": 1, b"dead": 0,
                        b"paused": 1, b"completed": 1}


def test_a_claim_announces_the_builtins_events_in_order(server: object, r: RawClient) -> None:
    enqueue(r, "JOB1")
    r.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub = RawClient(server.host, server.port)  # type: ignore[attr-defined]
    try:
        sub.call("PSUBSCRIBE", "__keyspace@0__:*")
        claim(r)
        sub.send("PING")
        events = []
        while (message := sub.read())[0] != "*" or message[1][0] != ("$", b"pong"):
            events.append((message[1][2][1], message[1][3][1]))
    finally:
        sub.close()
        r.call("CONFIG", "SET", "notify-keyspace-events", "")
    k = "__keyspace@0__:emq:{a}:"
    assert events == [((k + "pending").encode(), b"zrem"), ((k + "pending").encode(), b"del"),
                      ((k + "meta").encode(), b"hincrby"), ((k + "JOB1").encode(), b"hincrby"),
                      ((k + "JOB1").encode(), b"hset"), ((k + "active").encode(), b"zadd")]


def command_doc(r: RawClient, name: str) -> dict:
    """One command's COMMAND DOCS fields (a map in RESP3, a flat array in RESP2)."""
    doc = pairs(r.call("COMMAND", "DOCS", name))[0][1]
    return doc if isinstance(doc, dict) else dict(zip(doc[::2], doc[1::2], strict=True))


def test_the_sweeps_carry_the_seeds_summary_and_complexity(r: RawClient) -> None:
    promote = command_doc(r, "emq.promote")
    assert promote[b"summary"] == (
        b"Move due scheduled flat jobs to pending, bounded by batch (emq6.8 G8, @promote)")
    assert promote[b"complexity"] == b"O(M log N) for M due jobs"
    sweep = command_doc(r, "emq.stalled.check")
    assert sweep[b"summary"] == (
        b"Counted stall sweep: recover or dead-letter expired leases; restart expiries "
        b"exempt (emq6.8 G15, @sweep_stalled)")
    assert sweep[b"complexity"] == b"O(M log N) for M expired leases"


ARITIES = {"enqueue": 8, "claim": 5, "extend": 6, "complete": 5, "fail": 9, "release": 5,
           "promote": 6, "stalled.check": 8, "reprocess": 5, "remove": 3}


def test_command_info_knows_each_verbs_arity_flags_and_keys(r: RawClient) -> None:
    for name, arity in ARITIES.items():
        info = plain(r.call("COMMAND", "INFO", f"emq.{name}"))[0]
        assert info[:2] == [f"emq.{name}".encode(), arity]
        assert {b"write", b"movablekeys"} <= set(info[2])
        assert info[6] == [b"@write", b"@slow"]
    keys = plain(r.call("COMMAND", "GETKEYS", "EMQ.FAIL", 4, key("JOB1"), ACTIVE, SCHEDULE, DEAD,
                        1, 0, "why"))
    assert keys == [key("JOB1").encode(), ACTIVE.encode(), SCHEDULE.encode(), DEAD.encode()]
