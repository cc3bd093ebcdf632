"""Cluster mode (`cluster-enabled yes`): this node's view of the cluster and the routing
of each command to the node that serves its keys.

A view holds the nodes this node knows (itself first), who serves each of the 16384 hash
slots, the slots being moved (MIGRATING to / IMPORTING from a node), and the epochs.
`route` is Valkey's getNodeByQuery: a command whose keys hash to a slot this node does
not serve is answered MOVED (or ASK, TRYAGAIN, CROSSSLOT, CLUSTERDOWN) instead of run.

Nodes of one process (fakekey.Cluster) share a `Bus`: what a node claims (its slots, its
role, its epoch) reaches every node that can see it at once, as gossip would a moment
later; a partition hides two nodes from each other. Keys are counted per slot only while
cluster mode is on (`SlotIndex`), for COUNTKEYSINSLOT and GETKEYSINSLOT."""

from __future__ import annotations

import binascii
import math
import os
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.cluster_controls import ClusterControls
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState
    from fakekey.net.cluster_bus import ClusterBus

SLOTS = 16384

CROSSSLOT = ReplyError("CROSSSLOT Keys in request don't hash to the same slot")
TRYAGAIN = ReplyError("TRYAGAIN Multiple keys request during rehashing of slot")
DOWN = ReplyError("CLUSTERDOWN The cluster is down")
DOWN_READ_ONLY = ReplyError("CLUSTERDOWN The cluster is down and only accepts read commands")
UNBOUND = ReplyError("CLUSTERDOWN Hash slot not served")
READ_ONLY_REPLICA = ReplyError("READONLY You can't write against a read only replica.")


def key_slot(key: bytes) -> int:
    """Valkey's keyHashSlot: CRC16/XMODEM of the key, or of its first non-empty {tag}."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return binascii.crc_hqx(key, 0) & (SLOTS - 1)


def split_slots(primaries: int) -> list[tuple[int, int]]:
    """The slot ranges `valkey-cli --cluster create` gives `primaries` primaries, in order.

    valkey-cli (src/valkey-cli.c, clusterManagerCommandCreate) computes them in C `float`:
    `slots_per_node = 16384 / (float)n`, and for each primary `last = lround(cursor +
    slots_per_node - 1)` (the last primary ends at 16383), then `cursor += slots_per_node`.
    The float32 rounding is kept here so every count of primaries splits as valkey-cli's."""
    if primaries < 1:
        raise ValueError("a cluster needs at least one primary")

    def f32(value: float) -> float:
        return float(struct.unpack("f", struct.pack("f", value))[0])

    per_node = f32(SLOTS / primaries)
    ranges: list[tuple[int, int]] = []
    first, cursor = 0, 0.0
    for i in range(primaries):
        last = math.floor(f32(f32(cursor + per_node) - 1) + 0.5)  # lround: half away from 0
        if last > SLOTS or i == primaries - 1:
            last = SLOTS - 1
        last = max(last, first)
        ranges.append((first, last))
        first = last + 1
        cursor = f32(cursor + per_node)
    return ranges


def new_node_id() -> str:
    return os.urandom(20).hex()


class ClusterNode:
    """A node as one view knows it."""

    def __init__(self, node_id: str, host: str, port: int, bus_port: int = 0) -> None:
        self.id = node_id
        self.host = host
        self.port = port
        self.bus_port = bus_port or port + 10000
        self.hostname = ""
        self.shard_id = new_node_id()
        self.primary: ClusterNode | None = None  # a replica's primary
        self.config_epoch = 0
        self.ping_sent = 0
        self.pong_received = 0
        self.connected = True
        self.repl_offset = 0
        self.failing = False  # "fail": agreed down
        self.suspected = False  # "fail?": this node has not heard from it in node-timeout
        self.handshake = False
        self.nofailover = False

    @property
    def is_primary(self) -> bool:
        return self.primary is None

    def flags(self, myself: ClusterNode) -> str:
        """The flags column of CLUSTER NODES."""
        out = ["myself"] if self is myself else []
        out.append("master" if self.is_primary else "slave")
        if self.suspected and not self.failing:
            out.append("fail?")
        if self.failing:
            out.append("fail")
        if self.handshake:
            out.append("handshake")
        if self.nofailover:
            out.append("nofailover")
        return ",".join(out)


