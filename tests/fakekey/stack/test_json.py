"""RedisJSON's JSON.* verbs on fakekey with enable-stack-modules: both path syntaxes
(legacy `.a.b` answering one value, JSONPath `$...` answering one entry per match),
the JSONPath engine (slices, wildcards, `..`, filters), RedisJSON 2.x's replies and error
texts in RESP2 and RESP3, key-space events, TTLs, WRONGTYPE both ways. Real Valkey has
no such module: these run on fakekey only, through a raw client (exact wire types)."""

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fakekey import Server
from fakekey.modules.stack.json_path import PathError, compile_path
from fakekey.modules.stack.json_text import JsonError, format_float, parse
from fakekey.testing.raw import RawClient, plain


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def c(server: Server, request: pytest.FixtureRequest) -> Iterator[RawClient]:
    with RawClient(server.host, server.port) as client:
        client.call("FLUSHALL")
        if request.param == 3:
            client.call("HELLO", "3")
        yield client


@pytest.fixture
def c2(server: Server) -> Iterator[RawClient]:
    with RawClient(server.host, server.port) as client:
        client.call("FLUSHALL")
        yield client


def resp3(c: RawClient) -> bool:
    return c.call("CLIENT", "INFO")[1].find(b"resp=3") >= 0


def value(c: RawClient, *args: Any) -> Any:
    return plain(c.call(*args))


def doc(c: RawClient, key: str = "doc") -> Any:
    return json.loads(c.call("JSON.GET", key, "$")[1])[0]


def error(c: RawClient, *args: Any) -> str:
    kind, text = c.call(*args)
    assert kind == "-", (args, text)
    return str(text.decode())


NULL = ("_", None)
NO_KEY = "ERR could not perform this operation on a key that doesn't exist"
NEW_AT_ROOT = "ERR new objects must be created at the root"
WRONG_PATH_TYPE = "WRONGTYPE wrong type of path value - "
NULL2 = ("$", None)


def null(c: RawClient) -> tuple[str, None]:
    return NULL if resp3(c) else NULL2


# --- switch, types, events ---------------------------------------------------------------


def test_the_verbs_are_unknown_commands_with_the_setting_off() -> None:
    with Server() as off, RawClient(off.host, off.port) as client:
        for verb in ("JSON.SET", "JSON.GET", "JSON.ARRAPPEND", "JSON.DEL"):
            kind, text = client.call(verb, "k", "$", "1")
            assert kind == "-" and text.startswith(f"ERR unknown command '{verb}'".encode())


def test_type_wrongtype_both_ways_and_arity(c: RawClient) -> None:
    assert c.call("JSON.SET", "doc", "$", '{"a":1}') == ("+", b"OK")
    assert c.call("TYPE", "doc") == ("+", b"ReJSON-RL")
    assert c.call("OBJECT", "ENCODING", "doc") == ("$", b"raw")
    assert error(c, "GET", "doc").startswith("WRONGTYPE Operation against a key")
    assert error(c, "LPUSH", "doc", "x").startswith("WRONGTYPE")
    c.call("SET", "s", "v")
    assert error(c, "JSON.GET", "s") == "Existing key has wrong Redis type"
    assert error(c, "JSON.SET", "s", "$", "1") == "Existing key has wrong Redis type"
    assert error(c, "json.get") == "ERR wrong number of arguments for 'json.get' command"
    assert error(c, "JSON.SET", "k", "$") == "ERR wrong number of arguments for 'JSON.SET' command"


