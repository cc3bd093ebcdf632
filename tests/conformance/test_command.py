"""COMMAND, COMMAND COUNT/INFO/DOCS/LIST/GETKEYS/GETKEYSANDFLAGS/HELP."""

import pytest

from fakekey.testing.raw import plain


def range_spec(index, lastkey, flags, keystep=1, limit=0):
    """A key spec as plain values (notes left out: the wording is each server's own)."""
    return {
        b"flags": flags,
        b"begin_search": {b"type": b"index", b"spec": {b"index": index}},
        b"find_keys": {b"type": b"range",
                       b"spec": {b"lastkey": lastkey, b"keystep": keystep, b"limit": limit}},
    }


# Valkey 9.1's COMMAND INFO, field by field.
EXPECTED_INFO = {
    "get": [b"get", 2, [b"readonly", b"fast"], 1, 1, 1, [b"@read", b"@string", b"@fast"], [],
            [range_spec(1, 0, [b"RO", b"access"])], []],
    "set": [b"set", -3, [b"write", b"denyoom"], 1, 1, 1, [b"@write", b"@string", b"@slow"], [],
            [range_spec(1, 0, [b"RW", b"access", b"update", b"variable_flags"])], []],
    "mget": [b"mget", -2, [b"readonly", b"fast"], 1, -1, 1, [b"@read", b"@string", b"@fast"],
             [b"request_policy:multi_shard"], [range_spec(1, -1, [b"RO", b"access"])], []],
    "client|id": [b"client|id", 2, [b"noscript", b"loading", b"stale", b"allow_busy"], 0, 0, 0,
                  [b"@slow", b"@connection"], [], [], []],
}


def as_map(value):
    """A RESP2 flat array of pairs or a RESP3 map, as a dict (recursively for key specs)."""
    if isinstance(value, dict):
        return {k: as_map(v) for k, v in value.items()}
    if isinstance(value, list) and value and isinstance(value[0], bytes) and len(value) % 2 == 0 \
            and value[0] in (b"flags", b"notes", b"type", b"index", b"lastkey", b"keyword",
                             b"keynumidx", b"begin_search", b"find_keys", b"spec"):
        return {value[i]: as_map(value[i + 1]) for i in range(0, len(value), 2)}
    return value


def without_notes(specs):
    return [{k: v for k, v in as_map(spec).items() if k != b"notes"} for spec in specs]


def info_entry(r, name):
    kind, entries = r.call("COMMAND", "INFO", name)
    assert kind == "*" and len(entries) == 1
    return entries[0]


@pytest.mark.parametrize("name", list(EXPECTED_INFO))
def test_command_info_field_by_field(r, name):
    entry = plain(info_entry(r, name))
    expected = EXPECTED_INFO[name]
    assert entry[:8] == expected[:8]
    assert without_notes(entry[8]) == expected[8]
    assert entry[9] == expected[9]


def test_command_info_wire_types(r, proto):
    kind, fields = info_entry(r, "get")
    set_kind = "~" if proto == 3 else "*"
    assert [f[0] for f in fields] == ["$", ":", set_kind, ":", ":", ":", set_kind, set_kind, set_kind, "*"]
    assert all(k == "+" for k, _ in fields[2][1])  # flags: simple strings
    assert all(k == "+" for k, _ in fields[6][1])  # categories: simple strings
    (spec,) = fields[8][1]
    assert spec[0] == ("%" if proto == 3 else "*")
    mget_tips = info_entry(r, "mget")[1][7]
    assert mget_tips == (set_kind, [("$", b"request_policy:multi_shard")])


def test_command_info_unknown_and_case(r, proto):
    null = ("_", None) if proto == 3 else ("$", None)
    kind, entries = r.call("COMMAND", "INFO", "no-such-command", "GET", "get|x", "client|nope")
    assert kind == "*"
    assert [entries[0], entries[2], entries[3]] == [null, null, null]
    assert plain(entries[1])[0] == b"get"


def test_command_info_of_a_container(r):
    entry = plain(info_entry(r, "client"))
    assert entry[:8] == [b"client", -2, [], 0, 0, 0, [b"@slow"], []]
    subcommands = {sub[0]: sub for sub in entry[9]}
    assert subcommands[b"client|id"] == EXPECTED_INFO["client|id"]
    assert {b"client|list", b"client|kill", b"client|setname"} <= subcommands.keys()
    config = {sub[0]: sub for sub in plain(info_entry(r, "config"))[9]}
    assert config[b"config|get"][:8] == [
        b"config|get", -3, [b"admin", b"noscript", b"loading", b"stale"], 0, 0, 0,
        [b"@admin", b"@slow", b"@dangerous"], []]