class ClusterView:
    """This node's view of its cluster (Valkey's clusterState)."""

    def __init__(self, state: ServerState, myself: ClusterNode) -> None:
        self.state = state
        self.myself = myself
        self.nodes: dict[str, ClusterNode] = {myself.id: myself}
        self.owners: list[ClusterNode | None] = [None] * SLOTS
        self.migrating: dict[int, ClusterNode] = {}  # slot -> the node it goes to
        self.importing: dict[int, ClusterNode] = {}  # slot -> the node it comes from
        self.current_epoch = 0
        self.last_vote_epoch = 0
        self.bus: Bus | None = None
        self.wire: ClusterBus | None = None  # the bus to nodes of other processes (net/cluster_bus.py)
        self.forgotten_ids: dict[str, int] = {}  # CLUSTER FORGET's black list: id -> until (ms)
        self.handshakes: dict[str, int] = {}  # MEET to an address nobody answers: id -> drop at (ms)
        self.alive = True  # False while its process is "killed" (Cluster.kill)
        self.ok = False  # cluster_state:ok, as `refresh` last found it
        self.slot_migrations: list[Any] = []  # MIGRATESLOTS' jobs, newest first (commands/slot_migrations.py)
        self.down_since = 0

    # --- what the view says ---------------------------------------------------------------

    def node(self, node_id: bytes | str) -> ClusterNode | None:
        key = node_id.decode("utf-8", "replace") if isinstance(node_id, bytes) else node_id
        return self.nodes.get(key)

    def primary_of(self, node: ClusterNode) -> ClusterNode:
        return node.primary if node.primary is not None else node

    def slots_of(self, node: ClusterNode) -> list[tuple[int, int]]:
        """The slot ranges `node` serves, in order."""
        out: list[tuple[int, int]] = []
        start = -1
        owners = self.owners
        for slot in range(SLOTS + 1):
            owned = slot < SLOTS and owners[slot] is node
            if owned and start < 0:
                start = slot
            elif not owned and start >= 0:
                out.append((start, slot - 1))
                start = -1
        return out

    def replicas_of(self, node: ClusterNode) -> list[ClusterNode]:
        return [n for n in self.nodes.values() if n.primary is node]

    def healthy(self) -> bool:
        """cluster_state:ok as last worked out (`refresh`): routing reads it on every
        keyed command, so it is not recomputed there (Valkey's is its cron's too)."""
        return self.ok

    def refresh(self) -> None:
        """Work out cluster_state again, after a change to the view (and at each cron)."""
        self.ok = self.compute_health()

    def compute_health(self) -> bool:
        """cluster_state:ok, as Valkey's clusterUpdateState decides: every slot served by
        a node not failed (unless full coverage is not required), and most of the primaries
        that serve slots within reach (not suspected): the minority side of a partition,
        or a node with no slots among none, is down."""
        owners = set(self.owners)  # the few distinct owners (None: a slot nobody serves)
        unserved = None in owners
        serving = [owner for owner in owners if owner is not None]
        if self.state.config["cluster-require-full-coverage"] and (
                unserved or any(owner.failing for owner in serving)):
            return False
        reached = sum(1 for node in serving
                      if node is self.myself or not (node.suspected or node.failing))
        return reached >= len(serving) // 2 + 1

    def assigned_slots(self) -> int:
        return sum(1 for owner in self.owners if owner is not None)

    def start_handshake(self, host: str, port: int, bus_port: int, drop_at: int) -> None:
        """A MEET whose peer never answers: a `handshake` node until `drop_at` (ms)."""
        node = ClusterNode(new_node_id(), host, port, bus_port)
        node.handshake = True
        node.connected = False
        self.nodes[node.id] = node
        self.handshakes[node.id] = drop_at

    def drop_stale_handshakes(self, now: int) -> None:
        for node_id, drop_at in list(self.handshakes.items()):
            if now >= drop_at:
                del self.handshakes[node_id]
                self.nodes.pop(node_id, None)

    # --- routing --------------------------------------------------------------------------

    def route(self, client: Client, cmd: Command, argv: list[bytes]) -> ReplyError | None:
        """None when this node serves the command; otherwise the redirect or refusal."""
        is_exec = cmd.name == "exec"
        if is_exec:
            if not client.in_multi:
                return None
            slot = -1
            for queued, args in client.multi_queue:
                for s in self._slots_of_call(queued, args):
                    if slot == -1:
                        slot = s
                    elif s != slot:
                        return CROSSSLOT
            calls = client.multi_queue
        else:
            slots = self._slots_of_call(cmd, argv)
            if not slots:
                return None
            slot = slots[0]
            if any(s != slot for s in slots):
                return CROSSSLOT
            calls = [(cmd, argv)]
        if slot == -1:
            return None
        owner = self.owners[slot]
        if owner is None:
            return UNBOUND
        myself = self.myself
        migrating = importing = False
        if myself.is_primary or client.cluster_readonly:
            if owner is self.primary_of(myself) and slot in self.migrating:
                migrating = True
            elif slot in self.importing:
                importing = True
        flags = _call_flags(calls) if is_exec else cmd.flags  # one command: its own, no copy
        pubsub = "pubsub" in flags
        writes = "write" in flags
        missing = existing = 0
        multiple = False
        if migrating or importing:
            first: bytes | None = None
            for queued, args in calls:
                if queued.name in ("move", "copy") and _blocked_in_migration(client, queued, args):
                    return TRYAGAIN
                for at in queued.key_positions(args):
                    key = args[at]
                    if first is None:
                        first = key
                    elif key != first:
                        multiple = True
                    if not pubsub:  # a key logically expired counts as missing
                        if client.db.data.get(key) is None or client.db.is_expired(key):
                            missing += 1
                        else:
                            existing += 1
        if not self.healthy():
            if pubsub:
                if not self.state.config["cluster-allow-pubsubshard-when-down"]:
                    return DOWN
            elif not self.state.config["cluster-allow-reads-when-down"]:
                return DOWN
            elif writes:
                return DOWN_READ_ONLY
        if (migrating or importing) and cmd.name == "migrate" and myself.is_primary:
            return None
        if migrating and missing:
            if existing:
                return TRYAGAIN
            return redirect("ASK", slot, self.migrating[slot])
        if importing and (client.asking or "asking" in flags):
            if multiple and missing:
                return TRYAGAIN
            return None
        if (client.cluster_readonly or pubsub) and not writes and not myself.is_primary \
                and myself.primary is owner:
            return None
        if owner is not myself:
            return redirect("MOVED", slot, owner)
        return None

    def script_refusal(self, caller: Client, cmd: Command, argv: list[bytes]) -> bytes | None:
        """A script's command on keys it did not declare (scriptVerifyClusterState): they
        may be in any slot this node serves (or reads, on a replica with READONLY), never
        in another node's; None when allowed."""
        writes = "write" in cmd.flags
        if not self.healthy():
            name = cmd.name.encode()
            if not self.state.config["cluster-allow-reads-when-down"]:
                return b"ERR Can not execute a command '%s' while the cluster is down" % name
            if writes:
                return (b"ERR Can not execute a write command '%s' while the cluster is down and "
                        b"readonly" % name)
        myself = self.myself
        for slot in self._slots_of_call(cmd, argv):
            owner = self.owners[slot]
            if owner is myself or (slot in self.importing and caller.asking):
                continue
            if caller.cluster_readonly and not writes and myself.primary is not None \
                    and myself.primary is owner:
                continue
            return b"ERR Attempted to access a non local key in a cluster node"
        return None

    def _slots_of_call(self, cmd: Command, argv: list[bytes]) -> list[int]:
        return [key_slot(argv[at]) for at in cmd.key_positions(argv)]

    # --- changes --------------------------------------------------------------------------

    def claim(self, slot: int, node: ClusterNode) -> None:
        self.owners[slot] = node

    def announce(self) -> None:
        """Tell the nodes that can see this one what it now claims (gossip, at once)."""
        self.refresh()
        if self.bus is not None:
            self.bus.publish(self)
        if self.wire is not None:
            self.wire.announce()

    def learn(self, other: ClusterView) -> None:
        """What `other` says of itself: its role, epoch and slots (Valkey's handling of a
        PING/PONG header: a claim with a greater config epoch wins the slot). A node this
        one forgot (CLUSTER FORGET) stays away until its ban ends."""
        them = other.myself
        if them.id in self.forgotten_ids and self.forgotten_ids[them.id] > self.state.now:
            return
        sender = self.nodes.get(them.id)
        if sender is None:
            sender = self.meet_node(them)
        sender.config_epoch = them.config_epoch
        sender.repl_offset = them.repl_offset
        sender.shard_id = them.shard_id
        sender.hostname = them.hostname
        if them.primary is None:
            sender.primary = None
        else:
            sender.primary = self.nodes.get(them.primary.id) or self.meet_node(them.primary)
        sender.failing = sender.suspected = False
        sender.connected = True
        self.current_epoch = max(self.current_epoch, other.current_epoch)
        if sender.is_primary:
            self._take_claims(other, sender)
        self.refresh()

    def _take_claims(self, other: ClusterView, sender: ClusterNode) -> None:
        """The slots `sender` claims with a greater config epoch are its now; a primary that
        lost them stops serving them (its blocked clients are redirected, its shard
        channels closed), and one that lost every slot to its own replica follows it."""
        them = other.myself
        taken: list[int] = []
        for slot in range(SLOTS):
            if other.owners[slot] is not them:
                continue
            owner = self.owners[slot]
            if owner is sender or slot in self.importing:  # importing: ours by SETSLOT NODE
                continue
            if owner is None or owner.config_epoch < sender.config_epoch:
                if owner is self.primary_of(self.myself):
                    taken.append(slot)
                self.owners[slot] = sender
                self.migrating.pop(slot, None)
        if not taken:
            return
        drop_shard_channels(self.state, set(taken))
        redirect_blocked_clients(self)
        myself = self.myself
        if myself.is_primary and myself not in self.owners:
            follow_primary(self, sender)
    def meet_node(self, template: ClusterNode) -> ClusterNode:
        """A node this view did not know: its own copy of it."""
        node = ClusterNode(template.id, template.host, template.port, template.bus_port)
        node.shard_id = template.shard_id
        node.config_epoch = template.config_epoch
        self.nodes[node.id] = node
        return node


