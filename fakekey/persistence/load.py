"""Loading a snapshot file into a server's state: Valkey's RDB file (rdbfile.py), or fakekey's
earlier format (snapshot.py, magic FKSNAP: files written before fakekey wrote RDB, and the
append-only log's base files), told apart by their first bytes.

A file is read and checked whole before anything is installed, so a refused file
(LoadError) leaves the state as it was.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fakekey.memory import lfu
from fakekey.persistence import rdb, rdbfile
from fakekey.persistence.snapshot import Loaded, LoadError, parse_snapshot, usage_kind

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

_SNAPSHOT_MAGIC_AT = slice(8, 14)  # after the first frame's length and CRC (snapshot.py)


@dataclass
class Counts:
    loaded: int = 0
    expired: int = 0


@dataclass
class Parsed:
    """A snapshot file read whole and checked: Valkey's RDB, or fakekey's former format."""

    path: str
    rdb: rdbfile.Contents | None = None
    former: Loaded | None = None

    def libraries(self) -> list[bytes]:
        return self.rdb.libraries if self.rdb is not None else self.former.libraries if self.former else []

    def stored_keys(self) -> list[tuple[int, bytes]]:
        """(database, key) of every key the file holds."""
        if self.rdb is not None:
            return [(index, key) for index, part in self.rdb.dbs.items() for key in part.values]
        return [(index, key) for index, key, _, _ in self.former.keys] if self.former else []


def is_fakekey_snapshot(data: bytes) -> bool:
    return data[_SNAPSHOT_MAGIC_AT] == b"FKSNAP"


def read_file(path: str) -> bytes | None:
    """The file's bytes; None when there is none. Any other error refuses."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise LoadError(f"Fatal error: can't open the RDB file {path} for reading: {err.strerror}") from None


def load_file(state: ServerState, path: str, data: bytes, drop_expired: bool,
              announce_old_format: bool = True) -> Counts:
    """Install the keys and libraries of a snapshot file of either format.
    `drop_expired`: keys whose deadline has passed are counted, not loaded."""
    return install(state, parse_file(state, path, data, announce_old_format), drop_expired)


def parse_file(state: ServerState, path: str, data: bytes, announce_old_format: bool = True) -> Parsed:
    """The file read whole and checked (LoadError if it is not whole and sound)."""
    if is_fakekey_snapshot(data):
        if announce_old_format:
            log.warning("%s is a snapshot in fakekey's former format (FKSNAP): it is loaded, and "
                        "the next save writes Valkey's RDB format in its place", path)
        with collector_paused():
            return Parsed(path, former=parse_snapshot(path, data))
    with collector_paused():
        return Parsed(path, rdb=rdbfile.parse_rdb(path, data, load_options(state)))


def install(state: ServerState, parsed: Parsed, drop_expired: bool, merge: bool = False) -> Counts:
    """Put a parsed file's keys and libraries in place. `merge`: a key the server holds
    already is replaced by the file's (DEBUG RELOAD MERGE)."""
    with collector_paused():
        if parsed.rdb is not None:
            return _install_rdb(state, parsed.path, parsed.rdb, drop_expired, merge)
        assert parsed.former is not None
        return _install_snapshot(state, parsed.path, parsed.former, drop_expired)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic collector off while a file's values are made: they all stay alive,
    and a million new containers would have it scan the growing heap again and again
    (a third of the load's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_options(state: ServerState) -> rdbfile.LoadOptions:
    config = state.config
    return rdbfile.LoadOptions(rdb.Limits.of(config), len(state.dbs), bool(config["rdbchecksum"]))


# --- Valkey's RDB --------------------------------------------------------------------------------


def _install_rdb(state: ServerState, path: str, contents: rdbfile.Contents, drop_expired: bool,
                 merge: bool) -> Counts:
    now = state.clock.now_ms()
    rdbfile.log_aux_fields(contents, now // 1000)
    create_libraries(state, path, contents.libraries)
    counts = Counts()
    kind = usage_kind(state)
    for index, part in sorted(contents.dbs.items()):
        db = state.dbs[index]
        _install_keys(db, part, drop_expired, merge, now, counts)
        _restore_usage(db, part, kind, now)
    for key in contents.empty_keys[:10]:
        log.info("rdbLoadObject skipping empty key: %s", key.decode("utf-8", "replace"))
    if not contents.checked:
        log.info("RDB file was saved with checksum disabled: no check performed.")
    skipped = f", empty keys skipped: {len(contents.empty_keys)}" if contents.empty_keys else ""
    log.info("Done loading RDB, keys loaded: %d, keys expired: %d, all fields expired hashes: 0%s.",
             counts.loaded, counts.expired, skipped)
    return counts


def _install_keys(db: Database, part: rdbfile.LoadedDb, drop_expired: bool, merge: bool, now: int,
                  counts: Counts) -> None:
    deadlines = part.deadlines
    load = db.load
    for key, value in part.values.items():
        deadline = deadlines.get(key, -1) if deadlines else -1
        if drop_expired and deadline != -1 and deadline < now:
            counts.expired += 1  # expired keys are not resurrected (as Valkey's primary)
            continue
        if merge and key in db.data:
            db.delete(key, event=None)  # the file's key replaces it, deadline and all
        load(key, value, deadline, now)
        counts.loaded += 1


def _restore_usage(db: Database, part: rdbfile.LoadedDb, kind: str, now: int) -> None:
    """objectSetLRUOrLFU: under an LFU policy the file's counters, under any other its
    idle times (the access time they imply)."""
    data = db.data
    if kind == "lfu":
        stamp = lfu.minutes(now) << 8
        for key, counter in part.freq.items():
            if key in data:
                db.lfu[key] = stamp | counter
        return
    for key, seconds in part.idle.items():
        if key in data:
            db.access[key] = now - seconds * 1000


def create_libraries(state: ServerState, path: str, codes: list[bytes]) -> None:
    if not codes:
        return
    from fakekey.scripting.libraries import LibraryError, libraries_of

    engine = libraries_of(state)
    for code in codes:
        try:
            engine.create(code, replace=True)
        except LibraryError as err:
            raise LoadError(f"{path}: Failed loading library, "
                            f"{err.message.decode(errors='replace')}") from None


# --- fakekey's former snapshot -------------------------------------------------------------------


def _install_snapshot(state: ServerState, path: str, loaded: Loaded, drop_expired: bool) -> Counts:
    create_libraries(state, path, loaded.libraries)
    now = state.clock.now_ms()
    counts = Counts()
    for index, key, deadline, value in loaded.keys:
        if index >= len(state.dbs):
            raise LoadError(f"{path}: key in database {index}, but there are {len(state.dbs)} databases")
        if drop_expired and 0 <= deadline < now:
            counts.expired += 1
            continue
        state.dbs[index].load(key, value, deadline, now)
        counts.loaded += 1
    return counts
