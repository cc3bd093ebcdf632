"""The emulated `trafikey` module as a whole: what COMMAND, MODULE and HELLO say about its
verbs, a server started without it, and its verbs inside MULTI/EXEC, EVAL and FCALL and in
INFO's command and error statistics."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

Q = "emq:{orders}:"
ROW = Q + "JOB1"
LANES = [Q + "ring", Q + "gpaused", Q + "glimit", Q + "gactive", Q + "wake", Q]  # a lane verb's last keys

# name -> (arity, key count, writes, a well-formed call's arguments past the name)
VERBS: dict[str, tuple[int, int, bool, list[str]]] = {
    "emq.enqueue": (8, 3, True, ["3", ROW, Q + "pending", Q + "schedule", "payload", "0", "0"]),
    "emq.claim": (5, 2, True, ["2", Q + "pending", Q + "active", "1000"]),
    "emq.extend": (6, 2, True, ["2", ROW, Q + "active", "1", "1000"]),
    "emq.complete": (5, 2, True, ["2", ROW, Q + "active", "1"]),
    "emq.fail": (9, 4, True, ["4", ROW, Q + "active", Q + "schedule", Q + "dead", "1", "0", "boom"]),
    "emq.release": (5, 2, True, ["2", ROW, Q + "active", "1"]),
    "emq.promote": (6, 3, True, ["3", Q + "schedule", Q + "pending", Q, "10"]),
    "emq.stalled.check": (8, 4, True, ["4", Q + "active", Q + "pending", Q + "dead", Q, "10", "1"]),
    "emq.reprocess": (5, 3, True, ["3", ROW, Q + "dead", Q + "pending"]),
    "emq.remove": (3, 1, True, ["1", ROW]),
    "emq.pause": (3, 1, True, ["1", Q + "meta"]),
    "emq.resume": (3, 1, True, ["1", Q + "meta"]),
    "emq.stats": (3, 1, False, ["1", Q + "meta"]),
    "emq.caps": (2, 0, False, ["0"]),
    "emq.publish": (-6, 1, True, ["1", Q + "stream", "0", "id", "1", "type", "t", "data", "d"]),
    "emq.append": (-7, 1, True, ["1", Q + "stream", "0", "3", "id", "1", "type", "t", "data", "d"]),
    "emq.failures.incr": (4, 1, True, ["1", Q + "failures:1-0", "1000"]),
    # the lane verbs (spec 7.1), the twins of the lane scripts
    "emq.genqueue": (11, 7, True, ["7", ROW, Q + "lane:g", Q + "ring", Q + "gpaused", Q + "glimit",
                                   Q + "gactive", Q + "wake", "payload", "g"]),
    "emq.gclaim": (6, 3, True, ["3", Q + "ring", Q + "active", Q, "1000"]),
    "emq.gextend": (6, 2, True, ["2", ROW, Q + "active", "1", "1000"]),
    "emq.gcomplete": (12, 9, True, ["9", ROW, Q + "active", Q + "meta", *LANES, "1"]),
    "emq.gfail": (16, 11, True, ["11", ROW, Q + "active", Q + "schedule", Q + "dead", Q + "meta", *LANES,
                                 "1", "0", "boom"]),
    "emq.gpromote": (11, 8, True, ["8", Q + "schedule", Q + "pending", *LANES, "10"]),
    "emq.reap": (-11, 8, True, ["8", Q + "active", Q + "pending", *LANES, "10"]),
    "emq.gsweep": (14, 10, True, ["10", Q + "active", Q + "pending", Q + "dead", Q + "meta", *LANES, "10", "1"]),
    "emq.greprocess": (10, 8, True, ["8", ROW, Q + "dead", *LANES]),
    "emq.gremove": (12, 10, True, ["10", ROW, Q + "schedule", Q + "active", Q + "dead", *LANES]),
    "emq.gpause": (9, 6, True, ["6", *LANES, "g"]),
    "emq.gresume": (9, 6, True, ["6", *LANES, "g"]),
    "emq.glimit": (10, 6, True, ["6", *LANES, "g", "1"]),
    "emq.gmove": (11, 8, True, ["8", ROW, Q + "active", *LANES, "h"]),
    "emq.grepair": (10, 7, True, ["7", Q + "active", *LANES, "g"]),
    # the forward module (spec 7.2-7.4): claims that wait, the doorbell rule, the timer
    "emq.bclaim": (6, 2, True, ["2", Q + "pending", Q + "active", "1000", "1"]),
    "emq.gbclaim": (7, 3, True, ["3", Q + "ring", Q + "active", Q, "1000", "1"]),
    "emq.ring": (4, 1, True, ["1", Q + "meta", "all"]),
    "emq.timer": (-4, 1, True, ["1", Q + "meta", "OFF"]),
}

# The two registration rows the seed quotes, as written there.
SEED_DOCS = {
    "emq.promote": ("Move due scheduled flat jobs to pending, bounded by batch (emq6.8 G8, @promote)",
                    "O(M log N) for M due jobs"),
    "emq.stalled.check": ("Counted stall sweep: recover or dead-letter expired leases; restart expiries "
                          "exempt (emq6.8 G15, @sweep_stalled)", "O(M log N) for M expired leases"),
    "emq.publish": ("Append one envelope to a topic's stream after checking its fields (@publish)",
                    "O(1) amortized; O(N) trim"),
    "emq.append": ("Append a batch of envelopes to a topic's stream, whole or not at all (@append)",
                   "O(M) for M envelopes; O(N) trim"),
    "emq.failures.incr": ("Count a stream entry's failures and set the count's TTL in one turn "
                          "(@failures.incr)", "O(1)"),
}

MODULE_HELP = [
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Print this help.",
]
MODULE_NOT_ALLOWED = (
    'ERR MODULE command not allowed. If the enable-module-command option is set to "local", you can '
    "run it from a local connection, otherwise you need to set this option in the configuration "
    "file, and then restart the server."
)


def b(text: str) -> tuple[str, bytes]:
    return ("$", text.encode())


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


BLOCKING_VERBS = {"emq.bclaim", "emq.gbclaim"}


def flags_of(writes: bool) -> list[bytes]:
    return [b"write", b"module", b"movablekeys"] if writes else [b"readonly", b"module", b"fast", b"movablekeys"]


def keys_of(name: str) -> list[bytes]:
    _, count, _, words = VERBS[name]
    return [w.encode() for w in words[1 : 1 + count]]


def unknown_command(name: str, args: list[str]) -> str:
    """Valkey's unknown-command text: quoted arguments until 128 bytes are shown."""
    shown = ""
    for arg in args:
        if len(shown) >= 128:
            break
        shown += f"'{arg[: 128 - len(shown)]}' "
    return f"ERR unknown command '{name}', with args beginning with: {shown}"


