"""The lane verbs, wire 6's twins of the lane scripts (spec emq.md section 7.1):
EMQ.GENQUEUE (@genqueue), EMQ.GCLAIM (@gclaim2), EMQ.GEXTEND, EMQ.GCOMPLETE, EMQ.GFAIL,
EMQ.GPROMOTE, EMQ.REAP, EMQ.GSWEEP, EMQ.GREPROCESS and EMQ.GREMOVE.

A twin takes its script's KEYS and its script's ARGV less `now` (it reads the server's
clock). Each verb first reads and checks what its script reads, in the script's order
(WRONGTYPE, EMQHOST, EMQSTATE, EMQLANE, EMQFENCE; NOPERM for a key found by reading), then
checks every key a later step may reach (`Lanes.check_keys`), and only then writes, step
for step as its script does, through the built-ins' own code (host.py, lane_host.py): the
same keyspace, hash field order, keyspace events and wake tokens. A flat job moved into
`pending` sets `call.claimable` (the doorbell rule's hook).
"""

from __future__ import annotations

from typing import Any

from fakekey.core.registry import command, keys_numkeys
from fakekey.modules.emq import host
from fakekey.modules.emq.lane_host import LANE, Lanes, read_list, rotate, zpopmin
from fakekey.modules.emq.lane_host import lpop as lpop_ring
from fakekey.modules.emq.layout import (
    EMQ_MODULE,
    EMQ_SINCE,
    NON_NEGATIVE,
    POSITIVE,
    PREFIX,
    ROW,
    TEXT,
    Arg,
    Call,
    check_kind,
    check_layout,
    check_shape,
    expected_text,
    verb,
)
from fakekey.resp.replies import ReplyError, Simple
from fakekey.types.hash import HashValue
from fakekey.types.zset import ZSet

NOT_ACTIVE = ReplyError("EMQSTATE job is not active")
NOT_DEAD = ReplyError("EMQSTATE job is not dead")
STALE_FENCE = ReplyError("EMQFENCE stale fence")
SCHEDULED = Simple(b"scheduled")
DEAD = Simple(b"dead")

# The lane block every lane verb but GENQUEUE and GCLAIM takes last.
LANE_BLOCK = ("ring", "gpaused", "glimit", "gactive", "wake", PREFIX)


def flat_row(job_id: bytes) -> ReplyError:
    """A flat row reaching a lane verb: the flat verbs own it."""
    return ReplyError(f"EMQLANE flat row {job_id.decode('utf-8', 'replace')} is not a lane row")


def lane_row_in(call: Call, state: bytes, set_key: bytes,
                refusal: ReplyError) -> tuple[HashValue, bytes, ZSet, bytes]:
    """The row (key 1) exists, is a lane row, is in `state` and a member of the set at
    `set_key`, in the scripts' order (`refusal` for all but a flat row). Answers the row,
    its group, the set and the job id."""
    job_id = call.job_id(call.keys[0])
    row = host.read_hash(call, call.keys[0])
    if row is None:
        raise refusal
    group = row.get(b"group")
    if group is None:
        raise flat_row(job_id)
    if row.get(b"state") != state:
        raise refusal
    members = host.read_zset(call, set_key)
    if members is None or not host.in_zset(members, job_id):
        raise refusal
    return row, group, members, job_id


def lane_lease(call: Call, token: int) -> tuple[HashValue, bytes, ZSet, bytes]:
    """The prelude's `check_lane_lease`, in its order: the row is an active lane row in
    `active` (key 2), and its `attempts` is the caller's token (compared as text, as the
    script compares them). Answers the row, its group, active and the id."""
    row, group, active, job_id = lane_row_in(call, b"active", call.keys[1], NOT_ACTIVE)
    if row.get(b"attempts") != b"%d" % token:
        raise STALE_FENCE
    return row, group, active, job_id


def settle_group(lanes: Lanes, group: bytes) -> None:
    """A settlement's last steps: the group's slot freed, the group back on the ring."""
    lanes.released(group)
    lanes.ring_if_serviceable(group)


# --- admission -----------------------------------------------------------------------------

GENQUEUE_KEYS = (ROW, ROW, "ring", "gpaused", "glimit", "gactive", "wake")  # key 2: the lane
GENQUEUE_ARITY = 2 + len(GENQUEUE_KEYS) + 2


