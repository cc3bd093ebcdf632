"""Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.

Queueing happens in `ServerState.call`; EXEC runs the queue under one clock snapshot with
blocking denied, and blocked clients are served once, after the whole EXEC."""

from __future__ import annotations

from typing import Any

from fakekey.core.client import Client
from fakekey.core.registry import command, keys_range
from fakekey.core.transactions import end_transaction, run_queued, watched_key_expired
from fakekey.resp.replies import NO_REPLY, NULL_ARRAY, OK, ReplyError

G = "transactions"
EXECABORT = ReplyError("EXECABORT Transaction discarded because of previous errors.")
FREE_LATER_AT = 1024  # queued commands


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
    wire: list[bytes] = []
    reply = run_queued(c, queue, 0, wire)
    if reply is not NO_REPLY and len(queue) > FREE_LATER_AT:
        # a long queue's requests, and its replies' pieces, are freed in slices after the
        # reply, not inside EXEC (a million of them take 0.1 s to free); a BUSY script's
        # resume still needs them
        c.state.reclaimer.hand(queue, 0, wire)
    return reply


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
