"""The request protocol on the wire: multibulk and inline framing, reads split anywhere,
pipelining, Valkey's protocol errors (the reply, then the connection closes), the bulk and
query-buffer limits, and the unauthenticated limits. After each test another client still
gets answers and data nobody touched is intact."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, encode_command
from fakekey.testing.targets import Target, ValkeyTarget, find_valkey_binary

MB = 1024 * 1024
INLINE_MAX = 64 * 1024


@pytest.fixture(autouse=True)
def bystander(target: Target) -> Iterator[RawClient]:
    """A client connected through the whole test, with a key of its own."""
    with target.raw() as client:
        client.call("SET", "bystander", "intact")
        yield client
        assert client.call("PING") == ("+", b"PONG")
        assert client.call("GET", "bystander") == ("$", b"intact")


def connect(target: Target) -> socket.socket:
    return socket.create_connection((target.host, target.port), timeout=5)


def send_quietly(sock: socket.socket, data: bytes) -> None:
    """Send, tolerating a server that closes before everything is sent."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(data)


def read_until_closed(sock: socket.socket, timeout: float = 5.0) -> bytes:
    """Everything the server sends until it closes the connection (fails on a timeout)."""
    sock.settimeout(timeout)
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def read_exactly(sock: socket.socket, size: int) -> bytes:
    out = b""
    while len(out) < size and (chunk := sock.recv(65536)):
        out += chunk
    return out


def exchange_and_close(target: Target, data: bytes) -> bytes:
    """Send `data` on a new connection and return what arrives before the server closes it."""
    with connect(target) as sock:
        send_quietly(sock, data)
        return read_until_closed(sock)


def protocol_error(message: bytes) -> bytes:
    return b"-ERR Protocol error: " + message + b"\r\n"


# --- framing ---------------------------------------------------------------------------------


def test_multibulk_and_inline_requests(target):
    with target.raw() as c:
        c.send_raw(b"SET k inline\r\n")
        assert c.read() == ("+", b"OK")
        assert c.call("GET", "k") == ("$", b"inline")
        c.send_raw(b"PING\n")  # a bare '\n' ends an inline request too
        assert c.read() == ("+", b"PONG")
        c.send_raw(b"ECHO\t  'tab separated'\r\n")
        assert c.read() == ("$", b"tab separated")


@pytest.mark.parametrize(
    ("line", "values"),
    [
        (b'"a\\x41\\n\\t\\"" \'it\\\'s\'', [b"aA\n\t\"", b"it's"]),
        (b"'no \\n escapes' \"\\q\\xZZ\"", [b"no \\n escapes", b"qxZZ"]),
        (b'"" \'\' x', [b"", b"", b"x"]),
        (b'a"b c"d "a""b" \'a\'"b"', [b"ab cd", b"ab", b"ab"]),  # adjacent parts join
        (b'x\\y "a\\"', [b"x\\y", b"a\\"]),  # '\' before the final closing quote
        (b"a\x0bb \x0c c", [b"a\x0bb", b"c"]),  # \v and \f separate nothing
        (b'a\xffb "\\xff"', [b"ab", b"\xff"]),  # a raw 0xff byte is dropped
    ],
)
def test_inline_quoting(target, line, values):
    with target.raw() as c:
        c.send_raw(b"RPUSH list " + line + b"\r\n")
        assert c.read() == (":", len(values))
        assert c.call("LRANGE", "list", 0, -1) == ("*", [("$", v) for v in values])


def test_empty_inline_lines_are_ignored(target):
    with target.raw() as c:
        c.send_raw(b"\r\n\n   \r\n\t\r\n*0\r\n*-1\r\nPING\r\n")
        assert c.read() == ("+", b"PONG")
        assert c.call("ECHO", "next") == ("$", b"next")


def test_requests_split_byte_by_byte(target):
    requests = [
        encode_command("SET", "k", "v" * 40),
        b'ECHO "two words"\r\n',
        encode_command("APPEND", "k", b"\r\n"),
        b"GET k\n",
        encode_command("PING"),
    ]
    with target.raw() as c:
        for byte in b"".join(requests):
            c.send_raw(bytes([byte]))
        assert [c.read() for _ in requests] == [
            ("+", b"OK"),
            ("$", b"two words"),
            (":", 42),
            ("$", b"v" * 40 + b"\r\n"),
            ("+", b"PONG"),
        ]


def test_pipelined_requests_are_answered_in_order(target):
    data = b"".join(encode_command("INCR", "n") for _ in range(500)) + b"GET n\r\n"
    with target.raw() as c:
        c.send_raw(data)
        assert [c.read() for _ in range(500)] == [(":", i) for i in range(1, 501)]
        assert c.read() == ("$", b"500")