def genqueue_checks(c: Any, argv: list[bytes]) -> Call:
    """GENQUEUE's checks in the spec's order. Its lane key is `emq:{Q}:lane:<group>` of
    the group argument: a lane key of another group is a layout error (the job would be
    admitted to one group's lane while its row names another)."""
    count = len(GENQUEUE_KEYS)
    if argv[1] != b"7":
        check_shape("emq.genqueue", argv, count)
    keys = argv[2 : 2 + count]
    payload, group = argv[2 + count], argv[3 + count]
    queue = check_layout(keys[:1], (ROW,))
    prefix = b"emq:{" + queue + b"}:"
    if keys[1] != prefix + LANE + group:
        where = expected_text(queue, "lane:" + group.decode("utf-8", "replace"))
        raise ReplyError(f"EMQLAYOUT key 2 must be {where}")
    check_layout(keys, GENQUEUE_KEYS)
    check_kind(keys[:1], (ROW,), len(prefix))
    call = Call(c, prefix, keys, [payload, group], [], argv)
    if not c.acl_unrestricted:
        call.may_write(*keys)
    return call


def genqueue(c: Any, argv: list[bytes]) -> Any:
    """EMQ.GENQUEUE 7 row lane ring gpaused glimit gactive wake payload group."""
    call = genqueue_checks(c, argv)
    row_key, lane_key, ring_key, gpaused_key, glimit_key, gactive_key, wake_key = call.keys
    payload, group = call.args
    if host.exists(call, row_key):
        return 0
    lane = host.read_zset(call, lane_key)  # WRONGTYPE before the row is written
    lanes = Lanes(call, ring_key, gpaused_key, glimit_key, gactive_key, wake_key)
    rings = False
    if not lanes.paused(group):
        limit = lanes.limit(group)
        active = lanes.active(group)
        if (limit is None or active < limit) and not lanes.ringed(group):
            rings = True
            read_list(call, wake_key)
    host.hset(call, row_key, None, b"state", b"pending", b"attempts", b"0", b"payload", payload,
              b"group", group)
    host.zadd(call, lane_key, lane, call.job_id(row_key), 0)
    if rings:
        lanes.push_ring(group)
    return 1


command("emq.genqueue", GENQUEUE_ARITY, "write", keys=keys_numkeys(1, "RW access update"),
        group="module", since=EMQ_SINCE, module=EMQ_MODULE,
        summary="Admit a lane job to its group's lane; the group joins the ring with one wake "
        "token when serviceable; a duplicate id writes nothing (@genqueue)",
        complexity="O(log N + R) for a lane of N jobs and a ring of R groups")(genqueue)


# --- the lease -----------------------------------------------------------------------------


def gclaim_access(call: Call) -> None:
    """Access: the group's pause, limit (read) and active count (written), derived from
    the prefix; the lane and the row, found by reading, are checked when found."""
    call.may_read(call.key(b"gpaused"), call.key(b"glimit"))
    call.may_write(call.key(b"gactive"))


@verb("gclaim", ("ring", "active", PREFIX), (Arg("lease_ms", POSITIVE),), access=gclaim_access,
      summary="One turn of the lane ring: lease the head of the head group's lane and turn "
      "the group to the ring's tail, or drop it when no longer serviceable (@gclaim2)",
      complexity="O(log N + R) for a lane of N jobs and a ring of R groups")
def gclaim(call: Call) -> Any:
    ring_key, active_key, _ = call.keys
    (lease_ms,) = call.args
    lanes = Lanes.derived(call, ring_key)
    ring = read_list(call, ring_key)
    if not ring:
        return []
    group: bytes = ring[0]
    lane_key = lanes.lane(group)
    call.may_write(lane_key)
    if not lanes.serviceable(group):
        lpop_ring(call, ring_key)
        return []
    lane = host.read_zset(call, lane_key)
    job_id = host.head_member(lane)
    assert lane is not None and job_id is not None  # a serviceable group's lane holds a job
    row_key = call.key(job_id)
    call.may_write(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        host.zrem(call, lane_key, lane, job_id)
        turn(lanes, group)
        return []
    attempts = host.int_field(row, b"attempts") + 1
    active = host.read_zset(call, active_key)  # WRONGTYPE before the first write
    zpopmin(call, lane_key, lane)
    row = host.read_hash(call, row_key)
    host.write_counter(call, row_key, row, b"attempts", attempts)
    row = host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"active")
    host.zadd(call, active_key, active, job_id, call.now + lease_ms)
    gactive = host.read_hash(call, lanes.gactive)
    host.hincrby(call, lanes.gactive, gactive, group, 1)
    turn(lanes, group)
    return [job_id, row.get(b"payload"), attempts, group]


