"""FAKEKEY.FAULT: faults on demand, from any client (docs/faults.md). The rules and their
matching are core/faults.py's; what an action does to a connection, and the network switch,
are net/faults.py's. Absent with `enable-fakekey-commands no`, like the other FAKEKEY.* commands."""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import help_lines
from fakekey.core.client import Client
from fakekey.core.faults import MAX_MS, bounded_int, parse_rule
from fakekey.core.registry import command
from fakekey.resp.replies import OK, ReplyError

G = "server"
SUBCOMMANDS = "ADD|DEL|LIST|RESET|SEED|LATENCY|NETWORK|HELP"
FAULT_HELP = [
    "FAKEKEY.FAULT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ADD <name> ACTION <action> [MATCH <pattern>] [CLIENT <id> | NAME <client-name> | USER <user>]",
    "    [DB <n>] [AFTER <n>] [TIMES <n>] [PROBABILITY <p>]",
    "    Add a rule. Actions: ERROR <text>, DELAY <ms>, DROP, DROP-AFTER, PARTIAL <bytes>,",
    "    HANG, NOREPLY. MATCH is a glob over the command name (or container|sub), lower case.",
    "DEL <name>",
    "    Remove a rule; the requests it holds (HANG) run.",
    "LIST",
    "    The rules in force and their counts.",
    "RESET",
    "    Remove every rule, LATENCY 0, the network up, the default seed.",
    "SEED <n>",
    "    Seed the generator PROBABILITY draws from.",
    "LATENCY <ms>",
    "    Hold every reply for ms more (0: off).",
    "NETWORK DOWN [<ms>] | UP",
    "    Stop listening and drop every connection, until UP or for ms.",
    "HELP",
    "    Print this help.",
]
NO_NETWORK = ReplyError("ERR this server has no network to take down")


@command("fakekey.fault", -2, "admin noscript", acl="dangerous", group=G, since="0.1.0",
         summary="Makes the server fail on demand: errors, delays, dropped connections, "
         "partial or missing replies, the network down (ADD | DEL | LIST | RESET | SEED | "
         "LATENCY | NETWORK | HELP).")
def fakekey_fault(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    faults = state.faults
    faults.note_controller(c)
    sub = argv[1].upper()
    argc = len(argv)
    if sub == b"ADD" and argc >= 3:
        faults.add(parse_rule(state, argv[2:]))
        return OK
    if sub == b"DEL" and argc == 3:
        return int(faults.delete(argv[2].decode("utf-8", "replace")))
    if sub == b"LIST" and argc == 2:
        return [rule.report() for rule in faults.rules.values()]
    if sub == b"RESET" and argc == 2:
        faults.reset()
        return OK
    if sub == b"SEED" and argc == 3:
        faults.set_seed(bounded_int(argv[2], "SEED", -(1 << 63), (1 << 63) - 1))
        return OK
    if sub == b"LATENCY" and argc == 3:
        faults.set_latency(bounded_int(argv[2], "LATENCY", 0, MAX_MS))
        return OK
    if sub == b"NETWORK" and argc >= 3:
        return network(c, argv)
    if sub == b"HELP" and argc == 2:
        return help_lines(FAULT_HELP)
    if sub.decode("utf-8", "replace") in SUBCOMMANDS.split("|"):
        raise ReplyError("ERR wrong number of arguments for 'fakekey.fault' command")
    raise ReplyError(
        f"ERR unknown subcommand '{argv[1].decode('utf-8', 'replace')}'. "
        f"Try FAKEKEY.FAULT {SUBCOMMANDS}."
    )


def network(c: Client, argv: list[bytes]) -> Any:
    """NETWORK DOWN [ms] | UP."""
    switch = c.state.faults.network
    how = argv[2].upper()
    if how == b"DOWN" and len(argv) <= 4:
        ms = bounded_int(argv[3], "NETWORK DOWN", 1, MAX_MS) if len(argv) == 4 else 0
        if switch is None:
            raise NO_NETWORK
        switch.down(ms)
        return OK
    if how == b"UP" and len(argv) == 3:
        if switch is not None and not switch.up():
            raise ReplyError("ERR could not listen again: the port was taken meanwhile")
        return OK
    if how in (b"DOWN", b"UP"):
        raise ReplyError("ERR wrong number of arguments for 'fakekey.fault' command")
    raise ReplyError(f"ERR unknown NETWORK argument '{argv[2].decode('utf-8', 'replace')}'. "
                     "Try NETWORK DOWN [ms] | UP.")
