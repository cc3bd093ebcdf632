"""Which hashes have (or had) field TTLs, so that the cron's active expiry of fields skips
the keyspace scan while none has one. A weak set of stand-ins, one per such hash, each
sharing its hash's `ttls` dict and living as long as the hash (only the hash holds it):
the hash itself may be compiled (fakekey/compiled.py), and a compiled class takes no weak
reference. This module stays interpreted for that reason."""

from __future__ import annotations

import weakref


class Standin:
    __slots__ = ("ttls", "__weakref__")

    def __init__(self, ttls: dict[bytes, int]) -> None:
        self.ttls = ttls


_VOLATILE: weakref.WeakSet[Standin] = weakref.WeakSet()


def standin(ttls: dict[bytes, int]) -> Standin:
    """A new stand-in for the hash whose field TTLs are `ttls`, counted from now on."""
    mark = Standin(ttls)
    _VOLATILE.add(mark)
    return mark


def any_left() -> bool:
    """Some hash still alive has a field with a TTL."""
    return any(mark.ttls for mark in _VOLATILE)
