"""Scripts that try to hurt the server: long scripts inside MULTI/EXEC, scripts that turn
slow after quick runs, replies nested past Lua's stack, redis.call with thousands of
arguments. The texts and reply shapes are Valkey 9.1's (asked of a real server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakekey.testing.raw import Background, RawClient, wait_until_reply

BUSY_EVAL = ("-", b"BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ("-", b"BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
KILLED_EVAL = ("-", b"ERR Script killed by user with SCRIPT KILL. script: on @user_script:1.")
KILLED_FUNCTION = ("-", b"ERR Script killed by user with FUNCTION KILL. script: on @user_function:3.")
UNKILLABLE = ("-", b"UNKILLABLE Sorry the script already executed write commands against the dataset. "
                   b"You can either wait the script termination or kill the server in a hard way using "
                   b"the SHUTDOWN NOSAVE command.")
STACK_LIMIT = b"-ERR reached lua stack limit"

LIBRARY = """#!lua name=hostile
server.register_function('spin', function(keys, args)
  while true do end
end)
"""
# writes, then runs for ARGV[1] seconds of CPU time
INCR_THEN_WAIT = ("redis.call('incr', KEYS[1]) local t = os.clock() "
                  "while os.clock() - t < tonumber(ARGV[1]) do end return redis.call('get', KEYS[1])")


@pytest.fixture
def quick_busy(r: RawClient) -> Iterator[None]:
    """A 50 ms busy-reply-threshold for the test (the default is 5 s)."""
    default = r.call("CONFIG", "GET", "busy-reply-threshold")
    assert r.call("CONFIG", "SET", "busy-reply-threshold", "50") == ("+", b"OK")
    yield
    value = default[1][1] if default[0] == "*" else default[1][0][1]
    r.call("CONFIG", "SET", "busy-reply-threshold", value[1])


def background(target, proto: int, *requests: tuple) -> Background:
    """A client in the test's protocol that sends `requests` from a thread."""
    hello = (("HELLO", "3"),) if proto == 3 else ()
    return Background(target.host, target.port, *hello, *requests)


def replies_of(job: Background, proto: int) -> list:
    replies = job.join()
    return replies[1:] if proto == 3 else replies


# --- long scripts inside MULTI/EXEC ------------------------------------------------------------


def test_a_script_inside_exec_turns_busy_and_is_killed(target, proto, r, quick_busy):
    job = background(target, proto, ("MULTI",), ("SET", "a", "1"), ("EVAL", "while true do end", 0),
                     ("GET", "a"), ("EXEC",), ("PING",))
    wait_until_reply(r, BUSY_EVAL)
    assert r.call("GET", "a") == BUSY_EVAL
    assert r.call("SCRIPT", "KILL") == ("+", b"OK")
    # the kill error takes the script's slot; the rest of the transaction runs
    assert replies_of(job, proto) == [
        ("+", b"OK"), ("+", b"QUEUED"), ("+", b"QUEUED"), ("+", b"QUEUED"),
        ("*", [("+", b"OK"), KILLED_EVAL, ("$", b"1")]),
        ("+", b"PONG"),
    ]
    assert r.call("GET", "a") == ("$", b"1")


def test_two_long_scripts_in_one_exec(target, proto, r, quick_busy):
    job = background(target, proto, ("MULTI",), ("EVAL", "while true do end", 0), ("INCR", "c"),
                     ("EVAL", "local t = os.clock() while os.clock() - t < 0.3 do end return 7", 0),
                     ("EXEC",))
    wait_until_reply(r, BUSY_EVAL)
    assert r.call("SCRIPT", "KILL") == ("+", b"OK")
    # the second script keeps the server busy in turn, and ends by itself
    assert replies_of(job, proto)[-1] == ("*", [KILLED_EVAL, (":", 1), (":", 7)])
    assert r.call("GET", "c") == ("$", b"1")


