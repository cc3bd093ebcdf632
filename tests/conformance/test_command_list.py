"""The whole command list against Valkey 9.1.2's, so the gap cannot grow silently.

`fakekey/data/valkey-9.1.2-commands.txt` is Valkey 9.1.2's `COMMAND LIST` (taken once
from a real server; the valkey target checks it still is). fakekey lists exactly those
names, less the exceptions below (each with its reason, also in docs/differences.md),
plus its own commands. Then every command both list is compared field by field:
COMMAND INFO (arity, flags, key positions, ACL categories, tips, key specs, subcommands)
and COMMAND DOCS (all but the summary, which is written in our own words), and every
command's arity and unknown-subcommand errors."""

from __future__ import annotations

import pytest

from fakekey.testing.raw import RawClient, plain
from tools.gen_commands_md import valkey_commands

# Valkey commands fakekey does not have, and why (none today: the cluster commands answer
# as a standalone Valkey's do, refused but for CLUSTER KEYSLOT).
NOT_IN_FAKEKEY: dict[str, str] = {}
NOT_IN_FAKEKEY_PREFIXES: dict[str, str] = {}
# fakekey's own commands: the clock (enable-fakekey-commands) and the emulated trafikey
# module's verbs (enable-emq-module), which Valkey has not.
FAKEKEY_OWN_PREFIXES = ("fakekey.", "emq.")

VALKEY = [cmd.name for cmd in valkey_commands()]


def missing_in_fakekey(name: str) -> bool:
    return name in NOT_IN_FAKEKEY or name.startswith(tuple(NOT_IN_FAKEKEY_PREFIXES))


def command_list(client: RawClient) -> list[str]:
    kind, names = client.call("COMMAND", "LIST")
    assert kind == "*"
    return sorted(name.decode() for _k, name in names)


def test_command_list_is_valkeys_less_the_listed_exceptions(target, r2):
    names = command_list(r2)
    if not target.is_fakekey:
        assert names == sorted(VALKEY)  # the data file is still 9.1.2's list
        return
    own = [n for n in names if n.startswith(FAKEKEY_OWN_PREFIXES)]
    assert "fakekey.clock" in own
    assert sorted(set(names) - set(own)) == sorted(n for n in VALKEY if not missing_in_fakekey(n))


def test_every_exception_is_a_valkey_command():
    listed = set(VALKEY)
    assert set(NOT_IN_FAKEKEY) <= listed
    assert all(any(n.startswith(p) for n in listed) for p in NOT_IN_FAKEKEY_PREFIXES)


@pytest.mark.parametrize("command", [
    ("CLUSTER", "INFO"), ("CLUSTER", "HELP"), ("CLUSTER", "SLOTS"), ("CLUSTER", "SHARDS"),
    ("CLUSTER", "NODES"), ("CLUSTER", "MYID"), ("CLUSTER", "COUNTKEYSINSLOT", "1"),
    ("CLUSTER", "GETKEYSINSLOT", "1", "1"), ("CLUSTER", "SETSLOT", "1", "NODE", "x"),
    ("CLUSTERSCAN", "0"), ("ASKING",),
])
def test_cluster_commands_without_cluster_support(r, command):
    assert r.call(*command) == ("-", b"ERR This instance has cluster support disabled")


@pytest.mark.parametrize(("key", "slot"), [("foo", 12182), ("a{b}c", 3300), ("{}x", 10595),
                                           ("", 0), ("{user1000}.following", 3443)])
def test_cluster_keyslot_answers_without_cluster_support(r, key, slot):
    assert r.call("CLUSTER", "KEYSLOT", key) == (":", slot)


@pytest.fixture(scope="module")
def plain_fakekey(both):
    """fakekey with its own commands and its module off, beside the shared valkey."""
    from fakekey.testing.targets import FakekeyTarget

    server = FakekeyTarget("--enable-fakekey-commands", "no", "--enable-emq-module", "no")
    server.start()
    f, v = server.raw(2), both[1].raw(2)
    yield f, v
    f.close()
    v.close()
    server.stop()


PLAIN_PROBES = [
    ("COMMAND", "COUNT"), ("MODULE", "LIST"), ("INFO", "modules"), ("FAKEKEY.CLOCK", "GET"),
    ("COMMAND", "INFO", "fakekey.clock"), ("COMMAND", "DOCS", "fakekey.clock"),
    ("COMMAND", "LIST", "FILTERBY", "PATTERN", "fakekey.*"),
    ("COMMAND", "LIST", "FILTERBY", "MODULE", "trafikey"), ("EMQ.CAPS", "0"),
]


def test_without_its_own_commands_and_module_fakekey_lists_what_valkey_lists(plain_fakekey):
    f, v = plain_fakekey
    assert command_list(f) == command_list(v)
    for probe in PLAIN_PROBES:
        assert f.call(*probe) == v.call(*probe), probe
    dangerous = ("ACL", "CAT", "dangerous")
    assert sorted(plain(f.call(*dangerous))) == sorted(plain(v.call(*dangerous)))
    assert len(plain(f.call("COMMAND"))) == len(plain(v.call("COMMAND")))


def test_command_count_agrees_with_the_lists(r2):
    names = command_list(r2)
    top_level = [n for n in names if "|" not in n]
    assert r2.call("COMMAND", "COUNT") == (":", len(top_level))
    kind, everything = r2.call("COMMAND")
    assert kind == "*" and len(everything) == len(top_level)
    subcommands = sum(len(plain(entry)[9]) for entry in everything)
    assert len(top_level) + subcommands == len(names)


# --- field by field, fakekey beside valkey ---------------------------------------------------