@pytest.mark.parametrize("protocol", [2, 3])
def test_pipelined_replies_on_either_side_of_the_ready_made_framings(target, protocol):
    """Bulk strings around 1024 bytes and integers around 0 and 1024, answered in one
    read: the same bytes whether a reply's framing comes from a table or is formatted."""
    values = [b"", b"x" * 1023, b"y" * 1024, b"z" * 20000]
    requests = [("SET", f"edge:{i}", v) for i, v in enumerate(values)]
    requests += [("GET", f"edge:{i}") for i in range(len(values))]
    requests += [("SET", "edge:n", "-2"), ("INCR", "edge:n"), ("INCR", "edge:n"),
                 ("INCRBY", "edge:n", "1023"), ("INCR", "edge:n"), ("DECRBY", "edge:n", "2048")]
    expected = b"+OK\r\n" * len(values) + b"".join(b"$%d\r\n%s\r\n" % (len(v), v) for v in values)
    expected += b"+OK\r\n:-1\r\n:0\r\n:1023\r\n:1024\r\n:-1024\r\n"
    with target.raw() as c:
        c.call("HELLO", protocol)
        c.send_raw(b"".join(encode_command(*request) for request in requests))
        assert c.buf + read_exactly(c.sock, len(expected) - len(c.buf)) == expected
        c.call("DEL", "edge:n", *[f"edge:{i}" for i in range(len(values))])


@pytest.mark.parametrize("requests", [
    b"PING\r\n",
    encode_command("PING"),
    encode_command("SET", "k", "v") + encode_command("GET", "k") + b"INCR n\r\n",
])
def test_a_client_that_stops_sending_gets_every_reply(target, requests):
    """The client shuts its sending side right after its requests (`nc`, `printf | ...`):
    the replies still come, then the server closes."""
    with connect(target) as sock:
        sock.sendall(requests)
        sock.shutdown(socket.SHUT_WR)
        replies = read_until_closed(sock)
    expected = {b"PING\r\n": b"+PONG\r\n", encode_command("PING"): b"+PONG\r\n"}
    assert replies == expected.get(requests, b"+OK\r\n$1\r\nv\r\n:1\r\n")


def test_a_bulk_need_not_end_the_read(target):
    with target.raw() as c:
        c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab")
        assert not c.is_closed(0.1)
        c.send_raw(b"cde\r")
        assert not c.is_closed(0.1)
        c.send_raw(b"\n")
        assert c.read() == ("+", b"OK")
        assert c.call("GET", "k") == ("$", b"abcde")


# --- protocol errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"*x\r\n", b"invalid multibulk length"),
        (b"*01\r\n", b"invalid multibulk length"),
        (b"*-0\r\n", b"invalid multibulk length"),
        (b"*2147483648\r\n", b"invalid multibulk length"),
        (b"*1\r\n$-1\r\n", b"invalid bulk length"),
        (b"*1\r\n$x\r\n", b"invalid bulk length"),
        (b"*1\r\n$536870913\r\n", b"invalid bulk length"),
        (b"*1\r\nxyz\r\n", b"expected '$', got 'x'"),
        (b"*1\r\n\r\n", b"expected '$', got ' '"),
        (b"*2\r\n$4\r\nECHO\r\n:1\r\n", b"expected '$', got ':'"),
        (b"*1\rX", b"invalid CRLF in request"),
        (b"*1\r\n$4\rXPING\r\n", b"invalid CRLF in request"),
        (b"*1\r\n$4\r\nPINGXY", b"invalid CRLF in request"),
        (b'ECHO "abc\r\n', b"unbalanced quotes in request"),
        (b"ECHO 'abc\r\n", b"unbalanced quotes in request"),
        (b"ECHO \"a\"b'\r\n", b"unbalanced quotes in request"),
        (b"x" * (INLINE_MAX + 1), b"too big inline request"),
        (b"*" + b"1" * (INLINE_MAX + 1), b"too big mbulk count string"),
        (b"*1\r\n$" + b"1" * INLINE_MAX, b"too big bulk count string"),
        (b"*1\r\n" + b"x" * (INLINE_MAX + 1), b"too big bulk count string"),
    ],
)
def test_protocol_error_answers_then_closes(target, bad, message):
    """Requests before the error in the same read are still answered."""
    data = encode_command("SET", "k", "before") + b"PING\r\n" + bad
    if len(bad) < 1000:  # (after an over-long line more bytes would change what it is)
        data += encode_command("SET", "k", "after")  # never runs: the rest is dropped
    assert exchange_and_close(target, data) == b"+OK\r\n+PONG\r\n" + protocol_error(message)
    with target.raw() as c:
        assert c.call("GET", "k") == ("$", b"before")


