"""SCAN's order of a database's keys, kept from one iteration to the next, so that
starting an iteration costs what Valkey's does (nothing) instead of a sort of the whole
keyspace (0.4 s at a million keys).

Once a database has been scanned, it keeps `main`, its keys sorted by position
(commands/scan.py), and `extra`, the keys added since, sorted too: every write of a new
key appends it to `Database.scan_added` (fakekey/core/keyspace.py), folded into `extra` at
the next SCAN. Deleted keys stay until a rebuild (pages skip them), so the two orders
always hold every live key at its position, and any iteration, whenever it began, meets
every key present throughout it.

Sorting is done in slices between event-loop turns: keys are dealt into 256 bins by
their position's top bits, then each bin is sorted on its own turn, and the bins, in
order, make the new `main`. A first SCAN of a big keyspace answers empty pages (with a
cursor that stays at the start) until its order is ready; `main` is rebuilt the same way
when `extra` or the deleted keys grow too many, the old order serving meanwhile."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final

from fakekey.commands.scan import HASH_OFFSET, hash_order

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database

_perf_counter_ns: Final = time.perf_counter_ns
SORT_AT_ONCE = 50_000  # keys sorted in one go (about 20 ms); more are sorted in slices
SLICE_NS = 2_000_000  # the longest a slice of sorting holds the loop
BIN_SHIFT = 56  # 256 bins, by a position's top 8 bits
DEAL_STEP = 1024  # keys dealt between two looks at the clock


class Build:
    """A sort of a snapshot of the keys, in slices: dealt into bins, then each sorted."""

    __slots__ = ("keys", "bins", "sorted_bins", "added")

    def __init__(self, keys: list[bytes]) -> None:
        self.keys = keys  # still to deal
        self.bins: list[list[bytes]] = [[] for _ in range(1 << (64 - BIN_SHIFT))]
        self.sorted_bins = 0
        self.added: list[bytes] = []  # keys added since the snapshot

    def step(self, deadline: int) -> bool:
        """Work until the deadline; True once the order is complete."""
        keys, bins = self.keys, self.bins
        while keys:
            for key in keys[-DEAL_STEP:]:
                bins[(hash(key) + HASH_OFFSET) >> BIN_SHIFT].append(key)
            del keys[-DEAL_STEP:]
            if _perf_counter_ns() > deadline:
                return False
        while self.sorted_bins < len(bins):
            bins[self.sorted_bins].sort(key=hash)
            self.sorted_bins += 1
            if _perf_counter_ns() > deadline:
                return False
        return True

    def result(self) -> list[bytes]:
        return [key for sorted_bin in self.bins for key in sorted_bin]


class KeyOrder:
    """One database's keys in SCAN order: `main` and `extra`, and a rebuild under way."""

    __slots__ = ("db", "data", "main", "extra", "build", "scheduled")

    def __init__(self, db: Database) -> None:
        self.db = db
        self.data = db.data  # the dict it orders (SWAPDB and FLUSH replace a database's)
        self.main: list[bytes] | None = None  # None until the first build ends
        self.extra: list[bytes] = []
        self.build: Build | None = None
        self.scheduled = False
        db.scan_added = []
        if len(db.data) <= SORT_AT_ONCE or db.state.running_loop() is None:
            self.main = hash_order(db.data)
        else:
            self._start_build()

    def orders(self, now: bool = False) -> list[list[bytes]] | None:
        """The sorted orders that together hold every live key; None while the first
        build is under way, unless `now` (inside a script or EXEC, which hold the loop:
        the build is finished at once)."""
        self._fold_added()
        if self.main is None and now:
            self._finish_build()
        if self.main is None:
            return None
        if self.build is None and self._worth_rebuilding():
            self._start_build()
        return [self.main, self.extra] if self.extra else [self.main]

    def _fold_added(self) -> None:
        added = self.db.scan_added
        if not added:
            return
        self.db.scan_added = []
        self.extra = sorted(self.extra + added, key=hash)
        if self.build is not None:
            self.build.added += added

    def _worth_rebuilding(self) -> bool:
        main = self.main
        assert main is not None
        held = len(main) + len(self.extra)
        return len(self.extra) > max(1024, len(main) // 8) or held > 2 * len(self.data) + 1024

    def _start_build(self) -> None:
        if len(self.data) <= SORT_AT_ONCE or self.db.state.running_loop() is None:
            self.main, self.extra = hash_order(self.data), []
            return
        self.build = Build(list(self.data))
        self._schedule()

    def _schedule(self) -> None:
        loop = self.db.state.running_loop()
        if loop is not None and not self.scheduled:
            self.scheduled = True
            loop.call_soon(self._step)

    def _step(self) -> None:
        self.scheduled = False
        build = self.build
        if build is None or self.db.scan_order is not self:  # replaced (SWAPDB, FLUSH)
            return
        if not build.step(_perf_counter_ns() + SLICE_NS):
            self._schedule()
            return
        self._install(build)

    def _finish_build(self) -> None:
        build = self.build
        assert build is not None
        build.step(1 << 62)
        self._install(build)

    def _install(self, build: Build) -> None:
        self._fold_added()
        self.main = build.result()
        self.extra = sorted(build.added, key=hash)
        self.build = None


def key_orders(db: Database, now: bool) -> list[list[bytes]] | None:
    """The database's SCAN orders (made on its first SCAN); None while being built,
    unless `now`."""
    order: Any = db.scan_order
    if order is None or order.data is not db.data:
        order = db.scan_order = KeyOrder(db)
    return order.orders(now)
