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
