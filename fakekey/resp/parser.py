"""Request parsing: bytes from a client -> argument vectors, one request at a time.

Follows Valkey 9.1's query-buffer parsing (networking.c), checked byte for byte against a
real server: the same limits, the same `Protocol error: ...` texts, the same moments at
which a partial request waits for more bytes instead of failing. Requests are taken one by
one (`next_request`) because a request can change how the next one is parsed (AUTH lifts
the unauthenticated limits, CONFIG SET proto-max-bulk-len, QUIT stops parsing), and a
blocked client's later requests stay unparsed until it wakes, as in Valkey.

A multibulk request is parsed incrementally: the arguments already complete are kept, so
`buffered()` counts only the unparsed bytes, which is what Valkey holds against
client-query-buffer-limit. Bytes of a large bulk are collected without re-scanning or
re-joining the buffer on every read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from fakekey.resp.splitargs import split_args

if TYPE_CHECKING:
    from mypy_extensions import i64

INLINE_MAX: Final = 64 * 1024  # PROTO_INLINE_MAX_SIZE: longest line without its terminator
INT_MAX: Final = 2**31 - 1
I64_SAFE: Final = 2**62  # below it, a size read as an int converts to an i64 (compiled)
UNAUTH_MAX_ARGS: Final = 10
UNAUTH_MAX_BULK: Final = 16384

_CR: Final = 13
_LF: Final = 10
_STAR: Final = 42
_DOLLAR: Final = 36


class ProtocolError(Exception):
    """Malformed input: the reply is `-ERR Protocol error: <message>`, then the connection
    closes. `message` is bytes: it may quote a byte of the request."""

    def __init__(self, message: bytes) -> None:
        super().__init__(message.decode("latin-1"))
        self.message = message


def _parse_ll(raw: bytes) -> int | None:
    """string2ll: optional '-', digits without a leading zero, no '+' or spaces, at most
    20 characters, inside a signed 64-bit integer."""
    if not raw or len(raw) > 20:
        return None
    body = raw[1:] if raw[:1] == b"-" else raw
    if not body.isdigit() or (body[:1] == b"0" and raw != b"0"):
        return None
    value = int(raw)
    if not -(2**63) <= value < 2**63:
        return None
    return value


def _header_number(buf: bytes, i: int, end: int, max_digits: int) -> tuple[int, int]:
    """The number of a header line whose digits start at `i`, in string2ll's plain form
    (no sign, no leading zero, at most `max_digits` digits) and followed by CRLF, and the
    index after the CRLF; (-1, 0) when the line is anything else or not all here. Stops
    reading digits past `max_digits`: a long run costs no big-number arithmetic."""
    start = i
    value = 0
    while i < end and i - start <= max_digits:
        digit = buf[i] - 48
        if digit < 0 or digit > 9:
            break
        value = value * 10 + digit
        i += 1
    digits = i - start
    if digits == 0 or digits > max_digits or (digits > 1 and buf[start] == 48):
        return -1, 0
    if i + 1 >= end or buf[i] != _CR or buf[i + 1] != _LF:
        return -1, 0
    return value, i + 2


class RequestParser:
    """Incremental request parser for one connection: `feed` bytes, then call
    `next_request` until it returns None (more bytes needed)."""

    __slots__ = (
        "buf", "pos", "tail", "tail_len", "need", "line_byte", "line_seen",
        "argv", "remaining", "bulklen", "max_bulk", "authenticated", "held",
    )

    def __init__(self, max_bulk: int = 512 * 1024 * 1024) -> None:
        self.buf = b""  # parsed up to `pos`
        self.pos = 0
        self.tail: list[bytes] = []  # chunks fed since the buffer was last joined
        self.tail_len = 0
        self.need = 0  # a bulk is pending: don't look again before this many bytes
        self.line_byte = b""  # a line is pending: don't look again before this byte comes
        self.line_seen = False
        self.argv: list[bytes] = []  # the multibulk request being read
        self.remaining = 0  # its arguments still to read (0: between requests)
        self.bulklen = -1  # the length of the argument being read, once its header is
        self.max_bulk = max_bulk  # proto-max-bulk-len
        self.authenticated = True  # False: the unauthenticated limits apply
        self.held: list[bytes] | None = None  # a request put back, taken again first

    def feed(self, data: bytes) -> None:
        if self.pos >= len(self.buf) and not self.remaining and not self.tail:
            # nothing pending, the usual read: the bytes are the buffer, nothing to join
            self.buf = data
            self.pos = 0
            return
        self.tail.append(data)
        self.tail_len += len(data)
        if self.line_byte and self.line_byte in data:
            self.line_seen = True

    def buffered(self) -> int:
        """Bytes received and not yet parsed into arguments (Valkey's query buffer)."""
        return len(self.buf) - self.pos + self.tail_len

    def put_back(self, argv: list[bytes]) -> None:
        """Give back the request just taken: the next `next_request` returns it again
        (CLIENT PAUSE holds a request back until the pause ends)."""
        self.held = argv

    def next_request(self) -> list[bytes] | None:
        """The next complete request, or None when more bytes are needed. Raises
        ProtocolError on malformed input; the parser is unusable afterwards."""
        buf = self.buf
        pos: i64 = self.pos
        if pos < len(buf) and buf[pos] == _STAR and not self.remaining and self.held is None:
            # the hot path, the next request of a pipelined read: whole and plain at the
            # head of the buffer (else the general path below joins, waits or fails)
            argv = self._complete_multibulk(buf, pos)
            if argv is not None:
                if self.pos >= len(buf):
                    self.buf = b""  # all consumed: don't hold on to a large buffer
                    self.pos = 0
                return argv
        return self._next_request()

    def _next_request(self) -> list[bytes] | None:
        held = self.held
        if held is not None:
            self.held = None
            return held
        argv: list[bytes] | None
        idle = self.pos >= len(self.buf) and not self.remaining
        tail = self.tail
        if idle and not tail:
            return None  # nothing buffered: the common end of a batch
        if idle and len(tail) == 1:  # a fresh read and nothing pending: nothing to join
            self.buf = tail[0]
            self.pos = 0
            tail.clear()
            self.tail_len = 0
        elif tail:
            if not self._worth_parsing():
                return None
            self._join()
        while True:
            if self.remaining:
                argv = self._multibulk_args()
            elif self.pos >= len(self.buf):
                return None
            elif self.buf[self.pos] == _STAR:
                argv = self._complete_multibulk(self.buf, self.pos)
                if argv is None:  # incomplete or malformed: the exact, incremental path
                    if not self._multibulk_count():
                        return None
                    continue
            else:
                argv = self._inline()
                if argv is not None and not argv:
                    continue  # an empty line
            if argv is not None and self.pos >= len(self.buf):
                self.buf = b""  # all consumed: don't hold on to a large buffer
                self.pos = 0
            return argv

    # --- buffer management ---------------------------------------------------------------

    def _worth_parsing(self) -> bool:
        """False while the new bytes cannot complete what is pending."""
        if self.need:
            return self.buffered() >= self.need
        if self.line_byte:
            return self.line_seen or self.buffered() > INLINE_MAX
        return True

    def _join(self) -> None:
        rest = self.buf[self.pos :] if self.pos < len(self.buf) else b""
        tail = self.tail
        self.buf = tail[0] if not rest and len(tail) == 1 else b"".join([rest, *tail])
        self.pos = 0
        tail.clear()
        self.tail_len = 0
        self.need = 0
        self.line_byte = b""
        self.line_seen = False

    def _wait_for_line(self, terminator: bytes) -> None:
        self.line_byte = terminator
        self.line_seen = False

    def _line_end(self, start: int, too_big: bytes) -> int:
        """The index of the '\\r' ending the header line at `start`, or -1 when it has not
        fully arrived. Valkey looks for '\\r' alone and then needs the byte after it."""
        buf = self.buf
        cr = buf.find(b"\r", start)
        if cr < 0:
            if len(buf) - start > INLINE_MAX:
                raise ProtocolError(too_big)
            self._wait_for_line(b"\r")
            return -1
        if cr + 1 >= len(buf):
            return -1
        return cr

    # --- multibulk ---------------------------------------------------------------------------

    def _complete_multibulk(self, buf: bytes, pos: i64) -> list[bytes] | None:
        """The fast path for the common case, a whole request in the plain layout
        (`*<count>` then `$<len>` and the bytes per argument, every line ending in CRLF,
        numbers in string2ll's digits, within the limits) at the head of the buffer: read
        in one pass over its header bytes, or None (nothing consumed) to leave anything
        else to the incremental path, which answers Valkey's errors. Native integers
        (i64) when compiled: no boxing, no overflow checks on the indexes."""
        end: i64 = len(buf)
        i: i64 = pos + 1
        count: i64
        # a one- or two-digit number, the commonest (`*3`, `$3`, `$16`), is read inline: no
        # loop, no call (string2ll's form: digits only, no leading zero)
        if i + 2 < end and buf[i + 1] == _CR and buf[i + 2] == _LF:
            count = buf[i] - 48
            if count > 9:
                return None
            i += 3
        elif i + 3 < end and buf[i + 2] == _CR and buf[i + 3] == _LF:
            high: i64 = buf[i] - 49  # 1..9: no leading zero
            low: i64 = buf[i + 1] - 48
            if high < 0 or high > 8 or low < 0 or low > 9:
                return None
            count = high * 10 + 10 + low
            i += 4
        else:
            count, i = _header_number(buf, i, end, 10)
        if count < 1 or count > INT_MAX or (count > UNAUTH_MAX_ARGS and not self.authenticated):
            return None
        max_bulk: i64 = self.max_bulk if self.authenticated else min(self.max_bulk, UNAUTH_MAX_BULK)
        argv: list[bytes] = []
        size: i64
        stop: i64
        while count > 0:
            count -= 1
            if i + 3 >= end or buf[i] != _DOLLAR:
                return None  # not a bulk header, or not all here
            if buf[i + 2] == _CR and buf[i + 3] == _LF:
                size = buf[i + 1] - 48
                if size < 0 or size > 9:
                    return None
                i += 4
            elif i + 4 < end and buf[i + 3] == _CR and buf[i + 4] == _LF:
                size = buf[i + 1] - 49  # 1..9: no leading zero
                low2: i64 = buf[i + 2] - 48
                if size < 0 or size > 8 or low2 < 0 or low2 > 9:
                    return None
                size = size * 10 + 10 + low2
                i += 5
            else:
                long_size, i = _header_number(buf, i + 1, end, 19)
                if long_size < 0 or long_size > I64_SAFE:  # 19 digits may not fit an i64
                    return None
                size = long_size
            # a size past what is buffered is not all here (and `i + size` cannot overflow)
            if size > max_bulk or size > end - i - 2:
                return None
            stop = i + size
            if buf[stop] != _CR or buf[stop + 1] != _LF:
                return None
            argv.append(buf[i:stop])
            i = stop + 2
        self.pos = i
        return argv

    def _multibulk_count(self) -> bool:
        """Read `*<count>\\r\\n`; False when the line is incomplete."""
        pos = self.pos
        cr = self._line_end(pos, b"too big mbulk count string")
        if cr < 0:
            return False
        if self.buf[cr + 1] != _LF:
            raise ProtocolError(b"invalid CRLF in request")
        count = _parse_ll(self.buf[pos + 1 : cr])
        if count is None or count > INT_MAX:
            raise ProtocolError(b"invalid multibulk length")
        if count > UNAUTH_MAX_ARGS and not self.authenticated:
            raise ProtocolError(b"unauthenticated multibulk length")
        self.pos = cr + 2
        if count > 0:  # `*0` and negative counts are empty requests, skipped
            self.remaining = count
            self.argv = []
        return True

    def _multibulk_args(self) -> list[bytes] | None:
        buf = self.buf
        n = len(buf)
        pos = self.pos
        argv = self.argv
        while self.remaining:
            size = self.bulklen
            if size < 0:
                size = self._bulk_header(pos)
                if size < 0:
                    return None
                pos = self.pos
            end = pos + size
            if end + 2 > n:
                self.need = size + 2
                return None
            if buf[end] != _CR or buf[end + 1] != _LF:
                raise ProtocolError(b"invalid CRLF in request")
            argv.append(buf[pos:end])
            pos = end + 2
            self.pos = pos
            self.bulklen = -1
            self.remaining -= 1
        self.argv = []
        return argv

    def _bulk_header(self, pos: int) -> int:
        """Read `$<len>\\r\\n` at `pos`: the length, or -1 when the line is incomplete."""
        buf = self.buf
        if pos >= len(buf):
            return -1
        cr = self._line_end(pos, b"too big bulk count string")
        if cr < 0:
            return -1
        if buf[pos] != _DOLLAR:
            got = b" " if buf[pos] in (_CR, _LF) else buf[pos : pos + 1]
            raise ProtocolError(b"expected '$', got '" + got + b"'")
        if buf[cr + 1] != _LF:
            raise ProtocolError(b"invalid CRLF in request")
        size = _parse_ll(buf[pos + 1 : cr])
        if size is None or size < 0 or size > self.max_bulk:
            raise ProtocolError(b"invalid bulk length")
        if size > UNAUTH_MAX_BULK and not self.authenticated:
            raise ProtocolError(b"unauthenticated bulk length")
        self.pos = cr + 2
        self.bulklen = size
        return size

    # --- inline ------------------------------------------------------------------------------

    def _inline(self) -> list[bytes] | None:
        """One inline line; None when it has not fully arrived. Valkey finds the line end
        with strchr, so a NUL byte before the '\\n' hides it: such a line waits until the
        inline limit is passed."""
        buf = self.buf
        pos = self.pos
        eol = buf.find(b"\n", pos)
        if eol >= 0 and buf.find(b"\x00", pos, eol) >= 0:
            eol = -1
        if eol < 0:
            if len(buf) - pos > INLINE_MAX:
                raise ProtocolError(b"too big inline request")
            self._wait_for_line(b"\n")
            return None
        if eol - pos > INLINE_MAX + 1:
            # Valkey looks for the newline after each read and refuses a request past 64 KB
            # without one; a line that long is refused as its bytes arrive together
            raise ProtocolError(b"too big inline request")
        end = eol - 1 if eol > pos and buf[eol - 1] == _CR else eol
        args = split_args(buf[pos:end])
        if args is None:
            raise ProtocolError(b"unbalanced quotes in request")
        self.pos = eol + 1
        return args
