"""How a connection's output leaves: gathered during a loop iteration, then sent for every
connection by one callback at its end. A connection whose transport is gone or fails must
not hold back anyone else's replies, now or in later iterations."""

from __future__ import annotations

import asyncio
from typing import Any

import uvloop

from fakekey.config.settings import Config
from fakekey.core.state import ServerState
from fakekey.net.server import Connection, new_state


class Transport:
    """The part of an asyncio transport a Connection uses, recording what is written.
    `closing`: the loop has closed it already; `broken`: writing raises."""

    def __init__(self, *, closing: bool = False, broken: bool = False) -> None:
        self.sent: list[bytes] = []
        self.closing = closing
        self.broken = broken
        self.closed = False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else None

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self.closing or self.closed

    def write(self, data: bytes) -> None:
        if self.broken:
            raise RuntimeError("the handler is closed")
        self.sent.append(data)

    def close(self) -> None:
        self.closed = True


def connect(state: ServerState, transport: Transport) -> Connection:
    connection = Connection(state)
    connection.connection_made(transport)
    return connection


def test_output_leaves_at_the_end_of_the_iteration_for_every_connection():
    async def scenario() -> None:
        state = new_state(Config())
        first, second = Transport(), Transport()
        a, b = connect(state, first), connect(state, second)
        a.write(b"+one\r\n")
        b.write(b"+two\r\n")
        a.write(b"+three\r\n")
        assert first.sent == [] and second.sent == []  # nothing before the iteration ends
        await asyncio.sleep(0)
        assert first.sent == [b"+one\r\n+three\r\n"]  # one send per connection
        assert second.sent == [b"+two\r\n"]

    uvloop.run(scenario())


def test_a_gone_or_failing_connection_holds_back_no_one():
    async def scenario() -> None:
        state = new_state(Config())
        gone, failing, healthy = Transport(closing=True), Transport(broken=True), Transport()
        connections = [connect(state, t) for t in (gone, failing, healthy)]
        for connection in connections:
            connection.write(b"+reply\r\n")
        await asyncio.sleep(0)
        assert gone.sent == []  # closed by the loop: dropped, without an error
        assert failing.closed  # a write that fails closes that connection
        assert healthy.sent == [b"+reply\r\n"]
        connections[2].write(b"+later\r\n")  # and later iterations still send
        await asyncio.sleep(0)
        assert healthy.sent == [b"+reply\r\n", b"+later\r\n"]

    uvloop.run(scenario())


def test_a_multi_queue_is_summed_once_against_the_query_limit():
    """Each read counts a MULTI queue's bytes against client-query-buffer-limit: the sum
    is kept, so a read adds only the commands queued since the last one (summing the whole
    queue on every read made queueing 100,000 commands quadratic)."""
    async def scenario() -> None:
        state = new_state(Config())
        connection = connect(state, Transport())
        connection.data_received(b"MULTI\r\n" + b"INCR n\r\n" * 3)
        await asyncio.sleep(0)
        client = connection.client
        assert client is not None and len(client.multi_queue) == 3
        counted = connection._queued_bytes(client)
        assert counted == 3 * (len(b"INCR") + len(b"n") + 2 * 8)
        # an entry already counted is not read again ...
        client.multi_queue[0][1].append(b"x" * 100)
        assert connection._queued_bytes(client) == counted
        # ... a new one is added ...
        connection.data_received(b"INCR n\r\n")
        await asyncio.sleep(0)
        assert connection._queued_bytes(client) == counted * 4 // 3
        # ... and another transaction's queue is counted from its start
        connection.data_received(b"DISCARD\r\nMULTI\r\nINCR n\r\n")
        await asyncio.sleep(0)
        assert connection._queued_bytes(client) == counted // 3

    uvloop.run(scenario())
