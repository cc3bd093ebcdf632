"""The stream type: entries kept as Valkey keeps them, in nodes, plus consumer groups.

Entries. An id is `(ms, seq)`, two unsigned 64-bit parts, and tuples compare as Valkey
compares ids. Entries live in nodes the way Valkey keeps them in the listpacks of its
radix tree: a node starts with the entry that opened it (its *master* id and fields),
holds later entries in id order, and a deleted entry stays in its node as a tombstone
until the whole node goes. That is what makes the observable details match:

- a new node opens when the tail node holds `stream-node-max-entries` entries (live and
  deleted) or its listpack would reach `stream-node-max-bytes`; listpack sizes are
  counted byte for byte as Valkey's listpack encodes them (`Node.nbytes`);
- `~` trimming removes whole nodes only, so `MAXLEN ~ n` keeps what Valkey keeps;
- exact trimming and XDEL leave tombstones behind (they count toward a node's fill, and
  `max-deleted-entry-id`, lag and entries-read follow Valkey's rules around them);
- XINFO STREAM's radix-tree-keys is the node count and radix-tree-nodes the node count
  of the radix tree of their 16-byte big-endian master ids.

An emptied stream still exists (Valkey keeps it): `__len__` is the entry count but the
value is always truthy, so the keyspace funnel never deletes it.

Groups. A group has its last delivered id, its entries-read counter (-1 when unknown),
its pending entries list (PEL: id -> `Nack`) and its consumers; each consumer has its own
PEL sharing the group's `Nack` objects. PELs and names iterate in Valkey's order (ids
ascending, names byte-wise).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

from fakekey.codecs.numbers import try_int

if TYPE_CHECKING:
    from fakekey.types.value import Configured

StreamID = tuple[int, int]
Pairs = tuple[bytes, ...]  # field, value, field, value, ...

U64_MAX: Final = 2**64 - 1
MIN_ID: Final[StreamID] = (0, 0)
MAX_ID: Final[StreamID] = (U64_MAX, U64_MAX)
INVALID_ENTRIES_READ: Final = -1
LISTPACK_MAX_SIZE: Final = 1 << 30  # Valkey caps a node's listpack at 1 GiB whatever the config
_LISTPACK_OVERHEAD: Final = 7  # header (total bytes, element count) and the end byte


# the text of the small sequence numbers, which most generated ids carry
_SEQ_TEXT: Final = tuple(str(seq).encode() for seq in range(256))


def format_id(sid: StreamID) -> bytes:
    ms, seq = sid
    # compiled, `%` on a tuple of two named ints is native (each int's digits, then one
    # build), where `%` on the id itself, or an f-string, is a generic call; a small
    # sequence number's text comes from a table
    if seq < 256:
        return b"%d-%s" % (ms, _SEQ_TEXT[seq])
    return b"%d-%d" % (ms, seq)


def id_before(a: StreamID, b: StreamID) -> bool:
    """a < b, on the ids' two native integers: compiled, `<` on two ids boxes both as
    tuples and compares them generically."""
    return a[0] < b[0] or (a[0] == b[0] and a[1] < b[1])


def bisect_ids(ids: list[StreamID], sid: StreamID, right: bool = False) -> int:
    """bisect_left (or bisect_right) of `sid` in ascending `ids`, comparing the ids'
    native integers: compiled, `bisect` compares boxed tuples generically, several times
    the cost of a probe here."""
    ms, seq = sid
    low, high = 0, len(ids)
    while low < high:
        mid = (low + high) >> 1
        probe = ids[mid]
        if probe[0] < ms or (probe[0] == ms and (probe[1] < seq or (right and probe[1] == seq))):
            low = mid + 1
        else:
            high = mid
    return low


def next_id(sid: StreamID) -> StreamID | None:
    """The successor of `sid`, or None past the last possible id."""
    ms, seq = sid
    if seq < U64_MAX:
        return (ms, seq + 1)
    if ms < U64_MAX:
        return (ms + 1, 0)
    return None


def previous_id(sid: StreamID) -> StreamID | None:
    """The predecessor of `sid`, or None before 0-0."""
    ms, seq = sid
    if seq:
        return (ms, seq - 1)
    if ms:
        return (ms - 1, U64_MAX)
    return None


# --- listpack sizes ------------------------------------------------------------------------


def _int_size(value: int) -> int:
    """Bytes of an integer element (encoding plus its one-byte back length)."""
    if 0 <= value <= 127:
        return 2
    if -4096 <= value <= 4095:
        return 3
    if -32768 <= value <= 32767:
        return 4
    if -8388608 <= value <= 8388607:
        return 5
    if -(2**31) <= value < 2**31:
        return 6
    return 10


def _backlen_size(encoded: int) -> int:
    if encoded <= 127:
        return 1
    if encoded < 16383:
        return 2
    if encoded < 2097151:
        return 3
    if encoded < 268435455:
        return 4
    return 5


def _element_size(data: bytes) -> int:
    """Bytes of a string element; a canonical integer string is stored as an integer."""
    first = data[0] if data else 0
    number = try_int(data) if (48 <= first <= 57 or first == 45) and len(data) <= 20 else None
    if number is not None:
        return _int_size(number)
    size = len(data)
    encoded = size + (1 if size < 64 else 2 if size < 4096 else 5)
    return encoded + _backlen_size(encoded)


def pairs_bytes(pairs: Pairs) -> int:
    """The bytes of an entry's fields and values (a loop: compiled, sum(map(len, ...))
    looks `len` up in the builtins module each time)."""
    total = 0
    for item in pairs:
        total += len(item)
    return total


def _elements_size(items: Pairs, start: int, step: int = 2) -> int:
    """The listpack bytes of items[start::step] (of pairs: the fields from 0, the values
    from 1)."""
    total = 0
    i, end = start, len(items)
    while i < end:  # compiled, a range() with a variable step is a generic Python range
        total += _element_size(items[i])
        i += step
    return total


def _as_int64(delta: int) -> int:
    """An unsigned 64-bit difference as the signed integer the listpack stores."""
    if -0x3FFFFFFFFFFFFFFF <= delta <= 0x3FFFFFFFFFFFFFFF:  # the common case: itself (native compiled)
        return delta
    delta &= U64_MAX
    return delta - 2**64 if delta >= 2**63 else delta


# --- entries and nodes ----------------------------------------------------------------------


class Entry:
    __slots__ = ("id", "pairs", "deleted", "size")

    def __init__(self, sid: StreamID, pairs: Pairs, size: int) -> None:
        self.id = sid
        self.pairs = pairs
        self.deleted = False
        self.size = size  # bytes this entry takes in its node's listpack


class Node:
    """One listpack of the radix tree: the entries from `master` on, tombstones included."""

    __slots__ = ("master", "fields", "entries", "ids", "live", "deleted", "body")

    def __init__(self, master: StreamID, fields: tuple[bytes, ...]) -> None:
        self.master = master
        self.fields = fields  # the master entry's field names
        self.entries: list[Entry] = []
        self.ids: list[StreamID] = []  # entry ids, for bisection
        self.live = 0
        self.deleted = 0
        # master entry's field count, field names and zero terminator, then every entry
        self.body = _int_size(len(fields)) + _elements_size(fields, 0, 1) + _int_size(0)

    def nbytes(self) -> int:
        """lpBytes: what Valkey measures against stream-node-max-bytes."""
        return _LISTPACK_OVERHEAD + _int_size(self.live) + _int_size(self.deleted) + self.body

    def entry_size(self, sid: StreamID, pairs: Pairs, same_fields: bool) -> int:
        numfields = len(pairs) // 2
        ms, seq = sid[0] - self.master[0], sid[1] - self.master[1]
        size = 6 if 0 <= ms <= 127 and 0 <= seq <= 127 else (  # flags, ms and seq deltas
            2 + _int_size(_as_int64(ms)) + _int_size(_as_int64(seq)))
        size += _elements_size(pairs, 1)
        pieces = numfields + 3
        if not same_fields:
            size += _int_size(numfields) + _elements_size(pairs, 0)
            pieces += numfields + 1
        return size + _int_size(pieces)

    def add(self, sid: StreamID, pairs: Pairs) -> None:
        same = self._same_fields(pairs)
        entry = Entry(sid, pairs, self.entry_size(sid, pairs, same))
        self.entries.append(entry)
        self.ids.append(sid)
        self.live += 1
        self.body += entry.size

    def _same_fields(self, pairs: Pairs) -> bool:
        """Whether the entry's fields are the master entry's (pairs[0::2] == fields,
        without the slice)."""
        fields = self.fields
        if len(pairs) != 2 * len(fields):
            return False
        for i in range(len(fields)):  # noqa: SIM110 - a generator in all() costs more compiled
            if pairs[2 * i] != fields[i]:
                return False
        return True

    def copy(self) -> Node:
        twin = Node(self.master, self.fields)
        twin.body = self.body
        twin.live, twin.deleted = self.live, self.deleted
        twin.ids = list(self.ids)
        twin.entries = []
        for entry in self.entries:
            clone = Entry(entry.id, entry.pairs, entry.size)
            clone.deleted = entry.deleted
            twin.entries.append(clone)
        return twin


# --- pending entries lists, consumers, groups ------------------------------------------------


class Nack:
    """A delivered, not yet acknowledged entry: when, how often, to whom."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, now: int, consumer: Consumer | None) -> None:
        self.delivery_time = now
        self.delivery_count = 1
        self.consumer = consumer


