"""COMMAND DOCS whole: the argument trees, history and deprecation notes clients read
(redis-py's and others' command tables, redis-cli's hints), as Valkey 9.1.2 shows them.

fakekey keeps them as data (fakekey/data/command-docs.txt, written by
tools/gen_command_docs.py) attached to the registry's commands at load."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from fakekey.commands import doc_data
from fakekey.commands.introspection import every_command
from fakekey.core.registry import REGISTRY
from fakekey.net.registry import load_all
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary

# --- expected replies, in the protocol's wire types -----------------------------------------


def bulk(text: str) -> tuple[str, bytes]:
    return ("$", text.encode())


def wire_map(proto: int, pairs: list[tuple[str, Any]]) -> tuple[str, list[Any]]:
    """A map: RESP3 `%` of (key, value) pairs, RESP2 a flat array."""
    if proto == 3:
        return ("%", [(bulk(k), v) for k, v in pairs])
    return ("*", [item for k, v in pairs for item in (bulk(k), v)])


def wire_set(proto: int, items: list[Any]) -> tuple[str, list[Any]]:
    return ("~" if proto == 3 else "*", items)


def arg(proto: int, name: str, kind: str, *, display: str | None = "", key_spec_index: int | None = None,
        token: str | None = None, since: str | None = None, deprecated_since: str | None = None,
        flags: tuple[str, ...] = (), arguments: list[Any] | None = None) -> tuple[str, list[Any]]:
    """One argument as Valkey's map: name, type, display_text, key_spec_index, token,
    since, deprecated_since, flags, arguments (fields shown only when set)."""
    pairs: list[tuple[str, Any]] = [("name", bulk(name)), ("type", bulk(kind))]
    if display is not None and kind not in ("oneof", "block"):
        pairs.append(("display_text", bulk(display or name)))
    if key_spec_index is not None:
        pairs.append(("key_spec_index", (":", key_spec_index)))
    for field, value in (("token", token), ("since", since), ("deprecated_since", deprecated_since)):
        if value is not None:
            pairs.append((field, bulk(value)))
    if flags:
        pairs.append(("flags", wire_set(proto, [("+", f.encode()) for f in flags])))
    if arguments is not None:
        pairs.append(("arguments", ("*", arguments)))
    return wire_map(proto, pairs)


def fields_of(reply: tuple[str, list[Any]], proto: int) -> list[tuple[bytes, Any]]:
    """A map reply's (key, typed value) pairs, in order, in either protocol."""
    kind, value = reply
    assert kind == ("%" if proto == 3 else "*")
    pairs = value if proto == 3 else list(zip(value[::2], value[1::2], strict=True))
    return [(k[1], v) for k, v in pairs]


def doc_of(r: RawClient, proto: int, name: str) -> dict[bytes, Any]:
    """COMMAND DOCS <name>: the one entry's fields, by name, with their wire types."""
    ((shown, entry),) = fields_of(r.call("COMMAND", "DOCS", name), proto)
    assert shown == name.encode()
    return dict(fields_of(entry, proto))


# --- one command after another, on both targets ---------------------------------------------


def test_flat_arguments_with_tokens(r, proto):
    doc = doc_of(r, proto, "lpos")
    assert doc[b"arguments"] == ("*", [
        arg(proto, "key", "key", key_spec_index=0),
        arg(proto, "element", "string"),
        arg(proto, "rank", "integer", token="RANK", flags=("optional",)),
        arg(proto, "num-matches", "integer", token="COUNT", flags=("optional",)),
        arg(proto, "len", "integer", token="MAXLEN", flags=("optional",)),
    ])


