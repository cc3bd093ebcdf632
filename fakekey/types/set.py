"""The set type: members kept in Valkey's order, with the encoding tracked as Valkey
converts it.

Valkey's encoding of a set depends on its history, not only on its contents: a set is
created intset/listpack/hashtable from its first member and a size hint, converts upward
as members arrive (intset -> listpack -> hashtable, or straight to hashtable), and never
converts back when members leave. `SetValue` follows the same transitions so OBJECT
ENCODING and the member order match:

- intset: members iterate in ascending numeric order;
- listpack: members iterate in insertion order (removals keep the others' order);
- hashtable: Valkey's order is unspecified; here it stays insertion order.

Representation, known only here. A small intset or listpack set is one packed `bytes`
(`_packed`): its members in iteration order, each a length byte and the data, scanned
linearly as Valkey scans its listpack or intset; that costs the data plus a byte a
member, where a dict of bytes objects costs seven times a typical small set's data. A
set leaves the packed form for `_Members` (a dict and a log), never back, when it
converts to hashtable, or while still compact if it outgrows a linear scan
(`PACKED_MAX_MEMBERS`, thresholds raised by CONFIG) or a member outgrows its length byte.

In `_Members`, members carry an increasing sequence number (their insertion order, and a
log random picks draw from). SSCAN walks a hashtable set as SCAN walks the keys
(commands/scan.py), in an order it keeps in `scan_order`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any, Final

from fakekey.codecs.numbers import try_int
from fakekey.types.packed import LENGTH_BYTE, MAX_ITEM

if TYPE_CHECKING:
    from fakekey.types.value import Configured

INTSET = "intset"
LISTPACK = "listpack"
HASHTABLE = "hashtable"

_INTSET_HARD_LIMIT = 1 << 30  # Valkey caps intsets at 1G entries whatever the config says
_MIN_DEAD_BEFORE_COMPACT = 16

# The packed form's bounds (Valkey's default set-max-listpack-entries is inside).
PACKED_MAX_MEMBERS: Final = 128
PACKED_MAX_ITEM: Final = MAX_ITEM
_LENGTH: Final = LENGTH_BYTE  # read per write: a Final name, not a module lookup


class SetLimits:
    """The encoding thresholds of `state.config`, read once per command (a plain class:
    see ZLimits)."""

    __slots__ = ("intset_entries", "listpack_entries", "listpack_value")

    def __init__(self, intset_entries: int, listpack_entries: int, listpack_value: int) -> None:
        self.intset_entries = intset_entries
        self.listpack_entries = listpack_entries
        self.listpack_value = listpack_value

    @classmethod
    def of(cls, state: Configured) -> SetLimits:
        config = state.config
        return cls(
            min(config["set-max-intset-entries"], _INTSET_HARD_LIMIT),
            config["set-max-listpack-entries"],
            config["set-max-listpack-value"],
        )


def is_integer(member: bytes) -> bool:
    """Whether Valkey stores `member` as an integer (string2ll accepts it)."""
    return try_int(member) is not None


# --- the packed form -------------------------------------------------------------------------


def _find(packed: bytes, member: bytes) -> int:
    """Where the member's entry starts in a packed set (its length byte), or -1."""
    size = len(member)
    last = member[size - 1] if size else 0
    pos = 0
    end = len(packed)
    while pos < end:
        length = packed[pos]
        if length == size and (size == 0 or packed[pos + size] == last) and \
                packed[pos + 1:pos + 1 + size] == member:
            return pos
        pos += length + 1
    return -1


def _unpack(packed: bytes) -> list[bytes]:
    members = []
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 1 + packed[pos]
        members.append(packed[pos + 1:at])
        pos = at
    return members


def _entry(member: bytes) -> bytes:
    return _LENGTH[len(member)] + member


def _numeric_place(packed: bytes, number: int) -> int:
    """Where an integer goes in a packed intset (ascending)."""
    pos = 0
    end = len(packed)
    while pos < end:
        at = pos + 1 + packed[pos]
        if int(packed[pos + 1:at]) > number:
            return pos
        pos = at
    return end


def _member_at(packed: bytes, index: int) -> bytes:
    pos = 0
    for _ in range(index):
        pos += packed[pos] + 1
    return packed[pos + 1:pos + 1 + packed[pos]]


