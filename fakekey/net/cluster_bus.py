"""The cluster bus between fakekey processes: each `cluster-enabled yes` server that is not
a node of an in-process fakekey.Cluster listens on its bus port (cluster-port, or its port
+ 10000, as Valkey) and keeps a link to every node it knows.

The wire is fakekey's own, not Valkey's binary bus (so only fakekey nodes join fakekey
nodes): each message is one RESP array of bulk strings,

    *4  $11 fakekey-bus   $<n> kind   $<n> JSON body   $<n> blob    [more bulk strings]

kind is meet, ping, pong, fail, update, forget or publish; the body of meet/ping/pong is
the sender's header (core/cluster_gossip.Header: id, address, role, epochs, shard, gossip)
and the blob its slot bitmap. Anything else on a bus connection (garbage, a length past
the limits, a client's RESP command) closes that connection and nothing more.

A link this node opens to a node carries its PINGs (MEET to a node met by address) and
their PONGs; a link a peer opened carries the peer's, answered on it. The cron, `hz` times
a second, (re)connects the links, pings each node every half node-timeout (at most every
second), and runs failure detection (Gossip.look). A change this node makes to its own
claims (ADDSLOTS, BUMPEPOCH...) is sent to every node at once as a PONG.

Replicas and failovers (core/cluster_failover.py decides): a node that becomes a replica
(CLUSTER REPLICATE, or following a failover) replicates its primary over TCP with the
link REPLICAOF uses (net/replica_link.py); a replica whose primary fails runs an election
(auth-request to every node, auth-ack from the primaries that vote), and CLUSTER FAILOVER
sends mfstart to the primary, whose pings to that replica then say `paused` and carry
the offset to reach."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from typing import TYPE_CHECKING, Any

from fakekey.commands import replication
from fakekey.core.cluster_gossip import (
    AUTH_ACK,
    AUTH_REQUEST,
    FAIL,
    FORGET,
    KINDS,
    MEET,
    MFSTART,
    PING,
    PONG,
    PUBLISH,
    UPDATE,
    BadMessage,
    Gossip,
    Header,
    slot_bitmap,
)
from fakekey.net.sockets import listen_on

if TYPE_CHECKING:
    from fakekey.core.cluster import ClusterNode, ClusterView
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

MAGIC = b"fakekey-bus"
LINE_LIMIT = 64  # bytes of one `*n` or `$n` line
MAX_PARTS = 6
MAX_BODY = 1 << 20  # the JSON body of one message
MAX_FRAME = 64 << 20  # a whole message (a PUBLISH carries a message of any size up to this)
SEND_BUFFER_LIMIT = 64 << 20  # a link whose peer reads nothing is dropped past this
PING_EVERY_MS = 1000  # at most this long between two pings of one node
CONNECT_EVERY = 0.1  # seconds between two connection attempts to one node
INBOUND_IDLE_MIN = 10.0  # seconds a link a peer opened may stay silent (or 3 node-timeouts)


def encode(kind: bytes, body: dict[str, Any], blob: bytes = b"", *extra: bytes) -> bytes:
    parts = [MAGIC, kind, json.dumps(body, separators=(",", ":")).encode(), blob, *extra]
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n" % len(part))
        out.append(part)
        out.append(b"\r\n")
    return b"".join(out)


async def read_message(reader: asyncio.StreamReader) -> list[bytes]:
    """One message's parts, checked against the limits; BadMessage for anything else."""
    count = _length(await reader.readuntil(b"\r\n"), b"*")
    if not 4 <= count <= MAX_PARTS:
        raise BadMessage("bad part count")
    parts: list[bytes] = []
    total = 0
    for _ in range(count):
        size = _length(await reader.readuntil(b"\r\n"), b"$")
        total += size
        if total > MAX_FRAME or (len(parts) == 2 and size > MAX_BODY):
            raise BadMessage("too long")
        data = await reader.readexactly(size + 2)
        if data[-2:] != b"\r\n":
            raise BadMessage("bad bulk string")
        parts.append(data[:-2])
        if len(parts) == 1 and parts[0] != MAGIC:
            raise BadMessage("not a bus message")
    if parts[1] not in KINDS:
        raise BadMessage("unknown kind")
    return parts


def _length(line: bytes, prefix: bytes) -> int:
    digits = line[1:-2]
    if not line.startswith(prefix) or not digits.isdigit() or len(digits) > 12:
        raise BadMessage("bad length line")
    return int(digits)


def body_of(parts: list[bytes]) -> dict[str, Any]:
    try:
        body = json.loads(parts[2])
    except ValueError:
        raise BadMessage("bad body") from None
    if not isinstance(body, dict):
        raise BadMessage("bad body")
    return body


