"""EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT; the sandbox and the redis.* API as scripts
see them; errors as Valkey 9.1 words them (both targets, RESP2 and RESP3)."""

import hashlib
import threading
import time

import pytest

from fakekey.emq.scripts import SCRIPTS

# The library globals (cjson, cmsgpack, bit, struct) are left out of the sandbox checks:
# they come with fakekey/scripting/libs.
LIBRARIES = {"bit", "cjson", "cmsgpack", "struct"}


def ev(r, script, *args, numkeys=0):
    return r.call("EVAL", script, numkeys, *args)


def sha1(text):
    return hashlib.sha1(text.encode()).hexdigest()


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def err(text):
    return ("-", text.encode())


def bulks(*items):
    return ("*", [("$", item.encode()) for item in items])


def script_error(text, line=1):
    """A script's runtime error, as Valkey 9.1 reports it to the caller."""
    return err(f"{text} script: on @user_script:{line}.")


@pytest.fixture(autouse=True)
def _empty_script_cache(r2):
    r2.call("SCRIPT", "FLUSH")


# --- EVAL and EVALSHA ---------------------------------------------------------------------------


def test_eval_returns_values(r, proto):
    assert ev(r, "return 1") == (":", 1)
    assert ev(r, "return 'x'") == ("$", b"x")
    assert ev(r, "return nil") == null(proto)
    assert ev(r, "return {1, 'a', {2}}") == ("*", [(":", 1), ("$", b"a"), ("*", [(":", 2)])])
    assert ev(r, "return 'x', 'y'") == ("$", b"x")  # only the first value


def test_keys_and_argv(r):
    script = "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], tostring(#KEYS), tostring(#ARGV)}"
    assert ev(r, script, "k1", "k2", "a1", "a2", numkeys=2) == bulks("k1", "k2", "a1", "a2", "2", "2")
    assert ev(r, "return {#KEYS, #ARGV}", "a", "b", "c", numkeys=0) == ("*", [(":", 0), (":", 3)])
    assert ev(r, "KEYS[1] = 'changed' return KEYS[1]", "k", numkeys=1) == ("$", b"changed")


@pytest.mark.parametrize(("numkeys", "args", "error"), [
    ("x", [], "ERR value is not an integer or out of range"),
    (" 1", ["k"], "ERR value is not an integer or out of range"),
    ("01", ["k"], "ERR value is not an integer or out of range"),
    ("99999999999999999999", [], "ERR value is not an integer or out of range"),
    ("-1", [], "ERR Number of keys can't be negative"),
    ("1", [], "ERR Number of keys can't be greater than number of args"),
    ("3", ["a", "b"], "ERR Number of keys can't be greater than number of args"),
])
def test_numkeys_errors(r2, numkeys, args, error):
    assert r2.call("EVAL", "return 1", numkeys, *args) == err(error)
    assert r2.call("EVAL_RO", "return 1", numkeys, *args) == err(error)


def test_eval_arity(r2):
    assert r2.call("EVAL", "return 1") == err("ERR wrong number of arguments for 'eval' command")
    assert r2.call("EVALSHA", "x") == err("ERR wrong number of arguments for 'evalsha' command")


def test_evalsha_runs_a_loaded_script(r):
    script = "return {ARGV[1], KEYS[1]}"
    sha = sha1(script)
    assert r.call("SCRIPT", "LOAD", script) == ("$", sha.encode())
    assert r.call("EVALSHA", sha, 1, "k", "a") == bulks("a", "k")
    assert r.call("EVALSHA", sha.upper(), 1, "k", "a") == bulks("a", "k")
    assert r.call("EVALSHA_RO", sha, 1, "k", "a") == bulks("a", "k")


def test_evalsha_noscript(r2):
    unknown = "f" * 40
    assert r2.call("EVALSHA", unknown, 0) == err("NOSCRIPT No matching script.")
    assert r2.call("EVALSHA_RO", unknown, 0) == err("NOSCRIPT No matching script.")
    # a sha of the wrong length is refused before numkeys is even read
    assert r2.call("EVALSHA", "abc", "x") == err("NOSCRIPT No matching script.")
    assert r2.call("EVALSHA", "abc", -1) == err("NOSCRIPT No matching script.")
    # a well-formed one has its numkeys checked first
    assert r2.call("EVALSHA", unknown, -1) == err("ERR Number of keys can't be negative")
    assert r2.call("EVALSHA", unknown, 5) == err("ERR Number of keys can't be greater than number of args")


def test_eval_caches_its_script(r2):
    script = "return 'cached'"
    assert r2.call("SCRIPT", "EXISTS", sha1(script)) == ("*", [(":", 0)])
    assert ev(r2, script) == ("$", b"cached")
    assert r2.call("SCRIPT", "EXISTS", sha1(script)) == ("*", [(":", 1)])
    assert r2.call("EVALSHA", sha1(script), 0) == ("$", b"cached")
    assert r2.call("SCRIPT", "SHOW", sha1(script)) == ("$", script.encode())


def test_eval_scripts_are_evicted_past_500(r2):
    # scripts EVAL added are kept for the last 500 of them; SCRIPT LOAD's are never evicted
    loaded = r2.call("SCRIPT", "LOAD", "return 'loaded'")[1].decode()
    first = "return 'first'"
    ev(r2, first)
    r2.pipeline(*[("EVAL", f"return {i}", 0) for i in range(499)])
    assert r2.call("SCRIPT", "EXISTS", sha1(first)) == ("*", [(":", 1)])
    ev(r2, "return 'one more'")
    assert r2.call("SCRIPT", "EXISTS", sha1(first), loaded, sha1("return 0")) == (
        "*", [(":", 0), (":", 1), (":", 1)])


# --- SCRIPT ------------------------------------------------------------------------------------


def test_script_exists_and_show(r):
    script = "return 1"
    sha = sha1(script)
    r.call("SCRIPT", "LOAD", script)
    assert r.call("SCRIPT", "EXISTS", sha, "nope", sha.upper()) == ("*", [(":", 1), (":", 0), (":", 1)])
    assert r.call("SCRIPT", "SHOW", sha) == ("$", b"return 1")
    assert r.call("SCRIPT", "SHOW", sha.upper()) == ("$", b"return 1")
    assert r.call("SCRIPT", "SHOW", "nope") == err("NOSCRIPT No matching script.")
    assert r.call("SCRIPT", "SHOW", "f" * 40) == err("NOSCRIPT No matching script.")


