"""Typed replies: what a command handler returns, before any protocol is chosen.

Plain Python values cover the common cases so the hot path allocates nothing extra:

    bytes -> bulk string       int -> integer        None -> null (bulk null in RESP2)
    list/tuple -> array        float -> double       bool -> boolean
    dict -> map

The classes below cover what a plain value cannot say.
"""

from __future__ import annotations


class Simple(bytes):
    """A simple string (`+OK`)."""

    __slots__ = ()


class ReplyError(Exception):
    """An error reply. The message carries its own prefix (`ERR`, `WRONGTYPE`, ...)."""

    def __init__(self, message: str | bytes) -> None:
        if isinstance(message, str):
            # names decoded with surrogateescape (raw client bytes) go back as those bytes
            message = message.encode("utf-8", "surrogateescape")
        super().__init__(message)
        self.message: bytes = message

    def __repr__(self) -> str:
        return f"ReplyError({self.message!r})"


class SetReply(list):
    """An array that RESP3 sends as a set (`~`)."""

    __slots__ = ()


class Push(list):
    """An out-of-band message: RESP3 push (`>`), a plain array in RESP2."""

    __slots__ = ()


class Multi(list):
    """Several top-level replies from one command (SUBSCRIBE a b confirms each channel)."""

    __slots__ = ()


class Verbatim(bytes):
    """A verbatim string (`=` with a `txt` format) in RESP3, a bulk string in RESP2."""

    __slots__ = ()


class BigNumber(bytes):
    """A big number (`(`) in RESP3, a bulk string in RESP2."""

    __slots__ = ()


class _NullArray:
    """The null array: `*-1` in RESP2, `_` in RESP3 (EXEC aborted, BLPOP timed out)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NULL_ARRAY"


NULL_ARRAY = _NullArray()


class Raw(bytes):
    """Bytes already encoded for the wire, the same in both protocols."""

    __slots__ = ()


class NoReply:
    """The handler sends nothing now (a blocked client, QUIT handled, CLIENT REPLY OFF)."""

    __slots__ = ()


NO_REPLY = NoReply()

OK = Simple(b"OK")
QUEUED = Simple(b"QUEUED")
PONG = Simple(b"PONG")
