"""EMQ.PROMOTE: due scheduled flat jobs move to pending (spec emq.md section 3).

The due members are read with one range read, every row is read and checked (a lane row
refuses the whole call, an inconsistent priority answers EMQHOST), and only then is
anything written, member by member in score order, as the twin script @promote does.
"""

from __future__ import annotations

from typing import Any

from fakekey.modules.emq import host
from fakekey.modules.emq.layout import POSITIVE, PREFIX, Arg, Call, verb
from fakekey.resp.replies import ReplyError


def lane_due(job_id: bytes) -> ReplyError:
    return ReplyError(f"EMQLANE due lane row {job_id.decode('utf-8', 'replace')} "
                      "needs the lane promotion")


def due_priorities(call: Call, due: list[bytes]) -> list[int | None]:
    """Each due member's priority, or None for a member without a row."""
    return host.swept_rows(call, due, lane_due, lambda row: host.int_field(row, b"priority"))


@verb("promote", ("schedule", "pending", PREFIX), (Arg("batch", POSITIVE),), rings=True,
      summary="Move due scheduled flat jobs to pending, bounded by batch (emq6.8 G8, @promote)",
      complexity="O(M log N) for M due jobs")
def promote(call: Call) -> Any:
    schedule_key, pending_key, _ = call.keys
    (batch,) = call.args
    schedule = host.read_zset(call, schedule_key)
    due = host.due_members(schedule, call.now, batch)
    priorities = due_priorities(call, due)
    pending = None
    if any(p is not None for p in priorities):
        pending = host.read_zset(call, pending_key)  # WRONGTYPE before the first write
    moved = 0
    for job_id, priority in zip(due, priorities, strict=True):
        host.zrem(call, schedule_key, schedule, job_id)
        if priority is None:
            continue
        row_key = call.key(job_id)
        host.hset(call, row_key, host.read_hash(call, row_key), b"state", b"pending")
        pending = host.zadd(call, pending_key, pending, job_id, priority)
        moved += 1
    call.claimable = moved > 0
    return moved
