"""Users, their rules and the permission checks: Valkey 9.1's ACL.

A user has flags (on/off, nopass), password hashes and selectors. The first selector is
the root one (the rules written outside parentheses); `(...)` adds more. A command runs
when any selector allows it: its database, the command itself, each key with the access
its key spec declares, each channel. The rule grammar, the descriptions (`ACL LIST`,
`ACL GETUSER`), the error texts and the choice of which refusal to report follow Valkey's
src/acl.c, checked against a real 9.1.2 server.

The hot path pays one attribute test: `client.acl_unrestricted` is true while the
client's user may run everything everywhere (the default user, as shipped), and only
otherwise does `ServerState.call` ask `check_command`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.codecs.glob import glob_match
from fakekey.core.registry import ACL_CATEGORIES, REGISTRY, Command, call_key_flags, find_keys
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

NOPERM_KEY = ReplyError("NOPERM No permissions to access a key")
NOPERM_CHANNEL = ReplyError("NOPERM No permissions to access a channel")
NOPERM_DB = ReplyError("NOPERM No permissions to access database")
WRONGPASS = ReplyError("WRONGPASS invalid username-password pair or user is disabled.")

# Which refusal wins when every selector refuses (Valkey picks the highest, then the
# latest argument): a database refusal loses to any other.
_RANK = {"database": 0, "command": 1, "key": 2, "channel": 4}
# Why EXEC refuses a queued command whose permissions changed after it was queued.
_EXEC_REASONS = {
    "command": "no permission to execute the command or subcommand",
    "key": "no permission to touch the specified keys",
    "channel": "no permission to access one of the channels used as arguments",
    "database": "no permission to access the database",
}
_MAX_DB_ID = 2**31 - 1
LOG_GROUPING_MS = 60000  # a denial within a minute of a like one bumps its count


class RuleError(Exception):
    """A rule ACL SETUSER refuses; the message is Valkey's reason."""


SYNTAX_ERROR = "Syntax error"
UNKNOWN_NAME = "Unknown command or category name in ACL"


def hash_password(password: bytes) -> str:
    return hashlib.sha256(password).hexdigest()


def _valid_hash(text: bytes) -> bool:
    return len(text) == 64 and all(ch in b"0123456789abcdef" for ch in text)


def _has_spaces(text: bytes) -> bool:
    return any(ch in b" \t\n\r\x0b\x0c\x00" for ch in text)


# --- commands as ACL sees them -------------------------------------------------------------


def lookup_acl_command(name: str) -> Command | None:
    """`cmd` or `cmd|sub` in the full command table, any case (Valkey's ACLLookupCommand)."""
    parts = name.lower().split("|")
    if len(parts) > 2:
        return None
    cmd = REGISTRY.commands.get(parts[0].encode())
    if cmd is None or len(parts) == 1:
        return cmd
    return cmd.subcommands.get(parts[1].encode()) if cmd.subcommands else None


def every_command() -> Iterator[Command]:
    for cmd in REGISTRY.all():
        yield cmd
        yield from cmd.subcommands.values()


# every command's full name, as the registry last had them (its size then, the names):
# every new server's default user starts with them all (+@all)
_every_name: list[tuple[int, frozenset[str]]] = [(-1, frozenset())]


def every_command_name() -> frozenset[str]:
    """The full names of every command and subcommand declared, made again only when
    the registry has grown (it is read-only once every family is loaded)."""
    size, names = _every_name[0]
    if size != REGISTRY.size:
        names = frozenset(cmd.name for cmd in every_command())
        _every_name[0] = (REGISTRY.size, names)
    return names


def commands_in_category(category: str) -> list[str]:
    """ACL CAT <category>: full names, built-ins only."""
    return [cmd.name for cmd in every_command() if not cmd.module and category in cmd.categories]


@dataclass(frozen=True)
class KeyPattern:
    """One key rule: `~pattern` (read and write), `%R~pattern` or `%W~pattern`."""

    pattern: bytes
    read: bool = True
    write: bool = True

    @classmethod
    def parse(cls, rule: str) -> KeyPattern:
        """`~p`, `%R~p`, `%W~p` or `%RW~p`, as ACL SETUSER writes them."""
        return parse_key_rule(rule.encode())

    def describe(self) -> bytes:
        prefix = b"~" if self.read and self.write else (b"%R~" if self.read else b"%W~")
        return prefix + self.pattern

    def grants(self, key: bytes, read: bool, write: bool) -> bool:
        """One pattern must carry every access asked for (Valkey's ACLSelectorCheckKey)."""
        return (self.read or not read) and (self.write or not write) and glob_match(self.pattern, key)


def parse_key_rule(op: bytes) -> KeyPattern:
    if op[:1] == b"~":
        pattern, read, write = op[1:], True, True
    else:
        read = write = False
        i = 1
        while i < len(op):
            ch = op[i:i + 1].upper()
            if ch == b"R" and not read:
                read = True
            elif ch == b"W" and not write:
                write = True
            elif ch == b"~":
                break
            else:
                raise RuleError(SYNTAX_ERROR)
            i += 1
        if not (read or write) or i >= len(op):
            raise RuleError(SYNTAX_ERROR)
        pattern = op[i + 1:]
    if _has_spaces(pattern):
        raise RuleError(SYNTAX_ERROR)
    return KeyPattern(pattern, read, write)


