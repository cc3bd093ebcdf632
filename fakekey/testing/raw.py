"""A raw RESP client for tests: replies keep their exact wire type.

`RawClient.call(*args)` returns a typed tree so a test can tell a simple string from a
bulk string, a double from a bulk, a map from an array, and a null from an empty bulk:

    ("+", b"OK")  ("-", b"ERR ...")  (":", 5)  ("$", b"v")  ("$", None)  ("*", [...])
    ("*", None)  ("_", None)  (",", b"1.5")  ("#", True)  ("%", [(k, v), ...])
    ("~", [...])  (">", [...])  ("=", b"txt:...")  ("(", b"123")  ("|", attrs)
"""

from __future__ import annotations

import socket
import time
from typing import Any

Reply = tuple[str, Any]


def encode_command(*args: Any) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            arg = arg.encode()
        elif isinstance(arg, int | float):
            arg = str(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(parts)


class RawClient:
    """A blocking socket speaking RESP, for exact reply-type assertions."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, *args: Any) -> None:
        self.sock.sendall(encode_command(*args))

    def call(self, *args: Any) -> Reply:
        self.send(*args)
        return self.read()

    def pipeline(self, *commands: tuple[Any, ...]) -> list[Reply]:
        self.sock.sendall(b"".join(encode_command(*c) for c in commands))
        return [self.read() for _ in commands]

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk

    def _line(self) -> bytes:
        while True:
            idx = self.buf.find(b"\r\n")
            if idx >= 0:
                line, self.buf = self.buf[:idx], self.buf[idx + 2 :]
                return line
            self._fill()

    def peek_line(self) -> bytes:
        """The next reply's first line, left unread: a reply's type and size before
        reading it (or not: a streamed reply can be too big to read whole)."""
        while (idx := self.buf.find(b"\r\n")) < 0:
            self._fill()
        return self.buf[:idx]

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2 :]
        return data

    def read(self) -> Reply:
        line = self._line()
        kind, rest = chr(line[0]), line[1:]
        if kind in "+-":
            return (kind, rest)
        if kind == ":":
            return (kind, int(rest))
        if kind in "$=":
            n = int(rest)
            return (kind, None if n < 0 else self._exact(n))
        if kind in "*~>":
            n = int(rest)
            return (kind, None if n < 0 else [self.read() for _ in range(n)])
        if kind == "%" or kind == "|":
            n = int(rest)
            return (kind, [(self.read(), self.read()) for _ in range(n)])
        if kind == "_":
            return (kind, None)
        if kind in ",(":
            return (kind, rest)
        if kind == "#":
            return (kind, rest == b"t")
        raise ValueError(f"unknown reply type {line!r}")

    def is_closed(self, wait: float = 1.0) -> bool:
        """True when the server has closed this connection (reads EOF)."""
        self.sock.settimeout(wait)
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True


def plain(reply: Reply) -> Any:
    """Drop the type tags: a reply as plain Python values (for readable assertions)."""
    kind, value = reply
    if kind in "*~>" and value is not None:
        return [plain(v) for v in value]
    if kind in "%|":
        return {plain(k): plain(v) for k, v in value}
    return value


class Background:
    """A client that sends requests from a thread (a long script, a blocking command)
    while the test goes on; `join()` answers its replies in order."""

    def __init__(self, host: str, port: int, *requests: tuple[Any, ...], timeout: float = 20.0) -> None:
        import threading

        self.client = RawClient(host, port, timeout=timeout)
        self.replies: list[Any] = []
        self.requests = requests
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.replies = self.client.pipeline(*self.requests)
        except Exception as err:  # noqa: BLE001 - reported to the test by join()
            self.replies = [err]

    def join(self, timeout: float = 10.0) -> list[Any]:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the background client got no reply in time"
        self.client.close()
        return self.replies


def wait_until_reply(client: RawClient, expected: Reply, timeout: float = 5.0) -> None:
    """Send PING until the server answers `expected` (e.g. BUSY once a script runs long)."""
    import time

    deadline = time.monotonic() + timeout
    while client.call("PING") != expected:
        assert time.monotonic() < deadline, f"the server never answered {expected!r}"
        time.sleep(0.01)


def read_within(client: RawClient, seconds: float) -> Any:
    """The next reply if it comes within `seconds`, else "nothing"."""
    client.sock.settimeout(seconds)
    try:
        return client.read()
    except TimeoutError:
        return "nothing"
    finally:
        client.sock.settimeout(10)


def wait_blocked(client: RawClient, count: int) -> None:
    """Until INFO clients says `count` clients are blocked (5 s at most)."""
    deadline = time.monotonic() + 5
    while f"blocked_clients:{count}\r\n".encode() not in client.call("INFO", "clients")[1]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