@pytest.mark.parametrize(
    ("partial", "rest", "expected"),
    [
        (b"*1\r\nx", b"\r\n", protocol_error(b"expected '$', got 'x'")),
        (b"*1\r\nx\r", b"\n", protocol_error(b"expected '$', got 'x'")),
        (b"*1\r", b"\nyz\r\n", protocol_error(b"expected '$', got 'y'")),
        (b"*1\r\n$4\r\nPING\r", b"\nQUIT\r\n", b"+PONG\r\n+OK\r\n"),
    ],
)
def test_a_line_is_judged_only_once_complete(target, partial, rest, expected):
    with connect(target) as sock:
        sock.sendall(partial)
        sock.settimeout(0.1)
        with pytest.raises(TimeoutError):
            sock.recv(100)
        sock.sendall(rest)
        assert read_until_closed(sock) == expected


def test_a_nul_hides_the_end_of_an_inline_line(target):
    """Valkey finds the inline line end with strchr: it waits, then hits the inline limit."""
    with connect(target) as sock:
        sock.sendall(b"PING\x00\r\nPING\r\n")
        sock.settimeout(0.1)
        with pytest.raises(TimeoutError):
            sock.recv(100)
        send_quietly(sock, b"x" * INLINE_MAX)
        assert read_until_closed(sock) == protocol_error(b"too big inline request")


@pytest.mark.parametrize(("line", "refused"), [(INLINE_MAX - 100, False), (70_000, True), (200_000, True)])
def test_an_inline_line_past_64_kb_is_refused_even_with_its_newline(target, line, refused):
    """Sent at once, a line over 64 KB passes Valkey's limit before its newline is read."""
    with connect(target) as sock:
        send_quietly(sock, b"ECHO " + b"a" * (line - 5) + b"\n")
        if refused:
            assert read_until_closed(sock) == protocol_error(b"too big inline request")
        else:
            header = b"$%d\r\n" % (line - 5)
            assert read_exactly(sock, len(header) + line - 3) == header + b"a" * (line - 5) + b"\r\n"


def test_nothing_is_parsed_after_quit(target):
    assert exchange_and_close(target, b"QUIT\r\n*x\r\nPING\r\n") == b"+OK\r\n"


def test_a_blocked_client_meets_its_protocol_error_when_it_wakes(target):
    data = encode_command("BLPOP", "nolist", "0.1") + b"PING\r\n*x\r\n"
    assert exchange_and_close(target, data) == (
        b"*-1\r\n+PONG\r\n" + protocol_error(b"invalid multibulk length")
    )


# --- limits -----------------------------------------------------------------------------------


@pytest.fixture
def config(target: Target) -> Iterator[RawClient]:
    """A client to change settings with; the settings the tests change are restored."""
    with target.raw() as client:
        yield client
        client.call("CONFIG", "SET", "proto-max-bulk-len", "512mb")
        client.call("CONFIG", "SET", "client-query-buffer-limit", "1gb")


def test_bulk_over_proto_max_bulk_len(target, config):
    assert config.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == ("+", b"OK")
    data = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (MB + 1)
    assert exchange_and_close(target, data) == protocol_error(b"invalid bulk length")
    with target.raw() as c:
        assert c.call("SET", "k", b"x" * MB) == ("+", b"OK")
        assert c.call("STRLEN", "k") == (":", MB)


def test_the_new_proto_max_bulk_len_applies_to_open_connections(target, config):
    with target.raw() as c:
        assert config.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == ("+", b"OK")
        c.send_raw(b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % (MB + 1))
        assert c.read() == ("-", b"ERR Protocol error: invalid bulk length")
        assert c.is_closed()


