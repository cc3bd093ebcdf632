"""What a user watches a server with: MONITOR (every command as it runs), SLOWLOG and
COMMANDLOG (the latest slow commands, fakekey/core/commandlog.py), and LOLWUT.

Times come from fakekey's clock: MONITOR's timestamps and the log entries' times follow
a frozen or advanced clock as TIME does, so a test that freezes time sees them fixed."""

from __future__ import annotations

import asyncio
import codecs
import math
import random
import re
import struct
from typing import TYPE_CHECKING, Any

from fakekey import VALKEY_VERSION
from fakekey.codecs.longdouble import ld_parse
from fakekey.commands.admin import help_lines
from fakekey.commands.args import parse_int
from fakekey.core.client import Client
from fakekey.core.commandlog import KINDS, SETTINGS, SLOW
from fakekey.core.registry import command, container
from fakekey.resp.replies import NO_REPLY, OK, ReplyError, Verbatim

if TYPE_CHECKING:
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

G = "server"
LOG_FLAGS = "admin loading stale"
DANGEROUS = "dangerous"
ALL_NODES = "request_policy:all_nodes"
COUNT_ERROR = ReplyError("ERR count should be greater than or equal to -1")
TYPE_ERROR = ReplyError("ERR type should be one of the following: slow, large-request, large-reply")
# the settings whose CONFIG SET value Valkey hides (its SENSITIVE_CONFIG flag)
SENSITIVE_SETTINGS = frozenset({
    b"requirepass", b"masterauth", b"primaryauth", b"masteruser", b"primaryuser",
    b"tls-key-file-pass", b"tls-client-key-file-pass",
})

# --- what the logs and MONITOR hide: Valkey's redactClientCommandArgument calls ------------


def redacted_positions(argv: list[bytes]) -> list[int]:
    """The arguments the command itself would have hidden by the time it ended: AUTH's
    credentials, HELLO's AUTH pair, MIGRATE's AUTH/AUTH2, ACL SETUSER/GETUSER's
    arguments, a password setting's value in CONFIG SET. As in Valkey, a command that
    fails before it reads them hides nothing."""
    name = argv[0].lower()
    if name == b"auth":
        return list(range(1, len(argv))) if len(argv) <= 3 else []
    if name == b"hello":
        return _hello_positions(argv)
    if name == b"migrate":
        return _migrate_positions(argv)
    if len(argv) >= 3 and name == b"acl":
        sub = argv[1].lower()
        if sub == b"setuser":
            return list(range(2, len(argv)))
        if sub == b"getuser":
            return [2]
    if len(argv) >= 4 and name == b"config" and argv[1].lower() == b"set":
        return [i + 1 for i in range(2, len(argv) - 1, 2) if argv[i].lower() in SENSITIVE_SETTINGS]
    return []


def _hello_positions(argv: list[bytes]) -> list[int]:
    """HELLO reads its options in order after a valid version; AUTH's pair is hidden as
    soon as it is read, so an error after it still leaves it hidden."""
    if len(argv) < 2 or argv[1] not in (b"2", b"3"):
        return []
    hidden: list[int] = []
    j = 2
    while j < len(argv):
        more = len(argv) - 1 - j
        opt = argv[j].lower()
        if opt == b"auth" and more >= 2:
            hidden += [j + 1, j + 2]
            j += 3
        elif opt == b"setname" and more >= 1 and _valid_name(argv[j + 1]):
            j += 2
        else:
            break
    return hidden


def _valid_name(name: bytes) -> bool:
    return all(33 <= byte <= 126 for byte in name)


def _migrate_positions(argv: list[bytes]) -> list[int]:
    hidden: list[int] = []
    j = 6
    while j < len(argv):
        opt = argv[j].lower()
        more = len(argv) - 1 - j
        if opt == b"auth" and more >= 1:
            hidden.append(j + 1)
            j += 2
        elif opt == b"auth2" and more >= 2:
            hidden += [j + 1, j + 2]
            j += 3
        elif opt in (b"copy", b"replace"):
            j += 1
        else:
            break
    return hidden


# --- MONITOR --------------------------------------------------------------------------------


