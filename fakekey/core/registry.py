"""The command registry: every command declared once, with the facts Valkey publishes.

Dispatch, arity and unknown-command errors, MULTI queueing, script permissions, ACL
categories and COMMAND INFO/DOCS/LIST/GETKEYS are all derived from these declarations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.codecs.numbers import try_int
from fakekey.core.dirty import Counted, Dirty

if TYPE_CHECKING:
    from fakekey.commands.doc_data import CommandDocs
    from fakekey.types.value import Settings

Handler = Callable[..., Any]
FAKEKEY_PREFIX = "fakekey."  # fakekey's own commands (FAKEKEY.CLOCK ...), which Valkey has not

# Flags that make Valkey add an implicit ACL category (setImplicitACLCategories).
_IMPLICIT_CATEGORIES = (
    ("write", "write"),
    ("readonly", "read"),
    ("admin", "admin"),
    ("pubsub", "pubsub"),
    ("fast", "fast"),
    ("blocking", "blocking"),
)

# ACL CAT order: COMMAND INFO lists a command's categories in this order.
ACL_CATEGORIES = (
    "keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
    "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
    "dangerous", "connection", "transaction", "scripting",
)
_CATEGORY_RANK = {name: i for i, name in enumerate(ACL_CATEGORIES)}


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
    # A keyword spec (XREAD STREAMS, GEORADIUS STORE): the keys start after `keyword`,
    # searched from argument `startfrom` (negative: backwards from the end); `first` is
    # unused and `last` is relative to the first key (0 = one key, -1 = to the end).
    keyword: str = ""
    startfrom: int = 0
    notes: str = ""  # COMMAND INFO's key spec notes
    # An "unknown" spec (SORT's BY/GET patterns and STORE): COMMAND INFO shows begin_search
    # and find_keys as unknown; `finder(argv)`, when given, finds the keys (Valkey's getkeys
    # function), otherwise the spec finds none.
    unknown: bool = False
    finder: Callable[[list[bytes]], list[int]] | None = None
    # A variable_flags spec's flags for one call (Valkey's getkeys function decides them
    # from the arguments: SET's key is read only with GET).
    flags_for_call: Callable[[list[bytes]], tuple[str, ...]] | None = None


# Write commands whose every key lookup is Valkey's lookupKeyRead (the value they read, or
# their sources: the destination is stored without a lookup): INFO's keyspace_hits counts them
_WRITES_THAT_READ = frozenset((
    "getdel", "getex", "sort", "bitop", "pfmerge", "sunionstore", "sinterstore", "sdiffstore",
    "zunionstore", "zinterstore", "zdiffstore", "zrangestore", "georadius", "georadiusbymember",
    "geosearchstore", "touch", "getset",
))


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
    tips: tuple[str, ...] = ()  # COMMAND INFO's tips (request_policy:..., nondeterministic_output)
    module: str = ""  # the emulated module that declares it ("trafikey"); "" for built-ins
    docs: CommandDocs | None = None  # COMMAND DOCS' arguments and history (doc_data.attach)
    subcommands: dict[bytes, Command] = field(default_factory=dict)
    parent: Command | None = None
    # its place in every server's table of counters (ServerState.command_stats)
    index: int = -1
    # Valkey's PROTECTED flag: the setting (yes, no, local) that allows it (DEBUG, MODULE LOAD)
    protected_by: str = ""
    # its key lookups count in INFO's keyspace_hits/misses: Valkey's lookupKeyRead, which
    # commands without the write flag use (lookupKeyWrite counts nothing)
    counts_lookups: bool = True
    # the flags a script's redis.call tests for every command, read once here: a test of
    # `flags` (a frozenset) costs a set lookup each time
    writes: bool = field(init=False)
    noscript: bool = field(init=False)
    # the handler when it counts by a rule: the server calls its `run` natively
    counted: Counted | None = field(init=False)

    def __post_init__(self) -> None:
        self.writes = "write" in self.flags
        self.noscript = "noscript" in self.flags
        handler = self.handler
        self.counted = handler if isinstance(handler, Counted) else None

    @property
    def full_name(self) -> str:
        return self.name

    @property
    def categories(self) -> list[str]:
        cats = [c for flag, c in _IMPLICIT_CATEGORIES if flag in self.flags]
        if "scripting" in self.acl and "read" in cats:
            cats.remove("read")  # Valkey leaves read-only scripting commands out of @read
        cats.extend(a for a in self.acl if a not in cats)
        if "fast" not in self.flags and "slow" not in cats:
            cats.append("slow")
        return sorted(cats, key=lambda c: _CATEGORY_RANK.get(c, len(_CATEGORY_RANK)))

    def key_positions(self, argv: list[bytes]) -> list[int]:
        """Indexes into argv of this call's keys (for ACL, GETKEYS, CROSSSLOT)."""
        if self.get_keys is not None:
            return self.get_keys(argv)
        out: list[int] = []
        for spec in self.keys:
            out.extend(find_keys(spec, argv) or ())
        return out

    def legacy_range(self) -> tuple[int, int, int]:
        """(first, last, step) of COMMAND INFO, derived from the key specs as Valkey does:
        one plain range spec is taken whole; otherwise consecutive step-1 range specs
        are merged and every other spec makes the command movable."""
        return _legacy_range(self.keys)[0]

    def movable_keys(self) -> bool:
        """Whether COMMAND INFO flags this command `movablekeys`."""
        return "movablekeys" in self.flags or self.get_keys is not None or _legacy_range(self.keys)[1]


