"""The EMQ wire-4 scripts (fakekey/emq/scripts) on fakekey and on real Valkey.

Every script runs by EVALSHA (loaded on NOSCRIPT) with an explicit `now`, so no clock is
involved. The flat twins are checked reply by reply and key by key for each state and
error; the lane scripts for the ring, fairness between groups and the doorbell rule (a
wake token exactly when a group joins the ring, the list capped at 64).
"""

from __future__ import annotations

from typing import Any

import pytest

from fakekey.emq import Queue
from fakekey.emq.scripts import SCRIPTS
from fakekey.testing.raw import RawClient, plain

NOW = 1_700_000_000_000
Q = "emq:{orders}:"
LANE_KEYS = [Q + "ring", Q + "gpaused", Q + "glimit", Q + "gactive", Q + "wake", Q]
EMPTY = ("*", [])


def k(suffix: str) -> str:
    return Q + suffix


def run(r: RawClient, name: str, keys: list[str], args: list[Any]) -> tuple[str, Any]:
    """EVALSHA the script, loading it once when the server does not know it."""
    script = SCRIPTS[name]
    reply = r.call("EVALSHA", script.sha, len(keys), *keys, *args)
    if reply[0] == "-" and reply[1].startswith(b"NOSCRIPT"):
        assert r.call("SCRIPT", "LOAD", script.source) == ("$", script.sha.encode())
        reply = r.call("EVALSHA", script.sha, len(keys), *keys, *args)
    return reply


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


def snapshot(r: RawClient) -> dict[bytes, Any]:
    """Every key of the queue with its type and contents (hash fields in order)."""
    out: dict[bytes, Any] = {}
    for key in sorted(plain(r.call("KEYS", "emq:*"))):
        kind = plain(r.call("TYPE", key))
        if kind == b"hash":
            fields = plain(r.call("HGETALL", key))
            items = list(fields.items()) if isinstance(fields, dict) else list(zip(fields[::2], fields[1::2]))
            out[key] = ("hash", items)
        elif kind == b"zset":
            flat = plain(r.call("ZRANGE", key, 0, -1, "WITHSCORES"))
            if flat and isinstance(flat[0], list):
                flat = [x for pair in flat for x in pair]
            out[key] = ("zset", [(m, float(s)) for m, s in zip(flat[::2], flat[1::2])])
        elif kind == b"list":
            out[key] = ("list", plain(r.call("LRANGE", key, 0, -1)))
        elif kind == b"set":
            out[key] = ("set", sorted(plain(r.call("SMEMBERS", key))))
        else:
            out[key] = (kind.decode(), plain(r.call("GET", key)))
    return out


def row(r: RawClient, job: str) -> list[tuple[bytes, bytes]]:
    return snapshot(r)[k(job).encode()][1]


def zset(r: RawClient, suffix: str) -> list[tuple[bytes, float]]:
    return snapshot(r).get(k(suffix).encode(), ("zset", []))[1]


# --- the flat twins' calls (KEYS as each script's header fixes them) ---------------------


def enqueue(r, job, payload="p", delay=0, priority=0, now=NOW):
    return run(r, "enqueue", [k(job), k("pending"), k("schedule")], [payload, delay, priority, now])


def claim(r, lease=1000, now=NOW):
    return run(r, "claim", [k("pending"), k("active"), k("meta"), Q], [lease, now])


def extend(r, job, fence, lease=1000, now=NOW):
    return run(r, "extend", [k(job), k("active")], [fence, lease, now])


def complete(r, job, fence, now=NOW):
    return run(r, "complete", [k(job), k("active"), k("meta")], [fence, now])


def fail(r, job, fence, backoff=0, reason="boom", now=NOW):
    keys = [k(job), k("active"), k("schedule"), k("dead"), k("meta")]
    return run(r, "fail", keys, [fence, backoff, reason, now])


def release(r, job, fence, now=NOW):
    return run(r, "release", [k(job), k("active")], [fence, now])


def promote(r, batch=100, now=NOW):
    return run(r, "promote", [k("schedule"), k("pending"), Q], [batch, now])


def sweep(r, limit=100, max_stalls=1, now=NOW):
    keys = [k("active"), k("pending"), k("dead"), Q, k("meta")]
    return run(r, "sweep_stalled", keys, [limit, max_stalls, now])


def reprocess(r, job, now=NOW):
    return run(r, "reprocess", [k(job), k("dead"), k("pending")], [now])


def remove(r, job, now=NOW):
    keys = [k(job), k("pending"), k("schedule"), k("active"), k("dead")]
    return run(r, "remove", keys, [now])


def stats(r, now=NOW):
    keys = [k("meta"), k("pending"), k("schedule"), k("active"), k("dead")]
    return run(r, "stats", keys, [now])


# --- the lane scripts' calls -------------------------------------------------------------


def genqueue(r, job, group, payload="p"):
    keys = [k(job), k("lane:" + group), k("ring"), k("gpaused"), k("glimit"), k("gactive"), k("wake")]
    return run(r, "genqueue", keys, [job, payload, group])


def gclaim(r, lease=1000, now=NOW):
    return run(r, "gclaim2", [k("ring"), k("active"), Q], [lease, now])


