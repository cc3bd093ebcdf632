"""The Lua sandbox from the inside: nothing of Python is reachable from a script, the known
lupa escapes fail, the library-installer hook, the bytecode patch that keeps script frames.
(What Valkey's sandbox looks like is in tests/conformance/test_scripting.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lupa.lua51
import pytest

from fakekey.core.client import Client
from fakekey.core.state import ServerState
from fakekey.net.server import new_state
from fakekey.resp.replies import ReplyError
from fakekey.scripting import libs
from fakekey.scripting.runtime import LibraryContext, LuaLibraryError, untail
from fakekey.scripting.scripts import scripts_of


@pytest.fixture
def state() -> ServerState:
    return new_state()


@pytest.fixture
def ev(state: ServerState) -> Any:
    client = Client(state)

    def run(script: str, *args: bytes, numkeys: int = 0) -> Any:
        return state.call(client, [b"EVAL", script.encode(), b"%d" % numkeys, *args])

    return run


def message(reply: Any) -> bytes:
    assert isinstance(reply, ReplyError), reply
    return reply.message


# Every value a script can reach from its globals: tables, their metatables, the string
# metatable; the path of anything that could be a Python object (lupa wraps them in
# userdata with a metatable; a library's bare sentinel userdata, like cjson.null, has none).
WALK = """
local seen, found = {}, {}
local function walk(v, path)
  local t = type(v)
  -- lupa's Python objects are userdata with a metatable table; cjson.null is a Lua
  -- newproxy whose metatable is hidden (getmetatable answers false)
  if (t == 'userdata' and type(getmetatable(v)) == 'table') or t == 'thread' then found[#found + 1] = path .. ' ' .. t end
  if t ~= 'table' or seen[v] then return end
  seen[v] = true
  for k, x in pairs(v) do
    walk(k, path .. '[key]')
    walk(x, path .. '.' .. tostring(k))
  end
  local mt = getmetatable(v)
  if mt ~= nil then walk(mt, path .. '<mt>') end
end
walk(_G, '_G')
walk(getmetatable(''), 'string<mt>')
for _, f in pairs({redis.call, print ~= nil and print or pcall, loadstring, coroutine.wrap}) do
  local mt = getmetatable(f)
  if mt ~= nil then walk(mt, 'function<mt>') end
end
return found
"""


def test_nothing_reachable_is_a_python_object(ev):
    assert ev("local ok = pcall(function() return print end) return 1") == 1
    walked = WALK.replace("print ~= nil and print or pcall", "pcall")
    assert ev(walked) == []


@pytest.mark.parametrize("script", [
    "return python.eval('1 + 1')",
    "return python.builtins.open('/etc/passwd')",
    "return python.as_attrgetter(redis).call",
    "return python.none",
    "return _G.python",
])
def test_the_python_module_is_not_there(ev, script):
    assert message(ev(script)).startswith(
        b"ERR user_script:1: Script attempted to access nonexistent global variable 'python'")


@pytest.mark.parametrize(("script", "error"), [
    ("return redis.call.__class__", b"attempt to index field 'call' (a function value)"),
    ("return redis.call.__globals__", b"attempt to index field 'call' (a function value)"),
    ("return (function() end).__class__", b"attempt to index a function value"),
    ("return math.random.__self__", b"attempt to index field 'random' (a function value)"),
])
def test_no_attribute_access_on_functions(ev, script, error):
    assert error in message(ev(script))


def test_functions_have_no_metatables(ev):
    script = "return {tostring(getmetatable(redis.call)), tostring(getmetatable(redis.pcall)), " \
             "tostring(getmetatable(math.random)), tostring(getmetatable(pcall))}"
    assert ev(script) == [b"nil", b"nil", b"nil", b"nil"]
    assert ev("return type(redis.call)") == b"function"


def test_host_errors_never_carry_python_objects(ev):
    for call in ("redis.call, {}", "redis.call, print_", "redis.sha1hex", "math.random, {}",
                 "redis.acl_check_cmd, {}", "redis.log, 1, {}", "math.randomseed, 'x'"):
        call = call.replace("print_", "function() end")
        script = f"local ok, e = pcall({call}) return {{tostring(ok), type(e)}}"
        assert ev(script) in ([b"false", b"string"], [b"true", b"nil"]), call


def test_no_debug_no_environments(ev):
    for name in ("debug", "getfenv", "setfenv", "newproxy", "require", "package", "io", "os.execute"):
        reply = ev(f"return {name} ~= nil")
        assert isinstance(reply, ReplyError) or reply is None, name
    assert ev("return os.execute") is None
    assert ev("return os.getenv") is None


def test_bytecode_cannot_be_loaded(ev):
    dump = "string.dump(function() return 1 end)"
    assert ev(f"local f, e = loadstring({dump}) return {{tostring(f), e}}") == [
        b"nil", b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'"]
    script = f"local d = {dump} local sent = false local f, e = load(function() " \
             "if sent then return nil end sent = true return d end) return {tostring(f), e}"
    assert ev(script) == [b"nil", b"(load):1: unexpected symbol near 'char(27)'"]
    # the API functions dump to code only: their upvalues (the host) never leave Lua
    assert ev("return type(string.dump(redis.call))") == b"string"
    assert message(ev("local f = loadstring(string.dump(redis.call)) return f('ping')")) == (
        b"ERR user_script:1: attempt to call local 'f' (a nil value) script: on @user_script:1.")


def test_coroutines_stay_in_the_sandbox(ev):
    assert ev("return coroutine.wrap(function() return redis.call('ping') end)()") == b"PONG"
    # coroutine.wrap adds the caller's position to a string error, as in Valkey
    assert message(ev("return coroutine.wrap(function() return python end)()")).startswith(
        b"ERR user_script:1: user_script:1: Script attempted to access nonexistent global variable 'python'")
    assert message(ev("coroutine.wrap(function() x = 1 end)()")) == (
        b"ERR user_script:1: user_script:1: Attempt to modify a readonly table script: on @user_script:1.")
    assert ev("return coroutine.wrap(function() return loadstring('return type(_G.redis)')() end)()") == b"table"
    script = "local co = coroutine.create(function() return loadstring('return _G')() end) " \
             "local ok, g = coroutine.resume(co) return tostring(g == _G)"
    assert ev(script) == b"true"


def test_loaded_chunks_see_the_script_globals(ev):
    assert ev("return tostring(loadstring('return _G')() == _G)") == b"true"
    assert ev("return tostring(load(function() return nil end)) ~= nil") == 1
    # the failing frame is the loaded chunk's, as Valkey reports it
    assert message(ev("loadstring('redis = nil')()")) == (
        b"ERR [string \"redis = nil\"]:1: Attempt to modify a readonly table script: on redis = nil:1.")


def test_protected_tables_cannot_be_unlocked(ev):
    attempts = [
        "local mt = getmetatable(_G) mt.__newindex = nil",
        "setmetatable(redis, {})",
        "rawset(getmetatable(''), '__index', {})",
        "table.insert(redis, 1)",
        "local s = string s.format = nil",
        "local _, t = pairs(_G) t.x = 1",
    ]
    for script in attempts:
        assert b"Attempt to modify a readonly table" in message(ev(script)), script
    assert ev("return type(redis.call) .. type(string.format)") == b"functionfunction"


def test_globals_are_the_same_after_a_failed_write(ev):
    ev("pcall(function() redis.x = 1 end)")
    assert ev("return rawget(redis, 'x')") is None


def test_the_hidden_globals_are_not_the_scripts(state, ev):
    ev("return 1")
    sandbox = scripts_of(state).sandbox
    hidden = sandbox.lua.globals()
    assert hidden[b"python"] is not None  # lupa's own globals keep its module, out of reach
    assert ev("return rawget(_G, 'python')") is None
    assert ev("return rawget(_G, 'debug')") is None


def test_script_flush_builds_a_new_state(state, ev):
    ev("return 1")
    scripts = scripts_of(state)
    first = scripts.sandbox
    assert state.call(Client(state), [b"SCRIPT", b"FLUSH"]) == b"OK"
    assert ev("return 2") == 2
    assert scripts.sandbox is not first


def test_untail_turns_tail_calls_into_calls():
    lua = lupa.lua51.LuaRuntime(encoding=None)
    chunk = lua.eval("loadstring('local function f(x) return g(x) end return f(1), h()', '@user_script')")
    dump = lua.eval("string.dump")(chunk)
    patched = untail(dump)
    assert len(patched) == len(dump) and patched != dump
    run = lua.eval("""function(d)
      local f = loadstring(d)
      g = function(x) return debug.traceback() end
      h = function() return 'h' end
      return f()
    end""")
    original_trace, _ = run(dump)
    patched_trace, result = run(patched)
    # the tail-called g replaced f's frame; once patched, f's frame stays
    assert b"in function 'f'" not in original_trace
    assert b"user_script:1: in function 'f'" in patched_trace
    assert result == b"h"


@pytest.fixture
def testlib(state: ServerState) -> Iterator[None]:
    def install(ctx: LibraryContext) -> None:
        table = ctx.execute("return {answer = 42, inner = {}}")

        def twice(value: Any) -> Any:
            if not isinstance(value, int | float):
                raise LuaLibraryError("twice wants a number")
            return value * 2

        table[b"twice"] = ctx.wrap(twice)
        table[b"pair"] = ctx.wrap(lambda: (b"a", b"b"))
        ctx.set_global("testlib", table)

    libs.INSTALLERS.append(install)
    scripts_of(state).flush()
    try:
        yield
    finally:
        libs.INSTALLERS.remove(install)


def test_library_installers(testlib, ev):
    assert ev("return testlib.answer") == 42
    assert ev("return testlib.twice(21)") == 42
    assert ev("return {testlib.pair()}") == [b"a", b"b"]
    assert message(ev("return testlib.twice('x')")) == (
        b"ERR user_script:1: twice wants a number script: on @user_script:1.")
    assert message(ev("testlib.answer = 1")) == (
        b"ERR user_script:1: Attempt to modify a readonly table script: on @user_script:1.")
    assert message(ev("testlib.inner.x = 1")) == (
        b"ERR user_script:1: Attempt to modify a readonly table script: on @user_script:1.")
    assert ev("return type(testlib.twice)") == b"function"
    assert ev(WALK.replace("print ~= nil and print or pcall", "pcall")) == []


# --- straight scripts: no loop, run inline (runtime.straight_line) -----------------------------


@pytest.mark.parametrize(("body", "straight"), [
    ("return redis.call('INCR', KEYS[1])", True),
    ("redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])", True),
    ("if KEYS[1] then return 1 else return {1, 'a'} end", True),
    ("local n = tonumber(ARGV[1]) or 0 return n > 2 and 'big' or 'small'", True),
    ("while true do end", False),
    ("for i = 1, 3 do redis.call('INCR', KEYS[1]) end", False),
    ("for _, k in ipairs(KEYS) do redis.call('DEL', k) end", False),
    ("repeat local x = 1 until x", False),
    ("local function f() return 1 end return f()", False),  # a nested function (recursion)
    ("return loadstring('while true do end')()", False),  # code it did not bring
    ("return _G.redis.call('PING')", False),
    ("return rawget(_G, 'loadstring')", False),
])
def test_only_scripts_without_loops_are_straight(state, body, straight):
    """A script runs inline (no greenlet, it never turns the server BUSY) only when it
    cannot run HOOK_COUNT Lua instructions, as Valkey's count hook would never fire then."""
    scripts = scripts_of(state)
    _, script = scripts.load(body.encode(), from_eval=False)
    assert script.straight is straight


def test_straight_and_looping_scripts_answer_alike(ev):
    assert ev("return redis.call('INCR', KEYS[1])", b"n", numkeys=1) == 1
    assert ev("local r for i = 1, 2 do r = redis.call('INCR', KEYS[1]) end return r", b"n", numkeys=1) == 3
    assert ev("return {redis.call('GET', KEYS[1]), 2.5, false}", b"n", numkeys=1) == [b"3", 2, None]
    assert message(ev("return redis.call('NOSUCH')")).startswith(b"ERR Unknown command called from script")
