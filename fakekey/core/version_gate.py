"""A server that answers as an older Redis or Valkey (fakeredis's `version=` and
`server_type=`): the commands, subcommands and options introduced after that version are
not there.

Everything is derived from the command table's own facts (`Command.since`, and the `since`
of the option tokens in COMMAND DOCS' argument trees): a gated server gets a table of its
own (`gated_table`), made once when the server is made, so a server without a version
looks commands up exactly as before and the hot path is untouched.

The facts are Valkey's. Valkey 7.2 is Redis 7.2.4, so up to 7.2 the numbers are the same
for both; what Valkey added from 8.0 on either never came to Redis (COMMANDLOG, DELIFEQ,
SET's IFEQ...) or came at another Redis version: `REDIS_SINCE` says which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from fakekey._version import REDIS_VERSION
from fakekey.core.registry import FAKEKEY_PREFIX, Command, Registry
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.commands.doc_data import ArgDoc
    from fakekey.core.state import ServerState

Version = tuple[int, int, int]
SERVER_TYPES = ("redis", "valkey")
_VALKEY_ONLY_FROM: Version = (8, 0, 0)  # the first Valkey after the fork from Redis 7.2.4

# Commands Valkey added from 8.0 on that Redis has too, at the Redis version that brought them.
_HASH_FIELD_TTL = ("hexpire", "hpexpire", "hexpireat", "hpexpireat", "httl", "hpttl",
                   "hexpiretime", "hpexpiretime", "hpersist")
REDIS_SINCE: MappingProxyType[str, Version] = MappingProxyType({
    **dict.fromkeys(_HASH_FIELD_TTL, (7, 4, 0)),
    **dict.fromkeys(("hgetex", "hsetex", "hgetdel"), (8, 0, 0)),
})


def parse_version(version: Any) -> Version:
    """fakeredis's spellings of a version: 6, "7.4", "7.4.1", (7, 4), [8, 0]."""
    if isinstance(version, bool):
        raise ValueError(f"not a server version: {version!r}")
    if isinstance(version, int):
        parts: list[int] = [version]
    elif isinstance(version, str):
        try:
            parts = [int(p) for p in version.strip().split(".")]
        except ValueError:
            raise ValueError(f"not a server version: {version!r}") from None
    elif isinstance(version, Iterable):
        parts = [int(p) for p in version]
    else:
        raise ValueError(f"not a server version: {version!r}")
    if not 1 <= len(parts) <= 3 or any(p < 0 for p in parts):
        raise ValueError(f"not a server version: {version!r}")
    major, minor, patch = (*parts, 0, 0)[:3]
    return (major, minor, patch)


def version_text(version: Version) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True)
class VersionGate:
    """The server a fakeredis user asked for: its type ("redis" or "valkey") and version."""

    server_type: str
    version: Version

    def __post_init__(self) -> None:
        if self.server_type not in SERVER_TYPES:
            raise ValueError(f"fakekey emulates valkey (server_type 'valkey' or 'redis'), "
                             f"not {self.server_type!r}")

    @property
    def text(self) -> str:
        return version_text(self.version)

    def introduced(self, name: str, since: str) -> Version | None:
        """When this server's line got a thing Valkey has had since `since` (None: never)."""
        at = parse_version(since)
        if self.server_type == "redis" and at >= _VALKEY_ONLY_FROM:
            return REDIS_SINCE.get(name)
        return at

    def admits(self, name: str, since: str) -> bool:
        at = self.introduced(name, since)
        return at is not None and at <= self.version


def gated_table(table: Registry, gate: VersionGate) -> Registry:
    """A server's table less what `gate`'s version lacks: commands and subcommands are
    unknown, options introduced later are a syntax error."""
    gated = table.view()
    commands = {}
    for name, cmd in table.commands.items():
        kept = _gated_command(cmd, gate)
        if kept is not None:
            commands[name] = kept
    gated.commands = commands
    return gated


def _gated_command(cmd: Command, gate: VersionGate) -> Command | None:
    if cmd.module or cmd.name.startswith(FAKEKEY_PREFIX):
        return cmd  # fakekey's own and the emulated module's: no version of Redis to follow
    if not gate.admits(cmd.name, cmd.since):
        return None
    subcommands = {}
    for sub_name, sub in cmd.subcommands.items():
        kept = _gated_command(sub, gate)
        if kept is not None:
            subcommands[sub_name] = kept
    late = _late_tokens(cmd, gate)
    if not late and len(subcommands) == len(cmd.subcommands) and all(
            subcommands[n] is s for n, s in cmd.subcommands.items()):
        return cmd
    handler = cmd.handler
    if late and handler is not None:
        handler = _refusing(handler, late, 1 + _leading_plain_args(cmd))
    return replace(cmd, subcommands=subcommands, handler=handler)


def _late_tokens(cmd: Command, gate: VersionGate) -> frozenset[bytes]:
    """The option tokens of `cmd` that came after the gate's version."""
    if cmd.docs is None:
        return frozenset()
    return frozenset(arg.token.upper().encode() for arg in _walk(cmd.docs.arguments)
                     if arg.token and arg.since and not gate.admits(cmd.name, arg.since))


def _walk(args: list[ArgDoc]) -> Iterable[ArgDoc]:
    for arg in args:
        yield arg
        yield from _walk(arg.arguments)


def _leading_plain_args(cmd: Command) -> int:
    """How many arguments come before the first option (SET's key and value): a value
    there may spell an option's token without being one."""
    count = 0
    for arg in cmd.docs.arguments if cmd.docs is not None else ():
        if arg.token or "optional" in arg.flags or "multiple" in arg.flags or arg.arguments:
            break
        count += 1
    return count


def _refusing(handler: Callable[..., Any], tokens: frozenset[bytes], first: int) -> Callable[..., Any]:
    """`handler`, behind a check that no argument from `first` on is one of `tokens`."""
    def gated(c: Any, argv: list[bytes]) -> Any:
        for arg in argv[first:]:
            if arg.upper() in tokens:
                raise ReplyError("ERR syntax error")
        return handler(c, argv)

    return gated


def apply(state: ServerState, gate: VersionGate) -> None:
    """Make a new server (not yet serving) answer as `gate`'s server would: its table of
    commands, the version INFO, HELLO and Lua report."""
    state.version_gate = gate
    state.registry = gated_table(state.registry, gate)
    if gate.server_type == "valkey":
        state.valkey_version = gate.text


def hello_identity(state: ServerState) -> tuple[bytes, bytes]:
    """HELLO's `server` and `version`."""
    gate = state.version_gate
    if gate is None and state.config["extended-redis-compatibility"]:
        return b"redis", REDIS_VERSION.encode()  # Valkey 8 and 9 answer as Redis 7.2.4
    if gate is None or gate.server_type == "valkey":
        return b"valkey", state.valkey_version.encode()
    return b"redis", gate.text.encode()
