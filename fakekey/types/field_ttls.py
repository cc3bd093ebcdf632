"""Which hashes of one server have (or had) field TTLs, so that the cron's active expiry of
fields skips the keyspace scan while none has one. A weak set of stand-ins, one per such
hash, each sharing its hash's `ttls` dict and living as long as the hash (only the hash
holds it): the hash itself may be compiled (fakekey/compiled.py), and a compiled class
takes no weak reference. This module stays interpreted for that reason. Each server has
its own set (`ServerState.volatile_hashes`): a hash counts where it is stored."""

from __future__ import annotations

import weakref


class Standin:
    __slots__ = ("ttls", "__weakref__")

    def __init__(self, ttls: dict[bytes, int]) -> None:
        self.ttls = ttls


class VolatileHashes:
    """One server's stand-ins."""

    __slots__ = ("_marks",)

    def __init__(self) -> None:
        self._marks: weakref.WeakSet[Standin] = weakref.WeakSet()

    def add(self, mark: Standin) -> None:
        self._marks.add(mark)

    def any_left(self) -> bool:
        """Some hash still alive has a field with a TTL."""
        return any(mark.ttls for mark in self._marks)
