"""Server administration: TIME, DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, SHUTDOWN, LASTSAVE, SAVE,
BGSAVE, BGREWRITEAOF, WAIT, ROLE (DEBUG is in debug.py)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, parse_int
from fakekey.core.client import Client
from fakekey.core.keyspace import Database
from fakekey.core.registry import command
from fakekey.memory.lazyfree import lazy_setting, released_keys
from fakekey.resp.replies import NO_REPLY, OK, ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

G = "server"
log = logging.getLogger("fakekey.net.server")  # the server's log (fakekey-server writes it)


# --- time and size ------------------------------------------------------------------------


@command("time", 1, "loading stale fast", group=G, since="2.6.0",
         tips="nondeterministic_output", summary="Answers the server's clock as seconds and "
         "microseconds.")
def time_(c: Client, argv: list[bytes]) -> Any:
    us = snapshot_us(c.state)
    return [str(us // 1_000_000).encode(), str(us % 1_000_000).encode()]


def snapshot_us(state: ServerState) -> int:
    """The clock in microseconds, held to the command's snapshot (inside EXEC or a script
    the outer command's time)."""
    us = state.clock.now_us()
    return us if us // 1000 == state.now else state.now * 1000


@command("dbsize", 1, "readonly fast", acl="keyspace", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:agg_sum",
         summary="Counts the keys of the selected database.")
def dbsize(c: Client, argv: list[bytes]) -> Any:
    return len(c.db)


# --- flushing and swapping ----------------------------------------------------------------


def parse_flush_mode(c: Client, argv: list[bytes]) -> bool:
    """FLUSHDB/FLUSHALL [ASYNC|SYNC]: True for a flush Valkey runs in the background (ASYNC,
    or no mode with lazyfree-lazy-user-flush); anything else is a syntax error."""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() not in (b"ASYNC", b"SYNC")):
        raise SYNTAX
    if len(argv) == 2:
        return argv[1].upper() == b"ASYNC"
    return lazy_setting(c.state, "user-flush")


def flush_database(db: Database, lazy: bool) -> int:
    """Empty one database; watchers of its keys become dirty. Returns the keys removed."""
    removed = len(db)
    db.flush(lazy)
    return removed


@command("flushdb", -1, "write", acl="keyspace dangerous", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="O(N) where N is the number of keys in the selected database",
         summary="Deletes every key of the selected database.")
def flushdb(c: Client, argv: list[bytes]) -> Any:
    lazy = parse_flush_mode(c, argv)
    removed = flush_database(c.db, lazy)
    c.state.dirty += removed
    if c.state.tracking:  # every tracking client: all keys invalid (fakekey/core/tracking.py)
        c.state.tracking.flushed()
    if lazy:
        released_keys(c.state, removed)
    return OK


@command("flushall", -1, "write", acl="keyspace dangerous", group=G, since="1.0.0",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="O(N) where N is the total number of keys in all databases",
         summary="Deletes every key of every database.")
def flushall(c: Client, argv: list[bytes]) -> Any:
    lazy = parse_flush_mode(c, argv)
    removed = sum(flush_database(db, lazy) for db in c.state.dbs)
    c.state.dirty += removed
    if c.state.tracking:
        c.state.tracking.flushed()
    if c.state.persistence is not None:  # a save of the old data ends; a save rule saves
        c.state.persistence.flushed_all()
    if lazy:
        released_keys(c.state, removed)
    return OK


INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def parse_swap_index(raw: bytes, which: str) -> int:
    """A DB index as a C int (getIntFromObjectOrReply); the range is checked after both."""
    try:
        index = parse_int(raw)
    except ReplyError as err:
        err.__traceback__ = None  # a shared instance: its traceback would keep growing
        index = None
    if index is None or not INT_MIN <= index <= INT_MAX:
        raise ReplyError(f"ERR invalid {which} DB index")
    return index


