"""Functions: FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS/KILL/HELP, FCALL and
FCALL_RO, redis.register_function in both forms, the load-time and run-time environments,
errors as Valkey 9.1 words them (both targets, RESP2 and RESP3). Long functions (BUSY,
FUNCTION KILL) are in tests/fakekey/test_functions_busy.py."""

import time

import pytest

from fakekey.scripting.libraries import crc64


def err(text):
    return ("-", text.encode() if isinstance(text, str) else text)


def bulks(*items):
    return ("*", [("$", item.encode()) for item in items])


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def library(name, body):
    return f"#!lua name={name}\n{body}"


def simple_library(name, function=None, result="1"):
    """A library with one function (named after the library) returning `result`."""
    return library(name, f"redis.register_function('{function or name}', function(keys, args) return {result} end)")


def registration_error(text):
    return err(f"ERR Error registering functions: {text}")


def function_error(text, line=2):
    """A function's runtime error, as Valkey 9.1 reports it to the caller."""
    return err(f"{text} script: on @user_function:{line}.")


@pytest.fixture(autouse=True)
def _no_libraries(r2):
    # FLUSHALL (the targets' reset) leaves functions alone
    r2.call("FUNCTION", "FLUSH")
    yield
    r2.call("FUNCTION", "FLUSH")


def load(r, code, *options):
    return r.call("FUNCTION", "LOAD", *options, code)


def library_names(r):
    return sorted(entry[1][1] for _, entry in r.call("FUNCTION", "LIST")[1])


# --- FUNCTION LOAD ------------------------------------------------------------------------------


def test_load_then_call(r, proto):
    code = library("mylib", "redis.register_function('myfunc', function(keys, args) return {keys, args} end)")
    assert load(r, code) == ("$", b"mylib")
    assert r.call("FCALL", "myfunc", 2, "k1", "k2", "a1") == ("*", [bulks("k1", "k2"), bulks("a1")])
    assert r.call("FCALL", "MYFUNC", 0) == ("*", [("*", []), ("*", [])])  # names are case-insensitive
    assert r.call("FCALL_RO", "myfunc", 0) == err("ERR Can not execute a script with write flag using *_ro command.")
    assert r.call("FCALL", "nosuch", 0) == err("ERR Function not found")


def test_load_replace(r2):
    assert load(r2, simple_library("lib", "f", "'old'")) == ("$", b"lib")
    assert load(r2, simple_library("lib", "f", "'new'")) == err("ERR Library 'lib' already exists")
    assert load(r2, simple_library("lib", "g", "'new'"), "REPLACE") == ("$", b"lib")
    assert r2.call("FCALL", "f", 0) == err("ERR Function not found")
    assert r2.call("FCALL", "g", 0) == ("$", b"new")
    assert load(r2, simple_library("lib", "h"), "replace", "REPLACE") == ("$", b"lib")
    # a failed replace keeps the old library
    assert load(r2, library("lib", "return 1"), "REPLACE") == err("ERR No functions registered")
    assert r2.call("FCALL", "h", 0) == (":", 1)
    assert load(r2, "#!lua name=x\n", "BOGUS") == err("ERR Unknown option given: BOGUS")
    assert r2.call("FUNCTION", "LOAD") == err("ERR wrong number of arguments for 'function|load' command")


@pytest.mark.parametrize(("code", "error"), [
    ("redis.register_function('f', function() end)", "ERR Missing library metadata"),
    ("#!lua name=c", "ERR Invalid library metadata"),
    ("#!lua name=c 'x\nredis.register_function('f', function() end)", "ERR Invalid library metadata"),
    ("#!lua name=c\0\nredis.register_function('f', function() end)", "ERR Invalid library metadata"),
    ("#!lua\nredis.register_function('f', function() end)", "ERR Library name was not given"),
    ("#!lua name=b name=c\nreturn 1", "ERR Invalid metadata value, name argument was given multiple times"),
    ("#!lua name=c foo=bar\nreturn 1", "ERR Invalid metadata value given: foo=bar"),
    ("#!lua name=\nreturn 1", "ERR Library names can only contain letters, numbers, or underscores(_) and "
                              "must be at least one character long"),
    ("#!lua name=a-b\nreturn 1", "ERR Library names can only contain letters, numbers, or underscores(_) and "
                                 "must be at least one character long"),
    ('#!lua name="a b"\nreturn 1', "ERR Library names can only contain letters, numbers, or underscores(_) and "
                                   "must be at least one character long"),
    ("#!py name=c\nreturn 1", "ERR Engine 'py' not found"),
    ("#!lua name=c\n", "ERR No functions registered"),
    ("#!lua name=c\nreturn 1", "ERR No functions registered"),
    ("#!lua name=c\n\n\nreturn 1 +", "ERR Error compiling function: user_function:4: unexpected symbol near '<eof>'"),
])
def test_library_metadata_and_compile_errors(r2, code, error):
    assert load(r2, code) == err(error)
    assert library_names(r2) == []


