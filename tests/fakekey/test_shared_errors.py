"""Shared error replies (WRONGTYPE, "not a valid float", ...) are module-level instances.
Python adds the frames of every raise to an instance's traceback, and those frames hold
the request's arguments: unless the traceback is dropped when the error is caught, every
refused request would leak its arguments for the life of the server."""

from __future__ import annotations

from fakekey.commands.args import NOT_FLOAT, NOT_INTEGER, WRONGTYPE
from fakekey.core.client import Client
from fakekey.net.server import new_state


def traceback_length(err: BaseException) -> int:
    length, tb = 0, err.__traceback__
    while tb is not None:
        length, tb = length + 1, tb.tb_next
    return length


def test_refusals_keep_no_frames() -> None:
    state = new_state()
    client = Client(state, None, "127.0.0.1:1", "127.0.0.1:2")
    client.state.call(client, [b"SET", b"s", b"v"])
    big = b"1" * 60_000 + b"x"
    for _ in range(50):
        state.call(client, [b"ZADD", b"z", big, b"m"])  # NOT_FLOAT
        state.call(client, [b"LPUSH", b"s", big])  # WRONGTYPE
        state.call(client, [b"SWAPDB", big, b"0"])  # NOT_INTEGER, swallowed by SWAPDB
        state.call(client, [b"HELLO", big])  # NOT_INTEGER, turned into another error
        state.call(client, [b"INCRBY", b"n", big])  # NOT_INTEGER, reaching the reply
    for err in (NOT_FLOAT, WRONGTYPE, NOT_INTEGER):
        assert traceback_length(err) == 0, err