@command("monitor", 1, "admin noscript loading stale", acl=DANGEROUS, group=G, since="1.0.0", complexity="",
         summary="Streams every command the server runs, as it runs it.")
def monitor(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    if state.deny_blocking:  # inside EXEC: a transaction expects one reply per command
        raise ReplyError("ERR MONITOR isn't allowed for DENY BLOCKING client")
    if c.monitor:
        return NO_REPLY  # Valkey ignores a second MONITOR
    c.monitor = True
    state.monitors.append(c)
    return OK


def stop_monitoring(c: Client) -> None:
    """RESET or a disconnection: the client leaves monitor mode."""
    if c.monitor:
        c.monitor = False
        monitors = c.state.monitors
        if c in monitors:
            monitors.remove(c)


def quote(arg: bytes) -> bytes:
    r"""Valkey's sdscatrepr: a double-quoted C string, printable bytes as themselves,
    `\\ \" \n \r \t \a \b`, other bytes as `\xNN`. Done at C speed (escape_encode, then
    its few differences fixed), so a large argument costs no Python loop per byte."""
    arg = bytes(arg)
    if _NEEDS_ESCAPE.search(arg) is None:
        return b'"' + arg + b'"'
    pieces = _BELL_OR_BACKSPACE.split(arg)  # escape_encode writes them as \x07, \x08
    for i in range(0, len(pieces), 2):
        text = codecs.escape_encode(pieces[i])[0]  # type: ignore[attr-defined]
        pieces[i] = text.replace(b"\\'", b"'").replace(b'"', b'\\"')
    for i in range(1, len(pieces), 2):
        pieces[i] = b"\\a" if pieces[i] == b"\x07" else b"\\b"
    return b'"' + b"".join(pieces) + b'"'


_BELL_OR_BACKSPACE = re.compile(b"([\x07\x08])")
_NEEDS_ESCAPE = re.compile(rb"[^\x20\x21\x23-\x5b\x5d-\x7e]")  # all but printable, \\ and "


def monitor_line(state: ServerState, client: Client, argv: list[bytes]) -> bytes:
    """`+<seconds>.<micros> [<db> <addr>] "arg" ...` with the hidden arguments replaced."""
    now_us = state.clock.now_us()
    origin = b"lua" if client.connection is None and client.id <= 2 else client.addr.encode()
    hidden = redacted_positions(argv)
    args = [b'"(redacted)"' if i in hidden else quote(arg) for i, arg in enumerate(argv)]
    return b"+%d.%06d [%d %s] %s\r\n" % (now_us // 1_000_000, now_us % 1_000_000, client.db.index,
                                          origin, b" ".join(args))


def feed_monitors(state: ServerState, client: Client, argv: list[bytes]) -> None:
    """Send one command's line to every monitor. A monitor's own command (PING ...) is
    shown after its reply, as in Valkey."""
    line = monitor_line(state, client, argv)
    for watcher in list(state.monitors):
        connection = watcher.connection
        if connection is None:
            continue
        if watcher is client or watcher is state.current_client:
            asyncio.get_running_loop().call_soon(connection.write, line)
        else:
            connection.write(line)


def feeds_monitor_after(cmd: Command) -> bool:
    """Shown once it ran: every command but the admin ones and the scripts (shown before)."""
    return not ("admin" in cmd.flags or "skip_monitor" in cmd.flags)


def refuse_for_monitor(cmd: Command) -> ReplyError | None:
    """A monitor is a replica to Valkey: it may not touch the keyspace."""
    if "readonly" in cmd.flags or "write" in cmd.flags or "may_replicate" in cmd.flags or \
            cmd.name in MAY_REPLICATE:
        return ReplyError("ERR Replica can't interact with the keyspace")
    return None


# Valkey's may_replicate commands (fakekey's registry does not carry that flag)
MAY_REPLICATE = frozenset({
    "eval", "evalsha", "fcall", "publish", "spublish", "function|load", "function|delete",
    "function|flush", "function|restore", "pfcount",
})


# --- SLOWLOG and COMMANDLOG -----------------------------------------------------------------


def log_command(state: ServerState, client: Client, argv: list[bytes], micros: int, kind: str = SLOW) -> None:
    """A command passed a threshold (the slow one by default, or a size: `micros` is then
    the bytes): into that log, with its caller's address and name when a script ran it."""
    caller = client
    if client.connection is None and client.id <= 2 and state.current_client is not None:
        caller = state.current_client
    state.commandlog.push(kind, state.config[SETTINGS[kind][1]], state.now // 1000, micros, argv,
                          redacted_positions(argv), caller.addr.encode(), bytes(caller.name))


def request_size(argv: list[bytes]) -> int:
    """The bytes of a request in the multibulk layout (what Valkey read for it)."""
    return len(b"*%d\r\n" % len(argv)) + sum(len(b"$%d\r\n" % len(a)) + len(a) + 2 for a in argv)


def log_kind(arg: bytes) -> str:
    kind = arg.lower().decode("latin-1")
    if kind not in KINDS:
        raise TYPE_ERROR
    return kind


def log_count(arg: bytes) -> int:
    try:
        count = parse_int(arg)
    except ReplyError:
        raise COUNT_ERROR from None
    if count < -1:
        raise COUNT_ERROR
    return count


container("slowlog", group=G, since="2.2.12", summary="Holds the slow log commands.")

SLOWLOG_HELP = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
]


