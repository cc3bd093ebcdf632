"""The flat job verbs: EMQ.ENQUEUE, CLAIM, EXTEND, COMPLETE, FAIL, RELEASE, REPROCESS and
REMOVE (spec emq.md section 3).

Each verb reads and checks everything it needs first (WRONGTYPE, EMQHOST, EMQSTATE,
EMQLANE, EMQFENCE, NOPERM for a row found by reading), then writes through the host
operations in the order its twin script does, so both leave the same keyspace and
announce the same keyspace events.
"""

from __future__ import annotations

from typing import Any

from fakekey.modules.emq import host
from fakekey.modules.emq.layout import INTEGER, NON_NEGATIVE, POSITIVE, ROW, TEXT, Arg, Call, verb
from fakekey.resp.replies import ReplyError, Simple
from fakekey.types.hash import HashValue
from fakekey.types.zset import ZSet

NOT_ACTIVE = ReplyError("EMQSTATE job is not active")
NOT_DEAD = ReplyError("EMQSTATE job is not dead")
STALE_FENCE = ReplyError("EMQFENCE stale fence")
SCHEDULED = Simple(b"scheduled")
DEAD = Simple(b"dead")


def lane_refusal(job_id: bytes, done: str) -> ReplyError:
    """A lane row reaching a flat verb: the lane scripts own it."""
    return ReplyError(f"EMQLANE lane row {job_id.decode('utf-8', 'replace')} is {done} "
                      "by the lane scripts")


def write_meta(call: Call) -> None:
    """Access for a verb that may write the queue's meta row."""
    call.may_write(call.key(b"meta"))


