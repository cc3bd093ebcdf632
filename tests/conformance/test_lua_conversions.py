"""Conversions between Lua values and replies, both ways, in both protocols: what a script
returns (Lua -> reply, to RESP2 and RESP3 callers) and what redis.call gives the script
(reply -> Lua, with redis.setresp(2) and (3)), as Valkey's "Data type conversion" rules
and a real server have them (both targets)."""

import pytest

LLONG_MIN = -(2**63)


def ev(r, script, *args, numkeys=0):
    return r.call("EVAL", script, numkeys, *args)


def null(proto):
    return ("$", None) if proto == 2 else ("_", None)


def bulks(*items):
    return ("*", [("$", item.encode()) for item in items])


# --- Lua -> reply -----------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "value"), [
    ("3.99", 3), ("-3.99", -3), ("0.5", 0), ("-0.5", 0), ("1e15", 10**15),
    ("2^53+1", 2**53), ("2^31", 2**31),
    ("1e30", LLONG_MIN), ("-1e30", LLONG_MIN), ("0/0", LLONG_MIN), ("1/0", LLONG_MIN), ("-1/0", LLONG_MIN),
])
def test_numbers_truncate_to_integers(r, expr, value):
    assert ev(r, f"return {expr}") == (":", value)


@pytest.mark.parametrize(("script", "expected"), [
    # reply fields win over array items, however the table was built (array items stored
    # in the hash part by the order of the assignments included)
    ("local t = {'a', 'b'}; t.err = 'ERR x'; return t", ("-", b"ERR x")),
    ("local t = {}; t[2] = 'b'; t.err = 'ERR y'; t[1] = 'a'; return t", ("-", b"ERR y")),
    ("local t = {}; t[3] = 3; t[2] = 2; t.ok = 'FINE'; t[1] = 1; return t", ("+", b"FINE")),
    ("local t = {}; t[2] = 'b'; t[1] = 'a'; return t", ("*", [("$", b"a"), ("$", b"b")])),
    ("return {'a', 1, 2.5, x = 'ignored'}", ("*", [("$", b"a"), (":", 1), (":", 2)])),
    ("return {'a', {'b'}}", ("*", [("$", b"a"), ("*", [("$", b"b")])])),
    ("return {}", ("*", [])),
])
def test_plain_arrays_and_reply_fields(r, script, expected):
    assert ev(r, script) == expected


def test_booleans_and_nil(r, proto):
    # with the default RESP2 for the script, true is 1 and false is null, for any caller
    assert ev(r, "return true") == (":", 1)
    assert ev(r, "return false") == null(proto)
    assert ev(r, "return nil") == null(proto)
    assert ev(r, "return") == null(proto)
    assert ev(r, "return {true, false, true}") == ("*", [(":", 1), null(proto), (":", 1)])
    # after redis.setresp(3), booleans are booleans (integers for a RESP2 caller)
    if proto == 2:
        assert ev(r, "redis.setresp(3) return true") == (":", 1)
        assert ev(r, "redis.setresp(3) return false") == (":", 0)
    else:
        assert ev(r, "redis.setresp(3) return true") == ("#", True)
        assert ev(r, "redis.setresp(3) return false") == ("#", False)
        assert ev(r, "redis.setresp(3) return {false}") == ("*", [("#", False)])


def test_tables_stop_at_the_first_nil(r, proto):
    assert ev(r, "return {1, 2, nil, 4}") == ("*", [(":", 1), (":", 2)])
    assert ev(r, "return {nil, 1}") == ("*", [])
    assert ev(r, "return {[1] = 1, [3] = 3}") == ("*", [(":", 1)])
    assert ev(r, "return {1, 2, x = 3}") == ("*", [(":", 1), (":", 2)])
    assert ev(r, "return {[2] = 5}") == ("*", [])
    assert ev(r, "return {1, false, 3}") == ("*", [(":", 1), null(proto), (":", 3)])
    assert ev(r, "return {1.5, 2.7}") == ("*", [(":", 1), (":", 2)])
    assert ev(r, "return {1, {2, {3, 'x'}}}") == (
        "*", [(":", 1), ("*", [(":", 2), ("*", [(":", 3), ("$", b"x")])])])
    assert ev(r, "return setmetatable({}, {__index = function() return 'x' end})") == ("*", [])


def test_functions_and_coroutines_are_null(r, proto):
    assert ev(r, "return function() end") == null(proto)
    assert ev(r, "return {function() end}") == ("*", [null(proto)])
    assert ev(r, "return coroutine.create(function() end)") == null(proto)


def test_binary_strings(r):
    assert ev(r, "return 'a\\0b'") == ("$", b"a\x00b")
    assert ev(r, "return ARGV[1]", b"\x00\xff\r\n") == ("$", b"\x00\xff\r\n")


def test_status_and_error_tables(r):
    assert ev(r, "return {ok = 'x'}") == ("+", b"x")
    assert ev(r, "return {'a', ok = 'x'}") == ("+", b"x")
    assert ev(r, "return {err = 'E', ok = 'x'}") == ("-", b"E")
    assert ev(r, "return {ok = 5}") == ("*", [])
    assert ev(r, "return {err = 5}") == ("*", [])
    assert ev(r, "return {err = ''}") == ("-", b"")
    assert ev(r, "return {ok = ''}") == ("+", b"")