def swap_databases(first: Database, second: Database) -> None:
    """Exchange the data of two databases. Watches and waiters stay with their index, so
    watchers of a key present on either side are dirtied, and waiters whose key now has
    data are served after the command (watchers are touched before, as Valkey's
    touchAllWatchedKeysInDb sees each side's data and what replaces it)."""
    first.touch_all_watchers(second)
    second.touch_all_watchers(first)
    for attr in ("data", "expires", "access", "numbers_as_text", "sampled_keys", "sampled_volatile",
                 "field_ttl_keys", "sampled_field_ttls"):
        one, other = getattr(first, attr), getattr(second, attr)
        setattr(first, attr, other)
        setattr(second, attr, one)
    for db in (first, second):
        for key in list(db.waiting):
            # a key past its deadline wakes nobody (and stays, as Valkey's
            # scanDatabaseForReadyKeys leaves it)
            if key in db.data and not db.is_expired(key):
                db.state.blocking.signal(db, key)


@command("swapdb", 3, "write fast", acl="keyspace dangerous", group=G, since="4.0.0",
         complexity="O(N) where N is the count of clients watching or blocking on keys "
         "from both databases.", summary="Exchanges the contents of two databases.")
def swapdb(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is not None:  # before its arguments are read, as Valkey
        raise ReplyError("ERR SWAPDB is not allowed in cluster mode")
    dbs = c.state.dbs
    first = parse_swap_index(argv[1], "first")
    second = parse_swap_index(argv[2], "second")
    if not (0 <= first < len(dbs) and 0 <= second < len(dbs)):
        raise ReplyError("ERR DB index is out of range")
    if first != second:
        swap_databases(dbs[first], dbs[second])
    c.state.dirty += 1  # even a database swapped with itself, as Valkey counts it
    return OK


# --- SHUTDOWN, persistence, replication -------------------------------------------------

_SHUTDOWN_FLAGS = {b"NOSAVE", b"SAVE", b"NOW", b"FORCE", b"ABORT"}


def parse_shutdown_flags(argv: list[bytes]) -> set[bytes]:
    flags = {arg.upper() for arg in argv[1:]}
    if len(flags) != len(argv) - 1 or not flags <= _SHUTDOWN_FLAGS:
        raise SYNTAX
    if {b"NOSAVE", b"SAVE"} <= flags or (b"ABORT" in flags and len(flags) > 1):
        raise SYNTAX
    return flags


@command("shutdown", -1, "admin noscript loading stale no_multi allow_busy", acl="dangerous",
         group=G, since="1.0.0", complexity="O(N) when saving, where N is the total number "
         "of keys in all databases when saving data, otherwise O(1)",
         summary="Stops the server, closing every connection.")
def shutdown(c: Client, argv: list[bytes]) -> Any:
    flags = parse_shutdown_flags(argv)
    if b"ABORT" in flags:
        # fakekey stops at once, so there is never a shutdown waiting to be aborted
        raise ReplyError("ERR No shutdown in progress.")
    log.info("User requested shutdown... (user request from 'id=%d addr=%s laddr=%s fd=%d "
             "name=*redacted* user=*redacted* lib-name= lib-ver=')", c.id, c.addr, c.laddr, c.fd)
    persistence = c.state.persistence
    if persistence is not None:
        save = True if b"SAVE" in flags else False if b"NOSAVE" in flags else None
        if not persistence.shutdown(save, force=b"FORCE" in flags):
            raise ReplyError("ERR Errors trying to SHUTDOWN. Check logs.")
    request_shutdown(c.state)
    c.close_after_reply = True
    return NO_REPLY


def request_shutdown(state: ServerState) -> None:
    """Resolve the server's shutdown future (the loop then stops every connection); with
    no serving loop behind the state, close the connections directly."""
    future = state.shutdown_requested
    if future is not None:
        if not future.done():
            future.set_result(None)
        return
    for client in list(state.clients.values()):
        if client.connection is not None:
            client.connection.close()


@command("lastsave", 1, "loading stale fast", acl="admin dangerous", group=G, since="1.0.0",
         tips="nondeterministic_output",
         summary="Answers the Unix time of the last successful save.")
def lastsave(c: Client, argv: list[bytes]) -> Any:
    return c.state.lastsave


def record_save(c: Client) -> None:
    """A save of a state that no server runs (no persistence): the bookkeeping moves on."""
    state = c.state
    state.lastsave = state.now // 1000
    state.dirty = 0
    state.stats["rdb_saves"] += 1


@command("save", 1, "admin noscript no_async_loading no_multi", acl="dangerous", group=G,
         since="1.0.0", complexity="O(N) where N is the total number of keys in all databases",
         summary="Saves the databases synchronously.")
def save(c: Client, argv: list[bytes]) -> Any:
    persistence = c.state.persistence
    if persistence is None:
        record_save(c)
        return OK
    if persistence.bgsave_in_progress():
        raise ReplyError("ERR Background save already in progress")
    if not persistence.save():
        raise ReplyError("ERR")
    return OK


@command("bgsave", -1, "admin noscript no_async_loading", acl="dangerous", group=G,
         since="1.0.0", summary="Saves the databases in the background.")
def bgsave(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() != b"SCHEDULE"):
        raise SYNTAX
    persistence = c.state.persistence
    if persistence is None:
        record_save(c)
        return Simple(b"Background saving started")
    if persistence.bgsave_in_progress():
        raise ReplyError("ERR Background save already in progress")
    if persistence.rewrite_in_progress():
        if len(argv) == 2:
            persistence.bgsave_scheduled = True
            return Simple(b"Background saving scheduled")
        raise ReplyError("ERR Another child process is active (AOF?): can't BGSAVE right now. "
                         "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
    persistence.start_bgsave()
    return Simple(b"Background saving started")


@command("bgrewriteaof", 1, "admin noscript no_async_loading", acl="dangerous", group=G,
         since="1.0.0", summary="Rewrites the append-only file in the background.")
def bgrewriteaof(c: Client, argv: list[bytes]) -> Any:
    persistence = c.state.persistence
    if persistence is None:
        return Simple(b"Background append only file rewriting started")
    if persistence.rewrite_in_progress():
        raise ReplyError("ERR Background append only file rewriting already in progress")
    if persistence.bgsave_in_progress() or c.state.deny_blocking:  # (deny_blocking: in EXEC)
        persistence.rewrite_scheduled = True  # the cron starts it, as Valkey's
        return Simple(b"Background append only file rewriting scheduled")
    persistence.start_rewrite()
    return Simple(b"Background append only file rewriting started")


@command("wait", 3, "blocking", acl="connection", group="generic", since="3.0.0",
         tips="request_policy:all_shards response_policy:agg_min",
         summary="Waits for replicas to acknowledge the connection's writes.")
def wait(c: Client, argv: list[bytes]) -> Any:
    parse_int(argv[1])
    try:
        timeout = parse_int(argv[2])
    except ReplyError as err:
        err.__traceback__ = None  # a shared instance: its traceback would keep growing
        raise ReplyError("ERR timeout is not an integer or out of range") from None
    if timeout < 0:
        raise ReplyError("ERR timeout is negative")
    if c.state.replica_of is not None or c.state.upstream is not None:
        raise ReplyError("ERR WAIT cannot be used with replica instances. Please also note "
                         "that since Redis 4.0 if a replica is configured to be writable "
                         "(which is not the default) writes to replicas are just local and "
                         "are not propagated.")
    # an in-process replica applies each write as its command ends: every reachable one
    # has acknowledged already; real replicas (or none) are waited for, as Valkey does
    in_process = len(c.state.replicas())
    primary = c.state.repl_primary
    if in_process and (primary is None or not primary.links):
        return in_process
    from fakekey.commands.replication import wait_for_replicas  # real replicas, or none: Valkey's wait

    return wait_for_replicas(c, argv, parse_int(argv[1]) - in_process, timeout, in_process)


@command("role", 1, "noscript loading stale fast", acl="admin dangerous", group=G,
         since="2.8.12", summary="Answers the replication role.")
def role(c: Client, argv: list[bytes]) -> Any:
    state = c.state
    if state.upstream is not None:  # a replica of a real primary (core/upstream.py)
        return state.upstream.role_reply(state)
    primary = state.replica_of
    if primary is not None:
        host, port = replication_address(primary)
        return [b"slave", host.encode(), port, b"connected", state.repl_offset]
    replicas = []
    for replica in state.replicas():
        host, port = replication_address(replica)
        replicas.append([host.encode(), b"%d" % port, b"%d" % replica.repl_offset])
    if state.repl_primary is not None:  # real replicas (persistence/replication_primary.py)
        replicas += state.repl_primary.role_entries()
    return [b"master", state.repl_offset, replicas]


def replication_address(state: ServerState) -> tuple[str, int]:
    """Where a server of this process listens, as its replication peers name it."""
    view = state.cluster
    host = view.myself.host if view is not None and view.myself.host else "127.0.0.1"
    return host, state.config["port"]
