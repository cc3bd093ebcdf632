"""Streamed replies (fakekey/resp/streaming.py): a reply of more random picks than
STREAM_ABOVE goes out a slice per loop turn, waits for a client that does not read, ends
with a client that leaves, and keeps the client's own pub/sub messages for after it."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.resp.streaming import HIGH_WATER, SLICE_BYTES
from fakekey.testing.raw import RawClient

MEMBER = b"m" * 100
ELEMENT = b"$100\r\n" + MEMBER + b"\r\n"
PICKS = 1_000_000  # 108 MB of reply: far more than the high-water mark and the socket buffers


@pytest.fixture
def server() -> Iterator[Server]:
    srv = Server().start()
    yield srv
    srv.stop()


def read_exactly(client: RawClient, n: int) -> bytes:
    while len(client.buf) < n:
        client._fill()
    data, client.buf = client.buf[:n], client.buf[n:]
    return data


def the_stream(server: Server, client_name: bytes):
    for client in list(server.state.clients.values()):
        if client.name == client_name:
            return client, client.blocked
    raise AssertionError("no such client")


def test_a_client_that_does_not_read_holds_a_bounded_backlog(server):
    with RawClient(server.host, server.port) as setup:
        setup.call("SADD", "s", MEMBER)
    reader = RawClient(server.host, server.port)
    reader.call("CLIENT", "SETNAME", "slow")
    reader.send("SRANDMEMBER", "s", -PICKS)
    time.sleep(0.5)  # it reads nothing meanwhile
    client, stream = the_stream(server, b"slow")
    assert stream is not None and stream.holds_output
    assert client.connection.output_backlog() <= HIGH_WATER + SLICE_BYTES + 200_000  # + one chunk
    assert stream.sent < 32 << 20  # waiting for the reader, not building the rest
    reader.close()
    deadline = time.monotonic() + 5
    while client.id in server.state.clients and time.monotonic() < deadline:
        time.sleep(0.01)
    assert client.id not in server.state.clients
    sent = stream.sent
    time.sleep(0.2)
    assert stream.sent == sent  # the rest of a reply nobody reads is never built


def test_the_whole_reply_then_the_next_request_then_the_pushes(server):
    with RawClient(server.host, server.port) as setup:
        setup.call("SADD", "s", MEMBER)
    reader = RawClient(server.host, server.port)
    assert reader.call("HELLO", "3")[0] == "%"
    reader_id = reader.call("CLIENT", "ID")[1]
    reader.call("SUBSCRIBE", "ch")
    reader.send("SRANDMEMBER", "s", -PICKS)
    reader.send("PING")
    time.sleep(0.3)  # the stream waits for its reader now
    with RawClient(server.host, server.port) as other:
        assert other.call("PUBLISH", "ch", "hello") == (":", 1)  # delivered, after the reply
        assert other.call("CLIENT", "UNBLOCK", reader_id) == (":", 0)  # a long reply is no wait
    assert read_exactly(reader, len(b"*%d\r\n" % PICKS)) == b"*%d\r\n" % PICKS
    remaining = PICKS * len(ELEMENT)
    while remaining:
        chunk = read_exactly(reader, min(remaining, len(ELEMENT) * 10_000))
        assert chunk == ELEMENT * (len(chunk) // len(ELEMENT))
        remaining -= len(chunk)
    assert reader.read() == ("+", b"PONG")
    assert reader.read() == (">", [("$", b"message"), ("$", b"ch"), ("$", b"hello")])
    reader.close()