class _Members:
    """A set's members out of the packed form: a dict of member -> sequence number (dict
    order = seq order) and an append-only log of (member, seq) for random picks, an entry
    live while the dict still holds its seq."""

    HOLDS_ELEMENTS = True  # lazy freeing takes it apart a slice at a time (memory/lazyfree.py)
    __slots__ = ("seq", "log", "log_seqs", "dead", "next", "sorted")

    def __init__(self, order: list[bytes]) -> None:
        self.seq: dict[bytes, int] = {}
        self.log: list[bytes] = []
        self.log_seqs: list[int] = []
        self.dead = 0
        self.next = 1  # the next member's sequence number
        self.sorted: list[bytes] | None = None  # intset order, cached until a change
        self.resequence(order)

    def copy(self) -> _Members:
        twin = _Members([])
        twin.seq = dict(self.seq)
        twin.log = list(self.log)
        twin.log_seqs = list(self.log_seqs)
        twin.dead = self.dead
        twin.next = self.next
        return twin

    def insert(self, member: bytes) -> None:
        seq = self.next
        self.next = seq + 1
        self.seq[member] = seq
        self.log.append(member)
        self.log_seqs.append(seq)
        self.sorted = None

    def insert_new(self, members: list[bytes]) -> int:
        """`insert` those of `members` not held yet (a repeat counts once); how many."""
        seqs = self.seq
        log = self.log
        log_seqs = self.log_seqs
        first = seq = self.next
        for member in members:
            if member not in seqs:
                seqs[member] = seq
                log.append(member)
                log_seqs.append(seq)
                seq += 1
        if seq != first:
            self.next = seq
            self.sorted = None
        return seq - first

    def remove(self, member: bytes) -> bool:
        if self.seq.pop(member, None) is None:
            return False
        self.sorted = None
        self.dead += 1
        if self.dead > _MIN_DEAD_BEFORE_COMPACT and self.dead > len(self.seq):
            self.compact()
        return True

    def ordered(self, numeric: bool) -> list[bytes]:
        if numeric:
            if self.sorted is None:
                self.sorted = sorted(self.seq, key=int)
            return self.sorted
        return list(self.seq)

    def random_member(self) -> bytes:
        log, seqs, live = self.log, self.log_seqs, self.seq
        while True:
            i = random.randrange(len(log))
            member = log[i]
            if live.get(member) == seqs[i]:
                return member

    def resequence(self, order: list[bytes]) -> None:
        """Give the members new increasing sequence numbers in `order`."""
        start = self.next
        self.seq = {member: start + i for i, member in enumerate(order)}
        self.next = start + len(order)
        self.log = list(order)
        self.log_seqs = list(self.seq.values())
        self.dead = 0
        self.sorted = None

    def compact(self) -> None:
        """Drop the log's dead entries; dict order is seq order, so the log stays sorted."""
        self.log = list(self.seq)
        self.log_seqs = list(self.seq.values())
        self.dead = 0


