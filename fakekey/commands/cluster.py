"""The cluster commands: CLUSTER and its subcommands, READONLY, READWRITE, ASKING and
CLUSTERSCAN, as Valkey 9.1 answers them.

Without cluster mode every CLUSTER subcommand is refused ("This instance has cluster
support disabled", CLUSTER HELP too) but KEYSLOT; READONLY and READWRITE answer OK. With
`cluster-enabled yes` they read and change this node's view of its cluster
(`state.cluster`, fakekey/core/cluster.py): CLUSTER NODES, SLOTS, SHARDS ... describe it
in Valkey's formats, ADDSLOTS, SETSLOT, FORGET, RESET ... change it with Valkey's checks in
Valkey's order, and every change the other nodes must learn is announced on the bus."""

from __future__ import annotations

import functools
import ipaddress
import itertools
import os
from binascii import crc_hqx
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from fakekey.commands import slot_migrations
from fakekey.commands.args import c_text, help_lines, try_int, wrong_args
from fakekey.commands.scan import ScanOptions, bucket_page, hash_order, parse_cursor, parse_scan_options
from fakekey.core.client import Client
from fakekey.core.cluster import (
    SLOTS,
    ClusterNode,
    ClusterView,
    SlotIndex,
    bump_epoch,
    follow_primary,
    forget_node,
    forgotten,
    key_slot,
    keys_in_slot,
    lose_slots,
    node_epoch,
    redirect_blocked_clients,
    replica_views,
    reset_view,
    set_slot,
    spread_forget,
)
from fakekey.core.keyspace import Database, type_name
from fakekey.core.registry import command, container, keys_range
from fakekey.resp.replies import OK, ReplyError, Simple, Verbatim

NO_CLUSTER = ReplyError("ERR This instance has cluster support disabled")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
BAD_SLOT = ReplyError("ERR Invalid or out of range slot")
LLONG_MAX = 2**63 - 1


def view_of(c: Client) -> ClusterView:
    """This node's view of its cluster; without cluster mode, Valkey's refusal."""
    view = c.state.cluster
    if view is None:
        raise NO_CLUSTER
    return view


def changed(*views: ClusterView) -> None:
    """After a change: clients blocked on slots a view no longer serves are redirected,
    and the other nodes learn it (Valkey's CLUSTER_TODO_UPDATE_STATE and broadcast)."""
    for view in views:
        redirect_blocked_clients(view)
        view.announce()


# --- READONLY, READWRITE, ASKING --------------------------------------------------------


@command("readonly", 1, "loading stale fast", acl="connection", group="cluster", since="3.0.0",
         summary="Lets the connection read from a replica in cluster mode.")
def readonly(c: Client, argv: list[bytes]) -> Any:
    c.cluster_readonly = True  # set without cluster mode too (CLIENT LIST's flag r), as Valkey
    return OK


@command("readwrite", 1, "loading stale fast", acl="connection", group="cluster", since="3.0.0",
         summary="Ends READONLY for the connection.")
def readwrite(c: Client, argv: list[bytes]) -> Any:
    c.cluster_readonly = False
    return OK


@command("asking", 1, "fast", acl="connection", group="cluster", since="3.0.0",
         summary="Lets the next command reach a slot being imported (cluster mode only).")
def asking(c: Client, argv: list[bytes]) -> Any:
    view_of(c)
    c.asking = True  # good for the next command (ServerState.call clears it)
    return OK


# --- the CLUSTER container and its declarations ---------------------------------------------

container("cluster", group="cluster", since="3.0.0", summary="Holds the cluster commands.")

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

Handler = Callable[[Client, list[bytes]], Any]
HANDLERS: dict[str, Handler] = {}


def subcommand(name: str) -> Callable[[Handler], Handler]:
    """The handler of CLUSTER `name` (declared below from CLUSTER_SUBCOMMANDS)."""
    def register(handler: Handler) -> Handler:
        HANDLERS[name] = handler
        return handler
    return register


# --- parsing --------------------------------------------------------------------------------


def parse_slot(raw: bytes) -> int:
    """getSlotOrReply: an integer from 0 to 16383."""
    slot = try_int(raw)
    if slot is None or not 0 <= slot < SLOTS:
        raise BAD_SLOT
    return slot


