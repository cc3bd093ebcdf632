"""The host operations of the lane verbs: the lists and sets the lane scripts call.

The lane scripts call RPUSH, LPUSH, LTRIM, LREM, LPOP, LMOVE, SADD, SREM and ZPOPMIN on
the ring, the wake list, the paused groups and the lanes. Each operation here runs the
built-in's own code (the shared helper of lists.py or zsets.py, or the command's handler
itself), so the encodings, the keyspace events, WATCH, readiness and the deletion of an
emptied container are exactly the built-in's, as the script's `redis.call` gets them.

`Lanes` is the prelude's lane machinery (`serviceable`, `ring_if_serviceable`,
`group_released`, `unring_if_unserviceable`, `back_to_work`), read live at each step as the
script reads it. A verb calls its writes only after its checks passed (`check_group`,
`check_keys`), so no step of it can fail half-way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakekey.commands import lists, sets, zsets
from fakekey.modules.emq import host
from fakekey.modules.emq.layout import HOST, word_int
from fakekey.types.list import ListValue
from fakekey.types.set import SetValue
from fakekey.types.zset import ZSet

if TYPE_CHECKING:
    from fakekey.modules.emq.layout import Call

LANE = b"lane:"
TOKEN = b"1"  # the one wake token
WAKE_CAP = b"63"  # LTRIM wake 0 63: at most 64 tokens


# --- reads ---------------------------------------------------------------------------------


def read_list(call: Call, key: bytes) -> ListValue | None:
    """The list at `key` (None if absent); WRONGTYPE for another type."""
    return call.db.lookup_type(key, ListValue)


def read_set(call: Call, key: bytes) -> SetValue | None:
    """The set at `key` (None if absent); WRONGTYPE for another type."""
    return call.db.lookup_type(key, SetValue)


# --- writes: each one the built-in's own code ----------------------------------------------


def rpush(call: Call, key: bytes, value: bytes) -> None:
    lists.push(call.c, key, [value], False)


def lpush(call: Call, key: bytes, value: bytes) -> None:
    lists.push(call.c, key, [value], True)


def ltrim_wake(call: Call, key: bytes) -> None:
    """LTRIM key 0 63."""
    lists.ltrim(call.c, [b"ltrim", key, b"0", WAKE_CAP])


def lrem_all(call: Call, key: bytes, value: bytes) -> None:
    """LREM key 0 value."""
    lists.lrem(call.c, [b"lrem", key, b"0", value])


def lpop(call: Call, key: bytes) -> None:
    """LPOP key (a no-op on an absent list)."""
    lst = read_list(call, key)
    if lst:
        lists.pop_many(call.db, key, lst, True, 1)


def rotate(call: Call, key: bytes) -> None:
    """LMOVE key key LEFT RIGHT: the head to the tail."""
    lists.move(call.c, key, key, True, False)


def sadd(call: Call, key: bytes, member: bytes) -> None:
    sets.sadd(call.c, [b"sadd", key, member])


def srem(call: Call, key: bytes, member: bytes) -> None:
    sets.srem(call.c, [b"srem", key, member])


def zpopmin(call: Call, key: bytes, zs: ZSet) -> None:
    """ZPOPMIN key on `zs`, the sorted set read at `key`."""
    zsets.pop(call.c, key, zs, False, 1)


# --- the lane machinery --------------------------------------------------------------------


class Lanes:
    """One queue's lane keys (the prelude's `lanes` table) and the prelude's lane steps."""

    __slots__ = ("call", "ring", "gpaused", "glimit", "gactive", "wake")

    def __init__(self, call: Call, ring: bytes, gpaused: bytes, glimit: bytes, gactive: bytes,
                 wake: bytes) -> None:
        self.call = call
        self.ring = ring
        self.gpaused = gpaused
        self.glimit = glimit
        self.gactive = gactive
        self.wake = wake

    @staticmethod
    def of(call: Call, at: int) -> Lanes:
        """The lane block of a verb's keys, from key `at` (0-based) on: ring, gpaused,
        glimit, gactive, wake (the prefix, last, is the call's own)."""
        keys = call.keys
        return Lanes(call, keys[at], keys[at + 1], keys[at + 2], keys[at + 3], keys[at + 4])

    @staticmethod
    def derived(call: Call, ring: bytes) -> Lanes:
        """The lane keys built from the queue's prefix (@gclaim2's way)."""
        return Lanes(call, ring, call.key(b"gpaused"), call.key(b"glimit"), call.key(b"gactive"),
                     call.key(b"wake"))

    def lane(self, group: bytes) -> bytes:
        return self.call.prefix + LANE + group

    # reads, live

    def paused(self, group: bytes) -> bool:
        """SISMEMBER gpaused group."""
        s = read_set(self.call, self.gpaused)
        return s is not None and group in s

    def limit(self, group: bytes) -> int | None:
        """HGET glimit group as an integer (None when absent; EMQHOST when not one)."""
        h = host.read_hash(self.call, self.glimit)
        raw = None if h is None else h.get(group)
        if raw is None:
            return None
        value = word_int(raw)
        if value is None:
            raise HOST
        return value

    def active(self, group: bytes) -> int:
        """HGET gactive group as an integer (0 when absent; EMQHOST when not one)."""
        return host.int_field(host.read_hash(self.call, self.gactive), group)

    def check_group(self, group: bytes) -> None:
        """The prelude's `check_group`: the group's limit and active count are integers."""
        self.limit(group)
        self.active(group)

    def serviceable(self, group: bytes) -> bool:
        """Unpaused, below its limit (or none), and its lane holds a job."""
        if self.paused(group):
            return False
        limit = self.limit(group)
        if limit is not None and self.active(group) >= limit:
            return False
        lane = host.read_zset(self.call, self.lane(group))
        return lane is not None and len(lane) > 0

    def ringed(self, group: bytes) -> bool:
        """LPOS ring group."""
        ring = read_list(self.call, self.ring)
        return ring is not None and group in ring

    def check_keys(self, groups: list[bytes], pending: bytes = b"", *,
                   write_lanes: bool = False, counts: bool = True) -> None:
        """Before the first write: every lane key the steps may reach for `groups` holds
        its type (WRONGTYPE otherwise), each group's limit and count are integers (unless
        `counts` is False: a control that overwrites one checks its own), and the caller
        may read the groups' lanes (write them, with `write_lanes`). `pending`: the flat
        set a step may also fill."""
        call = self.call
        if pending:
            host.read_zset(call, pending)
        for group in groups:
            lane = self.lane(group)
            if write_lanes:
                call.may_write(lane)
            else:
                call.may_read(lane)
            host.read_zset(call, lane)
            if counts:
                self.check_group(group)
        if groups:
            host.read_hash(call, self.glimit)
            host.read_hash(call, self.gactive)
            read_set(call, self.gpaused)
            read_list(call, self.ring)
            read_list(call, self.wake)

    # writes

    def push_ring(self, group: bytes) -> None:
        """RPUSH ring group, then the one wake token (LPUSH wake 1, LTRIM wake 0 63)."""
        call = self.call
        rpush(call, self.ring, group)
        lpush(call, self.wake, TOKEN)
        ltrim_wake(call, self.wake)

    def ring_if_serviceable(self, group: bytes) -> None:
        if self.ringed(group):
            return
        if self.serviceable(group):
            self.push_ring(group)

    def released(self, group: bytes) -> None:
        """One active job of the group fewer; the field goes when it reaches zero."""
        call = self.call
        h = host.read_hash(call, self.gactive)
        if host.int_field(h, group) > 1:
            host.hincrby(call, self.gactive, h, group, -1)
        else:
            host.hdel(call, self.gactive, h, group)

    def unring_if_unserviceable(self, group: bytes) -> None:
        if not self.serviceable(group):
            lrem_all(self.call, self.ring, group)

    def back_to_work(self, pending: bytes, job_id: bytes, group: bytes | None, priority: int,
                     held_slot: bool) -> None:
        """A flat row into pending by priority (a claimable flat job: `call.claimable`), a
        lane row into its lane, its slot freed when it held one, its group back on the
        ring (one wake token) when it had left it and is serviceable."""
        call = self.call
        if group is None:
            host.zadd(call, pending, host.read_zset(call, pending), job_id, priority)
            call.claimable = True
            return
        lane = self.lane(group)
        host.zadd(call, lane, host.read_zset(call, lane), job_id, 0)
        if held_slot:
            self.released(group)
        self.ring_if_serviceable(group)