# --- selectors -----------------------------------------------------------------------------


@dataclass
class Selector:
    root: bool = False
    all_keys: bool = False
    keys: list[KeyPattern] = field(default_factory=list)
    all_channels: bool = False
    channels: list[bytes] = field(default_factory=list)
    dbs: frozenset[int] | None = None  # None: every database (alldbs)
    all_commands: bool = False  # the ALLCOMMANDS flag: no command check at all
    future: bool = False  # +@all was the base: commands added later are allowed too
    # the commands allowed; after +@all the process's frozenset of every name, shared until
    # a rule changes it (`_change` makes it a set of its own): a copy per server cost more
    # than the rest of a new server's users
    allowed: set[str] | frozenset[str] = field(default_factory=set)
    first_args: dict[str, list[bytes]] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)  # the command rules after the base

    def copy(self) -> Selector:
        return Selector(self.root, self.all_keys, list(self.keys), self.all_channels,
                        list(self.channels), self.dbs, self.all_commands, self.future,
                        # a frozenset is shared: a change makes the selector its own set
                        self.allowed if isinstance(self.allowed, frozenset) else set(self.allowed),
                        {k: list(v) for k, v in self.first_args.items()},
                        list(self.rules))

    @property
    def unrestricted(self) -> bool:
        return self.all_keys and self.all_channels and self.all_commands and self.dbs is None

    # --- rules ----------------------------------------------------------------------------

    def apply(self, op: bytes) -> None:
        """One selector rule (Valkey's ACLSetSelector); raises RuleError."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.all_keys, self.keys = True, []
        elif low == b"resetkeys":
            self.all_keys, self.keys = False, []
        elif low in (b"allchannels", b"&*"):
            self.all_channels, self.channels = True, []
        elif low == b"resetchannels":
            self.all_channels, self.channels = False, []
        elif low in (b"allcommands", b"+@all"):
            self._set_all_commands(True)
        elif low in (b"nocommands", b"-@all"):
            self._set_all_commands(False)
        elif low == b"alldbs":
            self.dbs = None
        elif low == b"resetdbs":
            self.dbs = frozenset()
        elif low.startswith(b"db="):
            self.dbs = parse_db_list(op[3:])
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            self._add_channel(op[1:])
        elif op[:2] in (b"+@", b"-@"):
            self._set_category(op[2:].decode("utf-8", "replace").lower(), op[:1] == b"+")
        elif op[:1] == b"+":
            self._allow(op[1:].decode("utf-8", "replace"))
        elif op[:1] == b"-":
            self._deny(op[1:].decode("utf-8", "replace"))
        else:
            raise RuleError(SYNTAX_ERROR)

    def _set_all_commands(self, allow: bool) -> None:
        self.allowed = every_command_name() if allow else set()
        self.all_commands = self.future = allow
        self.rules = []
        self.first_args = {}

    def _add_key_pattern(self, op: bytes) -> None:
        if self.all_keys:
            raise RuleError("Adding a pattern after the * pattern (or the 'allkeys' flag) is "
                            "not valid and does not have any effect. Try 'resetkeys' to start "
                            "with an empty list of patterns")
        new = parse_key_rule(op)
        for i, old in enumerate(self.keys):
            if old.pattern == new.pattern:  # the same pattern gains the new access
                self.keys[i] = KeyPattern(old.pattern, old.read or new.read, old.write or new.write)
                return
        self.keys.append(new)

    def _add_channel(self, pattern: bytes) -> None:
        if self.all_channels:
            raise RuleError("Adding a pattern after the * pattern (or the 'allchannels' flag) is "
                            "not valid and does not have any effect. Try 'resetchannels' to "
                            "start with an empty list of channels")
        if _has_spaces(pattern):
            raise RuleError(SYNTAX_ERROR)
        if pattern not in self.channels:
            self.channels.append(pattern)

    def _change(self, cmd: Command, allow: bool) -> None:
        """A command and, for a container, all its subcommands (ACLChangeSelectorPerm)."""
        names = [cmd.name, *(sub.name for sub in cmd.subcommands.values())]
        allowed = self.allowed = set(self.allowed) if isinstance(self.allowed, frozenset) else self.allowed
        if allow:
            allowed.update(names)
        else:
            allowed.difference_update(names)
            self.all_commands = False
        self.first_args.pop(cmd.name, None)

    def _remember(self, rule: str, allow: bool) -> None:
        """Keep the command rules in order, a later rule replacing an equal one or those
        of its subcommands (ACLUpdateCommandRules)."""
        rule = rule.lower()
        self.rules = [r for r in self.rules if r[1:] != rule and not r[1:].startswith(rule + "|")]
        self.rules.append(("+" if allow else "-") + rule)

    def _set_category(self, category: str, allow: bool) -> None:
        if category not in ACL_CATEGORIES:
            raise RuleError(UNKNOWN_NAME)
        self._remember("@" + category, allow)
        for cmd in REGISTRY.all():
            if category in cmd.categories:
                self._change(cmd, allow)
            for sub in cmd.subcommands.values():
                if category in sub.categories:
                    self._change(sub, allow)

    def _allow(self, name: str) -> None:
        if "|" not in name:
            cmd = lookup_acl_command(name)
            if cmd is None:
                raise RuleError(UNKNOWN_NAME)
            self._change(cmd, True)
            self._remember(cmd.name, True)
            return
        base, _, first = name.rpartition("|")
        cmd = lookup_acl_command(base)
        if cmd is None:
            raise RuleError(UNKNOWN_NAME)
        if cmd.parent is not None:
            raise RuleError("Allowing first-arg of a subcommand is not supported")
        if not first:
            raise RuleError(SYNTAX_ERROR)
        if cmd.subcommands:
            sub = lookup_acl_command(name)
            if sub is None:
                raise RuleError(UNKNOWN_NAME)
            self._change(sub, True)
        else:  # SELECT|0: the command with that first argument only
            allowed = self.first_args.setdefault(cmd.name, [])
            if first.lower().encode() not in allowed:
                allowed.append(first.lower().encode())
        self._remember(name, True)

    def _deny(self, name: str) -> None:
        cmd = lookup_acl_command(name)
        if cmd is None:
            raise RuleError(UNKNOWN_NAME)
        self._change(cmd, False)
        self._remember(cmd.name, False)

    # --- descriptions ---------------------------------------------------------------------

    def describe_commands(self) -> bytes:
        return " ".join(["+@all" if self.future else "-@all", *self.rules]).encode()

    def describe_keys(self) -> bytes:
        return b"~*" if self.all_keys else b" ".join(p.describe() for p in self.keys)

    def describe_channels(self) -> bytes:
        return b"&*" if self.all_channels else b" ".join(b"&" + c for c in self.channels)

    def describe_dbs(self) -> bytes:
        if self.dbs is None:
            return b"alldbs"
        return b"db=" + ",".join(map(str, sorted(self.dbs))).encode() if self.dbs else b""

    def describe(self) -> bytes:
        """The selector as ACL LIST writes it."""
        parts: list[bytes] = []
        if self.all_keys:
            parts.append(b"~*")
        else:
            parts.extend(p.describe() for p in self.keys)
        if self.all_channels:
            parts.append(b"&*")
        else:
            parts.append(b"resetchannels")
            parts.extend(b"&" + c for c in self.channels)
        if self.dbs is not None:
            parts.append(self.describe_dbs() or b"resetdbs")
        parts.append(self.describe_commands())
        return b" ".join(parts)

    def described(self) -> dict[bytes, bytes]:
        """The selector as ACL GETUSER shows it."""
        return {
            b"commands": self.describe_commands(),
            b"keys": self.describe_keys(),
            b"channels": self.describe_channels(),
            b"databases": self.describe_dbs(),
        }

    # --- checks ---------------------------------------------------------------------------

    def may_access_key(self, key: bytes, read: bool, write: bool) -> bool:
        return self.all_keys or any(p.grants(key, read, write) for p in self.keys)

    def may_use_channel(self, channel: bytes, is_pattern: bool) -> bool:
        if self.all_channels:
            return True
        if is_pattern:  # a PSUBSCRIBE pattern must be one of the patterns, literally
            return channel in self.channels
        return any(glob_match(p, channel) for p in self.channels)

    def check(self, cmd: Command, argv: list[bytes], db: int) -> tuple[str, int] | None:
        """The first refusal of this selector: (reason, argument index), or None."""
        if self.dbs is not None:
            at = database_refusal(self.dbs, cmd, argv, db)
            if at is not None:
                return ("database", at)
        if not self.all_commands and "no_auth" not in cmd.flags and cmd.name not in self.allowed:
            firsts = self.first_args.get(cmd.name)
            at = 2 if cmd.parent is not None else 1
            if not firsts or len(argv) <= at or argv[at].lower() not in firsts:
                return ("command", 0)
        if not self.all_keys:
            for at, read, write in key_references(cmd, argv):
                if not self.may_access_key(argv[at], read, write):
                    return ("key", at)
        if not self.all_channels:
            for at, is_pattern in channel_references(cmd, argv):
                if not self.may_use_channel(argv[at], is_pattern):
                    return ("channel", at)
        return None


def parse_db_list(text: bytes) -> frozenset[int]:
    """`db=0,3`: the databases listed (Valkey 9's database rule)."""
    if not text:
        raise RuleError(SYNTAX_ERROR)
    ids = set()
    for part in text.split(b","):
        if not part or not part.lstrip(b"-").isdigit():
            raise RuleError(SYNTAX_ERROR)
        value = int(part)
        if value < 0 or value > _MAX_DB_ID:
            raise RuleError("The provided database ID is out of range")
        ids.add(value)
    return frozenset(ids)


# --- what a command touches ------------------------------------------------------------------

_ACCESS_FLAGS: dict[str, tuple[bool, bool]] = {}
_CURRENT_DB: dict[str, bool] = {}
_CHANNEL_COMMANDS = {"publish": False, "spublish": False, "subscribe": False,
                     "ssubscribe": False, "psubscribe": True}


def _spec_access(flags: tuple[str, ...]) -> tuple[bool, bool]:
    """(read, write) a key spec asks for: access reads; insert, delete, update write."""
    return "access" in flags, bool({"insert", "delete", "update"} & set(flags))


def key_references(cmd: Command, argv: list[bytes]) -> list[tuple[int, bool, bool]]:
    """(argument index, read, write) for each key of this call, from the key specs."""
    specs = [s for s in cmd.keys if "not_key" not in s.flags]
    if len(specs) == 1 and specs[0].flags_for_call is not None:  # SET, BITFIELD
        read, write = _spec_access(call_key_flags(specs[0], argv))
        return [(at, read, write) for at in find_keys(specs[0], argv) or ()]
    if not specs and cmd.get_keys is None:
        return []
    if cmd.get_keys is not None:  # one declared spec: its access for every key found
        read, write = _spec_access(tuple(f for s in specs for f in s.flags))
        return [(at, read, write) for at in cmd.get_keys(argv)]
    refs: list[tuple[int, bool, bool]] = []
    for spec in specs:
        read, write = _spec_access(spec.flags)
        refs.extend((at, read, write) for at in find_keys(spec, argv) or ())
    return refs


def channel_references(cmd: Command, argv: list[bytes]) -> list[tuple[int, bool]]:
    is_pattern = _CHANNEL_COMMANDS.get(cmd.name)
    if is_pattern is None:
        return []
    if cmd.name in ("publish", "spublish"):
        return [(1, False)]
    return [(at, is_pattern) for at in range(1, len(argv))]


def uses_current_db(cmd: Command) -> bool:
    """Whether the database rules apply to the client's database for this command: it has
    keys, reads or writes, or is in @keyspace (probed on Valkey 9.1.2, every command)."""
    known = _CURRENT_DB.get(cmd.name)
    if known is None:
        has_keys = cmd.get_keys is not None or any("not_key" not in s.flags for s in cmd.keys)
        known = _CURRENT_DB[cmd.name] = (has_keys or "write" in cmd.flags or "readonly" in cmd.flags
                                          or "keyspace" in cmd.categories)
    return known


def _db_arg(raw: bytes) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


def database_refusal(dbs: frozenset[int], cmd: Command, argv: list[bytes], db: int) -> int | None:
    """The index of the argument naming a database this selector may not use (0: the
    command itself, in the client's database), or None."""
    name = cmd.name
    if name == "select":
        target = _db_arg(argv[1])
        return 1 if target is not None and target not in dbs else None
    if name == "swapdb":
        for at in (1, 2):
            target = _db_arg(argv[at])
            if target is not None and target not in dbs:
                return at
        return None
    if name == "flushall":
        return 0  # every database: only alldbs may
    if uses_current_db(cmd) and db not in dbs:
        return 0
    if name == "move" and len(argv) > 2:
        target = _db_arg(argv[2])
        return 2 if target is not None and target not in dbs else None
    if name == "copy":
        for at in range(3, len(argv) - 1):
            if argv[at].lower() == b"db":
                target = _db_arg(argv[at + 1])
                return at + 1 if target is not None and target not in dbs else None
    return None


# --- users ---------------------------------------------------------------------------------


@dataclass
class User:
    name: str
    enabled: bool = False
    nopass: bool = False
    sanitize: str = ""  # "", "sanitize-payload" or "skip-sanitize-payload"
    passwords: list[str] = field(default_factory=list)
    selectors: list[Selector] = field(default_factory=lambda: [Selector(root=True)])

    def copy(self, name: str | None = None) -> User:
        return User(name or self.name, self.enabled, self.nopass, self.sanitize,
                    list(self.passwords), [s.copy() for s in self.selectors])

    @property
    def root(self) -> Selector:
        return self.selectors[0]

    @property
    def unrestricted(self) -> bool:
        """May run everything everywhere: the hot path skips the checks for it."""
        return any(s.unrestricted for s in self.selectors)

    def apply(self, op: bytes, all_channels: bool = False) -> None:
        """One rule (Valkey's ACLSetUser); raises RuleError. `all_channels`: the server's
        acl-pubsub-default is allchannels (`reset` gives them)."""
        if not op:
            return
        low = op.lower()
        if low == b"on":
            self.enabled = True
        elif low == b"off":
            self.enabled = False
        elif low in (b"sanitize-payload", b"skip-sanitize-payload"):
            self.sanitize = low.decode()
        elif low == b"nopass":
            self.nopass, self.passwords = True, []
        elif low == b"resetpass":
            self.nopass, self.passwords = False, []
        elif op[:1] in (b">", b"#"):
            self._add_password(op)
        elif op[:1] in (b"<", b"!"):
            self._remove_password(op)
        elif op[:1] == b"(" and op[-1:] == b")":
            selector = Selector()
            for inner in split_spaces(op[1:-1]):
                selector.apply(inner)
            self.selectors.append(selector)
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif low == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels", b"off",
                         b"sanitize-payload", b"clearselectors", b"-@all"):
                self.apply(rule)
            if all_channels:
                self.apply(b"allchannels")
            self.root.dbs = None
        else:
            self.root.apply(op)

    def _password_of(self, op: bytes) -> str:
        if op[:1] in (b">", b"<"):
            return hash_password(op[1:])
        if not _valid_hash(op[1:]):
            raise RuleError("The password hash must be exactly 64 characters and contain only "
                            "lowercase hexadecimal characters")
        return op[1:].decode()

    def _add_password(self, op: bytes) -> None:
        digest = self._password_of(op)
        if digest not in self.passwords:
            self.passwords.append(digest)
        self.nopass = False

    def _remove_password(self, op: bytes) -> None:
        digest = self._password_of(op)
        if digest not in self.passwords:
            raise RuleError("The password you are trying to remove from the user does not exist")
        self.passwords.remove(digest)

    def flags(self) -> list[bytes]:
        # Valkey 9.1 accepts the payload-sanitizing rules but shows neither
        return [b"on" if self.enabled else b"off", *([b"nopass"] if self.nopass else [])]

    def describe(self) -> bytes:
        """The rules ACL LIST and ACL SAVE write after `user <name>`."""
        parts = [*self.flags(), *(b"#" + p.encode() for p in self.passwords), self.root.describe()]
        parts.extend(b"(" + s.describe() + b")" for s in self.selectors[1:])
        return b" ".join(parts)

    def getuser(self) -> dict[bytes, Any]:
        from fakekey.resp.replies import SetReply

        reply: dict[bytes, Any] = {
            b"flags": SetReply(self.flags()),
            b"passwords": [p.encode() for p in self.passwords],
        }
        reply.update(self.root.described())
        reply[b"selectors"] = [s.described() for s in self.selectors[1:]]
        return reply

    def check_password(self, password: bytes) -> bool:
        return self.enabled and (self.nopass or hash_password(password) in self.passwords)

    def check_command(self, cmd: Command, argv: list[bytes], db: int) -> tuple[str, int] | None:
        """None when some selector allows the call; otherwise the refusal Valkey reports."""
        best: tuple[str, int] | None = None
        for selector in self.selectors:
            refusal = selector.check(cmd, argv, db)
            if refusal is None:
                return None
            if best is None or _RANK[refusal[0]] > _RANK[best[0]] or (
                    refusal[0] == best[0] and refusal[1] > best[1]):
                best = refusal
        return best

    def may_access(self, key: bytes, read: bool, write: bool) -> bool:
        return any(s.may_access_key(key, read, write) for s in self.selectors)

    def may_use_channel(self, channel: bytes, is_pattern: bool) -> bool:
        return any(s.may_use_channel(channel, is_pattern) for s in self.selectors)