def gcomplete(r, job, attempts, now=NOW):
    return run(r, "gcomplete", [k(job), k("active"), k("meta"), *LANE_KEYS], [attempts, now])


def gfail(r, job, attempts, backoff=0, reason="boom", now=NOW):
    keys = [k(job), k("active"), k("schedule"), k("dead"), k("meta"), *LANE_KEYS]
    return run(r, "gfail", keys, [attempts, backoff, reason, now])


def gextend(r, job, attempts, lease=1000, now=NOW):
    return run(r, "gextend", [k(job), k("active")], [attempts, lease, now])


def gpromote(r, batch=100, now=NOW):
    return run(r, "gpromote", [k("schedule"), k("pending"), *LANE_KEYS], [batch, now])


def reap(r, limit=100, group="", now=NOW):
    return run(r, "reap", [k("active"), k("pending"), *LANE_KEYS], [limit, group, now])


def gsweep(r, limit=100, max_stalls=1, now=NOW):
    keys = [k("active"), k("pending"), k("dead"), k("meta"), *LANE_KEYS]
    return run(r, "gsweep", keys, [limit, max_stalls, now])


def greprocess(r, job, now=NOW):
    return run(r, "greprocess", [k(job), k("dead"), *LANE_KEYS], [now])


def gremove(r, job, now=NOW):
    return run(r, "gremove", [k(job), k("schedule"), k("active"), k("dead"), *LANE_KEYS], [now])


def gcontrol(r, name, *args, now=NOW):
    return run(r, name, LANE_KEYS, [*args, now])


def gmove(r, job, group, now=NOW):
    return run(r, "gmove", [k(job), k("active"), *LANE_KEYS], [group, now])


def grepair(r, group, now=NOW):
    return run(r, "grepair", [k("active"), *LANE_KEYS], [group, now])


def ring(r) -> list[bytes]:
    return plain(r.call("LRANGE", k("ring"), 0, -1))


def wakes(r) -> int:
    return plain(r.call("LLEN", k("wake")))


def claimed(r, lease=1000, now=NOW) -> tuple[str, int]:
    """Claims the head of pending; returns (job id, fence)."""
    kind, items = claim(r, lease, now)
    assert kind == "*" and len(items) == 4, items
    return items[0][1].decode(), items[3][1]


# --- loading -----------------------------------------------------------------------------


def test_every_script_loads_under_its_sha(r):
    for script in SCRIPTS.values():
        assert r.call("SCRIPT", "LOAD", script.source) == ("$", script.sha.encode()), script.name


def test_genqueue_is_sent_exactly_as_the_seed_quotes_it():
    source = SCRIPTS["genqueue"].source
    assert source.startswith("-- EchoMQ.Lanes @genqueue")
    assert "is_strict_int" not in source


# --- @enqueue ----------------------------------------------------------------------------


def test_enqueue_writes_the_row_and_pending(r):
    assert enqueue(r, "JOB1", "hello", 0, -5) == (":", 1)
    assert snapshot(r) == {
        k("JOB1").encode(): ("hash", [(b"state", b"pending"), (b"attempts", b"0"),
                                      (b"payload", b"hello"), (b"priority", b"-5")]),
        k("pending").encode(): ("zset", [(b"JOB1", -5.0)]),
    }


def test_enqueue_with_a_delay_schedules_at_now_plus_delay(r):
    assert enqueue(r, "JOB1", "x", 250, 3) == (":", 1)
    assert row(r, "JOB1")[0] == (b"state", b"scheduled")
    assert zset(r, "schedule") == [(b"JOB1", float(NOW + 250))]
    assert zset(r, "pending") == []


def test_enqueue_a_duplicate_writes_nothing(r):
    enqueue(r, "JOB1", "first")
    before = snapshot(r)
    assert enqueue(r, "JOB1", "second", 10, 1) == (":", 0)
    assert snapshot(r) == before


@pytest.mark.parametrize(("job", "delay", "priority", "reply"), [
    ("job1", 0, 0, "EMQKIND job id must be JOB-namespaced"),
    ("JOB1", -1, "x", "EMQARG delay_ms must be a non-negative integer"),
    ("JOB1", "01", 0, "EMQARG delay_ms must be a non-negative integer"),
    ("JOB1", 0, "1.5", "EMQARG priority must be an integer"),
    ("JOB1", 0, "+1", "EMQARG priority must be an integer"),
    ("JOB1", 0, "9223372036854775808", "EMQARG priority must be an integer"),
])
def test_enqueue_refuses_bad_input_and_writes_nothing(r, job, delay, priority, reply):
    assert enqueue(r, job, "p", delay, priority) == err(reply)
    assert snapshot(r) == {}


# --- @claim ------------------------------------------------------------------------------


def test_claim_leases_the_head_with_typed_reply(r):
    enqueue(r, "JOB2", "two", 0, 1)
    enqueue(r, "JOB1", "one", 0, 1)
    enqueue(r, "JOB3", "three", 0, 0)
    assert claim(r, 500) == ("*", [("$", b"JOB3"), ("$", b"three"), (":", 1), (":", 1)])
    assert claim(r, 500) == ("*", [("$", b"JOB1"), ("$", b"one"), (":", 1), (":", 2)])
    assert row(r, "JOB1") == [(b"state", b"active"), (b"attempts", b"1"), (b"payload", b"one"),
                              (b"priority", b"1"), (b"fence", b"2")]
    assert zset(r, "active") == [(b"JOB1", float(NOW + 500)), (b"JOB3", float(NOW + 500))]
    assert zset(r, "pending") == [(b"JOB2", 1.0)]
    assert row(r, "meta") == [(b"fence", b"2")]


