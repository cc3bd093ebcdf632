"""FAKEKEY.CLUSTER: a fakekey.Cluster's failures staged from any client, as
`cluster.kill(node)`, `restart`, `failover`, `partition` and `heal` stage them from Python
(docs/cluster.md). Any node of the cluster takes it, for any node (a killed node takes
nothing: RESTART goes to another one). Absent with `enable-fakekey-commands no`, like the
other FAKEKEY.* commands."""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import c_text, help_lines
from fakekey.core.client import Client
from fakekey.core.cluster import ClusterView
from fakekey.core.cluster_controls import ClusterControls, find_view
from fakekey.core.registry import command
from fakekey.resp.replies import OK, ReplyError

G = "server"
SUBCOMMANDS = "KILL|RESTART|FAILOVER|PARTITION|HEAL|HELP"
CLUSTER_HELP = [
    "FAKEKEY.CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "A node is named by its node id (CLUSTER MYID) or by its host:port.",
    "KILL <node>",
    "    The node stops answering as a dead process: connections refused. Its peers mark it",
    "    fail? after cluster-node-timeout on the cluster's clock, then fail, and a replica of",
    "    a failed primary takes over.",
    "RESTART <node>",
    "    A killed node comes back with its data and id, and rejoins.",
    "FAILOVER <replica>",
    "    A manual failover (CLUSTER FAILOVER) of that replica, at once.",
    "PARTITION <node>[,<node>...] <node>[,<node>...]",
    "    The nodes of the first list and of the second stop seeing each other (clients",
    "    still reach every node).",
    "HEAL",
    "    Every node sees every live node again.",
    "HELP",
    "    Print this help.",
]
NOT_A_CLUSTER = ReplyError("ERR this server is not a node of a fakekey.Cluster")


@command("fakekey.cluster", -2, "admin noscript", acl="dangerous", group=G, since="0.1.0",
         summary="Stages a fakekey.Cluster's failures: kills, restarts, fails over, "
         "partitions and heals its nodes (KILL | RESTART | FAILOVER | PARTITION | HEAL | HELP).")
def fakekey_cluster(c: Client, argv: list[bytes]) -> Any:
    sub = argv[1].upper()
    argc = len(argv)
    if sub == b"HELP" and argc == 2:
        return help_lines(CLUSTER_HELP)
    if sub in (b"KILL", b"RESTART", b"FAILOVER") and argc == 3:
        view = node_named(c, argv[2])
        return (kill if sub == b"KILL" else restart if sub == b"RESTART" else failover)(c, view)
    if sub == b"PARTITION" and argc == 4:
        return partition(c, argv[2], argv[3])
    if sub == b"HEAL" and argc == 2:
        controls_of(c).heal()
        return OK
    if sub.decode("utf-8", "replace") in SUBCOMMANDS.split("|"):
        raise ReplyError("ERR wrong number of arguments for 'fakekey.cluster' command")
    raise ReplyError(
        f"ERR unknown subcommand '{argv[1].decode('utf-8', 'replace')}'. "
        f"Try FAKEKEY.CLUSTER {SUBCOMMANDS}."
    )


def controls_of(c: Client) -> ClusterControls:
    """The controls of the fakekey.Cluster this server is a node of."""
    view = c.state.cluster
    bus = view.bus if view is not None else None
    if bus is None or bus.controls is None:
        raise NOT_A_CLUSTER
    return bus.controls


def node_named(c: Client, raw: bytes) -> ClusterView:
    """A node of this server's fakekey.Cluster, by node id or host:port."""
    controls_of(c)
    view = c.state.cluster
    assert view is not None and view.bus is not None
    found = find_view(view.bus, raw.decode("utf-8", "replace"))
    if found is None:
        raise ReplyError(b"ERR no node of this cluster is named " + c_text(raw))
    return found


def kill(c: Client, view: ClusterView) -> Any:
    """The caller of a node that kills itself gets its reply, then is dropped."""
    if not view.alive:
        raise ReplyError(f"ERR node {view.myself.id} is already killed")
    controls_of(c).kill(view.myself.id)
    return OK


def restart(c: Client, view: ClusterView) -> Any:
    if view.alive:
        raise ReplyError(f"ERR node {view.myself.id} is not killed")
    controls_of(c).restart(view.myself.id)
    return OK


def failover(c: Client, view: ClusterView) -> Any:
    if view.myself.is_primary:
        raise ReplyError(f"ERR node {view.myself.id} is not a replica")
    if not view.alive:
        raise ReplyError(f"ERR node {view.myself.id} is killed")
    controls_of(c).failover(view.myself.id)
    return OK


def partition(c: Client, raw_a: bytes, raw_b: bytes) -> Any:
    """Two comma-separated lists of nodes, no node on both sides."""
    side_a = [node_named(c, name).myself.id for name in raw_a.split(b",")]
    side_b = [node_named(c, name).myself.id for name in raw_b.split(b",")]
    if set(side_a) & set(side_b):
        raise ReplyError("ERR a node cannot be on both sides of a partition")
    controls_of(c).partition(side_a, side_b)
    return OK
