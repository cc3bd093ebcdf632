"""Lazy freeing: what Valkey frees in its background thread, and INFO's counts of it.

Valkey frees a deleted value in the background when the deletion is lazy (UNLINK always;
DEL, overwrites, expiry per the lazyfree-lazy-* settings) and the value costs more than
LAZYFREE_THRESHOLD allocations to free (lazyfree.c's free effort). An asynchronous
FLUSHALL/FLUSHDB hands over every key it drops, SCRIPT FLUSH every script once there are
more than the threshold.

Here such a value goes to the server's `Reclaimer`, which takes it apart a slice at a time
between event-loop turns: dropping a container of a million elements frees them all in
one go, and every client would wait meanwhile.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Final

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
    """A value left the keyspace: freed in the background (and counted) if Valkey would."""
    if lazy and free_effort(value, state) > LAZYFREE_THRESHOLD:
        state.stats[STAT] += 1
        state.reclaimer.hand(value, 1)


def released_keys(state: ServerState, count: int) -> None:
    """An asynchronous flush hands every key to the background thread."""
    state.stats[STAT] += count


def lazy_setting(state: ServerState, name: str) -> bool:
    """One of the lazyfree-lazy-* settings (user-del, server-del, expire, user-flush)."""
    return bool(state.config[f"lazyfree-lazy-{name}"])


_perf_counter_ns: Final = time.perf_counter_ns
SLICE_NS = 1_000_000  # the longest a slice of freeing holds the loop
CHUNK = 512  # elements dropped between two looks at the clock
BIG = 64  # a container with more elements than this is taken apart, not dropped whole
CONTAINERS: Final = (dict, set, list, deque)


class Job:
    """One handed-over value (or a flushed database's tables): the containers left to
    empty, and what INFO's lazyfree_pending_objects counts for it."""

    __slots__ = ("weight", "stack")

    def __init__(self, weight: int, parts: list[Any]) -> None:
        self.weight = weight
        self.stack = parts


class Reclaimer:
    """One server's background freeing, done in slices on its own event loop."""

    __slots__ = ("state", "jobs", "pending", "scheduled")

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.jobs: deque[Job] = deque()
        self.pending = 0  # INFO lazyfree_pending_objects
        self.scheduled = False

    def hand(self, value: Any, weight: int, *more: Any) -> None:
        """Free `value` (and `more`) in slices; `weight`: the objects Valkey counts."""
        loop = self.state.running_loop()
        if loop is None:  # no loop to share: the caller's reference is the last one
            return
        self.jobs.append(Job(weight, [value, *more]))
        self.pending += weight
        if not self.scheduled:
            self.scheduled = True
            loop.call_soon(self._slice)

    def _slice(self) -> None:
        self.scheduled = False
        deadline = _perf_counter_ns() + SLICE_NS
        jobs = self.jobs
        while jobs:
            job = jobs[0]
            if not take_apart(job.stack, deadline):
                break
            jobs.popleft()
            self.pending -= job.weight
        if jobs:
            loop = self.state.running_loop()
            if loop is None:  # the loop is gone: what is left goes at once
                jobs.clear()
                self.pending = 0
                return
            self.scheduled = True
            loop.call_soon(self._slice)


def take_apart(stack: list[Any], deadline: int) -> bool:
    """Empty the containers on `stack` a chunk at a time, pushing the big ones found
    inside, until none is left (True) or the deadline passed (False)."""
    while stack:
        part = stack.pop()
        if isinstance(part, dict):
            for _ in range(min(CHUNK, len(part))):
                keep_if_big(stack, part.popitem()[1])
        elif isinstance(part, (set, list, deque)):
            for _ in range(min(CHUNK, len(part))):
                keep_if_big(stack, part.pop())
        else:  # a value object: its own containers, then the object itself goes
            for inner in gc.get_referents(part):
                keep_if_big(stack, inner)
            continue
        if part:
            stack.append(part)
        if _perf_counter_ns() > deadline:
            return not stack
    return True


def keep_if_big(stack: list[Any], item: Any) -> None:
    """Push what would take long to free at once; anything else is freed here."""
    if type(item) is bytes:  # the commonest (requests, replies' pieces): no lookups
        return
    if isinstance(item, CONTAINERS):
        if len(item) > BIG:
            stack.append(item)
    elif (hasattr(item, "TYPE_NAME") or hasattr(item, "HOLDS_ELEMENTS")) and not isinstance(item, type):
        stack.append(item)  # a value in a flushed database, or the part of one holding its elements