def relay_publish(view: ClusterView, channel: bytes, message: bytes, sharded: bool) -> None:
    """PUBLISH reaches the subscribers of every node the publisher's node can see, SPUBLISH
    those of its shard (its primary and replicas), as Valkey's bus carries them; the
    publisher's count is its own node's subscribers only."""
    if view.wire is not None:
        view.wire.publish(channel, message, sharded)
    bus = view.bus
    if bus is None:
        return
    shard = view.primary_of(view.myself).id
    for other in bus.views:
        if other is view or not bus.sees(view, other):
            continue
        if not sharded:
            other.state.pubsub.publish(channel, message)
        elif other.primary_of(other.myself).id == shard:
            other.state.pubsub.spublish(channel, message)


def redirect(kind: str, slot: int, node: ClusterNode) -> ReplyError:
    return ReplyError(f"{kind} {slot} {node.host}:{node.port}")


def _call_flags(calls: list[tuple[Command, list[bytes]]]) -> set[str]:
    """The flags of a transaction's queued commands together."""
    flags: set[str] = set()
    for queued, _args in calls:
        flags.update(queued.flags)
    return flags


def _blocked_in_migration(client: Client, cmd: Command, argv: list[bytes]) -> bool:
    """MOVE, and COPY to another database, are refused while the slot moves (Valkey)."""
    if cmd.name == "move":
        return True
    if len(argv) > 4 and argv[3].lower() == b"db":
        return argv[4] != str(client.db.index).encode()
    return False


