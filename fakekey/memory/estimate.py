"""MEMORY USAGE's estimate: what a key and its value would take in Valkey's memory.

Modelled on objectComputeSize with its sampling: a compact encoding (listpack, intset)
is its bytes; a hashtable, skiplist or quicklist is a per-element cost averaged over the
first `samples` elements and multiplied by the count. The figures follow a real server's
answers closely enough to compare sizes (the same order of magnitude), not to the byte.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Any

from fakekey.types.module_value import ModuleValue

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

ROBJ = 16  # the object header, with the key embedded after it
LISTPACK_HEADER = 7
QUICKLIST = 48  # the quicklist struct and its first node
QUICKLIST_NODE = 32
HASHTABLE = 64  # a hashtable's struct; then 8 bytes a bucket
STREAM_NODE = 4096  # stream-node-max-bytes: the tail listpack is allocated at full size
RAX_NODE = 64


def _alloc(size: int) -> int:
    """An allocation rounded to the allocator's 8-byte steps."""
    return (size + 7) & ~7


def _buckets(count: int) -> int:
    size = 4
    while size < count:
        size *= 2
    return 8 * size


def _entry(item: bytes) -> int:
    """A listpack entry: the data, its encoding byte(s) and back-length."""
    return len(item) + 2 + (len(item) > 63) + (len(item) > 4095) * 3


def _sampled(items: Any, count: int, samples: int, cost: Any) -> int:
    """The cost of `count` elements: the average of the first `samples` times `count`."""
    if count == 0:
        return 0
    taken = [cost(item) for item in islice(items, samples)]
    return sum(taken) * count // len(taken)


def string_size(value: bytes | bytearray) -> int:
    # an embedded string (up to 44 bytes) shares the object's allocation
    return len(value) + 3 if len(value) <= 44 else _alloc(len(value) + 9)


def list_size(value: Any, state: ServerState, samples: int) -> int:
    if value.encoding(state) == b"listpack":
        return QUICKLIST + LISTPACK_HEADER + sum(map(_entry, value))
    nodes = value.nodes(state)
    return QUICKLIST + nodes * (QUICKLIST_NODE + LISTPACK_HEADER) + _sampled(
        value, len(value), samples, _entry)


def hash_size(value: Any, samples: int) -> int:
    fields = value.mapping()
    if not value.hashtable:
        return LISTPACK_HEADER + sum(_entry(f) + _entry(v) for f, v in fields.items())
    return HASHTABLE + _buckets(len(fields)) + _sampled(
        fields.items(), len(fields), samples, lambda fv: _alloc(len(fv[0]) + len(fv[1]) + 24))


def set_size(value: Any, samples: int) -> int:
    if value.enc != "hashtable":
        return LISTPACK_HEADER + sum(map(_entry, value))
    return HASHTABLE + _buckets(len(value)) + _sampled(
        value, len(value), samples, lambda m: _alloc(len(m) + 28))


def zset_size(value: Any, samples: int) -> int:
    scores = value.mapping()
    if not value.skiplist:
        return LISTPACK_HEADER + sum(_entry(m) + 10 for m in scores)
    return HASHTABLE + _buckets(len(scores)) + _sampled(
        scores, len(scores), samples, lambda m: _alloc(len(m) + 56))


def stream_size(value: Any) -> int:
    nodes = value.nodes
    size = RAX_NODE * (len(nodes) + 1) + sum(node.nbytes() for node in nodes[:-1])
    if nodes:
        size += max(STREAM_NODE, nodes[-1].nbytes())
    for name, group in value.groups.items():
        size += HASHTABLE + len(name) + 48 * len(group.pel) + 64 * len(group.consumers)
    return size


