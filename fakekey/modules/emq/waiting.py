"""EMQ.BCLAIM and EMQ.GBCLAIM: the claims that wait (spec emq.md 7.2).

A blocking claim leases exactly as its non-blocking twin when there is work. Otherwise the
client parks on the key a claimable transition writes (`pending` for the flat claim,
`ring` for the lane claim; and meta while the queue is paused, so that a resume by a verb or
a script wakes it), with Valkey's rules for blocked clients (core/blocking.py): FIFO per
key, served after the command, EXEC or script that wrote ends, the claim run again against
the keys as they are then, parking again in its place when it finds nothing. A timeout, or
CLIENT UNBLOCK ... TIMEOUT, answers the claim's "no work": the empty array.
"""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import LLONG_MAX
from fakekey.modules.emq import host
from fakekey.modules.emq.jobs import lease_head
from fakekey.modules.emq.lane_host import read_list
from fakekey.modules.emq.lanes import gclaim, gclaim_access
from fakekey.modules.emq.layout import NON_NEGATIVE, POSITIVE, PREFIX, Arg, Call, verb
from fakekey.resp.replies import ReplyError

TIMEOUT_RANGE = ReplyError("ERR timeout is out of range")
# the value types of the keys a claimer parks on: pending and lanes (zset), ring (list),
# meta (hash)
PARK_KINDS = ("zset", "list", "hash")


def park(call: Call, key: bytes, paused: bool, timeout_ms: int) -> Any:
    """No work now: park the caller on `key` (and meta while the queue is paused) until a
    write there, the timeout on the server clock (0: forever) or CLIENT UNBLOCK. Inside
    MULTI/EXEC or a script a claim never waits: it answers no work at once."""
    c = call.c
    state = c.state
    if state.deny_blocking:
        return []
    if timeout_ms > LLONG_MAX - call.now:
        raise TIMEOUT_RANGE
    deadline = call.now + timeout_ms if timeout_ms else 0
    keys = [key, call.key(b"meta")] if paused else [key]
    cmd = c.cmd
    assert cmd is not None  # the verb running now
    # a resume that empties meta deletes it: a paused queue's claimer wakes on deletions too
    return state.blocking.block(c, keys, deadline, cmd, call.argv, [], PARK_KINDS,
                                wake_on_delete=paused)


def is_paused(call: Call) -> bool:
    meta = host.read_hash(call, call.key(b"meta"))
    return meta is not None and b"paused" in meta


def write_meta(call: Call) -> None:
    """Access: the claim bumps meta's fence."""
    call.may_write(call.key(b"meta"))


@verb("bclaim", ("pending", "active"),
      (Arg("lease_ms", POSITIVE), Arg("timeout_ms", NON_NEGATIVE)),
      access=write_meta, blocking=True,
      summary="Lease the head of pending, or wait for one up to timeout_ms (0: forever)",
      complexity="O(log N)")
def bclaim(call: Call) -> Any:
    lease_ms, timeout_ms = call.args
    reply = lease_head(call, lease_ms)
    if reply:
        return reply
    return park(call, call.keys[0], is_paused(call), timeout_ms)


def gbclaim_access(call: Call) -> None:
    """Access: what EMQ.GCLAIM touches, and meta (the queue's pause is read)."""
    gclaim_access(call)
    call.may_read(call.key(b"meta"))


def lane_turns(call: Call, lease_ms: int) -> list[Any]:
    """EMQ.GCLAIM's turns until one leases, at most one per group on the ring as it was:
    a turn that drops an unserviceable head group (or a rowless head) leases nothing,
    while a later group of the ring may have work."""
    call.args = [lease_ms]  # GCLAIM's own arguments
    for _ in range(max(1, ring_length(call))):
        reply: list[Any] = gclaim(call)
        if reply or not ring_length(call):
            return reply
    return []


def ring_length(call: Call) -> int:
    ring = read_list(call, call.keys[0])
    return 0 if ring is None else len(ring)


@verb("gbclaim", ("ring", "active", PREFIX),
      (Arg("lease_ms", POSITIVE), Arg("timeout_ms", NON_NEGATIVE)),
      access=gbclaim_access, blocking=True,
      summary="Lease from the lane ring, or wait for a group to join it up to timeout_ms "
      "(0: forever); a paused queue waits",
      complexity="O(R log N) for a ring of R groups")
def gbclaim(call: Call) -> Any:
    lease_ms, timeout_ms = call.args
    if is_paused(call):
        return park(call, call.keys[0], True, timeout_ms)
    reply = lane_turns(call, lease_ms)
    if reply:
        return reply
    return park(call, call.keys[0], False, timeout_ms)