def test_claim_answers_empty_when_paused_empty_or_rowless(r):
    assert claim(r) == EMPTY
    enqueue(r, "JOB1")
    r.call("HSET", k("meta"), "paused", "0")
    assert claim(r) == EMPTY
    r.call("HDEL", k("meta"), "paused")
    r.call("DEL", k("JOB1"))
    assert claim(r) == EMPTY
    assert snapshot(r) == {}


def test_claim_checks_lease_and_an_inconsistent_row(r):
    enqueue(r, "JOB1")
    assert claim(r, 0) == err("EMQARG lease_ms must be a positive integer")
    r.call("HSET", k("JOB1"), "attempts", "many")
    before = snapshot(r)
    assert claim(r) == err("EMQHOST unexpected reply from host")
    assert snapshot(r) == before


# --- @extend, @complete, @fail, @release: the shared checks --------------------------------


SETTLERS = {
    "extend": lambda r, job, fence: extend(r, job, fence),
    "complete": lambda r, job, fence: complete(r, job, fence),
    "fail": lambda r, job, fence: fail(r, job, fence),
    "release": lambda r, job, fence: release(r, job, fence),
}
VERB_WORD = {"extend": "extended", "complete": "completed", "fail": "failed", "release": "released"}


@pytest.mark.parametrize("name", SETTLERS)
def test_settlers_check_state_lane_and_fence_in_order(r, name):
    settle = SETTLERS[name]
    assert settle(r, "nojob", 1) == err("EMQKIND job id must be JOB-namespaced")
    assert settle(r, "JOB1", 0) == err("EMQARG fence must be a positive integer")
    assert settle(r, "JOB1", 1) == err("EMQSTATE job is not active")
    genqueue(r, "JOBL", "g")
    assert settle(r, "JOBL", 1) == err(f"EMQLANE lane row JOBL is {VERB_WORD[name]} by the lane scripts")
    enqueue(r, "JOB1")
    assert settle(r, "JOB1", 1) == err("EMQSTATE job is not active")
    job, fence = claimed(r)
    assert settle(r, job, fence + 1) == err("EMQFENCE stale fence")
    r.call("ZREM", k("active"), job)
    assert settle(r, job, fence) == err("EMQSTATE job is not active")
    r.call("ZADD", k("active"), NOW, job)
    r.call("HDEL", k(job), "fence")
    before = snapshot(r)
    assert settle(r, job, fence) == err("EMQFENCE stale fence")
    assert snapshot(r) == before


def test_extend_sets_the_new_deadline(r):
    enqueue(r, "JOB1")
    job, fence = claimed(r, 100)
    assert extend(r, job, fence, 700, NOW + 50) == (":", NOW + 750)
    assert zset(r, "active") == [(b"JOB1", float(NOW + 750))]
    assert extend(r, job, fence, "0") == err("EMQARG lease_ms must be a positive integer")
    assert extend(r, job, "x", "0") == err("EMQARG fence must be a positive integer")
    assert extend(r, job, fence, 1, "soon") == err("EMQARG now must be a non-negative integer")


def test_complete_deletes_the_row_and_counts(r):
    enqueue(r, "JOB1")
    job, fence = claimed(r)
    assert complete(r, job, fence) == (":", 1)
    assert snapshot(r) == {k("meta").encode(): ("hash", [(b"fence", b"1"), (b"completed", b"1")])}


def test_fail_retries_with_backoff_then_dies(r):
    enqueue(r, "JOB1", "p", 0, 2)
    r.call("HSET", k("meta"), "max_attempts", "2")
    job, fence = claimed(r)
    assert fail(r, job, fence, 300, "first", NOW + 10) == ("+", b"scheduled")
    assert row(r, job) == [(b"state", b"scheduled"), (b"attempts", b"1"), (b"payload", b"p"),
                           (b"priority", b"2"), (b"error", b"first")]
    assert zset(r, "schedule") == [(b"JOB1", float(NOW + 310))]
    assert zset(r, "active") == []
    assert promote(r, 10, NOW + 310) == (":", 1)
    job, fence = claimed(r)
    assert fail(r, job, fence, 300, "second", NOW + 20) == ("+", b"dead")
    assert row(r, job)[0] == (b"state", b"dead")
    assert zset(r, "dead") == [(b"JOB1", float(NOW + 20))]
    assert row(r, "meta") == [(b"max_attempts", b"2"), (b"fence", b"2"), (b"dead", b"1")]


def test_fail_reads_the_rows_own_max_attempts(r):
    enqueue(r, "JOB1")
    r.call("HSET", k("JOB1"), "max_attempts", "1")
    job, fence = claimed(r)
    assert fail(r, job, fence, -1) == err("EMQARG backoff_ms must be a non-negative integer")
    assert fail(r, job, fence) == ("+", b"dead")


