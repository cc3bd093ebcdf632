"""Keys of a dict drawn at random, or walked round with a cursor, at O(1) expected cost
each: RANDOMKEY draws from a database's keys, active expiry walks its volatile keys.

A dict has no random access, so a list keeps the keys as they are added. Removals do not
touch it: an entry whose key has gone from the dict (or that repeats a key added again) is
dropped when a draw or the walk meets it. The list is rebuilt from the dict when it holds
more than twice as many entries as the dict has keys, so at least half the entries are
live, and each rebuild is paid for by the additions or removals that came before it."""

from __future__ import annotations

from collections.abc import Collection
from random import randrange

SLACK = 64  # entries a small dict may leave stale before a rebuild


class SampledKeys:
    """The draw list of one dict's keys. Every key of the dict is in the list: whoever adds
    a key to the dict calls `added`."""

    __slots__ = ("slots", "cursor")

    def __init__(self) -> None:
        self.slots: list[bytes] = []
        self.cursor = 0  # where `walk` goes on from

    def added(self, key: bytes, live: Collection[bytes]) -> None:
        """`key` joined `live`."""
        slots = self.slots
        slots.append(key)
        if len(slots) > 2 * len(live) + SLACK:
            self.rebuild(live)

    def rebuild(self, live: Collection[bytes]) -> None:
        self.slots = list(live)
        self.cursor = 0

    def clear(self) -> None:
        self.slots = []
        self.cursor = 0

    def draw(self, live: Collection[bytes]) -> bytes | None:
        """A key of `live` at random; None when it is empty."""
        if not live:
            return None
        if len(self.slots) > 2 * len(live) + SLACK:  # removals left mostly stale entries
            self.rebuild(live)
        slots = self.slots
        while slots:
            i = randrange(len(slots))
            key = slots[i]
            if key in live:
                return key
            self._drop(i)
        self.rebuild(live)  # not reached while every key added was announced
        return self.draw(live) if self.slots else None

    def walk(self, live: Collection[bytes], count: int) -> list[bytes]:
        """Up to `count` keys of `live` from the cursor on, going round the list: each key
        is met once a round (a key added twice may be met twice)."""
        if len(self.slots) > 2 * len(live) + SLACK:
            self.rebuild(live)
        slots = self.slots
        wanted = min(count, len(live))
        found: list[bytes] = []
        i = self.cursor
        while len(found) < wanted and slots:
            if i >= len(slots):
                i = 0
            key = slots[i]
            if key in live:
                found.append(key)
                i += 1
            else:
                self._drop(i)  # the last entry moves into place: look at it next
        self.cursor = i
        return found

    def _drop(self, i: int) -> None:
        slots = self.slots
        last = slots.pop()
        if i < len(slots):
            slots[i] = last

    def __len__(self) -> int:
        return len(self.slots)