def _legacy_range(specs: tuple[KeySpec, ...]) -> tuple[tuple[int, int, int], bool]:
    """((first, last, step), movable) as Valkey's populateCommandLegacyRangeSpec makes them."""
    plain = [s for s in specs if not s.numkeys_at and not s.keyword and not s.unknown]
    if len(specs) == 1 and plain:
        spec = plain[0]
        return (spec.first, spec.last, spec.step), "incomplete" in spec.flags
    movable = len(plain) != len(specs)
    first = last = 0
    for spec in plain:
        if spec.step != 1 or (last and last != spec.first - 1):
            movable = True
            continue
        movable = movable or "incomplete" in spec.flags
        first = min(first, spec.first) if first else spec.first
        # Valkey compares lasts as unsigned: a from-the-end (negative) last wins.
        last = max(last, spec.last, key=lambda x: (x < 0, x))
    if not first:
        return (0, 0, 0), bool(specs)
    return (first, last, 1), movable


def _keyword_begin(spec: KeySpec, argv: list[bytes]) -> int | None:
    """Index of the first key of a keyword spec, or None when the keyword is absent."""
    argc = len(argv)
    word = spec.keyword.encode().lower()
    if spec.startfrom >= 0:
        indexes = range(spec.startfrom, argc)
    else:
        indexes = range(argc + spec.startfrom, 0, -1)
    for i in indexes:
        if argv[i].lower() == word:
            return i + 1
    return None


def find_keys(spec: KeySpec, argv: list[bytes]) -> list[int] | None:
    """The key indexes one spec finds in argv; None when the arguments contradict it (a
    bad numkeys, keys past the end), which COMMAND GETKEYS reports as invalid."""
    argc = len(argv)
    if spec.unknown:
        return spec.finder(argv) if spec.finder is not None else []
    if spec.keyword:
        first = _keyword_begin(spec, argv)
        if first is None:
            return []
        last = spec.last if spec.last < 0 else first + spec.last
    elif spec.numkeys_at:
        if spec.numkeys_at >= argc:
            return None
        count = try_int(argv[spec.numkeys_at])
        if count is None:
            return None
        if count <= 0:
            return [] if count == 0 else None
        first = spec.numkeys_at + 1
        last = first + (count - 1) * spec.step
        return list(range(first, last + 1, spec.step)) if last < argc else None
    else:
        first, last = spec.first, spec.last
    if last < 0:
        if spec.limit > 1:
            last = first + (argc - first) // spec.limit - 1
        else:
            last = argc + last
    if first >= argc or last >= argc or last < first:
        return None
    return list(range(first, last + 1, spec.step))


def call_key_flags(spec: KeySpec, argv: list[bytes]) -> tuple[str, ...]:
    """The flags a spec gives the keys of this call: a variable_flags spec's as resolved
    from the arguments when it has a resolver, otherwise its declared flags."""
    if spec.flags_for_call is not None:
        return spec.flags_for_call(argv)
    return tuple(f for f in spec.flags if f != "variable_flags")


class CommandStats:
    """One server's counters for one command (INFO commandstats, LATENCY HISTOGRAM)."""

    __slots__ = ("calls", "usec", "ns", "failed_calls", "rejected_calls")

    def __init__(self) -> None:
        self.calls = 0
        self.usec = 0  # blocked commands' time answering their timeout or unblock
        self.ns = 0  # time its runs took (ServerState.run_command); INFO shows usec + ns // 1000
        self.failed_calls = 0
        self.rejected_calls = 0

    def reset(self) -> None:
        self.calls = self.usec = self.ns = self.failed_calls = self.rejected_calls = 0