def parse_integer(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise NOT_INTEGER
    return value


def known_node(view: ClusterView, raw: bytes, error: bytes) -> ClusterNode:
    """clusterLookupNode, or `error` followed by the id as sent."""
    node = view.node(raw)
    if node is None or node.id.encode() != raw:
        raise ReplyError(error + c_text(raw))
    return node


def subcommand_syntax_error(argv: list[bytes]) -> ReplyError:
    """addReplySubcommandSyntaxError: the subcommand as sent."""
    return ReplyError(b"ERR unknown subcommand or wrong number of arguments for '" + c_text(argv[1])[:128]
                      + b"'. Try " + argv[0].upper() + b" HELP.")


# --- what the view says: NODES lines, endpoints ------------------------------------------------


def hostname_of(view: ClusterView, node: ClusterNode) -> str:
    """A node's announced hostname (this node's: cluster-announce-hostname, as set now)."""
    if node is view.myself:
        return str(view.state.config["cluster-announce-hostname"])
    return node.hostname


def slot_ranges(view: ClusterView) -> dict[ClusterNode, list[tuple[int, int]]]:
    """Every owner's slot ranges, in slot order, from one pass over the slots."""
    ranges: dict[ClusterNode, list[tuple[int, int]]] = {}
    owners = view.owners
    start = 0
    for slot in range(1, SLOTS + 1):
        if slot == SLOTS or owners[slot] is not owners[start]:
            owner = owners[start]
            if owner is not None:
                ranges.setdefault(owner, []).append((start, slot - 1))
            start = slot
    return ranges


def node_line(view: ClusterView, node: ClusterNode, ranges: list[tuple[int, int]],
              for_file: bool = False) -> str:
    """clusterGenNodeDescription: one CLUSTER NODES line (without its `\\n`); `for_file`
    adds the aux fields nodes.conf keeps."""
    myself = view.myself
    hostname = hostname_of(view, node)
    parts = [f"{node.id} {node.host}:{node.port}@{node.bus_port}"]
    if hostname:
        parts.append("," + hostname)
    if for_file:
        parts.append(aux_fields(view, node, hostname))
    primary = node.primary.id if node.primary is not None else "-"
    link = "connected" if node is myself or node.connected else "disconnected"
    parts.append(f" {node.flags(myself)} {primary} {node.ping_sent} {node.pong_received}"
                 f" {node_epoch(node)} {link}")
    for first, last in ranges:
        parts.append(f" {first}" if first == last else f" {first}-{last}")
    if node is myself:
        for slot in sorted({*view.migrating, *view.importing}):
            peer = view.migrating.get(slot)
            parts.append(f" [{slot}->-{peer.id}]" if peer is not None
                         else f" [{slot}-<-{view.importing[slot].id}]")
    return "".join(parts)


def aux_fields(view: ClusterView, node: ClusterNode, hostname: str) -> str:
    """nodes.conf's aux fields after the address (Valkey writes them last to first)."""
    out = "" if hostname else ","
    if node is view.myself:
        config = view.state.config
        for name, setting in (("client-ipv6", "cluster-announce-client-ipv6"),
                              ("client-ipv4", "cluster-announce-client-ipv4")):
            if config[setting]:
                out += f",{name}={config[setting]}"
        out += ",tls-port=0"
        if config["cluster-announce-human-nodename"]:
            out += f",nodename={config['cluster-announce-human-nodename']}"
    else:
        out += ",tls-port=0"
    return out + f",shard-id={node.shard_id}"


def nodes_text(view: ClusterView, for_file: bool = False) -> str:
    """clusterGenNodesDescription: a line per node, each ending in `\\n` (the file leaves
    out the nodes still in handshake)."""
    ranges = slot_ranges(view)
    return "".join(node_line(view, node, ranges.get(node, []), for_file) + "\n"
                   for node in view.nodes.values() if not (for_file and node.handshake))


def node_offset(view: ClusterView, node: ClusterNode) -> int:
    """getNodeReplicationOffset: this node's own offset, or the one it heard."""
    if node is not view.myself:
        return node.repl_offset
    state = view.state
    feed_offset = getattr(state.feed, "offset", None)  # a primary with in-process replicas
    if node.primary is None and isinstance(feed_offset, int):
        return feed_offset
    return state.repl_offset


def available(view: ClusterView, node: ClusterNode) -> bool:
    """isNodeAvailable: listed by CLUSTER SLOTS (not failed, offset seen non-zero)."""
    return not node.failing and node_offset(view, node) != 0


def endpoint(view: ClusterView, node: ClusterNode) -> str | None:
    """clusterNodePreferredEndpoint, as cluster-preferred-endpoint-type says."""
    kind = view.state.config["cluster-preferred-endpoint-type"]
    if kind == "ip":
        return node.host
    if kind == "hostname":
        return hostname_of(view, node) or "?"
    return None


# --- describing the cluster ---------------------------------------------------------------------


HELP = [
    "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MYID",
    "    Return the node id.",
    "MYSHARDID",
    "    Return the node's shard id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port@bus-port[,hostname]> <flags> <primary> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, primary and replicas IP addresses, ports and ids",
    "SLOT-STATS",
    "    Return an array of slot usage statistics for slots assigned to the current node.",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
    "MIGRATESLOTS SLOTSRANGE start-slot end-slot [start-slot end-slot ...] NODE node-id "
    "[SLOTSRANGE start-slot end-slot [start-slot end-slot ...] NODE node-id ...]",
    "    Migrate the specified slot ranges from this node to the specified node.",
    "CANCELSLOTMIGRATIONS ALL",
    "    Cancel all migrations.",
    "GETSLOTMIGRATIONS",
    "    Get information about ongoing and recently finished slot imports and exports.",
    "HELP",
    "    Print this help.",
]


@subcommand("help")
def cluster_help(c: Client, argv: list[bytes]) -> Any:
    view_of(c)
    return help_lines(HELP)


@subcommand("info")
def cluster_info(c: Client, argv: list[bytes]) -> Any:
    return Verbatim(info_text(view_of(c)).encode())


def info_text(view: ClusterView) -> str:
    """genClusterInfoString, with Valkey 9.1's node counts and byte counters. No message
    crosses a bus here, so the per-type message lines (shown when non-zero) never show."""
    slots_ok = slots_pfail = slots_fail = 0
    for owner in view.owners:
        if owner is None:
            continue
        if owner.failing:
            slots_fail += 1
        elif owner.suspected:
            slots_pfail += 1
        else:
            slots_ok += 1
    nodes = list(view.nodes.values())
    serving = set(slot_ranges(view))
    voting = [n for n in nodes if n.primary is None and n in serving]
    fields = [
        ("cluster_state", "ok" if view.healthy() else "fail"),
        ("cluster_slots_assigned", SLOTS - view.owners.count(None)),
        ("cluster_slots_ok", slots_ok),
        ("cluster_slots_pfail", slots_pfail),
        ("cluster_slots_fail", slots_fail),
        ("cluster_nodes_pfail", sum(1 for n in nodes if n.suspected and not n.failing)),
        ("cluster_nodes_fail", sum(1 for n in nodes if n.failing)),
        ("cluster_voting_nodes_pfail", sum(1 for n in voting if n.suspected and not n.failing)),
        ("cluster_voting_nodes_fail", sum(1 for n in voting if n.failing)),
        ("cluster_known_nodes", len(nodes)),
        ("cluster_size", len(voting)),
        ("cluster_current_epoch", view.current_epoch),
        ("cluster_my_epoch", node_epoch(view.myself)),
        ("cluster_stats_messages_sent", 0),
        ("cluster_stats_messages_received", 0),
        ("cluster_stats_bytes_sent", 0),
        ("cluster_stats_bytes_received", 0),
        ("cluster_stats_pubsub_bytes_sent", 0),
        ("cluster_stats_pubsub_bytes_received", 0),
        ("cluster_stats_module_bytes_sent", 0),
        ("cluster_stats_module_bytes_received", 0),
        ("total_cluster_links_buffer_limit_exceeded", 0),
    ]
    return "".join(f"{name}:{value}\r\n" for name, value in fields)


@subcommand("myid")
def cluster_myid(c: Client, argv: list[bytes]) -> Any:
    return view_of(c).myself.id.encode()


@subcommand("myshardid")
def cluster_myshardid(c: Client, argv: list[bytes]) -> Any:
    return view_of(c).myself.shard_id.encode()


@subcommand("nodes")
def cluster_nodes(c: Client, argv: list[bytes]) -> Any:
    return Verbatim(nodes_text(view_of(c)).encode())


def cluster_replicas(c: Client, argv: list[bytes]) -> Any:
    """CLUSTER REPLICAS / SLAVES: the NODES lines of a primary's replicas."""
    view = view_of(c)
    node = known_node(view, argv[2], b"ERR Unknown node ")
    if node.primary is not None:
        raise ReplyError("ERR The specified node is not a master")
    ranges = slot_ranges(view)
    return [node_line(view, replica, ranges.get(replica, [])).encode()
            for replica in view.replicas_of(node)]


subcommand("replicas")(cluster_replicas)
subcommand("slaves")(cluster_replicas)


@subcommand("slots")
def cluster_slots(c: Client, argv: list[bytes]) -> Any:
    """Each range of one owner: its bounds, the primary, then its available replicas."""
    view = view_of(c)
    out: list[Any] = []
    for owner, ranges in slot_ranges(view).items():
        nodes = [slots_entry(view, owner)]
        nodes += [slots_entry(view, r) for r in view.replicas_of(owner) if available(view, r)]
        out.extend([first, last, *nodes] for first, last in ranges)
    out.sort(key=lambda entry: entry[0])  # by slot
    return out


def slots_entry(view: ClusterView, node: ClusterNode) -> list[Any]:
    """addNodeToNodeReply: endpoint, port, id, and the other endpoints as a map."""
    kind = view.state.config["cluster-preferred-endpoint-type"]
    hostname = hostname_of(view, node)
    extra: dict[bytes, bytes] = {}
    if kind != "ip":
        extra[b"ip"] = node.host.encode()
    if kind != "hostname" and hostname:
        extra[b"hostname"] = hostname.encode()
    where = endpoint(view, node)
    return [None if where is None else where.encode(), node.port, node.id.encode(), extra]


@subcommand("shards")
def cluster_shards(c: Client, argv: list[bytes]) -> Any:
    """A map per shard (its slots, its nodes, its id), in the node table's order."""
    view = view_of(c)
    shards: dict[str, list[ClusterNode]] = {}
    for node in view.nodes.values():
        shards.setdefault(node.shard_id, []).append(node)
    ranges = slot_ranges(view)
    out = []
    for shard_id, members in shards.items():
        members.sort(key=lambda n: n.primary is not None)  # the primaries first
        served = next((ranges[n] for n in members if n in ranges), [])
        out.append({b"slots": [bound for pair in served for bound in pair],
                    b"nodes": [shard_node(view, n) for n in members],
                    b"id": shard_id.encode()})
    return out


def shard_node(view: ClusterView, node: ClusterNode) -> dict[bytes, Any]:
    """addNodeDetailsToShardReply."""
    out: dict[bytes, Any] = {b"id": node.id.encode()}
    if node.port:
        out[b"port"] = node.port
    out[b"ip"] = node.host.encode()
    where = endpoint(view, node)
    out[b"endpoint"] = b"" if where is None else where.encode()
    hostname = hostname_of(view, node)
    if hostname:
        out[b"hostname"] = hostname.encode()
    offset = node_offset(view, node)
    out[b"role"] = b"master" if node.primary is None else b"replica"
    out[b"replication-offset"] = offset
    if node.failing:
        out[b"health"] = b"fail"
    elif node.primary is not None and offset == 0:
        out[b"health"] = b"loading"
    else:
        out[b"health"] = b"online"
    return out


@subcommand("links")
def cluster_links(c: Client, argv: list[bytes]) -> Any:
    """Two links per peer this node is connected to: the one it opened, the one it took.
    They are made when the server starts, so that is their create-time."""
    view = view_of(c)
    created = int(view.state.start_time * 1000)
    out = []
    for node in view.nodes.values():
        if node is view.myself or not node.connected or node.handshake:
            continue
        for direction in (b"to", b"from"):
            out.append({b"direction": direction, b"node": node.id.encode(), b"create-time": created,
                        b"events": b"r", b"send-buffer-allocated": 48, b"send-buffer-used": 48})
    return out


@subcommand("keyslot")
def cluster_keyslot(c: Client, argv: list[bytes]) -> Any:
    return key_slot(argv[2])  # answered without cluster mode too


@subcommand("countkeysinslot")
def cluster_countkeysinslot(c: Client, argv: list[bytes]) -> Any:
    view_of(c)
    slot = parse_integer(argv[2])
    if not 0 <= slot < SLOTS:
        raise ReplyError("ERR Invalid slot")
    index = c.db.slot_index
    return 0 if index is None else index.count(slot)


@subcommand("getkeysinslot")
def cluster_getkeysinslot(c: Client, argv: list[bytes]) -> Any:
    view_of(c)
    slot = parse_integer(argv[2])
    count = parse_integer(argv[3])
    if not 0 <= slot < SLOTS or count < 0:
        raise ReplyError("ERR Invalid slot or number of keys")
    index = c.db.slot_index
    return [] if index is None else index.keys(slot, count)


@subcommand("count-failure-reports")
def cluster_count_failure_reports(c: Client, argv: list[bytes]) -> Any:
    """The failure reports about a node that the other processes' gossip brought (the
    in-process bus agrees on failures by itself: 0)."""
    view = view_of(c)
    node = known_node(view, argv[2], b"ERR Unknown node ")
    return 0 if view.wire is None else view.wire.gossip.count_reports(node)


# --- CLUSTER SLOT-STATS ------------------------------------------------------------------------

SLOT_METRICS = ("key-count", "cpu-usec", "network-bytes-in", "network-bytes-out")
BAD_LIMIT = ReplyError("ERR Limit has to lie in between 1 and 16384 (maximum number of slots).")


@subcommand("slot-stats")
def cluster_slot_stats(c: Client, argv: list[bytes]) -> Any:
    """SLOTSRANGE start end, or ORDERBY metric [LIMIT n] [ASC|DESC]: the slots of this
    node's shard. Only key-count is counted; with cluster-slot-stats-enabled the other
    metrics are listed (and sortable) as 0."""
    view = view_of(c)
    mine = view.primary_of(view.myself)
    metrics = SLOT_METRICS if c.state.config["cluster-slot-stats-enabled"] else SLOT_METRICS[:1]
    word = argv[2].lower()
    if len(argv) == 5 and word == b"slotsrange":
        first, last = parse_slot(argv[3]), parse_slot(argv[4])
        if first > last:
            raise ReplyError(f"ERR Start slot number {first} is greater than end slot number {last}")
        slots = [s for s in range(first, last + 1) if view.owners[s] is mine]
    elif word == b"orderby":
        metric = argv[3].lower().decode("latin-1")
        if metric not in metrics:
            raise ReplyError("ERR Unrecognized sort metric for ORDERBY.")
        limit, descending = parse_order(argv[4:])
        slots = [s for s in range(SLOTS) if view.owners[s] is mine]
        if metric == "key-count":  # the others are all 0: the slot order stands
            counts = {s: keys_in_slot(c.state, s) for s in slots}
            slots.sort(key=lambda s: -counts[s] if descending else counts[s])
        slots = slots[:limit]
    else:
        raise subcommand_syntax_error(argv)
    return [[slot, slot_stats(c, slot, metrics)] for slot in slots]


def parse_order(args: list[bytes]) -> tuple[int, bool]:
    """ORDERBY's options: LIMIT n (1..16384) and ASC|DESC, each at most once."""
    limit, descending = SLOTS, True
    limits = orders = 0
    i = 0
    while i < len(args):
        word = args[i].lower()
        if word == b"limit" and i + 1 < len(args):
            limit = try_int(args[i + 1]) or 0
            if not 1 <= limit <= SLOTS:
                raise BAD_LIMIT
            limits += 1
            i += 1
        elif word in (b"asc", b"desc"):
            descending = word == b"desc"
            orders += 1
        else:
            raise ReplyError("ERR syntax error")
        if limits > 1 or orders > 1:
            raise ReplyError("ERR Multiple filters of the same type are disallowed.")
        i += 1
    return limit, descending


def slot_stats(c: Client, slot: int, metrics: tuple[str, ...]) -> dict[bytes, int]:
    stats = dict.fromkeys((m.encode() for m in metrics), 0)
    stats[b"key-count"] = keys_in_slot(c.state, slot)
    return stats


# --- changing the slots -------------------------------------------------------------------------


def check_slots(view: ClusterView, first: int, last: int, delete: bool, chosen: set[int]) -> None:
    """checkSlotAssignmentsOrReply for `first`..`last`, adding them to `chosen`."""
    for slot in range(first, last + 1):
        if delete and view.owners[slot] is None:
            raise ReplyError(f"ERR Slot {slot} is already unassigned")
        if not delete and view.owners[slot] is not None:
            raise ReplyError(f"ERR Slot {slot} is already busy")
        if slot in chosen:
            raise ReplyError(f"ERR Slot {slot} specified multiple times")
        chosen.add(slot)


def update_slots(view: ClusterView, slots: set[int], delete: bool) -> Any:
    """clusterUpdateSlots: an imported slot is no longer imported, then given to this
    node or taken from whoever had it."""
    for slot in slots:
        view.importing.pop(slot, None)
    if delete:
        lose_slots(view, sorted(slots))
    else:
        for slot in slots:
            view.claim(slot, view.myself)
    changed(view)
    return OK


def change_slots(c: Client, argv: list[bytes], delete: bool) -> Any:
    """ADDSLOTS / DELSLOTS: every slot parsed, then every slot checked, then the change."""
    view = view_of(c)
    slots = [parse_slot(raw) for raw in argv[2:]]
    chosen: set[int] = set()
    for slot in slots:
        check_slots(view, slot, slot, delete, chosen)
    return update_slots(view, chosen, delete)


def change_slot_ranges(c: Client, argv: list[bytes], delete: bool) -> Any:
    """ADDSLOTSRANGE / DELSLOTSRANGE: each pair parsed and checked in turn."""
    view = view_of(c)
    if len(argv) % 2:
        raise wrong_args("cluster|" + argv[1].lower().decode("latin-1"))
    chosen: set[int] = set()
    for i in range(2, len(argv), 2):
        first, last = parse_slot(argv[i]), parse_slot(argv[i + 1])
        if first > last:
            raise ReplyError(f"ERR start slot number {first} is greater than end slot number {last}")
        check_slots(view, first, last, delete, chosen)
    return update_slots(view, chosen, delete)


subcommand("addslots")(lambda c, argv: change_slots(c, argv, False))
subcommand("delslots")(lambda c, argv: change_slots(c, argv, True))
subcommand("addslotsrange")(lambda c, argv: change_slot_ranges(c, argv, False))
subcommand("delslotsrange")(lambda c, argv: change_slot_ranges(c, argv, True))


@subcommand("flushslots")
def cluster_flushslots(c: Client, argv: list[bytes]) -> Any:
    """Every slot of this node unassigned; refused while database 0 has keys."""
    view = view_of(c)
    if c.state.dbs[0].data:
        raise ReplyError("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
    lose_slots(view, [s for s in range(SLOTS) if view.owners[s] is view.myself])
    changed(view)
    return OK


# --- CLUSTER SETSLOT --------------------------------------------------------------------------


@subcommand("setslot")
def cluster_setslot(c: Client, argv: list[bytes]) -> Any:
    """SETSLOT slot IMPORTING id | MIGRATING id | STABLE | NODE id [TIMEOUT ms]: checked as
    clusterParseSetSlotCommand checks it, then done on this node's replicas and on it."""
    view = view_of(c)
    myself = view.myself
    if myself.primary is not None:
        raise ReplyError("ERR Please use SETSLOT only with masters.")
    slot = parse_slot(argv[2])
    action = argv[3].lower()
    if action in (b"migrating", b"importing") and len(argv) >= 5:
        node = open_slot_target(view, slot, action, argv[4])
    elif action == b"stable":
        node = None
    elif action == b"node" and len(argv) >= 5:
        node = new_owner(view, slot, argv[4])
    else:
        raise ReplyError("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")
    check_setslot_options(c, argv[4 if node is None else 5:])
    views = [*replica_views(view), view]
    for each in views:
        peer = None if node is None else each.node(node.id)
        if node is None or peer is not None:
            set_slot(each, slot, action, peer)
    changed(*views)
    return OK


def open_slot_target(view: ClusterView, slot: int, action: bytes, raw: bytes) -> ClusterNode:
    """MIGRATING: this node must own the slot; IMPORTING: it must not. The other node must
    be a known primary, not this one."""
    myself = view.myself
    if action == b"migrating" and view.owners[slot] is not myself:
        raise ReplyError(f"ERR I'm not the owner of hash slot {slot}")
    if action == b"importing" and view.owners[slot] is myself:
        raise ReplyError(f"ERR I'm already the owner of hash slot {slot}")
    node = known_node(view, raw, b"ERR I don't know about node ")
    if node.primary is not None:
        raise ReplyError("ERR Target node is not a master")
    if node is myself:
        raise ReplyError("ERR Target node is myself")
    return node


def new_owner(view: ClusterView, slot: int, raw: bytes) -> ClusterNode:
    """NODE: a known primary; this node gives a slot away only once it has no key of it."""
    node = known_node(view, raw, b"ERR Unknown node ")
    if node.primary is not None:
        raise ReplyError("ERR Target node is not a master")
    if view.owners[slot] is view.myself and node is not view.myself and keys_in_slot(view.state, slot):
        raise ReplyError(f"ERR Can't assign hashslot {slot} to a different node while I still "
                         "hold keys for this hash slot.")
    return node


def check_setslot_options(c: Client, args: list[bytes]) -> None:
    """TIMEOUT ms (the wait for the replicas, which here take it at once); other words are
    ignored, as Valkey ignores them."""
    for i, word in enumerate(args):
        if word.lower() != b"timeout":
            continue
        if i + 1 >= len(args):
            raise ReplyError("ERR Missing timeout value")
        timeout = try_int(args[i + 1])
        if timeout is None:
            raise ReplyError("ERR timeout is not an integer or out of range")
        if timeout < 0:
            raise ReplyError("ERR timeout is negative")
        if timeout > LLONG_MAX - c.state.now:
            raise ReplyError("ERR timeout is out of range")


# --- epochs, nodes, reset, config file ------------------------------------------------------------


@subcommand("bumpepoch")
def cluster_bumpepoch(c: Client, argv: list[bytes]) -> Any:
    view = view_of(c)
    bumped = bump_epoch(view)
    if bumped:
        view.announce()
    return Simple(b"%s %d" % (b"BUMPED" if bumped else b"STILL", view.myself.config_epoch))


@subcommand("set-config-epoch")
def cluster_set_config_epoch(c: Client, argv: list[bytes]) -> Any:
    """Only on a node that knows no other and has no config epoch yet."""
    view = view_of(c)
    epoch = parse_integer(argv[2])
    if epoch < 0:
        raise ReplyError(f"ERR Invalid config epoch specified: {epoch}")
    if len(view.nodes) > 1:
        raise ReplyError("ERR The user can assign a config epoch only when the node does not "
                         "know any other node.")
    if view.myself.config_epoch != 0:
        raise ReplyError("ERR Node config epoch is already non-zero")
    view.myself.config_epoch = epoch
    view.current_epoch = max(view.current_epoch, epoch)
    return OK


@subcommand("forget")
def cluster_forget(c: Client, argv: list[bytes]) -> Any:
    view = view_of(c)
    node = view.node(argv[2])
    if node is None or node.id.encode() != argv[2]:
        if argv[2].decode("latin-1") in forgotten(view):
            return OK  # already forgotten
        raise ReplyError(b"ERR Unknown node " + c_text(argv[2]))
    if node is view.myself:
        raise ReplyError("ERR I tried hard but I can't forget myself...")
    if view.myself.primary is node:
        raise ReplyError("ERR Can't forget my master!")
    forget_node(view, node)
    changed(view)
    spread_forget(view, node.id)
    return OK


@subcommand("reset")
def cluster_reset(c: Client, argv: list[bytes]) -> Any:
    """RESET [HARD|SOFT] (soft by default); a primary must have no key in the database
    the connection uses."""
    view = view_of(c)
    hard = False
    if len(argv) == 3:
        word = argv[2].lower()
        if word not in (b"hard", b"soft"):
            raise ReplyError("ERR syntax error")
        hard = word == b"hard"
    elif len(argv) > 3:
        raise subcommand_syntax_error(argv)
    if view.myself.primary is None and c.db.data:
        raise ReplyError("ERR CLUSTER RESET can't be called with master nodes containing keys")
    reset_view(view, hard)
    redirect_blocked_clients(view)
    return OK


@subcommand("saveconfig")
def cluster_saveconfig(c: Client, argv: list[bytes]) -> Any:
    """Writes cluster-config-file in `dir` as Valkey's nodes.conf (through a temporary file)."""
    view = view_of(c)
    config = c.state.config
    path = os.path.join(config["dir"], config["cluster-config-file"])
    text = nodes_text(view, for_file=True)
    text += f"vars currentEpoch {view.current_epoch} lastVoteEpoch {view.last_vote_epoch}\n"
    try:
        temporary = f"{path}.tmp-{os.getpid()}"
        with open(temporary, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except OSError as err:
        raise ReplyError(f"ERR error saving the cluster node config: {err.strerror}") from None
    return OK


# --- MEET, REPLICATE, FAILOVER -----------------------------------------------------------------


@subcommand("meet")
def cluster_meet(c: Client, argv: list[bytes]) -> Any:
    """CLUSTER MEET ip port [bus-port]: +OK once the address is valid (Valkey checks the
    address, not the peer). A node of this process's cluster at that address joins this
    one's view (and it this one's); a node with a bus to other processes (a lone
    `cluster-enabled yes` server) starts a handshake over it (net/cluster_bus.py). Any
    other address is a handshake that never answers, dropped after
    max(cluster-node-timeout, 1 s), as Valkey drops one to a closed port."""
    view = view_of(c)
    if len(argv) not in (4, 5):
        raise wrong_args("cluster|meet")
    host, port, bus_port = meet_address(argv)
    peer = view.bus.at(host, port) if view.bus is not None else None
    if peer is None and view.wire is not None:  # a node of another process: over the wire
        view.wire.meet(host, port, bus_port)
        return OK
    if peer is None or peer is view:
        timeout = max(c.state.config["cluster-node-timeout"], 1000)
        view.start_handshake(host, port, bus_port, c.state.now + timeout)
        return OK
    view.learn(peer)
    peer.learn(view)
    changed(view, peer)
    return OK


def meet_address(argv: list[bytes]) -> tuple[str, int, int]:
    """The address CLUSTER MEET names, checked as Valkey checks it, in its order."""
    port = try_int(argv[3])
    if port is None:
        raise ReplyError(b"ERR Invalid base port specified: " + c_text(argv[3]))
    if len(argv) == 5:
        bus_port = try_int(argv[4])
        if bus_port is None:
            raise ReplyError(b"ERR Invalid bus port specified: " + c_text(argv[4]))
    else:
        bus_port = None if port is None else port + 10000
    if not 0 <= port <= 65535:
        raise ReplyError("ERR Port number is out of range")
    if bus_port is None or not 0 <= bus_port <= 65535:
        raise ReplyError("ERR Cluster bus port number is out of range")
    host = argv[2].decode("latin-1")
    if not is_ip_address(host):
        raise ReplyError(b"ERR Invalid node address specified: " + c_text(argv[2]) + b":" + c_text(argv[3]))
    return host, port, bus_port


def is_ip_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@subcommand("replicate")
def cluster_replicate(c: Client, argv: list[bytes]) -> Any:
    """CLUSTER REPLICATE node-id: this node becomes a replica of that primary; in this
    process's cluster it takes the primary's data and follows its writes, and a node of
    another process is replicated over TCP (the link REPLICAOF makes)."""
    view = view_of(c)
    node = known_node(view, argv[2], b"ERR Unknown node ")
    myself = view.myself
    if node is myself:
        raise ReplyError("ERR Can't replicate myself")
    if not node.is_primary:
        raise ReplyError("ERR I can only replicate a master, not a replica.")
    if myself.is_primary and (myself in view.owners or any(db.data for db in c.state.dbs)):
        raise ReplyError("ERR To set a master the node must be empty and without assigned slots.")
    if not replicates_here(view, node):
        raise ReplyError("ERR fakekey cannot replicate a node of another process yet (no replication "
                         "link between processes)")
    follow_primary(view, node)
    changed(view)
    return OK


def replicates_here(view: ClusterView, node: ClusterNode) -> bool:
    """A replication link to `node` can be made: it is a node of this process's cluster,
    or this node has a bus to other processes (the link goes over TCP)."""
    if view.wire is not None:
        return bool(node.host)
    return view.bus is not None and any(v.myself.id == node.id for v in view.bus.views)


@subcommand("failover")
def cluster_failover(c: Client, argv: list[bytes]) -> Any:
    """CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica: it becomes its shard's primary with a
    new config epoch. In this process's cluster at once (Valkey's manual failover waits
    for the replica to catch up, which an in-process replica always is); between
    processes as Valkey: +OK, then the primary pauses, the replica catches up and is
    elected (FORCE: elected at once; TAKEOVER: no election)."""
    view = view_of(c)
    if len(argv) > 3 or (len(argv) == 3 and argv[2].upper() not in (b"FORCE", b"TAKEOVER")):
        raise ReplyError("ERR syntax error")
    forced = len(argv) == 3
    myself = view.myself
    if myself.is_primary:
        raise ReplyError("ERR You should send CLUSTER FAILOVER to a replica")
    primary = myself.primary
    assert primary is not None
    if primary.id not in view.nodes:
        raise ReplyError("ERR I'm a replica but my master is unknown to me")
    if not forced and (primary.failing or not primary.connected):
        raise ReplyError("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE")
    wire = view.wire
    if wire is not None:
        option = argv[2].upper() if forced else b""
        if option == b"TAKEOVER":
            wire.take_over()
        else:
            wire.start_manual_failover(option == b"FORCE")
        return OK
    bus = view.bus
    if bus is None or bus.promote is None:
        raise ReplyError("ERR fakekey fails over only the replicas of its own cluster's nodes")
    bus.promote(c.state)
    redirect_blocked_clients(view)
    return OK


# --- atomic slot migration and FLUSHSLOT (commands/slot_migrations.py) --------------------------

subcommand("migrateslots")(slot_migrations.migrateslots)
subcommand("getslotmigrations")(slot_migrations.getslotmigrations)
subcommand("cancelslotmigrations")(slot_migrations.cancelslotmigrations)
subcommand("syncslots")(slot_migrations.syncslots)
subcommand("flushslot")(slot_migrations.flushslot)

for _name, _arity, _flags, _acl, _since, _complexity, _tips, _summary in CLUSTER_SUBCOMMANDS:
    command(f"cluster|{_name}", _arity, _flags, acl=_acl, group="cluster", since=_since,
            complexity=_complexity, tips=_tips, doc_flags=DOC_FLAGS.get(_name, ""),
            summary=_summary)(HANDLERS[_name])


# --- CLUSTERSCAN --------------------------------------------------------------------------------
# Valkey 9.1's walk of a cluster's keys. A cursor is routed as a key (the command's one key,
# flagged not_key): "0" begins (on the node serving slot 13907, the slot of "0"), and every
# other cursor reads `<fingerprint>-{<tag>}-<local>`: its tag hashes to the slot to visit
# (so a client sends it to that slot's node), the fingerprint says whose local cursor it
# is, and the local cursor is the place in that node's slots, `bucket << 14 | slot` as
# Valkey's kvstore cursor. A call walks from the cursor's slot through the run of slots
# that slot's owner serves, whole buckets of each slot's keys (commands/scan.py), until
# COUNT keys are visited; past the run, the cursor names the next slot's tag with
# fingerprint 0 (a fresh start there, on its node), and "0" after slot 16383. SLOT, and a
# MATCH pattern whose keys can only be in one slot, keep the walk to that slot.

SLOT_BITS = 14
SLOT_MASK = SLOTS - 1
SLOT_ONCE = ReplyError("ERR SLOT option can only be specified once")
SLOT_MISMATCH = ReplyError("ERR Cursor slot mismatch with SLOT argument")
INVALID_SCAN_CURSOR = ReplyError("ERR Invalid cursor")
TAG_ALPHABET = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
SORTED_EACH_CALL = 64  # a slot of at most this many keys is ordered anew at each call
KEPT_ORDERS = 16  # the orders of bigger slots kept per database, the last walked


@functools.cache
def slot_tags() -> tuple[bytes, ...]:
    """Valkey's crc16_slot_table (src/crc16_slottable.c): for each slot, the shortest
    alphanumeric string that hashes to it. It is the first such string in the order of
    TAG_ALPHABET, shorter ones first (tests check it against Valkey's); made on first use,
    in about 25 ms (every slot is reached within 3 characters)."""
    tags = [b""] * SLOTS
    missing = SLOTS
    for length in (1, 2, 3):
        for chars in itertools.product(TAG_ALPHABET, repeat=length):
            tag = bytes(chars)
            slot = crc_hqx(tag, 0) & SLOT_MASK
            if not tags[slot]:
                tags[slot] = tag
                missing -= 1
                if not missing:
                    return tuple(tags)
    raise AssertionError("a slot without a tag of 3 characters")


@functools.cache
def fingerprint() -> bytes:
    """This process's cursor fingerprint: 32 bits of its hash seed, written as Valkey writes
    its own, six characters of 6 bits each ('0' + value). The nodes of one process share it
    and the key positions a local cursor names, as Valkey nodes with one hash-seed do: a
    cursor goes on from a primary to its replica. Any other fingerprint starts its slot anew."""
    value = hash(b"fakekey CLUSTERSCAN") & 0xFFFFFFFF
    return bytes(48 + (value >> shift & 63) for shift in range(30, -1, -6))


def fresh_cursor(slot: int) -> bytes:
    """A cursor that starts `slot` from its beginning, on whichever node serves it."""
    return b"0-{" + slot_tags()[slot] + b"}-0"


def pattern_slot(pattern: bytes) -> int:
    """patternHashSlot: the one slot every key `pattern` matches hashes to, or -1 when its
    keys can be in any slot (a wildcard, a set or an escape before a {tag})."""
    start = -1  # where the first '{' is; -2 after an empty tag
    for i, byte in enumerate(pattern):
        if byte in b"*?[\\":
            return -1
        if start == -1 and byte == 0x7B:  # '{'
            start = i
        elif start >= 0 and byte == 0x7D:  # '}'
            if i > start + 1:
                return crc_hqx(pattern[start + 1:i], 0) & SLOT_MASK
            start = -2
    return crc_hqx(pattern, 0) & SLOT_MASK


class ClusterScanArgs:
    """CLUSTERSCAN's options: SCAN's COUNT, MATCH and TYPE, and SLOT."""

    def __init__(self, argv: list[bytes]) -> None:
        self.slot: int | None = None
        pattern: bytes | None = None
        scan_args: list[bytes] = []
        for i in range(2, len(argv), 2):  # each option checked in turn, as Valkey's loop
            pair = argv[i:i + 2]
            if pair[0].upper() == b"SLOT" and len(pair) == 2:
                if self.slot is not None:
                    raise SLOT_ONCE
                self.slot = parse_slot(pair[1])
            else:
                parse_scan_options(pair, 0, None)
                scan_args += pair
                if pair[0].upper() == b"MATCH":
                    pattern = pair[1]
        self.scan = parse_scan_options(scan_args, 0, None)
        self.match_slot = -1 if pattern is None else pattern_slot(pattern)  # MATCH's one slot, or -1


def parse_scan_cursor(raw: bytes) -> tuple[int, int] | None:
    """None for "0"; else the slot of the cursor's tag and the local cursor to go on from
    (0, the start of that slot, when the fingerprint is not this process's)."""
    if raw == b"0":
        return None
    parts = raw.split(b"-")
    if len(parts) != 3:
        raise INVALID_SCAN_CURSOR
    try:
        local = parse_cursor(parts[2])  # strtoull, as SCAN's
    except ReplyError:
        raise INVALID_SCAN_CURSOR from None
    return key_slot(parts[1]), local if parts[0] == fingerprint() else 0


def first_cursor(args: ClusterScanArgs) -> bytes:
    """Cursor 0's answer, no keys: the start of SLOT's slot, of MATCH's one slot, or of slot 0."""
    wanted = args.match_slot
    if args.slot is not None:
        return b"0" if 0 <= wanted != args.slot else fresh_cursor(args.slot)
    return fresh_cursor(max(wanted, 0))


def walk_range(view: ClusterView, slot: int, args: ClusterScanArgs) -> tuple[int, int, bool] | bytes:
    """The slots a call may walk from the cursor's `slot`: the first, the last, and whether
    the walk is kept to one slot (SLOT, or MATCH's one slot); or, with nothing to walk
    here, the cursor to answer (MATCH's slot is further on: a jump there; it is behind: the end)."""
    wanted = args.match_slot
    if args.slot is not None:
        return (slot, slot, True) if wanted < 0 or wanted == slot else b"0"
    if wanted >= 0:
        if slot < wanted:
            return fresh_cursor(wanted)
        return (slot, slot, True) if slot == wanted else b"0"
    owner = view.owners[slot]
    last = slot
    while last < SLOT_MASK and view.owners[last + 1] is owner:
        last += 1
    return slot, last, False


class SlotOrders:
    """The hash order of the keys of the slots being walked, for one database's slot index:
    made anew when a walk enters a slot, kept for the calls that go on in it (an order made
    during a walk of a slot holds every key present throughout it). Small slots are
    ordered at each call, and keep none: a walk that entered one finds no older order if
    it grows."""

    def __init__(self) -> None:
        self.orders: OrderedDict[int, tuple[dict[bytes, None], list[bytes]]] = OrderedDict()

    def order(self, slot: int, keys: dict[bytes, None], entering: bool) -> list[bytes]:
        if len(keys) <= SORTED_EACH_CALL:
            self.orders.pop(slot, None)
            return hash_order(keys)
        kept = self.orders.get(slot)
        if entering or kept is None or kept[0] is not keys:  # a slot emptied has new keys
            kept = self.orders[slot] = (keys, hash_order(keys))
            if len(self.orders) > KEPT_ORDERS:
                self.orders.popitem(last=False)
        self.orders.move_to_end(slot)
        return kept[1]


def slot_orders(index: SlotIndex) -> SlotOrders:
    """The database's kept orders, made on its first walk (gone with its slot index)."""
    orders = index.walk_orders
    if orders is None:
        orders = index.walk_orders = SlotOrders()
    assert isinstance(orders, SlotOrders)
    return orders


def walk_slots(db: Database, first: int, last: int, local: int, count: int) -> tuple[int | None, list[bytes]]:
    """Visit the keys of slots `first` to `last` from the local cursor `local` on, whole
    buckets, until `count` live keys are visited; the local cursor to go on from (None past
    `last`) and the keys visited. A local cursor in a slot before `first` starts at `first`."""
    index = db.slot_index
    if index is None:
        return None, []
    start = max(first, local & SLOT_MASK)
    bucket = local >> SLOT_BITS if start == local & SLOT_MASK else 0
    orders = slot_orders(index)
    visited: list[bytes] = []
    for slot in range(start, last + 1):
        keys = index.slots.get(slot)
        if not keys:
            bucket = 0
            continue
        if len(visited) >= count:
            return slot, visited  # the next slot with keys, from its start
        order = orders.order(slot, keys, entering=bucket == 0)
        bucket, page = bucket_page(order, bucket, len(keys), count - len(visited), db.exists)
        visited += page
        if bucket:
            return bucket << SLOT_BITS | slot, visited
    return None, visited


def scan_cursor(local: int) -> bytes:
    return b"%s-{%s}-%d" % (fingerprint(), slot_tags()[local & SLOT_MASK], local)


def kept_keys(db: Database, keys: list[bytes], options: ScanOptions) -> list[bytes]:
    """The visited keys MATCH and TYPE keep."""
    matches, kind = options.matches, options.type_name
    return [
        key for key in keys
        if (matches is None or matches(key)) and (kind is None or type_name(db.data[key]).encode() == kind)
    ]


@command("clusterscan", -2, "readonly", keys=keys_range(1, flags="not_key"), acl="keyspace",
         group="cluster", since="9.1.0", complexity="O(N) where N is the number of elements returned.",
         tips=ND + " request_policy:special response_policy:special",
         summary="Walks the keys of every node of a cluster.")
def clusterscan(c: Client, argv: list[bytes]) -> Any:
    view = view_of(c)
    args = ClusterScanArgs(argv)
    cursor = parse_scan_cursor(argv[1])
    if cursor is None:
        return [first_cursor(args), []]
    slot, local = cursor
    if args.slot is not None and slot != args.slot:
        raise SLOT_MISMATCH
    walk = walk_range(view, slot, args)
    if isinstance(walk, bytes):
        return [walk, []]
    first, last, single = walk
    going_on, visited = walk_slots(c.db, first, last, local, args.scan.count)
    if going_on is not None:
        next_cursor = scan_cursor(going_on)
    elif single or last == SLOT_MASK:
        next_cursor = b"0"
    else:
        next_cursor = fresh_cursor(last + 1)
    return [next_cursor, kept_keys(c.db, visited, args.scan)]