def test_fail_on_an_inconsistent_max_attempts_writes_nothing(r):
    enqueue(r, "JOB1")
    job, fence = claimed(r)
    r.call("HSET", k("meta"), "max_attempts", "three")
    before = snapshot(r)
    assert fail(r, job, fence) == err("EMQHOST unexpected reply from host")
    assert snapshot(r) == before


def test_release_marks_the_restart_and_keeps_the_lease(r):
    enqueue(r, "JOB1")
    job, fence = claimed(r)
    before = zset(r, "active")
    assert release(r, job, fence) == (":", 1)
    assert row(r, job)[-1] == (b"restart", b"1")
    assert zset(r, "active") == before


# --- @promote ----------------------------------------------------------------------------


def test_promote_moves_due_rows_by_priority_and_drops_rowless(r):
    enqueue(r, "JOB1", "p", 100, 7)
    enqueue(r, "JOB2", "p", 200, 1)
    enqueue(r, "JOB3", "p", 50, 0)
    enqueue(r, "JOB4", "p", 300, 0)
    r.call("DEL", k("JOB3"))
    assert promote(r, 100, NOW + 200) == (":", 2)
    assert zset(r, "pending") == [(b"JOB2", 1.0), (b"JOB1", 7.0)]
    assert zset(r, "schedule") == [(b"JOB4", float(NOW + 300))]
    assert row(r, "JOB1")[0] == (b"state", b"pending")


def test_promote_counts_rowless_members_toward_batch(r):
    enqueue(r, "JOB1", "p", 10)
    enqueue(r, "JOB2", "p", 20)
    r.call("DEL", k("JOB1"))
    assert promote(r, 1, NOW + 100) == (":", 0)
    assert zset(r, "schedule") == [(b"JOB2", float(NOW + 20))]
    assert promote(r, "0") == err("EMQARG batch must be a positive integer")


def test_promote_refuses_a_due_lane_row_and_moves_nothing(r):
    enqueue(r, "JOB1", "p", 10)
    r.call("HSET", k("JOB2"), "state", "scheduled", "group", "g")
    r.call("ZADD", k("schedule"), NOW + 20, "JOB2")
    before = snapshot(r)
    assert promote(r, 10, NOW + 100) == err("EMQLANE due lane row JOB2 needs the lane promotion")
    assert snapshot(r) == before


# --- @sweep_stalled ----------------------------------------------------------------------


def test_sweep_recovers_exempts_and_kills(r):
    for job in ("JOB1", "JOB2", "JOB3"):
        enqueue(r, job, "p", 0, 4)
    first, f1 = claimed(r, 100)
    second, f2 = claimed(r, 100)
    third, _ = claimed(r, 5000)
    release(r, first, f1)
    r.call("HSET", k(second), "stalls", "1")
    assert sweep(r, 10, 1, NOW + 100) == ("*", [(":", 0), (":", 1), (":", 1)])
    assert row(r, first) == [(b"state", b"pending"), (b"attempts", b"1"), (b"payload", b"p"),
                             (b"priority", b"4")]
    assert row(r, second) == [(b"state", b"dead"), (b"attempts", b"1"), (b"payload", b"p"),
                              (b"priority", b"4"), (b"stalls", b"2"), (b"error", b"stalled")]
    assert zset(r, "pending") == [(first.encode(), 4.0)]
    assert zset(r, "dead") == [(second.encode(), float(NOW + 100))]
    assert zset(r, "active") == [(third.encode(), float(NOW + 5000))]
    assert plain(r.call("HGET", k("meta"), "dead")) == b"1"


def test_sweep_counts_a_stall_back_to_pending(r):
    enqueue(r, "JOB1")
    job, _ = claimed(r, 100)
    assert sweep(r, 10, 1, NOW + 100) == ("*", [(":", 1), (":", 0), (":", 0)])
    assert row(r, job) == [(b"state", b"pending"), (b"attempts", b"1"), (b"payload", b"p"),
                           (b"priority", b"0"), (b"stalls", b"1")]
    assert sweep(r, 10, -1) == err("EMQARG max_stalls must be a non-negative integer")
    assert sweep(r, 0, "x") == err("EMQARG limit must be a positive integer")


def test_sweep_refuses_an_expired_lane_row(r):
    enqueue(r, "JOB1")
    claimed(r, 100)
    genqueue(r, "JOB2", "g")
    gclaim(r, 100)
    before = snapshot(r)
    assert sweep(r, 10, 1, NOW + 100) == err("EMQLANE expired lane row JOB2 needs the lane recovery")
    assert snapshot(r) == before


# --- @reprocess, @remove, @pause, @resume, @stats -----------------------------------------


def test_reprocess_brings_a_dead_job_back(r):
    enqueue(r, "JOB1", "p", 0, 3)
    r.call("HSET", k("JOB1"), "max_attempts", "1")
    assert reprocess(r, "JOB1") == err("EMQSTATE job is not dead")
    job, fence = claimed(r)
    fail(r, job, fence)
    assert reprocess(r, "JOB9") == err("EMQSTATE job is not dead")
    assert reprocess(r, "JOB1") == (":", 1)
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"0"), (b"payload", b"p"),
                              (b"priority", b"3"), (b"max_attempts", b"1"), (b"stalls", b"0")]
    assert zset(r, "pending") == [(b"JOB1", 3.0)]
    assert zset(r, "dead") == []
    assert plain(r.call("HGET", k("meta"), "dead")) == b"1"
    genqueue(r, "JOB2", "g")
    assert reprocess(r, "JOB2") == err("EMQLANE lane row JOB2 is reprocessed by the lane scripts")