def as_dict(reply: tuple) -> dict:
    """A map reply (RESP3) or a flat field/value array (RESP2) as a dict."""
    value = plain(reply)
    return value if isinstance(value, dict) else dict(zip(value[::2], value[1::2], strict=True))


@pytest.fixture(scope="module")
def bare() -> Iterator[Server]:
    """A server started with enable-emq-module no."""
    with Server(enable_emq_module="no") as srv:
        yield srv


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def rb(request: pytest.FixtureRequest, bare: Server) -> Iterator[RawClient]:
    client = RawClient(bare.host, bare.port)
    client.call("HELLO", request.param)
    yield client
    client.close()


def proto(r: RawClient) -> int:
    return as_dict(r.call("HELLO"))[b"proto"]


# --- COMMAND --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(VERBS))
def test_command_info_of_every_verb(r: RawClient, name: str) -> None:
    arity, _, writes, _ = VERBS[name]
    (info,) = r.call("COMMAND", "INFO", name)[1]
    kind, fields = info
    assert kind == "*"
    name_, arity_, flags, first, last, step, acl, tips, specs, subcommands = fields
    assert name_ == b(name) and arity_ == (":", arity)
    set_type = "~" if proto(r) == 3 else "*"
    blocking = name in BLOCKING_VERBS  # the claims that wait: `blocking`, @blocking
    expected_flags = flags_of(writes)
    if blocking:
        expected_flags.insert(2, b"blocking")
    assert flags[0] == set_type and plain(flags) == expected_flags
    assert (first, last, step) == ((":", 0), (":", 0), (":", 0))
    expected_acl = [b"@write", b"@slow"] if writes else [b"@read", b"@fast"]
    assert acl[0] == set_type and plain(acl) == expected_acl + ([b"@blocking"] if blocking else [])
    assert plain(tips) == [] and plain(subcommands) == []
    key_flags = [b"RW", b"access", b"update"] if writes else [b"RO", b"access"]
    begin = {b"type": b"index", b"spec": {b"index": 1}}
    find = {b"type": b"keynum", b"spec": {b"keynumidx": 0, b"firstkey": 1, b"keystep": 1}}
    assert [nested_dict(spec) for spec in specs[1]] == [
        {b"flags": key_flags, b"begin_search": begin, b"find_keys": find}]


