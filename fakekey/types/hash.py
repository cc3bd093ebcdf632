"""The hash type: fields in Valkey's order, per-field expiry, and the encoding tracked as
Valkey converts it.

Encoding. A hash is created "listpack" and converts once, never back, to "hashtable"
when a write makes it too big for the thresholds of that moment
(`hash-max-listpack-entries` / `hash-max-listpack-value`) or gives any field a TTL
(Valkey keeps field TTLs only in the hashtable encoding). Deleting fields or removing
TTLs does not convert back.

Representation. What OBJECT ENCODING answers is a flag; how the fields are held is
separate, and only this module knows it. A small listpack hash is one packed `bytes`
(`_packed`): each field then its value, each as a length byte and the data, scanned
linearly as Valkey scans its listpack. Two bytes objects and a dict entry per field
would cost about seven times the data of a typical small hash; the packed form costs
the data plus two bytes a field. A hash leaves the packed form for a dict (`_table`),
never back, when it converts to hashtable, or while still a listpack if it outgrows
what a linear scan should cover (`PACKED_MAX_FIELDS`, thresholds raised by CONFIG) or
holds an item too long for its length byte.

Order. A listpack hash iterates in insertion order: overwriting a field keeps its place,
a field deleted and set again goes to the end. Both forms behave exactly so, and the
conversion keeps the order. Valkey's hashtable order is unspecified (it follows its hash
function); here it simply stays insertion order.

Field expiry. A field with a deadline (unix ms) is alive while `now <= deadline`, like a
key. As in Valkey, which has no lazy expiry of fields, a field past its deadline stays
held (HLEN, DUMP, RENAME count it) but every command sees it as absent (`get_live`,
`has_live`, `live`; a command writing it deletes it first, as an expiry) until the server's active expiry
deletes it (`expire_fields`). The deadlines are also kept in a heap, so that finding the
due fields costs what is due, not the hash's size (an entry whose field lost or changed
its deadline is dropped when it surfaces). Only a hashtable hash has TTLs; a hash without
any holds neither dict nor heap.

Cursors. HSCAN walks a hashtable hash as SCAN walks the keys (fakekey/commands/scan.py),
in an order kept in `scan_order` for an iteration.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from heapq import heapify, heappop, heappush
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from fakekey.types.packed import LENGTH_BYTE, MAX_ITEM

if TYPE_CHECKING:
    from fakekey.types.value import Configured

LISTPACK = b"listpack"
HASHTABLE = b"hashtable"

# The packed form's bounds: beyond them a linear scan would cost too much, or a length
# would not fit its byte. Valkey's default thresholds (128 entries, 64 bytes) are inside.
PACKED_MAX_FIELDS: Final = 128
PACKED_MAX_ITEM: Final = MAX_ITEM
_LENGTH: Final = LENGTH_BYTE  # read per write: a Final name, not a module lookup

_NO_TTLS: Final[Mapping[bytes, int]] = MappingProxyType({})  # read-only: shared safely


def _find(packed: bytes, field: bytes) -> int:
    """Where the field's entry starts in a packed hash (its length byte), or -1. The
    length and the last byte are compared before the whole field: most entries differ
    there."""
    size = len(field)
    last = field[size - 1] if size else 0
    pos = 0
    end = len(packed)
    while pos < end:
        length = packed[pos]
        if length == size and (size == 0 or packed[pos + size] == last) and \
                packed[pos + 1:pos + 1 + size] == field:
            return pos
        pos += length + 1
        pos += packed[pos] + 1  # the value
    return -1


def _pair(field: bytes, value: bytes) -> bytes:
    """A field and its value in the packed form."""
    length = _LENGTH
    return b"".join((length[len(field)], field, length[len(value)], value))


def _unpack(packed: bytes) -> list[tuple[bytes, bytes]]:
    pairs = []
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 1 + packed[pos]
        field = packed[pos + 1:at]
        pos = at + 1 + packed[at]
        pairs.append((field, packed[at + 1:pos]))
    return pairs


class HashValue:
    """A hash of byte-string fields to byte-string values."""

    TYPE_NAME = "hash"
    __slots__ = ("_packed", "_count", "_table", "_hashtable", "_ttls", "_deadlines", "scan_order")

    def __init__(self) -> None:
        self._packed: bytes | None = b""  # the packed form, or None once a dict holds the fields
        self._count = 0  # the fields in `_packed`
        self._table: dict[bytes, bytes] | None = None  # field -> value, in iteration order
        self._hashtable = False  # the one-way listpack -> hashtable conversion happened
        self._ttls: dict[bytes, int] | None = None  # field -> deadline (unix ms), volatile only
        self._deadlines: list[tuple[int, bytes]] | None = None  # a heap of (deadline, field)
        self.scan_order: list[bytes] | None = None  # HSCAN's field order, per iteration

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        table = self._table
        return self._count if table is None else len(table)

    def __contains__(self, field: object) -> bool:
        packed = self._packed
        if packed is None:
            table = self._table
            return table is not None and field in table
        return isinstance(field, bytes) and _find(packed, field) >= 0

    def get(self, field: bytes) -> bytes | None:
        packed = self._packed
        if packed is None:
            table = self._table
            return None if table is None else table.get(field)
        pos = _find(packed, field)
        if pos < 0:
            return None
        at = pos + 1 + packed[pos]
        return packed[at + 1:at + 1 + packed[at]]

    def items(self) -> list[tuple[bytes, bytes]]:
        """(field, value) pairs in iteration order."""
        packed = self._packed
        if packed is None:
            table = self._table
            return [] if table is None else list(table.items())
        return _unpack(packed)

    def field_names(self) -> list[bytes]:
        packed = self._packed
        if packed is None:
            table = self._table
            return [] if table is None else list(table)
        return [field for field, _ in _unpack(packed)]

    def values(self) -> list[bytes]:
        packed = self._packed
        if packed is None:
            table = self._table
            return [] if table is None else list(table.values())
        return [value for _, value in _unpack(packed)]

    def as_dict(self) -> dict[bytes, bytes]:
        """A new dict of the fields, in iteration order."""
        table = self._table
        return dict(self.items()) if table is None else dict(table)

    def mapping(self) -> Mapping[bytes, bytes]:
        """The fields to read at once: the live dict when one holds them (no copy), else
        a new one; not to be kept across writes."""
        table = self._table
        return dict(_unpack(self._packed or b"")) if table is None else table

    @property
    def hashtable(self) -> bool:
        """Whether the hash has converted to the hashtable encoding."""
        return self._hashtable

    @property
    def ttls(self) -> Mapping[bytes, int]:
        """Field -> deadline (unix ms) of the volatile fields; read-only (`set_ttl`)."""
        ttls = self._ttls
        return _NO_TTLS if ttls is None else ttls

    def has_ttls(self) -> bool:
        return bool(self._ttls)

    def ttl_of(self, field: bytes) -> int | None:
        """The field's deadline in unix ms, or None if it has none."""
        ttls = self._ttls
        return None if ttls is None else ttls.get(field)

    # --- fields past their deadline: held, but seen by no command ------------------------

    def expired(self, field: bytes, now: int) -> bool:
        """Whether the field has a deadline that has passed (it may still be held)."""
        ttls = self._ttls
        if not ttls:
            return False
        deadline = ttls.get(field)
        return deadline is not None and deadline < now

    def get_live(self, field: bytes, now: int) -> bytes | None:
        """The field's value as a command reads it: None if absent or past its deadline."""
        value = self.get(field)
        if value is not None and self._ttls and self.expired(field, now):
            return None
        return value

    def has_live(self, field: bytes, now: int) -> bool:
        return field in self and not self.expired(field, now)

    def any_expired(self, now: int) -> bool:
        """Whether some held field is past its deadline (stale heap entries are dropped on
        the way: the soonest valid entry decides)."""
        ttls = self._ttls
        heap = self._deadlines
        if not ttls or not heap:
            return False
        while heap:
            deadline, field = heap[0]
            if ttls.get(field) == deadline:
                return deadline < now
            heappop(heap)
        return False

    def live(self, now: int) -> HashValue:
        """The hash as a whole-hash read sees it: itself, or, when some fields are past
        their deadline, a copy without them (same encoding; Valkey's hashTypeDup, which
        COPY uses, also leaves them out)."""
        if not self.any_expired(now):
            return self
        twin = self.copy()
        for field in [f for f, deadline in self.ttls.items() if deadline < now]:
            twin.delete(field)
        twin.rebuild_deadlines()
        return twin

    def encoding(self, state: Configured | None = None) -> bytes:
        """What OBJECT ENCODING answers: the encoding this hash has reached."""
        return HASHTABLE if self._hashtable else LISTPACK

    def is_packed(self) -> bool:
        """Whether the fields are held in the packed form (tests, the memory estimate)."""
        return self._packed is not None

    def copy(self) -> HashValue:
        """A deep copy with the same encoding, order and field TTLs (hashTypeDup)."""
        twin = HashValue()
        twin._packed = self._packed  # immutable: shared
        twin._count = self._count
        table = self._table
        twin._table = None if table is None else dict(table)
        twin._hashtable = self._hashtable
        ttls, heap = self._ttls, self._deadlines
        twin._ttls = None if ttls is None else dict(ttls)
        twin._deadlines = None if heap is None else list(heap)
        return twin

    def random_fields(self, count: int) -> list[bytes]:
        """`count` distinct fields (count < len), in iteration order, as Valkey samples
        a listpack (lpRandomPairsUnique)."""
        order = self.field_names()
        picked = sorted(random.sample(range(len(order)), count))
        return [order[i] for i in picked]

    # --- writing ---------------------------------------------------------------------

    def set(self, field: bytes, value: bytes, keep_ttl: bool = False) -> bool:
        """Store a field; True if it is new. Its TTL goes unless `keep_ttl`."""
        packed = self._packed
        if packed is not None:
            if len(value) <= PACKED_MAX_ITEM and len(field) <= PACKED_MAX_ITEM:
                pos = _find(packed, field)
                if pos >= 0:
                    at = pos + 1 + packed[pos]
                    self._packed = b"".join((packed[:at], _LENGTH[len(value)], value,
                                             packed[at + 1 + packed[at]:]))
                    return False
                if self._count < PACKED_MAX_FIELDS:
                    self._packed = packed + _pair(field, value)
                    self._count += 1
                    return True
            self._to_table()
        table = self._table
        assert table is not None
        size = len(table)
        table[field] = value
        created = len(table) != size  # one lookup: `field not in table` would be a second
        ttls = self._ttls
        if not created and not keep_ttl and ttls:
            ttls.pop(field, None)
        return created

    def delete(self, field: bytes) -> bool:
        packed = self._packed
        if packed is not None:
            pos = _find(packed, field)
            if pos < 0:
                return False
            at = pos + 1 + packed[pos]
            self._packed = packed[:pos] + packed[at + 1 + packed[at]:]
            self._count -= 1
            return True
        table = self._table
        if table is None or table.pop(field, None) is None:
            return False
        ttls = self._ttls
        if ttls:
            ttls.pop(field, None)
        return True

    def set_ttl(self, field: bytes, deadline: int) -> None:
        """Give an existing field a deadline; a hash with TTLs is a hashtable."""
        self.to_hashtable()
        ttls = self._ttls
        if ttls is None:
            ttls = self._ttls = {}
        ttls[field] = deadline
        heap = self._deadlines
        if heap is None:
            heap = self._deadlines = []
        heappush(heap, (deadline, field))
        if len(heap) > 2 * len(ttls) + 16:  # mostly stale: rebuilt from the TTLs
            self.rebuild_deadlines()

    def rebuild_deadlines(self) -> None:
        """The heap anew from the TTLs."""
        heap = [(deadline, field) for field, deadline in self.ttls.items()]
        heapify(heap)
        self._deadlines = heap

    def persist(self, field: bytes) -> bool:
        """Drop a field's TTL; False if it had none."""
        ttls = self._ttls
        return ttls is not None and ttls.pop(field, None) is not None

    def expire_fields(self, now: int, limit: int = 0) -> list[bytes]:
        """Active expiry: delete the fields whose deadline has passed (at most `limit`
        of them, if given), soonest first; return them."""
        ttls = self._ttls
        heap = self._deadlines
        if not ttls or heap is None:
            self._deadlines = None
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

    def to_hashtable(self) -> None:
        """Convert to the hashtable encoding (once; never back)."""
        if not self._hashtable:
            self._hashtable = True
            self._to_table()

    def _to_table(self) -> None:
        """Hold the fields in a dict from now on, in the same order."""
        packed = self._packed
        if packed is not None:
            self._table = dict(_unpack(packed))
            self._packed = None
            self._count = 0

    def convert_for_write(self, args: list[bytes], max_entries: int, max_value: int) -> None:
        """hashTypeTryConversion before HSET/HMSET/HSETNX: convert if the pairs in
        `args` (duplicates counted) exceed the entry limit or any argument is too long."""
        if self._hashtable:
            return
        if len(args) // 2 > max_entries:
            self.to_hashtable()
            return
        for arg in args:
            if len(arg) > max_value:
                self.to_hashtable()
                return

    def convert_after_set(self, field: bytes, value: bytes, max_entries: int,
                          max_value: int) -> None:
        """hashTypeSet's checks: a field or value too long, or too many fields."""
        if not self._hashtable and (
            len(field) > max_value or len(value) > max_value or len(self) > max_entries
        ):
            self.to_hashtable()

    def settle_encoding(self, max_entries: int, max_value: int) -> None:
        """For a hash built whole (RESTORE, loading): the encoding its content needs."""
        if self._ttls or len(self) > max_entries or any(
            len(f) > max_value or len(v) > max_value for f, v in self.items()
        ):
            self.to_hashtable()
