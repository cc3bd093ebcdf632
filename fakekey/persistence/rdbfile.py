"""Valkey's RDB file: what SAVE, BGSAVE, a save rule and SHUTDOWN write at `dir`/`dbfilename`,
and what the server loads at start. Values are rdb.py's (the DUMP serialization); this
module is the file around them, as Valkey 9.1.2 writes it (rdb.c's rdbSaveRio):

    "VALKEY080"                            magic and version ("REDIS0011" and older: REDIS)
    FA name value                          aux fields: valkey-ver, redis-bits, ctime,
                                           used-mem, aof-base
    F5 code                                FUNCTION2: one per function library
    FE db  FB keys expires                 SELECTDB and RESIZEDB, per database with keys
    [FC ms] [F8 idle | F9 freq] type key value
                                           a key: its deadline (EXPIRETIME_MS), its
                                           LRU idle seconds or LFU counter when the
                                           eviction policy is LRU or LFU, then the value
    FF crc64                               EOF and the CRC64 of all before (zeros under
                                           `rdbchecksum no`)

Loading reads the whole file first and installs nothing until it is read to its checksum,
so a refused file leaves no trace. Every refusal names the file, the offset and the cause,
with Valkey's wording where Valkey has one.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.memory import lfu
from fakekey.persistence import rdb
from fakekey.persistence.snapshot import LoadError

if TYPE_CHECKING:
    from fakekey.persistence.snapshot import Image

log = logging.getLogger("fakekey.net.server")

# opcodes (rdb.h)
OP_SLOT_IMPORT = 243
OP_SLOT_INFO = 244
OP_FUNCTION2 = 245
OP_FUNCTION_PRE_GA = 246
OP_MODULE_AUX = 247
OP_IDLE = 248
OP_FREQ = 249
OP_AUX = 250
OP_RESIZEDB = 251
OP_EXPIRETIME_MS = 252
OP_EXPIRETIME = 253
OP_SELECTDB = 254
OP_EOF = 255

FOREIGN_TYPE_MAX = 243  # with a REDIS magic, types and opcodes 22..243 mean something else
BLOCK = 1 << 15  # bytes gathered into one chunk of the file (one write, one CRC step)
_MS = struct.Struct("<q")
_MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


# --- writing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SaveOptions:
    """What a save needs beyond the data: read from the server when it starts."""

    limits: rdb.Limits
    valkey_version: str
    ctime: int  # seconds, the server's clock
    checksum: bool = True  # rdbchecksum
    lfu_decay_time: int = 1
    aof_base: bool = False
    # the server's used memory when it is known, else each key's estimate is summed
    used_memory: int | None = None
    key_cost: Callable[[bytes, Any], int] | None = None
    base_memory: int = 0
    # a snapshot for a replica: the replication stream's database, id and offset
    repl: tuple[int, str, int] | None = None


def iter_rdb(image: Image, options: SaveOptions, now_ms: int, out: list[bytes],
             per_key: bool = False) -> Iterator[None]:
    """Append the RDB file of `image` to `out` in chunks, yielding between pieces of
    work (every 64 keys, or every key with `per_key`; a big value a slice at a time).
    The body is encoded first (the header's used-mem is summed on the way), then the
    CRC64 runs over the whole file, also in slices."""
    body: list[bytes] = []
    memory = _Memory(options)
    yield from _iter_databases(image, options, now_ms, body, memory, per_key)
    header = _header(image, options, memory.total())
    out.append(header)
    out += body
    out.append(bytes((OP_EOF,)))
    crc = 0
    if options.checksum:
        for chunk in out:
            for start in range(0, len(chunk), BLOCK):
                crc = rdb.crc64(memoryview(chunk)[start:start + BLOCK], crc)
                yield
    out.append(crc.to_bytes(8, "little"))


def rdb_bytes(image: Image, options: SaveOptions, now_ms: int) -> bytes:
    """The whole file at once (SAVE, a shutdown: nothing else runs meanwhile)."""
    out: list[bytes] = []
    for _ in iter_rdb(image, options, now_ms, out):
        pass
    return b"".join(out)


class _Memory:
    """used-mem: the server's figure, or the sum of the keys' estimates met on the way."""

    def __init__(self, options: SaveOptions) -> None:
        self.known = options.used_memory
        self.cost = options.key_cost if options.used_memory is None else None
        self.summed = options.base_memory

    def total(self) -> int:
        return self.known if self.known is not None else self.summed


def _header(image: Image, options: SaveOptions, used_memory: int) -> bytes:
    """Magic, aux fields and the function libraries (rdbSaveInfoAuxFields, rdbSaveFunctions)."""
    c = options.limits.compression
    parts = [b"VALKEY%03d" % rdb.RDB_VERSION]
    aux = [(b"valkey-ver", options.valkey_version.encode()), (b"redis-bits", b"64"),
           (b"ctime", b"%d" % options.ctime), (b"used-mem", b"%d" % used_memory)]
    if options.repl is not None:
        stream_db, replid, offset = options.repl
        aux += [(b"repl-stream-db", b"%d" % stream_db), (b"repl-id", replid.encode()),
                (b"repl-offset", b"%d" % offset)]
    aux.append((b"aof-base", b"1" if options.aof_base else b"0"))
    for name, value in aux:
        parts += [bytes((OP_AUX,)), rdb._string(name, c), rdb._string(value, c)]
    for code in image.libraries:
        parts += [bytes((OP_FUNCTION2,)), rdb._string(code, c)]
    return b"".join(parts)


class _Blocks:
    """The file's bytes gathered into chunks of about BLOCK bytes (one write each)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.block = bytearray()

    def add(self, data: bytes) -> None:
        self.block += data
        if len(self.block) >= BLOCK:
            self.chunks.append(bytes(self.block))
            self.block = bytearray()

    def close(self) -> None:
        if self.block:
            self.chunks.append(bytes(self.block))
            self.block = bytearray()


def _iter_databases(image: Image, options: SaveOptions, now_ms: int, body: list[bytes],
                    memory: _Memory, per_key: bool) -> Iterator[None]:
    """SELECTDB, RESIZEDB and the keys of each database (rdbSaveDb)."""
    blocks = _Blocks(body)
    compress = options.limits.compression
    keys = 0
    for position, (index, data, expires) in enumerate(image.dbs):
        if not data:
            continue
        usage = _usage_writer(image, position, options, now_ms)
        blocks.add(bytes((OP_SELECTDB,)) + rdb._len(index) + bytes((OP_RESIZEDB,))
                   + rdb._len(len(data)) + rdb._len(len(expires)))
        for key, value in data.items():
            deadline = expires.get(key) if expires else None
            if deadline is not None:
                blocks.add(b"\xfc" + _MS.pack(deadline))
            if usage is not None:
                blocks.add(usage(key))
            if type(value) is int:  # a counter INCR left, in the live image: its bytes
                value = b"%d" % value
            if memory.cost is not None:
                memory.summed += memory.cost(key, value)
            if type(value) is bytes and len(value) < rdb.LZF_SLICE:  # the commonest, at once
                blocks.add(b"\x00" + rdb._string(key, compress) + rdb._string(value, compress))
            else:
                yield from _iter_key(key, value, options.limits, blocks)
            keys += 1
            if per_key or keys % 64 == 0:
                yield
    blocks.close()


def _iter_key(key: bytes, value: Any, limits: rdb.Limits, blocks: _Blocks) -> Iterator[None]:
    """Type, key and value, a big value a slice at a time."""
    compress = limits.compression
    pieces = [bytes((rdb.object_type(value),)), rdb._string(key, compress)]
    for _ in rdb.iter_body(value, limits, pieces):
        blocks.add(b"".join(pieces))
        pieces.clear()
        yield
    blocks.add(b"".join(pieces))


def _usage_writer(image: Image, position: int, options: SaveOptions,
                  now_ms: int) -> Callable[[bytes], bytes] | None:
    """The IDLE or FREQ opcode of each key of one database, when the policy asks for it
    (rdbSaveKeyValuePair: LRU idle time in seconds, or the decayed LFU counter)."""
    if not image.usage_kind:
        return None
    table = image.usage[position]
    if image.usage_kind == "lru":
        def idle(key: bytes) -> bytes:
            then = table.get(key)
            seconds = max(now_ms - then, 0) // 1000 if then is not None else 0
            return bytes((OP_IDLE,)) + rdb._len(seconds)
        return idle
    fresh = lfu.fresh(now_ms)
    decay = options.lfu_decay_time

    def freq(key: bytes) -> bytes:
        return bytes((OP_FREQ, lfu.decayed(table.get(key) or fresh, now_ms, decay)))
    return freq


# --- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadOptions:
    limits: rdb.Limits  # the thresholds of the encodings, rdb-version-check
    databases: int
    checksum: bool = True  # rdbchecksum: verify the file's CRC64


@dataclass
class LoadedDb:
    """One database of the file: values, deadlines and usage by key."""

    values: dict[bytes, Any] = field(default_factory=dict)
    deadlines: dict[bytes, int] = field(default_factory=dict)
    idle: dict[bytes, int] = field(default_factory=dict)  # LRU idle seconds
    freq: dict[bytes, int] = field(default_factory=dict)  # LFU counters


@dataclass
class Contents:
    """Everything an RDB file holds, read whole and checked."""

    version: int
    aux: list[tuple[bytes, bytes]] = field(default_factory=list)
    libraries: list[bytes] = field(default_factory=list)
    dbs: dict[int, LoadedDb] = field(default_factory=dict)
    empty_keys: list[bytes] = field(default_factory=list)
    checked: bool = True  # False: saved with rdbchecksum no (a zero CRC), not verified


def is_rdb(data: bytes) -> bool:
    """Whether `data` starts as an RDB file does (either magic)."""
    return data[:6] in (b"REDIS0", b"VALKEY")


def parse_rdb(path: str, data: bytes, options: LoadOptions) -> Contents:
    """Every record of an RDB file, or LoadError naming the file, the offset and the cause."""
    return _Parser(path, data, options).run()


class _Parser:
    """rdbLoadRio over a buffer: opcodes, then each key's value through rdb.py."""

    def __init__(self, path: str, data: bytes, options: LoadOptions) -> None:
        self.path = path
        self.data = data
        self.options = options
        self.reader = rdb.Reader(data)
        self.record = 0  # where the record being read starts

    def refuse(self, cause: str, offset: int | None = None) -> LoadError:
        at = self.reader.pos if offset is None else offset
        where = f"at offset {at}"
        if self.record != at:
            where += f" (the record at offset {self.record})"
        return LoadError(f"{self.path}: {cause} {where}")

    def run(self) -> Contents:
        try:
            contents = Contents(self._version())
            self._records(contents)
            self._checksum(contents)
        except rdb.ShortRead:
            raise self.refuse("Unexpected EOF reading RDB file (Short read loading DB)") from None
        except rdb.FormatError as err:  # outside a value: an opcode's own fields
            raise self.refuse(f"Bad data format ({err})") from None
        return contents

    def _version(self) -> int:
        magic = self.data[:9]
        if len(magic) < 9:
            raise self.refuse("Unexpected EOF reading RDB file (Short read loading DB)", len(magic))
        valkey = magic.startswith(b"VALKEY")
        if not (valkey or magic.startswith(b"REDIS0")):
            shown = magic.decode("latin-1")
            raise self.refuse(f"Wrong signature trying to load DB from file: {shown}", 0)
        digits = magic[6:9]
        version = int(digits) if digits.isdigit() else 0
        if not self._accepted(version, valkey):
            raise self.refuse(f"Can't handle RDB format version {version}", 0)
        self.reader.pos = 9
        return version

    def _accepted(self, version: int, valkey: bool) -> bool:
        """rdbIsVersionAccepted: REDIS up to 79, VALKEY from 80; strict: no future version,
        none of the foreign (non-OSS Redis) range 12..79."""
        if version < 1 or (valkey and version <= rdb.FOREIGN_MAX) or (not valkey and version > rdb.FOREIGN_MAX):
            return False
        if self.options.limits.relaxed_versions:
            return True
        return version <= rdb.RDB_VERSION and not rdb.FOREIGN_MIN <= version <= rdb.FOREIGN_MAX

    def _records(self, contents: Contents) -> None:
        r = self.reader
        byte, ms = r.byte, r.ms
        foreign = not self.data.startswith(b"VALKEY")
        db = self._database(contents, 0)
        deadline = idle = freq = -1
        while True:
            if not (deadline != -1 or idle != -1 or freq != -1) and self._short_strings(db):
                continue
            self.record = r.pos
            op = byte()
            if op == OP_EXPIRETIME_MS:
                deadline = ms()
                continue
            if op < rdb.FOREIGN_TYPE_MIN or (not foreign and op < OP_SLOT_IMPORT):
                self._key(contents, db, op, deadline, idle, freq)
                deadline = idle = freq = -1
                continue
            if foreign and op <= FOREIGN_TYPE_MAX:
                raise self.refuse(f"Can't handle foreign type or opcode {op} in RDB with version "
                                  f"{contents.version}", self.record)
            if op == OP_EOF:
                return
            if op == OP_SELECTDB:
                db = self._database(contents, r.length())
            elif op == OP_EXPIRETIME:
                deadline = int.from_bytes(r.take(4), "little", signed=True) * 1000
            elif op == OP_IDLE:
                idle = r.length()
            elif op == OP_FREQ:
                freq = byte()
            else:
                self._opcode(contents, op)

    def _short_strings(self, db: LoadedDb) -> bool:
        """Read a run of plain string keys whose key and value are shorter than 64 bytes
        (most keys of most files) without the general path's calls. False when the next
        record is anything else: the general path reads it."""
        r = self.reader
        data = self.data
        size = len(data)
        values = db.values
        pos = r.pos
        start = pos
        while pos + 2 < size and data[pos] == rdb.T_STRING:
            key_size = data[pos + 1]
            at = pos + 2 + key_size
            if key_size >= 64 or at >= size:
                break
            value_size = data[at]
            end = at + 1 + value_size
            if value_size >= 64 or end > size:
                break
            key = data[pos + 2:at]
            if key in values:
                break  # the general path refuses it, naming it
            values[key] = data[at + 1:end]
            pos = end
        r.pos = pos
        return pos != start

    def _database(self, contents: Contents, index: int) -> LoadedDb:
        if index >= self.options.databases:
            raise self.refuse(f"FATAL: Data file was created with a Valkey server configured to "
                              f"handle more than {self.options.databases} databases (DB {index})")
        db = contents.dbs.get(index)
        if db is None:
            db = contents.dbs[index] = LoadedDb()
        return db

    def _opcode(self, contents: Contents, op: int) -> None:
        r = self.reader
        if op == OP_RESIZEDB:
            r.length(), r.length()  # a sizing hint: nothing is allocated from it
        elif op == OP_AUX:
            self._aux(contents, r.string(), r.string())
        elif op == OP_FUNCTION2:
            contents.libraries.append(r.string())
        elif op == OP_SLOT_INFO:
            r.length(), r.length(), r.length()  # per-slot sizes: a hint, safe to ignore
        elif op == OP_MODULE_AUX:
            name = module_name(r.length())
            raise self.refuse(f"The RDB file contains AUX module data I can't load: no matching "
                              f"module '{name}'", self.record)
        elif op == OP_FUNCTION_PRE_GA:
            raise self.refuse("Pre-release function format not supported.", self.record)
        elif op == OP_SLOT_IMPORT:
            raise self.refuse("Slot import in progress: fakekey loads no cluster slot import "
                              f"(opcode {op})", self.record)
        else:
            raise self.refuse(f"Unknown RDB encoding type {op}", self.record)

    def _aux(self, contents: Contents, name: bytes, value: bytes) -> None:
        contents.aux.append((name, value))
        if name.lower() == b"slot-info" and value.count(b",") < 2:  # sscanf wants 3 numbers
            raise self.refuse(f"Bad slot-info aux field {value!r}", self.record)

    def _key(self, contents: Contents, db: LoadedDb, rdb_type: int, deadline: int, idle: int,
             freq: int) -> None:
        r = self.reader
        if not (0 <= rdb_type <= 7 or 9 <= rdb_type < rdb.TYPE_LAST):
            raise self.refuse(f"Unknown RDB encoding type {rdb_type}", self.record)
        key = r.string()
        if rdb_type == rdb.T_STRING:  # the commonest, without the loaders' dispatch
            value: Any = r.string()
        else:
            value = self._value(contents, rdb_type, key)
            if value is None:
                return
        if key in db.values:
            raise self.refuse(f"Duplicated key found in RDB file: {key!r}", self.record)
        db.values[key] = value
        if deadline != -1:
            db.deadlines[key] = deadline
        if idle != -1:
            db.idle[key] = idle
        if freq != -1:
            db.freq[key] = freq

    def _value(self, contents: Contents, rdb_type: int, key: bytes) -> Any:
        r = self.reader
        if rdb_type == rdb.T_MODULE_PRE_GA:
            raise self.refuse("Pre-release module format not supported", self.record)
        try:
            return rdb.deserialize(rdb_type, r, self.options.limits)
        except rdb.EmptyKey:
            contents.empty_keys.append(key)  # skipped, as Valkey does (an old bug made some)
            return None
        except rdb.ShortRead:
            raise
        except rdb.ModuleError as err:  # a module value: Valkey's own words for it
            raise self.refuse(str(err), self.record) from None
        except rdb.FormatError as err:
            raise self.refuse(f"Bad data format in the value of key {key!r} ({err})") from None

    def _checksum(self, contents: Contents) -> None:
        """After EOF, RDB 5 and later: the CRC64 of everything before it (0: not computed)."""
        if contents.version < 5:
            return
        r = self.reader
        end = r.pos
        stored = int.from_bytes(r.take(8), "little")
        if not self.options.checksum:
            return
        if stored == 0:
            contents.checked = False
            return
        expected = rdb.crc64(memoryview(self.data)[:end])
        if stored != expected:
            raise self.refuse(f"Wrong RDB checksum expected: ({expected:x}) but got ({stored:x}). "
                              "RDB CRC error", end)


def module_name(module_id: int) -> str:
    """moduleTypeNameByID: the 9-character name held in a module type id's top 54 bits."""
    bits = module_id >> 10
    return "".join(_MODULE_CHARSET[(bits >> (6 * (8 - i))) & 63] for i in range(9))


def log_aux_fields(contents: Contents, now_s: int) -> None:
    """What Valkey logs of the aux fields it reads."""
    for name, value in contents.aux:
        text = value.decode("utf-8", "replace")
        lowered = name.lower()
        if name.startswith(b"%"):
            log.info("RDB '%s': %s", name.decode("utf-8", "replace"), text)
        elif lowered in (b"redis-ver", b"valkey-ver"):
            producer = "Redis" if lowered == b"redis-ver" else "Valkey"
            log.info("Loading RDB produced by %s version %s", producer, text)
        elif lowered == b"ctime" and text.lstrip("-").isdigit():
            log.info("RDB age %d seconds", max(now_s - int(text), 0))
        elif lowered == b"used-mem" and text.isdigit():
            log.info("RDB memory usage when created %.2f Mb", int(text) / (1024 * 1024))
        elif lowered == b"aof-base" and text not in ("", "0"):
            log.info("RDB is base AOF")