def test_events_ttl_kept_and_copy(server: Server, c2: RawClient) -> None:
    c2.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    try:
        with RawClient(server.host, server.port) as sub:
            sub.call("SUBSCRIBE", "__keyspace@0__:doc")
            c2.call("JSON.SET", "doc", "$", '{"a":[1]}')
            c2.call("EXPIRE", "doc", "100")
            c2.call("JSON.ARRAPPEND", "doc", "$.a", "2")
            c2.call("JSON.DEL", "doc", "$")
            events = [plain(sub.read())[2] for _ in range(4)]
            assert events == [b"json.set", b"expire", b"json.arrappend", b"json.del"]
    finally:
        c2.call("CONFIG", "SET", "notify-keyspace-events", "")
    c2.call("JSON.SET", "doc", "$", '{"a":1}')
    c2.call("EXPIRE", "doc", "100")
    c2.call("JSON.SET", "doc", "$", '{"b":2}')  # a document changes in place: its TTL stays
    assert value(c2, "TTL", "doc") == 100
    assert c2.call("COPY", "doc", "copy") == (":", 1)
    c2.call("JSON.SET", "copy", "$.b", "3")
    assert doc(c2) == {"b": 2} and doc(c2, "copy") == {"b": 3}


# --- JSON.SET and JSON.GET ---------------------------------------------------------------


def test_set_conditions_and_creation(c: RawClient) -> None:
    assert c.call("JSON.SET", "doc", "$", "1", "XX") == null(c)
    assert c.call("JSON.SET", "doc", "$", '{"a":1}', "NX") == ("+", b"OK")
    assert c.call("JSON.SET", "doc", "$", '{"a":1}', "nx") == null(c)
    assert c.call("JSON.SET", "doc", "$.b", "2", "XX") == null(c)
    assert c.call("JSON.SET", "doc", "$.b", "[]", "NX") == ("+", b"OK")
    assert c.call("JSON.SET", "doc", "$.b", "3", "NX") == null(c)
    assert c.call("JSON.SET", "doc", ".c.d", "1") == null(c)  # no parent to add to
    assert c.call("JSON.SET", "doc", "$.b[0]", "1") == ("-", b"ERR array index out of range")
    assert c.call("JSON.SET", "doc", "$..x", "1") == ("-", b"Err wrong static path")
    assert error(c, "JSON.SET", "new", "$.a", "1") == NEW_AT_ROOT
    assert error(c, "JSON.SET", "doc", "$", "1", "NX", "XX") == "ERR syntax error"
    assert error(c, "JSON.SET", "doc", "$", "{a") == "key must be a string at line 1 column 2"
    assert error(c, "JSON.SET", "doc", "$", "") == "EOF while parsing a value at line 1 column 0"
    assert error(c, "JSON.SET", "doc", "$", "[1,]") == "trailing comma at line 1 column 4"
    assert error(c, "JSON.SET", "doc", "$", "1 2") == "trailing characters at line 1 column 3"
    assert error(c, "JSON.SET", "doc", "$", "nul") == "EOF while parsing a value at line 1 column 3"
    assert doc(c) == {"a": 1, "b": []}
    c.call("JSON.SET", "doc", "$..a", "4.2")
    assert c.call("JSON.GET", "doc") == ("$", b'{"a":4.2,"b":[]}')