class Bus:
    """The nodes of one process's cluster, and who can see whom (a partition hides two
    nodes from each other until healed). `tick` is failure detection: a node unheard of
    for cluster-node-timeout is suspected (fail?), then failed (fail) when most primaries
    agree, and a replica of a failed primary takes over (`promote`, given by the layer
    that owns replication)."""

    def __init__(self) -> None:
        self.views: list[ClusterView] = []
        self.cut: set[frozenset[str]] = set()
        self.promote: Callable[[ServerState], None] | None = None
        self.follow: Callable[[ServerState, ServerState], None] | None = None  # (replica, primary)
        self.unseen_since: dict[tuple[str, str], int] = {}  # (observer, node) -> ms
        self.controls: ClusterControls | None = None  # FAKEKEY.CLUSTER's (given by fakekey.Cluster)

    def tick(self, now: int) -> None:
        """Each live node's look at the others, at `now` on the cluster's clock."""
        live = [v for v in self.views if v.alive]
        for view in live:
            timeout = view.state.config["cluster-node-timeout"]
            for other in self.views:
                if other is view:
                    continue
                node = view.nodes.get(other.myself.id)
                if node is None:
                    continue
                pair = (view.myself.id, other.myself.id)
                if self.sees(view, other):
                    self.unseen_since.pop(pair, None)
                    node.suspected = node.failing = False
                    node.connected = True
                    continue
                since = self.unseen_since.setdefault(pair, now)
                node.connected = False
                node.ping_sent = node.ping_sent or since
                if now - since > timeout:
                    node.suspected = True
        self._agree_on_failures(live)
        for view in live:
            view.refresh()

    def _agree_on_failures(self, live: list[ClusterView]) -> None:
        """A node suspected by most primaries fails; its shard's first live replica that
        sees a majority takes over."""
        primaries = [v for v in self.views if v.myself.is_primary]
        quorum = len(primaries) // 2 + 1
        for dead in self.views:
            voters = [v for v in live if v.myself.is_primary
                      and (n := v.nodes.get(dead.myself.id)) is not None and n.suspected]
            if len(voters) < quorum:
                continue
            for view in live:
                node = view.nodes.get(dead.myself.id)
                if node is not None and self._majority_seen(view, primaries, quorum):
                    node.failing = True
            if dead.myself.is_primary and self.promote is not None:
                heir = next((v for v in live if v.myself.primary is not None
                             and v.myself.primary.id == dead.myself.id
                             and self._majority_seen(v, primaries, quorum)), None)
                if heir is not None and not heir.state.config["cluster-replica-no-failover"]:
                    self.promote(heir.state)

    def _majority_seen(self, view: ClusterView, primaries: list[ClusterView], quorum: int) -> bool:
        return sum(1 for p in primaries if p is view or self.sees(view, p)) >= quorum

    def rejoined(self, view: ClusterView) -> None:
        """A node back (restarted, healed): it and the others exchange what they claim; a
        primary whose slots went to its replica becomes that replica's replica."""
        others = [o for o in self.views if o is not view and self.sees(view, o)]
        for other in others:  # first what it missed (it may follow a new primary)...
            view.learn(other)
        for other in others:  # ...then what it is now
            other.learn(view)

    def at(self, host: str, port: int) -> ClusterView | None:
        """The live node of this cluster listening at host:port."""
        return next((v for v in self.views if v.alive and v.myself.port == port
                     and v.myself.host in (host, "")), None)

    def join(self, view: ClusterView) -> None:
        view.bus = self
        self.views.append(view)

    def sees(self, a: ClusterView, b: ClusterView) -> bool:
        return frozenset((a.myself.id, b.myself.id)) not in self.cut and b.alive

    def publish(self, sender: ClusterView) -> None:
        if not sender.alive:
            return
        for view in self.views:
            if view is not sender and self.sees(sender, view):
                view.learn(sender)


