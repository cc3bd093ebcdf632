"""Valkey's propagation form: what Valkey 9.1.2 sends its replicas (and writes to its AOF)
for each change, as commands.

`Propagation` wraps every command (it is `state.feed` while a consumer exists) and turns
each execution unit (a command, EXEC, a script, an active expiry) into a list of
operations `(db, argv)`, handed to its subscribers as one unit. Each subscriber encodes a
unit with its own SELECT state (`StreamEncoder`): the replication primary
(persistence/replication_primary.py) now, the append-only file later.

How a command is propagated, as Valkey does it:

- verbatim (its argv as sent) when it changed data (the dirty counter moved);
- rewritten where Valkey rewrites it (persistence/rewrites.py): relative expiries become
  absolute (`SET ... PXAT`, `PEXPIREAT`, `HPEXPIREAT`), INCRBYFLOAT a SET, SPOP an SREM,
  a blocking pop its non-blocking form, `XADD *` its ID, XREADGROUP its `XCLAIM`s and
  `XGROUP SETID`, GEOADD a ZADD, MIGRATE a DEL...;
- by effect where it cannot be replayed exactly (the EMQ.* verbs, which a real Valkey
  does not know): each key the command changed, as `RESTORE key deadline
  payload REPLACE ABSTTL` or `DEL key`, read from the write funnel's journal
  (`state.journal`, kept only while a Propagation exists) right after the command ran,
  so the effects keep their order with the rest of the unit;
- a command that runs others (EXEC, EVAL, FCALL) is what they ran; a unit of more than one
  operation is wrapped in MULTI/EXEC;
- an expired key is `UNLINK` or `DEL` (lazyfree-lazy-expire), an evicted one too
  (lazyfree-lazy-eviction), where it happened in the unit.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from fakekey.persistence import rdb
from fakekey.persistence.rewrites import PEEKED, REWRITES, UNCOUNTED, peek
from fakekey.resp.replies import NO_REPLY, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState
    from fakekey.persistence.aof import Recorder

log = logging.getLogger("fakekey.net.server")

Op = tuple[int, list[bytes]]  # (database, argv); database -1: no SELECT before it

# commands that change the counters but not the data
NOT_PROPAGATED = frozenset({"save", "bgsave", "bgrewriteaof", "shutdown", "debug"})
# propagated whenever they succeed, changes or not (Valkey's forceCommandPropagation)
FORCED = frozenset({"flushdb", "flushall", "publish", "spublish", "function|load",
                    "function|delete", "function|flush", "function|restore"})
ASKED = FORCED | UNCOUNTED  # the commands whose propagation is asked even when nothing counted
# commands that may touch any key (Valkey's hidden TOUCHES_ARBITRARY_KEYS flag): run on
# their own, their unit is not a transaction (its lazy expiries go out one by one)
TOUCHES_ARBITRARY_KEYS = frozenset({"scan", "randomkey"})
MULTI: list[bytes] = [b"MULTI"]
EXEC: list[bytes] = [b"EXEC"]


class ReplicaOnly(list):  # type: ignore[type-arg]
    """An operation for replicas only, not the AOF (PUBLISH, as Valkey forces it)."""


class Subscriber(Protocol):
    def propagate(self, ops: list[Op]) -> None: ...


# --- encoding ----------------------------------------------------------------------------------


def encode_command(argv: list[bytes]) -> bytes:
    out = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)


class StreamEncoder:
    """One consumer's view of the stream: the database its reader has selected."""

    def __init__(self, replica: bool = True) -> None:
        self.db = -1  # nothing selected yet: the first command says SELECT
        self.replica = replica  # a replica's stream (with ReplicaOnly operations), or the AOF's

    def encode(self, ops: list[Op]) -> bytes:
        out: list[bytes] = []
        wrap = len(ops) > 1  # counted before the AOF leaves out what is for replicas only
        if wrap:
            out.append(encode_command(MULTI))
        for db, argv in ops:
            if not self.replica and type(argv) is ReplicaOnly:
                continue
            if db >= 0 and db != self.db:
                out.append(encode_command([b"SELECT", b"%d" % db]))
                self.db = db
            out.append(encode_command(argv))
        if wrap:
            out.append(encode_command(EXEC))
        return b"".join(out)