def turn(lanes: Lanes, group: bytes) -> None:
    """The ring's head group to the tail while serviceable (LMOVE ring ring LEFT RIGHT:
    a rotation, no wake), else off the ring (LPOP)."""
    if lanes.serviceable(group):
        rotate(lanes.call, lanes.ring)
    else:
        lpop_ring(lanes.call, lanes.ring)


@verb("gextend", (ROW, "active"), (Arg("attempts", POSITIVE), Arg("lease_ms", POSITIVE)),
      summary="Heartbeat of a lane lease: move its deadline to now + lease_ms, its token "
      "the claim's attempts (@gextend)",
      complexity="O(log N)")
def gextend(call: Call) -> Any:
    token, lease_ms = call.args
    _, _, active, job_id = lane_lease(call, token)
    deadline = call.now + lease_ms
    host.zadd(call, call.keys[1], active, job_id, deadline)
    return deadline


# --- settlement ----------------------------------------------------------------------------


@verb("gcomplete", (ROW, "active", "meta", *LANE_BLOCK), (Arg("attempts", POSITIVE),),
      summary="Settle a lane job's success: drop its lease and row, count it completed, "
      "free its group's slot and ring the group back when serviceable (@gcomplete)",
      complexity="O(log N + R) for N active jobs and a ring of R groups")
def gcomplete(call: Call) -> Any:
    (token,) = call.args
    row_key, active_key, meta_key = call.keys[0], call.keys[1], call.keys[2]
    _, group, active, job_id = lane_lease(call, token)
    meta = host.read_hash(call, meta_key)
    completed = host.int_field(meta, b"completed") + 1
    lanes = Lanes.of(call, 3)
    lanes.check_keys([group])
    host.zrem(call, active_key, active, job_id)
    host.delete(call, row_key)
    host.write_counter(call, meta_key, host.read_hash(call, meta_key), b"completed", completed)
    settle_group(lanes, group)
    return 1


@verb("gfail", (ROW, "active", "schedule", "dead", "meta", *LANE_BLOCK),
      (Arg("attempts", POSITIVE), Arg("backoff_ms", NON_NEGATIVE), Arg("reason", TEXT)),
      summary="Settle a lane job's failure: retry after backoff_ms, or dead-letter at max "
      "attempts; free its group's slot and ring the group back when serviceable (@gfail)",
      complexity="O(log N + R) for N jobs in a set and a ring of R groups")
def gfail(call: Call) -> Any:
    token, backoff_ms, reason = call.args
    row_key, active_key, schedule_key, dead_key, meta_key = call.keys[:5]
    row, group, active, job_id = lane_lease(call, token)
    meta = host.read_hash(call, meta_key)
    retry = host.int_field(row, b"attempts") < host.max_attempts(row, meta)
    host.int_field(meta, b"dead")
    lanes = Lanes.of(call, 5)
    lanes.check_keys([group])
    target = schedule_key if retry else dead_key
    settled = host.read_zset(call, target)  # WRONGTYPE before the first write
    host.zrem(call, active_key, active, job_id)
    host.hset(call, row_key, host.read_hash(call, row_key), b"state",
              b"scheduled" if retry else b"dead", b"error", reason)
    if retry:
        host.zadd(call, schedule_key, settled, job_id, call.now + backoff_ms)
    else:
        host.zadd(call, dead_key, settled, job_id, call.now)
        host.hincrby(call, meta_key, host.read_hash(call, meta_key), b"dead", 1)
    settle_group(lanes, group)
    return SCHEDULED if retry else DEAD


# --- promotion and recovery ----------------------------------------------------------------


class View:
    """The prelude's `sweep_view` of one row, read before anything is written: its group
    (None for a flat row), priority, stalls and whether a restart is announced (a plain
    class, as recovery.Expired)."""

    __slots__ = ("group", "priority", "stalls", "restart")

    def __init__(self, group: bytes | None, priority: int, stalls: int, restart: bool) -> None:
        self.group = group
        self.priority = priority
        self.stalls = stalls
        self.restart = restart