def test_shebang_forms(r2):
    assert load(r2, "#!LUA name=a1\nredis.register_function('f1', function() return 1 end)") == ("$", b"a1")
    assert load(r2, "#!lua NAME=a2\nredis.register_function('f2', function() return 2 end)") == ("$", b"a2")
    assert load(r2, '#!lua "name=a3"\nredis.register_function(\'f3\', function() return 3 end)') == ("$", b"a3")
    assert load(r2, "#!lua name=a4\r\nredis.register_function('f4', function() return 4 end)") == ("$", b"a4")
    # the code is a C string: what follows a NUL is kept but never compiled
    code = "#!lua name=a5\nredis.register_function('f5', function() return 5 end)\0garbage("
    assert load(r2, code) == ("$", b"a5")
    assert r2.call("FCALL", "f5", 0) == (":", 5)
    kind, [(_, entry)] = r2.call("FUNCTION", "LIST", "LIBRARYNAME", "a5", "WITHCODE")
    assert entry[-1] == ("$", code.encode())
    assert library_names(r2) == [b"a1", b"a2", b"a3", b"a4", b"a5"]


MISSING_GLOBAL = "ERR user_function:2: Script attempted to access nonexistent global variable '{}'"


@pytest.mark.parametrize(("body", "error"), [
    ("redis.call('ping')", registration_error(MISSING_GLOBAL.format("call"))),
    ("redis.pcall('ping')", registration_error(MISSING_GLOBAL.format("pcall"))),
    ("redis.setresp(3)", registration_error(MISSING_GLOBAL.format("setresp"))),
    ("server.sha1hex('x')", registration_error(MISSING_GLOBAL.format("sha1hex"))),
    ("local y = server.REPL_ALL", registration_error(MISSING_GLOBAL.format("REPL_ALL"))),
    ("local x = string.len('a')", registration_error(MISSING_GLOBAL.format("string"))),
    ("local x = pairs", registration_error(MISSING_GLOBAL.format("pairs"))),
    ("error('boom')", registration_error(MISSING_GLOBAL.format("error"))),
    ("local y = _G", registration_error(MISSING_GLOBAL.format("_G"))),
    ("local y = KEYS", registration_error(MISSING_GLOBAL.format("KEYS"))),
    ("x = 1", registration_error("ERR user_function:2: Attempt to modify a readonly table")),
    ("redis.x = 1", registration_error("ERR user_function:2: Attempt to modify a readonly table")),
    ("local t = nil\nlocal y = t.x", registration_error("ERR user_function:3: attempt to index local 't' (a nil value)")),
])
def test_load_time_environment(r2, body, error):
    # while it loads, a library sees only redis/server with register_function, log and constants
    assert load(r2, library("env", body)) == error


def test_load_time_api(r2):
    body = """local v = {server.REDIS_VERSION, server.REDIS_VERSION_NUM, server.VALKEY_VERSION,
        server.VALKEY_VERSION_NUM, server.SERVER_NAME, server.LOG_DEBUG, server.LOG_VERBOSE,
        server.LOG_NOTICE, server.LOG_WARNING, redis.log == server.log and 'same log',
        redis.register_function == server.register_function and 'same register_function'}
    redis.register_function('consts', function() return v end)"""
    assert load(r2, library("api", body)) == ("$", b"api")
    assert r2.call("FCALL", "consts", 0) == ("*", [
        ("$", b"7.2.4"), (":", 0x070204), ("$", b"9.1.2"), (":", 0x090102), ("$", b"valkey"),
        (":", 0), (":", 1), (":", 2), (":", 3), ("$", b"same log"), ("$", b"same register_function")])