def value_size(value: Any, state: ServerState, samples: int) -> int:
    """The value's estimated bytes, `samples` elements sampled in the big encodings."""
    if type(value) is int:  # a counter INCR left (fakekey/core/keyspace.py): its bytes
        value = b"%d" % value
    if isinstance(value, bytes | bytearray):
        return string_size(value)
    kind = value.TYPE_NAME
    if kind == "list":
        return list_size(value, state, samples)
    if kind == "hash":
        return hash_size(value, samples)
    if kind == "set":
        return set_size(value, samples)
    if kind == "zset":
        return zset_size(value, samples)
    if isinstance(value, ModuleValue):
        return value.memory_usage()  # the module's own mem_usage
    return stream_size(value)


def key_usage(key: bytes, value: Any, state: ServerState, samples: int) -> int:
    """MEMORY USAGE: the object (with its key embedded) and its value."""
    return _alloc(ROBJ + len(key) + 3 + value_size(value, state, samples))


# --- the estimate maxmemory keeps up to date (fakekey/memory/eviction.py) ---------------------------

TRACKED_SAMPLES = 5  # elements sampled per big container on each change
HASHTABLE_ENTRY = 24  # the keyspace's own entry (and bucket) for a key
EXPIRE_ENTRY = 32  # and the expires table's, for a key with a deadline
SMALL_STRING = ROBJ + 6  # an object with its key and an embedded string (string_size's + 3)


def quick_value_size(value: Any, state: ServerState) -> int:
    """value_size in O(samples) whatever the value's length, for the write funnel: a big
    list's nodes and a stream's nodes are estimated from a sample instead of walked."""
    if type(value) is int:  # a counter INCR left (fakekey/core/keyspace.py): its bytes
        value = b"%d" % value
    if isinstance(value, bytes | bytearray):
        return string_size(value)
    kind = value.TYPE_NAME
    if kind == "list":
        if len(value) <= 128:
            return list_size(value, state, TRACKED_SAMPLES)
        data = _sampled(value, len(value), TRACKED_SAMPLES, _entry)
        return QUICKLIST + (data // 8192 + 1) * (QUICKLIST_NODE + LISTPACK_HEADER) + data
    if kind == "stream":
        nodes = value.nodes
        size = RAX_NODE * (len(nodes) + 1) + _sampled(
            nodes, len(nodes), TRACKED_SAMPLES, lambda node: max(STREAM_NODE, node.nbytes()))
        for name, group in value.groups.items():
            size += HASHTABLE + len(name) + 48 * len(group.pel) + 64 * len(group.consumers)
        return size
    return value_size(value, state, TRACKED_SAMPLES)


def size_class(size: int) -> int:
    """The allocator's size class for `size` bytes (jemalloc: 16-byte steps up to 128,
    then four classes per doubling): what used_memory grows by, where MEMORY USAGE
    counts the bytes asked for."""
    if size <= 8:
        return 8
    if size <= 128:
        return (size + 15) & ~15
    step = 1 << (size.bit_length() - 3)
    return (size + step - 1) // step * step


def quick_key_size(key: bytes, value: Any, state: ServerState) -> int:
    """What one key costs in the used-memory estimate: its object, value and table entry."""
    if type(value) is int:  # a counter INCR left (fakekey/core/keyspace.py): its bytes
        value = b"%d" % value
    if type(value) is bytes and len(value) <= 44:  # the commonest: an embedded string
        return size_class(SMALL_STRING + len(key) + len(value)) + HASHTABLE_ENTRY
    return size_class(ROBJ + len(key) + 3 + quick_value_size(value, state)) + HASHTABLE_ENTRY


def dataset_bytes(state: ServerState) -> int:
    """The keyspace's estimated bytes (INFO used_memory less the server's own): the
    maxmemory tracker's running total when there is one, else a walk of the keys."""
    tracker = state.memory
    if tracker is not None:
        return tracker.used
    total = 0
    for db in state.dbs:
        total += sum(quick_key_size(key, value, state) for key, value in db.data.items())
        total += EXPIRE_ENTRY * len(db.expires)
    return total