# --- the propagation -----------------------------------------------------------------------------


class Propagation:
    """`state.feed` while someone consumes Valkey's form. It wraps the fakekey-form
    recorder that was there (the in-process replicas' feed), or the log, or nothing."""

    def __init__(self, state: ServerState, inner: Recorder | None) -> None:
        self.state = state
        self.inner = inner
        self.subscribers: list[Subscriber] = []
        self.ops: list[Op] = []  # the running unit's operations
        self.depth = 0
        self.calls = 0  # commands run so far: a command that ran others is no leaf
        self.evictions_seen = 0
        self.expiry_dirt = 0  # changes made by fields' expiry, not by the commands that ran

    # --- subscribing ------------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber) -> None:
        if subscriber not in self.subscribers:
            self.subscribers.append(subscriber)

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber in self.subscribers:
            self.subscribers.remove(subscriber)

    # --- what the server calls --------------------------------------------------------

    def followers(self) -> list[Any]:
        return [] if self.inner is None else self.inner.followers()

    def catch_up(self) -> None:
        if self.inner is not None and hasattr(self.inner, "catch_up"):
            self.inner.catch_up()

    def run(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        state = self.state
        journal = state.journal
        if journal is None:  # switched off while a unit ran
            return self._inner_run(client, cmd, argv)
        if not self.depth:
            journal.clear()  # what the funnel saw outside any command (an eviction) is no one's
        mark = len(journal)
        ops_mark = len(self.ops)
        before = state.dirty
        expiry_before = self.expiry_dirt
        seen = peek(client, cmd.name, argv)  # what a rewrite needs to know from before it ran
        self.calls += 1
        calls = self.calls
        self.depth += 1
        reply: Any = NO_REPLY  # what a handler that raised leaves: nothing to propagate
        broke = False
        try:
            reply = self._inner_run(client, cmd, argv)
            return reply
        except ReplyError:
            raise
        except Exception:
            broke = True
            raise
        finally:
            self.depth -= 1
            leaf = self.calls == calls
            # what the command changed, not the fields that expired as it looked (HGET)
            changed = state.dirty - before - (self.expiry_dirt - expiry_before) > 0
            if broke and leaf and changed:  # a handler that broke half way
                self.ops.extend(by_effect(state, journal[mark:]))
            elif leaf and (changed or cmd.name in ASKED) and cmd.name not in NOT_PROPAGATED \
                    and reply is not NO_REPLY and type(reply) is not ReplyError:
                ops = self._ops_of(client, cmd, argv, reply, journal[mark:], seen)
                self.ops.extend(not_yet_removed(ops, self.ops[ops_mark:]))
            if not self.depth:
                self._close_unit(one_by_one=cmd.name in TOUCHES_ARBITRARY_KEYS)

    def _inner_run(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        if self.inner is not None:
            return self.inner.run(client, cmd, argv)
        aof = self.state.aof
        return cmd.handler(client, argv) if aof is None else aof.run(client, cmd, argv)

    def fields_expired(self, db: int, key: bytes, fields: list[bytes], dirtied: int,
                       emptied: bool) -> None:
        """Fields of a hash expired (a command touched it, or the cron's step): HDEL of
        them, and the hash's removal when that emptied it, as Valkey propagates them; the
        changes they made are not the running command's."""
        self.ops.append((db, [b"HDEL", key, *fields]))
        if emptied:
            lazy = self.state.config["lazyfree-lazy-expire"]
            self.ops.append((db, [b"UNLINK" if lazy else b"DEL", key]))
        self.expiry_dirt += dirtied
        if not self.depth:
            self._close_unit()

    def expired(self, db: int, key: bytes) -> None:
        """A key expired or was evicted: its removal, where it happened in the unit."""
        state = self.state
        evicted = state.stats["evicted_keys"] != self.evictions_seen
        self.evictions_seen = state.stats["evicted_keys"]
        lazy = state.config["lazyfree-lazy-eviction" if evicted else "lazyfree-lazy-expire"]
        self.ops.append((db, [b"UNLINK" if lazy else b"DEL", key]))
        if self.inner is not None:
            self.inner.expired(db, key)
        elif state.aof is not None:
            state.aof.expired(db, key)
        if not self.depth:
            self._close_unit()

    def _close_unit(self, one_by_one: bool = False) -> None:
        """Hand the unit to the subscribers (`one_by_one`: each operation as a unit of
        its own, as Valkey's propagatePendingCommands without a transaction)."""
        ops, self.ops = self.ops, []
        if self.state.journal is not None:
            self.state.journal.clear()
        if ops:
            units = [[op] for op in ops] if one_by_one else [ops]
            for subscriber in list(self.subscribers):
                for unit in units:
                    subscriber.propagate(unit)

    # --- one command's operations -----------------------------------------------------------

    def _ops_of(self, client: Any, cmd: Any, argv: list[bytes], reply: Any,
                changed: list[tuple[int, bytes]], seen: Any = None) -> list[Op]:
        try:
            return self._rewritten(client, cmd, argv, reply, changed, seen)
        except Exception:  # noqa: BLE001 - a rewrite that cannot read its reply: the effect
            log.exception("propagating %r by its effect", cmd.name)
            keys = changed + [(client.db.index, argv[pos]) for pos in cmd.key_positions(argv)]
            return by_effect(self.state, keys)

    def _rewritten(self, client: Any, cmd: Any, argv: list[bytes], reply: Any,
                   changed: list[tuple[int, bytes]], seen: Any = None) -> list[Op]:
        db = client.db.index
        name = cmd.name
        if cmd.module:  # EMQ.*: the keys the funnel saw, and the command's own
            keys = changed + [(db, argv[pos]) for pos in cmd.key_positions(argv)]
            return by_effect(self.state, keys)
        if name in ("publish", "spublish"):
            return [(db, ReplicaOnly(argv))]
        looked = PEEKED.get(name)
        if looked is not None:
            return [(db, out) for out in looked[1](client, argv, reply, seen)]
        rewrite = REWRITES.get(name)
        if rewrite is None:
            return [(db, argv)]
        return [(db, out) for out in rewrite(client, argv, reply)]


REMOVALS = frozenset({b"DEL", b"UNLINK"})


def not_yet_removed(ops: list[Op], earlier: list[Op]) -> list[Op]:
    """A command that deleted a key as expired (EXPIRE with a past time) has had the
    removal propagated already, where the funnel expired it: not twice."""
    if not earlier:
        return ops
    removed = {(db, argv[1]) for db, argv in earlier if argv[0] in REMOVALS}
    return [op for op in ops if not (op[1][0] in REMOVALS and len(op[1]) == 2
                                     and (op[0], op[1][1]) in removed)]


def by_effect(state: ServerState, changed: list[tuple[int, bytes]]) -> list[Op]:
    """Each changed key as it is now: RESTORE ... REPLACE ABSTTL, or DEL."""
    ops: list[Op] = []
    limits = rdb.Limits.of(state.config)
    for db_index, key in dict.fromkeys(changed):
        db = state.dbs[db_index]
        value = db.data.get(key)
        if value is None:
            ops.append((db_index, [b"DEL", key]))
            continue
        deadline = db.expires.get(key, 0)
        payload = rdb.dump(value if type(value) is not bytearray else bytes(value), limits)
        ops.append((db_index, [b"RESTORE", key, b"%d" % deadline, payload, b"REPLACE",
                               b"ABSTTL"]))
    return ops


# --- switching it on and off ---------------------------------------------------------------------


def propagation(state: ServerState) -> Propagation:
    """The server's Propagation, installed as its feed (the journal on) if it was not."""
    feed = state.feed
    if isinstance(feed, Propagation):
        return feed
    prop = Propagation(state, feed)
    prop.evictions_seen = state.stats["evicted_keys"]
    state.feed = prop  # type: ignore[assignment]
    state.journal = []
    return prop


def stop_propagation(state: ServerState, subscriber: Subscriber) -> None:
    """`subscriber` leaves; with no subscriber left, the server runs as before."""
    feed = state.feed
    if not isinstance(feed, Propagation):
        return
    feed.unsubscribe(subscriber)
    if not feed.subscribers and not feed.depth:
        state.feed = feed.inner
        state.journal = None