def test_script_flush(r2):
    sha = r2.call("SCRIPT", "LOAD", "return 1")[1]
    assert r2.call("SCRIPT", "FLUSH") == ("+", b"OK")
    assert r2.call("SCRIPT", "EXISTS", sha) == ("*", [(":", 0)])
    assert r2.call("EVALSHA", sha, 0) == err("NOSCRIPT No matching script.")
    assert r2.call("SCRIPT", "FLUSH", "ASYNC") == ("+", b"OK")
    assert r2.call("SCRIPT", "FLUSH", "sync") == ("+", b"OK")
    for args in (("x",), ("SYNC", "ASYNC")):
        assert r2.call("SCRIPT", "FLUSH", *args) == err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")


def test_script_load_errors(r2):
    assert r2.call("SCRIPT", "LOAD", "return 1 +") == err(
        "ERR Error compiling script (new function): user_script:1: unexpected symbol near '<eof>'")
    assert r2.call("SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1") == err(
        "ERR Unexpected flag in script shebang: bogus")
    assert r2.call("SCRIPT", "LOAD") == err("ERR wrong number of arguments for 'script|load' command")


def test_script_kill_without_a_script(r2):
    assert r2.call("SCRIPT", "KILL") == err("NOTBUSY No scripts in execution right now.")
    assert r2.call("SCRIPT", "KILL", "x") == err("ERR wrong number of arguments for 'script|kill' command")