class SlotIndex:
    """The keys of each slot of one database, in the order they came (GETKEYSINSLOT)."""

    def __init__(self) -> None:
        self.slots: dict[int, dict[bytes, None]] = {}
        self.walk_orders: Any = None  # CLUSTERSCAN's kept key orders (commands/cluster.py)

    def added(self, key: bytes) -> None:
        self.slots.setdefault(key_slot(key), {})[key] = None

    def removed(self, key: bytes) -> None:
        slot = key_slot(key)
        keys = self.slots.get(slot)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                del self.slots[slot]

    def count(self, slot: int) -> int:
        keys = self.slots.get(slot)
        return 0 if keys is None else len(keys)

    def keys(self, slot: int, count: int) -> list[bytes]:
        keys = self.slots.get(slot)
        if keys is None:
            return []
        out: list[bytes] = []
        for key in keys:
            if len(out) >= count:
                break
            out.append(key)
        return out

    def clear(self) -> None:
        self.slots.clear()




def enable_cluster(state: ServerState, host: str, port: int) -> ClusterView:
    """Turn `state` into a cluster node (cluster-enabled yes, at start): a new node id,
    no slots, `cluster-databases` databases, each counting its keys per slot."""
    myself = ClusterNode(new_node_id(), host, port, state.config["cluster-port"])
    view = ClusterView(state, myself)
    state.cluster = view
    view.refresh()
    state.dbs.truncate(state.config["cluster-databases"])
    for db in state.dbs:
        index = SlotIndex()
        for key in db.data:
            index.added(key)
        db.slot_index = index
    return view


