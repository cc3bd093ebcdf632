"""A transaction's core: how EXEC runs its queue (one clock snapshot, blocking denied,
a BUSY script inside it resumed later), and how it ends or aborts. `ServerState.call`
queues the commands; MULTI, EXEC, DISCARD and WATCH are in fakekey/commands/transactions.py."""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from fakekey.core.commandlog import LARGE_REPLY, SETTINGS
from fakekey.core.monitor import log_command
from fakekey.resp.encoder import join_after
from fakekey.resp.replies import NO_REPLY, OK, Raw, ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

# held as constants: compiled code compares a reply with them without a dict lookup
_NO_REPLY: Final = NO_REPLY
_OK: Final = OK


def end_transaction(c: Client) -> None:
    c.in_multi = False
    c.multi_queue = []
    c.multi_error = False
    c.state.unwatch_all(c)


def abort_exec(c: Client, refusal: ReplyError) -> ReplyError:
    """EXEC refused before it runs (arity, NOAUTH, ...) ends the transaction, and the
    refusal is told as an EXECABORT, even outside MULTI (Valkey's execCommandAbort)."""
    end_transaction(c)
    reason = refusal.message.removeprefix(b"ERR ")
    return ReplyError(b"EXECABORT Transaction discarded because of: " + reason)


def watched_key_expired(c: Client) -> bool:
    """A watched key that was alive when watched and has expired since aborts EXEC."""
    return any(not was_expired and db.is_expired(key) for (db, key), was_expired in c.watching.items())


def run_queued(c: Client, queue: list[tuple[Command, list[bytes]]], start: int, wire: list[bytes]) -> Any:
    """Run EXEC's queue from `start`: its reply, or NO_REPLY when a script in it went past
    busy-reply-threshold. The server is BUSY then; the rest of the queue runs when the
    script ends, before anything else (`ScriptRun.then`), and EXEC answers then.

    Each reply is encoded as its command ends, in the protocol then in force (HELLO may
    change it inside the queue, as Valkey writes each reply to the client as it goes);
    `wire` gathers them, and EXEC's reply is their array, framed once. EXEC is atomic,
    so its cost per command is every other client's wait: integers, bulk strings and +OK
    are framed inline (the same in RESP2 and RESP3), and one clock read ends a command and
    starts the next (`ServerState.ended_ns`)."""
    state = c.state
    state.deny_blocking = True
    paused = False
    # COMMANDLOG large-reply: each command is measured by EXEC's reply so far, as Valkey
    # measures the bytes its client has been sent for the EXEC when the command ends
    header = b"*%d\r\n" % len(queue)
    sent = len(header) + sum(map(len, wire))
    large_at = state.large_reply_at
    late = LateEntries(state)
    started = 0  # read by the first command; then each starts when the one before ended
    try:
        for at in range(start, len(queue)):
            cmd, args = queue[at]
            reply = state.run_command(c, cmd, args, started)
            started = state.ended_ns
            if type(reply) is int:
                data = b":%d\r\n" % reply
            elif type(reply) is bytes:
                data = b"$%d\r\n%s\r\n" % (len(reply), reply)
            elif reply is _OK:
                data = b"+OK\r\n"
            else:
                busy = state.busy_script
                if reply is _NO_REPLY and busy is not None and busy.caller is c:
                    busy.then = partial(_resume_queue, c, queue, at + 1, wire)
                    paused = True
                    return NO_REPLY
                data = c.encoder.encode(reply)
            wire.append(data)
            sent += len(data)
            if sent > large_at and "skip_commandlog" not in cmd.flags:
                late.add(args, sent)
    finally:
        late.log(c)
        if not paused:
            state.deny_blocking = False
    c.cmd = state.registry.lookup(b"exec")
    return Raw(join_after(header, wire))


class LateEntries:
    """The large-reply entries of one EXEC. Past the threshold every later command of the
    queue is logged (as Valkey logs them), but only the newest max-len entries can stay in
    the log: those are made, the others only take their ids."""

    __slots__ = ("state", "kept", "count")

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.kept: deque[tuple[list[bytes], int]] | None = None
        self.count = 0

    def add(self, argv: list[bytes], size: int) -> None:
        if self.kept is None:
            max_len = max(0, self.state.config[SETTINGS[LARGE_REPLY][1]])
            self.kept = deque(maxlen=max_len)
        self.kept.append((argv, size))
        self.count += 1

    def log(self, c: Client) -> None:
        kept = self.kept
        if kept is None or kept.maxlen == 0:  # a max-len of 0 logs nothing
            return
        self.kept = None
        self.state.commandlog.skip_ids(LARGE_REPLY, self.count - len(kept))
        for argv, size in kept:
            log_command(self.state, c, argv, size, LARGE_REPLY)


def _resume_queue(c: Client, queue: list[tuple[Command, list[bytes]]], start: int, wire: list[bytes],
                  script_reply: Any) -> Any:
    """After the BUSY script of an EXEC ended: its reply in its slot, then the rest."""
    wire.append(c.encoder.encode(script_reply))
    state = c.state
    state.current_client = c
    try:
        return run_queued(c, queue, start, wire)
    finally:
        state.current_client = None