def text_of(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str):
        raise BadMessage(f"bad {name}")
    return value


def address_of(writer: asyncio.StreamWriter, which: str) -> str:
    """The peer's (or this end's) IP address of a connection, IPv4-mapped ones unmapped."""
    info = writer.get_extra_info(which)
    if isinstance(info, tuple) and info:
        return str(info[0]).removeprefix("::ffff:")
    return ""


class Link:
    """One bus connection: to `node` (opened by this node), or opened by a peer (node None)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 node: ClusterNode | None, now: float) -> None:
        self.reader = reader
        self.writer = writer
        self.node = node
        self.created = now
        self.last_read = now
        self.task: asyncio.Task[None] | None = None

    def send(self, data: bytes) -> bool:
        """Queue `data`; False (the link is to be dropped) when the peer reads nothing."""
        transport = self.writer.transport
        if transport.is_closing() or transport.get_write_buffer_size() > SEND_BUFFER_LIMIT:
            return False
        self.writer.write(data)
        return True

    def close(self) -> None:
        self.writer.close()


class ClusterBus:
    """This node's bus: its listening sockets, its links, its cron."""

    def __init__(self, state: ServerState, view: ClusterView, sockets: list[socket.socket]) -> None:
        self.state = state
        self.view = view
        self.sockets = sockets
        self.gossip = Gossip(view)
        self.links: dict[ClusterNode, Link] = {}  # the links this node opened, by node
        self.inbound: set[Link] = set()
        self.connecting: dict[ClusterNode, asyncio.Task[None]] = {}
        self.last_attempt: dict[ClusterNode, float] = {}  # loop time of the last connect
        self.last_ping: dict[ClusterNode, float] = {}  # loop time of the last PING sent
        self.servers: list[asyncio.AbstractServer] = []
        self.cron_task: asyncio.Task[None] | None = None
        view.wire = self

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        for sock in self.sockets:
            self.servers.append(await asyncio.start_server(self._accepted, sock=sock, limit=LINE_LIMIT))
        self.cron_task = asyncio.get_running_loop().create_task(self._cron())

    async def stop(self) -> None:
        if self.cron_task is not None:
            self.cron_task.cancel()
        for task in list(self.connecting.values()):
            task.cancel()
        for server in self.servers:
            server.close()
        for link in [*self.links.values(), *self.inbound]:
            link.close()
            if link.task is not None:
                link.task.cancel()
        self.links.clear()
        self.inbound.clear()
        self.view.wire = None

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    # --- what the commands ask ------------------------------------------------------------------

    def meet(self, host: str, port: int, bus_port: int) -> None:
        """CLUSTER MEET: a handshake with that address, MEET sent once connected."""
        self.gossip.start_handshake(host, port, bus_port)
        self._tick()

    def announce(self) -> None:
        """This node's claims changed: every connected node hears it now (a PONG)."""
        for node, link in list(self.links.items()):
            if not node.handshake:
                self._send(link, self._hello(PONG, node))

    def spread_forget(self, node_id: str) -> None:
        ttl = self.state.config["cluster-blacklist-ttl"]
        body = {"sender": self.view.myself.id, "node": node_id, "ttl": ttl}
        self._broadcast(encode(FORGET, body))

    def replicate(self, primary: ClusterNode) -> None:
        """This node follows `primary` now (clusterSetPrimary): a manual failover in
        progress ends, and the replication link goes to that node (replicationSetPrimary)."""
        self.gossip.failover.reset_manual()
        upstream = self.state.upstream
        if upstream is not None and upstream.same_primary(primary.host, primary.port):
            return
        replication.follow(self.state, primary.host, primary.port)

    def start_manual_failover(self, force: bool) -> None:
        """CLUSTER FAILOVER [FORCE] on this replica: FORCE elects at once; otherwise the
        primary is asked to pause (mfstart) and the election waits for its offset."""
        self.gossip.failover.start_manual(force)
        primary = self.view.myself.primary
        link = self.links.get(primary) if primary is not None else None
        if not force and link is not None:
            self._send(link, encode(MFSTART, {"sender": self.view.myself.id}))

    def take_over(self) -> None:
        """CLUSTER FAILOVER TAKEOVER: this replica is the primary, without votes."""
        self.gossip.failover.take_over()
        self._promoted()

    def _promoted(self) -> None:
        """Won: the replication link ends (the data and its history kept, as REPLICAOF NO
        ONE) and every node hears the new claim at once."""
        if self.state.upstream is not None:
            replication.promote(self.state)
        self.view.announce()

    def publish(self, channel: bytes, message: bytes, sharded: bool) -> None:
        """PUBLISH to every node; SPUBLISH to the nodes of this node's shard."""
        view = self.view
        data = encode(PUBLISH, {"sender": view.myself.id, "sharded": sharded}, channel, message)
        shard = view.primary_of(view.myself)
        for node, link in list(self.links.items()):
            if not node.handshake and (not sharded or view.primary_of(node) is shard):
                self._send(link, data)

    # --- the cron ---------------------------------------------------------------------------------

    async def _cron(self) -> None:
        while True:
            await asyncio.sleep(1 / self.state.config["hz"])
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - the bus must outlive a bug
                log.exception("cluster bus cron")

    def _tick(self) -> None:
        view = self.view
        now = self.now()
        known = {n for n in view.nodes.values() if n is not view.myself}
        for node in [n for n in self.links if n not in known]:
            self._drop(self.links[node])
        for node in [n for n in self.connecting if n not in known]:
            self.connecting.pop(node).cancel()
        for table in (self.last_attempt, self.last_ping):  # nodes gone (forgotten, dropped handshakes)
            for node in [n for n in table if n not in known]:
                del table[node]
        self.gossip.meet &= known
        for node in known:
            link = self.links.get(node)
            if link is None:
                self._maybe_connect(node, now)
            else:
                self._maybe_ping(node, link, now)
        for node in self.gossip.look(set(self.links)):
            self._broadcast(encode(FAIL, {"sender": view.myself.id, "node": node.id}))
        self._failover_step()
        idle = max(INBOUND_IDLE_MIN, 3 * self.state.config["cluster-node-timeout"] / 1000)
        for link in [link for link in self.inbound if now - link.last_read > idle]:
            self._drop(link)

    def _failover_step(self) -> None:
        """clusterCron's part in failovers: a paused primary's pings to the replica that
        asked; a replica's manual failover and election."""
        failover = self.gossip.failover
        myself = self.view.myself
        offset = self.gossip.my_offset()
        failover.manual_tick(offset)
        waiting = failover.mf_replica
        if waiting is not None and failover.pausing_for(waiting) and waiting in self.links:
            self._send(self.links[waiting], self._hello(PING, waiting))
        if myself.is_primary:
            return
        step = failover.election_tick(offset, self._link_down_ms())
        if step == "request":
            header = self.gossip.header(None)
            if failover.mf_end and failover.mf_can_start:
                header.flags.append("forceack")  # the primaries vote though it lives
            self._broadcast(encode(AUTH_REQUEST, header.as_json(), header.slots))
        elif step == "won":
            failover.replace_primary()
            self._promoted()

    def _link_down_ms(self) -> int:
        """How long the replication link has been down (0: up)."""
        upstream = self.state.upstream
        if upstream is None or upstream.linked or not upstream.down_since:
            return 0
        return max(0, int(time.time() * 1000) - upstream.down_since * 1000)

    def _maybe_connect(self, node: ClusterNode, now: float) -> None:
        if node in self.connecting or not node.host or now - self.last_attempt.get(node, 0.0) < CONNECT_EVERY:
            return
        self.last_attempt[node] = now
        self.connecting[node] = asyncio.get_running_loop().create_task(self._connect(node))

    def _maybe_ping(self, node: ClusterNode, link: Link, now: float) -> None:
        timeout = self.state.config["cluster-node-timeout"]
        clock = self.gossip.now()
        if node.ping_sent and clock - node.ping_sent > timeout / 2 and now - link.created > timeout / 1000 \
                and now - link.last_read > timeout / 2000:
            self._drop(link)  # no answer on a link for a while: a new one (Valkey's too)
            return
        every = min(PING_EVERY_MS, max(timeout // 2, 10)) / 1000
        if node.ping_sent == 0 and now - self.last_ping.get(node, 0.0) >= every:
            self._ping(node, link, PING)

    def _ping(self, node: ClusterNode, link: Link, kind: bytes) -> None:
        self.last_ping[node] = self.now()
        if node.ping_sent == 0:
            node.ping_sent = self.gossip.now()
        self._send(link, self._hello(kind, node))

    def _hello(self, kind: bytes, to: ClusterNode | None) -> bytes:
        header = self.gossip.header(to)
        return encode(kind, header.as_json(), header.slots)

    # --- links ------------------------------------------------------------------------------------

    async def _connect(self, node: ClusterNode) -> None:
        timeout = max(0.5, min(self.state.config["cluster-node-timeout"], 5000) / 1000)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(node.host, node.bus_port, limit=LINE_LIMIT), timeout)
        except (TimeoutError, OSError, ValueError):
            return
        finally:
            self.connecting.pop(node, None)
        if node not in self.view.nodes.values():
            writer.close()
            return
        view = self.view
        if not view.myself.host and not self.state.config["cluster-announce-ip"]:
            view.myself.host = address_of(writer, "sockname")
        link = Link(reader, writer, node, self.now())
        self.links[node] = link
        node.connected = True
        meet = node in self.gossip.meet
        self.gossip.meet.discard(node)
        self._ping(node, link, MEET if meet else PING)
        link.task = asyncio.get_running_loop().create_task(self._serve(link))

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = Link(reader, writer, None, self.now())
        self.inbound.add(link)
        link.task = asyncio.current_task()
        await self._serve(link)

    async def _serve(self, link: Link) -> None:
        """Read and handle the link's messages until it closes or sends a bad one."""
        try:
            while True:
                parts = await read_message(link.reader)
                link.last_read = self.now()
                self._handle(link, parts)
        except (BadMessage, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a bug on one link closes that link only
            log.exception("cluster bus link")
        finally:
            self._drop(link)

    def _drop(self, link: Link) -> None:
        link.close()
        self.inbound.discard(link)
        node = link.node
        if node is not None and self.links.get(node) is link:
            del self.links[node]
            node.connected = False

    def _send(self, link: Link, data: bytes) -> None:
        if not link.send(data):
            self._drop(link)

    def _broadcast(self, data: bytes) -> None:
        for node, link in list(self.links.items()):
            if not node.handshake:
                self._send(link, data)

    # --- receiving --------------------------------------------------------------------------------

    def _handle(self, link: Link, parts: list[bytes]) -> None:
        kind = parts[1]
        body = body_of(parts)
        gossip = self.gossip
        if kind in (MEET, PING, PONG):
            header = Header.from_json(body, parts[3])
            node = link.node
            outcome = gossip.received(kind, header, node, address_of(link.writer, "peername"),
                                      address_of(link.writer, "sockname"))
            if outcome.close:
                self._drop(link)
                return
            if outcome.reply:
                self._send(link, self._hello(PONG, None))
            for failed in outcome.failed:
                self._broadcast(encode(FAIL, {"sender": self.view.myself.id, "node": failed.id}))
            for owner in outcome.updates:
                self._send(link, encode(UPDATE, {"sender": self.view.myself.id, "node": owner.id,
                                                 "config_epoch": owner.config_epoch},
                                        slot_bitmap(self.view, owner)))
        elif kind == AUTH_REQUEST:
            if gossip.take_auth_request(Header.from_json(body, parts[3])):
                self._send(link, encode(AUTH_ACK, {"sender": self.view.myself.id,
                                                   "current_epoch": self.view.current_epoch}))
        elif kind == AUTH_ACK:
            epoch = body.get("current_epoch")
            if not isinstance(epoch, int):
                raise BadMessage("bad auth-ack")
            gossip.take_auth_ack(text_of(body, "sender"), epoch)
        elif kind == MFSTART:
            replica = gossip.take_mfstart(text_of(body, "sender"))
            if replica is not None and replica in self.links:
                self._send(self.links[replica], self._hello(PING, replica))
        elif kind == FAIL:
            gossip.take_fail(text_of(body, "sender"), text_of(body, "node"))
        elif kind == FORGET:
            gossip.take_forget(text_of(body, "sender"), text_of(body, "node"))
        elif kind == UPDATE:
            epoch = body.get("config_epoch")
            if not isinstance(epoch, int) or len(parts[3]) != 2048:
                raise BadMessage("bad update")
            gossip.take_update(text_of(body, "node"), epoch, parts[3])
        elif kind == PUBLISH and len(parts) == 5:
            self._deliver(text_of(body, "sender"), bool(body.get("sharded")), parts[3], parts[4])

    def _deliver(self, sender_id: str, sharded: bool, channel: bytes, message: bytes) -> None:
        view = self.view
        sender = view.nodes.get(sender_id)
        if sender is None or sender.handshake:
            return
        pubsub = self.state.pubsub
        if not sharded:
            pubsub.publish(channel, message)
        elif view.primary_of(sender) is view.primary_of(view.myself):
            pubsub.spublish(channel, message)


# --- the listening sockets ----------------------------------------------------------------------

WILDCARDS = {"*": "0.0.0.0", "::*": "::"}


def bind_bus(bind: str, port: int) -> list[socket.socket]:
    """The bus's listening sockets on every address of `bind` (a leading "-": optional, as
    the client listeners), on `port`. Raises OSError (nothing left open) when one cannot
    be bound, or the port is past 65535 (a client port over 55535 with no cluster-port)."""
    if not 0 < port <= 65535:
        raise OSError(f"cluster bus port {port} out of range: set cluster-port")
    sockets: list[socket.socket] = []
    try:
        for address in bind.split():
            host = WILDCARDS.get(address.lstrip("-"), address.lstrip("-"))
            try:
                sockets.append(listen_on(host, port))
            except OSError:
                if not address.startswith("-"):
                    raise
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