def test_remove_takes_a_job_out_of_every_set(r):
    assert remove(r, "JOB1") == (":", 0)
    enqueue(r, "JOB1")
    enqueue(r, "JOB2", "p", 10)
    claimed(r)
    assert remove(r, "JOB1") == (":", 1)
    assert remove(r, "JOB2") == (":", 1)
    assert sorted(snapshot(r)) == [k("meta").encode()]
    genqueue(r, "JOB3", "g")
    assert remove(r, "JOB3") == err("EMQLANE lane row JOB3 is removed by the lane scripts")
    assert remove(r, "xJOB") == err("EMQKIND job id must be JOB-namespaced")


def test_pause_and_resume(r):
    enqueue(r, "JOB1")
    assert run(r, "pause", [k("meta")], [NOW]) == ("+", b"OK")
    assert row(r, "meta") == [(b"paused", b"1")]
    assert claim(r) == EMPTY
    assert run(r, "resume", [k("meta")], [NOW]) == ("+", b"OK")
    assert k("meta").encode() not in snapshot(r)
    assert claim(r)[0] == "*"
    assert wakes(r) == 0


def test_stats_is_a_map_in_resp3_and_a_flat_array_in_resp2(r, proto):
    enqueue(r, "JOB1")
    enqueue(r, "JOB2")
    enqueue(r, "JOB3", "p", 10)
    job, fence = claimed(r)
    complete(r, job, fence)
    claimed(r)
    r.call("HSET", k("meta"), "paused", "1")
    kind, body = stats(r)
    assert kind == ("%" if proto == 3 else "*")
    pairs = body if proto == 3 else list(zip(body[::2], body[1::2]))
    assert all(value[0] == ":" for _, value in pairs)
    as_dict = {name[1]: value[1] for name, value in pairs}
    assert as_dict == {b"pending": 0, b"scheduled": 1, b"active": 1, b"dead": 0,
                       b"paused": 1, b"completed": 1}


# --- the lanes ---------------------------------------------------------------------------


def test_genqueue_rings_once_per_lane_joining_the_ring(r):
    assert genqueue(r, "JOB1", "a") == (":", 1)
    assert genqueue(r, "JOB2", "a") == (":", 1)
    assert genqueue(r, "JOB3", "b") == (":", 1)
    assert genqueue(r, "JOB1", "a") == (":", 0)
    assert genqueue(r, "bad", "a") == err("EMQKIND job id must be JOB-namespaced")
    assert ring(r) == [b"a", b"b"]
    assert wakes(r) == 2
    assert row(r, "JOB1") == [(b"state", b"pending"), (b"attempts", b"0"), (b"payload", b"p"),
                              (b"group", b"a")]
    assert zset(r, "lane:a") == [(b"JOB1", 0.0), (b"JOB2", 0.0)]


def test_a_paused_or_limited_group_stays_off_the_ring(r):
    assert gcontrol(r, "gpause", "a") == ("+", b"OK")
    assert gcontrol(r, "glimit", "b", 1) == ("+", b"OK")
    r.call("HSET", k("gactive"), "b", "1")
    genqueue(r, "JOB1", "a")
    genqueue(r, "JOB2", "b")
    assert ring(r) == [] and wakes(r) == 0
    assert gcontrol(r, "gresume", "a") == ("+", b"OK")
    assert ring(r) == [b"a"] and wakes(r) == 1
    assert gcontrol(r, "glimit", "b", 2) == ("+", b"OK")
    assert ring(r) == [b"a", b"b"] and wakes(r) == 2
    assert gcontrol(r, "glimit", "b", 1) == ("+", b"OK")
    assert ring(r) == [b"a"] and wakes(r) == 2
    assert gcontrol(r, "glimit", "b", 0) == ("+", b"OK")
    assert ring(r) == [b"a", b"b"] and wakes(r) == 3
    assert plain(r.call("HGETALL", k("glimit"))) in ([], {})
    assert gcontrol(r, "glimit", "b", -1) == err("EMQARG limit must be a non-negative integer")
    assert gcontrol(r, "gpause", "b") == ("+", b"OK")
    assert ring(r) == [b"a"] and wakes(r) == 3


def test_the_ring_serves_lanes_in_turn(r):
    for i in range(1, 4):
        genqueue(r, f"JOBa{i}", "a")
    for i in range(1, 3):
        genqueue(r, f"JOBb{i}", "b")
    genqueue(r, "JOBc1", "c")
    order = []
    while True:
        reply = gclaim(r)
        if reply == EMPTY:
            break
        order.append(reply[1][0][1])
    assert order == [b"JOBa1", b"JOBb1", b"JOBc1", b"JOBa2", b"JOBb2", b"JOBa3"]
    assert ring(r) == []
    assert plain(r.call("HGET", k("gactive"), "a")) == b"3"
    assert wakes(r) == 3