# --- for the CLUSTER command ------------------------------------------------------------
# What the CLUSTER subcommands (fakekey/commands/cluster.py) change in a view, as Valkey's
# cluster_legacy.c changes its clusterState. `lose_slots` and `redirect_blocked_clients`
# also serve a slot taken over by gossip (`learn`).

from fakekey.core.blocking import Waiter  # noqa: E402 - this section's own import

if TYPE_CHECKING:
    from collections.abc import Iterable


def node_epoch(node: ClusterNode) -> int:
    """The config epoch CLUSTER NODES and INFO show: a replica shows its primary's."""
    return node.primary.config_epoch if node.primary is not None else node.config_epoch


def keys_in_slot(state: ServerState, slot: int) -> int:
    """Valkey's countKeysInSlot: the keys of `slot`, in every database."""
    return sum(db.slot_index.count(slot) for db in state.dbs if db.slot_index is not None)


def bump_epoch(view: ClusterView) -> bool:
    """clusterBumpConfigEpochWithoutConsensus: a new config epoch for this node, unless it
    already holds the greatest one. True when it moved."""
    myself = view.myself
    greatest = max([view.current_epoch, *(n.config_epoch for n in view.nodes.values())])
    if myself.config_epoch != 0 and myself.config_epoch == greatest:
        return False
    view.current_epoch += 1
    myself.config_epoch = view.current_epoch
    return True


def lose_slots(view: ClusterView, slots: Iterable[int]) -> None:
    """clusterDelSlot for each slot that has an owner: unassigned, and the subscribers of
    its shard channels unsubscribed (on a replica too)."""
    owners = view.owners
    lost: set[int] = set()
    for slot in slots:
        if owners[slot] is not None:
            owners[slot] = None
            lost.add(slot)
    drop_shard_channels(view.state, lost)


def drop_shard_channels(state: ServerState, slots: set[int]) -> None:
    """removeChannelsInSlot: each subscriber of a shard channel of `slots` loses it and is
    told with `sunsubscribe <channel> <its shard channels left>`."""
    if not slots:
        return
    pubsub = state.pubsub
    for channel in [ch for ch in pubsub.shard_channels if key_slot(ch) in slots]:
        for client in list(pubsub.shard_channels.get(channel, ())):
            pubsub.unsubscribe(client, channel, shard=True)
            client.push([b"sunsubscribe", channel, len(client.shard_channels)])


def redirect_blocked_clients(view: ClusterView) -> None:
    """clusterRedirectBlockedClientIfNeeded for every client blocked on keys: CLUSTERDOWN
    while the cluster is down; MOVED (or `Hash slot not served`) once this node no longer
    serves their slot and does not import it. Valkey's clientsCron does it within a
    tick; here it is done as soon as the view changes."""
    view.refresh()
    healthy = view.healthy()
    for client in list(view.state.clients.values()):
        waiter = client.blocked
        if isinstance(waiter, Waiter) and waiter.keys:
            error = _blocked_refusal(view, client, waiter, healthy)
            if error is not None:
                view.state.blocking.unblock(client, error)


def _blocked_refusal(view: ClusterView, client: Client, waiter: Waiter,
                     healthy: bool) -> ReplyError | None:
    if not healthy:
        return DOWN
    slot = key_slot(waiter.keys[0])  # a blocked command's keys share one slot
    owner = view.owners[slot]
    myself = view.myself
    if client.cluster_readonly and "write" not in waiter.cmd.flags and myself.primary is not None \
            and myself.primary is owner:
        return None
    if owner is myself or slot in view.importing:
        return None
    return UNBOUND if owner is None else redirect("MOVED", slot, owner)


def forgotten(view: ClusterView) -> dict[str, int]:
    """The ids CLUSTER FORGET dropped and until when (ms) they stay away: Valkey's nodes
    black list (cluster-blacklist-ttl), emptied of the ids whose time is up."""
    table = view.forgotten_ids
    now = view.state.now
    for node_id in [i for i, until in table.items() if until <= now]:
        del table[node_id]
    return table


