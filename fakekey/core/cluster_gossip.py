"""What a node does with the messages of a cluster bus between processes (the wire itself is
fakekey/net/cluster_bus.py): Valkey's clusterProcessPacket, clusterCron's failure detection
and its gossip, on this node's view (core/cluster.py), with no socket in sight.

A message is a kind (MEET, PING, PONG, FAIL, UPDATE, FORGET, PUBLISH) and a header: the
sender's id, address, role, epochs, shard, slots, and gossip about a few other nodes. The
nodes a view knows are its `ClusterNode`s; a node met by address is a `handshake` node with
a random id until its first PONG names it (renamed in place, as clusterRenameNode: the slot
table and the links keep pointing at the same object). Failure detection runs on the
server's clock: a ping unanswered for cluster-node-timeout makes a node `fail?`; the
reports of most primaries (gossip) make it `fail`, told to all with a FAIL message."""

from __future__ import annotations

import ipaddress
import itertools
import operator
import random
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from fakekey.core.cluster import (
    SLOTS,
    ClusterNode,
    follow_primary,
    forget_node,
    forgotten,
    lose_slots,
    new_node_id,
    redirect_blocked_clients,
)
from fakekey.core.cluster_failover import Failover, should_follow

if TYPE_CHECKING:
    from fakekey.core.cluster import ClusterView

MEET, PING, PONG, FAIL, UPDATE, FORGET, PUBLISH = (
    b"meet", b"ping", b"pong", b"fail", b"update", b"forget", b"publish")
AUTH_REQUEST, AUTH_ACK, MFSTART = b"auth-request", b"auth-ack", b"mfstart"  # failovers
KINDS = frozenset((MEET, PING, PONG, FAIL, UPDATE, FORGET, PUBLISH, AUTH_REQUEST, AUTH_ACK, MFSTART))
GOSSIP_MAX = 64  # entries about other nodes in one message (all of them in a small cluster)
FAIL_REPORT_VALIDITY = 2  # a failure report counts for node-timeout times this (Valkey's)
FAIL_UNDO = 2  # a failed primary with slots is cleared after node-timeout times this