@command("slowlog|get", -2, LOG_FLAGS, acl=DANGEROUS, group=G, since="2.2.12", tips=f"{ALL_NODES} nondeterministic_output",
         complexity="O(N) where N is the number of entries returned",
         summary="Answers the newest entries of the slow log.")
def slowlog_get(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise ReplyError("ERR unknown subcommand or wrong number of arguments for 'GET'. Try SLOWLOG HELP.")
    count = log_count(argv[2]) if len(argv) == 3 else 10
    return c.state.commandlog.get(SLOW, count)


@command("slowlog|help", 2, "loading stale", group=G, since="6.2.0",
         summary="Describes the SLOWLOG subcommands.")
def slowlog_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(SLOWLOG_HELP)


@command("slowlog|len", 2, LOG_FLAGS, acl=DANGEROUS, group=G, since="2.2.12",
         tips=f"{ALL_NODES} response_policy:agg_sum nondeterministic_output",
         summary="Counts the entries of the slow log.")
def slowlog_len(c: Client, argv: list[bytes]) -> Any:
    return c.state.commandlog.length(SLOW)


@command("slowlog|reset", 2, LOG_FLAGS, acl=DANGEROUS, group=G, since="2.2.12",
         tips=f"{ALL_NODES} response_policy:all_succeeded",
         complexity="O(N) where N is the number of entries in the slowlog",
         summary="Empties the slow log.")
def slowlog_reset(c: Client, argv: list[bytes]) -> Any:
    c.state.commandlog.reset(SLOW)
    return OK



container("commandlog", group=G, since="8.1.0", summary="Holds the command log commands.")

COMMANDLOG_HELP = [
    "COMMANDLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <count> <type>",
    "    Return top <count> entries of the specified <type> from the commandlog (-1 mean all).",
    "    Entries are made of:",
    "    id, timestamp,",
    "        time in microseconds for type of slow,",
    "        or size in bytes for type of large-request,",
    "        or size in bytes for type of large-reply",
    "    arguments array, client IP and port,",
    "    client name",
    "LEN <type>",
    "    Return the length of the specified type of commandlog.",
    "RESET <type>",
    "    Reset the specified type of commandlog.",
    "HELP",
    "    Print this help.",
]


@command("commandlog|get", 4, LOG_FLAGS, acl=DANGEROUS, group=G, since="8.1.0", tips=f"{ALL_NODES} nondeterministic_output",
         complexity="O(N) where N is the number of entries returned",
         summary="Answers the newest entries of one kind of command log.")
def commandlog_get(c: Client, argv: list[bytes]) -> Any:
    count = log_count(argv[2])
    return c.state.commandlog.get(log_kind(argv[3]), count)


@command("commandlog|help", 2, "loading stale", group=G, since="8.1.0",
         summary="Describes the COMMANDLOG subcommands.")
def commandlog_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(COMMANDLOG_HELP)


@command("commandlog|len", 3, LOG_FLAGS, acl=DANGEROUS, group=G, since="8.1.0",
         tips=f"{ALL_NODES} response_policy:agg_sum nondeterministic_output",
         summary="Counts the entries of one kind of command log.")
def commandlog_len(c: Client, argv: list[bytes]) -> Any:
    return c.state.commandlog.length(log_kind(argv[2]))


@command("commandlog|reset", 3, LOG_FLAGS, acl=DANGEROUS, group=G, since="8.1.0",
         tips=f"{ALL_NODES} response_policy:all_succeeded",
         complexity="O(N) where N is the number of entries in the commandlog",
         summary="Empties one kind of command log.")
def commandlog_reset(c: Client, argv: list[bytes]) -> Any:
    c.state.commandlog.reset(log_kind(argv[2]))
    return OK



# --- LOLWUT ---------------------------------------------------------------------------------


@command("lolwut", -1, "readonly fast", group=G, since="5.0.0", complexity="",
         summary="Draws some computer art, then names the server's version.")
def lolwut(c: Client, argv: list[bytes]) -> Any:
    args = argv[1:]
    version = int(VALKEY_VERSION.split(".")[0])
    if len(args) >= 2 and args[0].lower() == b"version":
        version = parse_int(args[1]) & 0xFFFFFFFF  # Valkey prints it as an unsigned int
        args = args[2:]
    if version == 9:
        return Verbatim(julia_art(args))
    if version in (5, 6):
        # Valkey draws random art for these (Schotter, a skyline); fakekey answers the
        # version line alone (docs/differences.md)
        return Verbatim(f"Valkey ver. {VALKEY_VERSION}\n".encode())
    return Verbatim(f"Valkey ver.{VALKEY_VERSION}\n".encode())


JULIA_CHARS = b" .:-=+*%#&@"
JULIA_MAX_ITER = len(JULIA_CHARS)  # Valkey's sizeof(ascii_array) - 1: the array has its NUL
_F32 = struct.Struct("f")


def f32(value: float) -> float:
    """`value` as a C float holds it (rounded to single precision, inf past its range)."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def long_double_as_float(arg: bytes) -> float:
    """A strtold argument narrowed to a double (past the double's range: infinite)."""
    value = ld_parse(arg)
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def julia_art(args: list[bytes]) -> bytes:
    """LOLWUT 9: `[columns rows] [real imaginary]`, a Julia set in characters, computed in
    single precision as Valkey computes it (the same constants draw the same bytes; the
    default constants are random, as in Valkey)."""
    if len(args) in (1, 3) or len(args) > 4:
        raise ReplyError("ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]")
    cols = parse_int(args[0]) if args else 80
    rows = parse_int(args[1]) if len(args) > 1 else 40
    cols, rows = min(max(cols, 1), 160), min(max(rows, 1), 80)
    if len(args) == 4:
        real, imag = (f32(long_double_as_float(arg)) for arg in args[2:])
    else:
        real, imag = (f32(f32(random.random()) * 2 - 1) for _ in range(2))
    lines = []
    for i in range(rows):
        y = f32(2.0 - f32(f32(4.0 * f32(i + 0.5)) / rows))
        line = bytearray()
        for j in range(cols):
            x = f32(-2.0 + f32(f32(4.0 * f32(j + 0.5)) / cols))
            line.append(JULIA_CHARS[julia_escape(x, y, real, imag) % (JULIA_MAX_ITER + 1)])
        lines.append(bytes(line) + b"\n")
    footer = (f"Ascii representation of Julia set with constant {real:.2f} + {imag:.2f}i\n"
              f"Don't forget to have fun! Valkey ver. {VALKEY_VERSION}\n")
    return b"".join(lines) + footer.encode()


def julia_escape(x: float, y: float, real: float, imag: float) -> int:
    """Valkey's juliaSetIteration, every operation rounded to single precision."""
    for i in range(JULIA_MAX_ITER):
        x, y = (f32(f32(f32(x * x) - f32(y * y)) + real), f32(f32(f32(2 * x) * y) + imag))
        if f32(f32(x * x) + f32(y * y)) > 4:
            return i
    return JULIA_MAX_ITER - 1
