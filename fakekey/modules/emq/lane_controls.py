"""The lane controls, wire 6's twins of the lane control scripts (spec emq.md section
7.1): EMQ.GPAUSE (@gpause), EMQ.GRESUME (@gresume), EMQ.GLIMIT (@glimit), EMQ.GMOVE
(@gmove) and EMQ.GREPAIR (@grepair).

As the lane verbs (lanes.py): each reads and checks what its script reads, in its order,
then every key a later step may reach, then writes step for step as the script does. A
group that becomes serviceable off the ring goes back on it with one wake token; none of
these moves a flat job.
"""

from __future__ import annotations

from typing import Any

from fakekey.modules.emq import host
from fakekey.modules.emq.lane_host import Lanes, lrem_all, read_list, read_set, sadd, srem
from fakekey.modules.emq.lanes import LANE_BLOCK, flat_row
from fakekey.modules.emq.layout import NON_NEGATIVE, ROW, TEXT, Arg, Call, verb
from fakekey.resp.replies import OK

GROUP = Arg("group", TEXT)


def lane_read(call: Call) -> None:
    """Access: the group's lane, derived from the group argument, is read."""
    call.may_read(call.prefix + b"lane:" + call.args[0])


@verb("gpause", LANE_BLOCK, (GROUP,),
      summary="Pause a group: it joins the paused groups and leaves the ring (no wake); its "
      "active jobs keep their leases (@gpause)",
      complexity="O(R) for a ring of R groups")
def gpause(call: Call) -> Any:
    (group,) = call.args
    lanes = Lanes.of(call, 0)
    read_set(call, lanes.gpaused)  # WRONGTYPE before the first write
    read_list(call, lanes.ring)
    sadd(call, lanes.gpaused, group)
    lrem_all(call, lanes.ring, group)
    return OK


@verb("gresume", LANE_BLOCK, (GROUP,), access=lane_read,
      summary="Resume a group: it leaves the paused groups and goes back on the ring with "
      "one wake token when serviceable (@gresume)",
      complexity="O(R) for a ring of R groups")
def gresume(call: Call) -> Any:
    (group,) = call.args
    lanes = Lanes.of(call, 0)
    lanes.check_group(group)
    lanes.check_keys([group])
    srem(call, lanes.gpaused, group)
    lanes.ring_if_serviceable(group)
    return OK


@verb("glimit", LANE_BLOCK, (GROUP, Arg("limit", NON_NEGATIVE)), access=lane_read,
      summary="Set a group's concurrency limit, or lift it with 0; the group leaves the ring "
      "at its limit, or goes back on it with one wake token when serviceable (@glimit)",
      complexity="O(R) for a ring of R groups")
def glimit(call: Call) -> Any:
    group, limit = call.args
    lanes = Lanes.of(call, 0)
    lanes.active(group)
    lanes.check_keys([group], counts=False)
    limits = host.read_hash(call, lanes.glimit)
    if limit == 0:
        host.hdel(call, lanes.glimit, limits, group)
    else:
        host.hset(call, lanes.glimit, limits, group, b"%d" % limit)
    lanes.unring_if_unserviceable(group)
    lanes.ring_if_serviceable(group)
    return OK


@verb("gmove", (ROW, "active", *LANE_BLOCK), (GROUP,),
      summary="Move a lane job to another group: a waiting job changes lanes, an active one "
      "its group's slot; both groups set right on the ring (@gmove)",
      complexity="O(log N + R) for a lane of N jobs and a ring of R groups")
def gmove(call: Call) -> Any:
    row_key, active_key = call.keys[0], call.keys[1]
    (new,) = call.args
    job_id = call.job_id(row_key)
    row = host.read_hash(call, row_key)
    if row is None:
        return 0
    old = row.get(b"group")
    if old is None:
        raise flat_row(job_id)
    if old == new:
        return 1
    lanes = Lanes.of(call, 2)
    lanes.check_group(old)
    lanes.check_group(new)
    lanes.check_keys([old, new], write_lanes=True)
    host.read_zset(call, active_key)  # WRONGTYPE before the first write
    host.hset(call, row_key, row, b"group", new)
    old_lane, new_lane = lanes.lane(old), lanes.lane(new)
    if host.zrem(call, old_lane, host.read_zset(call, old_lane), job_id):
        host.zadd(call, new_lane, host.read_zset(call, new_lane), job_id, 0)
    elif host.in_zset(host.read_zset(call, active_key), job_id):
        lanes.released(old)
        host.hincrby(call, lanes.gactive, host.read_hash(call, lanes.gactive), new, 1)
    lanes.unring_if_unserviceable(old)
    lanes.unring_if_unserviceable(new)
    lanes.ring_if_serviceable(old)
    lanes.ring_if_serviceable(new)
    return 1


@verb("grepair", ("active", *LANE_BLOCK), (GROUP,), access=lane_read,
      summary="Recount a group's active count from active and write it to gactive; the "
      "group then set right on the ring (@grepair)",
      complexity="O(N + R) for N active jobs and a ring of R groups")
def grepair(call: Call) -> Any:
    active_key = call.keys[0]
    (group,) = call.args
    lanes = Lanes.of(call, 1)
    lanes.limit(group)
    active = host.read_zset(call, active_key)
    count = 0
    for _, job_id in (active.sorted_keys() if active is not None else ()):
        row_key = call.key(job_id)
        call.may_read(row_key)
        row = host.read_hash(call, row_key)
        if row is not None and row.get(b"group") == group:
            count += 1
    lanes.check_keys([group], counts=False)
    gactive = host.read_hash(call, lanes.gactive)
    if count > 0:
        host.hset(call, lanes.gactive, gactive, group, b"%d" % count)
    else:
        host.hdel(call, lanes.gactive, gactive, group)
    lanes.unring_if_unserviceable(group)
    lanes.ring_if_serviceable(group)
    return count
