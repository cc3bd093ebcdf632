"""What watches commands as they run: MONITOR's feed, the command log's entries (SLOWLOG,
COMMANDLOG) and the arguments both hide. The MONITOR, SLOWLOG and COMMANDLOG commands
themselves are in fakekey/commands/observability.py; the network and `ServerState.call`
call these after each command."""

from __future__ import annotations

import asyncio
import codecs
import re
from typing import TYPE_CHECKING

from fakekey.core.commandlog import SETTINGS, SLOW
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

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
    if client.connection is None and client.id <= 2:
        origin = b"lua"
    elif client.unix_socket:  # Valkey names the socket, not the client's "[PATH:0]:0"
        origin = b"unix:" + state.config["unixsocket"].encode()
    else:
        origin = client.addr.encode()
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


# --- the command log ----------------------------------------------------------------------


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