@pytest.mark.parametrize(("call", "error"), [
    ("redis.register_function()", "ERR wrong number of arguments to server.register_function"),
    ("redis.register_function('a', 'b', 'c')", "ERR wrong number of arguments to server.register_function"),
    ("redis.register_function('f')", "ERR calling server.register_function with a single argument is only "
                                     "applicable to Lua table (representing named arguments)."),
    ("redis.register_function('f', 1)", "ERR second argument to server.register_function must be a function"),
    ("redis.register_function(nil, function() end)",
     "ERR first argument to server.register_function must be a string"),
    ("redis.register_function({}, function() end)",
     "ERR first argument to server.register_function must be a string"),
    ("redis.register_function{}", "ERR server.register_function must get a function name argument"),
    ("redis.register_function{callback=function() end}",
     "ERR server.register_function must get a function name argument"),
    ("redis.register_function{function_name='f'}", "ERR server.register_function must get a callback argument"),
    ("redis.register_function{function_name={}, callback=function() end}",
     "ERR function_name argument given to server.register_function must be a string"),
    ("redis.register_function{function_name='f', callback='x'}",
     "ERR callback argument given to server.register_function must be a function"),
    ("redis.register_function{function_name='f', callback=function() end, description={}}",
     "ERR description argument given to server.register_function must be a string"),
    ("redis.register_function{function_name='f', callback=function() end, flags='no-writes'}",
     "ERR flags argument to server.register_function must be a table representing function flags"),
    ("redis.register_function{function_name='f', callback=function() end, flags={'bogus'}}",
     "ERR unknown flag given"),
    ("redis.register_function{function_name='f', callback=function() end, flags={1}}", "ERR unknown flag given"),
    ("redis.register_function{function_name='f', callback=function() end, flags={{}}}", "ERR unknown flag given"),
    ("redis.register_function{function_name='f', callback=function() end, bogus=1}",
     "ERR unknown argument given to server.register_function"),
    ("redis.register_function{[1]=2}", "ERR unknown argument given to server.register_function"),
    ("redis.register_function{[true]=1}", "ERR named argument key given to server.register_function is not a string"),
])
def test_register_function_errors(r2, call, error):
    assert load(r2, library("reg", call)) == registration_error(error)


NAME_RULES = "ERR Function names can only contain letters, numbers, or underscores(_) and must be at least one " \
             "character long"


@pytest.mark.parametrize(("body", "error"), [
    ("redis.register_function('a-b', function() end)", NAME_RULES),
    ("redis.register_function('', function() end)", NAME_RULES),
    ("redis.register_function('ok', function() end)\nredis.register_function('not ok', function() end)", NAME_RULES),
    ("redis.register_function('f', function() end)\nredis.register_function('f', function() end)",
     "ERR Function already exists in the library"),
])
def test_function_name_errors(r2, body, error):
    assert load(r2, library("names", body)) == err(error)


def test_named_arguments(r, proto):
    body = """redis.register_function{FUNCTION_NAME='named', CallBack=function() return 'n' end, Description='says n',
        flags={'allow-cross-slot-keys', 'no-cluster', 'allow-stale', 'ALLOW-OOM', 'no-writes', 'no-writes'}}
    redis.register_function{function_name=12, callback=function() return 12 end, description=3.5, flags={[2]='x'}}"""
    assert load(r, library("named", body)) == ("$", b"named")
    assert r.call("FCALL_RO", "named", 0) == ("$", b"n")
    assert r.call("FCALL", "12", 0) == (":", 12)
    kind, [(_, entry)] = r.call("FUNCTION", "LIST")
    functions = entry[5][1] if proto == 2 else entry[2][1][1]
    flags = [("+", flag) for flag in (b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster",
                                      b"allow-cross-slot-keys")]
    if proto == 2:
        described = sorted(functions, key=lambda f: f[1][1][1])
        assert described == [
            ("*", [("$", b"name"), ("$", b"12"), ("$", b"description"), ("$", b"3.5"), ("$", b"flags"), ("*", [])]),
            ("*", [("$", b"name"), ("$", b"named"), ("$", b"description"), ("$", b"says n"),
                   ("$", b"flags"), ("*", flags)]),
        ]
    else:
        described = sorted(functions, key=lambda f: f[1][0][1][1])
        assert described == [
            ("%", [(("$", b"name"), ("$", b"12")), (("$", b"description"), ("$", b"3.5")),
                   (("$", b"flags"), ("~", []))]),
            ("%", [(("$", b"name"), ("$", b"named")), (("$", b"description"), ("$", b"says n")),
                   (("$", b"flags"), ("~", flags))]),
        ]


def test_function_names_across_libraries(r2):
    assert load(r2, simple_library("first", "shared")) == ("$", b"first")
    assert load(r2, simple_library("second", "shared")) == err("ERR Function shared already exists")
    assert load(r2, simple_library("second", "SHARED")) == err("ERR Function SHARED already exists")
    # a library replacing itself may keep its names
    assert load(r2, simple_library("first", "shared", "2"), "REPLACE") == ("$", b"first")
    assert r2.call("FCALL", "Shared", 0) == (":", 2)
    assert library_names(r2) == [b"first"]


def test_load_timeout(r2):
    started = time.monotonic()
    assert load(r2, library("slow", "while true do end")) == registration_error("ERR FUNCTION LOAD timeout")
    assert 0.4 < time.monotonic() - started < 3
    # the Lua state is sound afterwards
    assert load(r2, simple_library("after", result="'fine'")) == ("$", b"after")
    assert r2.call("FCALL", "after", 0) == ("$", b"fine")