@pytest.mark.parametrize(("expr", "text"), [
    ("3.5", b"3.5"), ("3", b"3"), ("0.1", b"0.1"), ("1/3", b"0.3333333333333333"), ("1e300", b"1e+300"),
    ("1e20", b"1e+20"), ("1e18", b"1000000000000000000"), ("5e18", b"5e+18"), ("1e-5", b"0.00001"),
    ("1e-7", b"1e-7"), ("0.00012345", b"1.2345e-4"), ("1/0", b"inf"), ("-1/0", b"-inf"), ("0/0", b"nan"),
    ("-0.0", b"-0"),
])
def test_double_tables(r, proto, expr, text):
    assert ev(r, f"return {{double = {expr}}}") == (("$", text) if proto == 2 else (",", text))


def test_double_needs_a_number(r):
    assert ev(r, "return {double = '3.5'}") == ("*", [])


def test_big_numbers(r, proto):
    digits = b"123456789012345678901234567890"
    assert ev(r, f"return {{big_number = '{digits.decode()}'}}") == (("$", digits) if proto == 2 else ("(", digits))
    assert ev(r, "return {big_number = '1\\r\\n2'}") == (("$", b"1  2") if proto == 2 else ("(", b"1  2"))
    assert ev(r, "return {big_number = 12}") == ("*", [])


def test_verbatim_strings(r, proto):
    cases = [("txt", b"txt:hello"), ("mkd", b"mkd:hello"), ("toolong", b"too:hello"), ("ab", b"ab :hello")]
    for fmt, wire in cases:
        reply = ev(r, f"return {{verbatim_string = {{format = '{fmt}', string = 'hello'}}}}")
        assert reply == (("$", b"hello") if proto == 2 else ("=", wire))
    assert ev(r, "return {verbatim_string = {string = 'hello'}}") == ("*", [])


def test_maps(r, proto):
    if proto == 2:
        assert ev(r, "return {map = {a = 1}}") == ("*", [("$", b"a"), (":", 1)])
        assert ev(r, "return {map = {}}") == ("*", [])
        assert ev(r, "return {map = {[1] = 'x'}}") == ("*", [(":", 1), ("$", b"x")])
        assert ev(r, "return {map = {a = {b = 2}}}") == ("*", [("$", b"a"), ("*", [])])
        assert ev(r, "return {map = {a = false}}") == ("*", [("$", b"a"), ("$", None)])
        assert ev(r, "return {'x', {map = {k = 'v'}}}") == ("*", [("$", b"x"), ("*", [("$", b"k"), ("$", b"v")])])
    else:
        assert ev(r, "return {map = {a = 1}}") == ("%", [(("$", b"a"), (":", 1))])
        assert ev(r, "return {map = {}}") == ("%", [])
        assert ev(r, "return {map = {[1] = 'x'}}") == ("%", [((":", 1), ("$", b"x"))])
        assert ev(r, "return {map = {[true] = 1}}") == ("%", [((":", 1), (":", 1))])
        assert ev(r, "return {map = {a = {b = 2}}}") == ("%", [(("$", b"a"), ("*", []))])
        assert ev(r, "return {map = {a = false}}") == ("%", [(("$", b"a"), ("_", None))])
        assert ev(r, "return {'x', {map = {k = 'v'}}}") == ("*", [("$", b"x"), ("%", [(("$", b"k"), ("$", b"v"))])])
    assert ev(r, "return {map = 1}") == ("*", [])


def test_sets(r, proto):
    kind = "*" if proto == 2 else "~"
    assert ev(r, "return {set = {a = true}}") == (kind, [("$", b"a")])
    assert ev(r, "return {set = {a = false}}") == (kind, [("$", b"a")])
    assert ev(r, "return {set = {}}") == (kind, [])
    assert ev(r, "return {set = {[1] = true}}") == (kind, [(":", 1)])


# --- reply -> Lua -------------------------------------------------------------------------------


def test_resp2_replies_in_lua(r2):
    r2.call("SET", "s", "x")
    r2.call("HSET", "h", "f", "v")
    r2.call("ZADD", "z", "1.5", "m")
    checks = {
        "type(redis.call('incr', 'n'))": "number",
        "type(redis.call('get', 's'))": "string",
        "type(redis.call('get', 'nokey'))": "boolean",
        "tostring(redis.call('get', 'nokey'))": "false",
        "tostring(redis.call('lpop', 'nokey', 2))": "false",
        "type(redis.call('hgetall', 'h'))": "table",
        "table.concat(redis.call('hgetall', 'h'), ',')": "f,v",
        "redis.call('set', 'k', 'v').ok": "OK",
        "redis.call('ping').ok": "PONG",
        "redis.call('zscore', 'z', 'm')": "1.5",
        "type(redis.call('zscore', 'z', 'm'))": "string",
        "table.concat(redis.call('zrange', 'z', 0, -1, 'withscores'), ',')": "m,1.5",
        "string.sub(redis.call('info', 'server'), 1, 8)": "# Server",
        "redis.pcall('incr', 's').err": "ERR value is not an integer or out of range",
        "type(redis.call('smembers', 'nokey'))": "table",
    }
    for expr, expected in checks.items():
        assert ev(r2, f"return {expr}") == ("$", expected.encode()), expr