def test_a_function_inside_exec_turns_busy_and_is_killed(target, proto, r, quick_busy):
    assert r.call("FUNCTION", "LOAD", "REPLACE", LIBRARY) == ("$", b"hostile")
    try:
        job = background(target, proto, ("MULTI",), ("SET", "a", "1"), ("FCALL", "spin", 0),
                         ("GET", "a"), ("EXEC",), ("PING",))
        wait_until_reply(r, BUSY_FUNCTION)
        assert r.call("SCRIPT", "KILL") == BUSY_FUNCTION
        assert r.call("FUNCTION", "KILL") == ("+", b"OK")
        assert replies_of(job, proto)[-2:] == [
            ("*", [("+", b"OK"), KILLED_FUNCTION, ("$", b"1")]),
            ("+", b"PONG"),
        ]
    finally:
        r.call("FUNCTION", "DELETE", "hostile")


# --- scripts that were quick and turn slow --------------------------------------------------------


def test_a_quick_script_turning_slow_goes_busy_and_can_be_killed(target, proto, r, quick_busy):
    count = "local n = tonumber(ARGV[1]) local x = 0 for i = 1, n do x = x + 1 end return x"
    sha = r.call("SCRIPT", "LOAD", count)[1]
    for _ in range(5):
        assert r.call("EVALSHA", sha, 0, 10) == (":", 10)
    job = background(target, proto, ("EVALSHA", sha, 0, "1e15"))
    wait_until_reply(r, BUSY_EVAL)
    assert r.call("SCRIPT", "KILL") == ("+", b"OK")
    assert replies_of(job, proto) == [KILLED_EVAL]


def test_a_quick_script_turning_slow_after_a_write_is_busy_and_unkillable(target, proto, r, quick_busy):
    sha = r.call("SCRIPT", "LOAD", INCR_THEN_WAIT)[1]
    for expected in (b"1", b"2", b"3", b"4", b"5"):
        assert r.call("EVALSHA", sha, 1, "n", 0) == ("$", expected)
    job = background(target, proto, ("EVALSHA", sha, 1, "n", "0.3"))
    wait_until_reply(r, BUSY_EVAL)
    assert r.call("SCRIPT", "KILL") == UNKILLABLE
    assert r.call("FUNCTION", "KILL") == UNKILLABLE
    assert replies_of(job, proto) == [("$", b"6")]  # it ran once, to its end
    assert r.call("GET", "n") == ("$", b"6")


def test_a_quick_function_turning_slow_after_a_write_is_busy_and_unkillable(target, proto, r, quick_busy):
    library = "#!lua name=napper\nserver.register_function('nap', function(keys, args)\n" \
              "  server.call('incr', keys[1])\n" \
              "  local t = os.clock() while os.clock() - t < tonumber(args[1]) do end\n" \
              "  return server.call('get', keys[1])\nend)"
    assert r.call("FUNCTION", "LOAD", "REPLACE", library) == ("$", b"napper")
    try:
        for expected in (b"1", b"2", b"3", b"4", b"5"):
            assert r.call("FCALL", "nap", 1, "n", 0) == ("$", expected)
        job = background(target, proto, ("FCALL", "nap", 1, "n", "0.3"))
        wait_until_reply(r, BUSY_FUNCTION)
        assert r.call("FUNCTION", "KILL") == UNKILLABLE
        assert r.call("SCRIPT", "KILL") == UNKILLABLE
        assert replies_of(job, proto) == [("$", b"6")]
    finally:
        r.call("FUNCTION", "DELETE", "napper")


# --- replies nested deeper than Lua's stack ------------------------------------------------------


def read_levels(r: RawClient, unit: list[bytes]) -> tuple[int, list[bytes]]:
    """Read a reply that repeats the lines of `unit` level after level, without
    recursing: how many whole levels, and the lines of the first level that differs."""
    levels = 0
    while True:
        seen = []
        for expected in unit:
            seen.append(r._line())
            if seen[-1] != expected:
                return levels, seen
        levels += 1


def test_a_recursive_table_reply_stops_at_the_lua_stack_limit(r):
    r.send("EVAL", "local a = {}; local b = {a}; a[1] = b; return a", 0)
    assert read_levels(r, [b"*1"]) == (7995, [STACK_LIMIT])
    assert r.call("PING") == ("+", b"PONG")


