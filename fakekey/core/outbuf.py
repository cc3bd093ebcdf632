"""A client's output buffers as Valkey 9.1 lays them out and counts them.

fakekey keeps a client's unsent output as bytes (the transport's buffer, the connection's
`corked` list). Valkey keeps it in a static buffer (`rbs` bytes, CLIENT LIST `obl` its
use) and a list of reply blocks of 16 KB at least (`oll` of them), and counts as the
client's output memory (`omem`, what client-output-buffer-limit compares) the list's
blocks plus, since 9.1, the strings it sends by reference once a write has picked them up.
`Ledger` replays Valkey's layout over the bytes still pending, so the figures and the
limits come out as Valkey's; a connection keeps one only while it has output pending.

The rules, from Valkey's source and what a real 9.1.2 server shows:

- A reply goes to the static buffer while the list is empty, the rest to the list's last
  block, then to a new block of max(16 KB, what is left) bytes (the allocator's usable
  size: glibc's, as the packaged server's libc allocator). The ledger sees bytes, not
  replies: it fills 16 KB blocks, as Valkey does for replies added 16 KB or less at a
  time (a bulk string's length, payload and CRLF are three additions); a single larger
  addition (a big string copied whole, a MONITOR line) gets a block of its own in Valkey.
- A bulk string of 16 KB or more that a command replies with from a stored or given string
  object (GET, MGET, GETDEL, GETEX, GETSET, SET GET, ECHO, LPOP, RPOP, LMOVE, RPOPLPUSH,
  SPOP, and a published message) is not copied: the buffer holds a 16 byte reference, and
  a buffer holding references is "encoded": each run of references or of plain bytes has
  a 20 byte header. A plain static buffer that is not empty takes no reference.
- A write takes the static buffer and the list's blocks while under 64 KB; the references
  of the blocks it takes start to count, at their reply's size, until their block is
  sent whole. A reference in a block no write has taken yet costs its 16 bytes only.
- The static buffer starts at 16 KB; `clientsCron` halves it (to the peak use + 1, 1 KB at
  least) when the peak is under half of it, doubles it (to 16 KB at most) when the peak
  filled it, and resets the peak to the buffer's use every 5 seconds (the first reset
  comes at once: Valkey stamps it in seconds and compares milliseconds).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

REPLY_CHUNK: Final = 16384  # PROTO_REPLY_CHUNK_BYTES: a list block's least payload
REPLY_MIN: Final = 1024  # PROTO_REPLY_MIN_BYTES: the static buffer's least size
HEADER: Final = 20  # a payload header in an encoded buffer
REFERENCE: Final = 16  # a referenced string: its object's pointer and the string's
BLOCK_FIELDS: Final = 32  # clientReplyBlock before its payload
NODE_OVERHEAD: Final = 56  # listNode + clientReplyBlock, counted per block in omem
COPY_AVOID_MIN: Final = 16384  # min-string-size-avoid-copy-reply (with one I/O thread)
WRITE_BATCH: Final = 64 * 1024  # NET_MAX_WRITES_PER_EVENT: a write takes blocks until this
PEAK_RESET_MS: Final = 5000  # reply-buffer-peak-reset-time
CLIENT_STRUCT: Final = 584  # Valkey's client struct, counted in tot-mem
PUBSUB_TABLES: Final = 240  # a subscriber's three (empty) subscription tables
TABLE_BUCKET: Final = 64  # a subscription table's bucket (7 entries)
PEAK_SLOTS: Final = 8  # INFO client_recent_max_output_buffer: the max of the last 8 seconds

# The commands whose bulk replies Valkey sends by reference (addReplyBulk of a string
# object) when the string is COPY_AVOID_MIN bytes or more; MGET's elements too.
REFERENCING: Final = frozenset({
    "get", "getex", "getdel", "getset", "set", "mget", "echo", "lpop", "rpop", "lmove",
    "rpoplpush", "spop",
})
# The pushes whose last element, a published message, goes by reference.
MESSAGES: Final = frozenset({b"message", b"pmessage", b"smessage"})

PLAIN: Final = 1
REF: Final = 2


def usable(size: int) -> int:
    """What glibc's malloc gives for `size` bytes (malloc_usable_size)."""
    return max(32, (size + 23) & ~15) - 8