def is_ip(text: str) -> bool:
    """An address to connect to is an IP address (gossip names no host to resolve)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class BadMessage(ValueError):
    """A message that is not one: its link is closed."""


def slot_bitmap(view: ClusterView, node: ClusterNode) -> bytes:
    """The slots `node` owns, one bit each (slot 0 is the low bit of byte 0, as Valkey's).
    Made without a Python loop over the slots: a node pings every second."""
    marks = bytes(map(operator.is_, view.owners, itertools.repeat(node)))  # 1 where it owns
    digits = marks.translate(_DIGITS)[::-1]  # the last slot first: the number's high bit
    return int(digits, 2).to_bytes(SLOTS // 8, "little")


_DIGITS = bytes.maketrans(b"\x00\x01", b"01")


def bitmap_ranges(bits: bytes) -> list[tuple[int, int]]:
    """The runs of slots a bitmap sets, as (first, last) pairs."""
    digits = format(int.from_bytes(bits, "little"), f"0{SLOTS}b")[::-1]
    return [(run.start(), run.end() - 1) for run in re.finditer("1+", digits)]


@dataclass
class Header:
    """The sender's part of every message (Valkey's clusterMsg header), checked on receipt."""

    id: str
    ip: str
    port: int
    cport: int
    primary: str  # "" for a primary
    current_epoch: int
    config_epoch: int
    shard: str
    offset: int
    hostname: str
    flags: list[str]
    slots: bytes
    gossip: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "ip": self.ip, "port": self.port, "cport": self.cport,
                "primary": self.primary, "current_epoch": self.current_epoch,
                "config_epoch": self.config_epoch, "shard": self.shard, "offset": self.offset,
                "hostname": self.hostname, "flags": self.flags, "gossip": self.gossip}

    @classmethod
    def from_json(cls, data: Any, slots: bytes) -> Header:
        if not isinstance(data, dict) or len(slots) != SLOTS // 8:
            raise BadMessage("bad header")
        gossip = data.get("gossip")
        if not isinstance(gossip, list) or len(gossip) > GOSSIP_MAX * 4:
            raise BadMessage("bad gossip")
        for entry in gossip:
            _check_entry(entry)
        return cls(_text(data, "id"), _text(data, "ip"), _number(data, "port"), _number(data, "cport"),
                   _text(data, "primary"), _number(data, "current_epoch"), _number(data, "config_epoch"),
                   _text(data, "shard"), _number(data, "offset"), _text(data, "hostname"),
                   _words(data, "flags"), slots, gossip)


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or len(value) > 256:
        raise BadMessage(f"bad {name}")
    return value


def _number(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise BadMessage(f"bad {name}")
    return value


def _words(data: dict[str, Any], name: str) -> list[str]:
    value = data.get(name)
    if not isinstance(value, list) or len(value) > 16 or not all(isinstance(w, str) for w in value):
        raise BadMessage(f"bad {name}")
    return value


def _check_entry(entry: Any) -> None:
    if not isinstance(entry, dict):
        raise BadMessage("bad gossip entry")
    _text(entry, "id")
    _text(entry, "ip")
    _number(entry, "port")
    _number(entry, "cport")
    _words(entry, "flags")


@dataclass
class Outcome:
    """What the wire must do after a message: answer PONG, send UPDATEs (the nodes whose
    newer claims the sender missed), tell everyone a node failed, or drop the link."""

    reply: bool = False
    updates: list[ClusterNode] = field(default_factory=list)
    failed: list[ClusterNode] = field(default_factory=list)
    close: bool = False
    changed: bool = False  # the slots or roles changed: blocked clients looked at again


class Gossip:
    """One node's side of the bus protocol: its failure reports, the fail times, the nodes
    to MEET. Everything it changes is in the view."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.reports: dict[str, dict[str, int]] = {}  # node id -> reporter id -> when (ms)
        self.fail_times: dict[str, int] = {}  # node id -> when it was marked fail (ms)
        self.meet: set[ClusterNode] = set()  # handshake nodes to send MEET (not PING) to
        self.failover = Failover(view)  # elections, votes, manual failovers

    def now(self) -> int:
        return self.view.state.clock.now_ms()

    # --- what this node says ---------------------------------------------------------------

    def header(self, to: ClusterNode | None) -> Header:
        view = self.view
        myself = view.myself
        config = view.state.config
        flags = ["nofailover"] if config["cluster-replica-no-failover"] else []
        if to is not None and self.failover.pausing_for(to):
            flags.append("paused")  # a manual failover: the replica waits for this offset
        return Header(
            id=myself.id, ip=str(config["cluster-announce-ip"] or ""),
            port=config["cluster-announce-port"] or myself.port,
            cport=config["cluster-announce-bus-port"] or myself.bus_port,
            primary=myself.primary.id if myself.primary is not None else "",
            current_epoch=view.current_epoch, config_epoch=view.primary_of(myself).config_epoch,
            shard=myself.shard_id, offset=self.my_offset(), hostname=str(config["cluster-announce-hostname"]),
            flags=flags, slots=slot_bitmap(view, view.primary_of(myself)), gossip=self._gossip_about(to))

    def my_offset(self) -> int:
        state = self.view.state
        return int(state.repl_offset)

    def _gossip_about(self, to: ClusterNode | None) -> list[dict[str, Any]]:
        """clusterSendPing's gossip: some known nodes (every one in a small cluster), and
        every node this one suspects, so the others hear its failure reports."""
        view = self.view
        known = [n for n in view.nodes.values()
                 if n is not view.myself and n is not to and not n.handshake and n.host]
        suspects = [n for n in known if n.suspected or n.failing]
        others = [n for n in known if not (n.suspected or n.failing)]
        if len(others) > GOSSIP_MAX:
            others = random.sample(others, GOSSIP_MAX)
        return [self._entry(n) for n in suspects + others]

    def _entry(self, node: ClusterNode) -> dict[str, Any]:
        flags = ["primary" if node.is_primary else "replica"]
        if node.failing:
            flags.append("fail")
        elif node.suspected:
            flags.append("pfail")
        return {"id": node.id, "ip": node.host, "port": node.port, "cport": node.bus_port,
                "flags": flags}

    # --- meeting ------------------------------------------------------------------------------

    def start_handshake(self, host: str, port: int, bus_port: int, meet: bool = True) -> ClusterNode | None:
        """clusterStartHandshake: a `handshake` node with a random id at this address, unless
        one is in progress there; dropped if unnamed after max(node-timeout, 1 s)."""
        view = self.view
        for node in view.nodes.values():
            if node.handshake and node.host == host and node.port == port and node.bus_port == bus_port:
                return None
        node = ClusterNode(new_node_id(), host, port, bus_port)
        node.handshake = True
        node.connected = False
        view.nodes[node.id] = node
        view.handshakes[node.id] = self.now() + max(view.state.config["cluster-node-timeout"], 1000)
        if meet:
            self.meet.add(node)
        return node

    def _name(self, node: ClusterNode, header: Header) -> ClusterNode | None:
        """The first PONG of a handshake node: renamed to the id it gave (clusterRenameNode),
        or dropped when that node is known already (its address updated), is this node, or
        was forgotten."""
        view = self.view
        self._drop(node)
        known = view.nodes.get(header.id)
        if known is not None:
            if known is not view.myself and not known.connected:
                known.host, known.port, known.bus_port = node.host, header.port, header.cport
            return None
        if header.id in forgotten(view):
            return None
        node.id = header.id
        node.handshake = False
        node.shard_id = header.shard
        view.nodes[node.id] = node
        return node

    def _drop(self, node: ClusterNode) -> None:
        view = self.view
        view.nodes.pop(node.id, None)
        view.handshakes.pop(node.id, None)
        self.meet.discard(node)

    # --- receiving ----------------------------------------------------------------------------

    def received(self, kind: bytes, header: Header, link_node: ClusterNode | None,
                 peer_ip: str, local_ip: str) -> Outcome:
        """One message. `link_node`: the node this link was opened to (None for a link the
        peer opened); `peer_ip` and `local_ip`: the two ends of the connection."""
        view = self.view
        out = Outcome()
        sender = view.nodes.get(header.id)
        if sender is not None and sender.handshake:
            sender = None
        if kind in (MEET, PING):
            if kind == MEET and not view.myself.host and not view.state.config["cluster-announce-ip"]:
                view.myself.host = local_ip  # a node learns its address from a MEET, as Valkey
            if sender is None and kind == MEET and header.id not in forgotten(view) \
                    and is_ip(header.ip or peer_ip):
                self.start_handshake(header.ip or peer_ip, header.port, header.cport, meet=False)
                self._take_gossip(header, None, out)
            out.reply = True
        if link_node is not None and kind == PONG:
            if link_node.handshake:
                sender = self._name(link_node, header)
                if sender is None:
                    out.close = True
                    return out
            elif link_node.id != header.id:  # another node answers at that address now
                out.close = True
                return out
            self._answered(link_node)
        if sender is None or sender is view.myself:
            return out
        self._learn_sender(sender, header, out)
        if "paused" in header.flags:
            self.failover.primary_paused(sender, header.offset)
        if kind in (PING, PONG, MEET):
            self._take_gossip(header, sender, out)
        if out.changed:
            redirect_blocked_clients(view)
        return out

    def _answered(self, node: ClusterNode) -> None:
        """A PONG on the link to `node`: it is reachable; fail? ends, and fail when Valkey's
        clearNodeFailureIfNeeded would end it."""
        now = self.now()
        node.pong_received = now
        node.ping_sent = 0
        node.suspected = False
        if node.failing:
            has_slots = node.is_primary and node in self.view.owners
            timeout = self.view.state.config["cluster-node-timeout"]
            if not has_slots or now - self.fail_times.get(node.id, 0) > timeout * FAIL_UNDO:
                node.failing = False
                self.fail_times.pop(node.id, None)

    def _learn_sender(self, sender: ClusterNode, header: Header, out: Outcome) -> None:
        """What the sender says of itself: epochs, role, shard, offset, slots; then a config
        epoch it shares with this node resolved as Valkey resolves it."""
        view = self.view
        view.current_epoch = max(view.current_epoch, header.current_epoch)
        sender.config_epoch = max(sender.config_epoch, header.config_epoch)
        sender.repl_offset = header.offset
        sender.hostname = header.hostname
        sender.nofailover = "nofailover" in header.flags
        out.changed |= self._take_role(sender, header)
        sender.shard_id = header.shard
        if sender.is_primary and header.slots != slot_bitmap(view, sender):
            mine = view.myself.primary
            had_slots = mine is not None and mine in view.owners
            out.updates = self._take_slots(sender, bitmap_ranges(header.slots))
            out.changed = True
            if should_follow(view, sender, had_slots):  # a failover in this replica's shard
                follow_primary(view, sender)
        self._resolve_epoch_collision(sender)

    def _take_role(self, sender: ClusterNode, header: Header) -> bool:
        """A primary turned replica, or back: True when it changed."""
        view = self.view
        if not header.primary:
            was = sender.primary
            sender.primary = None
            return was is not None
        primary = view.nodes.get(header.primary)
        if primary is None or primary.handshake or sender.primary is primary:
            return False
        if sender.is_primary:  # a primary turned replica: its slots are no longer its
            lose_slots(view, [s for s in range(SLOTS) if view.owners[s] is sender])
        sender.primary = primary
        return True

    def _take_slots(self, sender: ClusterNode, claimed: list[tuple[int, int]]) -> list[ClusterNode]:
        """clusterUpdateSlotsConfigWith through the view's own rule (a claim with a greater
        config epoch wins, ClusterView._take_claims); the owners with a greater epoch
        than the sender's of slots it still claims are returned, for UPDATE messages."""
        view = self.view
        image = cast("ClusterView", _ClaimImage(claimed))  # read as another view's claims
        view._take_claims(image, sender)  # the view's own rule, shared with the in-process bus
        stale: dict[str, ClusterNode] = {}
        for first, last in claimed:
            for owner in view.owners[first:last + 1]:
                if owner is not None and owner is not sender and owner.config_epoch > sender.config_epoch:
                    stale[owner.id] = owner
        return list(stale.values())

    def _resolve_epoch_collision(self, sender: ClusterNode) -> None:
        """clusterHandleConfigEpochCollision: two primaries with one config epoch; the one
        whose id is the smaller takes a new epoch."""
        view = self.view
        myself = view.myself
        if not (sender.is_primary and myself.is_primary) or sender.config_epoch != myself.config_epoch:
            return
        if sender.id <= myself.id:
            return
        view.current_epoch += 1
        myself.config_epoch = view.current_epoch

    def _take_gossip(self, header: Header, sender: ClusterNode | None, out: Outcome) -> None:
        """clusterProcessGossipSection: failure reports from a primary sender; unknown nodes
        met (a handshake), but not those forgotten, nor this node."""
        view = self.view
        for entry in header.gossip:
            node = view.nodes.get(entry["id"])
            if node is not None:
                if sender is not None and sender.is_primary and node is not view.myself:
                    if "pfail" in entry["flags"] or "fail" in entry["flags"]:
                        self.reports.setdefault(node.id, {})[sender.id] = self.now()
                        if self.fail_if_agreed(node):
                            out.failed.append(node)
                    else:
                        self.reports.get(node.id, {}).pop(sender.id, None)
                continue
            if entry["id"] in forgotten(view) or not is_ip(entry["ip"]) or entry["id"] == view.myself.id:
                continue
            if sender is not None:
                self.start_handshake(entry["ip"], entry["port"], entry["cport"])

    # --- failovers ---------------------------------------------------------------------------

    def take_auth_request(self, header: Header) -> bool:
        """FAILOVER_AUTH_REQUEST (its sender's header, learnt first as any): True when
        this primary votes for it."""
        view = self.view
        sender = view.nodes.get(header.id)
        if sender is None or sender.handshake or sender is view.myself:
            return False
        self._learn_sender(sender, header, Outcome())
        return self.failover.should_vote(sender, header.current_epoch, header.config_epoch,
                                         bitmap_ranges(header.slots), "forceack" in header.flags)

    def take_auth_ack(self, sender_id: str, current_epoch: int) -> None:
        sender = self.view.nodes.get(sender_id)
        if sender is not None and not sender.handshake:
            self.failover.acked(sender, current_epoch)

    def take_mfstart(self, sender_id: str) -> ClusterNode | None:
        """MFSTART: the replica whose manual failover this primary now pauses for, if any."""
        sender = self.view.nodes.get(sender_id)
        if sender is None or sender.handshake or not self.failover.primary_asked(sender):
            return None
        return sender

    def take_update(self, node_id: str, config_epoch: int, slots: bytes) -> None:
        """UPDATE: a node's slots as it claims them with a newer config epoch."""
        node = self.view.nodes.get(node_id)
        if node is None or node.handshake or node.config_epoch >= config_epoch:
            return
        node.config_epoch = config_epoch
        self._take_slots(node, bitmap_ranges(slots))
        redirect_blocked_clients(self.view)

    def take_fail(self, sender_id: str, node_id: str) -> None:
        """FAIL from a known node: the node is failing, whatever this one thought."""
        view = self.view
        node = view.nodes.get(node_id)
        if sender_id not in view.nodes or node is None or node is view.myself or node.failing:
            return
        node.failing = True
        self.fail_times[node.id] = self.now()
        redirect_blocked_clients(view)

    def take_forget(self, sender_id: str, node_id: str) -> None:
        """The forgotten-node extension: forget it too, unless it is this node or its primary."""
        view = self.view
        node = view.nodes.get(node_id)
        if sender_id not in view.nodes or node is None or node is view.myself or view.myself.primary is node:
            return
        forget_node(view, node)
        self.meet.discard(node)
        redirect_blocked_clients(view)

    # --- failure detection (clusterCron) ---------------------------------------------------------

    def look(self, reachable: set[ClusterNode]) -> list[ClusterNode]:
        """Each node whose ping went unanswered for node-timeout is suspected; the nodes
        that now fail (most primaries agree) are returned, for a FAIL message."""
        view = self.view
        now = self.now()
        timeout = view.state.config["cluster-node-timeout"]
        failed: list[ClusterNode] = []
        for node in list(view.nodes.values()):
            if node is view.myself or node.handshake:
                continue
            if node not in reachable and node.ping_sent == 0:
                node.ping_sent = now  # no link: as a ping sent now (Valkey's claim)
            if node.ping_sent and now - node.ping_sent > timeout:
                node.suspected = True
            if node.suspected and self.fail_if_agreed(node):
                failed.append(node)
        return failed

    def count_reports(self, node: ClusterNode) -> int:
        """clusterNodeFailureReportsCount: the valid reports about `node`."""
        return len(self._valid_reports(node))

    def _valid_reports(self, node: ClusterNode) -> dict[str, int]:
        """The reports about `node`, those too old (or from a node gone) dropped."""
        view = self.view
        now = self.now()
        validity = view.state.config["cluster-node-timeout"] * FAIL_REPORT_VALIDITY
        reports = self.reports.get(node.id, {})
        for reporter in [r for r, when in reports.items() if now - when > validity or r not in view.nodes]:
            del reports[reporter]
        return reports

    def fail_if_agreed(self, node: ClusterNode) -> bool:
        """markNodeAsFailingIfNeeded: a suspected node fails when the valid reports of the
        primaries, this one's own included, reach a majority of the cluster's size."""
        view = self.view
        if not node.suspected or node.failing:
            return False
        reports = self._valid_reports(node)
        size = len({id(owner) for owner in view.owners if owner is not None})
        votes = len(reports) + (1 if view.myself.is_primary else 0)
        if votes < size // 2 + 1:
            return False
        node.failing = True
        self.fail_times[node.id] = self.now()
        redirect_blocked_clients(view)
        return True


class _ClaimImage:
    """A sender's claims as ClusterView._take_claims reads another view: its node, and an
    owner table where the slots it claims are that node's."""

    def __init__(self, claimed: list[tuple[int, int]]) -> None:
        self.myself = ClusterNode("", "", 0)
        self.owners: list[ClusterNode | None] = [None] * SLOTS
        for first, last in claimed:
            self.owners[first:last + 1] = [self.myself] * (last - first + 1)
