"""fakekey's own snapshots: the whole keyspace and the function libraries in one file of
frames, the append-only log's base files (`dbfilename` is Valkey's RDB file: rdbfile.py;
a file of this format there, saved before, still loads). The image of the keyspace a
save of either format takes is here too.

    header   b"FKSNAP" version:u8 created_ms:i64 fakekey_version:blob
    F        library code (what FUNCTION LOAD took)
    K        db:u32 key:blob deadline:i64 (-1: none) value (codec.py)
    E        keys:u64 libraries:u64    (the end: a file without it is not a snapshot)

Written to `<name>.tmp-<pid>`, fsynced, renamed over the target, then the directory is
fsynced, so a crash leaves the old snapshot or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey._version import __version__
from fakekey.core.table import Table
from fakekey.persistence.codec import (
    T_STRING,
    CorruptData,
    FrameError,
    Reader,
    Writer,
    frame,
    iter_encode_value,
    iter_frames,
)

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

MAGIC = b"FKSNAP"
VERSION = 1
OP_LIBRARY, OP_KEY, OP_END = b"FKE"
# A string key's frame in one pack each side of the key: OP_KEY, the database, the key's
# length; then the deadline, T_STRING and the value's length (Writer's layout exactly).
_KEY_HEAD = struct.Struct("<BIQ")
_STRING_HEAD = struct.Struct("<qBQ")


class LoadError(Exception):
    """A file that cannot be loaded: the message names the file and the offset."""


@dataclass
class Image:
    """What a snapshot holds, taken from the live state (or a copy of it)."""

    libraries: list[bytes]
    # (index, data, expires): the live tables, or copies of them
    dbs: list[tuple[int, Table | dict[bytes, Any], Table | dict[bytes, int]]]
    # what an RDB file keeps of each key's use when the eviction policy reads it: "lru"
    # (the last access times) or "lfu" (the counters), one table per entry of `dbs`
    usage_kind: str = ""
    usage: list[Table | dict[bytes, int]] = field(default_factory=list)


def usage_kind(state: ServerState) -> str:
    """"lru" or "lfu" when the eviction policy is one (Valkey's MAXMEMORY_FLAG_LRU/LFU)."""
    policy = state.config["maxmemory-policy"]
    return policy[-3:] if policy.endswith(("-lru", "-lfu")) else ""


def live_image(state: ServerState) -> Image:
    """The live keyspace itself (for a synchronous save: nothing runs meanwhile)."""
    dbs = [db for db in state.dbs if db.data]
    kind = usage_kind(state)
    usage: list[Table | dict[bytes, int]] = [db.lfu if kind == "lfu" else db.access.settled() for db in dbs] if kind else []
    return Image(library_codes(state), [(db.index, db.data, db.expires) for db in dbs], kind, usage)


def copied_image(state: ServerState) -> Image:
    """A point-in-time copy for a background save: strings are immutable and shared,
    containers are copied (dict/list copies, mostly at C speed)."""
    dbs: list[tuple[int, Table | dict[bytes, Any], Table | dict[bytes, int]]] = []
    usage: list[Table | dict[bytes, int]] = []
    policy = usage_kind(state)
    for db in state.dbs:
        if not db.data:
            continue
        data = plain_copy(db.data)
        if set(map(type, data.values())) - {bytes}:  # only then a walk: containers copied
            for key, value in data.items():
                kind = type(value)
                if kind is bytearray:
                    data[key] = bytes(value)
                elif kind is int:  # a counter INCR left (fakekey/core/keyspace.py)
                    data[key] = b"%d" % value
                elif kind is not bytes:
                    data[key] = value.copy()
        dbs.append((db.index, data, plain_copy(db.expires)))
        if policy:
            usage.append(plain_copy(db.lfu if policy == "lfu" else db.access.settled()))
    return Image(library_codes(state), dbs, policy, usage)


def plain_copy(table: Table | dict[bytes, Any]) -> dict[bytes, Any]:
    """A dict copy of a keyspace table, shard by shard at C speed (a million keys in a
    fraction of the time a walk of its mapping protocol takes)."""
    out: dict[bytes, Any] = {}
    for shard in table.shards if isinstance(table, Table) else (table,):
        out.update(shard)
    return out


def library_codes(state: ServerState) -> list[bytes]:
    engine = state.functions
    if engine is None:
        return []
    return [lib.code for lib in engine.current.libraries.values()]


def iter_snapshot(image: Image, now_ms: int, out: list[bytes], per_key: bool = False) -> Iterator[None]:
    """Append the snapshot's frames to `out`, yielding between pieces of work."""
    head = Writer()
    head.buf += MAGIC
    head.u8(VERSION)
    head.i64(now_ms)
    head.blob(__version__.encode())
    out.append(frame(head.buf))
    for code in image.libraries:
        w = Writer()
        w.u8(OP_LIBRARY)
        w.blob(code)
        out.append(frame(w.buf))
    keys = 0
    for index, data, expires in image.dbs:
        for key, value in data.items():
            if type(value) is int:  # a counter INCR left, in the live image: its bytes
                value = b"%d" % value
            if type(value) is bytes:  # the commonest value, without a Writer's calls
                out.append(frame(_KEY_HEAD.pack(OP_KEY, index, len(key)) + key
                                 + _STRING_HEAD.pack(expires.get(key, -1), T_STRING, len(value))
                                 + value))
                keys += 1
                if per_key or keys % 64 == 0:
                    yield
                continue
            w = Writer()
            w.u8(OP_KEY)
            w.u32(index)
            w.blob(key)
            w.i64(expires.get(key, -1))
            yield from iter_encode_value(w, value)
            out.append(frame(w.buf))
            keys += 1
            if per_key or keys % 64 == 0:
                yield
    end = Writer()
    end.u8(OP_END)
    end.u64(keys)
    end.u64(len(image.libraries))
    out.append(frame(end.buf))


def snapshot_bytes(image: Image, now_ms: int) -> bytes:
    out: list[bytes] = []
    for _ in iter_snapshot(image, now_ms, out):
        pass
    return b"".join(out)


# --- files ---------------------------------------------------------------------------------------


_temp_counter = 0


def temp_name(path: str) -> str:
    """A temporary name next to `path`, unique in this process."""
    global _temp_counter
    _temp_counter += 1
    return f"{path}.tmp-{os.getpid()}-{_temp_counter}"


def write_temp(temporary: str, chunks: list[bytes], cancelled: Any = None) -> None:
    """Write and fsync a temporary file (from a worker thread for background saves; a
    job cancelled meanwhile removes its own file)."""
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            for chunk in chunks:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    if cancelled is not None and cancelled():
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def commit(temporary: str, path: str) -> None:
    """Rename the finished temporary file into place and make the rename durable."""
    os.replace(temporary, path)
    fsync_dir(os.path.dirname(path) or ".")


def write_file_atomically(path: str, chunks: list[bytes]) -> None:
    """Temp file, fsync, rename, directory fsync. The temp file goes on failure."""
    temporary = temp_name(path)
    write_temp(temporary, chunks)
    try:
        commit(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- loading -------------------------------------------------------------------------------------


@dataclass
class Loaded:
    libraries: list[bytes]
    keys: list[tuple[int, bytes, int, Any]]  # (db, key, deadline or -1, value)


def parse_snapshot(path: str, data: bytes) -> Loaded:
    """Every record of a snapshot file; LoadError naming the file and offset if any is bad
    (a snapshot is renamed into place whole, so a cut one is as bad as a damaged one)."""
    loaded = Loaded([], [])
    frames = iter_frames(data)
    offset = 0
    try:
        offset, head = next(frames)
        r = Reader(head)
        if bytes(head[:len(MAGIC)]) != MAGIC:
            raise LoadError(f"{path}: not a fakekey snapshot (bad signature at offset 0)")
        r.pos = len(MAGIC)
        version = r.u8()
        if version != VERSION:
            raise LoadError(f"{path}: snapshot format version {version} is not supported (this is {VERSION})")
        ended = False
        for offset, payload in frames:
            if ended:
                raise LoadError(f"{path}: data after the end record at offset {offset}")
            r = Reader(payload)
            op = r.u8()
            if op == OP_KEY:
                db = r.u32()
                key = r.blob()
                deadline = r.i64()
                loaded.keys.append((db, key, deadline, _decode(r)))
            elif op == OP_LIBRARY:
                loaded.libraries.append(r.blob())
            elif op == OP_END:
                if r.u64() != len(loaded.keys) or r.u64() != len(loaded.libraries):
                    raise LoadError(f"{path}: the end record's counts do not match at offset {offset}")
                ended = True
            else:
                raise CorruptData(f"unknown record type {op}")
        if not ended:
            raise LoadError(f"{path}: the snapshot has no end record (cut at offset {len(data)})")
    except StopIteration:
        raise LoadError(f"{path}: empty file") from None
    except FrameError as err:
        raise LoadError(f"{path}: bad record at offset {err.offset}: {err.reason}") from None
    except CorruptData as err:
        raise LoadError(f"{path}: bad record at offset {offset}: {err}") from None
    return loaded


def _decode(r: Reader) -> Any:
    from fakekey.persistence.codec import decode_value

    value = decode_value(r)
    if not r.done():
        raise CorruptData("trailing bytes after the value")
    return value