def test_gclaim2_reply_and_row(r):
    genqueue(r, "JOB1", "g", "body")
    assert gclaim(r, 250) == ("*", [("$", b"JOB1"), ("$", b"body"), (":", 1), ("$", b"g")])
    assert row(r, "JOB1") == [(b"state", b"active"), (b"attempts", b"1"), (b"payload", b"body"),
                              (b"group", b"g")]
    assert zset(r, "active") == [(b"JOB1", float(NOW + 250))]
    assert gclaim(r) == EMPTY
    assert gclaim(r, 0) == err("EMQARG lease_ms must be a positive integer")


def test_completion_rings_a_group_that_left_the_ring_at_its_limit(r):
    gcontrol(r, "glimit", "g", 1)
    genqueue(r, "JOB1", "g")
    genqueue(r, "JOB2", "g")
    assert wakes(r) == 1
    assert gclaim(r)[1][0] == ("$", b"JOB1")
    assert ring(r) == []
    assert gcomplete(r, "JOB1", 2) == err("EMQFENCE stale fence")
    assert gcomplete(r, "JOB1", 1) == (":", 1)
    assert ring(r) == [b"g"] and wakes(r) == 2
    assert plain(r.call("HGET", k("gactive"), "g")) is None
    assert plain(r.call("HGET", k("meta"), "completed")) == b"1"
    assert gcomplete(r, "JOB1", 1) == err("EMQSTATE job is not active")
    enqueue(r, "JOB9")
    assert gcomplete(r, "JOB9", 1) == err("EMQLANE flat row JOB9 is not a lane row")


def test_retry_and_dead_free_the_slot_and_ring(r):
    gcontrol(r, "glimit", "g", 1)
    r.call("HSET", k("meta"), "max_attempts", "2")
    genqueue(r, "JOB1", "g")
    genqueue(r, "JOB2", "g")
    gclaim(r)
    assert gfail(r, "JOB1", 1, 100, "oops") == ("+", b"scheduled")
    assert row(r, "JOB1") == [(b"state", b"scheduled"), (b"attempts", b"1"), (b"payload", b"p"),
                              (b"group", b"g"), (b"error", b"oops")]
    assert zset(r, "schedule") == [(b"JOB1", float(NOW + 100))]
    assert ring(r) == [b"g"] and wakes(r) == 2
    assert gpromote(r, 10, NOW + 100) == (":", 1)
    assert zset(r, "lane:g") == [(b"JOB1", 0.0), (b"JOB2", 0.0)]
    assert wakes(r) == 2
    assert gclaim(r)[1][0] == ("$", b"JOB1")
    assert gfail(r, "JOB1", 2) == ("+", b"dead")
    assert zset(r, "dead") == [(b"JOB1", float(NOW))]
    assert ring(r) == [b"g"] and wakes(r) == 3


def test_reap_recovers_lane_and_flat_leases(r):
    genqueue(r, "JOB1", "g")
    gclaim(r, 100)
    enqueue(r, "JOB2", "p", 0, 5)
    job, fence = claimed(r, 100)
    release(r, job, fence)
    assert reap(r, 10, "", NOW + 99) == (":", 0)
    assert reap(r, 10, "", NOW + 100) == (":", 2)
    assert ring(r) == [b"g"] and wakes(r) == 2
    assert row(r, "JOB1")[0] == (b"state", b"pending")
    assert row(r, "JOB2") == [(b"state", b"pending"), (b"attempts", b"1"), (b"payload", b"p"),
                              (b"priority", b"5")]
    assert zset(r, "pending") == [(b"JOB2", 5.0)]
    assert zset(r, "lane:g") == [(b"JOB1", 0.0)]
    assert plain(r.call("HGET", k("gactive"), "g")) is None


def test_reap_one_group_form_leaves_other_members(r):
    genqueue(r, "JOB1", "a")
    genqueue(r, "JOB2", "b")
    gclaim(r, 100)
    gclaim(r, 100)
    enqueue(r, "JOB3")
    claimed(r, 100)
    assert reap(r, 10, "b", NOW + 100) == (":", 1)
    assert zset(r, "active") == [(b"JOB1", float(NOW + 100)), (b"JOB3", float(NOW + 100))]
    assert ring(r) == [b"b"]


def test_gsweep_counts_lane_stalls(r):
    genqueue(r, "JOB1", "g")
    genqueue(r, "JOB2", "g")
    gclaim(r, 100)
    gclaim(r, 100)
    r.call("HSET", k("JOB2"), "stalls", "1")
    assert gsweep(r, 10, 1, NOW + 100) == ("*", [(":", 1), (":", 1), (":", 0)])
    assert zset(r, "lane:g") == [(b"JOB1", 0.0)]
    assert zset(r, "dead") == [(b"JOB2", float(NOW + 100))]
    assert row(r, "JOB2")[-1] == (b"error", b"stalled")
    assert ring(r) == [b"g"] and wakes(r) == 2


