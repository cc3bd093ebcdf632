"""The error replies the layers share: the keyspace and the data types raise them, the
commands re-export them through `fakekey.commands.args`."""

from __future__ import annotations

from fakekey.resp.replies import ReplyError

WRONGTYPE = ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = ReplyError("ERR syntax error")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
NOT_FLOAT = ReplyError("ERR value is not a valid float")
NO_SUCH_KEY = ReplyError("ERR no such key")
OVERFLOW = ReplyError("ERR increment or decrement would overflow")
DB_RANGE = ReplyError("ERR DB index is out of range")


def wrong_args(name: str) -> ReplyError:
    return ReplyError(f"ERR wrong number of arguments for '{name}' command")


def c_text(raw: bytes) -> bytes:
    """An argument as C's %s prints it in an error: up to a NUL, CR/LF made spaces."""
    return raw.split(b"\0", 1)[0].replace(b"\r", b" ").replace(b"\n", b" ")