def test_resp3_replies_in_lua(r2):
    r2.call("SET", "s", "x")
    r2.call("HSET", "h", "f", "v")
    r2.call("SADD", "st", "a")
    r2.call("ZADD", "z", "1.5", "m")
    checks = {
        "type(redis.call('get', 'nokey'))": "nil",
        "type(redis.call('lpop', 'nokey', 2))": "nil",
        "redis.call('hgetall', 'h').map.f": "v",
        "type(next(redis.call('hgetall', 'nokey').map))": "nil",
        "tostring(redis.call('smembers', 'st').set.a)": "true",
        "type(redis.call('zscore', 'z', 'm').double)": "number",
        "tostring(redis.call('zscore', 'z', 'm').double)": "1.5",
        "tostring(redis.call('zrange', 'z', 0, -1, 'withscores')[1][2].double)": "1.5",
        "redis.call('info', 'server').verbatim_string.format": "txt",
        "string.sub(redis.call('info', 'server').verbatim_string.string, 1, 8)": "# Server",
        "redis.call('ping').ok": "PONG",
        "redis.pcall('incr', 's').err": "ERR value is not an integer or out of range",
        "type(redis.call('incr', 'n'))": "number",
    }
    for expr, expected in checks.items():
        assert ev(r2, f"redis.setresp(3) return {expr}") == ("$", expected.encode()), expr
    # back to RESP2 within the same script
    assert ev(r2, "redis.setresp(3) redis.setresp(2) return type(redis.call('get', 'nokey'))") == ("$", b"boolean")


def test_resp3_nulls_inside_arrays(r2):
    r2.call("SET", "a", "1")
    r2.call("SET", "b", "3")
    script = "redis.setresp(3) local r = redis.call('mget', 'a', 'nokey', 'b') return {#r, r[1], tostring(r[2]), r[3]}"
    assert ev(r2, script) == ("*", [(":", 3), ("$", b"1"), ("$", b"nil"), ("$", b"3")])


def test_replies_pass_through_a_script(r, proto):
    r.call("HSET", "h", "f", "v")
    r.call("SADD", "st", "a")
    r.call("ZADD", "z", "1.5", "m")
    assert ev(r, "return redis.call('hgetall', 'h')") == bulks("f", "v")
    assert ev(r, "return redis.call('smembers', 'st')") == bulks("a")
    assert ev(r, "return redis.call('zscore', 'z', 'm')") == ("$", b"1.5")
    if proto == 2:
        assert ev(r, "redis.setresp(3) return redis.call('hgetall', 'h')") == bulks("f", "v")
        assert ev(r, "redis.setresp(3) return redis.call('smembers', 'st')") == bulks("a")
        assert ev(r, "redis.setresp(3) return redis.call('zscore', 'z', 'm')") == ("$", b"1.5")
    else:
        assert ev(r, "redis.setresp(3) return redis.call('hgetall', 'h')") == ("%", [(("$", b"f"), ("$", b"v"))])
        assert ev(r, "redis.setresp(3) return redis.call('smembers', 'st')") == ("~", [("$", b"a")])
        assert ev(r, "redis.setresp(3) return redis.call('zscore', 'z', 'm')") == (",", b"1.5")
        assert ev(r, "redis.setresp(3) return redis.call('zrange', 'z', 0, -1, 'withscores')") == (
            "*", [("*", [("$", b"m"), (",", b"1.5")])])
        assert ev(r, "redis.setresp(3) return redis.call('hgetall', 'nokey')") == ("%", [])
    assert ev(r, "redis.setresp(3) return redis.call('get', 'nokey')") == null(proto)
    assert ev(r, "redis.setresp(3) return redis.call('ping')") == ("+", b"PONG")


@pytest.mark.parametrize(("expr", "stored"), [
    ("1.5", b"1.5"), ("0.1", b"0.1"), ("-0", b"0"), ("1e20", b"1e+20"), ("1e18", b"1000000000000000000"),
    ("2^62", b"4611686018427387904"), ("2^63", b"9223372036854776000"), ("-2^63", b"-9223372036854776000"),
    ("5e18", b"5e+18"), ("123456789012345678", b"123456789012345680"),
    ("12345678901234567890", b"12345678901234567000"), ("1e-5", b"0.00001"), ("1e-7", b"1e-7"),
    ("0.00012345", b"1.2345e-4"), ("1/3", b"0.3333333333333333"), ("1/0", b"inf"), ("-1/0", b"-inf"),
    ("0/0", b"-nan"), ("-(0/0)", b"nan"), ("1e15 + 0.5", b"1000000000000000.5"),
])
def test_numbers_as_command_arguments(r2, expr, stored):
    assert ev(r2, f"redis.call('set', 'k', {expr}) return redis.call('get', 'k')") == ("$", stored)
