"""A transaction's core: how EXEC runs its queue (one clock snapshot, blocking denied,
a BUSY script inside it resumed later), and how it ends or aborts. `ServerState.call`
queues the commands; MULTI, EXEC, DISCARD and WATCH are in fakekey/commands/transactions.py."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from fakekey.core.commandlog import LARGE_REPLY
from fakekey.core.monitor import log_command
from fakekey.resp.replies import NO_REPLY, ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client


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


def run_queued(c: Client, queue: list, start: int, replies: list[Any]) -> Any:
    """Run EXEC's queue from `start`: the replies, or NO_REPLY when a script in it went
    past busy-reply-threshold. The server is BUSY then; the rest of the queue runs when
    the script ends, before anything else (`ScriptRun.then`), and EXEC answers then."""
    state = c.state
    state.deny_blocking = True
    paused = False
    # COMMANDLOG large-reply: each command is measured by EXEC's reply so far, as Valkey
    # measures the bytes its client has been sent for the EXEC when the command ends
    encode = c.encoder.encode
    sent = len(b"*%d\r\n" % len(queue)) + sum(len(encode(r)) for r in replies)
    try:
        for at in range(start, len(queue)):
            cmd, args = queue[at]
            reply = state.run_command(c, cmd, args)
            busy = state.busy_script
            if reply is NO_REPLY and busy is not None and busy.caller is c:
                busy.then = partial(_resume_queue, c, queue, at + 1, replies)
                paused = True
                return NO_REPLY
            replies.append(reply)
            sent += len(encode(reply))
            if sent > state.large_reply_at and "skip_commandlog" not in cmd.flags:
                log_command(state, c, args, sent, LARGE_REPLY)
    finally:
        if not paused:
            state.deny_blocking = False
    c.cmd = state.registry.lookup(b"exec")
    return replies


def _resume_queue(c: Client, queue: list, start: int, replies: list[Any], script_reply: Any) -> Any:
    """After the BUSY script of an EXEC ended: its reply in its slot, then the rest."""
    replies.append(script_reply)
    state = c.state
    state.current_client = c
    try:
        return run_queued(c, queue, start, replies)
    finally:
        state.current_client = None