def sweep_view(call: Call, lanes: Lanes, job_id: bytes) -> View | None:
    """The view of a member's row (None: no row). The row is checked for write access
    before it is read (every sweep writes the rows it finds)."""
    row_key = call.key(job_id)
    call.may_write(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        return None
    group = row.get(b"group")
    view = View(group, host.int_field(row, b"priority"), host.int_field(row, b"stalls"),
                b"restart" in row)
    if group is not None:
        lanes.check_group(group)
    return view


def groups_of(views: list[View | None]) -> tuple[list[bytes], bool]:
    """The lane groups among `views` (each once, in order) and whether any row is flat."""
    groups: list[bytes] = []
    flat = False
    for view in views:
        if view is None:
            continue
        if view.group is None:
            flat = True
        elif view.group not in groups:
            groups.append(view.group)
    return groups, flat


def check_targets(call: Call, lanes: Lanes, views: list[View | None], pending_key: bytes) -> None:
    groups, flat = groups_of(views)
    lanes.check_keys(groups, pending_key if flat else b"", write_lanes=True)


@verb("gpromote", ("schedule", "pending", *LANE_BLOCK), (Arg("batch", POSITIVE),), rings=True,
      summary="Move due scheduled jobs back to work, bounded by batch: flat rows to pending, "
      "lane rows to their lanes, their groups rung back when serviceable (@gpromote)",
      complexity="O(M (log N + R)) for M due jobs and a ring of R groups")
def gpromote(call: Call) -> Any:
    schedule_key, pending_key = call.keys[0], call.keys[1]
    (batch,) = call.args
    lanes = Lanes.of(call, 2)
    schedule = host.read_zset(call, schedule_key)
    due = host.due_members(schedule, call.now, batch)
    views = [sweep_view(call, lanes, job_id) for job_id in due]
    check_targets(call, lanes, views, pending_key)
    moved = 0
    for job_id, view in zip(due, views, strict=True):
        host.zrem(call, schedule_key, host.read_zset(call, schedule_key), job_id)
        if view is None:
            continue
        row_key = call.key(job_id)
        host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
        lanes.back_to_work(pending_key, job_id, view.group, view.priority, False)
        moved += 1
    return moved


def recover(call: Call, lanes: Lanes, pending_key: bytes, job_id: bytes, view: View) -> None:
    """An expired lease back to work without a stall: `restart` and `fence` dropped, state
    pending, the row to pending or its lane, its group's slot freed."""
    row_key = call.key(job_id)
    host.hdel(call, row_key, host.read_hash(call, row_key), b"restart", b"fence")
    host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
    lanes.back_to_work(pending_key, job_id, view.group, view.priority, True)


REAP_KEYS = ("active", "pending", *LANE_BLOCK)
REAP_LIMIT = (Arg("limit", POSITIVE),)


@verb("reap", REAP_KEYS, REAP_LIMIT, arity=-(2 + len(REAP_KEYS) + 1), most=2 + len(REAP_KEYS) + 2,
      rings=True,
      summary="The reaper: recover expired leases without counting a stall, flat and lane "
      "rows alike, or only one group's lane rows (@reap)",
      complexity="O(M (log N + R)) for M expired leases and a ring of R groups")
def reap(call: Call) -> Any:
    """EMQ.REAP 8 active pending ring gpaused glimit gactive wake prefix limit [group]: an
    absent or empty group is the all-groups form, as the script's ''."""
    active_key, pending_key = call.keys[0], call.keys[1]
    (limit,) = call.args
    only = call.rest[0] if call.rest and call.rest[0] else None
    lanes = Lanes.of(call, 2)
    active = host.read_zset(call, active_key)
    expired = host.due_members(active, call.now, limit if only is None else len(active or ()))
    picked: list[bytes] = []
    views: list[View | None] = []
    for job_id in expired:
        if len(picked) == limit:
            break
        view = sweep_view(call, lanes, job_id)
        if only is None or (view is not None and view.group == only):
            picked.append(job_id)
            views.append(view)
    check_targets(call, lanes, views, pending_key)
    recovered = 0
    for job_id, view in zip(picked, views, strict=True):
        host.zrem(call, active_key, host.read_zset(call, active_key), job_id)
        if view is not None:
            recover(call, lanes, pending_key, job_id, view)
            recovered += 1
    return recovered


@verb("gsweep", ("active", "pending", "dead", "meta", *LANE_BLOCK),
      (Arg("limit", POSITIVE), Arg("max_stalls", NON_NEGATIVE)), rings=True,
      summary="Counted stall sweep, lane rows included: recover or dead-letter expired "
      "leases, restart expiries exempt, lane slots freed (@gsweep)",
      complexity="O(M (log N + R)) for M expired leases and a ring of R groups")
def gsweep(call: Call) -> Any:
    active_key, pending_key, dead_key, meta_key = call.keys[:4]
    limit, max_stalls = call.args
    lanes = Lanes.of(call, 4)
    active = host.read_zset(call, active_key)
    expired = host.due_members(active, call.now, limit)
    views = [sweep_view(call, lanes, job_id) for job_id in expired]
    host.int_field(host.read_hash(call, meta_key), b"dead")
    check_targets(call, lanes, views, pending_key)
    if any(view is not None and not view.restart and view.stalls + 1 > max_stalls for view in views):
        host.read_zset(call, dead_key)  # WRONGTYPE before the first write
    recovered = died = exempt = 0
    for job_id, view in zip(expired, views, strict=True):
        host.zrem(call, active_key, host.read_zset(call, active_key), job_id)
        if view is None:
            continue
        if view.restart:
            recover(call, lanes, pending_key, job_id, view)
            exempt += 1
            continue
        row_key = call.key(job_id)
        stalls = host.hincrby(call, row_key, host.read_hash(call, row_key), b"stalls", 1)
        if stalls > max_stalls:
            host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"dead", b"error",
                      b"stalled")
            host.hdel(call, row_key, host.read_hash(call, row_key), b"fence")
            host.zadd(call, dead_key, host.read_zset(call, dead_key), job_id, call.now)
            host.hincrby(call, meta_key, host.read_hash(call, meta_key), b"dead", 1)
            if view.group is not None:
                settle_group(lanes, view.group)
            died += 1
        else:
            host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
            host.hdel(call, row_key, host.read_hash(call, row_key), b"fence")
            lanes.back_to_work(pending_key, job_id, view.group, view.priority, True)
            recovered += 1
    return [recovered, died, exempt]


