"""The hash type: fields in Valkey's order, per-field expiry, and the encoding tracked as
Valkey converts it.

Encoding. A hash is created "listpack" and converts once, never back, to "hashtable"
when a write makes it too big for the thresholds of that moment
(`hash-max-listpack-entries` / `hash-max-listpack-value`) or gives any field a TTL
(Valkey keeps field TTLs only in the hashtable encoding). Deleting fields or removing
TTLs does not convert back.

Order. A listpack hash iterates in insertion order: overwriting a field keeps its place,
a field deleted and set again goes to the end. A dict behaves exactly so. Valkey's
hashtable order is unspecified (it follows its hash function); here it simply stays
insertion order.

Field expiry. A field with a deadline (unix ms) is alive while `now <= deadline`, like a
key. The commands layer purges due fields before every access (`expire_fields`), so no
reply ever sees one; the server's active expiry calls the same method. The deadlines are
also kept in a heap, so that finding the due fields costs what is due, not the hash's size
(an entry whose field lost or changed its deadline is dropped when it surfaces).

Cursors. HSCAN walks a hashtable hash as SCAN walks the keys (fakekey/commands/scan.py),
in an order kept in `scan_order` for an iteration.
"""

from __future__ import annotations

import random
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakekey.types.value import Configured

LISTPACK = b"listpack"
HASHTABLE = b"hashtable"


class HashValue:
    """A hash of byte-string fields to byte-string values."""

    TYPE_NAME = "hash"
    __slots__ = ("fields", "ttls", "hashtable", "scan_order", "_deadlines")

    def __init__(self) -> None:
        self.fields: dict[bytes, bytes] = {}  # field -> value, in iteration order
        self.ttls: dict[bytes, int] = {}  # field -> deadline (unix ms), volatile fields only
        self.hashtable = False  # the one-way listpack -> hashtable conversion happened
        self.scan_order: list[bytes] | None = None  # HSCAN's field order, per iteration
        self._deadlines: list[tuple[int, bytes]] = []  # a heap of (deadline, field)

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.fields)

    def __contains__(self, field: object) -> bool:
        return field in self.fields

    def get(self, field: bytes) -> bytes | None:
        return self.fields.get(field)

    def ttl_of(self, field: bytes) -> int | None:
        """The field's deadline in unix ms, or None if it has none."""
        return self.ttls.get(field)

    def encoding(self, state: Configured | None = None) -> bytes:
        """What OBJECT ENCODING answers: the encoding this hash has reached."""
        return HASHTABLE if self.hashtable else LISTPACK

    def copy(self) -> HashValue:
        """A deep copy with the same encoding, order and field TTLs (hashTypeDup)."""
        twin = HashValue()
        twin.fields = dict(self.fields)
        twin.ttls = dict(self.ttls)
        twin.hashtable = self.hashtable
        twin._deadlines = list(self._deadlines)
        return twin

    def random_fields(self, count: int) -> list[bytes]:
        """`count` distinct fields (count < len), in iteration order, as Valkey samples
        a listpack (lpRandomPairsUnique)."""
        order = list(self.fields)
        picked = sorted(random.sample(range(len(order)), count))
        return [order[i] for i in picked]

    # --- writing ---------------------------------------------------------------------

    def set(self, field: bytes, value: bytes, keep_ttl: bool = False) -> bool:
        """Store a field; True if it is new. Its TTL goes unless `keep_ttl`."""
        fields = self.fields
        created = field not in fields
        fields[field] = value
        if not created and not keep_ttl and self.ttls:
            self.ttls.pop(field, None)
        return created

    def delete(self, field: bytes) -> bool:
        if self.fields.pop(field, None) is None:
            return False
        if self.ttls:
            self.ttls.pop(field, None)
        return True

    def set_ttl(self, field: bytes, deadline: int) -> None:
        """Give an existing field a deadline; a hash with TTLs is a hashtable."""
        self.ttls[field] = deadline
        self.hashtable = True
        heap = self._deadlines
        heappush(heap, (deadline, field))
        if len(heap) > 2 * len(self.ttls) + 16:  # mostly stale: rebuilt from the TTLs
            self.rebuild_deadlines()

    def rebuild_deadlines(self) -> None:
        """The heap anew from `ttls` (after `ttls` was filled directly, as a loader does)."""
        heap = [(deadline, field) for field, deadline in self.ttls.items()]
        heapify(heap)
        self._deadlines = heap

    def persist(self, field: bytes) -> bool:
        """Drop a field's TTL; False if it had none."""
        return self.ttls.pop(field, None) is not None

    def expire_fields(self, now: int, limit: int = 0) -> list[bytes]:
        """Active/lazy expiry: delete the fields whose deadline has passed (at most `limit`
        of them, if given), soonest first; return them."""
        ttls = self.ttls
        heap = self._deadlines
        if not ttls:
            heap.clear()
            return []
        due: list[bytes] = []
        while heap and heap[0][0] < now:
            deadline, field = heappop(heap)
            if ttls.get(field) == deadline:  # else a deadline since changed or dropped
                self.delete(field)
                due.append(field)
                if len(due) == limit:
                    break
        return due

    # --- encoding conversions ----------------------------------------------------------

    def convert_for_write(self, args: list[bytes], max_entries: int, max_value: int) -> None:
        """hashTypeTryConversion before HSET/HMSET/HSETNX: convert if the pairs in
        `args` (duplicates counted) exceed the entry limit or any argument is too long."""
        if self.hashtable:
            return
        if len(args) // 2 > max_entries or any(len(a) > max_value for a in args):
            self.hashtable = True

    def convert_after_set(self, field: bytes, value: bytes, max_entries: int,
                          max_value: int) -> None:
        """hashTypeSet's checks: a field or value too long, or too many fields."""
        if not self.hashtable and (
            len(field) > max_value or len(value) > max_value or len(self.fields) > max_entries
        ):
            self.hashtable = True

    def settle_encoding(self, max_entries: int, max_value: int) -> None:
        """For a hash built whole (RESTORE, loading): the encoding its content needs."""
        if self.ttls or len(self.fields) > max_entries or any(
            len(f) > max_value or len(v) > max_value for f, v in self.fields.items()
        ):
            self.hashtable = True