def test_greprocess_gremove_gmove_grepair(r):
    r.call("HSET", k("meta"), "max_attempts", "1")
    genqueue(r, "JOB1", "a")
    gclaim(r)
    gfail(r, "JOB1", 1)
    assert greprocess(r, "JOB1") == (":", 1)
    assert row(r, "JOB1")[:2] == [(b"state", b"pending"), (b"attempts", b"0")]
    assert ring(r) == [b"a"] and wakes(r) == 2
    assert greprocess(r, "JOB1") == err("EMQSTATE job is not dead")
    assert gmove(r, "JOB1", "b") == (":", 1)
    assert zset(r, "lane:b") == [(b"JOB1", 0.0)]
    assert ring(r) == [b"b"] and wakes(r) == 3
    assert gmove(r, "JOB9", "b") == (":", 0)
    gclaim(r)
    r.call("HSET", k("gactive"), "b", "7")
    assert grepair(r, "b") == (":", 1)
    assert plain(r.call("HGET", k("gactive"), "b")) == b"1"
    gcontrol(r, "glimit", "b", 1)
    genqueue(r, "JOB2", "b")
    assert ring(r) == []
    assert gremove(r, "JOB1") == (":", 1)
    assert ring(r) == [b"b"] and wakes(r) == 4
    assert gremove(r, "JOB1") == (":", 0)
    assert gremove(r, "JOB2") == (":", 1)
    assert ring(r) == []


def test_gextend(r):
    genqueue(r, "JOB1", "g")
    gclaim(r, 100)
    assert gextend(r, "JOB1", 1, 500, NOW + 50) == (":", NOW + 550)
    assert gextend(r, "JOB1", 2) == err("EMQFENCE stale fence")


LANE_REFUSALS = [
    (lambda r: gcomplete(r, "JOB9", 0), "EMQARG attempts must be a positive integer"),
    (lambda r: gcomplete(r, "xJOB", 1), "EMQKIND job id must be JOB-namespaced"),
    (lambda r: gcomplete(r, "JOB9", 1), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: gfail(r, "JOB9", 1, -1), "EMQARG backoff_ms must be a non-negative integer"),
    (lambda r: gfail(r, "JOB9", 1), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: gextend(r, "JOB9", 1), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: gextend(r, "JOB8", 1), "EMQSTATE job is not active"),
    (lambda r: gpromote(r, 0), "EMQARG batch must be a positive integer"),
    (lambda r: reap(r, 0), "EMQARG limit must be a positive integer"),
    (lambda r: gsweep(r, 1, -1), "EMQARG max_stalls must be a non-negative integer"),
    (lambda r: greprocess(r, "JOB9"), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: greprocess(r, "JOB8"), "EMQSTATE job is not dead"),
    (lambda r: gremove(r, "JOB9"), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: gmove(r, "JOB9", "g"), "EMQLANE flat row JOB9 is not a lane row"),
    (lambda r: gcontrol(r, "gpause", "g", now="-1"), "EMQARG now must be a non-negative integer"),
]


def test_lane_scripts_refuse_bad_input_and_flat_rows(r):
    enqueue(r, "JOB9")
    before = snapshot(r)
    for call, text in LANE_REFUSALS:
        assert call(r) == err(text), text
    assert snapshot(r) == before


def test_the_wake_list_never_exceeds_64_tokens(r):
    for i in range(70):
        genqueue(r, f"JOB{i}", f"g{i}")
    assert wakes(r) == 64
    assert len(ring(r)) == 70


# --- the seed's table: transitions x flat/lane row, which cells push a wake ---------------


def _admission(r, lane):
    if lane:
        genqueue(r, "JOB1", "g")
    else:
        enqueue(r, "JOB1")


def _lane_leased(r):
    """A lane job leased with its lane then empty: its group is off the ring."""
    genqueue(r, "JOB1", "g")
    gclaim(r, 100)
    r.call("DEL", k("wake"))


def _flat_leased(r):
    enqueue(r, "JOB1")
    r.call("DEL", k("wake"))  # under `ring all` the admission rang: count the transition alone
    return claimed(r, 100)


def _due_promotion(r, lane):
    if lane:
        r.call("HSET", k("JOB1"), "state", "scheduled", "attempts", "1", "payload", "p", "group", "g")
        r.call("ZADD", k("schedule"), NOW, "JOB1")
        gpromote(r)
    else:
        enqueue(r, "JOB1", "p", 10)
        promote(r, 10, NOW + 10)


def _lease_recovery(r, lane):
    _lane_leased(r) if lane else _flat_leased(r)
    reap(r, 10, "", NOW + 100)


def _counted_sweep(r, lane):
    if lane:
        _lane_leased(r)
        gsweep(r, 10, 1, NOW + 100)
    else:
        _flat_leased(r)
        sweep(r, 10, 1, NOW + 100)


def _lane_at_limit(r):
    """JOB1 leased at its group's limit of 1 while JOB2 waits: the group left the ring."""
    gcontrol(r, "glimit", "g", 1)
    genqueue(r, "JOB1", "g")
    genqueue(r, "JOB2", "g")
    gclaim(r)
    r.call("DEL", k("wake"))


def _completion(r, lane):
    if lane:
        _lane_at_limit(r)
        gcomplete(r, "JOB1", 1)
    else:
        complete(r, *_flat_leased(r))


def _failure_retried(r, lane):
    if lane:
        _lane_at_limit(r)
        gfail(r, "JOB1", 1, 100)
    else:
        fail(r, *_flat_leased(r), 100)