def same_id(a: StreamID, b: StreamID) -> bool:
    return a[0] == b[0] and a[1] == b[1]


def insertion_index(ids: list[Any], sid: Any) -> int:
    """Where `sid` goes in the ascending `ids` (the first id >= it): at the end when it is
    the newest, as deliveries come, without a bisection."""
    size = len(ids)
    if not size or id_before(ids[size - 1], sid):
        return size
    return bisect_ids(ids, sid)


def index_of(ids: list[Any], sid: Any) -> int:
    """The index of `sid` in the ascending `ids`, or -1. The oldest is looked at first:
    acknowledgements come in delivery order."""
    if ids and same_id(ids[0], sid):
        return 0
    pos = insertion_index(ids, sid)
    return pos if pos < len(ids) and same_id(ids[pos], sid) else -1


class Pel:
    """A group's pending entries in id order: the ids and their records (`Nack`, which
    names its owner) in two lists side by side, `nacks[i]` the record of `ids[i]`.

    An id is found by bisection on its two native integers, after a look at both ends
    (`index_of`): deliveries come newest last and acknowledgements oldest first, so most
    lookups end there. A dict by id (it was one) hashed the request's id, a new tuple, at every
    lookup and compared it item by item: 300-770 instructions an operation. The ids are
    held as the tuples they are (`Any`, not `StreamID`): compiled, a `StreamID` is two
    native integers, boxed into a new tuple at each container operation. (One integer a
    key, ms * 2**64 + seq, was tried: building it cost more than it saved.)"""

    __slots__ = ("ids", "nacks")

    def __init__(self) -> None:
        self.ids: list[Any] = []  # StreamIDs, ascending
        self.nacks: list[Nack] = []  # the record of each id, in the same order

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, sid: Any) -> bool:
        return self.find(sid) >= 0

    def find(self, sid: Any) -> int:
        """The index of `sid` in `ids`, or -1."""
        return index_of(self.ids, sid)

    def get(self, sid: Any) -> Nack | None:
        pos = self.find(sid)
        return self.nacks[pos] if pos >= 0 else None

    def add(self, sid: Any, nack: Nack) -> None:
        """`sid` pending with the record `nack` (replacing the one it had, if any)."""
        ids = self.ids
        pos = insertion_index(ids, sid)
        if pos < len(ids) and same_id(ids[pos], sid):  # pending already: its place stays
            self.nacks[pos] = nack
            return
        ids.insert(pos, sid)
        self.nacks.insert(pos, nack)

    def remove(self, sid: Any) -> Nack | None:
        pos = self.find(sid)
        if pos < 0:
            return None
        self.ids.pop(pos)
        return self.nacks.pop(pos)

    def position(self, sid: StreamID) -> int:
        """Index of the first pending id >= sid."""
        return bisect_ids(self.ids, sid)

    def items(self, start: StreamID = MIN_ID) -> Iterator[tuple[StreamID, Nack]]:
        """(id, nack) from `start` on; the PEL must not change meanwhile."""
        ids, nacks = self.ids, self.nacks
        for pos in range(self.position(start), len(ids)):
            yield ids[pos], nacks[pos]