def test_oneof_arguments_history_and_field_order(r, proto):
    doc = doc_of(r, proto, "set")
    assert list(doc) == [b"summary", b"since", b"group", b"complexity", b"history", b"arguments"]
    assert doc[b"history"] == wire_set(proto, [
        ("*", [bulk(version), bulk(text)]) for version, text in (
            ("2.6.12", "Added the `EX`, `PX`, `NX` and `XX` options."),
            ("6.0.0", "Added the `KEEPTTL` option."),
            ("6.2.0", "Added the `GET`, `EXAT` and `PXAT` option."),
            ("7.0.0", "Allowed the `NX` and `GET` options to be used together."),
            ("8.1.0", "Added the `IFEQ` option."))])
    condition = wire_map(proto, [
        ("name", bulk("comparison-value")), ("type", bulk("string")),
        ("display_text", bulk("comparison-value")), ("token", bulk("IFEQ")),
        ("summary", bulk("Sets the key's value only if the current value matches the specified comparison value.")),
        ("since", bulk("8.1.0"))])
    assert doc[b"arguments"] == ("*", [
        arg(proto, "key", "key", key_spec_index=0),
        arg(proto, "value", "string"),
        arg(proto, "condition", "oneof", flags=("optional",), arguments=[
            arg(proto, "nx", "pure-token", token="NX", since="2.6.12"),
            arg(proto, "xx", "pure-token", token="XX", since="2.6.12"),
            condition]),
        arg(proto, "get", "pure-token", token="GET", since="6.2.0", flags=("optional",)),
        arg(proto, "expiration", "oneof", flags=("optional",), arguments=[
            arg(proto, "seconds", "integer", token="EX", since="2.6.12"),
            arg(proto, "milliseconds", "integer", token="PX", since="2.6.12"),
            arg(proto, "unix-time-seconds", "unix-time", token="EXAT", since="6.2.0"),
            arg(proto, "unix-time-milliseconds", "unix-time", token="PXAT", since="6.2.0"),
            arg(proto, "keepttl", "pure-token", token="KEEPTTL", since="6.0.0")]),
    ])


def test_blocks_with_multiple_tokens(r, proto):
    doc = doc_of(r, proto, "sort_ro")
    get = arg(proto, "get-pattern", "pattern", display="pattern", key_spec_index=1, token="GET",
              flags=("optional", "multiple", "multiple_token"))
    assert get in doc[b"arguments"][1]
    limit = arg(proto, "limit", "block", token="LIMIT", flags=("optional",), arguments=[
        arg(proto, "offset", "integer"), arg(proto, "count", "integer")])
    assert limit in doc[b"arguments"][1]


def test_an_empty_token_and_a_deprecated_argument(r, proto):
    migrate = doc_of(r, proto, "migrate")[b"arguments"][1]
    assert migrate[2] == arg(proto, "key-selector", "oneof", arguments=[
        arg(proto, "key", "key", key_spec_index=0), arg(proto, "empty-string", "pure-token", token="")])
    kill = doc_of(r, proto, "client|kill")[b"arguments"][1]
    old_format = fields_of(kill[0], proto)[2][1][1][0]
    assert old_format == arg(proto, "old-format", "string", display="ip:port", deprecated_since="2.8.12")


def test_a_command_without_arguments_has_no_arguments_field(r, proto):
    assert list(doc_of(r, proto, "multi")) == [b"summary", b"since", b"group", b"complexity"]
    assert b"arguments" in doc_of(r, proto, "client|kill")


def test_subcommands_carry_their_arguments(r, proto):
    (_name, entry), = fields_of(r.call("COMMAND", "DOCS", "config"), proto)
    subcommands = dict(fields_of(dict(fields_of(entry, proto))[b"subcommands"], proto))
    get = dict(fields_of(subcommands[b"config|get"], proto))
    assert get[b"arguments"] == ("*", [arg(proto, "parameter", "string", flags=("multiple",))])


@pytest.mark.fakekey_only
def test_module_verbs_show_their_arguments(r, proto):
    doc = doc_of(r, proto, "emq.claim")
    assert list(doc) == [b"summary", b"since", b"group", b"complexity", b"module", b"arguments"]
    assert doc[b"arguments"] == ("*", [
        arg(proto, "numkeys", "integer"),
        arg(proto, "pending", "key", key_spec_index=0),
        arg(proto, "active", "key", key_spec_index=0),
        arg(proto, "lease_ms", "integer"),
    ])
    data = arg(proto, "data", "block", flags=("multiple",),
               arguments=[arg(proto, "field", "string"), arg(proto, "value", "string")])
    assert doc_of(r, proto, "emq.append")[b"arguments"][1][3] == arg(
        proto, "envelope", "block", flags=("multiple",), arguments=[arg(proto, "n", "integer"), data])


# --- the data and the registry ---------------------------------------------------------------

# Commands fakekey declares that get no COMMAND DOCS data: fakekey's own (fakekey.md), and
# the Redis Stack modules' verbs (no server here has them to ask: docs/stack.md).
WITHOUT_DATA = ["fakekey.clock", "fakekey.wakes", "fakekey.fault", "fakekey.cluster"]
STACK_MODULES = ("bf", "ReJSON")