@pytest.mark.parametrize(("depth", "end"), [(7994, b"*0"), (7995, STACK_LIMIT), (20000, STACK_LIMIT)])
def test_a_deep_table_reply(r, depth, end):
    deep = "local t = {} local cur = t for i = 1, tonumber(ARGV[1]) do local n = {} cur[1] = n cur = n end return t"
    r.send("EVAL", deep, 0, depth)
    assert read_levels(r, [b"*1"]) == (min(depth, 7995), [end])
    assert r.call("PING") == ("+", b"PONG")


def test_a_string_below_the_limit_is_refused_too(r):
    deep = "local t = {} local cur = t for i = 1, 7994 do local n = {} cur[1] = n cur = n end cur[1] = 'x' return t"
    r.send("EVAL", deep, 0)
    assert read_levels(r, [b"*1"]) == (7995, [STACK_LIMIT])
    assert r.call("PING") == ("+", b"PONG")


def test_a_recursive_map_reply(r, proto):
    # a map level holds more of Valkey's stack than an array level: fewer levels fit
    r.send("EVAL", "local a = {} a.map = {k = a} return a", 0)
    head = b"%1" if proto == 3 else b"*2"
    assert read_levels(r, [head, b"$1", b"k"]) == (2664, [head, STACK_LIMIT])
    assert r._line() == STACK_LIMIT  # the value of that last pair
    assert r.call("PING") == ("+", b"PONG")


def test_a_recursive_set_reply(r, proto):
    r.send("EVAL", "local a = {} local b = {a} a.set = {[b] = true} return a", 0)
    head = b"~1" if proto == 3 else b"*1"
    assert read_levels(r, [head, b"*1"]) == (1998, [head, STACK_LIMIT])
    assert r.call("PING") == ("+", b"PONG")


def test_a_recursive_table_with_errors_inside(r):
    r.send("EVAL", "local a = {} a[1] = {err='boom'} a[2] = a return a", 0)
    assert read_levels(r, [b"*2", b"-boom"]) == (7994, [b"*2", STACK_LIMIT])
    assert r._line() == STACK_LIMIT
    assert r.call("PING") == ("+", b"PONG")


def test_a_recursive_function_reply(r):
    library = "#!lua name=deep\nserver.register_function('deep', function() " \
              "local a = {}; local b = {a}; a[1] = b; return a end)"
    assert r.call("FUNCTION", "LOAD", "REPLACE", library) == ("$", b"deep")
    try:
        r.send("FCALL", "deep", 0)
        assert read_levels(r, [b"*1"]) == (7995, [STACK_LIMIT])
    finally:
        r.call("FUNCTION", "DELETE", "deep")


# --- redis.call with thousands of arguments ----------------------------------------------------------


@pytest.mark.parametrize("count", [7990, 7999])
def test_redis_call_with_thousands_of_arguments(r, count):
    push = "local a = {} for i = 1, tonumber(ARGV[1]) do a[i] = i end return redis.call('lpush', KEYS[1], unpack(a))"
    assert r.call("EVAL", push, 1, "l", count) == (":", count)
    assert r.call("LINDEX", "l", 0) == ("$", str(count).encode())
    pcall = push.replace("redis.call", "redis.pcall")
    assert r.call("EVAL", pcall, 1, "l", count) == (":", 2 * count)


def test_unpack_past_the_lua_stack(r):
    push = "local a = {} for i = 1, 8000 do a[i] = i end return redis.call('lpush', KEYS[1], unpack(a))"
    assert r.call("EVAL", push, 1, "l") == (
        "-", b"ERR user_script:1: too many results to unpack script: on @user_script:1.")


@pytest.mark.parametrize("bounds", ["-2, 2147483647", "0, 2147483647", "-2147483648", "-2147483648, -2"])
def test_unpack_of_an_int_wide_range_is_refused_and_the_server_lives(r, bounds):
    """tests/unit/scripting.tcl: a range whose size overflows an int (Lua 5.1's own
    unpack crashes on it) is too many results, as Valkey's patched unpack says."""
    assert r.call("EVAL", "return {unpack({1,2,3}, %s)}" % bounds, 0) == (
        "-", b"ERR user_script:1: too many results to unpack script: on @user_script:1.")
    assert r.call("PING") == ("+", b"PONG")


