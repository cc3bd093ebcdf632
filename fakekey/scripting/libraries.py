"""Valkey's functions engine: libraries of Lua functions (FUNCTION LOAD), run by FCALL.

One Lua state holds every library (`LuaSandbox` of kind "function": keys and args are the
callback's arguments, no KEYS/ARGV globals). Loading a library runs its code once with
the load-time API as its globals: `redis`/`server` holding only `register_function`,
`log` and the version and log-level constants; everything else is a "nonexistent global
variable" there, as in Valkey. The callbacks it registers see the full sandbox when they
run. FUNCTION FLUSH starts a fresh Lua state; SCRIPT FLUSH does not touch functions.

What the commands see (`Libraries`, one per server as `state.functions`): libraries by
name (case-sensitive), functions by name (case-insensitive, as Valkey's dictionary),
with their flags and description, and their code, which FUNCTION DUMP serializes.

The DUMP payload is Valkey's: for each library the RDB opcode FUNCTION2 (245) and the
library's code as an RDB string, then the RDB version (80) and a CRC64 (Jones), both
little-endian. fakekey writes the code uncompressed (Valkey LZF-compresses a long code
when it shrinks; both read either form), so a payload of fakekey's restores on Valkey and
the other way round; the bytes equal Valkey's when its compression would not apply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey._version import REDIS_VERSION
from fakekey.resp.splitargs import split_args
from fakekey.scripting.bridge import CommandBridge, ScriptRun, runner_of
from fakekey.scripting.runtime import INTERNAL_CHUNK, LuaSandbox

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState
    from fakekey.scripting.bridge import ScriptRunner

FUNCTION_CLIENT_ID = 2  # Valkey's FUNCTION engine client (the EVAL engine's is 1)
ENGINE_NAME = b"LUA"
LOAD_TIMEOUT = 0.5  # seconds a library's code may run at FUNCTION LOAD
LOAD_TIMEOUT_ERROR = b"ERR FUNCTION LOAD timeout"
NO_WRITES = "no-writes"
# the flags register_function knows, in the order FUNCTION LIST shows them
FLAG_ORDER = (NO_WRITES, "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys")

NAME_RULES = b"names can only contain letters, numbers, or underscores(_) and must be at least one character long"


class LibraryError(Exception):
    """A library that cannot be created, restored or joined: `message` is Valkey's text
    without the `ERR ` its reply adds."""

    def __init__(self, message: bytes) -> None:
        super().__init__(message)
        self.message = message


# --- libraries and functions ---------------------------------------------------------------


@dataclass(eq=False)
class Function:
    name: bytes
    callback: Any  # the Lua function
    description: bytes | None
    flags: frozenset[str]
    library: Library
    straight: bool = False  # it never loops (runtime.straight_line): it runs inline

    def __post_init__(self) -> None:
        # what every FCALL asks, answered once
        self.no_writes = NO_WRITES in self.flags
        self.allow_oom = "allow-oom" in self.flags


@dataclass(eq=False)
class Library:
    name: bytes
    code: bytes  # the whole FUNCTION LOAD payload, shebang included
    functions: dict[bytes, Function] = field(default_factory=dict)  # exact names


class LibrarySet:
    """Libraries and their functions (Valkey's functionsLibCtx): the server's current
    set, or the one a FUNCTION RESTORE builds before it joins."""

    def __init__(self) -> None:
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}  # ASCII-lowercased name -> function

    @property
    def functions_count(self) -> int:
        """FUNCTION STATS' count: every function of every library."""
        return sum(len(lib.functions) for lib in self.libraries.values())

    def lookup(self, name: bytes) -> Function | None:
        functions = self.functions
        return functions.get(name) or functions.get(name.lower())  # names come lowercase, mostly

    def link(self, lib: Library) -> None:
        for fn in lib.functions.values():
            self.functions.setdefault(fn.name.lower(), fn)  # Valkey's dictAdd: first wins
        self.libraries[lib.name] = lib

    def unlink(self, lib: Library) -> None:
        for fn in lib.functions.values():
            if self.functions.get(fn.name.lower()) is fn:
                del self.functions[fn.name.lower()]
        del self.libraries[lib.name]

    def colliding_function(self, lib: Library) -> Function | None:
        """The first function of `lib` whose name another library here already has."""
        for fn in lib.functions.values():
            if fn.name.lower() in self.functions:
                return fn
        return None


def valid_name(name: bytes) -> bool:
    """Valkey's functionsVerifyName: [a-zA-Z0-9_]+."""
    return bool(name) and all(ch == 95 or 48 <= ch <= 57 or 65 <= ch <= 90 or 97 <= ch <= 122 for ch in name)


@dataclass
class LibraryMetadata:
    engine: bytes
    name: bytes
    body: bytes  # the code after the shebang line, from its newline on


def parse_metadata(code: bytes) -> LibraryMetadata:
    """The `#!<engine> name=<library>` shebang (Valkey's functionExtractLibMetaData; the
    code is a C string there, so a NUL ends the shebang search)."""
    if not code.startswith(b"#!"):
        raise LibraryError(b"Missing library metadata")
    newline = code.find(b"\n")
    nul = code.find(b"\0")
    if newline < 0 or 0 <= nul < newline:
        raise LibraryError(b"Invalid library metadata")
    parts = split_args(code[:newline])
    if not parts:
        raise LibraryError(b"Invalid library metadata")
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise LibraryError(b"Invalid metadata value, name argument was given multiple times")
            name = part[5:]
            continue
        raise LibraryError(b"Invalid metadata value given: " + part.split(b"\0", 1)[0])
    if name is None:
        raise LibraryError(b"Library name was not given")
    return LibraryMetadata(parts[0][2:], name, code[newline:])


# --- the Lua side: loading a library's code ------------------------------------------------

# Built once per Lua state with the trusted loader (frames hidden like the bootstrap's):
# the load-time globals, and the registration calls collect into `pending`.
_LOAD_API = r"""
local R, protect = ...
local type, next, tostring, error, select, setmetatable, ipairs, lower =
      type, next, tostring, error, select, setmetatable, ipairs, string.lower
local FLAGS = {}
for _, name in ipairs({'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}) do
  FLAGS[name] = name
end

local pending  -- the functions registered by the library being loaded (nil otherwise)

local function fail(msg)
  local t = {}
  t.err = 'ERR ' .. msg
  error(t, 0)
end

-- lua_isstring: a string or a number (as its string)
local function text(v)
  local tv = type(v)
  if tv == 'string' then return v end
  if tv == 'number' then return tostring(v) end
  return nil
end

local function read_flags(t)
  local flags, j = {}, 1
  while true do
    local v = t[j]
    if v == nil then return flags end
    local s = text(v)
    local flag = s and FLAGS[lower(s)]
    if not flag then fail('unknown flag given') end
    flags[#flags + 1] = flag
    j = j + 1
  end
end

local function named_args(t)
  if type(t) ~= 'table' then
    fail('calling server.register_function with a single argument is only applicable to Lua table '
         .. '(representing named arguments).')
  end
  local f = {}
  for k, v in next, t do
    local key = text(k)
    if not key then fail('named argument key given to server.register_function is not a string') end
    key = lower(key)
    if key == 'function_name' then
      f.name = text(v)
      if not f.name then fail('function_name argument given to server.register_function must be a string') end
    elseif key == 'description' then
      f.description = text(v)
      if not f.description then fail('description argument given to server.register_function must be a string') end
    elseif key == 'callback' then
      if type(v) ~= 'function' then
        fail('callback argument given to server.register_function must be a function')
      end
      f.callback = v
    elseif key == 'flags' then
      if type(v) ~= 'table' then
        fail('flags argument to server.register_function must be a table representing function flags')
      end
      f.flags = read_flags(v)
    else
      fail('unknown argument given to server.register_function')
    end
  end
  if not f.name then fail('server.register_function must get a function name argument') end
  if not f.callback then fail('server.register_function must get a callback argument') end
  return f
end

local function positional_args(name, callback)
  local f = {}
  f.name = text(name)
  if not f.name then fail('first argument to server.register_function must be a string') end
  if type(callback) ~= 'function' then fail('second argument to server.register_function must be a function') end
  f.callback = callback
  return f
end

local function register_function(...)
  if not pending then fail('server.register_function can only be called on FUNCTION LOAD command') end
  local n = select('#', ...)
  if n < 1 or n > 2 then fail('wrong number of arguments to server.register_function') end
  local f
  if n == 1 then f = named_args((...)) else f = positional_args(...) end
  pending[#pending + 1] = f
end

local missing = {__index = function(_, name)
  error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
end}
local api = {}
api.register_function = register_function
api.log = R.log
for _, k in ipairs({'LOG_DEBUG', 'LOG_VERBOSE', 'LOG_NOTICE', 'LOG_WARNING', 'REDIS_VERSION',
                    'REDIS_VERSION_NUM', 'VALKEY_VERSION', 'VALKEY_VERSION_NUM', 'SERVER_NAME'}) do
  api[k] = R[k]
end
setmetatable(api, missing)
local globals = {}
globals.redis, globals.server = api, api
setmetatable(globals, missing)

local function begin() pending = {} end
local function collect()
  local p = pending
  pending = nil
  return p
end
return protect(globals), begin, collect
"""


@dataclass
class Registered:
    """A function as the library's code registered it."""

    name: bytes
    callback: Any
    description: bytes | None
    flags: frozenset[str]


class FunctionBridge(CommandBridge):
    """The FUNCTION engine's host: a run's rules as EVAL's, and FUNCTION LOAD's timeout."""

    load_deadline = 0.0

    def should_stop(self) -> bytes | None:
        if self.load_deadline and time.monotonic() > self.load_deadline:
            return LOAD_TIMEOUT_ERROR
        return super().should_stop()


class LibraryLoader:
    """The FUNCTION engine's Lua state: compiles a library's code and runs it to learn
    the functions it registers."""

    def __init__(self, state: ServerState, bridge: FunctionBridge) -> None:
        self.bridge = bridge
        self.sandbox = LuaSandbox(bridge, "function", redis_version=REDIS_VERSION,
                                  valkey_version=state.valkey_version)
        bridge.sandbox = self.sandbox
        self.load_api, self._begin, self._collect = self.sandbox.lua.execute(
            _LOAD_API, self.sandbox.redis, self.sandbox.protect, name=INTERNAL_CHUNK)

    def register(self, body: bytes, timeout: float) -> list[Registered]:
        """Compile `body` and run it; the functions it registered, in order."""
        code = body.split(b"\0", 1)[0]  # compiled as a C string
        fn, err = self.sandbox.compile(code, b"@user_function")
        if fn is None:
            raise LibraryError(b"Error compiling function: " + (err or b""))
        self._begin()
        self.bridge.load_deadline = time.monotonic() + timeout if timeout else 0.0
        try:
            err = self.sandbox.load_library(fn, self.load_api)
        finally:
            self.bridge.load_deadline = 0.0
            pending = self._collect()
        if err is not None:
            raise LibraryError(b"Error registering functions: " + err)
        return [_registered(pending[i]) for i in range(1, len(pending) + 1)]


def _registered(entry: Any) -> Registered:
    flags = entry[b"flags"]
    return Registered(
        name=entry[b"name"],
        callback=entry[b"callback"],
        description=entry[b"description"],
        flags=frozenset(flags[i].decode() for i in range(1, len(flags) + 1)) if flags is not None else frozenset(),
    )


# --- the engine ------------------------------------------------------------------------------


class FunctionRun(ScriptRun):
    """One FCALL: a ScriptRun that remembers its function and command (FUNCTION STATS)."""

    as_function = True
    argv: list[bytes]  # the FCALL, as FUNCTION STATS shows it

    @classmethod
    def of(cls, engine: Libraries, caller: Client, function: Function, argv: list[bytes],
           numkeys: int) -> FunctionRun:
        run = FunctionRun(engine.bridge, caller, function.callback, numkeys, argv[3:], function.no_writes)
        run.funcname = function.name
        run.argv = argv
        if function.allow_oom:
            run.allow_oom = True
        if function.straight:
            run.straight = True
        return run

    def duration_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


class Libraries:
    """The server's functions: the current library set and the Lua state they live in."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.runner: ScriptRunner = runner_of(state)
        self.bridge = FunctionBridge(state, FUNCTION_CLIENT_ID, self.runner)
        self.current = LibrarySet()
        self._loader: LibraryLoader | None = None

    @property
    def loader(self) -> LibraryLoader:
        if self._loader is None:
            self._loader = LibraryLoader(self.state, self.bridge)
        return self._loader

    def lookup(self, name: bytes) -> Function | None:
        return self.current.lookup(name)

    def create(self, code: bytes, *, replace: bool, into: LibrarySet | None = None,
               timeout: float = LOAD_TIMEOUT) -> bytes:
        """FUNCTION LOAD (and each library of a RESTORE, into its own set, no timeout):
        the library's name, or LibraryError with Valkey's message."""
        target = self.current if into is None else into
        meta = parse_metadata(code)
        if not valid_name(meta.name):
            raise LibraryError(b"Library " + NAME_RULES)
        if meta.engine.upper() != ENGINE_NAME:
            raise LibraryError(b"Engine '" + meta.engine + b"' not found")
        old = target.libraries.get(meta.name)
        if old is not None and not replace:
            raise LibraryError(b"Library '" + meta.name + b"' already exists")
        if old is not None:
            target.unlink(old)
        try:
            lib = self._compile(meta, code, timeout)
            clash = target.colliding_function(lib)
            if clash is not None:
                raise LibraryError(b"Function " + clash.name + b" already exists")
        except LibraryError:
            if old is not None:
                target.link(old)
            raise
        target.link(lib)
        return meta.name

    def _compile(self, meta: LibraryMetadata, code: bytes, timeout: float) -> Library:
        lib = Library(meta.name, code)
        for reg in self.loader.register(meta.body, timeout):
            if not valid_name(reg.name):
                raise LibraryError(b"Function " + NAME_RULES)
            if reg.name in lib.functions:
                raise LibraryError(b"Function already exists in the library")
            lib.functions[reg.name] = Function(reg.name, reg.callback, reg.description, reg.flags, lib,
                                               straight=self.loader.sandbox.runs_straight(reg.callback))
        if not lib.functions:
            raise LibraryError(b"No functions registered")
        return lib

    def delete(self, name: bytes) -> bool:
        lib = self.current.libraries.get(name)
        if lib is None:
            return False
        self.current.unlink(lib)
        return True

    def flush(self) -> None:
        """FUNCTION FLUSH: no libraries, and a fresh Lua state."""
        self.current = LibrarySet()
        self._loader = None
        self.bridge.sandbox = None

    # --- DUMP / RESTORE ----------------------------------------------------------------------

    def dump(self) -> bytes:
        body = b"".join(bytes([RDB_OPCODE_FUNCTION2]) + rdb_string(lib.code)
                        for lib in self.current.libraries.values())
        return seal_payload(body)

    def restore(self, payload: bytes, policy: str) -> None:
        """FUNCTION RESTORE with policy "FLUSH", "APPEND" or "REPLACE"."""
        version = payload_version(payload)
        if version is None:
            raise LibraryError(b"DUMP payload version or checksum are wrong")
        restored = LibrarySet()
        reader = RdbReader(payload)
        while len(payload) - reader.pos > 10:  # the footer ends the libraries
            kind = reader.byte()
            if kind == RDB_OPCODE_FUNCTION_PRE_GA:
                raise LibraryError(b"Pre-GA function format not supported")
            if kind != RDB_OPCODE_FUNCTION2:
                raise LibraryError(b"given type is not a function")
            code = reader.string()
            if code is None:
                raise LibraryError(b"Failed loading library payload")
            self.create(code, replace=False, into=restored, timeout=0)
        if policy == "FLUSH":
            self.current = restored
        else:
            join(self.current, restored, replace=policy == "REPLACE")


def join(target: LibrarySet, restored: LibrarySet, *, replace: bool) -> None:
    """Add the restored libraries to `target` (Valkey's libraryJoin): a library of the
    same name aborts, or with `replace` is replaced; a function name clash aborts."""
    replaced: list[Library] = []
    try:
        for lib in restored.libraries.values():
            old = target.libraries.get(lib.name)
            if old is None:
                continue
            if not replace:
                raise LibraryError(b"Library " + lib.name + b" already exists")
            target.unlink(old)
            replaced.append(old)
        for fn in restored.functions.values():
            if fn.name.lower() in target.functions:
                raise LibraryError(b"Function " + fn.name + b" already exists")
    except LibraryError:
        for old in replaced:
            target.link(old)
        raise
    for lib in restored.libraries.values():
        target.link(lib)


def libraries_of(state: ServerState) -> Libraries:
    """The server's functions engine (made on first use)."""
    engine = state.functions
    if engine is None:
        engine = state.functions = Libraries(state)
    return engine


# --- the payload format ------------------------------------------------------------------------

RDB_VERSION = 80
RDB_OPCODE_FUNCTION2 = 245
RDB_OPCODE_FUNCTION_PRE_GA = 246
_ENC_INT8, _ENC_INT16, _ENC_INT32, _ENC_LZF = 0, 1, 2, 3


def _crc64_table() -> list[int]:
    poly = 0x95AC9329AC4BC9B5  # Jones' polynomial, bit-reflected
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC64_TABLE = _crc64_table()


def crc64(data: bytes) -> int:
    """CRC-64/Jones as Valkey's crc64(0, ...): reflected, no final xor."""
    table = _CRC64_TABLE
    crc = 0
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def seal_payload(body: bytes) -> bytes:
    """A DUMP payload: `body`, the RDB version and the CRC64 of both, little-endian."""
    body += RDB_VERSION.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def payload_version(payload: bytes) -> int | None:
    """The payload's RDB version when it is one Valkey 9 reads (1 to 11, or 80) and the
    checksum holds; else None (Valkey's verifyDumpPayload)."""
    if len(payload) < 10:
        return None
    version = int.from_bytes(payload[-10:-8], "little")
    if not (1 <= version <= 11 or version == RDB_VERSION):
        return None
    if crc64(payload[:-8]).to_bytes(8, "little") != payload[-8:]:
        return None
    return version


def rdb_length(n: int) -> bytes:
    if n < 1 << 6:
        return bytes([n])
    if n < 1 << 14:
        return bytes([0x40 | n >> 8, n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def rdb_string(data: bytes) -> bytes:
    """An RDB string, stored as is (never compressed)."""
    return rdb_length(len(data)) + data


class RdbReader:
    """Reads RDB opcodes and strings from a payload; None for anything malformed."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos]
        self.pos += 1
        return value

    def take(self, n: int) -> bytes | None:
        if self.pos + n > len(self.data):
            return None
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def length(self) -> tuple[int, bool] | None:
        """(value, is_encoding): a length, or a special string encoding's number."""
        head = self.take(1)
        if head is None:
            return None
        first = head[0]
        kind = first >> 6
        if kind == 0:
            return first & 0x3F, False
        if kind == 1:
            low = self.take(1)
            return (None if low is None else (((first & 0x3F) << 8) | low[0], False))
        if kind == 3:
            return first & 0x3F, True
        size = {0x80: 4, 0x81: 8}.get(first)
        raw = self.take(size) if size else None
        return None if raw is None else (int.from_bytes(raw, "big"), False)

    def plain_length(self) -> int | None:
        found = self.length()
        if found is None or found[1]:
            return None
        return found[0]

    def string(self) -> bytes | None:
        found = self.length()
        if found is None:
            return None
        value, encoded = found
        if not encoded:
            return self.take(value)
        if value in (_ENC_INT8, _ENC_INT16, _ENC_INT32):
            raw = self.take(1 << value)
            return None if raw is None else b"%d" % int.from_bytes(raw, "little", signed=True)
        if value == _ENC_LZF:
            return self._lzf_string()
        return None

    def _lzf_string(self) -> bytes | None:
        compressed_len = self.plain_length()
        if compressed_len is None:
            return None
        size = self.plain_length()
        if size is None:
            return None
        compressed = self.take(compressed_len)
        if compressed is None:
            return None
        return lzf_decompress(compressed, size)


def lzf_decompress(data: bytes, size: int) -> bytes | None:
    """LZF's format: a control byte below 32 starts a run of that many plus one literal
    bytes; above, a back reference (length in its top 3 bits, 7 meaning an extra length
    byte; offset in its low 5 bits and the next byte). None unless exactly `size` bytes."""
    out = bytearray()
    pos, end = 0, len(data)
    while pos < end:
        ctrl = data[pos]
        pos += 1
        if ctrl < 32:
            run = ctrl + 1
            if pos + run > end or len(out) + run > size:
                return None
            out += data[pos:pos + run]
            pos += run
            continue
        length = ctrl >> 5
        if length == 7:
            if pos >= end:
                return None
            length += data[pos]
            pos += 1
        if pos >= end:
            return None
        ref = len(out) - ((ctrl & 0x1F) << 8) - data[pos] - 1
        pos += 1
        length += 2
        if ref < 0 or len(out) + length > size:
            return None
        for i in range(length):  # the reference may overlap what it copies
            out.append(out[ref + i])
    return bytes(out) if len(out) == size else None