class OwnedIds:
    """A consumer's pending ids, ascending. Their records are its group's (`Pel`), so a
    delivery records an id once and an ack or a claim forgets it once."""

    __slots__ = ("ids", "group_pel")

    def __init__(self, group_pel: Pel) -> None:
        self.ids: list[Any] = []  # StreamIDs, ascending (boxed once: see Pel)
        self.group_pel = group_pel

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, sid: Any) -> None:
        """`sid`, not owned yet, becomes this consumer's."""
        self.ids.insert(insertion_index(self.ids, sid), sid)

    def remove(self, sid: Any) -> None:
        """`sid` is this consumer's no more (acknowledged, claimed, or its group's entry
        dropped); an id it does not own is left alone."""
        pos = index_of(self.ids, sid)
        if pos >= 0:
            self.ids.pop(pos)

    def items(self, start: StreamID = MIN_ID) -> Iterator[tuple[StreamID, Nack]]:
        """(id, nack) from `start` on; the PELs must not change meanwhile."""
        ids, pending = self.ids, self.group_pel
        for pos in range(bisect_ids(ids, start), len(ids)):
            sid = ids[pos]
            nack = pending.get(sid)
            assert nack is not None, "a consumer's id is its group's"
            yield sid, nack


class Consumer:
    __slots__ = ("name", "pel", "seen_time", "active_time")

    def __init__(self, name: bytes, now: int, group_pel: Pel) -> None:
        self.name = name
        self.pel = OwnedIds(group_pel)
        self.seen_time = now  # last attempted interaction (read, claim)
        self.active_time = -1  # last successful interaction; -1 = never