def nested_dict(reply: tuple) -> dict:
    """A key spec (maps in RESP3, flat arrays in RESP2) as nested dicts."""
    spec = as_dict(reply)
    for part in (b"begin_search", b"find_keys"):
        value = spec[part]
        outer = value if isinstance(value, dict) else dict(zip(value[::2], value[1::2], strict=True))
        inner = outer[b"spec"]
        outer[b"spec"] = inner if isinstance(inner, dict) else dict(zip(inner[::2], inner[1::2], strict=True))
        spec[part] = outer
    return spec


@pytest.mark.parametrize("name", list(VERBS))
def test_command_docs_of_every_verb(r: RawClient, name: str) -> None:
    reply = r.call("COMMAND", "DOCS", name)
    assert reply[0] == ("%" if proto(r) == 3 else "*")
    docs = as_dict(reply)[name.encode()]
    if not isinstance(docs, dict):
        docs = dict(zip(docs[::2], docs[1::2], strict=True))
    fields = [b"summary", b"since", b"group", b"complexity", b"module", b"arguments"]
    assert list(docs) == fields
    assert (docs[b"since"], docs[b"group"], docs[b"module"]) == (b"0.1.0", b"module", b"trafikey")
    assert docs[b"summary"] and docs[b"complexity"]
    if name in SEED_DOCS:
        assert (docs[b"summary"].decode(), docs[b"complexity"].decode()) == SEED_DOCS[name]