# --- FCALL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "error"), [
    (("x",), "ERR Bad number of keys provided"),
    ((" 1", "k"), "ERR Bad number of keys provided"),
    (("99999999999999999999",), "ERR Bad number of keys provided"),
    (("-1",), "ERR Number of keys can't be negative"),
    (("1",), "ERR Number of keys can't be greater than number of args"),
    (("3", "a", "b"), "ERR Number of keys can't be greater than number of args"),
])
def test_fcall_numkeys_errors(r2, args, error):
    load(r2, simple_library("nk"))
    assert r2.call("FCALL", "nk", *args) == err(error)
    assert r2.call("FCALL", "nosuch", *args) == err("ERR Function not found")  # looked up first


def test_fcall_arity(r2):
    assert r2.call("FCALL", "f") == err("ERR wrong number of arguments for 'fcall' command")
    assert r2.call("FCALL_RO", "f") == err("ERR wrong number of arguments for 'fcall_ro' command")


def test_keys_and_args_are_arguments(r2):
    body = """redis.register_function('kv', function(keys, args, ...)
      return {#keys, #args, select('#', ...), keys[1], args[1], type(rawget(_G, 'KEYS'))}
    end)
    redis.register_function('change', function(keys, args) keys[1] = 'changed' return keys end)
    redis.register_function('globals', function() return KEYS end)"""
    load(r2, library("kv", body))
    assert r2.call("FCALL", "kv", 1, "k", "a", "b") == (
        "*", [(":", 1), (":", 2), (":", 0), ("$", b"k"), ("$", b"a"), ("$", b"nil")])
    assert r2.call("FCALL", "change", 1, "k") == bulks("changed")
    assert r2.call("FCALL", "globals", 0) == function_error(
        "ERR user_function:6: Script attempted to access nonexistent global variable 'KEYS'", 6)


def test_runtime_environment(r2):
    body = """local function sorted_keys(t)
      local out = {}
      for k in pairs(t) do out[#out + 1] = k end
      table.sort(out)
      return out
    end
    redis.register_function('g', function() return sorted_keys(_G) end)
    redis.register_function('api', function() return sorted_keys(redis) end)
    redis.register_function('same', function() return {tostring(rawget(_G, 'redis') == redis), tostring(_G._G == _G)} end)
    redis.register_function('loaded', function() return loadstring('return 7')() end)"""
    load(r2, library("rt", body))
    assert r2.call("FCALL", "g", 0) == bulks(
        "_G", "_VERSION", "assert", "bit", "cjson", "cmsgpack", "collectgarbage", "coroutine", "error",
        "gcinfo", "getmetatable", "ipairs", "load", "loadstring", "math", "next", "os", "pairs", "pcall",
        "rawequal", "rawget", "rawset", "redis", "select", "server", "setmetatable", "string", "struct",
        "table", "tonumber", "tostring", "type", "unpack", "xpcall")
    # no debugger stubs and no register_function at run time
    assert r2.call("FCALL", "api", 0) == bulks(
        "LOG_DEBUG", "LOG_NOTICE", "LOG_VERBOSE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM",
        "REPL_ALL", "REPL_AOF", "REPL_NONE", "REPL_REPLICA", "REPL_SLAVE", "SERVER_NAME", "VALKEY_VERSION",
        "VALKEY_VERSION_NUM", "acl_check_cmd", "call", "error_reply", "log", "pcall", "set_repl", "setresp",
        "sha1hex", "status_reply")
    assert r2.call("FCALL", "same", 0) == bulks("true", "true")
    assert r2.call("FCALL", "loaded", 0) == (":", 7)


@pytest.mark.parametrize(("body", "reply"), [
    ("error('boom')", function_error("ERR user_function:2: boom")),
    ("error('boom', 0)", function_error("ERR boom")),
    ("error({err='MY boom'})", function_error("MY boom")),
    ("x = 1", function_error("ERR user_function:2: Attempt to modify a readonly table")),
    ("return redis.call('nosuch')", function_error("ERR Unknown command called from script")),
    ("return redis.call('fcall', 'f', 0)", function_error("ERR This Valkey command is not allowed from script")),
    ("return redis.call('function', 'list')", function_error("ERR This Valkey command is not allowed from script")),
    ("return redis.pcall('nosuch')", err("ERR Unknown command called from script")),
    ("return redis.error_reply('MY err')", err("MY err")),
    ("return redis.register_function('h', function() end)", function_error(
        "ERR user_function:2: attempt to call field 'register_function' (a nil value)")),
    ("error(setmetatable({}, {__newindex = function() error('x') end}))", function_error("ERR user_function:2: x")),
])
def test_runtime_errors(r2, body, reply):
    load(r2, library("errs", f"redis.register_function('f', function(keys, args) {body} end)"))
    assert r2.call("FCALL", "f", 0) == reply