# --- the dead and the removed --------------------------------------------------------------


@verb("greprocess", (ROW, "dead", *LANE_BLOCK),
      summary="Send a dead lane job back to its lane with its attempts and stalls reset; "
      "its group rung back when serviceable (@greprocess)",
      complexity="O(log N + R) for N dead jobs and a ring of R groups")
def greprocess(call: Call) -> Any:
    row_key, dead_key = call.keys[0], call.keys[1]
    _, group, dead, job_id = lane_row_in(call, b"dead", dead_key, NOT_DEAD)
    lanes = Lanes.of(call, 2)
    lanes.check_keys([group], write_lanes=True)
    host.zrem(call, dead_key, dead, job_id)
    host.hset(call, row_key, host.read_hash(call, row_key), b"attempts", b"0", b"stalls", b"0",
              b"state", b"pending")
    host.hdel(call, row_key, host.read_hash(call, row_key), b"error")
    lanes.back_to_work(b"", job_id, group, 0, False)
    return 1


@verb("gremove", (ROW, "schedule", "active", "dead", *LANE_BLOCK),
      summary="Remove a lane job in any state, and its row; its group's slot freed and the "
      "ring set right (@gremove)",
      complexity="O(log N + R) for N jobs in a set and a ring of R groups")
def gremove(call: Call) -> Any:
    row_key, schedule_key, active_key, dead_key = call.keys[:4]
    job_id = call.job_id(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        return 0
    group = row.get(b"group")
    if group is None:
        raise flat_row(job_id)
    lanes = Lanes.of(call, 4)
    lanes.check_group(group)
    was_active = host.in_zset(host.read_zset(call, active_key), job_id)
    lanes.check_keys([group], write_lanes=True)
    for key in (schedule_key, dead_key):
        host.read_zset(call, key)  # WRONGTYPE before the first write
    lane_key = lanes.lane(group)
    for key in (lane_key, schedule_key, active_key, dead_key):
        host.zrem(call, key, host.read_zset(call, key), job_id)
    host.delete(call, row_key)
    if was_active:
        settle_group(lanes, group)
    lanes.unring_if_unserviceable(group)
    return 1
