"""Request parsing: bytes from a client -> argument vectors, incrementally.

Mirrors Valkey's processMultibulkBuffer/processInlineBuffer: the same limits and the same
`Protocol error: ...` texts. Complete requests are returned as lists of bytes; a partial
request stays buffered until the rest arrives. A large bulk is not re-scanned on every read:
the parser remembers how many bytes it needs before trying again.
"""

from __future__ import annotations

INLINE_MAX = 64 * 1024  # PROTO_INLINE_MAX_SIZE
INT_MAX = 2**31 - 1
UNAUTH_MAX_ARGS = 10
UNAUTH_MAX_BULK = 16384


class ProtocolError(Exception):
    """Malformed input: the reply is `-ERR Protocol error: <msg>` and the connection closes."""


def _parse_ll(raw: bytes) -> int | None:
    """string2ll: optional '-', digits, no spaces or '+', fits in a signed 64-bit integer."""
    if not raw or len(raw) > 20:
        return None
    body = raw[1:] if raw[:1] == b"-" else raw
    if not body.isdigit() or (body[:1] == b"0" and len(body) > 1) or (raw == b"-0"):
        return None
    value = int(raw)
    if not -(2**63) <= value < 2**63:
        return None
    return value


class RequestParser:
    """Incremental parser for one connection."""

    __slots__ = ("buf", "need", "max_bulk", "authenticated")

    def __init__(self, max_bulk: int = 512 * 1024 * 1024) -> None:
        self.buf = b""
        self.need = 0  # don't try again before the buffer holds this many bytes
        self.max_bulk = max_bulk
        self.authenticated = True

    def buffered(self) -> int:
        return len(self.buf)

    def feed(self, data: bytes) -> tuple[list[list[bytes]], ProtocolError | None]:
        """Add bytes; return the complete requests and the protocol error that stopped
        parsing, if any (requests before the error are still returned)."""
        buf = self.buf + data if self.buf else data
        if len(buf) < self.need:
            self.buf = buf
            return [], None
        out: list[list[bytes]] = []
        pos = 0
        n = len(buf)
        try:
            while pos < n:
                if buf[pos] == 42:  # '*'
                    res = self._multibulk(buf, pos, n)
                else:
                    res = self._inline(buf, pos, n)
                if res is None:
                    break
                argv, pos = res
                if argv:
                    out.append(argv)
        except ProtocolError as err:
            self.buf = b""
            self.need = 0
            return out, err
        self.buf = buf[pos:]
        if pos == n:
            self.need = 0
        return out, None

    def _multibulk(self, buf: bytes, pos: int, n: int) -> tuple[list[bytes], int] | None:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            if n - pos > INLINE_MAX:
                raise ProtocolError("too big mbulk count string")
            self.need = 0
            return None
        count = _parse_ll(buf[pos + 1 : eol])
        if count is None or count > INT_MAX:
            raise ProtocolError("invalid multibulk length")
        if count > UNAUTH_MAX_ARGS and not self.authenticated:
            raise ProtocolError("unauthenticated multibulk length")
        p = eol + 2
        if count <= 0:
            return [], p
        argv: list[bytes] = []
        append = argv.append
        max_bulk = self.max_bulk
        for _ in range(count):
            if p >= n:
                self.need = 0
                return None
            if buf[p] != 36:  # '$'
                raise ProtocolError("expected '$', got '%s'" % chr(buf[p]))
            eol = buf.find(b"\r\n", p)
            if eol < 0:
                if n - p > INLINE_MAX:
                    raise ProtocolError("too big bulk count string")
                self.need = 0
                return None
            size = _parse_ll(buf[p + 1 : eol])
            if size is None or size < 0 or size > max_bulk:
                raise ProtocolError("invalid bulk length")
            if size > UNAUTH_MAX_BULK and not self.authenticated:
                raise ProtocolError("unauthenticated bulk length")
            start = eol + 2
            end = start + size
            if end + 2 > n:
                # remember how much must arrive before this request can complete
                self.need = end + 2 - pos if size > 4096 else 0
                return None
            append(buf[start:end])
            p = end + 2
        return argv, p

    def _inline(self, buf: bytes, pos: int, n: int) -> tuple[list[bytes], int] | None:
        eol = buf.find(b"\n", pos)
        if eol < 0:
            if n - pos > INLINE_MAX:
                raise ProtocolError("too big inline request")
            self.need = 0
            return None
        line = buf[pos:eol]
        if line.endswith(b"\r"):
            line = line[:-1]
        args = split_args(line)
        if args is None:
            raise ProtocolError("unbalanced quotes in request")
        return args, eol + 1


_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_SPACE = b" \n\r\t\x0b\x0c\x00"
_HEX = b"0123456789abcdefABCDEF"


def split_args(line: bytes) -> list[bytes] | None:
    """sdssplitargs: words separated by spaces, "double" quotes with escapes (\\xHH, \\n,
    ...), 'single' quotes with only \\' escaped. None when quotes are unbalanced or a
    closing quote is not followed by a space."""
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SPACE:
            i += 1
        if i >= n:
            return args
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if (
                    c == 92
                    and i + 3 < n
                    and line[i + 1] == ord("x")
                    and line[i + 2] in _HEX
                    and line[i + 3] in _HEX
                ):
                    cur.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 92 and i + 1 < n:
                    i += 1
                    cur.append(_ESCAPES.get(line[i], line[i]))
                elif c == 34:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 1 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:
                    if i + 1 < n and line[i + 1] not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                if c in _SPACE:
                    break
                if c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        args.append(bytes(cur))
