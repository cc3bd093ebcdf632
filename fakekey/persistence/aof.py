"""Valkey's append-only file (a multi-part AOF, Valkey 7+), and fakekey's record form.

**Valkey's AOF** (what `appendonly yes` writes and loads). The folder `appenddirname`
holds a base (an RDB file, `aof-use-rdb-preamble yes`, or RESP commands), incr files of
RESP commands, and the manifest naming them (aof_manifest.py). The log is a subscriber of
the server's `Propagation` (propagate.py): each execution unit arrives as Valkey's
propagation form, encoded with the log's own SELECT state, MULTI/EXEC around a unit of
more than one command, without what is for replicas only (PUBLISH), preceded by
`#TS:<unix seconds>` when `aof-timestamp-enabled` says so and the second changed. It is
written before any reply of the loop turn leaves (`before_reply`), and fsynced there
under `appendfsync always`.

Loading an incr (or RESP base) file is Valkey's loadSingleAppendOnlyFile: command after
command as the AOF client (never blocked, no reply), `#` lines skipped, a transaction
applied at its EXEC; a cut last command (or a MULTI without its EXEC) at the end of the
last file is truncated away under `aof-load-truncated yes`. The whole set of files is
read and checked before a single command runs.

**fakekey's record form** (FKAOF records) still feeds the in-process replicas of a
`fakekey.Cluster` (replicas.py), and is what fakekey's former log holds: a folder written
by an earlier release (its manifest starts `fakekey-aof-manifest 1`) loads once and is
written again in Valkey's form at once.

    header  b"FKAOF" version:u8
    C       db:u32 now:i64 argc:u64 args (blobs)
    V       db:u32 now:i64 key:blob present:u8 [deadline:i64 value]
    X       db:u32 now:i64 key:blob                (the key expired or was evicted)
    M       count:u64 records (blobs)              (one unit)
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.persistence import rdb
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
from fakekey.persistence.propagate import Op, StreamEncoder, encode_command
from fakekey.persistence.snapshot import Image, LoadError, fsync_dir
from fakekey.resp.replies import NO_REPLY, ReplyError
from fakekey.types.module_value import ModuleValue

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


# --- Valkey's AOF: the writer ---------------------------------------------------------------------


class AppendLog:
    """The incr file being written. `state.aof` while appendonly is on, and a subscriber
    of the server's Propagation."""

    def __init__(self, state: ServerState, path: str) -> None:
        self.state = state
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.encoder = StreamEncoder(replica=False)
        self.pending = bytearray()  # units not yet written to the file
        self.unsynced = False  # written but not fsynced (everysec / no)
        self.write_ok = True
        self.last_fsync = time.monotonic()
        self.size = os.fstat(self.fd).st_size
        self.last_timestamp = 0  # the second of the last #TS annotation

    # --- what the server calls -------------------------------------------------------

    def propagate(self, ops: list[Op]) -> None:
        """A unit of Valkey's propagation form, as this file's commands."""
        if self.state.config["aof-timestamp-enabled"]:
            self._timestamp()
        self.pending += self.encoder.encode(ops)

    def _timestamp(self) -> None:
        """genAofTimestampAnnotationIfNeeded: `#TS:<seconds>` when the second changed."""
        now = int(time.time())
        if now > self.last_timestamp:
            self.last_timestamp = now
            self.pending += b"#TS:%d\r\n" % now

    def run(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        """Commands reach the log through the Propagation: the handler alone here."""
        return cmd.handler(client, argv)

    def expired(self, db: int, key: bytes) -> None:
        """Removals reach the log through the Propagation too."""

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
                # no half command stays behind, and the data waits for the next try
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
        """From the cron: units made outside any reply (expiries), the everysec fsync."""
        if self.pending:
            self.flush(self.state.config["appendfsync"] == "always")
        if self.unsynced and self.state.config["appendfsync"] == "everysec" \
                and time.monotonic() - self.last_fsync >= 1:
            self.flush(True)

    def switch_to(self, path: str) -> None:
        """Continue in a new incr file (a rewrite began): the old one flushed and synced,
        the new one starts with its own SELECT (Valkey's aof_selected_db = -1)."""
        self.flush(True)
        os.close(self.fd)
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.encoder = StreamEncoder(replica=False)

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                self.flush(True)
            os.close(self.fd)
            self.fd = -1


# --- Valkey's AOF: reading ------------------------------------------------------------------------


@dataclass
class AofRead:
    """The commands of a RESP file, whole ones only; the offset to truncate at when its
    end is cut (a cut command, or a MULTI without its EXEC), with Valkey's log lines."""

    commands: list[list[bytes]]
    truncated_at: int | None = None
    notes: list[str] = field(default_factory=list)


BAD_FORMAT = ("Bad file format reading the append only file {name}: make a backup of your AOF "
              "file, then use ./valkey-check-aof --fix <filename.manifest>")
UNEXPECTED_EOF = ("Unexpected end of file reading the append only file {name}. You can: 1) Make a "
                  "backup of your AOF file, then use ./valkey-check-aof --fix <filename.manifest>. "
                  "2) Alternatively you can set the 'aof-load-truncated' configuration option to "
                  "yes and restart the server.")


class BadFormat(Exception):
    """A RESP file that is not commands (Valkey's fmterr)."""


def parse_aof(name: str, data: bytes | memoryview) -> AofRead:
    """The file's commands as Valkey's loader reads them; BadFormat (with Valkey's text)
    when it is not RESP."""
    buf = bytes(data)
    n = len(buf)
    pos = 0
    commands: list[list[bytes]] = []
    valid_up_to = 0
    multi: tuple[int, int] | None = None  # an open MULTI: its index and the offset before it
    while pos < n:
        line, pos = _line(buf, pos)
        if line[:1] == b"#":
            continue  # an annotation (#TS:...)
        if line[:1] != b"*":
            raise BadFormat(BAD_FORMAT.format(name=name))
        parsed = _command(name, buf, pos, _atol(line[1:]) if len(line) > 1 else None)
        if parsed is None:  # the end of the file cut it
            return _cut(commands, valid_up_to, multi)
        argv, pos = parsed
        word = argv[0].lower()
        if word == b"multi":
            multi = (len(commands), valid_up_to)
        elif word == b"exec":
            multi = None
        commands.append(argv)
        valid_up_to = pos
    if multi is not None:  # a transaction without its EXEC: reverted, as a cut end
        read = _cut(commands, valid_up_to, multi)
        read.notes.insert(0, f"Revert incomplete MULTI/EXEC transaction in AOF file {name}")
        return read
    return AofRead(commands)


def _command(name: str, buf: bytes, pos: int, argc: int | None) -> tuple[list[bytes], int] | None:
    """The arguments after a `*argc` line, and the offset after them; None when the file
    ends before they do."""
    if argc is None:  # `*` and the end of the file
        return None
    if argc < 1:
        raise BadFormat(BAD_FORMAT.format(name=name))
    n = len(buf)
    argv: list[bytes] = []
    for _ in range(argc):
        if pos >= n:
            return None
        line, pos = _line(buf, pos)
        if line[:1] != b"$":
            raise BadFormat(BAD_FORMAT.format(name=name))
        size = _atol(line[1:])
        if size < 0:
            raise BadFormat(BAD_FORMAT.format(name=name))
        if pos + size + 2 > n:  # the argument or its CRLF is cut
            return None
        argv.append(buf[pos:pos + size])
        pos += size + 2  # the CRLF is skipped unread, as Valkey's loader does
    return argv, pos


def _cut(commands: list[list[bytes]], valid_up_to: int, multi: tuple[int, int] | None) -> AofRead:
    """The end was cut: what was whole stays, a transaction still open goes entirely."""
    if multi is not None:
        return AofRead(commands[:multi[0]], multi[1])
    return AofRead(commands, valid_up_to)


def _line(buf: bytes, pos: int) -> tuple[bytes, int]:
    """fgets: up to and including the next newline, or the rest."""
    end = buf.find(b"\n", pos)
    end = len(buf) if end < 0 else end + 1
    return buf[pos:end], end


def _atol(text: bytes) -> int:
    """atoi/strtol: the leading integer, 0 when there is none."""
    text = text.strip(b" \t\r\n")
    i = 1 if text[:1] in (b"-", b"+") else 0
    while i < len(text) and 48 <= text[i] <= 57:
        i += 1
    try:
        return int(text[:i])
    except ValueError:
        return 0


def run_as_log_client(state: ServerState, client: Any, cmd: Any, argv: list[bytes]) -> bool:
    """One command of a log, run as Valkey's AOF client runs it: never blocked, its
    reads not counted as a client's. False when it answered an error."""
    client.cmd = cmd
    state.current_client = client
    state.touch_keys = True
    state.deny_blocking = True
    try:
        cmd.handler(client, argv)
        return True
    except ReplyError:
        return False
    finally:
        state.deny_blocking = False
        state.current_client = None


class CommandReplayer:
    """Runs an AOF's commands as Valkey's AOF client: any command, never blocked, no
    reply; a transaction's commands at its EXEC."""

    def __init__(self, state: ServerState) -> None:
        from fakekey.core.client import Client

        self.state = state
        self.client = Client(state)
        self.client.acl_unrestricted = True
        self.client.authenticated = True
        self.queued: list[list[bytes]] | None = None
        self.errors = 0

    def run_all(self, name: str, commands: list[list[bytes]]) -> None:
        for argv in commands:
            self.run(name, argv)

    def run(self, name: str, argv: list[bytes]) -> None:
        word = argv[0].lower()
        if word == b"multi":
            self.queued = []
        elif word == b"exec" and self.queued is not None:
            queued, self.queued = self.queued, None
            for one in queued:
                self._call(name, one)
        elif self.queued is not None:
            self.queued.append(argv)
        else:
            self._call(name, argv)

    def _call(self, name: str, argv: list[bytes]) -> None:
        state = self.state
        cmd = state.lookup_command(argv)
        if isinstance(cmd, ReplyError) or cmd.handler is None:
            if isinstance(cmd, ReplyError) and state.lookup(argv[0]) is not None:
                self.errors += 1  # a known command with the wrong arguments: its error
                return
            raise LoadError(f"Unknown command '{argv[0].decode('utf-8', 'replace')}' reading "
                            f"the append only file {name}")
        state.tick()
        if not run_as_log_client(state, self.client, cmd, argv):
            self.errors += 1


# --- Valkey's AOF: a base of commands (aof-use-rdb-preamble no) -----------------------------------


def iter_aof_base(image: Image, now_ms: int, limits: rdb.Limits, out: list[bytes]) -> Iterator[None]:
    """rewriteAppendOnlyFileRio's file: the function libraries (FUNCTION LOAD), then each
    database's keys; a string as SET, a module value as its module's commands (else as
    RESTORE), any other value as RESTORE of its DUMP payload; the deadline as PEXPIREAT.
    Keys already expired are left out. Yields between keys."""
    for code in image.libraries:
        out.append(encode_command([b"FUNCTION", b"LOAD", code]))
    for index, data, expires in image.dbs:
        if not data:
            continue
        out.append(encode_command([b"SELECT", b"%d" % index]))
        for key, value in data.items():
            deadline = expires.get(key, -1)
            if deadline != -1 and deadline < now_ms:
                continue
            rebuilt = value.rewrite_commands(key) if isinstance(value, ModuleValue) else None
            if type(value) is int:  # a counter INCR left, in the live image: its bytes
                value = b"%d" % value
            if isinstance(value, (bytes, bytearray)):
                out.append(encode_command([b"SET", key, bytes(value)]))
            elif rebuilt is not None:  # a module value, as its module's aof_rewrite writes it
                out += [encode_command(argv) for argv in rebuilt]
            else:
                out.append(encode_command([b"RESTORE", key, b"0", rdb.dump(value, limits)]))
            if deadline != -1:
                out.append(encode_command([b"PEXPIREAT", key, b"%d" % deadline]))
            yield


# --- fakekey's former log: its manifest -----------------------------------------------------------


@dataclass
class FormerManifest:
    """The manifest fakekey wrote before it wrote Valkey's (read once, to migrate)."""

    base: str | None = None
    incrs: list[str] = field(default_factory=list)
    seq: int = 0


def parse_former_manifest(path: str, text: bytes) -> FormerManifest:
    lines = text.decode("utf-8", "replace").splitlines()
    if not lines or lines[0] != "fakekey-aof-manifest 1":
        raise LoadError(f"{path}: not a fakekey manifest (bad first line at offset 0)")
    manifest = FormerManifest()
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


# --- fakekey's record form (in-process replicas, and the former log) ------------------------------


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


# --- fakekey's record form: the recorder ----------------------------------------------------------


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

    def fields_expired(self, db: int, key: bytes, fields: list[bytes], dirtied: int,
                       emptied: bool) -> None:
        """Fields of a hash expired: fakekey's records replay the command (or the cron's
        own step) that expired them under its clock, so nothing more to record."""

    def expired(self, db: int, key: bytes) -> None:
        """A key expired (or was evicted): its removal is logged where it happened."""
        self.group.append(expired_record(db, self.state.now, key))
        if not self.depth:
            self._close_group()

    def _close_group(self) -> None:
        group = self.group
        self.group = []
        self.deliver(group[0] if len(group) == 1 else multi_record(group))


# --- fakekey's record form: loading ---------------------------------------------------------------


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
        if not run_as_log_client(state, client, cmd, argv):
            self.errors += 1


def truncate_tail(path: str, offset: int) -> None:
    """Cut a torn tail off the last incr file so new commands follow whole ones
    (aof-load-truncated)."""
    with open(path, "r+b") as fh:
        fh.truncate(offset)
        fh.flush()
        os.fsync(fh.fileno())
    fsync_dir(os.path.dirname(path))