def _reprocess(r, lane):
    r.call("HSET", k("meta"), "max_attempts", "1")
    if lane:
        _lane_leased(r)
        gfail(r, "JOB1", 1)
        r.call("DEL", k("wake"))
        greprocess(r, "JOB1")
    else:
        fail(r, *_flat_leased(r))
        r.call("DEL", k("wake"))
        reprocess(r, "JOB1")


TRANSITIONS = {
    "admission": _admission,
    "due promotion": _due_promotion,
    "lease recovery": _lease_recovery,
    "counted sweep": _counted_sweep,
    "completion": _completion,
    "failure, retried": _failure_retried,
    "reprocess": _reprocess,
}
# The seed's table, cell by cell: a lane row rings (one token) when its lane joins the
# ring; no flat branch pushes one.
CELLS = [(t, kind, 1 if kind == "lane row" else 0) for t in TRANSITIONS for kind in ("flat row", "lane row")]


# The same table under `ring all` (spec 7.3): every transition that makes a job claimable
# pushes one token, flat rows too; a completion or a retry makes no flat job claimable.
CLAIMABLE_FLAT = {"admission", "due promotion", "lease recovery", "counted sweep", "reprocess"}
CELLS_ALL = [(t, kind, 1 if kind == "lane row" or t in CLAIMABLE_FLAT else 0)
             for t in TRANSITIONS for kind in ("flat row", "lane row")]


def set_ring(r, rule):
    assert run(r, "ring", [k("meta")], [rule, NOW]) == ("+", b"OK")


@pytest.mark.parametrize(("transition", "kind", "tokens"), CELLS)
def test_seed_wake_table(r, transition, kind, tokens):
    TRANSITIONS[transition](r, kind == "lane row")
    assert wakes(r) == tokens
    assert ring(r) == ([b"g"] if tokens else [])


@pytest.mark.parametrize(("transition", "kind", "tokens"), CELLS)
def test_seed_wake_table_with_ring_lanes(r, transition, kind, tokens):
    """`ring lanes` is the seed's rule, spelled out."""
    set_ring(r, "lanes")
    TRANSITIONS[transition](r, kind == "lane row")
    assert wakes(r) == tokens


@pytest.mark.parametrize(("transition", "kind", "tokens"), CELLS_ALL)
def test_wake_table_with_ring_all(r, transition, kind, tokens):
    set_ring(r, "all")
    TRANSITIONS[transition](r, kind == "lane row")
    assert wakes(r) == tokens
    assert ring(r) == ([b"g"] if kind == "lane row" and tokens else [])


def test_ring_all_pushes_one_token_per_script_however_many_jobs(r):
    set_ring(r, "all")
    for job in ("JOB1", "JOB2", "JOB3"):
        enqueue(r, job, "p", 10)
    assert promote(r, 10, NOW + 10) == (":", 3)
    assert wakes(r) == 1


def test_ring_all_resume_rings_only_with_pending_work(r):
    set_ring(r, "all")
    assert run(r, "pause", [k("meta")], [NOW]) == ("+", b"OK")
    assert run(r, "resume", [k("meta")], [NOW]) == ("+", b"OK")
    assert wakes(r) == 0  # nothing pending
    enqueue(r, "JOB1")
    r.call("DEL", k("wake"))
    run(r, "pause", [k("meta")], [NOW])
    assert run(r, "resume", [k("meta")], [NOW]) == ("+", b"OK")
    assert wakes(r) == 1
    assert run(r, "resume", [k("meta")], [NOW]) == ("+", b"OK")
    assert wakes(r) == 1  # not paused: no transition


def test_ring_script_refuses_another_rule_and_a_meta_of_another_type_has_none(r):
    assert run(r, "ring", [k("meta")], ["some", NOW]) == err("EMQARG ring must be lanes or all")
    r.call("SET", k("meta"), "x")
    assert enqueue(r, "JOB1") == (":", 1)  # the rule is read leniently: no rule, no token
    assert wakes(r) == 0


@pytest.mark.parametrize("transition", ["admission", "due promotion", "lease recovery", "counted sweep"])
def test_a_group_already_on_the_ring_is_not_rung_twice(r, transition):
    genqueue(r, "JOB0", "g")
    r.call("DEL", k("wake"))
    TRANSITIONS[transition](r, True)
    assert ring(r) == [b"g"]
    assert wakes(r) == 0


# --- the Queue client on wire 4 (real clock: the server's TIME is `now`) -----------------


def test_queue_client_wire4_round_trip(client):
    client.script_flush()
    queue = Queue(client, "orders", wire=4)
    before = queue.now_ms()
    assert queue.enqueue("JOB1", b"body", priority=1)
    assert queue.enqueue("JOB2", b"lane", group="g")
    job = queue.claim(60_000)
    assert (job.id, job.payload, job.attempts, job.fence) == ("JOB1", b"body", 1, 1)
    assert queue.extend(job.id, job.fence, 60_000) >= before + 60_000
    queue.complete(job.id, job.fence)
    lane_job = queue.claim_lane(60_000)
    assert (lane_job.id, lane_job.group, lane_job.attempts) == ("JOB2", "g", 1)
    queue.complete_lane(lane_job.id, lane_job.attempts)
    assert queue.stats() == {"pending": 0, "scheduled": 0, "active": 0, "dead": 0,
                             "paused": 0, "completed": 2}
