"""The append-only log: every change, as a record, before the reply that acknowledges it.

What a record is (docs/persistence.md says why): the write command as it ran, with the
database it ran in and its clock snapshot (`state.now`). Replaying it under the same
snapshot against the same data gives the same result, so relative expiries, `XADD *`,
delivery times and lazily expired keys come out as they did. The exceptions are logged by
their effect: a random write (SPOP) as the resulting value of its keys, an expired or
evicted key as its removal. Scripts and functions are logged by the commands they ran,
MULTI/EXEC and a script's commands as one record (all or nothing at load).

    header  b"FKAOF" version:u8
    C       db:u32 now:i64 argc:u64 args (blobs)
    V       db:u32 now:i64 key:blob present:u8 [deadline:i64 value]
    X       db:u32 now:i64 key:blob                (the key expired or was evicted)
    M       count:u64 records (blobs)              (one unit)

The directory `appenddirname` (under `dir`) holds a base snapshot, the incremental logs
written since, and `<appendfilename>.manifest` naming them (replaced atomically).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.persistence.codec import (
    CorruptData,
    FrameError,
    Reader,
    Writer,
    decode_value,
    encode_value,
    frame,
    iter_frames,
)
from fakekey.persistence.snapshot import LoadError, fsync_dir, write_file_atomically
from fakekey.resp.replies import NO_REPLY, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

MAGIC = b"FKAOF"
VERSION = 1
OP_COMMAND, OP_VALUE, OP_EXPIRED, OP_MULTI = b"CVXM"
HEADER = frame(MAGIC + bytes([VERSION]))
# Writes whose outcome is random: logged as the value their keys were left with (SPOP
# has an exact rewrite instead: SREM of what it popped, as Valkey propagates it).
BY_EFFECT: frozenset[str] = frozenset()
# Commands that change the counters but are no change to the data.
NOT_LOGGED = frozenset({"save", "bgsave", "bgrewriteaof", "shutdown"})


# --- the manifest ------------------------------------------------------------------------------


@dataclass
class Manifest:
    """Which files make the log: one base snapshot (maybe none) and incremental logs."""

    base: str | None = None
    incrs: list[str] = field(default_factory=list)
    seq: int = 0  # the highest sequence number used in a name

    def render(self) -> bytes:
        lines = ["fakekey-aof-manifest 1", f"seq {self.seq}"]
        if self.base:
            lines.append(f"base {self.base}")
        lines += [f"incr {name}" for name in self.incrs]
        return ("\n".join(lines) + "\n").encode()


def manifest_path(config: Any) -> str:
    return os.path.join(aof_dir(config), config["appendfilename"] + ".manifest")


def aof_dir(config: Any) -> str:
    return os.path.join(config["dir"], config["appenddirname"])


def read_manifest(path: str) -> Manifest | None:
    try:
        with open(path, "rb") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None
    lines = text.decode("utf-8", "replace").splitlines()
    if not lines or lines[0] != "fakekey-aof-manifest 1":
        raise LoadError(f"{path}: not a fakekey manifest (bad first line at offset 0)")
    manifest = Manifest()
    offset = len(lines[0]) + 1
    for line in lines[1:]:
        word, _, rest = line.partition(" ")
        if word == "seq" and rest.isdigit():
            manifest.seq = int(rest)
        elif word == "base" and rest and "/" not in rest:
            manifest.base = rest
        elif word == "incr" and rest and "/" not in rest:
            manifest.incrs.append(rest)
        else:
            raise LoadError(f"{path}: bad manifest line at offset {offset}: {line!r}")
        offset += len(line) + 1
    return manifest


def write_manifest(config: Any, manifest: Manifest) -> None:
    write_file_atomically(manifest_path(config), [manifest.render()])


def file_names(config: Any, seq: int) -> tuple[str, str]:
    name = config["appendfilename"]
    return f"{name}.{seq}.base.fksnap", f"{name}.{seq}.incr.fkaof"


# --- records -----------------------------------------------------------------------------------


def command_record(db: int, now: int, argv: list[bytes]) -> bytes:
    w = Writer()
    w.u8(OP_COMMAND)
    w.u32(db)
    w.i64(now)
    w.u64(len(argv))
    for arg in argv:
        w.blob(arg)
    return bytes(w.buf)


def value_record(db: Any, now: int, key: bytes) -> bytes:
    """The key as it is now: its value and deadline, or its absence."""
    w = Writer()
    w.u8(OP_VALUE)
    w.u32(db.index)
    w.i64(now)
    w.blob(key)
    value = db.data.get(key)
    w.u8(0 if value is None else 1)
    if value is not None:
        w.i64(db.expires.get(key, -1))
        encode_value(w, value)
    return bytes(w.buf)


def expired_record(db: int, now: int, key: bytes) -> bytes:
    w = Writer()
    w.u8(OP_EXPIRED)
    w.u32(db)
    w.i64(now)
    w.blob(key)
    return bytes(w.buf)


def multi_record(records: list[bytes]) -> bytes:
    w = Writer()
    w.u8(OP_MULTI)
    w.u64(len(records))
    for record in records:
        w.blob(record)
    return bytes(w.buf)


# --- the writer ----------------------------------------------------------------------------------


class Recorder:
    """Records the changes of the running server, each command (with what it runs) as one
    unit handed to `deliver`: the log writes it to its file, in-process replicas apply it
    (persistence/replicas.py). `run` wraps each command."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.group: list[bytes] = []  # records of the running command and what it runs
        self.depth = 0

    def deliver(self, unit: bytes) -> None:
        raise NotImplementedError

    def handle(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        return cmd.handler(client, argv)

    def followers(self) -> list[Any]:
        """The servers that apply what this records as it happens (the log has none)."""
        return []

    # --- recording -----------------------------------------------------------------------

    def run(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        """Run the handler and record what it changed. A command that runs others (EXEC,
        EVAL, FCALL) is recorded as what they recorded, as one unit."""
        state = self.state
        before = state.dirty
        mark = len(self.group)
        self.depth += 1
        reply: Any = None
        broke = False
        try:
            reply = self.handle(client, cmd, argv)
            return reply
        except ReplyError:
            raise
        except Exception:
            broke = True
            raise
        finally:
            self.depth -= 1
            if broke and state.dirty > before and len(self.group) == mark:
                # a handler that broke half way: its keys are logged as they are now
                for pos in cmd.key_positions(argv):
                    self.group.append(value_record(client.db, state.now, argv[pos]))
            elif state.dirty > before and len(self.group) == mark and cmd.name not in NOT_LOGGED \
                    and reply is not NO_REPLY:
                self._record_command(client, cmd, argv, reply)
            elif "write" in cmd.flags and len(self.group) == mark and reply is not None \
                    and reply is not NO_REPLY and type(reply) is not ReplyError:
                # a write that reported no change is replayed too: a no-op if it was one
                self._record_command(client, cmd, argv, reply)
            if not self.depth and self.group:
                self._close_group()

    def _record_command(self, client: Any, cmd: Any, argv: list[bytes], reply: Any) -> None:
        state = self.state
        db = client.db
        if cmd.name == "spop":  # random: what it popped, removed
            popped = reply if isinstance(reply, list) else [] if reply is None else [reply]
            if popped:
                self.group.append(command_record(db.index, state.now, [b"SREM", argv[1], *popped]))
        elif cmd.name in BY_EFFECT:
            for pos in cmd.key_positions(argv):
                self.group.append(value_record(db, state.now, argv[pos]))
        else:
            self.group.append(command_record(db.index, state.now, argv))

    def expired(self, db: int, key: bytes) -> None:
        """A key expired (or was evicted): its removal is logged where it happened."""
        self.group.append(expired_record(db, self.state.now, key))
        if not self.depth:
            self._close_group()

    def _close_group(self) -> None:
        group = self.group
        self.group = []
        self.deliver(group[0] if len(group) == 1 else multi_record(group))


class AppendLog(Recorder):
    """Records the changes of the running server into the current incremental file.
    `state.aof` is this object while appendonly is on."""

    def __init__(self, state: ServerState, path: str) -> None:
        super().__init__(state)
        self.path = path
        self.fd = self._open(path)
        self.pending = bytearray()  # records not yet written to the file
        self.unsynced = False  # written but not fsynced (everysec / no)
        self.write_ok = True
        self.last_fsync = time.monotonic()
        self.size = os.fstat(self.fd).st_size

    def deliver(self, unit: bytes) -> None:
        self.pending += frame(unit)

    @staticmethod
    def _open(path: str) -> int:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if os.fstat(fd).st_size == 0:
            os.write(fd, HEADER)
        return fd

    # --- writing -------------------------------------------------------------------------

    def before_reply(self) -> None:
        """Replies are about to leave: what they acknowledge goes to the file first (and
        to the disk under appendfsync always). Called once per loop turn with data."""
        if self.pending:
            self.flush(self.state.config["appendfsync"] == "always")

    def flush(self, sync: bool) -> None:
        data, self.pending = self.pending, bytearray()
        if data:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
                self.size += len(data)
                self.write_ok = True
            except OSError as err:
                # no half record stays behind, and the records wait for the next try
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, self.size)
                self.pending = data + self.pending
                self.write_ok = False
                log.warning("Error writing to the AOF file: %s", err.strerror)
                raise
            self.unsynced = True
        if sync and self.unsynced:
            os.fdatasync(self.fd)
            self.unsynced = False
            self.last_fsync = time.monotonic()

    def tick(self) -> None:
        """From the cron: records made outside any reply (expiries), the everysec fsync."""
        if self.pending:
            self.flush(self.state.config["appendfsync"] == "always")
        if self.unsynced and self.state.config["appendfsync"] == "everysec" \
                and time.monotonic() - self.last_fsync >= 1:
            self.flush(True)

    def switch_to(self, path: str) -> None:
        """Continue in a new incremental file (an AOF rewrite began). Records of the
        running command (a MULTI with BGREWRITEAOF in it) belong with the data the new
        base copies, so they go to the old file."""
        if self.group:
            self._close_group()
        self.flush(True)
        os.close(self.fd)
        self.path = path
        self.fd = self._open(path)
        self.size = os.fstat(self.fd).st_size

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                self.flush(True)
            os.close(self.fd)
            self.fd = -1


# --- loading -------------------------------------------------------------------------------------


@dataclass
class LogRead:
    records: list[tuple[int, memoryview]]  # (offset, payload)
    truncated_at: int | None  # the offset of a cut tail, or None
    reason: str = ""


def read_log(path: str, data: bytes, last: bool) -> LogRead:
    """The whole records of an incremental file. A cut tail of the last file is
    reported; any other bad record is a LoadError naming the file and offset."""
    records: list[tuple[int, memoryview]] = []
    if not data:
        return LogRead(records, None)
    if not data.startswith(HEADER):
        if last and len(data) < len(HEADER) and HEADER.startswith(data):
            return LogRead(records, 0, "the header is cut")
        raise LoadError(f"{path}: not a fakekey append-only file (bad header at offset 0)")
    try:
        records.extend(iter_frames(data, len(HEADER)))
    except FrameError as err:
        if err.truncated and last:
            return LogRead(records, err.offset, err.reason)
        raise LoadError(f"{path}: bad record at offset {err.offset}: {err.reason}") from None
    return LogRead(records, None)


class Replayer:
    """Applies records to the state, as a client that may do anything and never blocks."""

    def __init__(self, state: ServerState) -> None:
        from fakekey.core.client import Client

        self.state = state
        self.client = Client(state)
        self.client.acl_unrestricted = True
        self.client.authenticated = True
        self.errors = 0

    def apply(self, payload: bytes | memoryview) -> None:
        r = Reader(payload)
        op = r.u8()
        if op == OP_MULTI:
            for _ in range(r.count()):
                self.apply(r.blob())
            return
        db_index = r.u32()
        if db_index >= len(self.state.dbs):
            raise CorruptData(f"database {db_index} out of range")
        db = self.state.dbs[db_index]
        self.state.now = r.i64()
        if op == OP_COMMAND:
            self._command(db, [r.blob() for _ in range(r.count())])
        elif op == OP_VALUE:
            key = r.blob()
            if r.u8():
                deadline = r.i64()
                db.set_value(key, decode_value(r))
                if deadline >= 0:
                    db.set_expire(key, deadline)
            else:
                db.delete(key)
        elif op == OP_EXPIRED:
            key = r.blob()
            if key in db.data:
                db._remove(key)
        else:
            raise CorruptData(f"unknown record type {op}")

    def _command(self, db: Any, argv: list[bytes]) -> None:
        state = self.state
        client = self.client
        client.db = db
        cmd = state.lookup_command(argv)
        if isinstance(cmd, ReplyError) or cmd.handler is None:
            raise CorruptData(f"unknown command in the log: {argv[0]!r}")
        client.cmd = cmd
        state.current_client = client
        state.touch_keys = True
        state.deny_blocking = True
        try:
            cmd.handler(client, argv)
        except ReplyError:
            self.errors += 1
        finally:
            state.deny_blocking = False
            state.current_client = None


def iter_incr_files(config: Any, manifest: Manifest) -> Iterator[tuple[str, bool]]:
    folder = aof_dir(config)
    for i, name in enumerate(manifest.incrs):
        yield os.path.join(folder, name), i == len(manifest.incrs) - 1


def truncate_tail(path: str, offset: int) -> None:
    """Cut a torn tail off the last log so new records follow whole ones (as Valkey does
    with aof-load-truncated)."""
    with open(path, "r+b") as fh:
        fh.truncate(offset)
        fh.flush()
        os.fsync(fh.fileno())
    fsync_dir(os.path.dirname(path))