class Registry:
    """All commands by lower-case name, and the modules that declare some of them. Filled
    as the families are imported (fakekey/net/registry.py `load_all`), read-only
    after: what a server counts or changes lives on the server."""

    def __init__(self) -> None:
        self.commands: dict[bytes, Command] = {}
        self.modules: dict[str, int] = {}  # emulated module -> version (MODULE LIST)
        self.module_switches: dict[str, str] = {}  # emulated module -> the setting that turns it on
        self.size = 0  # commands and subcommands declared: the length of a stats table
        self.complete = False  # every family loaded (fakekey.net.registry.load_all)

    def add(self, cmd: Command) -> Command:
        if "|" in cmd.name:
            parent_name, sub = cmd.name.split("|", 1)
            parent = self.commands[parent_name.encode()]
            cmd.parent = parent
            cmd.group = parent.group
            parent.subcommands[sub.encode()] = cmd
        else:
            self.commands[cmd.name.encode()] = cmd
        cmd.index = self.size
        cmd.counts_lookups = "write" not in cmd.flags or cmd.name in _WRITES_THAT_READ
        self.size += 1
        return cmd

    def lookup(self, name: bytes) -> Command | None:
        """The command of that name, in any case (a server keeps a cache of its own)."""
        return self.commands.get(name.lower())

    def all(self) -> Iterable[Command]:
        return self.commands.values()

    def new_stats(self) -> list[CommandStats | None]:
        """A server's table of counters, a place per command and subcommand by
        `Command.index`: None until the server first counts that command
        (ServerState.stats_of). A new server makes one list, not four hundred objects."""
        return [None] * self.size

    def view(self) -> Registry:
        """A server's own table of the same commands (shared, not copied), which it may
        rename or remove commands from: the declarations stay as they are."""
        table = Registry()
        table.commands = dict(self.commands)
        table.modules = self.modules
        table.module_switches = self.module_switches
        table.size = self.size
        table.complete = self.complete
        return table

    def modules_switched_off(self, config: Settings) -> bool:
        """Whether `config` turns off an emulated module this table still has (a table
        made for such a config lists only the modules it leaves on)."""
        return not all(config[self.module_switches[name]] for name in self.modules)

    def with_modules(self, config: Settings) -> Registry:
        """A table of the same commands less the verbs of the emulated modules `config`
        turns off (each module's own setting), and less their MODULE LIST lines."""
        def enabled(name: str) -> bool:
            return bool(config[self.module_switches[name]])
        table = self.view()
        table.remove(lambda cmd: bool(cmd.module) and not enabled(cmd.module))
        table.modules = {name: ver for name, ver in self.modules.items() if enabled(name)}
        return table

    def remove(self, unwanted: Callable[[Command], bool]) -> None:
        """Take the commands `unwanted` picks out of this table (a view, never REGISTRY)."""
        assert self is not REGISTRY, "the declarations are read-only"
        self.commands = {name: cmd for name, cmd in self.commands.items() if not unwanted(cmd)}

    def rename(self, old: str, new: str) -> None:
        """rename-command: the command `old` answers to `new` from now on, or to nothing
        when `new` is "" (as Valkey renames at startup: in any case, one command at a
        time, a subcommand is no command here). Replies still name it by its own name
        (COMMAND INFO, arity errors, INFO commandstats), as Valkey's do. A module's verbs
        load after the config file, so there are none to rename yet."""
        assert self is not REGISTRY, "the declarations are read-only"
        key = old.encode("utf-8", "surrogateescape").lower()
        cmd = self.commands.get(key)
        if cmd is None or cmd.module:
            raise ValueError("No such command in rename-command")
        del self.commands[key]
        if new:
            target = new.encode("utf-8", "surrogateescape").lower()
            if target in self.commands:
                raise ValueError("Target command name already exists")
            self.commands[target] = cmd


REGISTRY = Registry()


def declare_module(name: str, version: int, switch: str) -> None:
    """An emulated module, listed by MODULE LIST and HELLO while its commands are on;
    `switch` is the boolean setting that turns it on (enable-emq-module)."""
    REGISTRY.modules[name] = version
    REGISTRY.module_switches[name] = switch


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
    tips: str = "",
    module: str = "",
    dirty: Dirty | None = None,
    protected_by: str = "",
) -> Callable[[Handler], Handler]:
    """Declare a command next to its handler. `name` may be "parent|sub". A module's
    command carries Valkey's `module` flag and belongs to the group `module`. `dirty`:
    how the command moves the dirty counter, when not one per change the write funnel
    sees (fakekey/core/dirty.py). `protected_by`: the enable-*-command setting that
    allows it (Valkey's PROTECTED flag, checked before authentication and ACL)."""

    if isinstance(keys, KeySpec):
        keys = (keys,)

    def register(fn: Handler) -> Handler:
        REGISTRY.add(
            Command(
                name=name.lower(),
                arity=arity,
                flags=frozenset(flags.split() + (["module"] if module else [])),
                handler=fn if dirty is None else Counted(fn, dirty),
                keys=tuple(keys or ()),
                acl=tuple(acl.split()),
                group=group,
                since=since,
                summary=summary,
                complexity=complexity,
                doc_flags=tuple(doc_flags.split()),
                get_keys=get_keys,
                tips=tuple(tips.split()),
                module=module,
                protected_by=protected_by,
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


def keys_range(
    first: int, last: int = 0, step: int = 1, flags: str = "",
    flags_for_call: Callable[[list[bytes]], tuple[str, ...]] | None = None,
) -> KeySpec:
    if last == 0:
        last = first
    return KeySpec(first, last, step, tuple(flags.split()), flags_for_call=flags_for_call)


def keys_numkeys(at: int, flags: str = "") -> KeySpec:
    return KeySpec(at + 1, 0, 1, tuple(flags.split()), numkeys_at=at)


def keys_keyword(
    keyword: str, startfrom: int, last: int = 0, step: int = 1, limit: int = 0, flags: str = ""
) -> KeySpec:
    """Keys that follow a keyword (XREAD ... STREAMS k1 k2 id1 id2: last=-1, limit=2)."""
    return KeySpec(0, last, step, tuple(flags.split()), limit=limit, keyword=keyword, startfrom=startfrom)
