"""Persistence as Valkey runs it: load at start, save rules, SAVE/BGSAVE, the append-only
log and its rewrite, the save at shutdown, and INFO persistence.

`dbfilename` is Valkey's RDB file (rdbfile.py); the log's base files are fakekey's own
snapshot format (snapshot.py), which also loads where an RDB file is expected (a file
saved before fakekey wrote RDB), once.

Background work (BGSAVE, BGREWRITEAOF) takes a point-in-time copy of the keyspace in one
step (`snapshot.copied_image`), then encodes it in slices of a few milliseconds between
event-loop turns and writes the file from a worker thread, so clients keep their service.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fakekey.memory.estimate import EXPIRE_ENTRY, quick_key_size
from fakekey.memory.eviction import STARTUP_MEMORY, used_memory
from fakekey.persistence import aof as aoflib
from fakekey.persistence import aof_manifest, rdb, rdbfile
from fakekey.persistence.aof import AofRead, AppendLog, CommandReplayer
from fakekey.persistence.codec import CorruptData
from fakekey.persistence.load import Parsed, install, load_file, parse_file, read_file
from fakekey.persistence.propagate import Propagation, propagation, stop_propagation
from fakekey.persistence.snapshot import (
    Image,
    LoadError,
    commit,
    copied_image,
    live_image,
    temp_name,
    write_file_atomically,
    write_temp,
)

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

SLICE_SECONDS = 0.004  # encoding work per event-loop turn in a background save
BGSAVE_RETRY_DELAY = 5  # seconds before a save rule retries after a failed save (Valkey's)


class Persistence:
    """`state.persistence`: what the server keeps on disk and how it is doing."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.bgsave_task: asyncio.Task[Any] | None = None
        self.bgsave_scheduled = False
        self.bgsave_started = 0.0
        self.last_bgsave_ok = True
        self.last_bgsave_try = 0
        self.last_bgsave_secs = -1
        self.dirty_at_bgsave = 0
        self.save_keys_total = 0
        self.rewrite_task: asyncio.Task[Any] | None = None
        self.rewrite_job: Any = None  # (image, now, base file name) of the running one
        self.pending_manifest: aof_manifest.Manifest | None = None  # a log turned on: named at its base
        self.rewrite_scheduled = False
        self.log_scheduled = False  # appendonly turned on inside EXEC: the log starts at the cron
        self.rewrite_started = 0.0
        self.rewrites = 0
        self.last_rewrite_ok = True
        self.rewrite_failures = 0
        self.last_rewrite_secs = -1
        self.manifest: aof_manifest.Manifest | None = None  # the log's, while it is on
        self.base_size = 0  # INFO's aof_base_size (Valkey's aof_rewrite_base_size)
        self.closed_size = 0  # the log's files before the incr file being written
        self.keys_loaded = 0
        self.keys_expired = 0
        self.loading = False  # replaying the log: FLUSHALL saves nothing then
        state.config.appliers["appendonly"] = self._apply_appendonly

    # --- paths -------------------------------------------------------------------------

    @property
    def config(self) -> Any:
        return self.state.config

    def snapshot_path(self) -> str:
        return os.path.join(self.config["dir"], self.config["dbfilename"])

    def save_rules(self) -> list[tuple[int, int]]:
        numbers = [int(n) for n in self.config["save"].split()]
        return list(zip(numbers[0::2], numbers[1::2], strict=True))

    # --- loading at start ----------------------------------------------------------------------

    def load(self) -> None:
        """Valkey's loadDataFromDisk: the append-only file when appendonly is on (created
        from the snapshot if there is none yet), else the snapshot. LoadError refuses."""
        if not (self.config["appendonly"] or self.save_rules() or self.config["dir"] != "."):
            # nothing asks for persistence: a stray dump.rdb in the working directory (a
            # real server's) never stops an embedded server from starting, but it is named
            if os.path.exists(self.snapshot_path()):
                log.warning("%s was not loaded: no save rule, appendonly or dir was given. Start "
                            "with a save rule (--save \"3600 1\"), --appendonly yes or --dir to "
                            "load it.", os.path.abspath(self.snapshot_path()))
            return
        started = time.monotonic()
        if self.config["appendonly"]:
            if self._load_aof():
                log.info("DB loaded from append only file: %.3f seconds", time.monotonic() - started)
                return
            self._load_snapshot(drop_expired=True)
            self._create_log()
            return
        if self._load_snapshot(drop_expired=True):
            log.info("DB loaded from disk: %.3f seconds", time.monotonic() - started)

    def _load_snapshot(self, drop_expired: bool, path: str | None = None, base: bool = False) -> bool:
        """The RDB file (or a snapshot of fakekey's former format), read whole and
        checked before anything is installed. False when there is no file."""
        path = path or self.snapshot_path()
        data = read_file(path)
        if data is None:
            return False
        counts = load_file(self.state, path, data, drop_expired, announce_old_format=not base)
        self.keys_loaded += counts.loaded
        self.keys_expired += counts.expired
        return True

    # --- loading the append-only file ------------------------------------------------------------

    def _load_aof(self) -> bool:
        """loadAppendOnlyFiles: the files the manifest names, every one read and checked
        before anything runs. False when there is no log (no manifest, or one naming
        nothing): the caller makes one."""
        path = aof_manifest.manifest_path(self.config)
        try:
            with open(path, "rb") as fh:
                text = fh.read()
        except FileNotFoundError:
            return False
        except OSError as err:
            raise LoadError(f"Fatal error: can't open the AOF manifest file {path} for reading: "
                            f"{err.strerror}") from None
        if aof_manifest.is_former(text):
            self._load_former(aoflib.parse_former_manifest(path, text))
            return True
        manifest = aof_manifest.parse_manifest(path, text)
        self.manifest = manifest
        if manifest.base is None and not manifest.incrs:
            return False
        parts = [self._read_part(f.name, f.kind, i == len(manifest.names()) - 1)
                 for i, f in enumerate(([manifest.base] if manifest.base else []) + manifest.incrs)]
        self.loading = True
        try:
            for part in parts:
                part.apply(self)
        finally:
            self.loading = False
        self._after_load()
        self._open_last_incr(manifest)
        return True

    def _read_part(self, name: str, kind: str, last: bool) -> LoadedPart:
        """One file of the log, read and checked (nothing is applied yet)."""
        path = os.path.join(aof_manifest.aof_dir(self.config), name)
        data = read_log_file(path, name)
        part = LoadedPart(name, path, kind, len(data))
        if not data:
            return part
        if data.startswith((b"REDIS", b"VALKEY")):  # an RDB base (or an old RDB preamble)
            try:
                part.rdb = parse_file(self.state, path, data, announce_old_format=False)
            except LoadError as err:
                raise LoadError(f"{err} (Error reading the RDB base file {name}, AOF loading "
                                "aborted)") from None
            return part
        try:
            part.resp = aoflib.parse_aof(name, data)
        except aoflib.BadFormat as err:
            raise LoadError(f"{path}: {err}") from None
        if part.resp.truncated_at is not None:
            self._check_cut(part, last)
        return part

    def _check_cut(self, part: LoadedPart, last: bool) -> None:
        """A cut end: refused unless it is the last file and aof-load-truncated is yes."""
        assert part.resp is not None
        for note in part.resp.notes:
            log.warning("%s", note)
        if not self.config["aof-load-truncated"]:
            raise LoadError(f"{part.path}: {aoflib.UNEXPECTED_EOF.format(name=part.name)}")
        if not last:
            raise LoadError(f"{part.path}: !!! Warning: short read while loading the AOF file "
                            f"{part.name}!!! Fatal error: the truncated file is not the last file")

    def _after_load(self) -> None:
        """What expired while the server was down stays gone; the counters start again."""
        state = self.state
        now = state.tick()
        for db in state.dbs:
            self.keys_expired += db.expire_due(now)
        self.keys_loaded = sum(len(db.data) for db in state.dbs)
        state.dirty = 0

    def _open_last_incr(self, manifest: aof_manifest.Manifest) -> None:
        """aofOpenIfNeededOnServerStart: the last incr file goes on, or a new one."""
        folder = aof_manifest.aof_dir(self.config)
        if manifest.incrs:  # the manifest is rewritten all the same (a new one is atomic)
            incr = manifest.incrs[-1].name
            log.info("Opening AOF incr file %s on server start", incr)
        else:
            incr = manifest.new_incr(self.config["appendfilename"])
            log.info("Creating AOF incr file %s on server start", incr)
        self._open_log(os.path.join(folder, incr))
        aof_manifest.write_manifest(self.config, manifest)
        self.manifest = manifest
        names = manifest.names()
        self.base_size = _size(folder, manifest.base.name) if manifest.base else 0
        self.closed_size = sum(_size(folder, name) for name in names[:-1])

    def _load_former(self, former: aoflib.FormerManifest) -> None:
        """A log fakekey wrote before it wrote Valkey's: read once (an FKSNAP or RDB base,
        FKAOF records), then written again in Valkey's form at once."""
        folder = aof_manifest.aof_dir(self.config)
        log.warning("The append only file in %s is in fakekey's former format (FKAOF records): it is "
                    "loaded, and written again in Valkey's multi-part AOF format now", folder)
        if former.base:
            base = os.path.join(folder, former.base)
            if not os.path.exists(base):
                raise LoadError(f"{base}: The append log file {former.base} doesn't exist: No such "
                                "file or directory")
            # keys expired by now are kept until the log is replayed at its own times
            self._load_snapshot(drop_expired=False, path=base, base=True)
        replayer = aoflib.Replayer(self.state)
        self.loading = True
        try:
            cuts = self._replay_former(folder, former, replayer)
        finally:
            self.loading = False
        self._after_load()
        for path, offset in cuts:
            aoflib.truncate_tail(path, offset)
        self._create_log()
        for name in (former.base, *former.incrs):
            if name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(folder, name))

    def _replay_former(self, folder: str, former: aoflib.FormerManifest,
                       replayer: aoflib.Replayer) -> list[tuple[str, int]]:
        cuts = []
        for i, name in enumerate(former.incrs):
            path = os.path.join(folder, name)
            data = read_log_file(path, name)
            read = aoflib.read_log(path, data, i == len(former.incrs) - 1)
            for offset, payload in read.records:
                try:
                    replayer.apply(payload)
                except (CorruptData, IndexError, ValueError) as err:
                    raise LoadError(f"{path}: bad record at offset {offset}: {err}") from None
            if read.truncated_at is not None:
                if not self.config["aof-load-truncated"]:
                    raise LoadError(f"{path}: {aoflib.UNEXPECTED_EOF.format(name=name)}")
                cuts.append((path, read.truncated_at))
        return cuts

    def _create_log(self) -> None:
        """appendonly yes at start without a log: a base of the current data, at once, and
        an incr file (aofOpenIfNeededOnServerStart)."""
        config = self.config
        folder = aof_manifest.aof_dir(config)
        os.makedirs(folder, exist_ok=True)
        manifest = self.manifest.copy() if self.manifest is not None else aof_manifest.Manifest()
        base = manifest.new_base(config["appendfilename"], bool(config["aof-use-rdb-preamble"]))
        data = self._base_bytes(live_image(self.state), self.state.clock.now_ms())
        write_file_atomically(os.path.join(folder, base), [data])
        log.info("Creating AOF base file %s on server start", base)
        manifest.rewritten_incrs_to_history(keep_last=False)
        incr = manifest.new_incr(config["appendfilename"])
        log.info("Creating AOF incr file %s on server start", incr)
        self._open_log(os.path.join(folder, incr))
        aof_manifest.write_manifest(config, manifest)
        self.manifest = manifest
        self._delete_history(manifest)
        self.base_size = self.closed_size = len(data)
        self.state.dirty = 0

    def _base_bytes(self, image: Image, now: int) -> bytes:
        """A whole base at once (at start, at shutdown): RDB, or commands."""
        out: list[bytes] = []
        for _ in self._iter_base(image, now, out):
            pass
        return b"".join(out)

    def _iter_base(self, image: Image, now: int, out: list[bytes], per_key: bool = False) -> Iterator[None]:
        """The base's bytes into `out`, a slice at a time: aof-use-rdb-preamble yes, an
        RDB file (aof-base 1); no, RESP commands."""
        if self.config["aof-use-rdb-preamble"]:
            options = dataclasses.replace(self.save_options(image), aof_base=True)
            return rdbfile.iter_rdb(image, options, now, out, per_key=per_key)
        return aoflib.iter_aof_base(image, now, rdb.Limits.of(self.config), out)

    def _open_log(self, path: str) -> None:
        """The log writes `path` from now on, fed by the server's Propagation."""
        append_log = AppendLog(self.state, path)
        self.state.aof = append_log
        propagation(self.state).subscribe(append_log)

    def _close_log(self) -> None:
        append_log = self.state.aof
        if append_log is None:
            return
        stop_propagation(self.state, append_log)
        append_log.close()
        self.state.aof = None

    def _delete_history(self, manifest: aof_manifest.Manifest) -> None:
        """aofDelHistoryFiles: the history files removed, then the manifest without them."""
        if not manifest.history or self.config["aof-disable-auto-gc"]:
            return
        folder = aof_manifest.aof_dir(self.config)
        for f in manifest.history:
            log.info("Removing the history file %s in the background", f.name)
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, f.name))
        manifest.history = []
        aof_manifest.write_manifest(self.config, manifest)


    # --- snapshots -----------------------------------------------------------------------------

    def save(self, counted: bool = True) -> bool:
        """SAVE: the RDB file now, while nothing else runs. `counted`: in INFO's
        rdb_saves (DEBUG RELOAD's save is not)."""
        state = self.state
        try:
            image = live_image(state)
            data = rdbfile.rdb_bytes(image, self.save_options(image), state.clock.now_ms())
            write_file_atomically(self.snapshot_path(), [data])
        except OSError as err:
            log.warning("Failed saving the DB: %s", err.strerror)
            self.last_bgsave_ok = False
            return False
        log.info("DB saved on disk")
        self._saved(state.dirty, counted)
        return True

    def debug_reload(self, save: bool, flush: bool, merge: bool) -> str | None:
        """DEBUG RELOAD: save the RDB file (unless NOSAVE), empty the data and the function
        libraries (unless NOFLUSH), load the file back (MERGE: its keys replace those
        present). The file is read and checked whole before anything is emptied, so a
        refused one changes nothing. The error's text, or None."""
        state = self.state
        if save and not self.save(counted=False):
            return "ERR"
        path = self.snapshot_path()
        try:
            data = read_file(path)
            if data is None:
                raise LoadError(f"{path}: no such file")
            parsed = parse_file(state, path, data)
            if not flush and not merge and self._conflicts(parsed):
                raise LoadError(f"{path}: a key or library of the file exists already (MERGE replaces them)")
        except LoadError as err:
            log.warning("%s", err)
            return "ERR Error trying to load the RDB dump, check server logs."
        dirty = state.dirty
        if flush:
            self._empty_data()
        try:
            counts = install(state, parsed, drop_expired=True, merge=merge)
        except LoadError as err:  # a library that does not compile here
            log.warning("%s", err)
            return "ERR Error trying to load the RDB dump, check server logs."
        finally:
            state.dirty = dirty  # loading is no change (as Valkey's dbAddRDBLoad)
        self.keys_loaded, self.keys_expired = counts.loaded, counts.expired
        log.info("DB reloaded by DEBUG RELOAD")
        return None

    def _conflicts(self, parsed: Parsed) -> bool:
        """Whether the file holds a key or a library the server has already."""
        dbs = self.state.dbs
        if any(key in dbs[index].data for index, key in parsed.stored_keys()):
            return True
        engine = self.state.functions
        if engine is None or not parsed.libraries():
            return False
        from fakekey.scripting.libraries import LibraryError, parse_metadata

        names = set()
        for code in parsed.libraries():
            with contextlib.suppress(LibraryError):  # a bad one fails when it is created
                names.add(parse_metadata(code).name)
        return not names.isdisjoint(engine.current.libraries)

    def debug_loadaof(self) -> bool:
        """DEBUG LOADAOF: flush the log, empty the data, load the log back. False when no
        log loads (the data is emptied all the same, as Valkey's)."""
        state = self.state
        if state.aof is not None:
            state.aof.flush(True)
        self._empty_data()
        self._close_log()  # loading opens the last incr file again
        try:
            if not self._load_aof():
                return False
        except LoadError as err:
            log.warning("%s", err)
            return False
        state.dirty = 0  # as Valkey: nothing to propagate or log again
        return True

    def _empty_data(self) -> None:
        """emptyData: every database and the function libraries, at once."""
        state = self.state
        for db in state.dbs:
            db.flush(False)
        if state.tracking:
            state.tracking.flushed()
        if state.functions is not None:
            state.functions.flush()

    def save_options(self, image: Image) -> rdbfile.SaveOptions:
        """What an RDB file needs besides the data, read now (a background save's copy
        is of this moment too). used-mem: the memory tracker's figure when maxmemory keeps
        one, else the keys' estimates summed while they are written (INFO's figure)."""
        state = self.state
        config = self.config
        tracked = state.memory is not None
        expires = sum(len(expires) for _, _, expires in image.dbs)
        return rdbfile.SaveOptions(
            limits=rdb.Limits.of(config),
            valkey_version=state.valkey_version,
            ctime=state.clock.now_ms() // 1000,
            checksum=bool(config["rdbchecksum"]),
            lfu_decay_time=config["lfu-decay-time"],
            used_memory=used_memory(state) if tracked else None,
            key_cost=None if tracked else (lambda key, value: quick_key_size(key, value, state)),
            base_memory=STARTUP_MEMORY + EXPIRE_ENTRY * expires,
        )

    def _saved(self, dirty_then: int, counted: bool = True) -> None:
        state = self.state
        state.dirty -= dirty_then
        state.lastsave = int(time.time())
        if counted:
            state.stats["rdb_saves"] += 1
        self.last_bgsave_ok = True

    def bgsave_in_progress(self) -> bool:
        return self.bgsave_task is not None

    def start_bgsave(self) -> None:
        """BGSAVE: copy the data now, write it in the background."""
        state = self.state
        self.last_bgsave_try = int(time.time())
        self.dirty_at_bgsave = state.dirty
        image = copied_image(state)
        self.save_keys_total = sum(len(data) for _, data, _ in image.dbs)
        self.bgsave_started = time.monotonic()
        log.info("Background saving started")
        state.stats["total_forks"] += 1  # Valkey forks a child for each background job
        options = self.save_options(image)
        self.bgsave_task = asyncio.get_running_loop().create_task(self._bgsave(image, options))

    async def _bgsave(self, image: Image, options: rdbfile.SaveOptions) -> None:
        path = self.snapshot_path()
        try:
            chunks: list[bytes] = []
            delay = self._key_delay()
            work = rdbfile.iter_rdb(image, options, self.state.clock.now_ms(), chunks, per_key=delay > 0)
            await run_in_slices(work, delay)
            await write_in_background(path, chunks)
        except OSError as err:
            log.warning("Background saving error: %s", err.strerror)
            self.last_bgsave_ok = False
        else:
            log.info("Background saving terminated with success")
            self._saved(self.dirty_at_bgsave)
        finally:
            self.last_bgsave_secs = int(time.monotonic() - self.bgsave_started)
            if self.bgsave_task is asyncio.current_task():
                self.bgsave_task = None

    def _key_delay(self) -> float:
        """rdb-key-save-delay: microseconds per key saved (Valkey's knob for tests)."""
        return max(self.config["rdb-key-save-delay"], 0) / 1e6

    def flushed_all(self) -> None:
        """FLUSHALL: a background save of the old data ends; with a save rule the empty
        data is saved at once (Valkey's flushAllDataAndResetRDB)."""
        self._cancel_bgsave()
        if self.save_rules() and not self.loading:
            self.save()

    def _cancel_bgsave(self) -> None:
        if self.bgsave_task is not None:
            self.bgsave_task.cancel()
            self.bgsave_task = None

    # --- the append-only log -------------------------------------------------------------------

    def rewrite_in_progress(self) -> bool:
        return self.rewrite_task is not None

    def start_rewrite(self, attach: bool = False) -> None:
        """BGREWRITEAOF (rewriteAppendOnlyFileBackground): a new base from a copy of the
        data; the log goes on in a new incr file, which the manifest names at once.
        `attach`: the log starts now (appendonly turned on); the manifest names its incr
        file once its base exists. Inside a transaction it waits for the transaction's
        end (Valkey schedules it), so the base never holds half a unit the incr repeats."""
        state = self.state
        feed = state.feed
        if not attach and isinstance(feed, Propagation) and feed.depth > 1:
            self.rewrite_scheduled = True
            log.info("Background append only file rewriting scheduled.")
            return
        config = self.config
        folder = aof_manifest.aof_dir(config)
        os.makedirs(folder, exist_ok=True)
        manifest = self._current_manifest()
        if state.aof is not None:
            incr = manifest.new_incr(config["appendfilename"])
            old_size = state.aof.size
            state.aof.switch_to(os.path.join(folder, incr))
            aof_manifest.write_manifest(config, manifest)
            self.manifest = manifest
            self.closed_size += old_size
            log.info("Creating AOF incr file %s on background rewrite", incr)
        elif attach:
            incr = manifest.new_incr(config["appendfilename"])
            self.pending_manifest = manifest  # written with the base
            self._open_log(os.path.join(folder, incr))
        rdb_base = bool(config["aof-use-rdb-preamble"])
        base = f"{config['appendfilename']}.{manifest.base_seq + 1}.base.{'rdb' if rdb_base else 'aof'}"
        image = copied_image(state)
        now = state.clock.now_ms()
        self.rewrite_started = time.monotonic()
        log.info("Background append only file rewriting started")
        state.stats["total_forks"] += 1
        self.rewrite_job = (image, now, base)
        self.rewrite_task = asyncio.get_running_loop().create_task(self._rewrite(image, now, base))

    def _current_manifest(self) -> aof_manifest.Manifest:
        """A copy of the manifest in force (read from the disk when the log is off)."""
        if self.manifest is not None:
            return self.manifest.copy()
        path = aof_manifest.manifest_path(self.config)
        try:
            with open(path, "rb") as fh:
                text = fh.read()
        except FileNotFoundError:
            return aof_manifest.Manifest()
        if aof_manifest.is_former(text):  # files of fakekey's former log: history now
            former = aoflib.parse_former_manifest(path, text)
            manifest = aof_manifest.Manifest()
            names = [name for name in (former.base, *former.incrs) if name is not None]
            manifest.history = [aof_manifest.AofFile(name, 1, aof_manifest.HISTORY) for name in names]
            return manifest
        return aof_manifest.parse_manifest(path, text)

    async def _rewrite(self, image: Image, now: int, base: str) -> None:
        path = os.path.join(aof_manifest.aof_dir(self.config), base)
        try:
            chunks: list[bytes] = []
            delay = self._key_delay()
            await run_in_slices(self._iter_base(image, now, chunks, per_key=delay > 0), delay)
            await write_in_background(path, chunks)
            log.info("Background AOF rewrite terminated with success")
            self._rewritten(base, sum(map(len, chunks)))
        except OSError as err:
            log.warning("Background AOF rewrite error: %s", err.strerror)
            self.last_rewrite_ok = False
            self.rewrite_failures += 1
            self.rewrite_job = None
        finally:
            self.last_rewrite_secs = int(time.monotonic() - self.rewrite_started)
            if self.rewrite_task is asyncio.current_task():
                self.rewrite_task = None

    def _rewritten(self, base: str, base_size: int) -> None:
        """backgroundRewriteDoneHandler: the new base in the manifest, the former base and
        the incr files it replaces become history, the manifest is replaced, then the
        history files are removed."""
        config = self.config
        manifest = self.pending_manifest or self._current_manifest()
        self.pending_manifest = None
        named = manifest.new_base(config["appendfilename"], base.endswith(".rdb"))
        assert named == base, (named, base)
        log_on = self.state.aof is not None
        manifest.rewritten_incrs_to_history(keep_last=log_on)
        aof_manifest.write_manifest(config, manifest)
        self.manifest = manifest if log_on else None
        append_log = self.state.aof
        self.closed_size = base_size
        # Valkey's aof_rewrite_base_size: the whole log as the rewrite ends
        self.base_size = base_size + (append_log.size if append_log is not None else 0)
        self._delete_history(manifest)
        self.rewrites += 1
        self.last_rewrite_ok = True
        self.rewrite_failures = 0
        self.rewrite_job = None
        log.info("Background AOF rewrite finished successfully")

    def _cancel_rewrite(self) -> None:
        self.rewrite_job = None
        self.pending_manifest = None
        if self.rewrite_task is not None:
            self.rewrite_task.cancel()
            self.rewrite_task = None

    def _finish_rewrite_now(self) -> None:
        """At shutdown a running rewrite is completed, not dropped (Valkey will not exit
        while its first AOF is written): the same copy, written synchronously."""
        job, self.rewrite_job = self.rewrite_job, None
        if self.rewrite_task is not None:
            self.rewrite_task.cancel()
            self.rewrite_task = None
        if job is None or self.state.aof is None:
            return
        image, now, base = job
        data = self._base_bytes(image, now)
        write_file_atomically(os.path.join(aof_manifest.aof_dir(self.config), base), [data])
        self._rewritten(base, len(data))

    def _apply_appendonly(self, new: bool, old: bool) -> str | None:
        """CONFIG SET appendonly: on starts a log (its base written by a rewrite, as
        Valkey's startAppendOnly), off closes it (the manifest stays as it was)."""
        state = self.state
        if not new and self.log_scheduled:  # off again before the cron started the log
            self.log_scheduled = self.rewrite_scheduled = False
        if new and state.aof is None and state.deny_blocking:  # inside EXEC, as Valkey's in_exec
            self.rewrite_scheduled = self.log_scheduled = True
            log.warning("AOF was enabled during a transaction. An AOF background was scheduled "
                        "to start when possible.")
        elif new and state.aof is None:
            try:
                os.makedirs(aof_manifest.aof_dir(self.config), exist_ok=True)
                self.manifest = None
                self._cancel_rewrite()
                self.start_rewrite(attach=True)
            except (OSError, LoadError) as err:
                log.warning("Could not start the append only file: %s", err)
                return "Unable to turn on AOF. Check server logs."
        elif not new and state.aof is not None:
            self._cancel_rewrite()
            self._close_log()
            self.manifest = None
        return None

    # --- the cron, shutdown --------------------------------------------------------------------

    def cron(self) -> None:
        state = self.state
        if state.aof is not None:
            state.aof.tick()
        if self.bgsave_task is not None or self.rewrite_task is not None:
            return
        if self.rewrite_scheduled:
            self.rewrite_scheduled = False
            self.start_scheduled_rewrite()
            return
        if self.bgsave_scheduled:
            self.bgsave_scheduled = False
            self.start_bgsave()
            return
        if state.aof is not None and self._log_outgrew_its_base():
            log.info("Starting automatic rewriting of AOF on %d%% growth",
                     self.config["auto-aof-rewrite-percentage"])
            self.start_rewrite()
            return
        now = int(time.time())
        for seconds, changes in self.save_rules():
            if state.dirty >= changes and now - state.lastsave > seconds and (
                    self.last_bgsave_ok or now - self.last_bgsave_try > BGSAVE_RETRY_DELAY):
                log.info("%d changes in %d seconds. Saving...", changes, seconds)
                self.start_bgsave()
                return

    def start_scheduled_rewrite(self) -> None:
        """A rewrite the cron starts: with the log itself when appendonly was turned on
        inside a transaction."""
        attach, self.log_scheduled = self.log_scheduled, False
        if not attach:
            self.start_rewrite()
            return
        try:
            os.makedirs(aof_manifest.aof_dir(self.config), exist_ok=True)
            self.manifest = None
            self.start_rewrite(attach=True)
        except (OSError, LoadError) as err:
            log.warning("Could not start the append only file: %s", err)

    def _log_outgrew_its_base(self) -> bool:
        """auto-aof-rewrite-percentage and -min-size, as Valkey's cron reads them."""
        percentage = self.config["auto-aof-rewrite-percentage"]
        append_log = self.state.aof
        size = self.closed_size + (append_log.size if append_log is not None else 0)
        if not percentage or size <= self.config["auto-aof-rewrite-min-size"]:
            return False
        return size * 100 // max(self.base_size, 1) - 100 >= percentage

    def shutdown(self, save: bool | None, force: bool = False) -> bool:
        """Before the server stops: end background work, save when asked (None: when a
        save rule is set), flush the log. False when the save failed (and not forced)."""
        self._cancel_bgsave()
        ok = True
        if self.state.aof is not None:
            log.info("Calling fsync() on the AOF file.")
            try:
                self.state.aof.flush(True)
                self._finish_rewrite_now()
            except OSError as err:
                log.warning("Error writing the append only file at shutdown: %s", err.strerror)
                ok = False
        if save or (save is None and self.save_rules()):
            log.info("Saving the final RDB snapshot before exiting.")
            ok = self.save() and ok
        if not ok and not force:
            log.warning("Errors trying to shut down the server. Check the logs for more information.")
            return False
        return True

    def close(self) -> None:
        for task in (self.bgsave_task, self.rewrite_task):
            if task is not None:
                task.cancel()
        self.bgsave_task = self.rewrite_task = None
        self._close_log()

    # --- INFO ----------------------------------------------------------------------------------

    def info_lines(self) -> list[str]:
        state = self.state
        now = time.monotonic()
        bgsave = self.bgsave_task is not None
        rewrite = self.rewrite_task is not None
        lines = [
            "loading:0",
            "async_loading:0",
            "current_cow_peak:0",
            "current_cow_size:0",
            "current_cow_size_age:0",
            "current_fork_perc:0.00",
            "current_save_keys_processed:0",
            f"current_save_keys_total:{self.save_keys_total if bgsave else 0}",
            f"rdb_changes_since_last_save:{state.dirty}",
            f"rdb_bgsave_in_progress:{int(bgsave)}",
            f"rdb_last_save_time:{state.lastsave}",
            f"rdb_last_bgsave_status:{'ok' if self.last_bgsave_ok else 'err'}",
            f"rdb_last_bgsave_time_sec:{self.last_bgsave_secs}",
            f"rdb_current_bgsave_time_sec:{int(now - self.bgsave_started) if bgsave else -1}",
            f"rdb_saves:{state.stats['rdb_saves']}",
            "rdb_last_cow_size:0",
            f"rdb_last_load_keys_expired:{self.keys_expired}",
            f"rdb_last_load_keys_loaded:{self.keys_loaded}",
            f"aof_enabled:{int(state.aof is not None)}",
            f"aof_rewrite_in_progress:{int(rewrite)}",
            f"aof_rewrite_scheduled:{int(self.rewrite_scheduled)}",
            f"aof_last_rewrite_time_sec:{self.last_rewrite_secs}",
            f"aof_current_rewrite_time_sec:{int(now - self.rewrite_started) if rewrite else -1}",
            f"aof_last_bgrewrite_status:{'ok' if self.last_rewrite_ok else 'err'}",
            f"aof_rewrites:{self.rewrites}",
            f"aof_rewrites_consecutive_failures:{self.rewrite_failures}",
            f"aof_last_write_status:{'ok' if state.aof is None or state.aof.write_ok else 'err'}",
            "aof_last_cow_size:0",
            "module_fork_in_progress:0",
            "module_fork_last_cow_size:0",
            "slot_migration_fork_in_progress:0",
        ]
        if state.aof is not None:
            lines += [
                f"aof_current_size:{self.closed_size + state.aof.size}",
                f"aof_base_size:{self.base_size}",
                "aof_pending_rewrite:0",
                f"aof_buffer_length:{len(state.aof.pending)}",
                "aof_pending_bio_fsync:0",
                "aof_delayed_fsync:0",
            ]
        return lines