def test_script_help(r2):
    kind, lines = r2.call("SCRIPT", "HELP")
    assert kind == "*"
    assert lines[0] == ("+", b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert lines[-1] == ("+", b"    Print this help.")
    assert ("+", b"SHOW <sha1>") in lines
    assert len(lines) == 20
    assert r2.call("SCRIPT", "HELP", "x") == err("ERR wrong number of arguments for 'script|help' command")


def test_script_debug_without_debugging(r2):
    # YES and SYNC would start Valkey's debugger on the connection: not exercised here
    assert r2.call("SCRIPT", "DEBUG", "NO") == ("+", b"OK")
    assert r2.call("SCRIPT", "DEBUG", "no", "LUA") == ("+", b"OK")
    assert r2.call("SCRIPT", "DEBUG", "bad") == err("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    assert r2.call("SCRIPT", "DEBUG", "bad", "lua") == err("ERR Use SCRIPT DEBUG YES/SYNC/NO")
    assert r2.call("SCRIPT", "DEBUG", "yes", "nosuch") == err(
        "ERR No scripting engine found with name 'nosuch' to enable debug")
    assert r2.call("SCRIPT", "DEBUG", "YES", "a", "b") == err(
        "ERR unknown subcommand or wrong number of arguments for 'DEBUG'. Try SCRIPT HELP.")


def test_script_container_errors(r2):
    assert r2.call("SCRIPT") == err("ERR wrong number of arguments for 'script' command")
    assert r2.call("SCRIPT", "NOPE") == err("ERR unknown subcommand 'NOPE'. Try SCRIPT HELP.")
    assert r2.call("SCRIPT", "EXISTS") == err("ERR wrong number of arguments for 'script|exists' command")
    assert r2.call("SCRIPT", "SHOW") == err("ERR wrong number of arguments for 'script|show' command")


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("script", "message"), [
    ("return 1 +", "user_script:1: unexpected symbol near '<eof>'"),
    ("retur 1", "user_script:1: '=' expected near '1'"),
    ("return 'abc", "user_script:1: unfinished string near '<eof>'"),
    ("#!lua\n\nreturn 1 +", "user_script:3: unexpected symbol near '<eof>'"),
    ("\x1bLuaQ\x00junk", "user_script:1: unexpected symbol near 'char(27)'"),
])
def test_compile_errors(r2, script, message):
    assert ev(r2, script) == err(f"ERR Error compiling script (new function): {message}")


@pytest.mark.parametrize(("script", "reply"), [
    ("return x", script_error("ERR user_script:1: Script attempted to access nonexistent global variable 'x'")),
    ("\n\nreturn x", script_error(
        "ERR user_script:3: Script attempted to access nonexistent global variable 'x'", 3)),
    ("#!lua\nreturn x", script_error(
        "ERR user_script:2: Script attempted to access nonexistent global variable 'x'", 2)),
    ("error('boom')", script_error("ERR user_script:1: boom")),
    ("error('boom', 0)", script_error("ERR boom")),
    ("error('with\\nnewline')", script_error("ERR user_script:1: with newline")),
    ("error({err='MY boom'})", script_error("MY boom")),
    ("error({err='boom'})", script_error("boom")),
    ("error({})", script_error("ERR unknown error")),
    ("error(nil)", script_error("ERR nil")),
    ("error(12)", script_error("ERR user_script:1: 12")),
    ("local t = nil\nreturn t.x", script_error("ERR user_script:2: attempt to index local 't' (a nil value)", 2)),
    ("local function f() error('deep') end\nlocal function g() f() end\ng()", script_error(
        "ERR user_script:1: deep")),
])
def test_runtime_errors(r2, script, reply):
    assert ev(r2, script) == reply


@pytest.mark.parametrize(("call", "message"), [
    ("redis.call('nosuch')", "ERR Unknown command called from script"),
    ("redis.call('get')", "ERR Wrong number of args calling command from script"),
    ("redis.call('object')", "ERR Wrong number of args calling command from script"),
    ("redis.call('multi', 'x')", "ERR Wrong number of args calling command from script"),
    ("redis.call('multi')", "ERR This Valkey command is not allowed from script"),
    ("redis.call('eval', 'return 1', 0)", "ERR This Valkey command is not allowed from script"),
    ("redis.call('script', 'load', 'return 1')", "ERR This Valkey command is not allowed from script"),
    ("redis.call('client', 'id')", "ERR This Valkey command is not allowed from script"),
    ("redis.call('subscribe', 'ch')", "ERR This Valkey command is not allowed from script"),
    ("redis.call('client', 'nosuch')", "ERR unknown subcommand 'nosuch'. Try CLIENT HELP."),
    ("redis.call('script|load', 'x')", "ERR Unknown command called from script"),
    ("redis.call('ping', 'a', 'b', 'c')", "ERR wrong number of arguments for 'ping' command"),
    ("redis.call()", "ERR Please specify at least one argument for this call"),
    ("redis.call({})", "ERR Command arguments must be strings or integers"),
    ("redis.call('get', nil)", "ERR Command arguments must be strings or integers"),
    ("redis.call('get', true)", "ERR Command arguments must be strings or integers"),
    ("redis.call('set', 'k', 'v', 'ex', 0)", "ERR invalid expire time in 'set' command"),
])
def test_redis_call_errors(r2, call, message):
    # redis.call raises: the script stops, its position is added
    assert ev(r2, f"return {call}") == script_error(message)
    assert ev(r2, f"{call}\nreturn 'not reached'") == script_error(message)
    # redis.pcall returns the error as a table, which a script can return as is
    assert ev(r2, "return " + call.replace("redis.call", "redis.pcall", 1)) == err(message)


def test_command_errors_reach_the_script(r2):
    r2.call("SET", "str", "abc")
    assert ev(r2, "return redis.call('incr', 'str')") == script_error(
        "ERR value is not an integer or out of range")
    assert ev(r2, "return redis.call('hgetall', 'str')") == script_error(
        "WRONGTYPE Operation against a key holding the wrong kind of value")
    assert ev(r2, "return redis.pcall('incr', 'str')") == err("ERR value is not an integer or out of range")
    assert ev(r2, "return redis.pcall('incr', 'str')['err']") == ("$", b"ERR value is not an integer or out of range")
    assert ev(r2, "return {1, redis.pcall('incr', 'str'), 3}") == (
        "*", [(":", 1), ("-", b"ERR value is not an integer or out of range"), (":", 3)])
    fields = "local t = {} for k in pairs(redis.pcall('incr', 'str')) do t[#t + 1] = k end table.sort(t) return t"
    assert ev(r2, fields) == bulks("err", "ignore_error_stats_update")


def test_lua_pcall_sees_error_messages(r2):
    assert ev(r2, "local ok, e = pcall(function() redis.call('nosuch') end) return {tostring(ok), type(e), e}") == \
        bulks("false", "string", "ERR Unknown command called from script")
    assert ev(r2, "local ok, e = pcall(redis.call) return {tostring(ok), type(e), e}") == \
        bulks("false", "string", "ERR Please specify at least one argument for this call")
    assert ev(r2, "local ok, e = pcall(function() error('x') end) return {tostring(ok), e}") == \
        bulks("false", "user_script:1: x")
    assert ev(r2, "local ok, e = pcall(function() return zzz end) return e") == (
        "$", b"user_script:1: Script attempted to access nonexistent global variable 'zzz'")
    assert ev(r2, "return {pcall(error, {err=5})}") == ("*", [("$", None), (":", 5)])
    assert ev(r2, "return {xpcall(function() redis.call('nosuch') end, function(e) return e.err end)}") == (
        "*", [("$", None), ("$", b"ERR Unknown command called from script")])


@pytest.mark.parametrize(("script", "reply"), [
    ("return redis.error_reply('MY_ERR something')", err("MY_ERR something")),
    ("return redis.error_reply('-MY_ERR something')", err("MY_ERR something")),
    ("return redis.error_reply('plain')", err("ERR plain")),
    ("return redis.error_reply('-nospace')", err("ERR nospace")),
    ("return redis.error_reply('')", err("ERR ")),
    ("return redis.error_reply('-ERR\\r\\nx\\n')", err("ERR ERR  x")),
    ("return redis.error_reply(1)", err("ERR wrong number or type of arguments")),
    ("return redis.error_reply()", err("ERR wrong number or type of arguments")),
    ("return redis.status_reply('FINE')", ("+", b"FINE")),
    ("return redis.status_reply('')", ("+", b"")),
    ("return redis.status_reply(1)", err("ERR wrong number or type of arguments")),
    ("return {err='MY_ERR x'}", err("MY_ERR x")),
    ("return {err='-MY_ERR x'}", err("-MY_ERR x")),
    ("return {err='plain text'}", err("plain text")),
    ("return {err='a\\r\\nb'}", err("a  b")),
    ("return {ok='fine\\r\\nx'}", ("+", b"fine  x")),
    ("return {1, redis.error_reply('X y'), 3}", ("*", [(":", 1), ("-", b"X y"), (":", 3)])),
])
def test_error_and_status_replies(r2, script, reply):
    assert ev(r2, script) == reply


def test_tail_calls_keep_the_script_position(r2):
    # `return f(...)` is a tail call in Lua; Valkey's API functions are C functions, so
    # the script's own line is reported
    assert ev(r2, "\n\nreturn redis.call('nosuch')") == script_error("ERR Unknown command called from script", 3)
    assert ev(r2, "local function f() return redis.call('nosuch') end\nreturn f()") == script_error(
        "ERR Unknown command called from script")
    assert ev(r2, "return math.random(0)") == script_error(
        "ERR user_script:1: bad argument #1 to 'random' (interval is empty)")


# --- the sandbox ------------------------------------------------------------------------------


def test_sandbox_globals(r2):
    script = "local t = {} for k in pairs(_G) do t[#t + 1] = k end table.sort(t) return t"
    names = [name.decode() for _, name in ev(r2, script)[1]]
    assert [n for n in names if n not in LIBRARIES] == [
        "ARGV", "KEYS", "_G", "_VERSION", "__redis__err__handler", "__server__err__handler",
        "assert", "collectgarbage", "coroutine", "error", "gcinfo", "getmetatable", "ipairs",
        "load", "loadstring", "math", "next", "os", "pairs", "pcall", "rawequal", "rawget",
        "rawset", "redis", "select", "server", "setmetatable", "string", "table", "tonumber",
        "tostring", "type", "unpack", "xpcall",
    ]


def test_sandbox_library_tables(r2):
    def keys(expr):
        script = f"local t = {{}} for k in pairs({expr}) do t[#t + 1] = k end table.sort(t) return t"
        return [name.decode() for _, name in ev(r2, script)[1]]

    assert keys("os") == ["clock"]
    assert keys("table") == ["concat", "foreach", "foreachi", "getn", "insert", "maxn", "remove", "setn", "sort"]
    assert keys("coroutine") == ["create", "resume", "running", "status", "wrap", "yield"]
    assert "dump" in keys("string") and "gfind" in keys("string")
    assert "randomseed" in keys("math") and "mod" in keys("math")
    assert keys("redis") == [
        "LOG_DEBUG", "LOG_NOTICE", "LOG_VERBOSE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM",
        "REPL_ALL", "REPL_AOF", "REPL_NONE", "REPL_REPLICA", "REPL_SLAVE", "SERVER_NAME",
        "VALKEY_VERSION", "VALKEY_VERSION_NUM", "acl_check_cmd", "breakpoint", "call", "debug",
        "error_reply", "log", "pcall", "replicate_commands", "set_repl", "setresp", "sha1hex",
        "status_reply",
    ]
    assert keys("getmetatable(_G)") == ["__index"]
    assert keys("getmetatable('')") == ["__index"]


@pytest.mark.parametrize("name", [
    "debug", "print", "io", "require", "getfenv", "setfenv", "python", "package", "newproxy",
    "module", "dofile", "loadfile",
])
def test_removed_globals(r2, name):
    assert ev(r2, f"return type({name})") == script_error(
        f"ERR user_script:1: Script attempted to access nonexistent global variable '{name}'")


def test_sandbox_types(r2):
    checks = {
        "type(os.clock)": "function", "type(os.time)": "nil", "type(loadstring)": "function",
        "type(load)": "function", "type(string.dump)": "function", "type(coroutine)": "table",
        "type(_G)": "table", "type(server)": "table", "_VERSION": "Lua 5.1",
        "tostring(server == redis)": "true", "tostring(_G._G == _G)": "true",
        "tostring(rawget(_G, 'redis') == redis)": "true", "tostring(rawget(_G, 'nosuch'))": "nil",
        "tostring(getmetatable('').__index == string)": "true",
        "tostring(getmetatable('') == getmetatable('a'))": "true",
        "tostring(coroutine.running())": "nil", "tostring(#_G)": "0",
        "tostring(select('#', unpack(redis)))": "0", "('x'):rep(3)": "xxx",
        "tostring(1/0)": "inf", "tostring(-0/1)": "-0", "string.format('%5.2f', 1.5)": " 1.50",
    }
    for expr, expected in checks.items():
        assert ev(r2, f"return {expr}") == ("$", expected.encode()), expr


@pytest.mark.parametrize(("script", "message"), [
    ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
    ("redis = nil", "ERR user_script:1: Attempt to modify a readonly table"),
    ("string.x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
    ("redis.call = nil", "ERR user_script:1: Attempt to modify a readonly table"),
    ("KEYS = {}", "ERR user_script:1: Attempt to modify a readonly table"),
    ("getmetatable('').__index.x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
    ("getmetatable('').x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
    ("getmetatable(_G).__index = nil", "ERR user_script:1: Attempt to modify a readonly table"),
    ("rawset(_G, 'x', 1)", "ERR Attempt to modify a readonly table"),
    ("rawset(redis, 'call', 1)", "ERR Attempt to modify a readonly table"),
    ("setmetatable(_G, nil)", "ERR Attempt to modify a readonly table"),
    ("table.insert(string, 'x')", "ERR Attempt to modify a readonly table"),
])
def test_readonly_tables(r2, script, message):
    assert ev(r2, script) == script_error(message)


@pytest.mark.parametrize(("script", "reply"), [
    ("return pairs(nil)", script_error("ERR user_script:1: bad argument #1 to 'pairs' (table expected, got nil)")),
    ("return ipairs()", script_error("ERR user_script:1: bad argument #1 to 'ipairs' (table expected, got no value)")),
    ("return rawget({})", script_error("ERR user_script:1: bad argument #2 to 'rawget' (value expected)")),
    ("return unpack(nil)", script_error("ERR user_script:1: bad argument #1 to 'unpack' (table expected, got nil)")),
    ("return unpack({1, 2, 3}, 1, 10000)", script_error("ERR user_script:1: too many results to unpack")),
    ("return setmetatable({}, 1)", script_error(
        "ERR user_script:1: bad argument #2 to 'setmetatable' (nil or table expected)")),
    ("local t = setmetatable({}, {__metatable = 'locked'}) return setmetatable(t, {})", script_error(
        "ERR user_script:1: cannot change a protected metatable")),
    ("return table.concat({{}})", script_error(
        "ERR user_script:1: invalid value (table) at index 1 in table for 'concat'")),
    ("return table.insert({}, 1, 2, 3)", script_error("ERR user_script:1: wrong number of arguments to 'insert'")),
    ("return coroutine.wrap(1)", script_error("ERR user_script:1: bad argument #1 to 'wrap' (Lua function expected)")),
    ("return {pcall(pairs)}", ("*", [("$", None), ("$", b"bad argument #1 to '?' (table expected, got no value)")])),
    ("local w = coroutine.wrap(function() error('x') end) return w()", script_error(
        "ERR user_script:1: user_script:1: x")),
    ("local t = {} for i = 1, 3 do table.insert(t, i) end table.sort(t, function(a, b) return a > b end) return t",
     ("*", [(":", 3), (":", 2), (":", 1)])),
    ("local w = coroutine.wrap(function(a) local b = coroutine.yield(a + 1) return b * 2 end) return {w(1), w(10)}",
     ("*", [(":", 2), (":", 20)])),
])
def test_builtins_as_valkeys(r2, script, reply):
    assert ev(r2, script) == reply


def test_loaded_code_runs_in_the_sandbox(r2):
    assert ev(r2, "local f, e = loadstring('x = 5') return {pcall(f)}") == (
        "*", [("$", None), ("$", b'[string "x = 5"]:1: Attempt to modify a readonly table')])
    assert ev(r2, "return loadstring('return redis.call(\"ping\")')()") == ("+", b"PONG")
    assert ev(r2, "local f, e = loadstring('return 1 +') return {tostring(f), e}") == (
        "*", [("$", b"nil"), ("$", b"[string \"return 1 +\"]:1: unexpected symbol near '<eof>'")])
    # Valkey's Lua refuses precompiled chunks
    assert ev(r2, "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}") == (
        "*", [("$", b"nil"), ("$", b"[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'")])


def test_math_random_is_valkeys(r2):
    assert ev(r2, "math.randomseed(1) return {math.random(100), math.random(100), math.random(1, 1000)}") == (
        "*", [(":", 5), (":", 46), (":", 835)])
    assert ev(r2, "math.randomseed(7) return tostring(math.random())") == ("$", b"0.26644419658298")
    assert ev(r2, "return math.random(1, 2, 3)") == script_error("ERR user_script:1: wrong number of arguments")
    assert ev(r2, "return math.random('x')") == script_error(
        "ERR user_script:1: bad argument #1 to 'random' (number expected, got string)")


def test_api_constants(r2):
    assert ev(r2, "return {redis.REDIS_VERSION, redis.VALKEY_VERSION, redis.SERVER_NAME}") == bulks(
        "7.2.4", "9.1.2", "valkey")
    assert ev(r2, "return {redis.REDIS_VERSION_NUM, redis.VALKEY_VERSION_NUM}") == (
        "*", [(":", 0x070204), (":", 0x090102)])
    assert ev(r2, "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, "
                  "redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}") == (
        "*", [(":", n) for n in (0, 1, 2, 3, 0, 1, 2, 2, 3)])
    assert ev(r2, "return redis.SERVER_VERSION") == ("$", None)


@pytest.mark.parametrize(("script", "reply"), [
    ("return redis.sha1hex('')", ("$", b"da39a3ee5e6b4b0d3255bfef95601890afd80709")),
    ("return redis.sha1hex(1)", ("$", b"356a192b7913b04c54574d18c28d46e6395428ab")),
    ("return redis.sha1hex(nil)", ("$", b"da39a3ee5e6b4b0d3255bfef95601890afd80709")),
    ("return redis.sha1hex()", script_error("ERR wrong number of arguments")),
    ("return redis.setresp(4)", script_error("ERR RESP version must be 2 or 3.")),
    ("return redis.setresp()", script_error("ERR server.setresp() requires one argument.")),
    ("return redis.set_repl(99)", script_error(
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")),
    ("return redis.set_repl()", script_error("ERR server.set_repl() requires one argument.")),
    ("return redis.set_repl(redis.REPL_ALL)", ("$", None)),
    ("return redis.log(redis.LOG_DEBUG, 'hi', 1)", ("$", None)),
    ("return redis.log()", script_error("ERR server.log() requires two arguments or more.")),
    ("return redis.log(1)", script_error("ERR server.log() requires two arguments or more.")),
    ("return redis.log('x', 'y')", script_error("ERR First argument must be a number (log level).")),
    ("return redis.log(99, 'y')", script_error("ERR Invalid log level.")),
    ("return redis.replicate_commands()", (":", 1)),
    ("return redis.breakpoint()", ("$", None)),
    ("return redis.debug('x')", ("$", None)),
    ("return redis.acl_check_cmd('get', 'x')", (":", 1)),
    ("return redis.acl_check_cmd('client')", (":", 1)),
    ("return redis.acl_check_cmd('nosuch')", script_error("ERR Invalid command passed to server.acl_check_cmd()")),
    ("return redis.acl_check_cmd()", script_error("ERR Please specify at least one argument for this call")),
    ("return redis.acl_check_cmd({})", script_error("ERR Command arguments must be strings or integers")),
])
def test_api_helpers(r2, script, reply):
    assert ev(r2, script) == reply


# --- run rules -----------------------------------------------------------------------------------


def test_read_only_scripts(r2):
    assert r2.call("EVAL_RO", "return redis.call('set', 'k', 'v')", 0) == script_error(
        "ERR Write commands are not allowed from read-only scripts.")
    assert r2.call("EVAL_RO", "return redis.pcall('set', 'k', 'v')", 0) == err(
        "ERR Write commands are not allowed from read-only scripts.")
    assert r2.call("EVAL_RO", "return redis.call('spublish', 'ch', 'm')", 0) == script_error(
        "ERR Write commands are not allowed from read-only scripts.")
    assert r2.call("GET", "k") == ("$", None)
    r2.call("SET", "k", "v")
    assert r2.call("EVAL_RO", "return redis.call('get', KEYS[1])", 1, "k") == ("$", b"v")


def test_shebang_flags(r2):
    assert ev(r2, "#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')") == script_error(
        "ERR Write commands are not allowed from read-only scripts.", 2)
    assert ev(r2, "#!lua\nreturn redis.call('set', 'k', 'v')") == ("+", b"OK")
    assert ev(r2, "#!lua flags=\nreturn 1") == (":", 1)
    assert ev(r2, "#!LUA\nreturn 1") == (":", 1)
    assert ev(r2, "#!lua\r\nreturn 2") == (":", 2)
    assert ev(r2, '#!"lua" "flags=no-writes"\nreturn 3') == (":", 3)
    assert ev(r2, "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 4") == (
        ":", 4)
    assert ev(r2, "#!lua flags=no-writes flags=allow-oom\nreturn 5") == (":", 5)


@pytest.mark.parametrize(("script", "message"), [
    ("#!lua flags=bogus\nreturn 1", "ERR Unexpected flag in script shebang: bogus"),
    ("#!lua flags=NO-WRITES\nreturn 1", "ERR Unexpected flag in script shebang: NO-WRITES"),
    ("#!lua flags=no-writes,\nreturn 1", "ERR Unexpected flag in script shebang: "),
    ("#!lua name=x\nreturn 1", "ERR Unknown lua shebang option: name=x"),
    ("#!lua foo\nreturn 1", "ERR Unknown lua shebang option: foo"),
    ("#!luajit\nreturn 1", "ERR Could not find scripting engine 'luajit'"),
    ("#!\nreturn 1", "ERR Could not find scripting engine ''"),
    ("#!python flags=bogus\nreturn 1", "ERR Unexpected flag in script shebang: bogus"),
    ("#!lua", "ERR Invalid script shebang"),
    ("#!lua\treturn 1", "ERR Invalid script shebang"),
    ("#!lua 'flags=no-writes\nreturn 1", "ERR Invalid engine in script shebang"),
])
def test_shebang_errors(r2, script, message):
    assert ev(r2, script) == err(message)


def test_ro_commands_need_no_writes_scripts(r2):
    assert r2.call("EVAL_RO", "#!lua\nreturn 1", 0) == err(
        "ERR Can not execute a script with write flag using *_ro command.")
    assert r2.call("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0) == (":", 1)
    assert r2.call("EVAL_RO", "return 1", 0) == (":", 1)


def test_select_inside_a_script_stays_inside(r2):
    script = "redis.call('select', 1) redis.call('set', 'indb1', 'x') return redis.call('get', 'indb1')"
    assert ev(r2, script) == ("$", b"x")
    assert r2.call("GET", "indb1") == ("$", None)
    assert r2.call("SELECT", "1") == ("+", b"OK")
    assert r2.call("GET", "indb1") == ("$", b"x")
    # the script starts in its caller's database
    assert ev(r2, "return redis.call('get', 'indb1')") == ("$", b"x")


def test_blocking_commands_do_not_block(r, proto):
    start = time.monotonic()
    assert ev(r, "return redis.call('blpop', 'nolist', 0)") == null(proto)
    assert ev(r, "return redis.call('brpoplpush', 'a', 'b', 0)") == null(proto)
    assert ev(r, "return redis.call('blmpop', 0, 1, 'l', 'left')") == null(proto)
    assert time.monotonic() - start < 2
    r.call("RPUSH", "l", "x")
    assert ev(r, "return redis.call('blpop', 'l', 0)") == bulks("l", "x")


def test_script_wakes_blocked_clients_after_it_ends(target, r2):
    waiter = target.raw(2)
    try:
        waiter.send("BLPOP", "q", 5)
        time.sleep(0.1)
        script = "redis.call('rpush', KEYS[1], 'a') redis.call('rpush', KEYS[1], 'b') return redis.call('llen', KEYS[1])"
        assert ev(r2, script, "q", numkeys=1) == (":", 2)  # nobody popped during the script
        assert waiter.read() == bulks("q", "a")
        assert r2.call("LRANGE", "q", 0, -1) == bulks("b")
    finally:
        waiter.close()


def test_scripts_emit_keyspace_events(target, r2):
    listener = target.raw(2)
    try:
        r2.call("CONFIG", "SET", "notify-keyspace-events", "E$m")
        listener.call("SUBSCRIBE", "__keyevent@0__:set", "__keyevent@0__:keymiss")
        listener.read()  # the second channel's confirmation
        ev(r2, "redis.call('get', 'nokey') redis.call('set', 'k', 'v') return 1")
        assert listener.read() == bulks("message", "__keyevent@0__:keymiss", "nokey")
        assert listener.read() == bulks("message", "__keyevent@0__:set", "k")
    finally:
        r2.call("CONFIG", "SET", "notify-keyspace-events", "")
        listener.close()


def test_a_script_publishing_to_its_own_caller(target):
    client = target.raw(3)
    try:
        client.call("SUBSCRIBE", "ch")
        client.send("EVAL", "redis.call('publish', 'ch', 'm1') return 'done'", 0)
        # the caller's own message comes after the script's reply
        assert client.read() == ("$", b"done")
        assert client.read() == (">", [("$", b"message"), ("$", b"ch"), ("$", b"m1")])
    finally:
        client.close()


def test_scripts_in_a_transaction(r2):
    replies = r2.pipeline(("MULTI",), ("EVAL", "return redis.call('incr', 'n')", 0),
                          ("EVAL", "return redis.call('blpop', 'none', 0)", 0), ("EXEC",))
    assert replies[-1] == ("*", [(":", 1), ("$", None)])


def test_clients_meanwhile_see_the_scripts_effects_once(target, r2):
    # another connection reads while scripts write: each script is atomic
    script = "redis.call('incr', 'a') redis.call('incr', 'b') return 1"
    results = []

    def reader():
        client = target.raw(2)
        for _ in range(30):
            a, b = client.call("MGET", "a", "b")[1]
            results.append((a[1], b[1]))
        client.close()

    thread = threading.Thread(target=reader)
    thread.start()
    for _ in range(30):
        ev(r2, script)
    thread.join()
    assert all(a == b for a, b in results)


# --- COMMAND ------------------------------------------------------------------------------------


def test_command_info(r2):
    kind, [(_, entry)] = r2.call("COMMAND", "INFO", "eval_ro")
    assert entry[:7] == [
        ("$", b"eval_ro"), (":", -3),
        ("*", [("+", flag) for flag in (b"readonly", b"noscript", b"stale", b"skip_monitor",
                                         b"no_mandatory_keys", b"movablekeys")]),
        (":", 0), (":", 0), (":", 0), ("*", [("+", b"@slow"), ("+", b"@scripting")]),
    ]
    kind, [(_, entry)] = r2.call("COMMAND", "INFO", "script|kill")
    assert entry[2] == ("*", [("+", b"noscript"), ("+", b"allow_busy")])
    assert r2.call("COMMAND", "GETKEYS", "EVAL", "return 1", 2, "a", "b", "c") == bulks("a", "b")
    assert r2.call("COMMAND", "GETKEYS", "EVALSHA_RO", "x", 1, "k") == bulks("k")


# --- scripts in the style of job-queue libraries -------------------------------------------------

# the seed's grouped admission, as the package ships it (fakekey/emq/scripts/genqueue.lua)
GENQUEUE = SCRIPTS["genqueue"].source


def genqueue_keys(group):
    return [f"emq:{{q}}:job:{group}", f"emq:{{q}}:lane:{group}", "emq:{q}:ring", "emq:{q}:paused",
            "emq:{q}:glimit", "emq:{q}:gactive", "emq:{q}:wake"]


def admit(r, job, group, payload="p"):
    keys = genqueue_keys(group)
    keys[0] = f"emq:{{q}}:job:{job}"
    return r.call("EVAL", GENQUEUE, 7, *keys, job, payload, group)


def test_genqueue_admission(r, proto):
    assert admit(r, "JOB1", "g1", "payload-1") == (":", 1)
    assert admit(r, "JOB1", "g1") == (":", 0)  # a duplicate: no write
    assert admit(r, "BAD1", "g1") == err("EMQKIND job id must be JOB-namespaced")
    hgetall = r.call("HGETALL", "emq:{q}:job:JOB1")
    pairs = [(b"state", b"pending"), (b"attempts", b"0"), (b"payload", b"payload-1"), (b"group", b"g1")]
    if proto == 2:
        assert hgetall == ("*", [("$", item) for pair in pairs for item in pair])
    else:
        assert hgetall == ("%", [(("$", k), ("$", v)) for k, v in pairs])
    assert r.call("ZRANGE", "emq:{q}:lane:g1", 0, -1) == bulks("JOB1")
    assert r.call("LRANGE", "emq:{q}:ring", 0, -1) == bulks("g1")
    assert r.call("LRANGE", "emq:{q}:wake", 0, -1) == bulks("1")
    # the lane is on the ring already: no second ring, no second wake
    assert admit(r, "JOB2", "g1") == (":", 1)
    assert r.call("LRANGE", "emq:{q}:ring", 0, -1) == bulks("g1")
    assert r.call("LLEN", "emq:{q}:wake") == (":", 1)


def test_genqueue_respects_pause_and_limits(r2):
    r2.call("SADD", "emq:{q}:paused", "gp")
    assert admit(r2, "JOB3", "gp") == (":", 1)
    r2.call("HSET", "emq:{q}:glimit", "gl", "2")
    r2.call("HSET", "emq:{q}:gactive", "gl", "2")
    assert admit(r2, "JOB4", "gl") == (":", 1)
    assert r2.call("EXISTS", "emq:{q}:ring", "emq:{q}:wake") == (":", 0)
    r2.call("HSET", "emq:{q}:gactive", "gl", "1")
    assert admit(r2, "JOB5", "gl") == (":", 1)
    assert r2.call("LRANGE", "emq:{q}:ring", 0, -1) == bulks("gl")
    assert r2.call("ZRANGE", "emq:{q}:lane:gl", 0, -1) == bulks("JOB4", "JOB5")


PROMOTE = """-- move due delayed jobs to the wait list, at most ARGV[2] of them
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local moved = {}
for i, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('RPUSH', KEYS[2], id)
  redis.call('HINCRBY', KEYS[3] .. id, 'promotions', 1)
  redis.call('HSET', KEYS[3] .. id, 'state', 'waiting')
  moved[#moved + 1] = id
end
return moved
"""

CLAIM = """-- claim the job at the head of the wait list, or report why not
local id = redis.call('LINDEX', KEYS[1], 0)
if not id then return false end
local row = KEYS[2] .. id
if redis.call('HGET', row, 'state') ~= 'waiting' then
  return redis.error_reply('EMQSTATE ' .. id .. ' is not waiting')
end
redis.call('LPOP', KEYS[1])
local attempts = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active', 'worker', ARGV[1])
return {id, attempts, redis.call('LPOS', KEYS[3], ARGV[1]) or -1}
"""


def test_delayed_promotion_and_claim(r, proto):
    for i, score in enumerate((10, 20, 30, 40)):
        r.call("ZADD", "delayed", score, f"job{i}")
    assert r.call("EVAL", PROMOTE, 3, "delayed", "wait", "row:", "25", "10") == bulks("job0", "job1")
    assert r.call("EVAL", PROMOTE, 3, "delayed", "wait", "row:", "100", "1") == bulks("job2")
    assert r.call("ZRANGE", "delayed", 0, -1) == bulks("job3")
    assert r.call("LRANGE", "wait", 0, -1) == bulks("job0", "job1", "job2")
    assert r.call("HGET", "row:job0", "promotions") == ("$", b"1")
    r.call("RPUSH", "workers", "w0", "w1")
    assert r.call("EVAL", CLAIM, 3, "wait", "row:", "workers", "w1") == (
        "*", [("$", b"job0"), (":", 1), (":", 1)])
    r.call("HSET", "row:job1", "state", "paused")
    assert r.call("EVAL", CLAIM, 3, "wait", "row:", "workers", "w9") == err("EMQSTATE job1 is not waiting")
    r.call("DEL", "wait")
    assert r.call("EVAL", CLAIM, 3, "wait", "row:", "workers", "w1") == null(proto)


def test_shebang_is_split_as_valkey_splits_a_line(r):
    """The shebang goes through sdssplitargs, the splitter of inline requests and config
    lines: a quoted part joins the unquoted one beside it; an open quote is an error."""
    assert r.call("EVAL", '#!lua "flags="no-writes\nreturn 1', 0) == (":", 1)
    assert r.call("EVAL", '#!lua flags=no-writes "x\nreturn 1', 0) == (
        "-", b"ERR Invalid engine in script shebang")


# --- error accounting: Valkey's "Consistent eval error reporting" -------------------------------


def info_fields(r2, section):
    body = r2.call("INFO", section)[1].decode()
    return dict(line.split(":", 1) for line in body.splitlines() if ":" in line)


def error_accounting(r2, *commands):
    """(errorstats by code, total_error_replies, {command: (calls, rejected, failed)})."""
    stats = info_fields(r2, "commandstats")
    counts = {}
    for name in commands:
        raw = stats.get(f"cmdstat_{name}", "")
        fields = dict(kv.split("=") for kv in raw.split(",") if kv)
        counts[name] = tuple(int(fields.get(f, 0)) for f in ("calls", "rejected_calls", "failed_calls"))
    errors = {code[len("errorstat_"):]: value for code, value in info_fields(r2, "errorstats").items()}
    return errors, int(info_fields(r2, "stats")["total_error_replies"]), counts


OOM_TEXT = "OOM command not allowed when used memory > 'maxmemory'."
RANGE_TEXT = "ERR DB index is out of range"
RO_TEXT = "ERR Write commands are not allowed from read-only scripts."

ERROR_ACCOUNTING_CASES = [  # (maxmemory, command, reply, errorstats, {command: counts})
    # refused by the server's state (OOM): rejected for SET, failed for EVAL, counted once
    (1, ("EVAL", "return redis.call('set','x','y')", "1", "x"), script_error(OOM_TEXT),
     {"OOM": "count=1"}, {"set": (0, 1, 0), "eval": (1, 0, 1)}),
    (1, ("EVAL", "return redis.pcall('set','x','y')['err']", "1", "x"), ("$", OOM_TEXT.encode()),
     {"OOM": "count=1"}, {"set": (0, 1, 0), "eval": (1, 0, 0)}),
    (1, ("EVAL", "return redis.pcall('set','x','y')", "1", "x"), err(OOM_TEXT),
     {"OOM": "count=1"}, {"set": (0, 1, 0), "eval": (1, 0, 1)}),
    # an error reply of the command: failed for both, counted once
    (0, ("EVAL", "return redis.call('select',99)", "0"), script_error(RANGE_TEXT),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "eval": (1, 0, 1)}),
    (0, ("EVAL", "return redis.pcall('select',99)['err']", "0"), ("$", RANGE_TEXT.encode()),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "eval": (1, 0, 0)}),
    (0, ("EVAL", "return redis.pcall('select',99)", "0"), err(RANGE_TEXT),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "eval": (1, 0, 1)}),
    # refused by the script's state (a write from EVAL_RO)
    (0, ("EVAL_RO", "return redis.call('set','x','y')", "1", "x"), script_error(RO_TEXT),
     {"ERR": "count=1"}, {"set": (0, 1, 0), "eval_ro": (1, 0, 1)}),
    (0, ("EVAL_RO", "return redis.pcall('set','x','y')['err']", "1", "x"), ("$", RO_TEXT.encode()),
     {"ERR": "count=1"}, {"set": (0, 1, 0), "eval_ro": (1, 0, 0)}),
    (0, ("EVAL", "return redis.call('geoadd','Sicily','13.361389','38.115556','Palermo')", "1", "x"),
     script_error("WRONGTYPE Operation against a key holding the wrong kind of value"),
     {"WRONGTYPE": "count=1"}, {"geoadd": (1, 0, 1), "eval": (1, 0, 1)}),
    # errors in an array: each one counted already fails the script once more
    (0, ("EVAL", "return {redis.pcall('select',99), redis.pcall('select',99)}", "0"),
     ("*", [err(RANGE_TEXT), err(RANGE_TEXT)]), {"ERR": "count=2"},
     {"select": (2, 0, 2), "eval": (1, 0, 2)}),
    (0, ("EVAL", "return {redis.error_reply('A x'), redis.error_reply('B y')}", "0"),
     ("*", [err("A x"), err("B y")]), {"A": "count=1", "B": "count=1"}, {"eval": (1, 0, 1)}),
    (0, ("EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", "0"), err("MY_ERR_CODE custom msg"),
     {"MY_ERR_CODE": "count=1"}, {"eval": (1, 0, 1)}),
    (0, ("EVAL", "redis.pcall('get') return 1", "0"), (":", 1),
     {"ERR": "count=1"}, {"get": (0, 1, 0), "eval": (1, 0, 0)}),
]


@pytest.mark.parametrize(("maxmemory", "command", "reply", "errors", "counts"), ERROR_ACCOUNTING_CASES)
def test_consistent_script_error_reporting(r2, maxmemory, command, reply, errors, counts):
    r2.call("SET", "Sicily", "1")
    r2.call("CONFIG", "RESETSTAT")
    r2.call("CONFIG", "SET", "maxmemory", maxmemory)
    try:
        assert r2.call(*command) == reply
    finally:
        r2.call("CONFIG", "SET", "maxmemory", "0")
    total = sum(int(count.split("=")[1]) for count in errors.values())
    assert error_accounting(r2, *counts) == (errors, total, counts)


FUNCTION_ERROR_CASES = [  # (body, command, reply, errorstats, {command: counts})
    ("return redis.call('select',99)", "FCALL", err(f"{RANGE_TEXT} script: on @user_function:3."),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "fcall": (1, 0, 1)}),
    ("return redis.pcall('select',99)", "FCALL", err(RANGE_TEXT),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "fcall": (1, 0, 1)}),
    ("return redis.pcall('select',99)['err']", "FCALL", ("$", RANGE_TEXT.encode()),
     {"ERR": "count=1"}, {"select": (1, 0, 1), "fcall": (1, 0, 0)}),
    ("return redis.pcall('set','x','y')", "FCALL_RO", err(RO_TEXT),
     {"ERR": "count=1"}, {"set": (0, 1, 0), "fcall_ro": (1, 0, 1)}),
    ("return redis.error_reply('MY_ERR x')", "FCALL", err("MY_ERR x"),
     {"MY_ERR": "count=1"}, {"fcall": (1, 0, 1)}),
]


@pytest.mark.parametrize(("body", "command", "reply", "errors", "counts"), FUNCTION_ERROR_CASES)
def test_consistent_function_error_reporting(r2, body, command, reply, errors, counts):
    code = ("#!lua name=errlib\nredis.register_function{function_name='f', callback=function()\n"
            f"{body}\nend, flags={{'no-writes'}}}}")
    assert r2.call("FUNCTION", "LOAD", "REPLACE", code) == ("$", b"errlib")
    r2.call("CONFIG", "RESETSTAT")
    try:
        assert r2.call(command, "f", "0") == reply
    finally:
        r2.call("FUNCTION", "DELETE", "errlib")
    total = sum(int(count.split("=")[1]) for count in errors.values())
    assert error_accounting(r2, *counts) == (errors, total, counts)


# --- min-replicas-to-write: a primary without replicas refuses writes --------------------------

NOREPLICAS = "NOREPLICAS Not enough good replicas to write."


@pytest.fixture
def too_few_replicas(r2):
    r2.call("SET", "x", "some value")
    r2.call("CONFIG", "SET", "min-replicas-to-write", "1")
    yield
    r2.call("CONFIG", "SET", "min-replicas-to-write", "0")


@pytest.mark.parametrize(
    ("command", "reply"),
    [
        # scripts that declare no-writes, and scripts without a shebang, start; a write inside
        # one without a shebang is refused
        (("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", "1", "x"), ("$", b"some value")),
        (("EVAL", "return redis.call('get','x')", "1", "x"), ("$", b"some value")),
        (("EVAL", "#!lua\nreturn redis.call('get','x')", "1", "x"), err(NOREPLICAS)),
        (("EVAL", "return redis.call('set','x', 1)", "1", "x"), script_error(NOREPLICAS)),
        (("EVAL", "return redis.pcall('set','x', 1)['err']", "1", "x"), ("$", NOREPLICAS.encode())),
        (("EVAL", "return redis.call('publish','ch','m')", "0"), (":", 0)),  # not a write
        (("EVAL", "#!lua\nreturn redis.call('publish','ch','m')", "0"), err(NOREPLICAS)),
        (("EVAL", "#!lua flags=allow-oom\nreturn 1", "0"), err(NOREPLICAS)),
        (("EVAL", "#!lua\nreturn 1", "notanumber"), err(NOREPLICAS)),  # before the arguments
        (("EVAL_RO", "#!lua\nreturn 1", "0"), err(NOREPLICAS)),  # before the _RO check
        (("EVAL_RO", "return redis.call('get','x')", "1", "x"), ("$", b"some value")),
        # plain commands
        (("SET", "x", "1"), err(NOREPLICAS)),
        (("DEL", "nokey"), err(NOREPLICAS)),
        (("FLUSHALL",), err(NOREPLICAS)),
        (("FUNCTION", "FLUSH"), err(NOREPLICAS)),
        (("GET", "x"), ("$", b"some value")),
        (("PUBLISH", "ch", "m"), (":", 0)),
        (("SET", "x"), err("ERR wrong number of arguments for 'set' command")),
    ],
)
def test_not_enough_good_replicas(r2, too_few_replicas, command, reply):
    assert r2.call(*command) == reply


def test_not_enough_good_replicas_for_functions(r2, too_few_replicas):
    r2.call("CONFIG", "SET", "min-replicas-to-write", "0")
    r2.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=replib\n"
            "redis.register_function('w', function(k) return redis.call('get', k[1]) end)\n"
            "redis.register_function{function_name='ro', callback=function(k) "
            "return redis.call('get', k[1]) end, flags={'no-writes'}}")
    r2.call("CONFIG", "SET", "min-replicas-to-write", "1")
    try:
        assert r2.call("FCALL", "w", "1", "x") == err(NOREPLICAS)
        assert r2.call("FCALL_RO", "w", "1", "x") == err(NOREPLICAS)
        assert r2.call("FCALL", "ro", "1", "x") == ("$", b"some value")
        # min-replicas-max-lag 0 turns the check off
        r2.call("CONFIG", "SET", "min-replicas-max-lag", "0")
        assert r2.call("FCALL", "w", "1", "x") == ("$", b"some value")
        assert r2.call("SET", "x", "1") == ("+", b"OK")
    finally:
        r2.call("CONFIG", "SET", "min-replicas-max-lag", "10")
        r2.call("FUNCTION", "DELETE", "replib")


def test_not_enough_good_replicas_in_transactions(target, r2, too_few_replicas):
    # refused at queueing: the transaction is discarded
    assert r2.pipeline(("MULTI",), ("SET", "x", "2"), ("EXEC",))[1:] == [
        err(NOREPLICAS), err("EXECABORT Transaction discarded because of previous errors.")]
    # queued while writes were allowed: EXEC of a write is refused
    r2.call("CONFIG", "SET", "min-replicas-to-write", "0")
    with target.raw(2) as other:
        assert r2.pipeline(("MULTI",), ("SET", "x", "2")) == [("+", b"OK"), ("+", b"QUEUED")]
        other.call("CONFIG", "SET", "min-replicas-to-write", "1")
        assert r2.call("EXEC") == err(f"EXECABORT Transaction discarded because of: {NOREPLICAS}")
    # refused inside EXEC: a script that may write, as it starts
    r2.call("CONFIG", "SET", "min-replicas-to-write", "0")
    replies = r2.pipeline(("MULTI",), ("CONFIG", "SET", "min-replicas-to-write", "1"),
                          ("EVAL", "#!lua\nreturn 1", "0"), ("EVAL", "return redis.call('set','x',1)", "0"),
                          ("EVAL", "#!lua flags=no-writes\nreturn 2", "0"), ("EXEC",))
    assert replies[-1] == ("*", [("+", b"OK"), err(NOREPLICAS), script_error(NOREPLICAS), (":", 2)])
