"""What a user watches a server with: MONITOR (every command as it runs), SLOWLOG and
COMMANDLOG (the latest slow commands, fakekey/core/commandlog.py), and LOLWUT.

Times come from fakekey's clock: MONITOR's timestamps and the log entries' times follow
a frozen or advanced clock as TIME does, so a test that freezes time sees them fixed."""

from __future__ import annotations

import math
import random
import struct
from typing import TYPE_CHECKING, Any

from fakekey._version import REDIS_VERSION, VALKEY_VERSION
from fakekey.codecs.longdouble import ld_parse
from fakekey.commands.args import help_lines, parse_int
from fakekey.core.client import Client
from fakekey.core.commandlog import KINDS, SLOW
from fakekey.core.registry import command, container
from fakekey.resp.replies import NO_REPLY, OK, ReplyError, Verbatim

if TYPE_CHECKING:
    pass

G = "server"
LOG_FLAGS = "admin loading stale"
DANGEROUS = "dangerous"
ALL_NODES = "request_policy:all_nodes"
COUNT_ERROR = ReplyError("ERR count should be greater than or equal to -1")
TYPE_ERROR = ReplyError("ERR type should be one of the following: slow, large-request, large-reply")
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


# --- SLOWLOG and COMMANDLOG -----------------------------------------------------------------


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
    name = lolwut_name(c)
    if version == 9:
        return Verbatim(julia_art(args, name))
    if version in (5, 6):
        # Valkey draws random art for these (Schotter, a skyline); fakekey answers the
        # version line alone (docs/differences.md)
        return Verbatim(f"{name}\n".replace("ver.", "ver. ", 1).encode())
    return Verbatim(f"{name}\n".encode())


def lolwut_name(c: Client) -> str:
    """LOLWUT's last words: Valkey's version, or Redis 7.2.4's under
    extended-redis-compatibility."""
    if c.state.config["extended-redis-compatibility"]:
        return f"Redis ver.{REDIS_VERSION}"
    return f"Valkey ver.{VALKEY_VERSION}"


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


def julia_art(args: list[bytes], name: str = f"Valkey ver.{VALKEY_VERSION}") -> bytes:
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
              f"Don't forget to have fun! {name.replace('ver.', 'ver. ', 1)}\n")
    return b"".join(lines) + footer.encode()


def julia_escape(x: float, y: float, real: float, imag: float) -> int:
    """Valkey's juliaSetIteration, every operation rounded to single precision."""
    for i in range(JULIA_MAX_ITER):
        x, y = (f32(f32(f32(x * x) - f32(y * y)) + real), f32(f32(f32(2 * x) * y) + imag))
        if f32(f32(x * x) + f32(y * y)) > 4:
            return i
    return JULIA_MAX_ITER - 1