def entries(client: RawClient) -> dict[str, list]:
    out = {}
    for entry in plain(client.call("COMMAND")):
        out[entry[0].decode()] = entry
        for sub in entry[9]:
            out[sub[0].decode()] = sub
    return out


def without_notes(entry: list) -> list:
    """A COMMAND INFO entry without the key specs' notes (each server's own wording), its
    subcommands in name order (Valkey lists them in its hash table's order)."""
    specs = [dict(zip(spec[::2], spec[1::2])) for spec in entry[8]]
    specs = [{k: v for k, v in spec.items() if k != b"notes"} for spec in specs]
    subs = sorted((without_notes(sub) for sub in entry[9]), key=lambda sub: sub[0])
    return [*entry[:8], specs, subs]


def without_summary(doc: list) -> dict:
    """A COMMAND DOCS entry (RESP2 pairs) without its summaries, subcommands by name."""
    fields = dict(zip(doc[::2], doc[1::2]))
    fields.pop(b"summary", None)
    if b"subcommands" in fields:
        subs = fields[b"subcommands"]
        fields[b"subcommands"] = {n: without_summary(d) for n, d in zip(subs[::2], subs[1::2])}
    return fields


def docs_without_summary(client: RawClient, name: str) -> dict:
    return without_summary(plain(client.call("COMMAND", "DOCS", name))[1])


@pytest.fixture(scope="module")
def both_clients(both):
    fakekey, valkey = both
    f, v = fakekey.raw(2), valkey.raw(2)
    yield f, v
    f.close()
    v.close()


@pytest.fixture(scope="module")
def both(pytestconfig):
    from pathlib import Path

    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    if conftest._target_names() != ["fakekey", "valkey"]:
        pytest.skip("compares the fakekey and valkey targets side by side")
    return conftest._started_target("fakekey"), conftest._started_target("valkey")


def test_command_info_of_every_command_is_valkeys(both_clients):
    f, v = both_clients
    ours, theirs = entries(f), entries(v)
    differ = [name for name in theirs if name in ours
              and without_notes(ours[name]) != without_notes(theirs[name])]
    assert differ == []


def test_command_docs_of_every_command_are_valkeys(both_clients):
    f, v = both_clients
    names = [n for n in VALKEY if not missing_in_fakekey(n)]
    differ = [n for n in names if docs_without_summary(f, n) != docs_without_summary(v, n)]
    assert differ == []


def arity_probes(name: str, entry: list) -> list[list[str]]:
    """One argument too few for every command, and for a container an unknown subcommand
    and the container alone."""
    words = name.split("|")
    arity = entry[1]
    need = arity - 1 if arity > 0 else -arity - 1
    probes = []
    if need >= len(words):
        probes.append(words + ["x"] * (need - len(words)))
    if entry[9]:
        probes += [[name, "nosuchsub"], [name]]
    return probes


def test_arity_and_unknown_subcommand_errors_are_valkeys(both_clients):
    f, v = both_clients
    theirs = entries(v)
    differ = []
    for name, entry in theirs.items():
        if missing_in_fakekey(name) or name == "command":  # COMMAND alone runs
            continue
        for argv in arity_probes(name, entry):
            ours, valkeys = f.call(*argv), v.call(*argv)
            if ours != valkeys:
                differ.append((argv, ours, valkeys))
    assert differ == []


def test_hello_is_valkeys_but_for_the_emq_module(both_clients):
    f, v = both_clients
    for proto in (2, 3):
        ours, theirs = plain(f.call("HELLO", proto)), plain(v.call("HELLO", proto))
        if proto == 2:
            ours, theirs = dict(zip(ours[::2], ours[1::2])), dict(zip(theirs[::2], theirs[1::2]))
        ours.pop(b"id"), theirs.pop(b"id")
        modules, valkeys = ours.pop(b"modules"), theirs.pop(b"modules")
        assert ours == theirs
        assert modules[:-1] == valkeys  # then trafikey, the emulated EMQ module
        name = modules[-1][b"name"] if proto == 3 else modules[-1][1]
        assert name == b"trafikey"
    f.call("HELLO", 2)
    v.call("HELLO", 2)


# INFO fields only one side shows, and why (besides the per-command and per-error lines,
# which depend on what each server has run, and the keyspace lines)
INFO_ONLY_FAKEKEY = {"fakekey_version": "fakekey's own version, beside Valkey's"}
INFO_ONLY_VALKEY: dict[str, str] = {}
PER_RUN = ("cmdstat_", "errorstat_", "latency_percentiles_usec_", "db")
# the emulated EMQ module's own section (a loaded module's sections show in `everything`)
MODULE_SECTION = "# emq"


def module_section(client: RawClient) -> list[str]:
    text = client.call("INFO", "emq")[1].decode().removeprefix("txt:")
    return [line if line.startswith("#") else line.split(":", 1)[0] for line in text.split("\r\n") if line]


def info_names(client: RawClient) -> list[str]:
    text = client.call("INFO", "everything")[1].decode()
    return [line if line.startswith("#") else line.split(":", 1)[0]
            for line in text.split("\r\n") if line and not line.startswith(PER_RUN)]


def test_info_everything_has_valkeys_sections_and_fields(both_clients):
    f, v = both_clients
    ours, theirs = info_names(f), info_names(v)
    emq = module_section(f)
    assert emq[0] == MODULE_SECTION and ours[-len(emq):] == emq  # the module's, last
    ours = ours[: -len(emq)]
    assert [n for n in ours if n.startswith("#")] == [n for n in theirs if n.startswith("#")]
    assert [n for n in ours if n not in theirs] == list(INFO_ONLY_FAKEKEY)
    assert [n for n in theirs if n not in ours] == list(INFO_ONLY_VALKEY)
