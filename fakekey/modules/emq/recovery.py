"""EMQ.STALLED.CHECK: the counted sweep of expired leases (spec emq.md section 3).

The expired members are read with one range read, every row is read and checked (an
expired lane row refuses the whole call, an inconsistent row answers EMQHOST), and only
then is anything written, member by member in deadline order, as the twin script
@sweep_stalled does. A row whose holder announced a restart (`restart` present) goes back
to pending without a stall counted; any other counts a stall and goes back to pending, or
dead past `max_stalls`. `attempts` is never changed.
"""

from __future__ import annotations

from typing import Any

from fakekey.modules.emq import host
from fakekey.modules.emq.layout import NON_NEGATIVE, POSITIVE, PREFIX, Arg, Call, verb
from fakekey.resp.replies import ReplyError
from fakekey.types.hash import HashValue

RECOVERED, DEAD, EXEMPT = "recovered", "dead", "exempt"


class Expired:
    """One expired lease's row, as read before anything is written (a plain class: a
    compiled dataclass's __init__ costs ten times more)."""

    __slots__ = ("priority", "outcome")

    def __init__(self, priority: int, outcome: str) -> None:
        self.priority = priority
        self.outcome = outcome  # RECOVERED, DEAD or EXEMPT


def lane_expired(job_id: bytes) -> ReplyError:
    return ReplyError(f"EMQLANE expired lane row {job_id.decode('utf-8', 'replace')} "
                      "needs the lane recovery")


def read_expired(call: Call, due: list[bytes], max_stalls: int) -> list[Expired | None]:
    """What happens to each expired member (None: it has no row)."""

    def expired(row: HashValue) -> Expired:
        priority = host.int_field(row, b"priority")
        stalls = host.int_field(row, b"stalls") + 1
        if b"restart" in row:
            return Expired(priority, EXEMPT)
        return Expired(priority, DEAD if stalls > max_stalls else RECOVERED)

    return host.swept_rows(call, due, lane_expired, expired)


def check_targets(call: Call, rows: list[Expired | None]) -> None:
    """The sets and counter the writes will touch hold the right types (before any write)."""
    outcomes = {row.outcome for row in rows if row is not None}
    if outcomes - {DEAD}:
        host.read_zset(call, call.keys[1])
    if DEAD in outcomes:
        host.read_zset(call, call.keys[2])


def settle_expired(call: Call, job_id: bytes, row: Expired) -> None:
    """One expired lease's writes, in the twin script's order. Each key is read right
    before its write: a row may be meta itself, or emptied by its HDEL."""
    pending_key, dead_key = call.keys[1], call.keys[2]
    row_key = call.key(job_id)
    if row.outcome == EXEMPT:
        host.hdel(call, row_key, host.read_hash(call, row_key), b"restart", b"fence")
        host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
        host.zadd(call, pending_key, host.read_zset(call, pending_key), job_id, row.priority)
        return
    host.hincrby(call, row_key, host.read_hash(call, row_key), b"stalls", 1)
    if row.outcome == DEAD:
        host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"dead", b"error", b"stalled")
        host.hdel(call, row_key, host.read_hash(call, row_key), b"fence")
        host.zadd(call, dead_key, host.read_zset(call, dead_key), job_id, call.now)
        meta_key = call.key(b"meta")
        host.hincrby(call, meta_key, host.read_hash(call, meta_key), b"dead", 1)
    else:
        host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
        host.hdel(call, row_key, host.read_hash(call, row_key), b"fence")
        host.zadd(call, pending_key, host.read_zset(call, pending_key), job_id, row.priority)


def write_meta(call: Call) -> None:
    """Access: the sweep reads meta's dead counter and bumps it for each death."""
    call.may_write(call.key(b"meta"))


@verb("stalled.check", ("active", "pending", "dead", PREFIX),
      (Arg("limit", POSITIVE), Arg("max_stalls", NON_NEGATIVE)), access=write_meta, rings=True,
      summary="Counted stall sweep: recover or dead-letter expired leases; restart expiries "
      "exempt (emq6.8 G15, @sweep_stalled)",
      complexity="O(M log N) for M expired leases")
def stalled_check(call: Call) -> Any:
    active_key = call.keys[0]
    limit, max_stalls = call.args
    active = host.read_zset(call, active_key)
    due = host.due_members(active, call.now, limit)
    rows = read_expired(call, due, max_stalls)
    host.int_field(host.read_hash(call, call.key(b"meta")), b"dead")
    check_targets(call, rows)
    counts = {RECOVERED: 0, DEAD: 0, EXEMPT: 0}
    for job_id, row in zip(due, rows, strict=True):
        host.zrem(call, active_key, active, job_id)
        if row is not None:
            settle_expired(call, job_id, row)
            counts[row.outcome] += 1
    call.claimable = counts[RECOVERED] + counts[EXEMPT] > 0
    return [counts[RECOVERED], counts[DEAD], counts[EXEMPT]]