def test_command_info_of_server_commands(r):
    expected = {
        "time": [b"time", 1, [b"loading", b"stale", b"fast"], 0, 0, 0, [b"@fast"],
                 [b"nondeterministic_output"]],
        "dbsize": [b"dbsize", 1, [b"readonly", b"fast"], 0, 0, 0,
                   [b"@keyspace", b"@read", b"@fast"],
                   [b"request_policy:all_shards", b"response_policy:agg_sum"]],
        "swapdb": [b"swapdb", 3, [b"write", b"fast"], 0, 0, 0,
                   [b"@keyspace", b"@write", b"@fast", b"@dangerous"], []],
        "lastsave": [b"lastsave", 1, [b"loading", b"stale", b"fast"], 0, 0, 0,
                     [b"@admin", b"@fast", b"@dangerous"], [b"nondeterministic_output"]],
        "client|kill": [b"client|kill", -3, [b"admin", b"noscript", b"loading", b"stale"], 0, 0, 0,
                        [b"@admin", b"@slow", b"@dangerous", b"@connection"], []],
        "command|getkeys": [b"command|getkeys", -3, [b"loading", b"stale"], 0, 0, 0,
                            [b"@slow", b"@connection"], []],
    }
    for name, fields in expected.items():
        assert plain(info_entry(r, name))[:8] == fields, name


def test_command_and_count_agree(r2):
    kind, count = r2.call("COMMAND", "COUNT")
    assert kind == ":" and count > 50
    kind, everything = r2.call("COMMAND")
    assert kind == "*" and len(everything) == count
    names = {entry[1][0][1] for entry in everything}
    assert {b"get", b"client", b"command", b"info"} <= names
    assert len(r2.call("COMMAND", "INFO")[1]) == count
    assert r2.call("COMMAND", "COUNT", "x") == (
        "-", b"ERR wrong number of arguments for 'command|count' command")


def docs_map(r, *names):
    return as_docs(plain(r.call("COMMAND", "DOCS", *names)))


def as_docs(value):
    """COMMAND DOCS as nested dicts in both protocols (RESP2 sends flat arrays)."""
    if isinstance(value, list):
        value = {value[i]: value[i + 1] for i in range(0, len(value), 2)}
    out = {}
    for name, doc in value.items():
        doc = doc if isinstance(doc, dict) else {doc[i]: doc[i + 1] for i in range(0, len(doc), 2)}
        if b"subcommands" in doc:
            doc[b"subcommands"] = as_docs(doc[b"subcommands"])
        out[name] = doc
    return out


def test_command_docs_shape(r, proto):
    kind, _ = r.call("COMMAND", "DOCS", "get")
    assert kind == ("%" if proto == 3 else "*")
    doc = docs_map(r, "get")[b"get"]
    assert list(doc)[:4] == [b"summary", b"since", b"group", b"complexity"]
    assert (doc[b"since"], doc[b"group"], doc[b"complexity"]) == (b"1.0.0", b"string", b"O(1)")
    assert isinstance(doc[b"summary"], bytes) and doc[b"summary"]
    client_id = docs_map(r, "client|id")[b"client|id"]
    assert (client_id[b"since"], client_id[b"group"], client_id[b"complexity"]) == (
        b"5.0.0", b"connection", b"O(1)")
    debug = docs_map(r, "debug")[b"debug"]
    assert (debug[b"group"], debug[b"doc_flags"]) == (b"server", [b"syscmd"])


def test_command_docs_of_a_container_and_unknown(r, proto):
    docs = docs_map(r, "config", "no-such-command")
    assert list(docs) == [b"config"]
    subs = docs[b"config"][b"subcommands"]
    assert {b"config|get", b"config|set", b"config|resetstat"} <= subs.keys()
    assert subs[b"config|get"][b"group"] == b"server"
    assert r.call("COMMAND", "DOCS", "no-such-command") == ("%" if proto == 3 else "*", [])


def test_command_list_filters(r2):
    kind, names = r2.call("COMMAND", "LIST")
    everything = {n for _k, n in names}
    assert {b"get", b"client", b"client|id", b"config|get"} <= everything
    assert plain(r2.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "CLIENT|I*")) >= [b"client|id"]
    matched = set(plain(r2.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "client|i*")))
    assert {b"client|id", b"client|info"} <= matched
    assert all(name.startswith(b"client|i") for name in matched)
    connection = set(plain(r2.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "connection")))
    assert {b"ping", b"client|id", b"command"} <= connection and b"get" not in connection
    assert r2.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch") == ("*", [])
    assert r2.call("COMMAND", "LIST", "FILTERBY", "MODULE", "nosuch") == ("*", [])