def split_spaces(text: bytes) -> list[bytes]:
    """The words of a selector, between single spaces (Valkey splits selectors and ACL
    file lines with sdssplitlen on " ", not with sdssplitargs: quotes are plain bytes)."""
    return [part for part in text.split(b" ") if part]


def merge_selector_args(args: list[bytes]) -> list[bytes]:
    """Selectors spread over several arguments become one `(...)` (ACLMergeSelectorArguments);
    raises RuleError naming the argument whose parenthesis is never closed."""
    out: list[bytes] = []
    opened: list[bytes] | None = None
    start = b""
    for arg in args:
        if opened is None and arg[:1] == b"(" and arg[-1:] != b")":
            opened, start = [arg], arg
            continue
        if opened is not None:
            opened.append(arg)
            if arg[-1:] == b")":
                out.append(b" ".join(opened))
                opened = None
            continue
        out.append(arg)
    if opened is not None:
        raise RuleError(start.decode("utf-8", "replace"))
    return out


def default_user() -> User:
    """The default user as a new server has it: a copy of one made once (a copy costs
    less than applying the rules again, and shares the frozen command names)."""
    if not _FRESH_DEFAULT:
        user = User("default")
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            user.apply(rule)
        _FRESH_DEFAULT.append(user)
    return _FRESH_DEFAULT[0].copy()


