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

Members carry an increasing sequence number (their insertion order, and a log random
picks draw from). SSCAN walks a hashtable set as SCAN walks the keys (commands/scan.py),
in an order it keeps in `scan_order`.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from fakekey.codecs.numbers import try_int

if TYPE_CHECKING:
    from fakekey.types.value import Configured

INTSET = "intset"
LISTPACK = "listpack"
HASHTABLE = "hashtable"

_INTSET_HARD_LIMIT = 1 << 30  # Valkey caps intsets at 1G entries whatever the config says
_MIN_DEAD_BEFORE_COMPACT = 16


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


class SetValue:
    """A set of byte strings with Valkey's encoding transitions and iteration order."""

    TYPE_NAME = "set"
    __slots__ = ("enc", "_seq", "_log", "_log_seqs", "_dead", "_next", "_sorted", "scan_order")

    def __init__(self, enc: str = INTSET) -> None:
        self.enc = enc
        self._seq: dict[bytes, int] = {}  # member -> sequence number; dict order = seq order
        # Append-only log of (member, seq) in seq order; an entry is live while
        # _seq[member] still equals its seq. Serves random picks.
        self._log: list[bytes] = []
        self._log_seqs: list[int] = []
        self._dead = 0
        self._next = 1  # the next member's sequence number
        self._sorted: list[bytes] | None = None  # intset order, cached until a change
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
        return len(self._seq)

    def __contains__(self, member: object) -> bool:
        return member in self._seq

    def __iter__(self) -> Any:
        return iter(self.ordered())

    def ordered(self) -> list[bytes]:
        """The members in Valkey's iteration order. The caller must not modify the list."""
        if self.enc == INTSET:
            if self._sorted is None:
                self._sorted = sorted(self._seq, key=int)
            return self._sorted
        return list(self._seq)

    def encoding(self, state: Configured | None = None) -> bytes:
        """What OBJECT ENCODING answers: the encoding this set has reached."""
        return self.enc.encode()

    def copy(self) -> SetValue:
        """A deep copy with the same encoding and order (setTypeDup)."""
        twin = SetValue(self.enc)
        twin._seq = dict(self._seq)
        twin._log = list(self._log)
        twin._log_seqs = list(self._log_seqs)
        twin._dead = self._dead
        twin._next = self._next
        return twin

    def random_member(self) -> bytes:
        """A uniformly random member of a non-empty set."""
        log, seqs, live = self._log, self._log_seqs, self._seq
        while True:
            i = random.randrange(len(log))
            member = log[i]
            if live.get(member) == seqs[i]:
                return member

    # --- writing ---------------------------------------------------------------------

    def add(self, member: bytes, limits: SetLimits) -> bool:
        """Add one member, converting the encoding as Valkey does; False if present."""
        if member in self._seq:
            return False
        if self.enc == INTSET:
            if is_integer(member):
                self._insert(member)
                if len(self._seq) > limits.intset_entries:
                    self._convert(HASHTABLE)
                return True
            self._convert(LISTPACK if self._intset_fits_listpack(member, limits) else HASHTABLE)
        elif self.enc == LISTPACK and (
            len(self._seq) >= limits.listpack_entries or len(member) > limits.listpack_value
        ):
            self._convert(HASHTABLE)
        self._insert(member)
        return True

    def remove(self, member: bytes) -> bool:
        """Remove one member; False if absent. The encoding never converts back."""
        if self._seq.pop(member, None) is None:
            return False
        self._sorted = None
        self._dead += 1
        if self._dead > _MIN_DEAD_BEFORE_COMPACT and self._dead > len(self._seq):
            self._compact()
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
        if self.enc != INTSET and len(self._seq) <= limits.intset_entries:
            self.enc = INTSET
            self._sorted = None

    # --- internals -------------------------------------------------------------------

    def _insert(self, member: bytes) -> None:
        seq = self._next
        self._next = seq + 1
        self._seq[member] = seq
        self._log.append(member)
        self._log_seqs.append(seq)
        self._sorted = None

    def _intset_fits_listpack(self, member: bytes, limits: SetLimits) -> bool:
        """Valkey's check when a non-integer joins an intset: listpack, or hashtable."""
        count = len(self._seq)
        # The longest decimal form is at one end of the range, so this is Valkey's
        # max(digits(min), digits(max)).
        longest = max(map(len, self._seq), default=0)
        return (
            count < limits.listpack_entries
            and len(member) <= limits.listpack_value
            and longest <= limits.listpack_value
        )

    def _convert(self, enc: str) -> None:
        if self.enc == INTSET:
            # Leaving intset: the members keep the ascending order they had as integers.
            self._resequence(self.ordered())
        self.enc = enc
        self._sorted = None

    def _resequence(self, order: list[bytes]) -> None:
        """Give the members new increasing sequence numbers in `order`."""
        start = self._next
        self._seq = {member: start + i for i, member in enumerate(order)}
        self._next = start + len(order)
        self._log = list(order)
        self._log_seqs = list(self._seq.values())
        self._dead = 0

    def _compact(self) -> None:
        """Drop the log's dead entries; dict order is seq order, so the log stays sorted."""
        self._log = list(self._seq)
        self._log_seqs = list(self._seq.values())
        self._dead = 0
