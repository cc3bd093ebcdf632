"""Replication commands as a lone primary answers them: REPLICAOF/SLAVEOF, REPLCONF,
SYNC/PSYNC, FAILOVER and WAITAOF (the cluster commands are in commands/cluster.py).

fakekey keeps no replication link: `REPLICAOF host port` (after Valkey's checks) is
refused with an error that says so, where Valkey would start replicating; SYNC/PSYNC send
the data set as Valkey's RDB file, but no replication stream after it
(docs/differences.md). In cluster mode REPLICAOF and FAILOVER are refused, as Valkey
refuses them there."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, try_int
from fakekey.core.client import Client
from fakekey.core.registry import command
from fakekey.persistence import rdb
from fakekey.resp.replies import NO_REPLY, OK, Raw, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

REPL_ADMIN = "admin noscript"
IN_CLUSTER = ReplyError("ERR REPLICAOF not allowed in cluster mode.")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
NO_REPLICATION = ReplyError("ERR fakekey does not replicate: it cannot become a replica")


def _int(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise NOT_INTEGER
    return value


# --- REPLICAOF / SLAVEOF -------------------------------------------------------------------


def replica_of(c: Client, argv: list[bytes]) -> Any:
    """NO ONE: a primary stays one. A host and port: Valkey's port check, then refused.
    Cluster mode refuses both: a node replicates by CLUSTER REPLICATE."""
    if c.state.cluster is not None:
        raise IN_CLUSTER
    if argv[1].lower() == b"no" and argv[2].lower() == b"one":
        return OK
    port = try_int(argv[2])
    if port is None or not 0 <= port <= 65535:
        raise ReplyError("ERR Invalid master port")
    raise NO_REPLICATION


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
        if option in (b"ack", b"getack"):
            return NO_REPLY  # for a replica or from a primary: a client gets no answer
        if option == b"listening-port":
            _int(value)
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
# A full synchronization as Valkey starts it for a replica without the EOF capability: the
# data set as an RDB file in one bulk (`$len` then the bytes, no CRLF), after
# `+FULLRESYNC replid offset` for PSYNC. fakekey sends no replication stream after it;
# a connection that said REPLCONF rdb-only 1 is closed once the file is sent, as Valkey's.

PENDING_OUTPUT = ReplyError("ERR SYNC and PSYNC are invalid with pending output")


@command("sync", 1, REPL_ADMIN + " no_async_loading no_multi", acl="dangerous", group="server",
         since="1.0.0", complexity="", summary="Asks for the data set, as a replica does: "
         "answered with an RDB snapshot.")
def sync(c: Client, argv: list[bytes]) -> Any:
    return full_sync(c, b"")


@command("psync", -3, REPL_ADMIN + " no_async_loading no_multi", acl="dangerous", group="server",
         since="2.8.0", complexity="", summary="Asks for a partial or full resynchronization, as "
         "a replica does: answered with a full one (an RDB snapshot).")
def psync(c: Client, argv: list[bytes]) -> Any:
    _int(argv[2])
    if argv[1] != b"?":  # a partial resync asked for: fakekey keeps no backlog to give
        c.state.stats["sync_partial_err"] += 1
    return full_sync(c, b"+FULLRESYNC " + c.state.replid.encode() + b" 0\r\n")


def full_sync(c: Client, preamble: bytes) -> Any:
    connection = c.connection
    if connection is not None and connection.out:  # replies of this batch still to go
        raise PENDING_OUTPUT
    snapshot = rdb_snapshot(c.state)
    c.state.stats["sync_full"] += 1
    if c.rdb_only:
        c.close_after_reply = True
    return Raw(preamble + b"$%d\r\n" % len(snapshot) + snapshot)


def rdb_snapshot(state: ServerState) -> bytes:
    """The data set as Valkey's RDB file (version 80): aux fields, each database with
    its sizes, keys with their deadlines, then EOF and the CRC64."""
    limits = rdb.Limits.of(state.config)
    out = bytearray(b"VALKEY%03d" % rdb.RDB_VERSION)
    aux = {b"valkey-ver": state.valkey_version.encode(), b"redis-bits": b"64",
           b"ctime": b"%d" % (state.now // 1000), b"used-mem": b"%d" % used_memory(state),
           b"repl-stream-db": b"0", b"repl-id": state.replid.encode(), b"repl-offset": b"0",
           b"aof-base": b"0"}
    for name, value in aux.items():
        out += b"\xfa" + rdb_string(name, limits) + rdb_string(value, limits)
    for db in state.dbs:
        if not db.data:
            continue
        out += b"\xfe" + rdb_length(db.index)
        out += b"\xfb" + rdb_length(len(db.data)) + rdb_length(len(db.expires))
        for key, value in db.data.items():
            when = db.expires.get(key)
            if when is not None:
                out += b"\xfc" + struct.pack("<q", when)
            obj = rdb.serialize(value, limits)
            out += obj[:1] + rdb_string(key, limits) + obj[1:]
    out += b"\xff"
    out += rdb.crc64(out).to_bytes(8, "little")
    return bytes(out)


def rdb_string(data: bytes, limits: Any) -> bytes:
    return rdb._string(bytes(data), limits.compression)


def rdb_length(n: int) -> bytes:
    return rdb._len(n)


def used_memory(state: ServerState) -> int:
    from fakekey.commands.info import STARTUP_MEMORY, dataset_bytes

    return STARTUP_MEMORY + dataset_bytes(state)


# --- FAILOVER --------------------------------------------------------------------------------


@command("failover", -1, "admin noscript stale", acl="dangerous", group="server", since="6.2.0",
         summary="Hands the primary role to a replica (a lone primary has none).")
def failover(c: Client, argv: list[bytes]) -> Any:
    if c.state.cluster is not None:
        raise ReplyError("ERR FAILOVER not allowed in cluster mode. Use CLUSTER FAILOVER command instead.")
    host = timeout = force = abort = False
    i = 1
    while i < len(argv):
        word = argv[i].lower()
        if word == b"to" and i + 2 < len(argv) and not host:
            _int(argv[i + 2])
            host = True
            i += 2
        elif word == b"timeout" and i + 1 < len(argv) and not timeout:
            if _int(argv[i + 1]) <= 0:
                raise ReplyError("ERR FAILOVER timeout must be greater than 0")
            timeout = True
            i += 1
        elif word == b"force" and not force:
            force = True
        elif word == b"abort" and not abort:
            abort = True
        else:
            raise SYNTAX
        i += 1
    if abort:
        if host or timeout or force:
            raise SYNTAX
        raise ReplyError("ERR No failover in progress.")
    raise ReplyError("ERR FAILOVER requires connected replicas.")


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
