"""A database's per-key table (its values, deadlines, access times): a dict that grows a
part at a time.

A dict grows by copying itself whole into a table twice its size, inside whichever insert
crosses the line: at a million keys that copy takes tens of milliseconds of one command,
and every other client waits. Valkey rehashes its table a bucket at a time for the same
reason. Here a table past SPLIT_AT keys is split once into SHARDS dicts by the key's hash;
after that each shard grows on its own, so a growth copies 1/SHARDS of the keys. A small
table stays one dict: an idle server's sixteen databases cost nothing.

Iteration order is shard by shard (Valkey's is its hash table's: neither is insertion)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # mypyc's native 64-bit int; plain int when run as Python
    from mypy_extensions import i64

# Final: compiled, a constant, not a module dictionary lookup on every call
SHARDS: Final = 256
SPLIT_AT: Final = 8192  # keys: splitting copies them once, well under a millisecond
_MISSING: Final[Any] = object()


class KeyHashes:
    """The hash of the key last asked about, for the tables that share this memo (a
    database's; SWAPDB may mix two databases' tables, which a memo of `hash()` does not
    mind): a command's lookups of one key (its value, deadline, access time, then its
    write) hash it once. Only the server's loop thread uses a table. Compiled, `hash()`
    boxes half of all hashes into a new int (those past mypyc's 63-bit tagged ints) only
    for `i64` to unbox it again: about as many instructions as the dict lookup the shard
    is for."""

    __slots__ = ("key", "h")

    def __init__(self) -> None:
        self.key: object = None  # kept alive by the memo: its address cannot be reused
        self.h: i64 = 0

    def of(self, key: object) -> i64:
        if key is self.key:
            return self.h
        h: i64 = hash(key)
        self.key = key
        self.h = h
        return h


class Table:
    """The mapping protocol of a dict over bytes keys (what the keyspace uses of it)."""

    def __init__(self, hashes: KeyHashes | None = None) -> None:
        self.hashes = KeyHashes() if hashes is None else hashes
        self.shards: list[dict[bytes, Any]] = [{}]
        # the whole table while it is one dict (None once split): no hash to compute
        self.one: dict[bytes, Any] | None = self.shards[0]
        # the shard of a key is its hash & mask, in native ints: half of all hashes do
        # not fit mypyc's tagged int, and a boxed & would cost more than the dict lookup
        self.mask: i64 = 0
        self.size = 0

    # --- reads ---------------------------------------------------------------------------

    def get(self, key: bytes, default: Any = None) -> Any:
        return self.shard(key).get(key, default)

    def __getitem__(self, key: bytes) -> Any:
        return self.shard(key)[key]

    def __contains__(self, key: object) -> bool:
        return key in self.shard(key)

    def __len__(self) -> int:
        return self.size

    def __bool__(self) -> bool:
        return self.size > 0

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.shards[0]) if self.mask == 0 else chain.from_iterable(self.shards)

    def keys(self) -> Iterator[bytes]:
        return self.__iter__()

    def values(self) -> Iterator[Any]:
        if self.mask == 0:
            return iter(self.shards[0].values())
        return chain.from_iterable(shard.values() for shard in self.shards)

    def items(self) -> Iterator[tuple[bytes, Any]]:
        if self.mask == 0:
            return iter(self.shards[0].items())
        return chain.from_iterable(shard.items() for shard in self.shards)

    # --- writes --------------------------------------------------------------------------

    def __setitem__(self, key: bytes, value: Any) -> None:
        shard = self.shard(key)
        before = len(shard)
        shard[key] = value
        if len(shard) != before:
            self.size += 1
            if self.size == SPLIT_AT and self.mask == 0:
                self._split()

    def put(self, key: bytes, value: Any) -> Any:
        """Store `value` (never None) at `key`; the value it replaces, or None."""
        shard = self.shard(key)
        old = shard.get(key)
        shard[key] = value
        if old is None:
            self.size += 1
            if self.size == SPLIT_AT and self.mask == 0:
                self._split()
        return old

    def replace(self, key: bytes, value: Any) -> None:
        """Store `value` at `key`, which holds one already: one dict store, no count."""
        self.shard(key)[key] = value

    def __delitem__(self, key: bytes) -> None:
        del self.shard(key)[key]
        self.size -= 1

    def pop(self, key: bytes, default: Any = _MISSING) -> Any:
        value = self.shard(key).pop(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        self.size -= 1
        return value

    def setdefault(self, key: bytes, default: Any) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            self[key] = value = default
        return value

    def clear(self) -> None:
        self.shards = [{}]
        self.one = self.shards[0]
        self.mask = 0
        self.size = 0

    def shard(self, key: object) -> dict[bytes, Any]:
        one = self.one
        if one is not None:
            return one
        return self.shards[self.hashes.of(key) & self.mask]

    def shard_index(self, key: object) -> i64:
        """The index in `shards` of `key`'s shard (0 while the table is one dict)."""
        if self.one is not None:
            return 0
        return self.hashes.of(key) & self.mask

    def _split(self) -> None:
        """From one dict to SHARDS, once: later growths copy one shard each."""
        whole = self.shards[0]
        shards: list[dict[bytes, Any]] = [{} for _ in range(SHARDS)]
        self.shards = shards
        self.one = None
        self.mask = SHARDS - 1
        for key, value in whole.items():
            self.shard(key)[key] = value

    def __repr__(self) -> str:
        return f"Table({dict(self.items())!r})"
