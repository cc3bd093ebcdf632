"""FAKEKEY.* commands: what fakekey adds for tests (the clock, the lost-wake detector). A
server started with `enable-fakekey-commands no` has none of them (fakekey/net/registry.py):
they are unknown commands there, as on Valkey."""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import help_lines, parse_int
from fakekey.core.client import Client
from fakekey.core.clock import MAX_MS
from fakekey.core.registry import command
from fakekey.resp.replies import OK, ReplyError

G = "server"
CLOCK_NEGATIVE = ReplyError("ERR clock time must be non-negative")
CLOCK_BACKWARDS = ReplyError("ERR the clock only moves forward")
# SET past MAX_MS is refused by the integer parser itself; ADVANCE checks the sum.
CLOCK_PAST_MAX = ReplyError(f"ERR clock time is out of range, it must be at most {MAX_MS} ms")


@command("fakekey.clock", -2, "admin noscript fast", acl="dangerous", group=G,
         since="0.1.0", summary="Reads, freezes, advances or releases the server clock "
         "(GET | SET ms | ADVANCE ms | REAL).")
def fakekey_clock(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    sub = argv[1].upper()
    if sub == b"GET" and len(argv) == 2:
        return state.clock.now_ms()
    if sub == b"SET" and len(argv) == 3:
        ms = parse_int(argv[2])
        if ms < 0:
            raise CLOCK_NEGATIVE
        state.set_clock(ms)
        return OK
    if sub == b"ADVANCE" and len(argv) == 3:
        ms = parse_int(argv[2])
        if ms < 0:
            raise CLOCK_BACKWARDS
        if state.clock.now_ms() + ms > MAX_MS:
            raise CLOCK_PAST_MAX
        state.advance_clock(ms)
        return OK
    if sub == b"REAL" and len(argv) == 2:
        state.real_clock()
        return OK
    if sub in (b"GET", b"SET", b"ADVANCE", b"REAL"):
        raise ReplyError("ERR wrong number of arguments for 'fakekey.clock' command")
    raise ReplyError(
        f"ERR unknown subcommand '{argv[1].decode('utf-8', 'replace')}'. "
        "Try FAKEKEY.CLOCK GET|SET|ADVANCE|REAL."
    )


WAKES_HELP = [
    "FAKEKEY.WAKES <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET",
    "    The lost-wake detector's counts and records: lost, wasted, and the most recent",
    "    128 lost wakes, oldest first (time, queue, transition, command, script, client).",
    "RESET",
    "    Clear the counts and the records.",
    "HELP",
    "    Print this help.",
]


@command("fakekey.wakes", -2, "admin noscript fast", acl="dangerous", group=G,
         since="0.1.0", summary="Reads or clears the lost-wake detector of EMQ queues "
         "(GET | RESET | HELP).")
def fakekey_wakes(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    sub = argv[1].upper()
    if sub == b"GET" and len(argv) == 2:
        return state.wakes.report().reply()
    if sub == b"RESET" and len(argv) == 2:
        state.wakes.reset()
        return OK
    if sub == b"HELP" and len(argv) == 2:
        return help_lines(WAKES_HELP)
    if sub in (b"GET", b"RESET", b"HELP"):
        raise ReplyError("ERR wrong number of arguments for 'fakekey.wakes' command")
    raise ReplyError(
        f"ERR unknown subcommand '{argv[1].decode('utf-8', 'replace')}'. "
        "Try FAKEKEY.WAKES GET|RESET|HELP."
    )
