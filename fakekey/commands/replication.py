"""Replication and cluster-mode commands as a lone primary without cluster support answers
them: READONLY, READWRITE, ASKING, REPLICAOF/SLAVEOF, REPLCONF, SYNC/PSYNC, FAILOVER,
WAITAOF, and CLUSTER (every subcommand refused but KEYSLOT) and CLUSTERSCAN.

fakekey keeps no replication link: `REPLICAOF host port` (after Valkey's checks) is
refused with an error that says so, where Valkey would start replicating; SYNC/PSYNC send
the data set as Valkey's RDB file, but no replication stream after it
(docs/differences.md)."""

from __future__ import annotations

import binascii
import struct
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, try_int
from fakekey.core.client import Client
from fakekey.core.registry import command, container, keys_range
from fakekey.persistence import rdb
from fakekey.resp.replies import NO_REPLY, OK, Raw, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

REPL_ADMIN = "admin noscript"
NO_CLUSTER = ReplyError("ERR This instance has cluster support disabled")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
NO_REPLICATION = ReplyError("ERR fakekey does not replicate: it cannot become a replica")


def _int(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise NOT_INTEGER
    return value


# --- cluster-mode connection commands ----------------------------------------------------


@command("readonly", 1, "loading stale fast", acl="connection", group="cluster", since="3.0.0",
         summary="Lets the connection read from a replica in cluster mode (accepted alone).")
def readonly(c: Client, argv: list[bytes]) -> Any:
    return OK


@command("readwrite", 1, "loading stale fast", acl="connection", group="cluster", since="3.0.0",
         summary="Ends READONLY for the connection.")
def readwrite(c: Client, argv: list[bytes]) -> Any:
    return OK


@command("asking", 1, "fast", acl="connection", group="cluster", since="3.0.0",
         summary="Lets the next command reach a slot being imported (cluster mode only).")
def asking(c: Client, argv: list[bytes]) -> Any:
    raise NO_CLUSTER


# --- REPLICAOF / SLAVEOF -------------------------------------------------------------------


def replica_of(c: Client, argv: list[bytes]) -> Any:
    """NO ONE: a primary stays one. A host and port: Valkey's port check, then refused."""
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



# --- CLUSTER and CLUSTERSCAN without cluster support -----------------------------------------
# A standalone Valkey lists them and refuses every one (CLUSTER HELP too) with the same
# error, but for CLUSTER KEYSLOT, which needs no cluster to answer.

container("cluster", group="cluster", since="3.0.0",
          summary="Holds the cluster commands (refused without cluster support).")

ADMIN_NO_ASYNC = "admin stale no_async_loading"
ND = "nondeterministic_output"
SLOTS_RANGE = "O(N) where N is the total number of the slots between the start slot and end slot arguments."
# name, arity, flags, ACL categories, since, complexity, tips, summary
CLUSTER_SUBCOMMANDS = (
    ("addslots", -3, ADMIN_NO_ASYNC, "dangerous", "3.0.0",
     "O(N) where N is the total number of hash slot arguments", "", "Assigns hash slots to the node."),
    ("addslotsrange", -4, ADMIN_NO_ASYNC, "dangerous", "7.0.0", SLOTS_RANGE, "",
     "Assigns ranges of hash slots to the node."),
    ("bumpepoch", 2, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", ND,
     "Moves the node's config epoch forward."),
    ("cancelslotmigrations", 2, ADMIN_NO_ASYNC, "dangerous", "9.0.0",
     "O(N), where N is the number of slot migration operations being cancelled.", "",
     "Stops the node's slot migrations."),
    ("count-failure-reports", 3, "admin stale", "dangerous", "3.0.0",
     "O(N) where N is the number of failure reports", ND, "Counts the failure reports about a node."),
    ("countkeysinslot", 3, "stale", "", "3.0.0", "O(1)", "", "Counts the keys of a hash slot."),
    ("delslots", -3, ADMIN_NO_ASYNC, "dangerous", "3.0.0",
     "O(N) where N is the total number of hash slot arguments", "", "Unassigns hash slots from the node."),
    ("delslotsrange", -4, ADMIN_NO_ASYNC, "dangerous", "7.0.0", SLOTS_RANGE, "",
     "Unassigns ranges of hash slots from the node."),
    ("failover", -2, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "",
     "Makes a replica node take over from its primary."),
    ("flushslot", -3, "write admin no_async_loading", "keyspace dangerous", "9.0.0",
     "O(N) where N is the number of keys in the target slot", "", "Deletes the keys of a hash slot."),
    ("flushslots", 2, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "", "Unassigns every hash slot of the node."),
    ("forget", 3, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "", "Drops a node from the node table."),
    ("getkeysinslot", 4, "stale", "", "3.0.0", "O(N) where N is the number of requested keys", ND,
     "Answers key names of a hash slot."),
    ("getslotmigrations", 2, ADMIN_NO_ASYNC, "dangerous", "9.0.0",
     "O(N), where N is the number of active slot import and export jobs.", "",
     "Describes the node's slot migrations."),
    ("help", 2, "loading stale", "", "5.0.0", "O(1)", "", "Describes the CLUSTER subcommands."),
    ("info", 2, "loading stale", "", "3.0.0", "O(1)", ND, "Describes the cluster's state."),
    ("keyslot", 3, "stale", "", "3.0.0", "O(N) where N is the number of bytes in the key", "",
     "Answers the hash slot of a key name."),
    ("links", 2, "stale", "", "7.0.0", "O(N) where N is the total number of Cluster nodes", ND,
     "Describes the node's links to the others."),
    ("meet", -4, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "", "Joins a node to the cluster."),
    ("migrateslots", -4, ADMIN_NO_ASYNC, "dangerous", "9.0.0",
     "O(N) where N is the total number of the slots between all start slot and end slot arguments.", "",
     "Moves ranges of hash slots to another shard."),
    ("myid", 2, "loading stale", "", "3.0.0", "O(1)", "", "Answers the node's id."),
    ("myshardid", 2, "loading stale", "", "7.2.0", "O(1)", ND, "Answers the node's shard id."),
    ("nodes", 2, "loading stale", "", "3.0.0", "O(N) where N is the total number of Cluster nodes", ND,
     "Describes the nodes as the node's config file does."),
    ("replicas", 3, "admin stale", "dangerous", "5.0.0", "O(N) where N is the number of replicas.", ND,
     "Lists the replicas of a primary node."),
    ("replicate", -3, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "",
     "Makes the node a replica of another."),
    ("reset", -2, "admin noscript stale", "dangerous", "3.0.0",
     "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
     "", "Resets the node's cluster state."),
    ("saveconfig", 2, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "", "Writes the node's cluster config file."),
    ("set-config-epoch", 3, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "",
     "Sets the config epoch of a new node."),
    ("setslot", -4, ADMIN_NO_ASYNC, "dangerous", "3.0.0", "O(1)", "", "Changes the state of a hash slot."),
    ("shards", 2, "loading stale", "", "7.0.0", "O(N) where N is the total number of cluster nodes", ND,
     "Describes the shards and their nodes."),
    ("slaves", 3, "admin stale", "dangerous", "3.0.0", "O(N) where N is the number of replicas.", ND,
     "Lists the replicas of a primary node (old name of CLUSTER REPLICAS)."),
    ("slot-stats", -4, "loading stale", "", "8.0.0",
     "O(N) where N is the total number of slots based on arguments. O(N*log(N)) with ORDERBY subcommand.",
     ND + " request_policy:all_shards", "Answers per-slot statistics."),
    ("slots", 2, "loading stale", "", "3.0.0", "O(N) where N is the total number of Cluster nodes", ND,
     "Maps hash slot ranges to nodes."),
    ("syncslots", -3, ADMIN_NO_ASYNC, "dangerous", "9.0.0", "Depends on subcommand.", "",
     "Coordinates a slot migration between nodes."),
)
DOC_FLAGS = {"slaves": "deprecated", "syncslots": "syscmd"}


def refuse_without_cluster(c: Client, argv: list[bytes]) -> Any:
    raise NO_CLUSTER


for _name, _arity, _flags, _acl, _since, _complexity, _tips, _summary in CLUSTER_SUBCOMMANDS:
    if _name != "keyslot":
        command(f"cluster|{_name}", _arity, _flags, acl=_acl, group="cluster", since=_since,
                complexity=_complexity, tips=_tips, doc_flags=DOC_FLAGS.get(_name, ""),
                summary=_summary)(refuse_without_cluster)


@command("cluster|keyslot", 3, "stale", group="cluster", since="3.0.0",
         complexity="O(N) where N is the number of bytes in the key",
         summary="Answers the hash slot of a key name.")
def cluster_keyslot(c: Client, argv: list[bytes]) -> Any:
    return key_hash_slot(argv[2])


@command("clusterscan", -2, "readonly", keys=keys_range(1, flags="not_key"), acl="keyspace",
         group="cluster", since="9.1.0", complexity="O(N) where N is the number of elements returned.",
         tips=ND + " request_policy:special response_policy:special",
         summary="Walks the keys of every node of a cluster (refused without cluster support).")
def clusterscan(c: Client, argv: list[bytes]) -> Any:
    raise NO_CLUSTER


def key_hash_slot(key: bytes) -> int:
    """Valkey's keyHashSlot: CRC16 of the key, or of its first non-empty {hash tag}."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) & 16383


def crc16(data: bytes) -> int:
    """CRC-16/XMODEM (polynomial 0x1021, initial 0), as Valkey's crc16.c; binascii's C
    loop, so a long key costs little."""
    return binascii.crc_hqx(data, 0)
