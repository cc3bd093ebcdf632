"""Replication commands as a lone primary answers them: REPLICAOF/SLAVEOF, REPLCONF,
SYNC/PSYNC, FAILOVER and WAITAOF (the cluster commands are in commands/cluster.py).

`REPLICAOF host port` makes the server a replica of a real primary (the link:
fakekey/net/replica_link.py; what the core knows of it: core/upstream.py); SYNC/PSYNC make
the connection a replica of this server: the data set as Valkey's RDB file (or the
backlog, for a partial resync), then the replication stream
(persistence/replication_primary.py); FAILOVER hands the primary role to one of those
replicas (persistence/failover.py). In cluster mode REPLICAOF and FAILOVER are refused, as
Valkey refuses them there."""

from __future__ import annotations

import logging
import os
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, try_int
from fakekey.core.client import Client
from fakekey.core.registry import command
from fakekey.persistence.failover import Failover, failover_of
from fakekey.persistence.replication_primary import replication_primary
from fakekey.resp.replies import NO_REPLY, OK, Raw, ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

REPL_ADMIN = "admin noscript"
IN_CLUSTER = ReplyError("ERR REPLICAOF not allowed in cluster mode.")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
log = logging.getLogger("fakekey.net.server")


def _int(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise NOT_INTEGER
    return value


# --- REPLICAOF / SLAVEOF -------------------------------------------------------------------


def replica_of(c: Client, argv: list[bytes]) -> Any:
    """REPLICAOF host port: follow that primary over the network (net/replica_link.py);
    NO ONE: a replica becomes a primary, its data kept. Cluster mode refuses both: a node
    replicates by CLUSTER REPLICATE."""
    state = c.state
    if state.cluster is not None:
        raise IN_CLUSTER
    if failover_of(state) is not None:
        raise ReplyError("ERR REPLICAOF not allowed while failing over.")
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        if state.upstream is not None:
            promote(state)
            log.info("PRIMARY MODE enabled (user request)")
        return OK
    port = try_int(argv[2])
    if port is None or not 0 <= port <= 65535:
        raise ReplyError("ERR Invalid master port")
    host = argv[1].decode("utf-8", "surrogateescape")
    upstream = state.upstream
    if upstream is not None and upstream.same_primary(host, port):
        log.info("REPLICAOF would result into synchronization with the primary we are already "
                 "connected with. No operation performed.")
        return ALREADY_CONNECTED
    follow(state, host, port)
    log.info("REPLICAOF %s:%d enabled (user request)", host, port)
    return OK


ALREADY_CONNECTED = Simple(b"OK Already connected to specified master")


def follow(state: ServerState, host: str, port: int, at_startup: bool = False) -> None:
    """Become (or stay) a replica, of host:port now. A server that was a primary, or
    followed one, asks the new primary for a partial resync with its own replication id
    and offset (Valkey's cached primary); one configured as a replica at start-up asks
    for a full one."""
    if state.connect_upstream is None:
        raise ReplyError("ERR fakekey follows a primary only as a running server")
    old = state.upstream
    cached = (not at_startup) if old is None else old.cached
    unblock_all(state)
    if old is not None:
        old.stop()
    tracked = old.own_volatile if old is not None else take_own_volatile(state)
    state.upstream = state.connect_upstream(host, port, cached)
    state.upstream.own_volatile = tracked  # Valkey's replicaKeysWithExpire outlives roles
    if old is not None and old.linked:  # the link to the old primary went down just now
        state.upstream.down_since = int(time.time())
    state.config.values["replicaof"] = f"{host} {port}"  # CONFIG GET shows the primary


def take_own_volatile(state: ServerState) -> dict[bytes, int]:
    """A primary's leftover keys of its time as a writable replica (promote)."""
    primary = state.repl_primary
    if primary is None:
        return {}
    tracked, primary.own_volatile = primary.own_volatile, {}
    return tracked


UNBLOCKED = ReplyError("UNBLOCKED force unblock from blocking operation, instance state "
                       "changed (master -> replica?)")


def unblock_all(state: ServerState) -> None:
    """Clients blocked on keys (or WAITAOF) are answered an error as the server becomes a
    replica: what they wait for may never come (Valkey's disconnectAllBlockedClients)."""
    for client in list(state.clients.values()):
        if client.blocked is not None:
            state.blocking.unblock(client, UNBLOCKED)


def promote(state: ServerState) -> None:
    """REPLICAOF NO ONE on a replica: the link ends, the data stays; the replication id
    so far becomes the second one, valid up to the offset reached (Valkey's
    shiftReplicationId), and a new one starts."""
    upstream = state.upstream
    assert upstream is not None
    upstream.stop()
    state.upstream = None
    state.config.values["replicaof"] = ""
    if upstream.own_volatile:  # still tracked as a primary, as Valkey's
        replication_primary(state).keep_own_volatile(upstream.own_volatile)
    state.replid2, state.second_repl_offset = state.replid, state.repl_offset + 1
    state.replid = os.urandom(20).hex()
    log.info("Setting secondary replication ID to %s, valid up to offset: %d. New replication "
             "ID is %s", state.replid2, state.second_repl_offset, state.replid)


command("replicaof", 3, REPL_ADMIN + " stale no_async_loading", acl="dangerous", group="server",
        since="5.0.0", summary="Makes the server a replica of another, or a primary again "
        "(NO ONE).")(replica_of)
command("slaveof", 3, REPL_ADMIN + " stale no_async_loading", acl="dangerous", group="server",
        since="1.0.0", doc_flags="deprecated",
        summary="Makes the server a replica of another, or a primary again (NO ONE).")(replica_of)


# --- REPLCONF --------------------------------------------------------------------------------

REPLCONF_ACCEPTED = frozenset({b"ip-address", b"capa"})


@command("replconf", -1, REPL_ADMIN + " loading stale allow_busy", acl="dangerous", group="server",
         since="3.0.0", doc_flags="syscmd",
         summary="Replication handshake settings a replica sends its primary.")
def replconf(c: Client, argv: list[bytes]) -> Any:
    if len(argv) % 2 == 0:
        raise SYNTAX
    for i in range(1, len(argv), 2):
        option, value = argv[i].lower(), argv[i + 1]
        if option == b"ack":
            acknowledged(c, value)
            return NO_REPLY  # a replica's acknowledgement is never answered
        if option == b"getack":
            return NO_REPLY  # from a primary to its replica: a client gets no answer
        if option == b"listening-port":
            port = _int(value)
            replication_primary(c.state).handshake(c).port = port
        elif option == b"ip-address":
            replication_primary(c.state).handshake(c).ip = value.decode("utf-8", "replace")
        elif option == b"capa":
            replication_primary(c.state).handshake(c).capa.add(value.lower())
        elif option == b"rdb-only":
            check_flag(value)
            c.rdb_only = value == b"1"  # SYNC closes the connection after the snapshot
        elif option == b"rdb-filter-only":
            check_rdb_filter(value)
        elif option == b"version":
            check_version(value)
        elif option not in REPLCONF_ACCEPTED:
            raise ReplyError(b"ERR Unrecognized REPLCONF option: " + argv[i])
    return OK


def acknowledged(c: Client, value: bytes) -> None:
    """REPLCONF ACK offset [FACK aofoffset]: how far a replica has processed the stream."""
    primary = c.state.repl_primary
    offset = try_int(value)
    if primary is not None and offset is not None:
        primary.acked(c, offset)


def check_flag(value: bytes) -> None:
    if not 0 <= _int(value) <= 1:
        raise ReplyError("ERR value is out of range, value must between 0 and 1")


def check_rdb_filter(value: bytes) -> None:
    for word in value.split():
        if word.lower() != b"functions":
            raise ReplyError(b"ERR Unsupported rdb-filter-only option: " + word)


def check_version(value: bytes) -> None:
    parts = value.split(b".")
    if len(parts) != 3 or not all(p.isdigit() and len(p) <= 3 for p in parts):
        raise ReplyError(b"ERR Unrecognized version format: " + value)


# --- SYNC / PSYNC -----------------------------------------------------------------------------
# The connection becomes a replica (persistence/replication_primary.py): `+CONTINUE` and the
# backlog from its offset when the backlog holds it, else `+FULLRESYNC replid offset` (PSYNC)
# and the data set as Valkey's RDB file (one bulk, or the `$EOF:` form for a replica with
# `capa eof`), then the replication stream. A connection that said REPLCONF rdb-only 1 gets
# the file alone and is closed, as Valkey's.

PENDING_OUTPUT = ReplyError("ERR SYNC and PSYNC are invalid with pending output")


@command("sync", 1, REPL_ADMIN + " no_async_loading no_multi", acl="dangerous", group="server",
         since="1.0.0", complexity="", summary="Asks for the data set, as a replica does: "
         "answered with an RDB snapshot, then the replication stream.")
def sync(c: Client, argv: list[bytes]) -> Any:
    return full_sync(c, psync=False)


@command("psync", -3, REPL_ADMIN + " no_async_loading no_multi", acl="dangerous", group="server",
         since="2.8.0", complexity="", summary="Asks for a partial or full resynchronization, as "
         "a replica does: the missing part of the stream, or a snapshot and the stream.")
def psync(c: Client, argv: list[bytes]) -> Any:
    offset = _int(argv[2])
    state = c.state
    primary = state.repl_primary
    if primary is not None and primary.is_replica(c):
        return NO_REPLY  # already a replica: Valkey ignores it
    if len(argv) > 3 and argv[3].lower() == b"failover":
        take_over(c, argv[1])
    if failover_of(state) is not None:
        raise ReplyError("NOMASTERLINK Can't SYNC while failing over")
    primary = state.repl_primary
    if argv[1] != b"?" and not c.rdb_only:
        if primary is not None and primary.can_continue(argv[1], offset):
            refuse_pending_output(c)
            return Raw(primary.continue_sync(c, offset))
        state.stats["sync_partial_err"] += 1
    return full_sync(c, psync=True)


def take_over(c: Client, replid: bytes) -> None:
    """`PSYNC replid offset FAILOVER` from this replica's primary, failing over to it:
    this server becomes the primary when the replication ids match."""
    state = c.state
    log.info("Failover request received for replid %s.", replid.decode("utf-8", "replace"))
    if state.upstream is None:
        raise ReplyError("ERR PSYNC FAILOVER can't be sent to a master.")
    if replid.decode("latin-1").lower() != state.replid.lower():
        raise ReplyError("ERR PSYNC FAILOVER replid must match my replid.")
    promote(state)
    # the old primary's PSYNC continues from here (Valkey's replica has its backlog already)
    replication_primary(state).ensure_backlog()
    log.info("PRIMARY MODE enabled (failover request from 'id=%d addr=%s laddr=%s fd=%d "
             "name=*redacted* user=*redacted* lib-name= lib-ver=')", c.id, c.addr, c.laddr, c.fd)


def refuse_pending_output(c: Client) -> None:
    connection = c.connection
    if connection is not None and connection.out:  # replies of this batch still to go
        raise PENDING_OUTPUT


def full_sync(c: Client, psync: bool) -> Any:
    refuse_pending_output(c)
    state = c.state
    state.stats["sync_full"] += 1
    primary = replication_primary(state)
    if c.rdb_only or c.connection is None:  # the snapshot alone, the connection closed
        c.close_after_reply = c.rdb_only
        preamble = b"+FULLRESYNC %s %d\r\n" % (state.replid.encode(), state.repl_offset) if psync else b""
        snapshot = primary.rdb(state)
        return Raw(preamble + b"$%d\r\n" % len(snapshot) + snapshot)
    answer = primary.full_sync(c, psync)
    return NO_REPLY if answer is None else Raw(answer)


# --- WAIT ------------------------------------------------------------------------------------


def wait_for_replicas(c: Client, argv: list[bytes], numreplicas: int, timeout: int, base: int) -> Any:
    """WAIT with real replicas: the count that acknowledged the client's last write now,
    or (blocking) once `numreplicas` have, or at the timeout (0: none) what it is then.
    `base`: the in-process replicas, which have all acknowledged already."""
    state = c.state
    primary = replication_primary(state)
    acked = primary.acks_at(primary.write_offset(c))
    if acked >= numreplicas or state.deny_blocking:
        return base + acked
    cmd = c.cmd
    assert cmd is not None  # the command running now
    deadline = state.now + timeout if timeout else 0
    state.blocking.block(c, [], deadline, cmd, argv, base + acked)
    primary.wait(c, numreplicas, base)
    return NO_REPLY


# --- FAILOVER --------------------------------------------------------------------------------


@command("failover", -1, "admin noscript stale", acl="dangerous", group="server", since="6.2.0",
         summary="Hands the primary role to a replica once it has caught up.")
def failover(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is not None:
        raise ReplyError("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
    state = c.state
    if len(argv) == 2 and argv[1].lower() == b"abort":
        running = failover_of(state)
        if running is None:
            raise ReplyError("ERR No failover in progress.")
        running.abort("Failover manually aborted")
        return OK
    target, timeout, force = failover_arguments(argv)
    if failover_of(state) is not None:
        raise ReplyError("ERR FAILOVER already in progress.")
    if state.upstream is not None:
        raise ReplyError("ERR FAILOVER is not valid when server is a replica.")
    primary = state.repl_primary
    if primary is None or not primary.links:
        raise ReplyError("ERR FAILOVER requires connected replicas.")
    if force and (not timeout or target is None):
        raise ReplyError("ERR FAILOVER with force option requires both a timeout and target HOST and IP.")
    if target is not None:
        link = next((link for link in primary.links.values()
                     if link.ip.lower() == target[0].lower() and link.port == target[1]), None)
        if link is None:
            raise ReplyError("ERR FAILOVER target HOST and PORT is not a replica.")
        if link.state != "online":
            raise ReplyError("ERR FAILOVER target replica is not online.")
        log.info("FAILOVER requested to %s:%d.", *target)
    else:
        log.info("FAILOVER requested to any replica.")
    Failover(state, primary, target, timeout, force, partial(follow, state),
             partial(promote, state)).start()
    return OK


def failover_arguments(argv: list[bytes]) -> tuple[tuple[str, int] | None, int, bool]:
    """FAILOVER's [TO host port] [TIMEOUT ms] [FORCE], each once, in any order."""
    target: tuple[str, int] | None = None
    timeout, force = 0, False
    i = 1
    while i < len(argv):
        word = argv[i].lower()
        if word == b"timeout" and i + 1 < len(argv) and not timeout:
            timeout = _int(argv[i + 1])
            if timeout <= 0:
                raise ReplyError("ERR FAILOVER timeout must be greater than 0")
            i += 1
        elif word == b"to" and i + 2 < len(argv) and target is None:
            target = (argv[i + 1].decode("utf-8", "surrogateescape"), _int(argv[i + 2]))
            i += 2
        elif word == b"force" and not force:
            force = True
        else:
            raise SYNTAX
        i += 1
    return target, timeout, force


# --- WAITAOF ---------------------------------------------------------------------------------


@command("waitaof", 4, "blocking", acl="connection", group="generic", since="7.2.0",
         tips="request_policy:all_shards response_policy:agg_min",
         complexity="O(1)", summary="Waits until the connection's writes are in the local "
         "append-only file and acknowledged by replicas (a lone primary has none).")
def waitaof(c: Client, argv: list[bytes]) -> Any:
    numlocal = _int(argv[1])
    if not 0 <= numlocal <= 1:
        raise ReplyError("ERR value is out of range, value must between 0 and 1")
    numreplicas = _int(argv[2])
    if numreplicas < 0:
        raise ReplyError("ERR value is out of range, must be positive")
    timeout = try_int(argv[3])
    if timeout is None:
        raise ReplyError("ERR timeout is not an integer or out of range")
    if timeout < 0:
        raise ReplyError("ERR timeout is negative")
    state = c.state
    if numlocal and state.aof is None:
        raise ReplyError("ERR WAITAOF cannot be used when numlocal is set but appendonly is "
                         "disabled.")
    local = 0
    if state.aof is not None:
        state.aof.flush(True)  # the connection's writes are on disk: acknowledged locally
        local = 1
    reply = [local, 0]
    if numreplicas == 0 or state.deny_blocking:
        return reply
    # no replica will ever acknowledge: wait for the timeout (0: forever), as Valkey
    deadline = state.now + timeout if timeout else 0
    cmd = c.cmd
    assert cmd is not None  # the command running now
    state.blocking.block(c, [], deadline, cmd, argv, reply)
    return NO_REPLY