async def write_in_background(path: str, chunks: list[bytes]) -> None:
    """Write and fsync the temporary file in a worker thread; rename it into place here,
    on the loop, only if this job was not cancelled meanwhile (SHUTDOWN, FLUSHALL)."""
    temporary = temp_name(path)
    task = asyncio.current_task()
    assert task is not None
    try:
        await asyncio.get_running_loop().run_in_executor(
            None, write_temp, temporary, chunks, lambda: task.cancelling() > 0 or task.done())
    except asyncio.CancelledError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    commit(temporary, path)


async def run_in_slices(work: Iterator[None], key_delay: float = 0.0) -> None:
    """Run `work` a few milliseconds at a time between loop turns (with
    rdb-key-save-delay, one key per turn after that many seconds)."""
    clock = time.perf_counter
    if key_delay:
        for _ in work:
            await asyncio.sleep(key_delay)
        return
    while True:
        until = clock() + SLICE_SECONDS
        for _ in work:
            if clock() >= until:
                break
        else:
            return
        await asyncio.sleep(0)


def _size(folder: str, name: str) -> int:
    try:
        return os.path.getsize(os.path.join(folder, name))
    except OSError:
        return 0


@dataclasses.dataclass
class LoadedPart:
    """One file of an append-only log, read and checked: an RDB base or RESP commands
    (or nothing: an empty file)."""

    name: str
    path: str
    kind: str
    size: int
    rdb: Parsed | None = None
    resp: AofRead | None = None

    def apply(self, persistence: Persistence) -> None:
        state = persistence.state
        started = time.monotonic()
        if self.rdb is not None:
            log.info("Reading RDB base file on AOF loading...")
            # keys expired by now stay until the incr files are replayed (an AOF preamble)
            install(state, self.rdb, drop_expired=False)
        elif self.resp is not None:
            CommandReplayer(state).run_all(self.name, self.resp.commands)
        else:
            return  # an empty file: nothing to say
        which = "base" if self.kind == aof_manifest.BASE else "incr"
        log.info("DB loaded from %s file %s: %.3f seconds", which, self.name, time.monotonic() - started)
        if self.resp is not None and self.resp.truncated_at is not None:
            self._truncate(self.resp.truncated_at)

    def _truncate(self, offset: int) -> None:
        """aof-load-truncated yes: the cut end goes, new commands follow whole ones."""
        log.warning("!!! Warning: short read while loading the AOF file %s!!!", self.name)
        log.warning("!!! Truncating the AOF %s at offset %d !!!", self.name, offset)
        aoflib.truncate_tail(self.path, offset)
        log.warning("AOF %s loaded anyway because aof-load-truncated is enabled", self.name)


def read_log_file(path: str, name: str) -> bytes:
    """One file the manifest names, whole; refused with Valkey's words when it is missing
    or cannot be opened."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise LoadError(f"{path}: The append log file {name} doesn't exist: No such file or "
                        "directory") from None
    except OSError as err:
        raise LoadError(f"{path}: Fatal error: can't open the append log file {name} for "
                        f"reading: {err.strerror}") from None