STATIC_BUFFER: Final = usable(REPLY_CHUNK)  # a new client's static buffer: 16392


def bulk_wire(length: int) -> int:
    """The bytes of a bulk string of `length` on the wire: `$<length>\\r\\n`, it, `\\r\\n`."""
    return len(str(length)) + length + 5


class Block:
    """The static buffer or one block of the reply list: its layout bytes (`used` of
    `size`) and the reply bytes it stands for (`wire`, `sent` of them written)."""

    __slots__ = ("size", "used", "encoded", "last", "wire", "sent", "refs", "tracked")

    def __init__(self, size: int, encoded: bool = False) -> None:
        self.size = size
        self.used = 0
        self.encoded = encoded
        self.last = 0  # the kind of the last payload (PLAIN, REF), for header merging
        self.wire = 0
        self.sent = 0
        self.refs = 0  # reply bytes of the references it holds
        self.tracked = 0  # and of those a write has taken (counted in omem)

    def clear(self) -> None:
        self.used = self.wire = self.sent = self.refs = self.tracked = self.last = 0
        self.encoded = False

    def add_encoded(self, kind: int, size: int) -> bool:
        """A payload of `size` layout bytes in an encoded block, merged into the last
        header when of the same kind; False when it does not fit whole."""
        need = size if self.last == kind else HEADER + size
        if self.used + need > self.size:
            return False
        self.used += need
        self.last = kind
        return True


class Ledger:
    """Valkey's buffers for the output a client has not taken yet (see the module)."""

    __slots__ = ("buf", "nodes", "node_bytes", "wire", "tracked")

    def __init__(self, buf_size: int) -> None:
        self.buf = Block(buf_size)
        self.nodes: deque[Block] = deque()
        self.node_bytes = 0  # the blocks' payload sizes (Valkey's reply_bytes)
        self.wire = 0  # reply bytes not written yet
        self.tracked = 0  # reference bytes counted

    # --- figures ----------------------------------------------------------------------

    def obl(self) -> int:
        return self.buf.used

    def oll(self) -> int:
        return len(self.nodes)

    def omem(self) -> int:
        """getClientOutputBufferMemoryUsage: the blocks, their list nodes, and the
        references a write has taken."""
        return self.node_bytes + NODE_OVERHEAD * len(self.nodes) + self.tracked

    # --- replies added ----------------------------------------------------------------

    def add(self, size: int, refs: list[tuple[int, int]] | None) -> None:
        """`size` reply bytes, of which `refs` (offset, length) are referenced strings."""
        at = 0
        for offset, length in refs or ():
            if offset > at:
                self._plain(offset - at)
            self._reference(length)
            at = offset + length
        if size > at:
            self._plain(size - at)

    def _plain(self, n: int) -> None:
        self.wire += n
        n = put_plain(self.nodes[-1] if self.nodes else self.buf, n)
        while n:  # Valkey copies a reply a call at a time, 16 KB at most for most calls
            node = self._new_node(REPLY_CHUNK, encoded=False)
            node.used = node.wire = min(n, node.size)
            n -= node.used

    def _reference(self, length: int) -> None:
        self.wire += length
        nodes, buf = self.nodes, self.buf
        if not nodes and (buf.encoded or not buf.used):
            buf.encoded = True
            if buf.add_encoded(REF, REFERENCE):
                buf.wire += length
                buf.refs += length
                return
            if not buf.used:
                buf.encoded = False  # it did not fit: the buffer stays plain
        tail = nodes[-1] if nodes else None
        if tail is None or not (tail.encoded and tail.add_encoded(REF, REFERENCE)):
            tail = self._new_node(REPLY_CHUNK, encoded=True)
            tail.add_encoded(REF, REFERENCE)
        tail.wire += length
        tail.refs += length

    def _new_node(self, payload: int, encoded: bool) -> Block:
        node = Block(usable(payload + BLOCK_FIELDS) - BLOCK_FIELDS, encoded)
        self.nodes.append(node)
        self.node_bytes += node.size
        return node

    # --- writes -----------------------------------------------------------------------

    def take(self) -> int:
        """A write takes the first blocks (the first whole, then while under 64 KB):
        their references start to count. The bytes it takes."""
        taken = 0
        if self.buf.wire > self.buf.sent:
            taken = self._take(self.buf)
        for node in self.nodes:
            if taken >= WRITE_BATCH:
                break
            taken += self._take(node)
        return taken

    def _take(self, block: Block) -> int:
        if block.refs > block.tracked:
            self.tracked += block.refs - block.tracked
            block.tracked = block.refs
        return block.wire - block.sent

    def consume(self, n: int) -> None:
        """`n` reply bytes written, from the front; a block sent whole is freed."""
        while n > 0 and self.wire > 0:
            buf = self.buf
            block = buf if buf.wire > buf.sent else self.nodes[0]
            left = block.wire - block.sent
            if n < left:
                block.sent += n
                self.wire -= n
                return
            n -= left
            self.wire -= left
            self.tracked -= block.tracked
            if block is buf:
                buf.clear()
            else:
                self.nodes.popleft()
                self.node_bytes -= block.size

    def written(self, accepted: int) -> None:
        """A write attempt on a socket that took `accepted` bytes: Valkey writes a batch
        at a time while the socket takes them; once the kernel holds more than two thirds
        of what it takes, the socket stops reporting itself writable and Valkey waits,
        with no batch taken (what the socket took meanwhile is gone all the same)."""
        total = accepted
        while self.wire:
            batch = self.take()
            if accepted < batch:
                self.consume(accepted)
                return
            self.consume(batch)
            accepted -= batch
            if 3 * (total - accepted) > 2 * total:
                self.consume(accepted)
                return

    def drained(self, n: int) -> None:
        """The client read `n` bytes since the last look: Valkey wrote them as the socket
        drained, and its last write took the blocks now first."""
        self.consume(n)
        if self.wire:
            self.take()


