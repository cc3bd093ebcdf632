"""The command registry: every command declared once, with the facts Valkey publishes.

Dispatch, arity and unknown-command errors, MULTI queueing, script permissions, ACL
categories and COMMAND INFO/DOCS/LIST/GETKEYS are all derived from these declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Handler = Callable[..., Any]

# Flags that make Valkey add an implicit ACL category (setImplicitACLCategories).
_IMPLICIT_CATEGORIES = (
    ("write", "write"),
    ("readonly", "read"),
    ("admin", "admin"),
    ("pubsub", "pubsub"),
    ("fast", "fast"),
    ("blocking", "blocking"),
)


@dataclass(frozen=True)
class KeySpec:
    """Where a command's keys are: a range (first, last, step) or a count argument.

    `last` follows Valkey's legacy triple: -1 = the last argument, -2 = all but the last.
    With `numkeys_at` set, the count of keys is argument `numkeys_at` and the keys follow it.
    """

    first: int
    last: int = 0
    step: int = 1
    flags: tuple[str, ...] = ()
    numkeys_at: int = 0
    limit: int = 0  # for ranges ending at -1 with a fixed divisor (MSET: every 2nd)


@dataclass
class Command:
    name: str  # lower case, "parent|sub" for subcommands
    arity: int
    flags: frozenset[str]
    handler: Handler | None
    keys: tuple[KeySpec, ...] = ()
    acl: tuple[str, ...] = ()
    group: str = "generic"
    since: str = "1.0.0"
    summary: str = ""
    complexity: str = ""
    doc_flags: tuple[str, ...] = ()
    get_keys: Callable[[list[bytes]], list[int]] | None = None
    subcommands: dict[bytes, Command] = field(default_factory=dict)
    parent: Command | None = None
    calls: int = 0
    usec: int = 0
    failed_calls: int = 0
    rejected_calls: int = 0

    @property
    def full_name(self) -> str:
        return self.name

    @property
    def categories(self) -> list[str]:
        cats = [c for flag, c in _IMPLICIT_CATEGORIES if flag in self.flags]
        cats.extend(a for a in self.acl if a not in cats)
        if "fast" not in self.flags and "slow" not in cats:
            cats.append("slow")
        return cats

    def key_positions(self, argv: list[bytes]) -> list[int]:
        """Indexes into argv of this call's keys (for ACL, GETKEYS, CROSSSLOT)."""
        if self.get_keys is not None:
            return self.get_keys(argv)
        out: list[int] = []
        argc = len(argv)
        for spec in self.keys:
            if spec.numkeys_at:
                if spec.numkeys_at >= argc:
                    continue
                try:
                    count = int(argv[spec.numkeys_at])
                except ValueError:
                    continue
                first = spec.numkeys_at + 1
                out.extend(i for i in range(first, min(first + count, argc)))
                continue
            last = spec.last if spec.last >= 0 else argc + spec.last
            out.extend(range(spec.first, min(last, argc - 1) + 1, spec.step))
        return out

    def legacy_range(self) -> tuple[int, int, int]:
        """(first, last, step) of COMMAND INFO: the union of the range specs."""
        ranges = [s for s in self.keys if not s.numkeys_at]
        if not ranges or self.get_keys is not None and not ranges:
            return (0, 0, 0)
        first = min(s.first for s in ranges)
        lasts = [s.last for s in ranges]
        last = min(lasts) if any(x < 0 for x in lasts) else max(lasts)
        return (first, last, ranges[0].step)


class Registry:
    """All commands by lower-case name; lookup tolerates any case of the name."""

    def __init__(self) -> None:
        self.commands: dict[bytes, Command] = {}
        self._by_exact: dict[bytes, Command | None] = {}

    def add(self, cmd: Command) -> Command:
        if "|" in cmd.name:
            parent_name, sub = cmd.name.split("|", 1)
            parent = self.commands[parent_name.encode()]
            cmd.parent = parent
            cmd.group = parent.group
            parent.subcommands[sub.encode()] = cmd
        else:
            self.commands[cmd.name.encode()] = cmd
        self._by_exact.clear()
        return cmd

    def lookup(self, name: bytes) -> Command | None:
        cmd = self._by_exact.get(name)
        if cmd is None:
            cmd = self.commands.get(name.lower())
            if cmd is not None and len(self._by_exact) < 4096:
                self._by_exact[name] = cmd
        return cmd

    def all(self) -> Iterable[Command]:
        return self.commands.values()


REGISTRY = Registry()


def command(
    name: str,
    arity: int,
    flags: str = "",
    *,
    keys: Iterable[KeySpec] | KeySpec | None = None,
    acl: str = "",
    group: str = "generic",
    since: str = "1.0.0",
    summary: str = "",
    complexity: str = "O(1)",
    doc_flags: str = "",
    get_keys: Callable[[list[bytes]], list[int]] | None = None,
) -> Callable[[Handler], Handler]:
    """Declare a command next to its handler. `name` may be "parent|sub"."""

    if isinstance(keys, KeySpec):
        keys = (keys,)

    def register(fn: Handler) -> Handler:
        REGISTRY.add(
            Command(
                name=name.lower(),
                arity=arity,
                flags=frozenset(flags.split()),
                handler=fn,
                keys=tuple(keys or ()),
                acl=tuple(acl.split()),
                group=group,
                since=since,
                summary=summary,
                complexity=complexity,
                doc_flags=tuple(doc_flags.split()),
                get_keys=get_keys,
            )
        )
        return fn

    return register


def container(
    name: str,
    *,
    group: str,
    since: str,
    summary: str,
    acl: str = "",
    complexity: str = "Depends on subcommand.",
) -> None:
    """Declare a command that only holds subcommands (CLIENT, CONFIG, OBJECT, ...)."""
    REGISTRY.add(
        Command(
            name=name.lower(),
            arity=-2,
            flags=frozenset(),
            handler=None,
            acl=tuple(acl.split()),
            group=group,
            since=since,
            summary=summary,
            complexity=complexity,
        )
    )


def keys_range(first: int, last: int = 0, step: int = 1, flags: str = "") -> KeySpec:
    if last == 0:
        last = first
    return KeySpec(first, last, step, tuple(flags.split()))


def keys_numkeys(at: int, flags: str = "") -> KeySpec:
    return KeySpec(at + 1, 0, 1, tuple(flags.split()), numkeys_at=at)
