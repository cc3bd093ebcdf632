"""COMMAND DOCS' argument trees, history and deprecation notes, kept as data.

`fakekey/data/command-docs.txt` holds them; `tools/gen_command_docs.py` writes it from a
real valkey-server's `COMMAND DOCS` (and the EMQ verbs' from the EMQ spec). `attach(registry)`
reads it once and hangs each entry on the command the registry declares under that name:
the registry stays the one list of commands. A name it does not declare is skipped; a
declared command with no entry documents no arguments.

The format, one item a line, fields separated by tabs, depth given by leading tabs:

    NAME                                    a command (`parent|sub` for a subcommand)
    <tab>history<tab>VERSION<tab>TEXT       one history entry, in order
    <tab>deprecated_since<tab>VERSION
    <tab>replaced_by<tab>TEXT
    <tab>arg<tab>NAME<tab>TYPE[<tab>FIELD=VALUE ...]
                                            an argument; the arguments of a oneof or a
                                            block follow it, one tab deeper

FIELDs, in this order: display_text (written only when it differs from NAME; a oneof or a
block has none), key_spec_index, token, summary, since, deprecated_since, flags (comma
separated). Lines starting with `#` are comments.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakekey.core.registry import Registry

DATA_FILE = "command-docs.txt"
CONTAINER_TYPES = frozenset({"oneof", "block"})
# the optional fields of an argument and of a command, in the file's (and COMMAND DOCS') order
ARG_FIELDS = ("display_text", "key_spec_index", "token", "summary", "since", "deprecated_since", "flags")
COMMAND_FIELDS = ("history", "deprecated_since", "replaced_by")


@dataclass(slots=True)
class ArgDoc:
    """One argument as COMMAND DOCS describes it (None and -1 = not shown; a token may be
    shown empty: MIGRATE's `""` in place of a key)."""

    name: str
    type: str
    display_text: str | None = None
    key_spec_index: int = -1
    token: str | None = None
    summary: str | None = None
    since: str | None = None
    deprecated_since: str | None = None
    flags: tuple[str, ...] = ()
    arguments: list[ArgDoc] = field(default_factory=list)


@dataclass(slots=True)
class CommandDocs:
    """What COMMAND DOCS shows of a command beyond the registry's own facts."""

    history: list[tuple[str, str]] = field(default_factory=list)
    deprecated_since: str = ""
    replaced_by: str = ""
    arguments: list[ArgDoc] = field(default_factory=list)


def parse_arg(fields: list[str]) -> ArgDoc:
    """`arg NAME TYPE FIELD=VALUE ...` (the leading `arg` already dropped)."""
    name, kind, *rest = fields
    extra = dict(item.split("=", 1) for item in rest)
    flags = extra.pop("flags", None)
    arg = ArgDoc(
        name,
        kind,
        extra.pop("display_text", None if kind in CONTAINER_TYPES else name),
        int(extra.pop("key_spec_index", -1)),
        extra.pop("token", None),
        extra.pop("summary", None),
        extra.pop("since", None),
        extra.pop("deprecated_since", None),
        tuple(flags.split(",")) if flags else (),
    )
    if extra:
        raise ValueError(f"unknown argument fields {sorted(extra)}")
    return arg


def parse(text: str) -> dict[str, CommandDocs]:
    """The file's entries by command name."""
    out: dict[str, CommandDocs] = {}
    docs: CommandDocs | None = None
    # parents[d] is the argument list that an argument at depth d joins
    parents: list[list[ArgDoc]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        stripped = line.lstrip("\t")
        depth = len(line) - len(stripped)
        fields = stripped.split("\t")
        if depth == 0:
            docs = out[stripped] = CommandDocs()
            parents = [docs.arguments]
            continue
        if docs is None or depth > len(parents):
            raise ValueError(f"{DATA_FILE}:{number}: misplaced line")
        tag = fields[0]
        if tag == "arg":
            arg = parse_arg(fields[1:])
            del parents[depth:]
            parents[depth - 1].append(arg)
            parents.append(arg.arguments)
        elif depth == 1 and tag == "history":
            docs.history.append((fields[1], fields[2]))
        elif depth == 1 and tag in ("deprecated_since", "replaced_by"):
            setattr(docs, tag, fields[1])
        else:
            raise ValueError(f"{DATA_FILE}:{number}: unknown line {tag!r}")
    return out


def load() -> dict[str, CommandDocs]:
    # a plain path: importlib.resources costs more than the parse at server start
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", DATA_FILE)
    try:
        with open(path, encoding="utf-8") as data:
            return parse(data.read())
    except FileNotFoundError:  # only while tools/gen_command_docs.py writes it the first time
        return {}


def attach(registry: Registry) -> list[str]:
    """Give each declared command its entry; the names of the entries no command took."""
    entries = load()
    for cmd in registry.all():
        for each in (cmd, *cmd.subcommands.values()):
            each.docs = entries.pop(each.name, None)
    return sorted(entries)
