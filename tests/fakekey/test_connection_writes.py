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