class Group:
    __slots__ = ("last_id", "entries_read", "pel", "consumers")

    def __init__(self, last_id: StreamID, entries_read: int) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = Pel()
        self.consumers: dict[bytes, Consumer] = {}

    def sorted_consumers(self) -> list[Consumer]:
        return [self.consumers[name] for name in sorted(self.consumers)]

    def ack(self, sid: Any) -> bool:
        """Acknowledge an id (a StreamID, boxed once: see Pel)."""
        nack = self.pel.remove(sid)
        if nack is None:
            return False
        if nack.consumer is not None:
            nack.consumer.pel.remove(sid)
        return True

    def assign(self, sid: StreamID, nack: Nack, consumer: Consumer) -> None:
        """Move a pending entry to `consumer`'s PEL (from its previous owner's, if any)."""
        if nack.consumer is not consumer:
            if nack.consumer is not None:
                nack.consumer.pel.remove(sid)
            consumer.pel.add(sid)
            nack.consumer = consumer

    def delete_consumer(self, consumer: Consumer) -> int:
        """Drop a consumer and its pending entries; the count it still had pending."""
        pending = len(consumer.pel)
        for sid in consumer.pel.ids:
            self.pel.remove(sid)
        del self.consumers[consumer.name]
        return pending

    def copy(self) -> Group:
        twin = Group(self.last_id, self.entries_read)
        owners: dict[int, Consumer] = {}
        for name, consumer in self.consumers.items():
            clone = Consumer(name, consumer.seen_time, twin.pel)
            clone.active_time = consumer.active_time
            twin.consumers[name] = clone
            owners[id(consumer)] = clone
        for sid, nack in self.pel.items():
            owner = owners.get(id(nack.consumer)) if nack.consumer is not None else None
            clone_nack = Nack(nack.delivery_time, owner)
            clone_nack.delivery_count = nack.delivery_count
            twin.pel.add(sid, clone_nack)
            if owner is not None:
                owner.pel.add(sid)
        return twin


