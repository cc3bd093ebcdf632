"""Where EMQ's client sends a queue's commands, and the connections it opens of its own, on
one server (redis-py's `Redis`) or on a cluster (redis-py's `RedisCluster`: a client with
`get_node_from_key`).

On a cluster every key of queue `Q` is in one slot (`emq:{Q}:`), so a queue lives on one
shard. The cluster client routes the scripts (by their KEYS) and the verbs (by the key
spec COMMAND gives them) to it, with its retries and redirects, with two exceptions sent
to the node serving the queue's slot directly (`on_node_of`): a verb whose name has two
dots (`EMQ.STALLED.CHECK`, `EMQ.FAILURES.INCR`), which redis-py's cluster client refuses
("Wrong command or module name"), and `SCRIPT LOAD`, which it sends to every primary (so it
fails while any one is down) where only the node that answered NOSCRIPT needs the script.

This module imports nothing of `redis`: `Queue` works with any client that has
`execute_command`.
"""

from __future__ import annotations

import copy
from typing import Any


def is_cluster(client: Any) -> bool:
    """Whether `client` is a cluster client (redis-py's `RedisCluster` or alike)."""
    return hasattr(client, "get_node_from_key")


def on_node_of(client: Any, key: str | bytes, *argv: Any) -> Any:
    """Runs `argv` on the primary serving `key` (on a plain client, its one server). A
    MOVED reply is followed; a connection error is not retried (the caller's next command
    sees the refreshed topology)."""
    if is_cluster(client):
        return client.execute_command(*argv, target_nodes=client.get_node_from_key(key))
    return client.execute_command(*argv)


def send_verb(client: Any, key: str | bytes, *argv: Any) -> Any:
    """A module verb whose first key is `key`, routed by the client, or on a cluster
    client sent to `key`'s node when redis-py cannot route its name (two dots)."""
    if is_cluster(client) and str(argv[0]).count(".") > 1:
        return on_node_of(client, key, *argv)
    return client.execute_command(*argv)


def node_client(client: Any, key: str | bytes) -> Any:
    """The plain client (redis-py's `Redis`) of the node serving `key`: `client` itself
    unless it is a cluster client."""
    if is_cluster(client):
        return client.get_redis_connection(client.get_node_from_key(key))
    return client


def named_client(client: Any, name: str) -> Any:
    """A client like `client` (its class and connection settings; a cluster client's
    nodes, retry policy and replica reads too) whose connections all take the name `name`
    (CLIENT SETNAME as they connect)."""
    if is_cluster(client):
        return _named_cluster_client(client, name)
    pool = client.connection_pool
    settings = {**pool.connection_kwargs, "client_name": name}
    own_pool = type(pool)(connection_class=pool.connection_class, **settings)
    return type(client)(connection_pool=own_pool)


def _named_cluster_client(client: Any, name: str) -> Any:
    from redis.cluster import ClusterNode

    settings = dict(client.nodes_manager.connection_kwargs)
    # the cluster's own connect hook is bound to `client`; the user's, if any, is kept
    settings.pop("redis_connect_func", None)
    if client.user_on_connect_func is not None:
        settings["redis_connect_func"] = client.user_on_connect_func
    settings["client_name"] = name
    # replica reads: passed only when set (the old argument is deprecated, the new one
    # is not in every redis-py >= 5)
    if client.read_from_replicas:
        settings["read_from_replicas"] = True
    if getattr(client, "load_balancing_strategy", None) is not None:
        settings["load_balancing_strategy"] = client.load_balancing_strategy
    nodes = [ClusterNode(node.host, node.port) for node in client.get_nodes()]
    return type(client)(startup_nodes=nodes, retry=copy.deepcopy(client.retry), **settings)


def disconnect_client(client: Any) -> None:
    """Drops the connections of a client made by `named_client` (used again, it
    reconnects: a consumer stopped can start again)."""
    if is_cluster(client):
        client.disconnect_connection_pools()
    else:
        client.connection_pool.disconnect()


class ParkingConnection:
    """A connection of its own, to the node serving `key`, for a blocking command (BLPOP,
    EMQ.BCLAIM, XREADGROUP BLOCK), so that another thread can end exactly that wait with
    CLIENT UNBLOCK (sent to the same node)."""

    def __init__(self, client: Any, key: str | bytes) -> None:
        self.node = node_client(client, key)
        pool = self.node.connection_pool
        self.connection = pool.connection_class(**pool.connection_kwargs)
        self.id = int(self.call("CLIENT", "ID"))

    def serves(self, client: Any, key: str | bytes) -> bool:
        """Whether this connection is still to the node serving `key`, as `client` knows
        it (after a failover the client follows the slot; a park follows it too)."""
        return node_client(client, key) is self.node

    def call(self, *argv: Any) -> Any:
        self.connection.send_command(*argv)
        return self.connection.read_response()

    def unblock(self) -> None:
        """Ends the wait (the command answers as on its timeout); a no-op when not waiting."""
        self.node.execute_command("CLIENT", "UNBLOCK", self.id)

    def close(self) -> None:
        self.connection.disconnect()
