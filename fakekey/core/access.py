"""Each key's last access, for OBJECT IDLETIME, DEBUG OBJECT, LRU eviction and an RDB
file's idle times: Valkey's LRU clock, which ticks in seconds, kept in a form that costs a
key written once and never read (most of a loaded dataset) nothing of its own.

A stamp is the access time in ms down to the second, one int shared by every key stamped
within that second (`stamp`). A key read, overwritten or TOUCHed has an entry of its own
in `touched`, which always wins. A key just added needs none: a shard of the keyspace (a
dict, fakekey/core/table.py) keeps its keys in the order they were added, so the keys of
one shard added within one second form a run, and only the run's first key is marked with
the second (`marks`); any other key of the run was added in the second of the last mark
before it. Reading such a key's time walks its shard once and gives every key in it an
entry (`_settle`), so the walk is paid once a shard, not once a read. A removed mark passes
to the next key of its run.

Runs start once the keyspace's table has split into its shards (8,192 keys): a split
reorders the keys, and below that size the entries cost little. Valkey keeps the same 24
bits in every object; here a string key costs ~145 bytes instead of ~193
(bench/memory.py).
"""

from __future__ import annotations

from typing import Any

from fakekey.core.table import SHARDS, Table


class AccessTimes:
    """The access times of one database's keys, `data` its table of values: `get(key)`
    reads one (ms), `[key] = ms` sets one outright."""

    __slots__ = ("data", "touched", "marks", "runs", "second", "shared")

    def __init__(self, data: Table) -> None:
        self.data = data
        self.touched = Table(data.hashes)  # key -> stamp, for keys accessed since they were added
        self.marks: dict[bytes, Any] = {}  # a run's first key -> the run's stamp
        self.runs: list[Any] | None = None  # each shard's last run's stamp (None: none open)
        self.second = -1  # the second `shared` stands for
        # Any, never int: stamps are compared by identity (`is not stamp`), and compiled
        # code boxes an int-typed value anew at each read, so no stamp would ever match
        self.shared: Any = 0

    # --- the write funnel and lookups ------------------------------------------------------

    def stamp(self, now: int) -> Any:
        """The stamp of an access at `now` (ms): shared while the second lasts."""
        second = now // 1000
        if second != self.second:
            self.second = second
            self.shared = second * 1000
        return self.shared

    def added(self, key: bytes, stamp: Any) -> None:
        """`key` was just added to `data`, at `stamp`."""
        data = self.data
        if data.one is not None:  # one dict (a split would reorder it): an entry of its own
            self.touched[key] = stamp
            return
        runs = self.runs
        if runs is None:
            runs = self.runs = [None] * SHARDS
        shard = data.shard_index(key)
        if runs[shard] is not stamp:  # the first key of this shard in this second
            runs[shard] = stamp
            self.marks[key] = stamp

    def removing(self, key: bytes) -> None:
        """`key` is about to leave `data` (still there): its times go."""
        self.touched.pop(key, None)
        marks = self.marks
        if marks:
            stamp = marks.pop(key, None)
            if stamp is not None:
                self._pass_mark(key, stamp)

    def _pass_mark(self, key: bytes, stamp: Any) -> None:
        """A run's first key leaves: the next key of its shard starts the run, unless it
        starts one of its own; the shard's last key leaving closes the shard's run."""
        data = self.data
        shard = data.shard_index(key)
        following = False
        for other in data.shards[shard]:
            if following:
                if other not in self.marks:
                    self.marks[other] = stamp
                return
            following = other == key
        runs = self.runs
        if runs is not None:
            runs[shard] = None

    # --- reads -----------------------------------------------------------------------------

    def get(self, key: bytes, default: Any = None) -> Any:
        """`key`'s access time in ms, or `default` if it has none (not in `data`)."""
        stamp = self.touched.get(key)
        if stamp is None and self.marks and key in self.data:
            self._settle(self.data.shard_index(key))
            stamp = self.touched.get(key)
        return default if stamp is None else stamp

    def __setitem__(self, key: bytes, ms: int) -> None:
        """An access time given outright (TOUCH, RESTORE's IDLETIME, an RDB file's)."""
        self.touched[key] = ms

    def settled(self) -> Table:
        """Every key's time in one table (an RDB save's walk): each shard settled first."""
        self.settle_all()
        return self.touched

    def settle_all(self) -> None:
        if self.marks:
            for shard in range(len(self.data.shards)):
                self._settle(shard)

    def _settle(self, shard: int) -> None:
        """Give every key of one shard of `data` its own entry (its run's stamp)."""
        marks = self.marks
        touched = self.touched
        stamp: Any = None
        for key in self.data.shards[shard]:
            mark = marks.pop(key, None)
            if mark is not None:
                stamp = mark
            if stamp is not None:
                touched.setdefault(key, stamp)
        runs = self.runs
        if runs is not None:
            runs[shard] = None

    def clear(self) -> None:
        """`data` was emptied."""
        self.touched.clear()
        self.marks = {}
        self.runs = None
