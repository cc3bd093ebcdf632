"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

Queueing happens in `ServerState.call`; EXEC runs the queue under one clock snapshot with
blocking denied, and blocked clients are served once, after the whole EXEC."""

from __future__ import annotations

from functools import partial
from typing import Any

from fakekey.commands.observability import log_command
from fakekey.core.client import Client
from fakekey.core.commandlog import LARGE_REPLY
from fakekey.core.registry import command, keys_range
from fakekey.resp.replies import NO_REPLY, NULL_ARRAY, OK, ReplyError

G = "transactions"
EXECABORT = ReplyError("EXECABORT Transaction discarded because of previous errors.")


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


@command("multi", 1, "noscript loading stale fast no_multi allow_busy", acl="transaction",
         group=G, since="1.2.0", summary="Starts a transaction: later commands are queued.")
def multi(c: Client, argv: list[bytes]) -> Any:
    c.in_multi = True
    c.has_multi_state = True  # CLIENT LIST multi= shows a count from now on
    c.multi_queue = []
    c.multi_error = False
    return OK


@command("discard", 1, "noscript loading stale fast allow_busy", acl="transaction", group=G,
         since="2.0.0", complexity="O(N), when N is the number of queued commands",
         summary="Drops the queued commands of a transaction.")
def discard(c: Client, argv: list[bytes]) -> Any:
    if not c.in_multi:
        raise ReplyError("ERR DISCARD without MULTI")
    end_transaction(c)
    return OK


def watched_key_expired(c: Client) -> bool:
    """A watched key that was alive when watched and has expired since aborts EXEC."""
    return any(not was_expired and db.is_expired(key) for (db, key), was_expired in c.watching.items())


@command("exec", 1, "noscript loading stale skip_commandlog", acl="transaction", group=G,
         since="1.2.0", complexity="Depends on commands in the transaction",
         summary="Runs the queued commands of a transaction.")
def exec_(c: Client, argv: list[bytes]) -> Any:
    if not c.in_multi:
        raise ReplyError("ERR EXEC without MULTI")
    if c.multi_error:
        end_transaction(c)
        raise EXECABORT
    if c.watch_dirty or watched_key_expired(c):
        end_transaction(c)
        return NULL_ARRAY
    queue = c.multi_queue
    end_transaction(c)
    return run_queued(c, queue, 0, [])


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


@command("watch", -2, "noscript loading stale fast no_multi allow_busy", acl="transaction",
         keys=keys_range(1, -1, flags="RO"), group=G, since="2.2.0",
         complexity="O(1) for every key.",
         summary="Watches keys: a change to any of them before EXEC aborts the transaction.")
def watch(c: Client, argv: list[bytes]) -> Any:
    c.has_multi_state = True  # CLIENT LIST multi= shows a count from now on
    db = c.db
    for key in argv[1:]:
        entry = (db, key)
        if entry in c.watching:
            continue
        c.watching[entry] = db.is_expired(key)
        db.watched.setdefault(key, set()).add(c)
    return OK


@command("unwatch", 1, "noscript loading stale fast allow_busy", acl="transaction", group=G,
         since="2.2.0", summary="Forgets every watched key of the connection.")
def unwatch(c: Client, argv: list[bytes]) -> Any:
    c.state.unwatch_all(c)
    return OK