class SetValue:
    """A set of byte strings with Valkey's encoding transitions and iteration order."""

    TYPE_NAME = "set"
    __slots__ = ("enc", "_packed", "_count", "_members", "scan_order")

    def __init__(self, enc: str = INTSET) -> None:
        self.enc = enc
        # the packed form (intset and listpack only), or None once _members holds them
        self._packed: bytes | None = None if enc == HASHTABLE else b""
        self._count = 0  # the members in `_packed`
        self._members: _Members | None = _Members([]) if enc == HASHTABLE else None
        self.scan_order: list[bytes] | None = None  # SSCAN's member order, per iteration

    @classmethod
    def create(cls, first: bytes, size_hint: int, limits: SetLimits) -> SetValue:
        """An empty set able to hold `first`, sized for `size_hint` members (setTypeCreate)."""
        if size_hint <= limits.intset_entries and is_integer(first):
            return cls(INTSET)
        if size_hint <= limits.listpack_entries:
            return cls(LISTPACK)
        return cls(HASHTABLE)

    # --- reading ---------------------------------------------------------------------

    def __len__(self) -> int:
        members = self._members
        return self._count if members is None else len(members.seq)

    def __contains__(self, member: object) -> bool:
        packed = self._packed
        if packed is None:
            members = self._members
            return members is not None and member in members.seq
        return isinstance(member, bytes) and _find(packed, member) >= 0

    def __iter__(self) -> Any:
        return iter(self.ordered())

    def ordered(self) -> list[bytes]:
        """The members in Valkey's iteration order. The caller must not modify the list."""
        packed = self._packed
        if packed is not None:
            return _unpack(packed)
        members = self._members
        assert members is not None
        return members.ordered(self.enc == INTSET)

    def encoding(self, state: Configured | None = None) -> bytes:
        """What OBJECT ENCODING answers: the encoding this set has reached."""
        return self.enc.encode()

    def is_packed(self) -> bool:
        """Whether the members are held in the packed form (tests)."""
        return self._packed is not None

    def copy(self) -> SetValue:
        """A deep copy with the same encoding and order (setTypeDup)."""
        twin = SetValue(self.enc)
        twin._packed = self._packed  # immutable: shared
        twin._count = self._count
        members = self._members
        twin._members = None if members is None else members.copy()
        return twin

    def random_member(self) -> bytes:
        """A uniformly random member of a non-empty set."""
        packed = self._packed
        if packed is not None:
            return _member_at(packed, random.randrange(self._count))
        members = self._members
        assert members is not None
        return members.random_member()

    # --- writing ---------------------------------------------------------------------

    def add(self, member: bytes, limits: SetLimits) -> bool:
        """Add one member, converting the encoding as Valkey does; False if present."""
        if member in self:
            return False
        if self.enc == INTSET:
            if is_integer(member):
                self._insert(member)
                if len(self) > limits.intset_entries:
                    self._convert(HASHTABLE)
                return True
            self._convert(LISTPACK if self._intset_fits_listpack(member, limits) else HASHTABLE)
        elif self.enc == LISTPACK and (
            len(self) >= limits.listpack_entries or len(member) > limits.listpack_value
        ):
            self._convert(HASHTABLE)
        self._insert(member)
        return True

    def add_all(self, members: list[bytes], limits: SetLimits) -> int:
        """`add` each of `members`; how many were new. A hashtable adds them in one loop
        (a SADD of a million members spent half its time in the per-member calls); an
        intset or listpack, packed or not, may convert on the way."""
        held = self._members
        if self.enc != HASHTABLE or held is None:
            added = 0
            for member in members:
                if self.add(member, limits):
                    added += 1
            return added
        return held.insert_new(members)

    def remove(self, member: bytes) -> bool:
        """Remove one member; False if absent. The encoding never converts back."""
        packed = self._packed
        if packed is None:
            members = self._members
            return members is not None and members.remove(member)
        pos = _find(packed, member)
        if pos < 0:
            return False
        self._packed = packed[:pos] + packed[pos + 1 + packed[pos]:]
        self._count -= 1
        return True

    def grow_for(self, size_hint: int, limits: SetLimits) -> None:
        """Before adding `size_hint` members: go hashtable if that many cannot fit
        (setTypeMaybeConvert; the hint counts arguments, duplicates included)."""
        if (self.enc == LISTPACK and size_hint > limits.listpack_entries) or (
            self.enc == INTSET and size_hint > limits.intset_entries
        ):
            self._convert(HASHTABLE)

    def to_intset_if_fits(self, limits: SetLimits) -> None:
        """For a set known to hold only integers: become an intset if small enough."""
        if self.enc != INTSET and len(self) <= limits.intset_entries:
            order = sorted(self.ordered(), key=int)
            self.enc = INTSET
            if self._packed is not None:
                self._packed = b"".join(map(_entry, order))
            else:
                members = self._members
                assert members is not None
                members.sorted = None

    # --- internals (the loaders use _insert and _convert) ------------------------------

    def _insert(self, member: bytes) -> None:
        """Add a member known to be absent, without a conversion of the encoding."""
        packed = self._packed
        if packed is not None:
            if self._count < PACKED_MAX_MEMBERS and len(member) <= PACKED_MAX_ITEM:
                if self.enc == INTSET:
                    at = _numeric_place(packed, int(member))
                    self._packed = b"".join((packed[:at], _LENGTH[len(member)], member, packed[at:]))
                else:
                    self._packed = packed + _entry(member)
                self._count += 1
                return
            self._unpack()
        members = self._members
        assert members is not None
        members.insert(member)

    def _unpack(self) -> None:
        """Hold the members in `_Members` from now on, in the same order."""
        packed = self._packed
        if packed is not None:
            self._members = _Members(_unpack(packed))
            self._packed = None
            self._count = 0

    def _intset_fits_listpack(self, member: bytes, limits: SetLimits) -> bool:
        """Valkey's check when a non-integer joins an intset: listpack, or hashtable."""
        count = len(self)
        # The longest decimal form is at one end of the range, so this is Valkey's
        # max(digits(min), digits(max)).
        longest = max(map(len, self.ordered()), default=0)
        return (
            count < limits.listpack_entries
            and len(member) <= limits.listpack_value
            and longest <= limits.listpack_value
        )

    def _convert(self, enc: str) -> None:
        if enc == HASHTABLE:
            self._unpack()
        members = self._members
        if self.enc == INTSET and members is not None:
            # Leaving intset: the members keep the ascending order they had as integers
            # (a packed intset already holds them so).
            members.resequence(members.ordered(True))
        self.enc = enc
