"""Array replies too big to build at once, sent a slice per event-loop turn.

Valkey builds any reply whole in its output buffer: `SRANDMEMBER s -2147483647` holds a
real server for minutes while the reply grows to tens of gigabytes. fakekey sends such a
reply as a stream instead: the header at once (the element count is known), then the
elements a slice at a time between the loop's other events, pausing while the client
has more than `HIGH_WATER` bytes unread, so every other client keeps its service and
memory stays bounded whatever the count. The client's next requests wait until the
stream ends, as they would behind a long reply: the stream is the client's `blocked`
marker (inactive: no key wakes it, CLIENT UNBLOCK does not end it). Its own pub/sub
messages wait too (they would land inside the array).

What a stream sends is fixed when the command runs (a snapshot of the members), as
Valkey's reply is. A `normal` client-output-buffer-limit is obeyed as Valkey obeys it
for a reply built whole: the client is dropped once the bytes of the reply pass the
hard limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from time import perf_counter
from typing import TYPE_CHECKING, Any

from fakekey.resp.replies import Raw

if TYPE_CHECKING:
    from fakekey.core.client import Client

HIGH_WATER = 4 << 20  # unread bytes past which a stream waits for its client
SLICE = 0.005  # seconds of encoding per loop turn, at most
SLICE_BYTES = 1 << 20  # and bytes, at most (past HIGH_WATER: by one slice)
WAIT = 0.002  # seconds between two looks at a client that does not read


class StreamedReply:
    """One streamed array reply of `length` elements; `next_elements()` gives the next
    few (typed replies, encoded in the client's protocol)."""

    # the blocking machinery's view: a marker nothing wakes or times out
    active = False
    holds_output = True

    def __init__(self, client: Client, length: int, next_elements: Callable[[], list[Any]],
                 hard_limit: int) -> None:
        self.client = client
        self.remaining = length
        self.next_elements = next_elements
        self.hard_limit = hard_limit  # the normal class's hard limit (0: none)
        self.sent = 0
        self.loop = asyncio.get_running_loop()

    def start(self) -> Raw:
        """Park the client behind the stream; the header is the command's reply."""
        self.client.blocked = self
        self.loop.call_soon(self._next_slice)
        return Raw(b"*%d\r\n" % self.remaining)

    def _next_slice(self) -> None:
        client = self.client
        connection = client.connection
        if connection is None or connection.closing or client.killed or client.blocked is not self:
            return  # the client went away: so does the rest of its reply
        if connection.output_backlog() > HIGH_WATER:
            self.loop.call_later(WAIT, self._next_slice)
            return
        encode = client.encoder.encode
        parts: list[bytes] = []
        size = 0
        started = perf_counter()
        while self.remaining and size < SLICE_BYTES and perf_counter() - started < SLICE:
            elements = self.next_elements()
            self.remaining -= len(elements)
            parts.append(part := b"".join(map(encode, elements)))
            size += len(part)
        data = b"".join(parts)
        self.sent += len(data)
        if self.hard_limit and self.sent > self.hard_limit:
            client.state.stats["client_output_buffer_limit_disconnections"] += 1
            connection.close()  # as Valkey drops a client whose reply passes the limit
            return
        connection.write(data)
        if self.remaining:
            self.loop.call_soon(self._next_slice)
            return
        client.blocked = None
        connection.resume()  # requests that came behind the reply first, as Valkey read them
        if client.deferred_pushes and client.blocked is None:
            connection.flush_deferred_pushes(client)