def forget_node(view: ClusterView, node: ClusterNode) -> None:
    """clusterBlacklistAddNode then clusterDelNode: its open slots closed, its slots
    unassigned, gone from the table for cluster-blacklist-ttl seconds."""
    forgotten(view)[node.id] = view.state.now + view.state.config["cluster-blacklist-ttl"] * 1000
    for table in (view.migrating, view.importing):
        for slot in [s for s, peer in table.items() if peer is node]:
            del table[slot]
    lose_slots(view, [s for s in range(SLOTS) if view.owners[s] is node])
    del view.nodes[node.id]


def spread_forget(view: ClusterView, node_id: str) -> None:
    """Valkey gossips a forgotten node (the forgotten-node ping extension): every node that
    sees this one forgets it too, but the node itself and its replicas."""
    if view.wire is not None:
        view.wire.spread_forget(node_id)
    bus = view.bus
    if bus is None:
        return
    for other in bus.views:
        node = other.nodes.get(node_id)
        if other is view or node is None or not bus.sees(view, other):
            continue
        if node is not other.myself and other.myself.primary is not node:
            forget_node(other, node)
            redirect_blocked_clients(other)


def reset_view(view: ClusterView, hard: bool) -> None:
    """clusterReset: a primary again (a replica drops its data), no open slots, no slots,
    no other node, a new shard id (Valkey 9.1 takes one even on a soft reset); HARD also
    zeroes the epochs and takes a new node id."""
    state, myself = view.state, view.myself
    if myself.primary is not None:
        myself.primary = None
        for db in state.dbs:
            db.flush()
    view.migrating.clear()
    view.importing.clear()
    lose_slots(view, range(SLOTS))
    view.nodes = {myself.id: myself}
    forgotten(view).clear()
    myself.shard_id = new_node_id()
    if hard:
        view.current_epoch = view.last_vote_epoch = myself.config_epoch = 0
        myself.id = new_node_id()
        view.nodes = {myself.id: myself}
    view.refresh()


def replica_views(view: ClusterView) -> list[ClusterView]:
    """The live views of this node's replicas on its bus (a SETSLOT reaches them first)."""
    if view.bus is None:
        return []
    mine = view.myself.id
    return [v for v in view.bus.views
            if v.alive and v.myself.primary is not None and v.myself.primary.id == mine]


def set_slot(view: ClusterView, slot: int, action: bytes, node: ClusterNode | None) -> None:
    """CLUSTER SETSLOT's change once its checks passed (clusterCommandSetSlot), on a
    primary or on a replica it reached: `action` is migrating, importing, stable or node."""
    if action == b"migrating" and node is not None:
        view.migrating[slot] = node
    elif action == b"importing" and node is not None:
        view.importing[slot] = node
    elif action == b"stable":
        view.importing.pop(slot, None)
        view.migrating.pop(slot, None)
    elif node is not None:
        assign_slot(view, slot, node)


def assign_slot(view: ClusterView, slot: int, node: ClusterNode) -> None:
    """SETSLOT NODE: `node` owns `slot` now. A node importing it stops (the primary that
    imported it takes a new config epoch); a shard that gave away its last slot follows
    the taker when cluster-allow-replica-migration is on."""
    myself = view.myself
    if slot in view.migrating and keys_in_slot(view.state, slot) == 0:
        del view.migrating[slot]
    mine = view.primary_of(myself)
    was_mine = view.owners[slot] is mine
    lose_slots(view, [slot])
    view.owners[slot] = node
    if was_mine and mine not in view.owners and view.state.config["cluster-allow-replica-migration"]:
        follow_primary(view, node)
    if (node is myself or node is myself.primary) and slot in view.importing:
        del view.importing[slot]
        if node is myself:
            bump_epoch(view)


def follow_primary(view: ClusterView, node: ClusterNode) -> None:
    """clusterSetPrimary: this node becomes a replica of `node` (its open slots closed, its
    shard's id taken, the shard channels of other shards dropped); the replication link
    is made by the bus's `follow`, when the node is in this process, or by the wire to
    other processes (a link over TCP, as REPLICAOF's)."""
    myself = view.myself
    view.migrating.clear()
    view.importing.clear()
    myself.primary = node
    myself.shard_id = node.shard_id
    drop_shard_channels(view.state, {s for s in range(SLOTS) if view.owners[s] is not node})
    bus = view.bus
    if bus is not None and bus.follow is not None:
        other = next((v for v in bus.views if v.myself.id == node.id), None)
        if other is not None:
            bus.follow(view.state, other.state)
    if view.wire is not None:
        view.wire.replicate(node)
