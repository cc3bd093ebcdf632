"""Protocol fuzzing: random garbage and mutated requests (truncated, wrong lengths, wrong
type bytes, huge numbers, NULs, CR/LF in odd places), split at random points, sent to a
fakekey server. Whatever arrives, the server must not fail internally, must keep answering
another client, and must not touch data the stream could not address: every command the
fuzzer builds on uses only keys k1..k3, so the canary keys must stay as they were."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, encode_command

CANARIES = {b"canary:string": ("$", b"precious"), b"canary:counter": ("$", b"41")}
KEY = st.sampled_from([b"k1", b"k2", b"k3"])
VALUE = st.sampled_from([b"v", b"", b"10", b"-3", b"2.5", b"\x00\xff", b"a b", b"\r\n"])
NUMBER = st.sampled_from([b"0", b"1", b"-1", b"100", b"9223372036854775807", b"x"])

# Commands that can only reach the keys k1..k3 (or this connection's own state).
TEMPLATES = [
    st.tuples(st.just(b"PING")),
    st.tuples(st.just(b"ECHO"), VALUE),
    st.tuples(st.just(b"SET"), KEY, VALUE),
    st.tuples(st.just(b"SET"), KEY, VALUE, st.sampled_from([b"NX", b"XX", b"GET", b"EX"]), NUMBER),
    st.tuples(st.just(b"GET"), KEY),
    st.tuples(st.just(b"MGET"), KEY, KEY),
    st.tuples(st.sampled_from([b"DEL", b"EXISTS", b"TYPE", b"STRLEN", b"INCR", b"TTL"]), KEY),
    st.tuples(st.sampled_from([b"APPEND", b"RPUSH", b"SADD", b"INCRBY"]), KEY, VALUE),
    st.tuples(st.just(b"EXPIRE"), KEY, NUMBER),
    st.tuples(st.just(b"LRANGE"), KEY, NUMBER, NUMBER),
    st.tuples(st.just(b"BLPOP"), KEY, st.just(b"0.01")),
    st.tuples(st.just(b"HELLO"), st.sampled_from([b"2", b"3", b"4"])),
    st.tuples(st.sampled_from([b"MULTI", b"EXEC", b"DISCARD", b"QUIT", b"RESET"])),
    st.tuples(st.just(b"CLIENT"), st.just(b"SETNAME"), st.sampled_from([b"fuzz", b"a b"])),
]
COMMAND = st.one_of(TEMPLATES).map(list)


def inline(argv: list[bytes]) -> bytes:
    """An inline rendering, quoting every argument the way Valkey's splitter reads it."""
    return b" ".join(b'"' + a.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"' for a in argv) + b"\r\n"


REQUEST = COMMAND.map(lambda argv: encode_command(*argv)) | COMMAND.map(inline)
ODD = st.sampled_from(
    [b"\r", b"\n", b"\r\n", b"\x00", b"*", b"$", b":", b"+", b"-", b'"', b"'", b"\\", b"\xff",
     b"-1", b"0", b"2147483648", b"99999999999999999999", b"*-1\r\n", b"*0\r\n", b" "]
)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A valid request with a few mutations."""
    data = bytearray(draw(REQUEST))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["truncate", "replace", "insert", "delete", "length"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "truncate":
            del data[at:]
        elif op == "replace" and data:
            data[at : at + 1] = draw(ODD)
        elif op == "insert":
            data[at:at] = draw(ODD)
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 4))]
        elif op == "length":
            data = bytearray(_change_a_length(bytes(data), draw))
    return bytes(data)


_LENGTH = re.compile(rb"[*$](-?\d+)\r\n")


def _change_a_length(data: bytes, draw: st.DrawFn) -> bytes:
    fields = list(_LENGTH.finditer(data))
    if not fields:
        return data
    field = draw(st.sampled_from(fields))
    old = int(field.group(1))
    new = draw(st.sampled_from([old + 1, old - 1, 0, -1, -2, 2**31, 2**63, 10**30, 16385]))
    return data[: field.start(1)] + str(new).encode() + data[field.end(1) :]


STREAM = st.lists(REQUEST | mutated() | st.binary(max_size=64), min_size=1, max_size=8)


class Harness:
    """A private server, its internal errors, and a client that must always be served."""

    def __init__(self) -> None:
        self.server = Server().start()
        self.errors: list[dict[str, Any]] = []
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        self.watcher = RawClient(self.server.host, self.server.port, timeout=2)
        for key, (_, value) in CANARIES.items():
            assert self.watcher.call("SET", key, value) == ("+", b"OK")

    def send(self, data: bytes, cuts: list[int]) -> None:
        with socket.create_connection((self.server.host, self.server.port), timeout=2) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            start = 0
            # the server may close after a protocol error: that is fine
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for cut in sorted({c % (len(data) + 1) for c in cuts} | {len(data)}):
                    sock.sendall(data[start:cut])
                    start = cut

    def check(self) -> None:
        assert not self.errors, self.errors
        assert self.server.loop_thread is not None and self.server.loop_thread.is_alive()
        assert self.watcher.call("PING") == ("+", b"PONG")
        for key, value in CANARIES.items():
            assert self.watcher.call("GET", key) == value
            assert self.watcher.call("TTL", key) == (":", -1)

    def stop(self) -> None:
        self.watcher.close()
        self.server.stop()
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(None)  # the loop is every in-process server's: as it was


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.stop()


# Examples are cheap (a connection and a few writes): run more than the profile's default.
MANY = settings(
    max_examples=settings().max_examples * 5,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@MANY
@given(stream=STREAM, cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_stream_leaves_the_server_and_other_data_intact(harness, stream, cuts):
    harness.send(b"".join(stream), cuts)
    harness.check()


@MANY
@given(garbage=st.binary(min_size=1, max_size=512))
def test_random_bytes(harness, garbage):
    harness.send(garbage, [])
    harness.check()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=10)
@given(stream=STREAM, split=st.integers(1, 7))
def test_streams_on_many_connections_at_once(harness, stream, split):
    """Several clients fuzzing interleaved: each connection's garbage stays its own."""
    data = b"".join(stream)
    socks = [socket.create_connection((harness.server.host, harness.server.port), timeout=2) for _ in range(3)]
    try:
        for offset in range(0, len(data) + split, split):
            for sock in socks:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    sock.sendall(data[offset : offset + split])
    finally:
        for sock in socks:
            sock.close()
    harness.check()