def test_get_legacy_and_jsonpath_replies(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":1,"nested":{"a":2,"b":[true,null]},"s":"x"}')
    assert c.call("JSON.GET", "doc", "$..a") == ("$", b"[1,2]")
    assert c.call("JSON.GET", "doc", "..a") == ("$", b"1")
    assert c.call("JSON.GET", "doc", "nested.b") == ("$", b"[true,null]")
    assert c.call("JSON.GET", "doc", "$.nope") == ("$", b"[]")
    assert error(c, "JSON.GET", "doc", ".nope") == "ERR Path '$.nope' does not exist"
    assert error(c, "JSON.GET", "doc", ".a", ".nope") == "ERR Path '.nope' does not exist"
    assert json.loads(c.call("JSON.GET", "doc", ".a", "$.s")[1]) == {".a": [1], "$.s": ["x"]}
    assert json.loads(c.call("JSON.GET", "doc", ".a", ".s")[1]) == {".a": 1, ".s": "x"}
    assert c.call("JSON.GET", "missing", "$") == null(c)
    assert c.call("JSON.GET", "doc", "INDENT", "\t", "NEWLINE", "\n", "SPACE", " ", "$.nested") == (
        "$", b'[\n\t{\n\t\t"a": 2,\n\t\t"b": [\n\t\t\ttrue,\n\t\t\tnull\n\t\t]\n\t}\n]')
    assert c.call("JSON.GET", "doc", "NEWLINE", "\n", "$.nested.b[5:]") == ("$", b"[]")
    assert error(c, "JSON.GET", "doc", "INDENT") == "ERR wrong number of arguments for 'JSON.GET' command"
    assert error(c, "JSON.GET", "doc", "$.a[") == (
        "Error occurred on position 4, \"$.a[ <<<<----\", expected one of the following: "
        "['start:end:steps'], '<number>[,<number>,...]', '<string>[,<string>,...]', '*'.")
    assert error(c, "JSON.GET", "doc", "$.a b") == (
        "Error occurred on position 4, \"$.a  ---->>>> b\", expected one of the following: '..', EOI.")


def test_get_format_expand_is_resp3_only(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":[1,2.5,"x",false,null]}')
    if not resp3(c):
        assert error(c, "JSON.GET", "doc", "FORMAT", "EXPAND") == (
            "ERR FORMAT argument is not supported on RESP2")
        return
    assert c.call("JSON.GET", "doc", "FORMAT", "EXPAND", "$.a") == ("*", [("*", [("*", [
        (":", 1), (",", b"2.5"), ("$", b"x"), ("#", False), ("_", None)])])])
    assert error(c, "JSON.GET", "doc", "FORMAT", "STRINGS", "$") == "ERR wrong reply format"
    assert c.call("JSON.GET", "doc", "FORMAT", "STRING", "$.a[0]") == ("$", b"[1]")


def test_numbers_and_strings_are_written_as_serde_json_writes_them(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '[1.0, -0, 1e16, 1.5e16, 0.00001, 1e-6, 123456789012345678901234567890, '
                                    '"\\u00e9\\n\\"\\u0001", 9223372036854775807]')
    assert c.call("JSON.GET", "doc") == (
        "$", '[1.0,-0.0,1e16,1.5e16,0.00001,1e-6,1.2345678901234568e29,"é\\n\\"\\u0001",'
             '9223372036854775807]'.encode())


# --- MGET, MSET, MERGE, DEL ---------------------------------------------------------------


def test_mget_and_mset(c: RawClient) -> None:
    assert c.call("JSON.MSET", "a", "$", '{"x":1,"n":{"x":2}}', "b", "$", '{"x":3}') == ("+", b"OK")
    c.call("SET", "s", "v")
    assert value(c, "JSON.MGET", "a", "b", "s", "missing", "$..x") == [b"[1,2]", b"[3]", None, None]
    assert value(c, "JSON.MGET", "a", "b", ".n.x") == [b"2", None]
    assert c.call("JSON.MSET", "a", "$.y", "5", "b", "$.x", "4") == ("+", b"OK")
    assert doc(c, "a") == {"x": 1, "n": {"x": 2}, "y": 5} and doc(c, "b") == {"x": 4}
    assert error(c, "JSON.MSET", "a", "$", "1", "c", "$.x", "1") == NEW_AT_ROOT
    assert error(c, "JSON.MSET", "a", "$", "1", "b") == (
        "ERR wrong number of arguments for 'JSON.MSET' command")
    assert doc(c, "a") == {"x": 1, "n": {"x": 2}, "y": 5}  # nothing written on an error


def test_merge(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":{"b":1,"c":2,"d":3},"e":[1]}')
    assert c.call("JSON.MERGE", "doc", "$.a", '{"b":null,"f":{"g":1}}') == ("+", b"OK")
    assert c.call("JSON.GET", "doc", "$.a") == ("$", b'[{"d":3,"c":2,"f":{"g":1}}]')  # swap-removed
    assert c.call("JSON.MERGE", "doc", "$.h", "7") == ("+", b"OK")
    assert c.call("JSON.MERGE", "doc", "$", '{"e":null}') == ("+", b"OK")
    assert doc(c) == {"a": {"d": 3, "c": 2, "f": {"g": 1}}, "h": 7}
    assert c.call("JSON.MERGE", "doc", "$.x.y", "1") == null(c)
    assert error(c, "JSON.MERGE", "new", "$.a", "1") == NEW_AT_ROOT


def test_del_removes_the_outermost_match_once(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":{"a":2,"b":3},"b":["a","b"],"nested":{"b":[true,"a","b"]}}')
    assert c.call("JSON.DEL", "doc", "$..a") == (":", 1)
    assert c.call("JSON.GET", "doc") == ("$", b'{"nested":{"b":[true,"a","b"]},"b":["a","b"]}')
    c.call("JSON.SET", "doc", "$", "[[1],[1,2,3]]")
    assert c.call("JSON.DEL", "doc", "$..[0]") == (":", 2)
    assert c.call("JSON.GET", "doc") == ("$", b"[[2,3]]")
    c.call("JSON.SET", "doc", "$", "[1,2,3]")
    assert c.call("JSON.FORGET", "doc", "$[2,0]") == (":", 2)
    assert c.call("JSON.GET", "doc") == ("$", b"[2]")
    assert c.call("JSON.DEL", "doc") == (":", 1)
    assert c.call("EXISTS", "doc") == (":", 0)
    assert c.call("JSON.DEL", "doc", "$.a") == (":", 0)


# --- the path engine ---------------------------------------------------------------------


STORE = {"store": {"book": [
    {"category": "reference", "author": "Nigel Rees", "price": 8.95, "size": [10, 20, 30, 40]},
    {"category": "fiction", "author": "Evelyn Waugh", "price": 12.99, "size": [50, 60, 70, 80]},
    {"category": "fiction", "author": "Herman Melville", "isbn": "0-553", "price": 8.99,
     "size": [5, 10, 20, 30]},
], "bicycle": {"color": "red", "price": 19.95}}}


@pytest.mark.parametrize("path, expected", [
    ("$.store.book[*].author", ["Nigel Rees", "Evelyn Waugh", "Herman Melville"]),
    ("$..price", [8.95, 12.99, 8.99, 19.95]),
    ("$.store.book[-1].author", ["Herman Melville"]),
    ("$.store.book[-9].price", [8.95]),  # clamped to the first
    ("$.store.book[0,2].price", [8.95, 8.99]),
    ("$.store.book[:2].price", [8.95, 12.99]),
    ("$.store.book[1:].price", [12.99, 8.99]),
    ("$.store.book[::2].price", [8.95, 8.99]),
    ("$.store.book[-2:-1].price", [12.99]),
    ("$.store.book[5].price", []),
    ("$.store['bicycle'].color", ["red"]),
    ('$.store.bicycle["color","price"]', ["red", 19.95]),
    ("$.store.*.color", ["red"]),
    ("$.store.book[?(@.price < 10)].author", ["Nigel Rees", "Herman Melville"]),
    ("$.store.book[?(@.price < 10 && @.isbn)].author", ["Herman Melville"]),
    ("$.store.book[?(@.category == 'fiction' || @.price > 100)].price", [12.99, 8.99]),
    ("$.store.book[?(@.author =~ '^E.*h$')].price", [12.99]),
    ("$.store.book[?(@.price > $.store.bicycle.price)]", []),
    ("$.store.book[?(!(@.price < 10))].price", [12.99]),
    ("$.store.book[?(@.price != 8.95)].price", [12.99, 8.99]),
    ("$.store.book[?(@.size[0] >= 10)].size[0]", [10, 50]),
    ("$..book[?(@.missing == null)]", []),
    ("$..size[?(@ > 60)]", [70, 80]),
])
def test_paths_select_as_redisjson(c2: RawClient, path: str, expected: list[Any]) -> None:
    c2.call("JSON.SET", "doc", "$", json.dumps(STORE))
    assert json.loads(c2.call("JSON.GET", "doc", path)[1]) == expected


def test_path_compiler() -> None:
    assert compile_path("$.a[0]").is_static() and not compile_path("$..a").is_static()
    assert compile_path("$ .a [ 1 ]").select({"a": [0, 5]}) == [(5, ("a", 1))]
    for bad in ("$.", "$..", "$.a[01]", "$[1:2:0]", "a", "$[?(@.a >)]"):
        with pytest.raises(PathError, match="^Error occurred on position"):
            compile_path(bad)


def test_text_reader_and_writer() -> None:
    assert [format_float(f) for f in (1.0, 0.1, 1e15, 1e16, 1.25e-5, 1e-7, -2.5e300)] == [
        "1.0", "0.1", "1000000000000000.0", "1e16", "0.0000125", "1e-7", "-2.5e300"]
    assert parse(b'{"a":1,"a":2}') == {"a": 2}
    assert type(parse(b"18446744073709551616")) is float
    assert parse(b'["\\ud83d\\ude00", -0, 1e2]') == ["\U0001F600", -0.0, 100.0]
    for raw, message in ((b"[" * 129, "recursion limit exceeded at line 1 column 129"),
                         (b'"\\ud800"', "lone leading surrogate in hex escape at line 1 column 7"),
                         (b"1e400", "number out of range at line 1 column 5"),
                         (b"NaN", "expected value at line 1 column 1"),
                         (b"01", "invalid number at line 1 column 2"),
                         (b'{"a" 1}', "expected `:` at line 1 column 6")):
        with pytest.raises(JsonError) as err:
            parse(raw)
        assert str(err.value) == message


# --- reading verbs -----------------------------------------------------------------------


def test_type_strlen_objkeys_objlen(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$",
           '{"o":{"x":1,"y":2},"a":[],"s":"héllo","i":42,"n":1.5,"b":false,"z":null}')
    types = [b"object", b"array", b"string", b"integer", b"number", b"boolean", b"null"]
    if resp3(c):
        assert value(c, "JSON.TYPE", "doc", "$.*") == [types]
        assert value(c, "JSON.TYPE", "doc", ".s") == [b"string"]
    else:
        assert value(c, "JSON.TYPE", "doc", "$.*") == types
        assert c.call("JSON.TYPE", "doc") == ("$", b"object")
        assert c.call("JSON.TYPE", "doc", ".nope") == NULL2
    assert value(c, "JSON.STRLEN", "doc", "$.*") == [None, None, 6, None, None, None, None]
    assert c.call("JSON.STRLEN", "doc", ".s") == (":", 6)
    assert error(c, "JSON.STRLEN", "doc", ".o") == WRONG_PATH_TYPE + "expected string but found object"
    assert error(c, "JSON.STRLEN", "missing", "$") == NO_KEY
    assert c.call("JSON.STRLEN", "missing", ".s") == null(c)
    assert value(c, "JSON.OBJKEYS", "doc", "$.o") == [[b"x", b"y"]]
    assert value(c, "JSON.OBJKEYS", "doc", ".o") == [b"x", b"y"]
    assert error(c, "JSON.OBJKEYS", "doc", ".s") == "ERR Path '$.s' does not exist or not an object"
    assert c.call("JSON.OBJLEN", "doc") == (":", 7)
    assert value(c, "JSON.OBJLEN", "doc", "$.*") == [2, None, None, None, None, None, None]
    assert error(c, "JSON.OBJLEN", "doc", ".b") == WRONG_PATH_TYPE + "expected object but found boolean"
    assert c.call("JSON.OBJLEN", "doc", ".nope") == null(c)


def test_arrindex_resp_and_debug(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":[0,1,3.0,3,"3",[3],{"x":3}],"b":"3","c":[]}')
    assert value(c, "JSON.ARRINDEX", "doc", "$.a", "3") == [3]
    assert value(c, "JSON.ARRINDEX", "doc", "$.a", "3.0") == [2]
    assert value(c, "JSON.ARRINDEX", "doc", "$.a", '{"x":3}') == [6]
    assert value(c, "JSON.ARRINDEX", "doc", "$.*", "3", "4") == [-1, None, -1]
    assert value(c, "JSON.ARRINDEX", "doc", "$.a", "1", "-6", "-5") == [1]
    assert c.call("JSON.ARRINDEX", "doc", ".a", '"3"') == (":", 4)
    assert error(c, "JSON.ARRINDEX", "doc", ".b", "3") == WRONG_PATH_TYPE + "expected array but found string"
    assert error(c, "JSON.ARRINDEX", "doc", "$.a", "3", "x") == "Couldn't parse as integer"
    assert error(c, "JSON.ARRINDEX", "nope", "$.a", "3") == "ERR Path '$.a' does not exist"
    c.call("JSON.SET", "doc", "$", '{"a":[1,2.5,"s",true,null,{"k":[]}]}')
    double = (",", b"2.5") if resp3(c) else ("$", b"2.5")
    assert c.call("JSON.RESP", "doc", ".a") == ("*", [
        ("+", b"["), (":", 1), double, ("$", b"s"), ("+", b"true"), null(c),
        ("*", [("+", b"{"), ("$", b"k"), ("*", [("+", b"[")])])])
    assert value(c, "JSON.DEBUG", "MEMORY", "doc", "$.a[0:3]") == [8, 24, 9]
    assert value(c, "JSON.DEBUG", "MEMORY", "missing") == 0
    assert value(c, "JSON.DEBUG", "HELP")[0].startswith(b"MEMORY <key> [path]")
    assert error(c, "JSON.DEBUG", "NOPE") == "ERR unknown subcommand - try `JSON.DEBUG HELP`"


# --- writing verbs -----------------------------------------------------------------------


def test_array_writes(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":["foo"],"n":{"a":["hello",null,"world"]},"m":{"a":31}}')
    assert value(c, "JSON.ARRAPPEND", "doc", "$..a", '"bar"', '"x"') == [3, 5, None]
    assert c.call("JSON.ARRAPPEND", "doc", ".n.a", "1") == (":", 6)
    assert error(c, "JSON.ARRAPPEND", "doc", ".m.a", "1") == "ERR Path '.m.a' does not exist or not an array"
    assert value(c, "JSON.ARRINSERT", "doc", "$.n.a", "-2", '"baz"') == [7]
    assert error(c, "JSON.ARRINSERT", "doc", "$.a", "9", "1") == "ERR index out of bounds"
    assert doc(c)["n"]["a"] == ["hello", None, "world", "bar", "baz", "x", 1]
    assert value(c, "JSON.ARRPOP", "doc", "$..a", "1") == [b'"bar"', b"null", None]
    assert c.call("JSON.ARRPOP", "doc", ".n.a") == ("$", b"1")
    assert value(c, "JSON.ARRTRIM", "doc", "$..a", "1", "-1") == [1, 4, None]
    assert doc(c)["n"]["a"] == ["world", "bar", "baz", "x"]
    assert value(c, "JSON.ARRTRIM", "doc", "$.n.a", "-3", "1") == [1]
    assert value(c, "JSON.ARRLEN", "doc", "$..a") == [1, 1, None]
    assert c.call("JSON.ARRLEN", "doc", ".n.a") == (":", 1)
    assert error(c, "JSON.ARRLEN", "doc", ".m.a") == "ERR Path '.m.a' does not exist or not an array"
    assert c.call("JSON.ARRLEN", "missing", ".a") == null(c)
    c.call("JSON.SET", "doc", "$", "[]")
    assert c.call("JSON.ARRPOP", "doc") == null(c)
    assert value(c, "JSON.ARRTRIM", "doc", "$", "0", "5") == [0]


def test_numbers(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":"b","b":[{"a":2},{"a":5.0},{"a":"c"}]}')
    if resp3(c):
        assert c.call("JSON.NUMINCRBY", "doc", "$..a", "2") == (
            "*", [("_", None), (":", 4), (",", b"7"), ("_", None)])
        assert c.call("JSON.NUMMULTBY", "doc", ".b[0].a", "2") == ("*", [(":", 8)])
        return
    assert c.call("JSON.NUMINCRBY", "doc", "$..a", "2") == ("$", b"[null,4,7.0,null]")
    assert c.call("JSON.NUMINCRBY", "doc", "$..a", "2.5") == ("$", b"[null,6.5,9.5,null]")
    assert c.call("JSON.NUMMULTBY", "doc", ".b[1].a", "2") == ("$", b"19.0")
    assert c.call("JSON.NUMPOWBY", "doc", "$.b[0].a", "2") == ("$", b"[42.25]")
    c.call("JSON.SET", "doc", "$.i", "9223372036854775807")
    assert c.call("JSON.NUMINCRBY", "doc", ".i", "1") == ("$", b"-9223372036854775808")
    assert error(c, "JSON.NUMINCRBY", "doc", ".a", "1") == (
        "ERR Path '$.a' does not exist or does not contains a number")
    assert error(c, "JSON.NUMINCRBY", "doc", "$.i", '"x"') == "bad input number"
    assert error(c, "JSON.NUMMULTBY", "doc", "$.b[0].a", "1e308") == "result is not a number"
    assert error(c, "JSON.NUMINCRBY", "missing", "$", "1") == NO_KEY


def test_strings_clear_toggle(c: RawClient) -> None:
    c.call("JSON.SET", "doc", "$", '{"a":"foo","n":{"a":"hello"},"m":{"a":31}}')
    assert value(c, "JSON.STRAPPEND", "doc", "$..a", '"bar"') == [6, 8, None]
    assert c.call("JSON.STRAPPEND", "doc", ".n.a", '"é"') == (":", 10)
    assert error(c, "JSON.STRAPPEND", "doc", "$.a", "1") == WRONG_PATH_TYPE + "expected string but found 1"
    assert error(c, "JSON.STRAPPEND", "doc", ".m", '"x"') == "ERR Path '$.m' does not exist or not a string"
    c.call("JSON.SET", "doc", "$", '{"o":{"x":1},"a":[1],"i":5,"f":0.0,"s":"x","t":true,"e":[]}')
    assert c.call("JSON.CLEAR", "doc", "$.*") == (":", 3)
    assert doc(c) == {"o": {}, "a": [], "i": 0, "f": 0.0, "s": "x", "t": True, "e": []}
    assert value(c, "JSON.TOGGLE", "doc", "$.*") == [None, None, None, None, None, 0, None]
    assert c.call("JSON.TOGGLE", "doc", ".t") == ("$", b"true")
    assert error(c, "JSON.TOGGLE", "doc", ".s") == "ERR Path '$.s' does not exist or not a bool"
    assert c.call("JSON.CLEAR", "doc") == (":", 1)
    assert doc(c) == {}


def test_dump_restore_carries_redisjson_s_string(c2: RawClient) -> None:
    c2.call("JSON.SET", "doc", "$", '{"a":[1,2.5,"é"],"b":{"c":null}}')
    kind, payload = c2.call("DUMP", "doc")
    text = '{"a":[1,2.5,"é"],"b":{"c":null}}'.encode()
    assert kind == "$" and payload[0] == 7 and bytes([5, len(text)]) + text + b"\x00" in payload
    assert c2.call("RESTORE", "copy", "0", payload) == ("+", b"OK")
    assert c2.call("TYPE", "copy") == ("+", b"ReJSON-RL")
    assert c2.call("JSON.GET", "copy") == ("$", text)


def test_legacy_verbs_answering_null_for_a_path_that_does_not_compile(c2: RawClient) -> None:
    c2.call("JSON.SET", "doc", "$", '{"a":1}')
    assert c2.call("JSON.TYPE", "doc", ".a[") == NULL2
    assert c2.call("JSON.OBJKEYS", "doc", ".a[") == NULL2
    assert error(c2, "JSON.TYPE", "doc", "$.a[").startswith("Error occurred on position 4")


def test_save_and_a_restart(tmp_path: Any) -> None:
    text = json.dumps({"items": [{"id": i, "name": "x" * 30} for i in range(50)]}, separators=(",", ":"))
    with Server(enable_stack_modules="yes", dir=str(tmp_path)) as first, \
            RawClient(first.host, first.port) as client:
        client.call("JSON.SET", "doc", "$", text)
        assert client.call("SAVE") == ("+", b"OK")
    with Server(enable_stack_modules="yes", dir=str(tmp_path)) as again, \
            RawClient(again.host, again.port) as client:
        assert client.call("JSON.GET", "doc") == ("$", text.encode())
        assert client.call("TYPE", "doc") == ("+", b"ReJSON-RL")