def test_errors_report_the_line_that_failed(r2):
    body = """local rf = redis.register_function
    local function helper() return zz end
    redis.register_function('deep', function(keys, args)
      return helper()
    end)
    redis.register_function('late', function(keys, args)
      rf('x', function() end)
    end)"""
    load(r2, library("lines", body))
    assert r2.call("FCALL", "deep", 0) == function_error(
        "ERR user_function:3: Script attempted to access nonexistent global variable 'zz'", 3)
    assert r2.call("FCALL", "late", 0) == function_error(
        "ERR server.register_function can only be called on FUNCTION LOAD command", 8)


def test_reply_conversions(r, proto):
    body = """redis.register_function('mixed', function() return {1, 2.9, 'x', false, true, {ok='fine'}} end)
    redis.register_function('double', function() return {double=1.5} end)
    redis.register_function('hash', function(keys) redis.setresp(3) return redis.call('hgetall', keys[1]) end)
    redis.register_function('nothing', function() return redis.setresp(3) end)"""
    load(r, library("conv", body))
    assert r.call("FCALL", "mixed", 0) == ("*", [(":", 1), (":", 2), ("$", b"x"), null(proto), (":", 1), ("+", b"fine")])
    assert r.call("FCALL", "double", 0) == (("$", b"1.5") if proto == 2 else (",", b"1.5"))
    r.call("HSET", "h", "a", "1")
    expected = ("*", [("$", b"a"), ("$", b"1")]) if proto == 2 else ("%", [(("$", b"a"), ("$", b"1"))])
    assert r.call("FCALL", "hash", 1, "h") == expected
    assert r.call("FCALL", "nothing", 0) == null(proto)


def test_fcall_ro_and_no_writes(r2):
    body = """redis.register_function{function_name='reader', callback=function(keys) return redis.call('get', keys[1]) end,
                                   flags={'no-writes'}}
    redis.register_function{function_name='sneaky', callback=function(keys) return redis.call('set', keys[1], 'x') end,
                            flags={'no-writes'}}
    redis.register_function('writer', function(keys, args) return redis.call('set', keys[1], args[1]) end)"""
    load(r2, library("ro", body))
    assert r2.call("FCALL", "writer", 1, "k", "v") == ("+", b"OK")
    assert r2.call("FCALL_RO", "reader", 1, "k") == ("$", b"v")
    assert r2.call("FCALL", "reader", 1, "k") == ("$", b"v")
    assert r2.call("FCALL_RO", "writer", 1, "k", "w") == err(
        "ERR Can not execute a script with write flag using *_ro command.")
    read_only = function_error("ERR Write commands are not allowed from read-only scripts.", 4)
    assert r2.call("FCALL", "sneaky", 1, "k") == read_only
    assert r2.call("FCALL_RO", "sneaky", 1, "k") == read_only
    assert r2.call("GET", "k") == ("$", b"v")


def test_fcall_in_a_transaction(r2):
    load(r2, simple_library("tx", "incr", "redis.call('incr', keys[1])"))
    replies = r2.pipeline(("MULTI",), ("FCALL", "incr", 1, "n"), ("FUNCTION", "DELETE", "tx"),
                          ("FCALL", "incr", 1, "n"), ("EXEC",))
    assert replies[-1] == ("*", [(":", 1), ("+", b"OK"), ("-", b"ERR Function not found")])


def test_scripts_cannot_call_functions(r2):
    load(r2, simple_library("fromeval", "target"))
    assert r2.call("EVAL", "return redis.call('fcall', 'target', 0)", 0) == err(
        "ERR This Valkey command is not allowed from script script: on @user_script:1.")


def test_functions_survive_flushall_and_script_flush(r2):
    load(r2, simple_library("keep", result="'kept'"))
    assert r2.call("FLUSHALL") == ("+", b"OK")
    assert r2.call("SCRIPT", "FLUSH") == ("+", b"OK")
    assert r2.call("FCALL", "keep", 0) == ("$", b"kept")
    assert r2.call("FUNCTION", "FLUSH") == ("+", b"OK")
    assert r2.call("FCALL", "keep", 0) == err("ERR Function not found")


# --- FUNCTION LIST, DELETE, FLUSH, STATS, KILL, HELP ---------------------------------------------


def test_function_list_shapes(r, proto):
    assert r.call("FUNCTION", "LIST") == ("*", [])
    code = simple_library("shape", "f")
    load(r, code)
    fields = [("library_name", ("$", b"shape")), ("engine", ("$", b"LUA"))]
    if proto == 2:
        function = ("*", [("$", b"name"), ("$", b"f"), ("$", b"description"), ("$", None), ("$", b"flags"), ("*", [])])
        entry = [item for name, value in fields for item in (("$", name.encode()), value)]
        entry += [("$", b"functions"), ("*", [function])]
        code_fields = [("$", b"library_code"), ("$", code.encode())]
        assert r.call("FUNCTION", "LIST") == ("*", [("*", entry)])
        assert r.call("FUNCTION", "LIST", "WITHCODE") == ("*", [("*", entry + code_fields)])
    else:
        function = ("%", [(("$", b"name"), ("$", b"f")), (("$", b"description"), ("_", None)),
                          (("$", b"flags"), ("~", []))])
        entry = [(("$", name.encode()), value) for name, value in fields]
        entry += [(("$", b"functions"), ("*", [function]))]
        code_fields = [(("$", b"library_code"), ("$", code.encode()))]
        assert r.call("FUNCTION", "LIST") == ("*", [("%", entry)])
        assert r.call("FUNCTION", "LIST", "WITHCODE") == ("*", [("%", entry + code_fields)])


