"""COMMAND and its subcommands: COUNT, INFO, DOCS, LIST, GETKEYS, GETKEYSANDFLAGS, HELP.
Every answer is derived from the registry's declarations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fakekey.commands.args import SYNTAX, help_lines
from fakekey.commands.doc_data import ArgDoc, CommandDocs
from fakekey.config.settings import glob_nocase
from fakekey.core.client import Client
from fakekey.core.registry import Command, KeySpec, Registry, call_key_flags, command, find_keys
from fakekey.resp.replies import ReplyError, SetReply, Simple

G = "server"
INTROSPECT = "loading stale"

# COMMAND INFO's flag order; flags Valkey keeps to itself are not listed.
FLAG_ORDER = (
    "write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
    "loading", "stale", "skip_monitor", "skip_slowlog", "skip_commandlog", "asking", "fast",
    "no_auth", "no_mandatory_keys", "no_async_loading", "no_multi", "movablekeys", "allow_busy",
)
KEY_FLAG_ORDER = (
    "RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key", "incomplete",
    "variable_flags",
)

COMMAND_HELP = [
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands in this server.",
    "LIST",
    "    Return a list of all commands in this server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full command.",
    "HELP",
    "    Print this help.",
]


def every_command(registry: Registry) -> Iterator[Command]:
    """Each command, followed by its subcommands."""
    for cmd in registry.all():
        yield cmd
        yield from cmd.subcommands.values()


def find_by_name(registry: Registry, name: bytes) -> Command | None:
    """A command by `name` or `parent|sub`, as COMMAND INFO/DOCS take it."""
    parts = name.lower().split(b"|")
    if len(parts) > 2:
        return None
    cmd = registry.lookup(parts[0])
    if cmd is not None and len(parts) == 2:
        return cmd.subcommands.get(parts[1])
    return cmd


def ordered(names: set[str] | frozenset[str] | tuple[str, ...], order: tuple[str, ...]) -> list[str]:
    return [name for name in order if name in names]


# --- COMMAND INFO -------------------------------------------------------------------------


def command_flags(cmd: Command) -> SetReply:
    flags = set(cmd.flags)
    if cmd.movable_keys():
        flags.add("movablekeys")
    return SetReply(Simple(f.encode()) for f in ordered(flags, FLAG_ORDER))


def key_spec(spec: KeySpec) -> dict[bytes, Any]:
    """One key spec in Valkey's map shape: notes, flags, begin_search, find_keys."""
    out: dict[bytes, Any] = {}
    if spec.notes:
        out[b"notes"] = spec.notes.encode()
    out[b"flags"] = SetReply(Simple(f.encode()) for f in ordered(spec.flags, KEY_FLAG_ORDER))
    if spec.unknown:
        out[b"begin_search"] = {b"type": b"unknown", b"spec": {}}
        out[b"find_keys"] = {b"type": b"unknown", b"spec": {}}
        return out
    if spec.keyword:
        begin = {b"type": b"keyword",
                 b"spec": {b"keyword": spec.keyword.encode(), b"startfrom": spec.startfrom}}
    else:
        index = spec.numkeys_at or spec.first
        begin = {b"type": b"index", b"spec": {b"index": index}}
    out[b"begin_search"] = begin
    if spec.numkeys_at:
        find = {b"type": b"keynum",
                b"spec": {b"keynumidx": 0, b"firstkey": 1, b"keystep": spec.step}}
    else:
        lastkey = spec.last if spec.last < 0 or spec.keyword else spec.last - spec.first
        find = {b"type": b"range",
                b"spec": {b"lastkey": lastkey, b"keystep": spec.step, b"limit": spec.limit}}
    out[b"find_keys"] = find
    return out


def command_info(cmd: Command) -> list[Any]:
    """[name, arity, flags, first, last, step, categories, tips, key specs, subcommands]."""
    first, last, step = cmd.legacy_range()
    return [
        cmd.name.encode(),
        cmd.arity,
        command_flags(cmd),
        first,
        last,
        step,
        SetReply(Simple(b"@" + cat.encode()) for cat in cmd.categories),
        SetReply(tip.encode() for tip in cmd.tips),
        SetReply(key_spec(spec) for spec in cmd.keys),
        [command_info(sub) for sub in cmd.subcommands.values()],
    ]



@command("command", -1, INTROSPECT, acl="connection", group=G, since="2.8.13",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the total number of commands",
         summary="Describes every command the server knows.")