_FRESH_DEFAULT: list[User] = []  # the one default_user() copies (never handed out itself)


# --- the log -------------------------------------------------------------------------------


@dataclass
class LogEntry:
    count: int
    reason: str
    context: str
    object: bytes
    username: bytes
    ctime: int
    client_info: bytes
    entry_id: int
    created: int

    def matches(self, other: LogEntry) -> bool:
        return (self.reason == other.reason and self.context == other.context
                and abs(self.ctime - other.ctime) <= LOG_GROUPING_MS
                and self.object == other.object and self.username == other.username)

    def reply(self, now: int) -> dict[bytes, Any]:
        return {
            b"count": self.count,
            b"reason": self.reason.encode(),
            b"context": self.context.encode(),
            b"object": self.object,
            b"username": self.username,
            b"age-seconds": (now - self.ctime) / 1000,
            b"client-info": self.client_info,
            b"entry-id": self.entry_id,
            b"timestamp-created": self.created,
            b"timestamp-last-updated": self.ctime,
        }


def _no_description(client: Client) -> str:
    return f"id={client.id}"


# How the log shows a client: CLIENT LIST's line, which the commands layer above provides
_describe_client: Callable[[Client], str] = _no_description


def set_client_describer(describe: Callable[[Client], str]) -> None:
    global _describe_client
    _describe_client = describe