def test_function_list_filters(r2):
    for name in ("alpha", "alps", "beta"):
        load(r2, simple_library(name))

    def listed(*args):
        return sorted(entry[1][1] for _, entry in r2.call("FUNCTION", "LIST", *args)[1])

    assert listed() == [b"alpha", b"alps", b"beta"]
    assert listed("LIBRARYNAME", "al*") == [b"alpha", b"alps"]
    assert listed("libraryname", "AL?S", "withcode") == [b"alps"]  # the pattern ignores case
    assert listed("LIBRARYNAME", "nothing") == []


@pytest.mark.parametrize(("args", "error"), [
    (("LIBRARYNAME",), "ERR library name argument was not given"),
    (("WITHCODE", "WITHCODE"), "ERR Unknown argument WITHCODE"),
    (("LIBRARYNAME", "a", "LIBRARYNAME", "b"), "ERR Unknown argument LIBRARYNAME"),
    (("bogus",), "ERR Unknown argument bogus"),
])
def test_function_list_errors(r2, args, error):
    assert r2.call("FUNCTION", "LIST", *args) == err(error)


def test_function_delete(r2):
    load(r2, simple_library("gone", "f1"))
    load(r2, simple_library("stays", "f2"))
    assert r2.call("FUNCTION", "DELETE", "GONE") == err("ERR Library not found")  # library names keep case
    assert r2.call("FUNCTION", "DELETE", "gone") == ("+", b"OK")
    assert r2.call("FUNCTION", "DELETE", "gone") == err("ERR Library not found")
    assert r2.call("FCALL", "f1", 0) == err("ERR Function not found")
    assert r2.call("FCALL", "f2", 0) == (":", 1)
    assert load(r2, simple_library("again", "f1")) == ("$", b"again")  # the name is free again
    assert r2.call("FUNCTION", "DELETE") == err("ERR wrong number of arguments for 'function|delete' command")
    assert r2.call("FUNCTION", "DELETE", "a", "b") == err("ERR wrong number of arguments for 'function|delete' command")


def test_function_flush(r2):
    for mode in ((), ("ASYNC",), ("sync",)):
        load(r2, simple_library("flushed"))
        assert r2.call("FUNCTION", "FLUSH", *mode) == ("+", b"OK")
        assert library_names(r2) == []
    assert r2.call("FUNCTION", "FLUSH", "bogus") == err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    assert r2.call("FUNCTION", "flush", "SYNC", "ASYNC") == err(
        "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.")


def test_function_stats(r, proto):
    def stats():
        return r.call("FUNCTION", "STATS")

    def expected(libraries, functions):
        if proto == 2:
            counts = ("*", [("$", b"libraries_count"), (":", libraries), ("$", b"functions_count"), (":", functions)])
            return ("*", [("$", b"running_script"), ("$", None), ("$", b"engines"), ("*", [("$", b"LUA"), counts])])
        counts = ("%", [(("$", b"libraries_count"), (":", libraries)), (("$", b"functions_count"), (":", functions))])
        return ("%", [(("$", b"running_script"), ("_", None)), (("$", b"engines"), ("%", [(("$", b"LUA"), counts)]))])

    assert stats() == expected(0, 0)
    load(r, library("two", "redis.register_function('f1', function() end)\nredis.register_function('f2', function() end)"))
    load(r, simple_library("one"))
    assert stats() == expected(2, 3)
    assert r.call("FUNCTION", "STATS", "x") == err("ERR wrong number of arguments for 'function|stats' command")


def test_function_kill_without_a_function(r2):
    assert r2.call("FUNCTION", "KILL") == err("NOTBUSY No scripts in execution right now.")
    assert r2.call("FUNCTION", "KILL", "x") == err("ERR wrong number of arguments for 'function|kill' command")