def test_query_buffer_over_the_limit_closes_without_a_reply(target, config):
    assert config.call("CONFIG", "SET", "client-query-buffer-limit", "1mb") == ("+", b"OK")
    head = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (2 * MB)
    assert exchange_and_close(target, head + b"x" * (MB + MB // 4)) == b""
    with target.raw() as c:  # under the limit, the same request waits for the rest
        c.send_raw(head + b"x" * (MB // 2))
        assert not c.is_closed(0.2)
        assert config.call("EXISTS", "k") == (":", 0)


def test_a_multi_queue_counts_against_the_query_buffer_limit(target, config):
    assert config.call("CONFIG", "SET", "client-query-buffer-limit", "1mb") == ("+", b"OK")
    with connect(target) as sock:
        sock.sendall(encode_command("MULTI") + encode_command("SET", "q1", b"z" * 600_000))
        expected = b"+OK\r\n+QUEUED\r\n"
        received = b""
        while len(received) < len(expected) and (chunk := sock.recv(100)):
            received += chunk
        assert received == expected
        send_quietly(sock, encode_command("SET", "q2", b"z" * 600_000))
        assert read_until_closed(sock) == b""


# --- before AUTH ------------------------------------------------------------------------------


class _LockedServers:
    """Private servers with `requirepass pw`, one per kind of target, for this module."""

    def __init__(self) -> None:
        self.started: dict[str, tuple[object, int]] = {}

    def port_for(self, target: Target) -> int:
        if target.name not in self.started:
            self.started[target.name] = self._start(target)
        return self.started[target.name][1]

    def _start(self, target: Target) -> tuple[object, int]:
        if target.is_fakekey:
            server = Server(requirepass="pw").start()
            return server, server.port
        binary = find_valkey_binary()
        if target.name != "valkey" or binary is None:
            pytest.skip("needs a server this suite starts itself")
        valkey = ValkeyTarget(binary)
        valkey.start()
        with valkey.raw() as c:
            c.call("CONFIG", "SET", "requirepass", "pw")
        return valkey, valkey.port

    def stop(self) -> None:
        for server, _ in self.started.values():
            server.stop()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def locked_servers() -> Iterator[_LockedServers]:
    servers = _LockedServers()
    yield servers
    servers.stop()


@pytest.fixture
def locked(target: Target, locked_servers: _LockedServers) -> Target:
    """A target-like handle on the private server with a password, of the target's kind."""
    handle = Target()
    handle.port = locked_servers.port_for(target)
    return handle


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"*11\r\n", protocol_error(b"unauthenticated multibulk length")),
        (b"*1\r\n$16385\r\n", protocol_error(b"unauthenticated bulk length")),
        (
            b"PING\r\n*1\r\n$16385\r\n",
            b"-NOAUTH Authentication required.\r\n" + protocol_error(b"unauthenticated bulk length"),
        ),
        (
            encode_command("AUTH", "wrong") + b"*11\r\n",
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
            + protocol_error(b"unauthenticated multibulk length"),
        ),
    ],
)
def test_unauthenticated_limits(locked, data, expected):
    assert exchange_and_close(locked, data) == expected


def test_unauthenticated_limits_are_inclusive(locked):
    with locked.raw() as c:
        c.send_raw(encode_command(*["RPUSH", "l"] + ["v"] * 8) + encode_command("ECHO", b"e" * 16384))
        assert c.read() == ("-", b"NOAUTH Authentication required.")
        assert c.read() == ("-", b"NOAUTH Authentication required.")


def test_auth_lifts_the_limits_for_the_requests_after_it(locked):
    many = ["RPUSH", "l"] + ["v"] * 10
    with locked.raw() as c:
        c.send_raw(
            encode_command("AUTH", "pw") + encode_command(*many) + encode_command("ECHO", b"e" * 16385)
        )
        assert c.read() == ("+", b"OK")
        assert c.read() == (":", 10)
        assert c.read() == ("$", b"e" * 16385)
        assert c.call("DEL", "l") == (":", 1)


def test_the_server_outlives_its_clients(target):
    """Many connections opened and dropped mid-request leave the server answering."""
    for i in range(20):
        with connect(target) as sock:
            sock.sendall(encode_command("SET", f"k{i}", "v")[: 5 + i])
    with target.raw() as c:
        assert c.call("PING") == ("+", b"PONG")
        assert c.call("DBSIZE") == (":", 1)  # only the bystander's key


def test_clearing_requirepass_lets_unauthenticated_clients_in(target):
    """Once the default user has no password, a connection that never sent AUTH works."""
    admin = target.raw(2)
    try:
        assert admin.call("CONFIG", "SET", "requirepass", "pw") == ("+", b"OK")
        late = RawClient(target.host, target.port)
        assert late.call("PING") == ("-", b"NOAUTH Authentication required.")
        assert admin.call("AUTH", "pw") == ("+", b"OK")
        assert admin.call("CONFIG", "SET", "requirepass", "") == ("+", b"OK")
        assert late.call("PING") == ("+", b"PONG")
        late.close()
    finally:
        admin.call("CONFIG", "SET", "requirepass", "")
        admin.close()