@pytest.mark.parametrize("args", [("FOO",), ("FILTERBY",), ("FILTERBY", "PATTERN"),
                                  ("FILTERBY", "FOO", "x"), ("FILTERBY", "PATTERN", "a", "b")])
def test_command_list_syntax_errors(r2, args):
    assert r2.call("COMMAND", "LIST", *args) == ("-", b"ERR syntax error")


def test_getkeys(r2):
    assert r2.call("COMMAND", "GETKEYS", "GET", "a") == ("*", [("$", b"a")])
    assert r2.call("COMMAND", "GETKEYS", "SET", "k", "v", "EX", "10") == ("*", [("$", b"k")])
    assert r2.call("COMMAND", "GETKEYS", "MGET", "a", "b") == ("*", [("$", b"a"), ("$", b"b")])


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("nosuch", "a"), b"ERR Invalid command specified"),
        (("client|id",), b"ERR Invalid command specified"),
        (("client", "nope"), b"ERR Invalid command specified"),
        (("ping",), b"ERR The command has no key arguments"),
        (("client", "id"), b"ERR The command has no key arguments"),
        (("get",), b"ERR Invalid number of arguments specified for command"),
        (("get", "a", "b"), b"ERR Invalid number of arguments specified for command"),
        ((), b"ERR wrong number of arguments for 'command|getkeys' command"),
    ],
)
def test_getkeys_errors(r2, args, error):
    assert r2.call("COMMAND", "GETKEYS", *args) == ("-", error)


def test_getkeysandflags(r, proto):
    set_kind = "~" if proto == 3 else "*"
    assert r.call("COMMAND", "GETKEYSANDFLAGS", "GET", "a") == (
        "*", [("*", [("$", b"a"), (set_kind, [("+", b"RO"), ("+", b"access")])])])
    assert r.call("COMMAND", "GETKEYSANDFLAGS", "MGET", "a", "b") == (
        "*", [("*", [("$", b"a"), (set_kind, [("+", b"RO"), ("+", b"access")])]),
              ("*", [("$", b"b"), (set_kind, [("+", b"RO"), ("+", b"access")])])])


def keys_and_flags(r2, *command):
    """COMMAND GETKEYSANDFLAGS as [(key, flags...)]."""
    kind, found = r2.call("COMMAND", "GETKEYSANDFLAGS", *command)
    assert kind == "*", found
    return [(key[1].decode(), *(flag.decode() for _, flag in flags[1]))
            for (_, (key, flags)) in found]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # SET reads its key only with GET, looked for past the value (setGetKeys)
        (("SET", "k", "v"), [("k", "OW", "update")]),
        (("SET", "k", "v", "NX", "EX", "10"), [("k", "OW", "update")]),
        (("SET", "k", "get"), [("k", "OW", "update")]),
        (("SET", "k", "v", "gEt"), [("k", "RW", "access", "update")]),
        (("SET", "k", "v", "XX", "GET", "IFEQ", "x"), [("k", "RW", "access", "update")]),
        # BITFIELD writes only with SET or INCRBY, or what it cannot parse (bitfieldGetKeys)
        (("BITFIELD", "k"), [("k", "RO", "access")]),
        (("BITFIELD", "k", "GET", "u8", "0", "OVERFLOW", "SAT"), [("k", "RO", "access")]),
        (("BITFIELD", "k", "GET", "u8"), [("k", "RW", "access", "update")]),
        (("BITFIELD", "k", "INCRBY", "u8", "0", "1"), [("k", "RW", "access", "update")]),
        (("BITFIELD_RO", "k", "GET", "u8", "0"), [("k", "RO", "access")]),
        # GEORADIUS's store key is OW update, its source RO access
        (("GEORADIUS", "k", "0", "0", "1", "m", "STOREDIST", "d"),
         [("k", "RO", "access"), ("d", "OW", "update")]),
        # MIGRATE's KEYS: the spec's incomplete flag is not a key's
        (("MIGRATE", "h", "1", "", "0", "10", "KEYS", "a", "b"),
         [("a", "RW", "access", "delete"), ("b", "RW", "access", "delete")]),
    ],
)
def test_getkeysandflags_of_variable_flags(r2, command, expected):
    assert keys_and_flags(r2, *command) == expected


def test_help_and_unknown_subcommand(r2):
    kind, lines = r2.call("COMMAND", "HELP")
    assert kind == "*" and all(k == "+" for k, _ in lines)
    assert lines[0] == ("+", b"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    assert ("+", b"GETKEYSANDFLAGS <full-command>") in lines
    assert r2.call("COMMAND", "FOO") == ("-", b"ERR unknown subcommand 'FOO'. Try COMMAND HELP.")