def active_lease(call: Call, fence: int, done: str) -> tuple[HashValue, ZSet, bytes]:
    """The checks EXTEND/COMPLETE/FAIL/RELEASE share, in order: the row exists, is flat,
    is `active` and scored in `active`, and holds the caller's fence. Answers the row, the
    active set and the job id."""
    row_key, active_key = call.keys[0], call.keys[1]
    job_id = call.job_id(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        raise NOT_ACTIVE
    if host.is_lane_row(row):
        raise lane_refusal(job_id, done)
    if row.get(b"state") != b"active":
        raise NOT_ACTIVE
    active = host.read_zset(call, active_key)
    if active is None or not host.in_zset(active, job_id):
        raise NOT_ACTIVE
    if not host.fence_matches(row, fence):
        raise STALE_FENCE
    return row, active, job_id


# --- admission -----------------------------------------------------------------------------


@verb("enqueue", (ROW, "pending", "schedule"),
      (Arg("payload", TEXT), Arg("delay_ms", NON_NEGATIVE), Arg("priority", INTEGER)),
      rings=True,
      summary="Admit a flat job to pending, or to schedule when delayed; a duplicate id "
      "writes nothing (@enqueue)",
      complexity="O(log N)")
def enqueue(call: Call) -> Any:
    row_key, pending_key, schedule_key = call.keys
    payload, delay, priority = call.args
    if host.exists(call, row_key):
        return 0
    target, score = (schedule_key, call.now + delay) if delay else (pending_key, priority)
    queued = host.read_zset(call, target)  # WRONGTYPE before the row is written
    job_id = call.job_id(row_key)
    state = b"scheduled" if delay else b"pending"
    host.hset(call, row_key, None, b"state", state, b"attempts", b"0", b"payload", payload,
              b"priority", b"%d" % priority)
    host.zadd(call, target, queued, job_id, score)
    call.claimable = not delay
    return 1


# --- the lease -----------------------------------------------------------------------------


@verb("claim", ("pending", "active"), (Arg("lease_ms", POSITIVE),), access=write_meta,
      summary="Lease the head of pending, or answer empty at once (@claim)",
      complexity="O(log N)")
def claim(call: Call) -> Any:
    return lease_head(call, call.args[0])


def lease_head(call: Call, lease_ms: int) -> list[Any]:
    """EMQ.CLAIM's work (EMQ.BCLAIM's too): the lease's reply, or [] for no work."""
    pending_key, active_key = call.keys[0], call.keys[1]
    meta_key = call.key(b"meta")
    meta = host.read_hash(call, meta_key)
    if meta is not None and b"paused" in meta:
        return []
    pending = host.read_zset(call, pending_key)
    job_id = host.head_member(pending)
    if job_id is None:
        return []
    row_key = call.key(job_id)
    call.may_write(row_key)  # found by reading: checked before it is read or written
    row = host.read_hash(call, row_key)
    if row is None:
        host.zrem(call, pending_key, pending, job_id)
        return []
    fence = host.int_field(meta, b"fence") + 1
    attempts = host.int_field(row, b"attempts") + 1
    active = host.read_zset(call, active_key)
    # the writes, every check passed; the reply's payload is the one read (the lease does
    # not change it). A job named `meta` is leased from meta itself (fence and attempts
    # are two fields of one hash then, as in the script).
    payload = row.get(b"payload")
    host.zrem(call, pending_key, pending, job_id)
    host.write_counter(call, meta_key, meta, b"fence", fence)
    host.write_counter(call, row_key, row, b"attempts", attempts)
    host.hset(call, row_key, row, b"state", b"active", b"fence", b"%d" % fence)
    host.zadd(call, active_key, active, job_id, call.now + lease_ms)
    return [job_id, payload, attempts, fence]


@verb("extend", (ROW, "active"), (Arg("fence", POSITIVE), Arg("lease_ms", POSITIVE)),
      summary="Heartbeat: move an active lease's deadline to now + lease_ms, fenced (@extend)",
      complexity="O(log N)")
def extend(call: Call) -> Any:
    fence, lease_ms = call.args
    _, active, job_id = active_lease(call, fence, "extended")
    deadline = call.now + lease_ms
    host.zadd(call, call.keys[1], active, job_id, deadline)
    return deadline


@verb("release", (ROW, "active"), (Arg("fence", POSITIVE),),
      summary="Announce the holder's restart: an expiry of this lease counts no stall "
      "(@release)",
      complexity="O(1)")
def release(call: Call) -> Any:
    (fence,) = call.args
    row, _, _ = active_lease(call, fence, "released")
    host.hset(call, call.keys[0], row, b"restart", b"1")
    return 1


# --- settlement ----------------------------------------------------------------------------


@verb("complete", (ROW, "active"), (Arg("fence", POSITIVE),), access=write_meta,
      summary="Settle success: drop the job's lease and row, count it completed (@complete)",
      complexity="O(log N)")
def complete(call: Call) -> Any:
    (fence,) = call.args
    row_key, active_key = call.keys
    _, active, job_id = active_lease(call, fence, "completed")
    meta_key = call.key(b"meta")
    meta = host.read_hash(call, meta_key)
    completed = host.int_field(meta, b"completed") + 1
    host.zrem(call, active_key, active, job_id)
    host.delete(call, row_key)
    host.write_counter(call, meta_key, meta, b"completed", completed)
    return 1


@verb("fail", (ROW, "active", "schedule", "dead"),
      (Arg("fence", POSITIVE), Arg("backoff_ms", NON_NEGATIVE), Arg("reason", TEXT)),
      access=write_meta,
      summary="Settle failure: retry after backoff_ms, or dead-letter at max attempts (@fail)",
      complexity="O(log N)")
def fail(call: Call) -> Any:
    fence, backoff_ms, reason = call.args
    row_key, active_key, schedule_key, dead_key = call.keys
    row, active, job_id = active_lease(call, fence, "failed")
    meta_key = call.key(b"meta")
    meta = host.read_hash(call, meta_key)
    retry = host.int_field(row, b"attempts") < host.max_attempts(row, meta)
    host.int_field(meta, b"dead")
    target = schedule_key if retry else dead_key
    settled = host.read_zset(call, target)  # WRONGTYPE before the first write
    host.zrem(call, active_key, active, job_id)
    host.hset(call, row_key, row, b"state", b"scheduled" if retry else b"dead", b"error", reason)
    host.hdel(call, row_key, row, b"fence")
    if retry:
        host.zadd(call, schedule_key, settled, job_id, call.now + backoff_ms)
        return SCHEDULED
    host.zadd(call, dead_key, settled, job_id, call.now)
    host.hincrby(call, meta_key, meta, b"dead", 1)
    return DEAD


# --- the dead and the removed --------------------------------------------------------------


@verb("reprocess", (ROW, "dead", "pending"), rings=True,
      summary="Send a dead job back to pending with its attempts and stalls reset "
      "(@reprocess)",
      complexity="O(log N)")
def reprocess(call: Call) -> Any:
    row_key, dead_key, pending_key = call.keys
    job_id = call.job_id(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        raise NOT_DEAD
    if host.is_lane_row(row):
        raise lane_refusal(job_id, "reprocessed")
    if row.get(b"state") != b"dead":
        raise NOT_DEAD
    dead = host.read_zset(call, dead_key)
    if not host.in_zset(dead, job_id):
        raise NOT_DEAD
    priority = host.int_field(row, b"priority")
    pending = host.read_zset(call, pending_key)
    host.zrem(call, dead_key, dead, job_id)
    host.hset(call, row_key, row, b"attempts", b"0", b"stalls", b"0", b"state", b"pending")
    host.hdel(call, row_key, row, b"error")
    host.zadd(call, pending_key, pending, job_id, priority)
    call.claimable = True
    return 1


STATE_SETS = (b"pending", b"schedule", b"active", b"dead")


def write_state_sets(call: Call) -> None:
    """Access for REMOVE: it takes the job out of all four state sets."""
    call.may_write(*(call.key(s) for s in STATE_SETS))


@verb("remove", (ROW,), access=write_state_sets,
      summary="Remove a flat job in any state, and its row (@remove)",
      complexity="O(log N)")
def remove(call: Call) -> Any:
    row_key = call.keys[0]
    job_id = call.job_id(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        return 0
    if host.is_lane_row(row):
        raise lane_refusal(job_id, "removed")
    sets = [(key, host.read_zset(call, key)) for key in (call.key(s) for s in STATE_SETS)]
    for key, zs in sets:
        host.zrem(call, key, zs, job_id)
    host.delete(call, row_key)
    return 1