def test_every_declared_command_has_its_data_and_no_data_is_left_over():
    load_all()
    without = [cmd.name for cmd in every_command(REGISTRY)
               if cmd.docs is None and cmd.module not in STACK_MODULES]
    assert without == WITHOUT_DATA, "run tools/gen_command_docs.py after declaring commands"
    assert doc_data.attach(REGISTRY) == []


def test_the_data_format():
    entries = doc_data.parse("a\n\thistory\t1.0.0\tfirst\n\targ\tk\tkey\tkey_spec_index=0\n"
                             "\targ\tc\toneof\tflags=optional,multiple\n\t\targ\tx\tpure-token\ttoken=\n"
                             "\t\targ\ty\tstring\tdisplay_text=y:z\tsummary=a=b\n")
    docs = entries["a"]
    assert docs.history == [("1.0.0", "first")]
    key, choice = docs.arguments
    assert (key.display_text, key.key_spec_index) == ("k", 0)
    assert (choice.display_text, choice.flags) == (None, ("optional", "multiple"))
    assert [(a.name, a.token, a.display_text, a.summary) for a in choice.arguments] == [
        ("x", "", "x", None), ("y", None, "y:z", "a=b")]
    with pytest.raises(ValueError):
        doc_data.parse("a\n\t\targ\tk\tkey\n")
    with pytest.raises(ValueError):
        doc_data.parse("a\n\targ\tk\tkey\tcolour=red\n")


# --- fakekey and Valkey side by side, every command both have -------------------------------

needs_both = pytest.mark.skipif(
    bool(os.environ.get("FAKEKEY_TARGET_URL"))
    or "valkey" not in os.environ.get("FAKEKEY_TARGETS", "valkey")
    or (find_valkey_binary() is None and not os.environ.get("CI")),
    reason="compares fakekey with a valkey-server it starts",
)


@pytest.fixture(scope="module", params=[2, 3], ids=["resp2", "resp3"])
def pair(request: pytest.FixtureRequest, pytestconfig: pytest.Config):
    """A client on fakekey and one on valkey (the conformance fixture's servers)."""
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None
    clients = [conftest._started_target(name).raw(request.param) for name in ("fakekey", "valkey")]
    yield request.param, clients
    for client in clients:
        client.close()


def comparable(entry: tuple[str, list[Any]], proto: int, common: set[bytes] | None = None) -> Any:
    """An entry with fakekey's own summary blanked (ours is in our words) and its
    subcommands as a mapping (Valkey lists them in hash order), limited to `common`."""
    out: list[Any] = []
    for key, value in fields_of(entry, proto):
        if key == b"summary":
            value = ("$", "<ours>")
        elif key == b"subcommands":
            subs = dict(fields_of(value, proto))
            value = (value[0], {name: comparable(doc, proto) for name, doc in subs.items()
                                if common is None or name in common})
        out.append((key, value))
    return (entry[0], out)


def all_docs(client: RawClient, proto: int) -> dict[bytes, Any]:
    return dict(fields_of(client.call("COMMAND", "DOCS"), proto))


def subcommand_names(entry: Any, proto: int) -> set[bytes]:
    for key, value in fields_of(entry, proto):
        if key == b"subcommands":
            return {name for name, _ in fields_of(value, proto)}
    return set()


@needs_both
def test_every_command_documented_as_valkey_does(pair):
    proto, (fakekey, valkey) = pair
    ours, theirs = all_docs(fakekey, proto), all_docs(valkey, proto)
    common = ours.keys() & theirs.keys()
    assert len(common) > 200
    differ = []
    for name in sorted(common):
        subs = subcommand_names(ours[name], proto) & subcommand_names(theirs[name], proto)
        if comparable(ours[name], proto, subs) != comparable(theirs[name], proto, subs):
            differ.append(name)
    assert differ == []


@needs_both
def test_named_lookups_agree_in_request_order(pair):
    proto, (fakekey, valkey) = pair
    names = ("zadd", "client|kill", "nosuch", "GEOSEARCH", "xadd", "config|set")
    replies = [client.call("COMMAND", "DOCS", *names) for client in (fakekey, valkey)]
    shown = [[name for name, _ in fields_of(reply, proto)] for reply in replies]
    assert shown[0] == shown[1] == [b"zadd", b"client|kill", b"geosearch", b"xadd", b"config|set"]
    ours, theirs = (dict(fields_of(reply, proto)) for reply in replies)
    assert all(comparable(ours[n], proto) == comparable(theirs[n], proto) for n in shown[0])
