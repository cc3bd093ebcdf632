"""The primary side of replication to real replicas (a valkey-server started with
`--replicaof` this server, or anything that speaks PSYNC).

A replica's connection asks `PSYNC replid offset` (or SYNC). It gets `+CONTINUE` and
the backlog from its offset when the backlog still holds it under this replication id
(or the previous one, up to the offset where it changed), else `+FULLRESYNC replid
offset` and the data set as an RDB file: in one bulk, or in the diskless `$EOF:` form
when the replica announced `capa eof` and repl-diskless-sync is on (after
repl-diskless-sync-delay, as Valkey waits for more replicas). From then on the replica
gets the replication stream: Valkey's propagation form (persistence/propagate.py), the
replication PING every repl-ping-replica-period and `REPLCONF GETACK *` when WAIT needs
acknowledgements. Every byte of the stream moves master_repl_offset and goes to the
backlog (repl-backlog-size; freed after repl-backlog-ttl seconds without replicas).

The replicas acknowledge with `REPLCONF ACK offset`: WAIT counts them, INFO and ROLE show
them, min-replicas-to-write counts the good ones (lag within min-replicas-max-lag). A
replica whose unread output passes client-output-buffer-limit's replica class is dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.core.outbuf import dropped_for_output, past_output_limit
from fakekey.core.upstream import expire_tracked_keys
from fakekey.persistence import rdb, rdbfile
from fakekey.persistence.propagate import (
    Op,
    StreamEncoder,
    encode_command,
    propagation,
    stop_propagation,
)
from fakekey.persistence.snapshot import live_image

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState
    from fakekey.persistence.failover import Failover

log = logging.getLogger("fakekey.net.server")

PING: list[bytes] = [b"ping"]  # as Valkey's replicationCron sends it
GETACK: list[bytes] = [b"REPLCONF", b"GETACK", b"*"]
CRON_SECONDS = 1.0


@dataclass
class Handshake:
    """What a connection said with REPLCONF before it asked PSYNC."""

    port: int = 0
    ip: str = ""
    capa: set[bytes] = field(default_factory=set)


@dataclass
class ReplicaLink:
    client: Client
    ip: str
    port: int
    capa: set[bytes]
    state: str = "wait_bgsave"  # wait_bgsave | online
    ack_offset: int = 0
    ack_at: float = field(default_factory=time.monotonic)
    soft_since: int = 0  # when its output passed the soft limit (s, server clock), or 0
    ping_on_ack: bool = False  # the first PING waits for its first ACK (a diskless transfer)


@dataclass
class WaitingClient:
    client: Client
    offset: int
    numreplicas: int
    base: int  # replicas counted besides these (a cluster's in-process ones)


class ReplicationPrimary:
    """`state.repl_primary`: the replicas, the backlog and the offsets."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.handshakes: dict[int, Handshake] = {}  # by client id
        self.links: dict[int, ReplicaLink] = {}  # by client id
        self.encoder = StreamEncoder()
        self.backlog: bytearray | None = None
        self.backlog_start = 0  # the offset of the backlog's first byte
        self.woff: dict[int, int] = {}  # a client's offset after its last propagated write
        self.waiting: list[WaitingClient] = []
        self.alone_since = 0.0  # when the last replica left (repl-backlog-ttl)
        self.cron_handle: Any = None
        self.cron_loops = 0
        self.getack_pending = False
        self.failover: Failover | None = None  # a FAILOVER under way (persistence/failover.py)
        # a former writable replica's own keys with a deadline, still tracked as a primary
        # (Valkey keeps replicaKeysWithExpire): key -> bitmap of databases (core/upstream.py)
        self.own_volatile: dict[bytes, int] = {}

    # --- the stream --------------------------------------------------------------------

    @property
    def offset(self) -> int:
        return self.state.repl_offset

    def propagate(self, ops: list[Op]) -> None:
        """A unit of Valkey's propagation form (persistence/propagate.py)."""
        self.feed(self.encoder.encode(ops))
        caller = self.state.current_client
        if caller is not None:
            self.woff[caller.id] = self.offset

    def feed(self, data: bytes) -> None:
        state = self.state
        state.repl_offset += len(data)
        backlog = self.backlog
        if backlog is not None:
            backlog += data
            excess = len(backlog) - state.config["repl-backlog-size"]
            if excess > 0:
                del backlog[:excess]
                self.backlog_start += excess
        for link in list(self.links.values()):
            if link.state == "online":
                self._send(link, data)

    def _send(self, link: ReplicaLink, data: bytes) -> None:
        connection = link.client.connection
        if connection is None or connection.closing:
            return
        connection.write(data)
        self._check_output(link)

    def _check_output(self, link: ReplicaLink) -> None:
        """client-output-buffer-limit's replica class: past the hard limit, or past the
        soft one for longer than its seconds, the link is closed (the replica resyncs)."""
        connection = link.client.connection
        if connection is None:
            return
        state = self.state
        over, link.soft_since = past_output_limit(
            connection.output_backlog(), state.obuf_limits.get("slave", (0, 0, 0)),
            link.soft_since, state.clock.now_ms() // 1000)
        if over:
            dropped_for_output(state, link.client)
            connection.abort()

    # --- the backlog ------------------------------------------------------------------

    def ensure_backlog(self) -> None:
        """The first replica: a new replication history starts (Valkey's
        changeReplicationId and clearReplicationId2), kept in a new backlog."""
        if self.backlog is not None:
            return
        state = self.state
        # a promoted replica (REPLICAOF NO ONE) keeps its ids: Valkey's has its backlog still
        if not self.links and state.second_repl_offset == -1:
            state.replid = os.urandom(20).hex()
            state.replid2 = "0" * 40
            state.second_repl_offset = -1
        self.backlog = bytearray()
        self.backlog_start = state.repl_offset + 1
        propagation(state).subscribe(self)
        self._arm_cron()

    def free_backlog(self) -> None:
        self.backlog = None
        stop_propagation(self.state, self)

    def can_continue(self, replid: bytes, offset: int) -> bool:
        """Valkey's primaryTryPartialResynchronization: the same history and the offset
        within the backlog."""
        state = self.state
        if self.backlog is None:
            return False
        same = replid.decode("latin-1") == state.replid
        previous = replid.decode("latin-1") == state.replid2 and offset <= state.second_repl_offset
        if not (same or previous):
            return False
        return self.backlog_start <= offset <= self.backlog_start + len(self.backlog)

    def backlog_from(self, offset: int) -> bytes:
        assert self.backlog is not None
        return bytes(self.backlog[offset - self.backlog_start:])

    # --- replicas ---------------------------------------------------------------------

    def handshake(self, client: Client) -> Handshake:
        found = self.handshakes.get(client.id)
        if found is None:
            found = self.handshakes[client.id] = Handshake()
        return found

    def add_link(self, client: Client, online: bool) -> ReplicaLink:
        said = self.handshakes.pop(client.id, Handshake())
        ip = said.ip or client.addr.rpartition(":")[0] or "127.0.0.1"
        link = ReplicaLink(client, ip, said.port, said.capa)
        link.state = "online" if online else "wait_bgsave"
        self.links[client.id] = link
        self.alone_since = 0.0
        self.refresh_good_replicas()
        return link

    def is_replica(self, client: Client) -> bool:
        return client.id in self.links

    def client_gone(self, client: Client) -> None:
        self.handshakes.pop(client.id, None)
        self.woff.pop(client.id, None)
        if self.links.pop(client.id, None) is not None:
            if not self.links:
                self.alone_since = time.monotonic()
            self.refresh_good_replicas()
            self._answer_waiters()

    def online(self) -> list[ReplicaLink]:
        self._forget_closed()
        return [link for link in self.links.values() if link.state == "online"]

    def _forget_closed(self) -> None:
        for link in list(self.links.values()):
            connection = link.client.connection
            if link.client.id not in self.state.clients or connection is None or connection.closing:
                self.client_gone(link.client)

    # --- full synchronization -------------------------------------------------------------

    def full_sync(self, client: Client, psync: bool) -> bytes | None:
        """Start a full resync: the bytes to answer now, or None when the transfer
        starts after repl-diskless-sync-delay (a diskless one)."""
        state = self.state
        self.ensure_backlog()
        said = self.handshakes.get(client.id, Handshake())
        diskless = b"eof" in said.capa and state.config["repl-diskless-sync"]
        delay = state.config["repl-diskless-sync-delay"] if diskless else 0
        link = self.add_link(client, online=False)
        if delay > 0 and state.loop is not None:
            state.loop.call_later(delay, self._transfer_later, link, psync, diskless)
            return None
        return self._transfer(link, psync, diskless)

    def _transfer_later(self, link: ReplicaLink, psync: bool, diskless: bool) -> None:
        connection = link.client.connection
        if self.links.get(link.client.id) is not link or connection is None or connection.closing:
            return
        connection.write(self._transfer(link, psync, diskless))

    def _transfer(self, link: ReplicaLink, psync: bool, diskless: bool) -> bytes:
        state = self.state
        preamble = b"+FULLRESYNC %s %d\r\n" % (state.replid.encode(), state.repl_offset) if psync else b""
        data = self.rdb(state)
        self.encoder.db = -1  # the stream after a snapshot starts with SELECT
        link.state = "online"
        link.ack_offset = state.repl_offset
        link.ack_at = time.monotonic()
        if state.repl_offset == 0 and state.upstream is None and state.loop is not None:
            if diskless:  # a replica finds the end of the file in the tail of a read: nothing
                link.ping_on_ack = True  # may follow it until it ACKs, as Valkey waits
            else:
                state.loop.call_soon(self._first_ping)  # once the snapshot is on its way
        if diskless:
            mark = os.urandom(20).hex().encode()
            return preamble + b"$EOF:" + mark + b"\r\n" + data + mark
        return preamble + b"$%d\r\n" % len(data) + data

    def _first_ping(self) -> None:
        """Valkey 9.1.2's replicaPutOnline: a stream still empty when a replica goes
        online gets a PING at once (its offset no longer 0), not at the cron's period."""
        if self.state.repl_offset == 0 and self.online():
            self.feed(StreamEncoder().encode([(-1, PING)]))

    def rdb(self, state: ServerState) -> bytes:
        """The data set as Valkey's RDB file, with the replication aux fields."""
        image = live_image(state)
        persistence = state.persistence
        if persistence is not None:
            options = persistence.save_options(image)
        else:
            options = rdbfile.SaveOptions(limits=rdb.Limits.of(state.config),
                                          valkey_version=state.valkey_version,
                                          ctime=state.now // 1000)
        stream_db = self.encoder.db if self.encoder.db >= 0 else 0
        options = dataclasses.replace(options, repl=(stream_db, state.replid, state.repl_offset))
        return rdbfile.rdb_bytes(image, options, state.clock.now_ms())

    # --- partial synchronization -------------------------------------------------------------

    def continue_sync(self, client: Client, offset: int) -> bytes:
        said = self.handshakes.get(client.id, Handshake())
        self.add_link(client, online=True).ack_offset = offset - 1
        self.state.stats["sync_partial_ok"] += 1
        reply = b"+CONTINUE %s\r\n" % self.state.replid.encode() if b"psync2" in said.capa \
            else b"+CONTINUE\r\n"
        return reply + self.backlog_from(offset)

    # --- acknowledgements, WAIT ----------------------------------------------------------------

    def acked(self, client: Client, offset: int) -> None:
        link = self.links.get(client.id)
        if link is None:
            return
        link.ack_offset = max(link.ack_offset, offset)
        link.ack_at = time.monotonic()
        if link.state != "online":
            link.state = "online"
        if link.ping_on_ack:
            link.ping_on_ack = False
            self._first_ping()
        self.refresh_good_replicas()
        self._answer_waiters()
        if self.failover is not None:
            self.failover.check()

    def acks_at(self, offset: int) -> int:
        return sum(1 for link in self.online() if link.ack_offset >= offset)

    def write_offset(self, client: Client) -> int:
        return self.woff.get(client.id, 0)

    def wait(self, client: Client, numreplicas: int, base: int = 0) -> None:
        """A WAIT that blocks: answered when enough replicas acknowledged its offset
        (the blocking machinery answers the last count at its timeout)."""
        self.waiting.append(WaitingClient(client, self.write_offset(client), numreplicas, base))
        self.ask_for_acks()

    def ask_for_acks(self) -> None:
        """REPLCONF GETACK * to the replicas, once per loop turn (Valkey's beforeSleep)."""
        if self.getack_pending:
            return
        self.getack_pending = True
        loop = self.state.running_loop()
        if loop is None:
            self._send_getack()
        else:
            loop.call_soon(self._send_getack)

    def _send_getack(self) -> None:
        self.getack_pending = False
        if self.waiting and self.online():
            self.feed(StreamEncoder().encode([(-1, GETACK)]))

    def _answer_waiters(self) -> None:
        blocking = self.state.blocking
        still: list[WaitingClient] = []
        for waiting in self.waiting:
            waiter = waiting.client.blocked
            if waiter is None or not hasattr(waiter, "timeout_reply") or waiting.client.id not in self.state.clients:
                continue  # answered (timed out) or gone
            count = self.acks_at(waiting.offset)
            waiter.timeout_reply = waiting.base + count
            if count >= waiting.numreplicas:
                blocking.unblock(waiting.client, None)  # answered with the count
            else:
                still.append(waiting)
        self.waiting = still

    # --- min-replicas-to-write ------------------------------------------------------------

    def good_replicas(self) -> int:
        lag = self.state.config["min-replicas-max-lag"]
        now = time.monotonic()
        return sum(1 for link in self.online() if now - link.ack_at <= lag)

    def refresh_good_replicas(self) -> None:
        config = self.state.config
        wanted = config["min-replicas-to-write"]
        self.state.too_few_replicas = bool(wanted > 0 and config["min-replicas-max-lag"] > 0
                                           and self.good_replicas() < wanted)

    # --- the cron ----------------------------------------------------------------------------

    def _arm_cron(self) -> None:
        loop = self.state.loop
        if self.cron_handle is None and loop is not None and not loop.is_closed():
            self.cron_handle = loop.call_later(CRON_SECONDS, self._cron)

    def _cron(self) -> None:
        """Every second, as Valkey's replicationCron: the PING, the backlog's TTL, the
        good replicas, the WAIT list."""
        self.cron_handle = None
        state = self.state
        try:
            self.cron_loops += 1
            period = state.config["repl-ping-replica-period"]
            if self.online() and self.cron_loops % period == 0:
                self.feed(StreamEncoder().encode([(-1, PING)]))
            for link in list(self.links.values()):
                self._check_output(link)
            ttl = state.config["repl-backlog-ttl"]
            if not self.links and self.backlog is not None and ttl and self.alone_since \
                    and time.monotonic() - self.alone_since >= ttl:
                self.free_backlog()
            self.refresh_good_replicas()
            self.woff = {cid: off for cid, off in self.woff.items() if cid in state.clients}
            if self.waiting:
                self._answer_waiters()
            if self.failover is not None:
                self.failover.check()
            if self.own_volatile and state.active_expire and state.paused is None:
                expire_tracked_keys(state, self.own_volatile)
        finally:
            if self.backlog is not None or self.links or self.failover or self.own_volatile:
                self._arm_cron()

    def keep_own_volatile(self, tracked: dict[bytes, int]) -> None:
        """A writable replica became this primary: its own keys with a deadline stay
        tracked (INFO's slave_expires_tracked_keys) until they expire or lose it."""
        self.own_volatile = tracked
        if tracked:
            self._arm_cron()

    # --- INFO and ROLE -------------------------------------------------------------------------

    def info_lines(self, first: int = 0) -> list[str]:
        """INFO's slaveN lines, numbered from `first`."""
        lines = []
        now = time.monotonic()
        for i, link in enumerate(self.online(), first):
            lines.append(f"slave{i}:ip={link.ip},port={link.port},state=online,"
                         f"offset={link.ack_offset},lag={int(now - link.ack_at)},type=replica")
        return lines

    def backlog_lines(self) -> list[str]:
        state = self.state
        size = state.config["repl-backlog-size"]
        if self.backlog is None:
            return ["repl_backlog_active:0", f"repl_backlog_size:{size}",
                    "repl_backlog_first_byte_offset:0", "repl_backlog_histlen:0"]
        return ["repl_backlog_active:1", f"repl_backlog_size:{size}",
                f"repl_backlog_first_byte_offset:{self.backlog_start}",
                f"repl_backlog_histlen:{len(self.backlog)}"]

    def role_entries(self) -> list[list[bytes]]:
        return [[link.ip.encode(), b"%d" % link.port, b"%d" % link.ack_offset]
                for link in self.online()]


def replication_primary(state: ServerState) -> ReplicationPrimary:
    primary = state.repl_primary
    if primary is None:
        primary = state.repl_primary = ReplicationPrimary(state)
    return primary


def encode_ping() -> bytes:
    return encode_command(PING)