def resized_buffer(size: int, peak: int) -> int:
    """clientsCronResizeOutputBuffer's new static buffer size (0: unchanged)."""
    if size // 2 >= REPLY_MIN and peak < size // 2:
        return usable(max(REPLY_MIN, peak + 1))
    if size * 2 < REPLY_CHUNK * 2 and peak == size:
        return usable(min(REPLY_CHUNK, size * 2))
    return 0


def table_memory(entries: int) -> int:
    """A subscription table's buckets: 7 entries each, a power of two of them."""
    if not entries:
        return 0
    buckets = 1
    while buckets * 7 < entries:
        buckets *= 2
    return TABLE_BUCKET * buckets


def pubsub_memory(channels: int, patterns: int, shard_channels: int) -> int:
    """pubsubMemOverhead: a subscriber's three subscription tables."""
    if not (channels or patterns or shard_channels):
        return 0
    return PUBSUB_TABLES + table_memory(channels) + table_memory(patterns) + table_memory(shard_channels)


def put_plain(block: Block, n: int) -> int:
    """Put `n` copied bytes in the last block (the static buffer, or the list's tail):
    in its encoded run when it has one and it takes them, else in its free room. The
    bytes that did not fit."""
    if block.encoded:
        if block.add_encoded(PLAIN, n):
            block.wire += n
            return 0
        return n
    take = min(n, block.size - block.used)
    block.used += take
    block.wire += take
    return n - take


def past_output_limit(used: int, limits: tuple[int, int, int], soft_since: int,
                      now_s: int) -> tuple[bool, int]:
    """Valkey's checkClientOutputBufferLimits for one client class (hard, soft, seconds):
    whether `used` bytes are past the hard limit, or past the soft one for longer than its
    seconds, and when the soft limit was first passed (0: it is not), on the server's
    clock in seconds."""
    hard, soft, seconds = limits
    if not (soft and used >= soft):
        return bool(hard) and used >= hard, 0
    since = soft_since or now_s  # the first time over: the clock starts
    return (bool(hard) and used >= hard) or now_s - since > seconds, since


def dropped_for_output(state: ServerState, client: Client) -> None:
    """A client closed at its output buffer limit: Valkey's log line and stat."""
    log.warning("Client id=%d addr=%s scheduled to be closed ASAP for overcoming of output "
                "buffer limits.", client.id, client.addr)
    state.stats["client_output_buffer_limit_disconnections"] += 1