def test_function_help(r2):
    kind, lines = r2.call("FUNCTION", "HELP")
    assert kind == "*"
    assert lines[0] == ("+", b"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert lines[1] == ("+", b"LOAD [REPLACE] <FUNCTION CODE>")
    assert ("+", b"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]") in lines
    assert lines[-1] == ("+", b"    Print this help.")
    assert len(lines) == 39
    assert r2.call("FUNCTION", "HELP", "x") == err("ERR wrong number of arguments for 'function|help' command")


def test_function_container_errors(r2):
    assert r2.call("FUNCTION") == err("ERR wrong number of arguments for 'function' command")
    assert r2.call("FUNCTION", "NOPE") == err("ERR unknown subcommand 'NOPE'. Try FUNCTION HELP.")
    assert r2.call("FUNCTION", "DUMP", "x") == err("ERR wrong number of arguments for 'function|dump' command")
    assert r2.call("FUNCTION", "RESTORE") == err("ERR wrong number of arguments for 'function|restore' command")


# --- FUNCTION DUMP and RESTORE ---------------------------------------------------------------------


def rdb_length(n):
    assert n < 16384
    return bytes([n]) if n < 64 else bytes([0x40 | n >> 8, n & 0xFF])


def rdb_string(data):
    return rdb_length(len(data)) + data


def payload(body, version=80):
    """A DUMP payload around `body`: the RDB version and the CRC64, little-endian."""
    body += version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


def function_record(name, function=None):
    return b"\xf5" + rdb_string(simple_library(name, function, f"'{name}'").encode())


def test_dump_is_valkeys_payload(r2):
    assert r2.call("FUNCTION", "DUMP") == ("$", payload(b""))
    # a code LZF would not shrink by more than 4 bytes, which Valkey stores as is too
    code = b"#!lua name=a\nredis.register_function('fa', function() return 1 end)"
    load(r2, code)
    assert r2.call("FUNCTION", "DUMP") == ("$", payload(b"\xf5" + rdb_string(code)))


def test_dump_and_restore_round_trip(r2):
    load(r2, simple_library("lib_a", "fa", "'a'"))
    load(r2, library("lib_b", "redis.register_function{function_name='fb', callback=function() return 'b' end, "
                              "flags={'no-writes'}, description='b'}"))
    listing = sorted(r2.call("FUNCTION", "LIST", "WITHCODE")[1])
    dump = r2.call("FUNCTION", "DUMP")[1]
    r2.call("FUNCTION", "FLUSH")
    assert r2.call("FUNCTION", "RESTORE", dump) == ("+", b"OK")
    assert sorted(r2.call("FUNCTION", "LIST", "WITHCODE")[1]) == listing
    assert r2.call("FCALL_RO", "fb", 0) == ("$", b"b")
    # APPEND (the default) refuses a library that exists; REPLACE replaces it; FLUSH starts over
    collision = {err("ERR Library lib_a already exists"), err("ERR Library lib_b already exists")}
    assert r2.call("FUNCTION", "RESTORE", dump) in collision  # which one: the payload's order
    assert r2.call("FUNCTION", "RESTORE", dump, "append") in collision
    assert r2.call("FUNCTION", "RESTORE", dump, "REPLACE") == ("+", b"OK")
    load(r2, simple_library("extra"))
    assert r2.call("FUNCTION", "RESTORE", dump, "FLUSH") == ("+", b"OK")
    assert library_names(r2) == [b"lib_a", b"lib_b"]


def test_restore_policies(r2):
    load(r2, simple_library("a", "f"))
    load(r2, simple_library("b", "g"))
    assert r2.call("FUNCTION", "RESTORE", payload(function_record("a", "h"))) == err("ERR Library a already exists")
    assert r2.call("FUNCTION", "RESTORE", payload(function_record("a", "h")), "REPLACE") == ("+", b"OK")
    assert r2.call("FCALL", "h", 0) == ("$", b"a")
    assert r2.call("FCALL", "f", 0) == err("ERR Function not found")
    # a function name another library holds aborts, and nothing changes
    assert r2.call("FUNCTION", "RESTORE", payload(function_record("c", "G"))) == err("ERR Function G already exists")
    assert r2.call("FUNCTION", "RESTORE", payload(function_record("a", "g")), "REPLACE") == err(
        "ERR Function g already exists")
    assert r2.call("FCALL", "h", 0) == ("$", b"a")
    assert library_names(r2) == [b"a", b"b"]
    assert r2.call("FUNCTION", "RESTORE", payload(function_record("z")), "flush") == ("+", b"OK")
    assert library_names(r2) == [b"z"]
    assert r2.call("FUNCTION", "RESTORE", payload(b""), "FLUSH") == ("+", b"OK")
    assert library_names(r2) == []


def lzf_literals(data):
    """`data` as LZF with no back references: runs of at most 32 bytes, each after its length - 1."""
    return b"".join(bytes([len(data[i:i + 32]) - 1]) + data[i:i + 32] for i in range(0, len(data), 32))


def lzf_record(code):
    """A function record whose code is an LZF-compressed RDB string (as Valkey writes a long code)."""
    compressed = lzf_literals(code)
    return b"\xf5\xc3" + rdb_length(len(compressed)) + rdb_length(len(code)) + compressed


@pytest.mark.parametrize(("name", "data", "reply"), [
    ("empty", payload(b""), ("+", b"OK")),
    ("old rdb version", payload(function_record("v11"), version=11), ("+", b"OK")),
    ("32-bit length", payload(b"\xf5\x80" + len(simple_library("l32")).to_bytes(4, "big")
                              + simple_library("l32").encode()), ("+", b"OK")),
    ("lzf", payload(lzf_record(simple_library("lzf").encode())), ("+", b"OK")),
    ("lzf wrong length", payload(b"\xf5\xc3\x04\x04\x02abc"), err("ERR Failed loading library payload")),
    ("lzf short", payload(b"\xf5\xc3\x04\x03\x02abc"), err("ERR Missing library metadata")),
    ("foreign version", payload(function_record("v12"), version=12), err("ERR DUMP payload version or checksum are wrong")),
    ("future version", payload(function_record("v81"), version=81), err("ERR DUMP payload version or checksum are wrong")),
    ("version 0", payload(function_record("v0"), version=0), err("ERR DUMP payload version or checksum are wrong")),
    ("bad checksum", payload(function_record("crc"))[:-1] + b"\0", err("ERR DUMP payload version or checksum are wrong")),
    ("no checksum", function_record("crc0") + b"P\x00" + b"\0" * 8, err("ERR DUMP payload version or checksum are wrong")),
    ("too short", b"short", err("ERR DUMP payload version or checksum are wrong")),
    ("nothing", b"", err("ERR DUMP payload version or checksum are wrong")),
    ("pre-ga", payload(b"\xf6" + rdb_string(simple_library("pre").encode())), err("ERR Pre-GA function format not supported")),
    ("not a function", payload(b"\x00" + rdb_string(b"x")), err("ERR given type is not a function")),
    ("end opcode", payload(b"\xff"), err("ERR given type is not a function")),
    ("short string", payload(b"\xf5" + bytes([50]) + b"abc"), err("ERR Failed loading library payload")),
    ("bad length", payload(b"\xf5\xc5"), err("ERR Failed loading library payload")),
    ("type only", payload(b"\xf5"), err("ERR Failed loading library payload")),
    ("integer string", payload(b"\xf5\xc0\x05"), err("ERR Missing library metadata")),
    ("footer as string", payload(function_record("tr") + b"\xf5\x01"), err("ERR Missing library metadata")),
    ("no functions", payload(b"\xf5" + rdb_string(b"#!lua name=x\nreturn 1")), err("ERR No functions registered")),
    ("compile error", payload(b"\xf5" + rdb_string(b"#!lua name=x\nreturn +")), err(
        "ERR Error compiling function: user_function:2: unexpected symbol near '+'")),
    ("same library twice", payload(function_record("a", "f") + function_record("a", "g")),
     err("ERR Library 'a' already exists")),
    ("same function twice", payload(function_record("a", "f") + function_record("b", "F")),
     err("ERR Function F already exists")),
])
def test_restore_payloads(r2, name, data, reply):
    assert r2.call("FUNCTION", "RESTORE", data) == reply, name
    if reply[0] == "-":
        assert library_names(r2) == []


def test_restore_arguments(r2):
    dump = r2.call("FUNCTION", "DUMP")[1]
    assert r2.call("FUNCTION", "RESTORE", dump, "bogus") == err(
        "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    assert r2.call("FUNCTION", "RESTORE", dump, "FLUSH", "x") == err(
        "ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.")


# --- COMMAND ---------------------------------------------------------------------------------------


def test_command_info(r2):
    kind, [(_, entry)] = r2.call("COMMAND", "INFO", "fcall_ro")
    assert entry[:7] == [
        ("$", b"fcall_ro"), (":", -3),
        ("*", [("+", flag) for flag in (b"readonly", b"noscript", b"stale", b"skip_monitor",
                                         b"no_mandatory_keys", b"movablekeys")]),
        (":", 0), (":", 0), (":", 0), ("*", [("+", b"@slow"), ("+", b"@scripting")]),
    ]
    kind, [(_, entry)] = r2.call("COMMAND", "INFO", "function|load")
    assert entry[:7] == [
        ("$", b"function|load"), (":", -3),
        ("*", [("+", b"write"), ("+", b"denyoom"), ("+", b"noscript")]),
        (":", 0), (":", 0), (":", 0), ("*", [("+", b"@write"), ("+", b"@slow"), ("+", b"@scripting")]),
    ]
    kind, [(_, entry)] = r2.call("COMMAND", "INFO", "function|stats")
    assert entry[2] == ("*", [("+", b"noscript"), ("+", b"allow_busy")])
    assert r2.call("COMMAND", "GETKEYS", "FCALL", "f", 2, "a", "b", "c") == bulks("a", "b")
    assert r2.call("COMMAND", "GETKEYS", "FCALL_RO", "f", 1, "k") == bulks("k")