def test_unpack_near_the_int_limits_keeps_its_nils(r):
    script = ("local n = select('#', unpack({1,2,3}, -2147483648, -2147483646)) "
              "local m = select('#', unpack({1,2,3}, -1, 5)) return {n, m, unpack({1,2,3}, 1, -1)}")
    assert r.call("EVAL", script, 0) == ("*", [(":", 3), (":", 7)])


# --- errors a hostile script provokes read as Valkey's -------------------------------------------

_AT = b" script: on @user_script:1."
HOSTILE_ERRORS = [
    ("local function f() return f() + 1 end return f()", b"ERR user_script:1: stack overflow" + _AT),
    ("local t = setmetatable({}, {}) getmetatable(t).__index = t return t.x",
     b"ERR user_script:1: loop in gettable" + _AT),
    ("return redis.pcall(unpack({}, 1, 300))", b"ERR Command arguments must be strings or integers"),
    ("return redis.call('set', 'a', {})", b"ERR Command arguments must be strings or integers" + _AT),
    ("return redis.acl_check_cmd(unpack({}, 1, 300))", b"ERR Command arguments must be strings or integers" + _AT),
    ("return redis.setresp(unpack({}, 1, 300))", b"ERR server.setresp() requires one argument." + _AT),
    ("return redis.sha1hex(unpack({}, 1, 300))", b"ERR wrong number of arguments" + _AT),
    ("return redis.log(redis.LOG_WARNING, unpack({}, 1, 7998))",
     b"ERR user_script:1: too many results to unpack" + _AT),
    ("return cjson.decode(string.rep('[', 2000) .. string.rep(']', 2000))",
     b"ERR user_script:1: Found too many nested data structures (1001) at character 1001" + _AT),
    ("local t = {} t[1] = t return cjson.encode(t)",
     b"ERR user_script:1: Cannot serialise, excessive nesting (1001)" + _AT),
    ("return redis.error_reply(unpack({}, 1, 300))", b"ERR wrong number or type of arguments"),
    ("return math.random(unpack({}, 1, 300))", b"ERR user_script:1: wrong number of arguments" + _AT),
    # the libraries fakekey writes in Lua name the script's line, never their own chunk
    ("return cjson.encode(function() end)",
     b"ERR user_script:1: Cannot serialise function: type not supported" + _AT),
    ("return cjson.decode('{\"a\":')", b"ERR user_script:1: Expected value but found T_END at character 6" + _AT),
    ("return struct.unpack('i', 'ab')",
     b"ERR user_script:1: bad argument #2 to 'unpack' (data string too short)" + _AT),
    ("return bit.tohex('x')", b"ERR user_script:1: bad argument #1 to 'tohex' (number expected, got string)" + _AT),
    ("return cmsgpack.unpack(string.char(0xc1))", b"ERR user_script:1: Bad data format in input." + _AT),
    ("return table.concat({{}})", b"ERR user_script:1: invalid value (table) at index 1 in table for 'concat'" + _AT),
    ("return table.sort({3, 1, 2}, function(a, b) error('cmp') end)", b"ERR user_script:1: cmp" + _AT),
    ("return next({}, 'nokey')", b"ERR invalid key to 'next'" + _AT),
    ("return coroutine.wrap(1)", b"ERR user_script:1: bad argument #1 to 'wrap' (Lua function expected)" + _AT),
]


@pytest.mark.parametrize(("script", "error"), HOSTILE_ERRORS)
def test_hostile_scripts_get_valkeys_errors(r2, script, error):
    assert r2.call("EVAL", script, 0) == ("-", error)


def test_a_deep_msgpack_value_comes_back_whole(r2):
    nested = "return cmsgpack.unpack(string.rep(string.char(0x91), 2000) .. string.char(0x90))"
    r2.send("EVAL", nested, 0)
    assert read_levels(r2, [b"*1"]) == (2000, [b"*0"])
    assert r2.call("PING") == ("+", b"PONG")