# --- the stream ------------------------------------------------------------------------------


class StreamValue:
    """A stream: its nodes of entries, the counters Valkey keeps, and its groups."""

    TYPE_NAME = "stream"
    __slots__ = ("nodes", "masters", "length", "first_id", "last_id", "max_deleted",
                 "entries_added", "groups", "text_ms", "text_prefix")

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.masters: list[StreamID] = []  # each node's master id, for bisection
        self.length = 0
        self.first_id: StreamID = MIN_ID  # recorded first entry id (0-0 when empty)
        self.last_id: StreamID = MIN_ID  # last generated id
        self.max_deleted: StreamID = MIN_ID  # greatest id ever XDELed
        self.entries_added = 0
        self.groups: dict[bytes, Group] = {}
        self.text_ms = -1  # the ms part whose text (`ms-`) text_prefix caches, for last_id_text
        self.text_prefix = b""

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:
        return True  # an emptied stream is not deleted

    def encoding(self, state: Configured | None = None) -> bytes:
        return b"stream"

    def copy(self) -> StreamValue:
        twin = StreamValue()
        twin.nodes = [node.copy() for node in self.nodes]
        twin.masters = list(self.masters)
        twin.length, twin.entries_added = self.length, self.entries_added
        twin.first_id, twin.last_id, twin.max_deleted = self.first_id, self.last_id, self.max_deleted
        twin.groups = {name: group.copy() for name, group in self.groups.items()}
        return twin

    # --- adding -------------------------------------------------------------------------

    def append(self, sid: StreamID, pairs: Pairs, max_bytes: int, max_entries: int) -> None:
        """Add an entry whose id is already known to be greater than `last_id`."""
        tail = self.nodes[-1] if self.nodes else None
        if tail is not None and self._tail_is_full(tail, pairs, max_bytes, max_entries):
            tail = None
        if tail is None:
            tail = Node(sid, tuple(pairs[0::2]))
            self.nodes.append(tail)
            self.masters.append(sid)
        tail.add(sid, pairs)
        self.length += 1
        self.entries_added += 1
        self.last_id = sid
        if self.length == 1:
            self.first_id = sid

    @staticmethod
    def _tail_is_full(tail: Node, pairs: Pairs, max_bytes: int, max_entries: int) -> bool:
        if max_bytes <= 0 or max_bytes > LISTPACK_MAX_SIZE:
            max_bytes = LISTPACK_MAX_SIZE
        if tail.nbytes() + pairs_bytes(pairs) >= max_bytes:
            return True
        return bool(max_entries) and tail.live + tail.deleted >= max_entries

    def last_id_text(self) -> bytes:
        """format_id(last_id), the reply of XADD: the `ms-` part is formatted once per
        millisecond, a small sequence number comes from a table."""
        ms, seq = self.last_id
        if ms != self.text_ms:
            self.text_ms = ms
            self.text_prefix = f"{ms}-".encode()
        return self.text_prefix + (_SEQ_TEXT[seq] if seq < 256 else str(seq).encode())

    # --- reading ------------------------------------------------------------------------

    def range(self, start: StreamID, end: StreamID, rev: bool = False) -> Iterator[tuple[StreamID, Pairs]]:
        """Live entries with start <= id <= end, ascending (or descending with `rev`)."""
        if start > end or not self.nodes:
            return
        yield from (self._backward(start, end) if rev else self._forward(start, end))

    def entries_from(self, start: StreamID, count: int) -> list[tuple[StreamID, Pairs]]:
        """The first `count` (0: all) live entries with id >= start, ascending, as a list."""
        out: list[tuple[StreamID, Pairs]] = []
        nodes = self.nodes
        if not nodes:
            return out
        for index in range(max(bisect_ids(self.masters, start, right=True) - 1, 0), len(nodes)):
            node = nodes[index]
            entries = node.entries
            for pos in range(bisect_ids(node.ids, start), len(entries)):
                entry = entries[pos]
                if not entry.deleted:
                    out.append((entry.id, entry.pairs))
                    if len(out) == count:
                        return out
        return out

    def _forward(self, start: StreamID, end: StreamID) -> Iterator[tuple[StreamID, Pairs]]:
        nodes = self.nodes
        for index in range(max(bisect_ids(self.masters, start, right=True) - 1, 0), len(nodes)):
            node = nodes[index]
            entries = node.entries
            for pos in range(bisect_ids(node.ids, start), len(entries)):
                entry = entries[pos]
                if id_before(end, entry.id):
                    return
                if not entry.deleted:
                    yield entry.id, entry.pairs

    def _backward(self, start: StreamID, end: StreamID) -> Iterator[tuple[StreamID, Pairs]]:
        nodes = self.nodes
        for index in range(bisect_ids(self.masters, end, right=True) - 1, -1, -1):
            node = nodes[index]
            entries = node.entries
            for pos in range(bisect_ids(node.ids, end, right=True) - 1, -1, -1):
                entry = entries[pos]
                if id_before(entry.id, start):
                    return
                if not entry.deleted:
                    yield entry.id, entry.pairs

    def get(self, sid: StreamID) -> Pairs | None:
        """The fields of the live entry `sid`, or None."""
        found = self._locate(sid)
        return None if found is None else found[1].entries[found[2]].pairs

    def _locate(self, sid: StreamID) -> tuple[int, Node, int] | None:
        index = bisect_ids(self.masters, sid, right=True) - 1
        if index < 0:
            return None
        node = self.nodes[index]
        pos = bisect_ids(node.ids, sid)
        if pos == len(node.ids) or node.ids[pos] != sid or node.entries[pos].deleted:
            return None
        return index, node, pos

    def first_valid_id(self) -> StreamID | None:
        """The oldest live entry's id: a walk, as last_valid_id's."""
        for node in self.nodes:
            for entry in node.entries:
                if not entry.deleted:
                    return entry.id
        return None

    def last_valid_id(self) -> StreamID | None:
        """The newest live entry's id (every XREADGROUP asks): a walk back, not a range."""
        nodes = self.nodes
        for index in range(len(nodes) - 1, -1, -1):
            entries = nodes[index].entries
            for pos in range(len(entries) - 1, -1, -1):
                entry = entries[pos]
                if not entry.deleted:
                    return entry.id
        return None

    # --- deleting -----------------------------------------------------------------------

    def delete(self, sid: StreamID) -> bool:
        """XDEL one id: it becomes a tombstone; a node left without live entries goes."""
        found = self._locate(sid)
        if found is None:
            return False
        index, node, pos = found
        if node.live == 1:
            del self.nodes[index]
            del self.masters[index]
        else:
            node.entries[pos].deleted = True
            node.live -= 1
            node.deleted += 1
        self.length -= 1
        return True

    def delete_ids(self, ids: list[StreamID]) -> int:
        """XDEL: delete each id, keeping the recorded first id and max deleted id."""
        deleted = 0
        first_gone = False
        for sid in ids:
            if self.delete(sid):
                first_gone = first_gone or sid == self.first_id
                self.max_deleted = max(self.max_deleted, sid)
                deleted += 1
        if deleted:
            if not self.length:
                self.first_id = MIN_ID
            elif first_gone:
                self.first_id = self.first_valid_id() or MAX_ID
        return deleted

    def trim(self, maxlen: int | None, minid: StreamID | None, approx: bool, limit: int) -> int:
        """XADD/XTRIM trimming, node by node from the head (streamTrim). By MAXLEN when
        `maxlen` is given, else by MINID. `approx` removes whole nodes only; `limit`
        (0 = none) caps the entries removed. Returns how many entries went."""
        deleted = 0
        while self.nodes:
            if maxlen is not None and self.length <= maxlen:
                break
            node = self.nodes[0]
            if limit and deleted + node.live > limit:
                break
            if maxlen is not None:
                whole = self.length - node.live >= maxlen
            else:
                assert minid is not None  # by MINID when not by MAXLEN
                whole = node.ids[-1] < minid  # the last entry, tombstone or not
            if whole:
                del self.nodes[0]
                del self.masters[0]
                self.length -= node.live
                deleted += node.live
                continue
            if not approx:
                deleted += self._trim_inside(node, maxlen, minid)
            break
        if not self.length:
            self.first_id = MIN_ID
        elif deleted:
            self.first_id = self.first_valid_id() or MAX_ID
        return deleted

    def _trim_inside(self, node: Node, maxlen: int | None, minid: StreamID | None) -> int:
        """Exact trimming within the head node: entries become tombstones."""
        removed = 0
        for entry in node.entries:
            if maxlen is not None and self.length <= maxlen:
                break
            if minid is not None and entry.id >= minid:
                break
            if not entry.deleted:
                entry.deleted = True
                removed += 1
                self.length -= 1
        node.live -= removed
        node.deleted += removed
        return removed

    # --- consumer-group arithmetic (lag, entries-read) ----------------------------------

    def range_has_tombstones(self, start: StreamID | None) -> bool:
        """Whether an entry at or after `start` was ever deleted."""
        deleted = self.max_deleted
        if not self.length or (deleted[0] == 0 and deleted[1] == 0):  # none ever (MIN_ID)
            return False
        return start is None or not id_before(deleted, start)

    def distance_from_first(self, sid: StreamID) -> int:
        """The logical read counter of `sid` (entries added up to it), or -1 if unknowable."""
        if not self.entries_added:
            return 0
        if not self.length and sid <= self.last_id:
            return self.entries_added
        if sid != MIN_ID and sid < self.max_deleted:
            return INVALID_ENTRIES_READ
        if sid == self.last_id:
            return self.entries_added
        if sid > self.last_id:
            return INVALID_ENTRIES_READ
        if self.max_deleted == MIN_ID or self.max_deleted < self.first_id:
            if sid < self.first_id:
                return self.entries_added - self.length
            if sid == self.first_id:
                return self.entries_added - self.length + 1
        return INVALID_ENTRIES_READ

    def lag(self, group: Group) -> int | None:
        """Entries not yet delivered to the group, or None when it cannot be known."""
        if not self.entries_added:
            return 0
        if group.entries_read != INVALID_ENTRIES_READ and not self.range_has_tombstones(group.last_id):
            return self.entries_added - group.entries_read
        read = self.distance_from_first(group.last_id)
        return None if read == INVALID_ENTRIES_READ else self.entries_added - read

    def advance_group(self, group: Group, sid: StreamID) -> None:
        """A group delivers `sid` past its last id: move it and its read counter, counted
        on while nothing before it was trimmed or deleted since, re-estimated otherwise."""
        counting = group.entries_read != INVALID_ENTRIES_READ and not id_before(group.last_id, self.first_id)
        if counting and not self.range_has_tombstones(group.last_id):
            group.entries_read += 1
        elif self.entries_added:
            group.entries_read = self.distance_from_first(sid)
        group.last_id = sid

    # --- introspection ----------------------------------------------------------------------

    def radix_tree_nodes(self) -> int:
        """Nodes of the radix tree keyed by the masters' 16-byte big-endian ids."""
        keys = [ms.to_bytes(8, "big") + seq.to_bytes(8, "big") for ms, seq in self.masters]
        return radix_node_count(keys)


def radix_node_count(keys: list[bytes]) -> int:
    """Nodes of a compact radix tree (Valkey's rax) holding sorted, equal-length keys: the
    root, every branching point, every child of one, and every key."""
    prefixes = {b""}
    prefixes.update(keys)
    for left, right in zip(keys, keys[1:], strict=False):
        common = 0
        while left[common] == right[common]:
            common += 1
        prefixes.add(left[:common])
        prefixes.add(left[: common + 1])
        prefixes.add(right[: common + 1])
    return len(prefixes)