def command_(c: Client, argv: list[bytes]) -> Any:
    return [command_info(cmd) for cmd in c.state.registry.all()]


@command("command|count", 2, INTROSPECT, acl="connection", since="2.8.13",
         summary="Counts the commands the server knows.")
def command_count(c: Client, argv: list[bytes]) -> Any:
    return len(c.state.registry.commands)


@command("command|info", -2, INTROSPECT, acl="connection", since="2.8.13",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the number of commands to look up",
         summary="Describes the named commands (null for an unknown name), or all of them.")
def command_info_(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 2:
        return command_(c, argv)
    registry = c.state.registry
    return [None if (cmd := find_by_name(registry, name)) is None else command_info(cmd)
            for name in argv[2:]]


# --- COMMAND DOCS -------------------------------------------------------------------------


def arg_docs(arg: ArgDoc) -> dict[bytes, Any]:
    """One argument in Valkey's map shape; a oneof's or block's own under `arguments`."""
    out: dict[bytes, Any] = {b"name": arg.name.encode(), b"type": arg.type.encode()}
    if arg.display_text is not None:
        out[b"display_text"] = arg.display_text.encode()
    if arg.key_spec_index >= 0:
        out[b"key_spec_index"] = arg.key_spec_index
    for name in ("token", "summary", "since", "deprecated_since"):
        if (value := getattr(arg, name)) is not None:
            out[name.encode()] = value.encode()
    if arg.flags:
        out[b"flags"] = SetReply(Simple(f.encode()) for f in arg.flags)
    if arg.arguments:
        out[b"arguments"] = [arg_docs(sub) for sub in arg.arguments]
    return out


def add_reference_docs(out: dict[bytes, Any], docs: CommandDocs) -> None:
    """deprecated_since, replaced_by, history and arguments (fakekey/data/command-docs.txt)."""
    if docs.deprecated_since:
        out[b"deprecated_since"] = docs.deprecated_since.encode()
    if docs.replaced_by:
        out[b"replaced_by"] = docs.replaced_by.encode()
    if docs.history:
        out[b"history"] = SetReply([v.encode(), text.encode()] for v, text in docs.history)
    if docs.arguments:
        out[b"arguments"] = [arg_docs(arg) for arg in docs.arguments]


def command_docs(cmd: Command) -> dict[bytes, Any]:
    """summary, since, group, complexity, then the module, doc_flags, deprecation, history,
    arguments and subcommands when there are, in Valkey's order."""
    out: dict[bytes, Any] = {
        b"summary": cmd.summary.encode(),
        b"since": cmd.since.encode(),
        b"group": cmd.group.encode(),
    }
    if cmd.complexity:  # a few commands (MONITOR, LOLWUT) document none
        out[b"complexity"] = cmd.complexity.encode()
    if cmd.module:
        out[b"module"] = cmd.module.encode()
    if cmd.doc_flags:
        out[b"doc_flags"] = SetReply(Simple(f.encode()) for f in cmd.doc_flags)
    if cmd.docs is not None:
        add_reference_docs(out, cmd.docs)
    if cmd.subcommands:
        out[b"subcommands"] = {sub.name.encode(): command_docs(sub) for sub in cmd.subcommands.values()}
    return out


@command("command|docs", -2, INTROSPECT, acl="connection", since="7.0.0",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the number of commands to look up",
         summary="Documents the named commands (unknown names are left out), or all of them.")
def command_docs_(c: Client, argv: list[bytes]) -> Any:
    registry = c.state.registry
    if len(argv) == 2:
        return {cmd.name.encode(): command_docs(cmd) for cmd in registry.all()}
    found = ((name, find_by_name(registry, name)) for name in argv[2:])
    return {cmd.name.encode(): command_docs(cmd) for _name, cmd in found if cmd is not None}


# --- COMMAND LIST -------------------------------------------------------------------------


def list_filter(argv: list[bytes]) -> Any:
    """FILTERBY MODULE name | ACLCAT category | PATTERN glob, as a predicate on commands."""
    if len(argv) == 2:
        return lambda cmd: True
    if len(argv) != 5 or argv[2].upper() != b"FILTERBY":
        raise SYNTAX
    kind, value = argv[3].upper(), argv[4].decode("utf-8", "replace")
    if kind == b"MODULE":
        return lambda cmd: cmd.module == value
    if kind == b"ACLCAT":
        return lambda cmd: value.lower() in cmd.categories
    if kind == b"PATTERN":
        return lambda cmd: glob_nocase(value, cmd.name)
    raise SYNTAX


@command("command|list", -2, INTROSPECT, acl="connection", since="7.0.0",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the total number of commands",
         summary="Names every command, or those of a module, an ACL category or a pattern.")
def command_list(c: Client, argv: list[bytes]) -> Any:
    keep = list_filter(argv)
    return [cmd.name.encode() for cmd in every_command(c.state.registry) if keep(cmd)]


# --- COMMAND GETKEYS / GETKEYSANDFLAGS ----------------------------------------------------


def command_for_args(registry: Registry, args: list[bytes]) -> Command:
    """The command a full command line runs (its subcommand when it has one)."""
    cmd = registry.lookup(args[0])
    if cmd is not None and cmd.subcommands and len(args) > 1:
        cmd = cmd.subcommands.get(args[1].lower())
    if cmd is None:
        raise ReplyError("ERR Invalid command specified")
    return cmd


def has_keys(cmd: Command) -> bool:
    return cmd.get_keys is not None or any("not_key" not in s.flags for s in cmd.keys)


def keys_by_specs(cmd: Command, args: list[bytes]) -> list[tuple[int, tuple[str, ...]]] | None:
    """(index, flags) of each key the specs find; None when a spec finds the line invalid."""
    found: list[tuple[int, tuple[str, ...]]] = []
    for spec in cmd.keys:
        positions = find_keys(spec, args)
        if positions is None:
            return None
        if "incomplete" in spec.flags and (positions or not spec.keyword):
            return None  # an incomplete spec that applies: Valkey asks the command's finder
        found.extend((i, call_key_flags(spec, args)) for i in positions)
    return found


def keys_with_flags(cmd: Command, args: list[bytes]) -> list[tuple[int, tuple[str, ...]]]:
    """Valkey's order of preference: the key specs when their flags are reliable, then
    the command's own key finder."""
    reliable = cmd.keys and not any("variable_flags" in s.flags for s in cmd.keys)
    if reliable:
        found = keys_by_specs(cmd, args)
        if found is not None:
            return found
    if cmd.get_keys is not None:
        # the flags of the specs, less those about the spec itself (MIGRATE's incomplete)
        flags = tuple(f for spec in cmd.keys for f in spec.flags
                      if f not in ("variable_flags", "incomplete"))
        # a key one spec also finds takes that spec's flags (GEORADIUS: RO source, OW STORE)
        by_spec = dict(keys_by_specs(cmd, args) or ())
        return [(i, by_spec.get(i, flags)) for i in cmd.get_keys(args)]
    return keys_by_specs(cmd, args) or []


def getkeys(registry: Registry, argv: list[bytes]) -> list[tuple[bytes, tuple[str, ...]]]:
    args = argv[2:]
    cmd = command_for_args(registry, args)
    if not has_keys(cmd):
        raise ReplyError("ERR The command has no key arguments")
    if (cmd.arity > 0 and len(args) != cmd.arity) or len(args) < -cmd.arity:
        raise ReplyError("ERR Invalid number of arguments specified for command")
    found = keys_with_flags(cmd, args)
    if not found and "no_mandatory_keys" not in cmd.flags:
        raise ReplyError("ERR Invalid arguments specified for command")
    return [(args[i], flags) for i, flags in found]


@command("command|getkeys", -3, INTROSPECT, acl="connection", since="2.8.13",
         complexity="O(N) where N is the number of arguments to the command",
         summary="Extracts the key names from a full command line.")
def command_getkeys(c: Client, argv: list[bytes]) -> Any:
    return [key for key, _flags in getkeys(c.state.registry, argv)]


@command("command|getkeysandflags", -3, INTROSPECT, acl="connection", since="7.0.0",
         complexity="O(N) where N is the number of arguments to the command",
         summary="Extracts the key names, with their access flags, from a full command line.")
def command_getkeysandflags(c: Client, argv: list[bytes]) -> Any:
    return [
        [key, SetReply(Simple(f.encode()) for f in ordered(flags, KEY_FLAG_ORDER[:-1]))]
        for key, flags in getkeys(c.state.registry, argv)
    ]


@command("command|help", 2, INTROSPECT, acl="connection", since="5.0.0",
         summary="Describes the COMMAND subcommands.")
def command_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(COMMAND_HELP)