_STAT_NAMES = {"auth": "auth", "command": "cmd", "key": "key", "channel": "channel", "database": "db"}


# --- the server's users --------------------------------------------------------------------


class Users:
    """The server's users by name (`default` always exists), the ACL log, and the checks
    the rest of the server asks."""

    def __init__(self) -> None:
        self.by_name: dict[str, User] = {"default": default_user()}
        self.users = self.by_name  # CLIENT KILL USER / CLIENT LIST USER look names up here
        self.log: list[LogEntry] = []
        self.log_count = 0
        self.state: ServerState | None = None

    def attach(self, state: ServerState) -> None:
        self.state = state
        if state.config["requirepass"]:  # else nopass, as the new default user is
            self.set_default_password(state.config["requirepass"])
        if state.config.user_directives or state.config["aclfile"]:
            self._load_at_startup(state)

    def _load_at_startup(self, state: ServerState) -> None:
        """The config's `user` directives, or its aclfile; ConfigError stops the start."""
        from fakekey.config.settings import ConfigError

        for words in state.config.user_directives:  # a syntax error is fatal first
            try:
                check_user_directive(words)
            except ValueError as err:
                raise ConfigError(str(err)) from None
        aclfile = state.config["aclfile"]
        if aclfile and state.config.user_directives:
            raise ConfigError("Configuring Valkey with users defined in the configuration file and "
                              "at the same setting an ACL file path is invalid.")
        try:
            self.load_directives(state.config.user_directives)
            if aclfile:
                self.load_file(aclfile)
        except (RuleError, ReplyError) as err:
            text = err.message.decode().removeprefix("ERR ") if isinstance(err, ReplyError) else str(err)
            raise ConfigError(f"Aborting startup because of ACL errors: {text}") from None

    def get(self, name: str) -> User | None:
        return self.by_name.get(name)

    @property
    def default(self) -> User:
        return self.by_name["default"]

    def auth_required(self) -> bool:
        """A new connection must authenticate (Valkey's authRequired, before AUTH)."""
        user = self.default
        return not user.nopass or not user.enabled

    def set_default_password(self, password: str) -> None:
        """requirepass: the default user's only password, or nopass when empty."""
        user = self.default
        user.apply(b"resetpass")
        user.apply(b">" + password.encode() if password else b"nopass")

    # --- changes --------------------------------------------------------------------------

    def all_channels_default(self) -> bool:
        """acl-pubsub-default allchannels: new users, and `reset`, get every channel."""
        return self.state is not None and self.state.config["acl-pubsub-default"] == "allchannels"

    def new_user(self, name: str) -> User:
        """A user not known before (Valkey's ACLCreateUser): off, no rights, no channels
        unless acl-pubsub-default says all."""
        user = User(name)
        if self.all_channels_default():
            user.apply(b"allchannels")
        return user

    def set_user(self, name: str, rules: list[bytes]) -> None:
        """ACL SETUSER: every rule applies, or none (raises RuleError with Valkey's text)."""
        try:
            merged = merge_selector_args(rules)
        except RuleError as err:
            raise ReplyError(f"ERR Unmatched parenthesis in acl selector starting at '{err}'.") from None
        old = self.by_name.get(name)
        user = old.copy() if old is not None else self.new_user(name)
        all_channels = self.all_channels_default()
        for rule in merged:
            try:
                user.apply(rule, all_channels)
            except RuleError as err:
                text = rule.decode("utf-8", "replace")
                raise ReplyError(f"ERR Error in ACL SETUSER modifier '{text}': {err}") from None
        if old is not None:
            self._disconnect_revoked_subscribers(old, user)
        self.by_name[name] = user
        self._refresh_clients(name)

    def delete(self, names: list[str]) -> int:
        deleted = 0
        for name in names:
            if self.by_name.pop(name, None) is not None:
                deleted += 1
                self._log_out_clients(name)
        return deleted

    def replace_all(self, users: dict[str, User]) -> None:
        """ACL LOAD: the new set. Only the affected clients go, as Valkey's: those of a
        user the file no longer has, and subscribers to channels their user lost."""
        old = self.by_name
        users.setdefault("default", default_user())
        self.by_name = self.users = users
        for name, before in old.items():
            after = users.get(name)
            if after is None:
                self._log_out_clients(name)
                continue
            if after.describe() != before.describe():
                self._disconnect_revoked_subscribers(before, after)
            self._refresh_clients(name)

    def _clients_of(self, name: str) -> list[Client]:
        state = self.state
        return [c for c in state.clients.values() if c.user == name] if state is not None else []

    def _refresh_clients(self, name: str) -> None:
        user = self.by_name[name]
        for client in self._clients_of(name):
            client.acl_unrestricted = user.unrestricted

    def _log_out_clients(self, name: str) -> None:
        """A deleted user's connections are closed (after the reply, for the caller)."""
        state = self.state
        for client in self._clients_of(name):
            set_default_user(client, authenticated=False)
            if state is not None and client is state.current_client:
                client.close_after_reply = True
            elif client.connection is not None and not client.protected:
                client.connection.close()

    def _disconnect_revoked_subscribers(self, old: User, new: User) -> None:
        """Subscribers of `old` whose channels `new` no longer grants are disconnected."""
        if any(s.all_channels for s in new.selectors):
            return
        granted = [c for s in new.selectors for c in s.channels]
        if not any(s.all_channels for s in old.selectors) and all(
                c in granted for s in old.selectors for c in s.channels):
            return
        for client in self._clients_of(old.name):
            patterns_ok = all(p in granted for p in client.patterns)
            channels_ok = all(any(glob_match(g, ch) for g in granted)
                              for ch in (*client.channels, *client.shard_channels))
            if patterns_ok and channels_ok:
                continue
            if self.state is not None and client is self.state.current_client:
                client.close_after_reply = True  # it revoked its own: it hears OK first
            elif client.connection is not None:
                client.connection.close()

    # --- authentication -------------------------------------------------------------------

    def authenticate(self, client: Client, username: bytes, password: bytes, verb: bytes = b"AUTH") -> None:
        """Log `client` in as `username`, or log the failure and raise WRONGPASS."""
        name = username.decode("utf-8", "surrogateescape")
        user = self.by_name.get(name)
        if user is None or not user.check_password(password):
            context = "multi" if client.in_multi else "toplevel"
            self.add_log(client, "auth", context, verb, username)
            raise WRONGPASS
        client.user = name
        client.authenticated = True
        client.parser.authenticated = True
        client.acl_unrestricted = user.unrestricted

    # --- checks ---------------------------------------------------------------------------

    def allows(self, client: Client, cmd: Command, argv: list[bytes]) -> bool:
        """Whether the client's user may run the call (nothing logged: redis.acl_check_cmd)."""
        user = self.by_name.get(client.user)
        return user is None or user.check_command(cmd, argv, client.db.index) is None

    def refusal(self, client: Client, cmd: Command, argv: list[bytes], context: str) -> tuple[str, int] | None:
        """Check a call; a refusal is logged and returned as (reason, argument index)."""
        user = self.by_name.get(client.user)
        if user is None:
            return None
        denied = user.check_command(cmd, argv, client.db.index)
        if denied is not None:
            reason, at = denied
            target = cmd.name.encode() if reason == "command" else argv[at]
            self.add_log(client, reason, context, target, client.user.encode())
        return denied

    def check_call(self, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
        """ServerState.call's check for a restricted client: the NOPERM error or None."""
        shown, client.cmd = client.cmd, cmd  # the log's client-info names the refused command
        try:
            denied = self.refusal(client, cmd, argv, "multi" if client.in_multi else "toplevel")
        finally:
            client.cmd = shown
        return None if denied is None else self.noperm(client.user, cmd, denied[0])

    def check_queued(self, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
        """EXEC's check of a queued command (the rules may have changed since MULTI)."""
        denied = self.refusal(client, cmd, argv, "multi")
        if denied is None:
            return None
        return ReplyError("NOPERM ACLs rules changed between the moment the transaction was "
                          "accumulated and the EXEC call. This command is no longer allowed for "
                          f"the following reason: {_EXEC_REASONS[denied[0]]}")

    def check_script(self, client: Client, cmd: Command, argv: list[bytes]) -> bytes | None:
        """A script's redis.call: the refusal text or None."""
        denied = self.refusal(client, cmd, argv, "lua")
        if denied is None:
            return None
        text = self.noperm(client.user, cmd, denied[0]).message[len(b"NOPERM "):]
        return b"ERR ACL failure in script: " + text

    @staticmethod
    def noperm(username: str, cmd: Command, reason: str) -> ReplyError:
        if reason == "command":
            return ReplyError(f"NOPERM User {username} has no permissions to run the '{cmd.name}' command")
        return {"key": NOPERM_KEY, "channel": NOPERM_CHANNEL}.get(reason, NOPERM_DB)

    @staticmethod
    def dryrun_text(username: str, cmd: Command, argv: list[bytes], denied: tuple[str, int]) -> bytes:
        reason, at = denied
        who = f"User {username} has no permissions to ".encode()
        if reason == "command":
            return who + f"run the '{cmd.name}' command".encode()
        if reason == "database":
            return who + b"access database " + argv[at]
        return who + b"access the '" + argv[at] + b"' " + reason.encode()

    # --- the log --------------------------------------------------------------------------

    def add_log(self, client: Client, reason: str, context: str, target: bytes, username: bytes) -> None:
        state = client.state
        state.stats["acl_access_denied_" + _STAT_NAMES[reason]] += 1
        shown = state.current_client or client
        info = _describe_client(shown).rstrip("\n").encode("utf-8", "surrogateescape")
        now = state.now
        entry = LogEntry(1, reason, context, target, username, now, info, self.log_count, now)
        for i, old in enumerate(self.log[:10]):
            if old.matches(entry):
                old.count += 1
                old.ctime = now
                old.client_info = info
                self.log.insert(0, self.log.pop(i))
                return
        self.log_count += 1
        self.log.insert(0, entry)
        del self.log[max(0, state.config["acllog-max-len"]):]

    # --- files ----------------------------------------------------------------------------

    def file_text(self) -> str:
        """ACL SAVE's file: one `user` line per user, by name."""
        return "".join(
            f"user {name} {self.by_name[name].describe().decode('utf-8', 'surrogateescape')}\n"
            for name in sorted(self.by_name)
        )

    def load_lines(self, lines: Iterable[str], source: str) -> dict[str, User]:
        """Users from ACL-file lines; raises ReplyError with Valkey's collected errors."""
        users: dict[str, User] = {}
        errors = ""
        for number, raw in enumerate(lines, 1):
            line = raw.strip(" \t\r\n")
            if not line:
                continue
            words = [w for w in line.split(" ") if w]
            if words[0] != "user" or len(words) < 2:
                errors += f"{source}:{number} should start with user keyword followed by the username. "
                continue
            name = words[1]
            if name in users:
                errors += f"WARNING: Duplicate user '{name}' found on line {number}. "
                continue
            user = users[name] = self.new_user(name)
            try:
                rules = merge_selector_args([w.encode("utf-8", "surrogateescape") for w in words[2:]])
            except RuleError:
                errors += f"{source}:{number}: Unmatched parenthesis in selector definition."
                continue
            errors += _apply_loaded(user, rules, source, number, self.all_channels_default())
        if errors:
            raise ReplyError("ERR " + errors + "WARNING: ACL errors detected, no change to the "
                             "previously active ACL rules was performed")
        return users

    def located(self, path: str) -> str:
        """The ACL file's place: a relative path is in `dir`, where Valkey works from."""
        return path if self.state is None else os.path.join(self.state.config["dir"], path)

    def load_file(self, path: str) -> None:
        """ACL LOAD (and startup with aclfile)."""
        try:
            with open(self.located(path), encoding="utf-8", errors="surrogateescape") as fh:
                lines = fh.read().split("\n")
        except OSError as err:
            raise ReplyError(f"ERR Error loading ACLs, opening file '{path}': {err.strerror}") from None
        self.replace_all(self.load_lines(lines, path))

    def save_file(self, path: str) -> None:
        path = self.located(path)
        temporary = f"{path}.tmp-{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(self.file_text())
            os.replace(temporary, path)
        except OSError:
            raise ReplyError("ERR There was an error trying to save the ACLs. Please check the "
                             "server logs for more information") from None

    def load_directives(self, directives: list[list[str]]) -> None:
        """`user <name> rules...` lines of the config file, at startup."""
        for words in directives:
            if not words:
                continue
            name, rules = words[0], [w.encode("utf-8", "surrogateescape") for w in words[1:]]
            all_channels = self.all_channels_default()
            user = self.new_user(name) if name != "default" else self.default
            if name == "default":
                user.apply(b"reset", all_channels)
            for rule in merge_selector_args(rules):
                user.apply(rule, all_channels)
            self.by_name[name] = user


def check_user_directive(words: list[str]) -> None:
    """A config file's `user <name> rules...` line, checked as Valkey reads it (unknown
    commands wait for the full command table); raises ValueError with Valkey's text."""
    if not words:
        raise ValueError("Bad directive or wrong number of arguments")
    user = User(words[0])
    try:
        rules = merge_selector_args([w.encode("utf-8", "surrogateescape") for w in words[1:]])
    except RuleError:
        raise ValueError(f"Unmatched parenthesis in selector definition of user '{words[0]}'") from None
    for rule in rules:
        try:
            user.apply(rule)
        except RuleError as err:
            if str(err) != UNKNOWN_NAME:
                raise ValueError(f"Error in user declaration '{words[0]}': {err}") from None


def _apply_loaded(user: User, rules: list[bytes], source: str, number: int,
                  all_channels: bool = False) -> str:
    """Apply an ACL file line's rules; the error text for the ones that fail."""
    errors = ""
    reported = False
    for rule in rules:
        rule = rule.strip(b"\t\r\n")
        try:
            user.apply(rule, all_channels)
        except RuleError as err:
            if str(err) == UNKNOWN_NAME:
                errors += f"{source}:{number}: Error in applying operation '{rule.decode()}': {err}. "
            elif not reported:
                errors += f"{source}:{number}: {err}. "
                reported = True
    return errors


def set_default_user(client: Client, authenticated: bool | None = None) -> None:
    """Back to the default user (RESET, a deleted user's connections)."""
    users = client.state.users
    client.user = "default"
    if authenticated is None:
        authenticated = not users.auth_required()
    client.authenticated = authenticated
    client.parser.authenticated = authenticated
    client.acl_unrestricted = users.default.unrestricted


def check_key(client: Client, key: bytes, *, read: bool = True, write: bool = False) -> None:
    """Refuse with NOPERM unless the client's user may access `key` as asked (any of its
    selectors granting every access asked for, as Valkey's ACLUserCheckKeyPerm)."""
    if client.acl_unrestricted:  # every key, for the default user as most run it
        return
    user = client.state.users.get(client.user)
    if user is None or not user.may_access(key, read, write):
        raise NOPERM_KEY
