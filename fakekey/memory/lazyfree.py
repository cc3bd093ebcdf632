"""INFO's lazyfreed_objects: what Valkey would have freed in its background thread.

Valkey frees a deleted value in the background when the deletion is lazy (UNLINK always;
DEL, overwrites, expiry per the lazyfree-lazy-* settings) and the value costs more than
LAZYFREE_THRESHOLD allocations to free (lazyfree.c's free effort). An asynchronous
FLUSHALL/FLUSHDB counts every key it drops, SCRIPT FLUSH every script once there are more
than the threshold. Nothing is freed in the background here; only the count is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

LAZYFREE_THRESHOLD = 64
STAT = "lazyfreed_objects"  # in state.stats, so CONFIG RESETSTAT zeroes it as Valkey does


def stream_rax_nodes(listpacks: int) -> int:
    """Valkey's free effort counts the stream's radix-tree nodes, not its listpacks; an
    empty tree has one node, one key two, and each more key about two more (the
    branching depends on the ids: this is the usual shape of ids from one clock)."""
    if listpacks <= 1:
        return listpacks + 1
    return 2 * listpacks + 3


def free_effort(value: Any, state: ServerState) -> int:
    """lazyfreeGetFreeEffort: the elements of a hashtable, skiplist or quicklist, the
    nodes and group PELs of a stream; 1 for a string or any listpack/intset value."""
    kind = getattr(value, "TYPE_NAME", "string")
    if kind == "list":
        return value.nodes(state) if value.encoding(state) == b"quicklist" else 1
    if kind == "set":
        return len(value) if value.enc == "hashtable" else 1
    if kind == "zset":
        return len(value) if value.skiplist else 1
    if kind == "hash":
        return len(value) if value.hashtable else 1
    if kind == "stream":
        effort = stream_rax_nodes(len(value.nodes))
        if value.groups:
            first = value.groups[min(value.groups)]  # the groups rax's first, by name
            effort += len(value.groups) * (1 + len(first.pel))
        return effort
    return 1


def release(state: ServerState, value: Any, lazy: bool) -> None:
    """A value left the keyspace: count it if Valkey would free it in the background."""
    if lazy and free_effort(value, state) > LAZYFREE_THRESHOLD:
        state.stats[STAT] += 1


def released_keys(state: ServerState, count: int) -> None:
    """An asynchronous flush hands every key to the background thread."""
    state.stats[STAT] += count


def lazy_setting(state: ServerState, name: str) -> bool:
    """One of the lazyfree-lazy-* settings (user-del, server-del, expire, user-flush)."""
    return bool(state.config[f"lazyfree-lazy-{name}"])