def test_command_list_filters_the_module(r: RawClient) -> None:
    listed = plain(r.call("COMMAND", "LIST", "FILTERBY", "MODULE", "trafikey"))
    assert sorted(listed) == sorted(n.encode() for n in VERBS)
    assert plain(r.call("COMMAND", "LIST", "FILTERBY", "MODULE", "lua")) == []
    assert sorted(plain(r.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "emq.*"))) == sorted(listed)
    emq = {n.encode() for n in VERBS}
    for category, expected in (("write", {n for n, v in VERBS.items() if v[2]}),
                               ("read", {"emq.stats", "emq.caps"}),
                               ("fast", {"emq.stats", "emq.caps"}),
                               ("slow", {n for n, v in VERBS.items() if v[2]})):
        listed = set(plain(r.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", category))) & emq
        assert listed == {n.encode() for n in expected}, category


def test_caps_names_one_capability_per_verb_the_server_lists(r: RawClient) -> None:
    caps = plain(r.call("EMQ.CAPS", 0))
    listed = plain(r.call("COMMAND", "LIST", "FILTERBY", "MODULE", "trafikey"))
    assert sorted(b"emq." + cap for cap in caps) == sorted(set(listed) - {b"emq.caps"})
    assert [b"emq." + cap for cap in caps] == [n.encode() for n in VERBS if n != "emq.caps"]


def test_command_count_counts_the_verbs(r: RawClient, bare: Server) -> None:
    with RawClient(bare.host, bare.port) as other:
        without = plain(other.call("COMMAND", "COUNT"))
    assert plain(r.call("COMMAND", "COUNT")) == without + len(VERBS)
    assert len(plain(r.call("COMMAND"))) == without + len(VERBS)


@pytest.mark.parametrize("name", list(VERBS))
def test_command_getkeys_of_every_verb(r: RawClient, name: str) -> None:
    keys = keys_of(name)
    words = VERBS[name][3]
    if not keys:  # no key to report, and no `no_mandatory_keys` flag
        assert r.call("COMMAND", "GETKEYS", name, *words) == err("ERR Invalid arguments specified for command")
        return
    assert r.call("COMMAND", "GETKEYS", name, *words) == ("*", [("$", k) for k in keys])
    key_flags = [b"RW", b"access", b"update"] if VERBS[name][2] else [b"RO", b"access"]
    assert plain(r.call("COMMAND", "GETKEYSANDFLAGS", name, *words)) == [[k, key_flags] for k in keys]


def test_command_getkeys_with_a_bad_numkeys(r: RawClient) -> None:
    words = VERBS["emq.claim"][3]
    invalid = err("ERR Invalid arguments specified for command")
    assert r.call("COMMAND", "GETKEYS", "emq.claim", "x", *words[1:]) == invalid
    assert r.call("COMMAND", "GETKEYS", "emq.claim", "9", *words[1:]) == invalid


# --- MODULE and HELLO -----------------------------------------------------------------------


def module_entry(r: RawClient, name: str, ver: int) -> tuple:
    pairs = [(b(k), v) for k, v in (("name", b(name)), ("ver", (":", ver)), ("path", b(name)),
                                    ("args", ("*", [])))]
    if proto(r) == 3:
        return ("%", pairs)
    return ("*", [x for pair in pairs for x in pair])


def test_module_list_shows_lua_and_trafikey(r: RawClient) -> None:
    assert r.call("MODULE", "LIST") == ("*", [module_entry(r, "lua", 1), module_entry(r, "trafikey", 100)])


def test_hello_lists_the_modules(r: RawClient) -> None:
    fields = r.call("HELLO")[1]
    name, modules = fields[-1] if proto(r) == 3 else fields[-2:]
    assert name == b("modules")
    assert modules == ("*", [module_entry(r, "lua", 1), module_entry(r, "trafikey", 100)])


def test_module_help_load_and_unload(r: RawClient) -> None:
    assert r.call("MODULE", "HELP") == ("*", [("+", line.encode()) for line in MODULE_HELP])
    for argv in (("LOAD", "/x/trafikey.so"), ("LOADEX", "/x/trafikey.so"), ("UNLOAD", "trafikey")):
        assert r.call("MODULE", *argv) == err(MODULE_NOT_ALLOWED)


def test_module_commands_where_they_are_enabled() -> None:
    with Server(enable_module_command="yes") as srv, RawClient(srv.host, srv.port) as r:
        loading = err("ERR Error loading the extension. Please check the server logs.")
        assert r.call("MODULE", "LOAD", "/x/trafikey.so") == loading
        assert r.call("MODULE", "LOADEX", "/x/trafikey.so", "ARGS", "a") == loading
        assert r.call("MODULE", "UNLOAD", "nope") == err(
            "ERR Error unloading module: no such module with that name")
        # the emulated module cannot be unloaded: it stays, and so do its verbs
        assert r.call("MODULE", "UNLOAD", "trafikey") == err(
            "ERR Error unloading module: operation not possible.")
        assert plain(r.call("EMQ.CAPS", 0))[0] == b"enqueue"


# --- a server without the module ------------------------------------------------------------


@pytest.mark.parametrize("name", list(VERBS))
def test_without_the_module_every_verb_is_unknown(rb: RawClient, name: str) -> None:
    words = VERBS[name][3]
    sent = name.upper()
    assert rb.call(sent, *words) == err(unknown_command(sent, words))
    assert rb.call("COMMAND", "INFO", name) == ("*", [("_", None) if proto(rb) == 3 else ("$", None)])
    assert plain(rb.call("COMMAND", "DOCS", name)) in ({}, [])


def test_without_the_module_caps_answers_valkeys_unknown_command(rb: RawClient) -> None:
    assert rb.call("EMQ.CAPS", "0") == err("ERR unknown command 'EMQ.CAPS', with args beginning with: '0' ")


def test_without_the_module_nothing_lists_it(rb: RawClient) -> None:
    assert rb.call("MODULE", "LIST") == ("*", [module_entry(rb, "lua", 1)])
    assert as_dict(rb.call("HELLO"))[b"modules"] == plain(rb.call("MODULE", "LIST"))
    assert plain(rb.call("COMMAND", "LIST", "FILTERBY", "MODULE", "trafikey")) == []
    assert plain(rb.call("COMMAND", "LIST", "FILTERBY", "PATTERN", "emq*")) == []
    assert not [c for c in plain(rb.call("COMMAND")) if c[0].startswith(b"emq.")]
    assert rb.call("COMMAND", "GETKEYS", *["emq.claim", *VERBS["emq.claim"][3]]) == err(
        "ERR Invalid command specified")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_command_line_switch_turns_the_module_off() -> None:
    port = free_port()
    script = "from fakekey.cli import main; main()"
    proc = subprocess.Popen([sys.executable, "-c", script, "--port", str(port), "--enable-emq-module", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = connect(port, proc)
        assert r.call("EMQ.CAPS", "0") == err("ERR unknown command 'EMQ.CAPS', with args beginning with: '0' ")
        assert r.call("CONFIG", "GET", "enable-emq-module") == ("*", [b("enable-emq-module"), b("no")])
        assert plain(r.call("MODULE", "LIST")) == [[b"name", b"lua", b"ver", 1, b"path", b"lua", b"args", []]]
        assert plain(r.call("COMMAND", "LIST", "FILTERBY", "MODULE", "trafikey")) == []
        r.close()
    finally:
        proc.terminate()
        proc.wait(10)


def connect(port: int, proc: subprocess.Popen) -> RawClient:
    deadline = time.monotonic() + 10
    while True:
        try:
            return RawClient("127.0.0.1", port)
        except OSError:
            assert proc.poll() is None, "fakekey-server exited"
            assert time.monotonic() < deadline, "fakekey-server did not start"
            time.sleep(0.05)


# --- MULTI/EXEC, EVAL, FCALL ----------------------------------------------------------------


def test_verbs_in_multi_exec(r: RawClient, now: int) -> None:
    queued = [
        ("EMQ.ENQUEUE", *VERBS["emq.enqueue"][3][:-3], "hello", 0, 0),
        ("EMQ.CLAIM", *VERBS["emq.claim"][3]),
        ("EMQ.PUBLISH", *VERBS["emq.publish"][3]),
        ("EMQ.FAILURES.INCR", *VERBS["emq.failures.incr"][3]),
        ("EMQ.COMPLETE", 2, ROW, Q + "active", 9),
        ("EMQ.STATS", 1, Q + "meta"),
    ]
    assert r.call("MULTI") == ("+", b"OK")
    for argv in queued:
        assert r.call(*argv) == ("+", b"QUEUED")
    replies = r.call("EXEC")[1]
    assert replies[:5] == [
        (":", 1),
        ("*", [b("JOB1"), b("hello"), (":", 1), (":", 1)]),
        b(f"{now}-0"),
        (":", 1),
        err("EMQFENCE stale fence"),
    ]
    assert replies[5][0] == ("%" if proto(r) == 3 else "*")
    assert as_dict(replies[5]) == {b"pending": 0, b"scheduled": 0, b"active": 1, b"dead": 0,
                                   b"paused": 0, b"completed": 0}


def test_a_verb_refused_at_queueing_aborts_the_transaction(r: RawClient) -> None:
    r.call("MULTI")
    assert r.call("EMQ.PAUSE", 1, Q + "meta") == ("+", b"QUEUED")
    assert r.call("EMQ.CLAIM", 2, Q + "pending") == err("ERR wrong number of arguments for 'emq.claim' command")
    assert r.call("EXEC") == err("EXECABORT Transaction discarded because of previous errors.")
    assert r.call("EXISTS", Q + "meta") == (":", 0)


FLOW = """
local q = KEYS[1]
local added = redis.call('emq.enqueue', 3, q..'JOB1', q..'pending', q..'schedule', ARGV[1], '0', '5')
local claimed = redis.call('emq.claim', 2, q..'pending', q..'active', '1000')
local failed = redis.call('emq.fail', 4, q..'JOB1', q..'active', q..'schedule', q..'dead', claimed[4], '10', 'boom')
local entry = redis.call('emq.publish', 1, q..'stream', '0', 'id', '1', 'type', 't', 'data', ARGV[1])
local stats = redis.call('emq.stats', 1, q..'meta')
return {added, claimed, failed, entry, stats}
"""


def test_verbs_from_eval(r: RawClient, now: int) -> None:
    assert r.call("EVAL", FLOW, 1, Q, "hello") == ("*", [
        (":", 1),
        ("*", [b("JOB1"), b("hello"), (":", 1), (":", 1)]),
        ("+", b"scheduled"),
        b(f"{now}-0"),
        # a script reads replies in RESP2 unless it asks for RESP3: the stats come back flat
        ("*", [x for k in ("pending", "scheduled", "active", "dead", "paused", "completed")
               for x in (b(k), (":", 1 if k == "scheduled" else 0))]),
    ])
    assert r.call("HGET", ROW, "error") == b("boom")


def test_verb_errors_from_eval(r: RawClient) -> None:
    call = "return redis.call('emq.complete', 2, KEYS[1], KEYS[2], '1')"
    pcall = "return redis.pcall('emq.complete', 2, KEYS[1], KEYS[2], '1')"
    assert r.call("EVAL", call, 2, ROW, Q + "active") == err(
        "EMQSTATE job is not active script: on @user_script:1.")
    assert r.call("EVAL", pcall, 2, ROW, Q + "active") == err("EMQSTATE job is not active")
    assert r.call("EVAL", "return redis.call('emq.caps', 0, 1)", 0) == err(
        "ERR Wrong number of args calling command from script script: on @user_script:1.")


def test_a_write_verb_is_refused_from_a_read_only_script(r: RawClient) -> None:
    for name in (n for n, v in VERBS.items() if v[2]):
        args = ", ".join(f"'{w}'" for w in VERBS[name][3])
        script = f"return redis.call('{name}', {args})"
        assert r.call("EVAL_RO", script, 0) == err(
            "ERR Write commands are not allowed from read-only scripts. script: on @user_script:1."), name
    assert r.call("DBSIZE") == (":", 0)
    stats = r.call("EVAL_RO", "return redis.call('emq.stats', 1, KEYS[1])", 1, Q + "meta")
    assert plain(stats)[::2] == [b"pending", b"scheduled", b"active", b"dead", b"paused", b"completed"]
    assert plain(r.call("EVAL_RO", "return redis.call('emq.caps', 0)", 0))[15] == b"failures.incr"


LIBRARY = """#!lua name=emqlib
redis.register_function('publish', function(keys, args)
  return redis.call('emq.publish', 1, keys[1], '0', 'id', args[1], 'type', 't', 'data', 'd')
end)
redis.register_function{function_name='publish_ro', flags={'no-writes'}, callback=function(keys, args)
  return redis.call('emq.publish', 1, keys[1], '0', 'id', args[1], 'type', 't', 'data', 'd')
end}
redis.register_function{function_name='stats_ro', flags={'no-writes'}, callback=function(keys, args)
  return redis.call('emq.stats', 1, keys[1])
end}
"""


@pytest.fixture
def emqlib(r: RawClient) -> Iterator[None]:
    assert r.call("FUNCTION", "LOAD", "REPLACE", LIBRARY) == b("emqlib")
    yield
    r.call("FUNCTION", "DELETE", "emqlib")


def test_verbs_from_fcall(r: RawClient, emqlib: None, now: int) -> None:
    assert r.call("FCALL", "publish", 1, Q + "stream", "e1") == b(f"{now}-0")
    refused = err("ERR Write commands are not allowed from read-only scripts. script: on @user_function:6.")
    assert r.call("FCALL", "publish_ro", 1, Q + "stream", "e2") == refused
    assert r.call("FCALL_RO", "publish_ro", 1, Q + "stream", "e2") == refused
    assert r.call("XLEN", Q + "stream") == (":", 1)
    assert plain(r.call("FCALL_RO", "stats_ro", 1, Q + "meta"))[:2] == [b"pending", 0]


# --- INFO -----------------------------------------------------------------------------------


def commandstat(r: RawClient, name: str) -> dict[str, int] | None:
    text = r.call("INFO", "commandstats")[1].decode()
    match = re.search(rf"^cmdstat_{re.escape(name)}:(.*)$", text, re.M)
    if match is None:
        return None
    fields = dict(pair.split("=") for pair in match.group(1).strip().split(","))
    return {k: int(fields[k]) for k in ("calls", "rejected_calls", "failed_calls")}


def errorstats(r: RawClient) -> dict[str, int]:
    text = r.call("INFO", "errorstats")[1].decode()
    return {k: int(v) for k, v in re.findall(r"^errorstat_(\S+):count=(\d+)", text, re.M)}


def test_info_counts_verb_calls_and_errors(r: RawClient) -> None:
    r.call("CONFIG", "RESETSTAT")
    r.call("EMQ.CAPS", 0)
    r.call("EVAL", "return redis.call('emq.caps', 0)", 0)
    r.call("EMQ.PUBLISH", *VERBS["emq.publish"][3])
    r.call("EMQ.PUBLISH", 1, Q + "stream", 0, "id", "1", "nope", "x")
    r.call("EMQ.PUBLISH", 1, Q + "stream", 0, "id", "1", "type", "x")
    r.call("EMQ.CLAIM", 2, Q + "pending")
    r.call("EMQ.CLAIM", 2, Q + "pending", Q + "other", 1)
    assert commandstat(r, "emq.caps") == {"calls": 2, "rejected_calls": 0, "failed_calls": 0}
    assert commandstat(r, "emq.publish") == {"calls": 3, "rejected_calls": 0, "failed_calls": 2}
    assert commandstat(r, "emq.claim") == {"calls": 1, "rejected_calls": 1, "failed_calls": 1}
    assert commandstat(r, "emq.stats") is None
    assert errorstats(r) == {"EMQENVELOPE": 2, "ERR": 1, "EMQLAYOUT": 1}
