"""Seeding and inspecting a `fakekey.Server` from Python without a client: `srv.set(...)`,
`srv.get(...)`, `srv.dump_keyspace()`, `srv.snapshot()`... (docs/pytest.md, "Seeding
without a client").

Each call runs the real command, on the server's loop (safe while clients run), as the
server's own internal client: a RESP3 client no ACL restricts, never listed by CLIENT
LIST. So a seeded write is any client's write: keyspace events, WATCH, client-side
caching invalidations, blocked clients served, the append-only log. Replies come back
as plain Python values: bytes, int, float, None, list, dict, set; an error reply raises
`DirectCommandError`."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fakekey.core.client import Client
from fakekey.resp.replies import NULL_ARRAY, BigNumber, ReplyError, SetReply, Simple

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

Arg = str | bytes | int | float


class DirectCommandError(Exception):
    """The error reply of a command run through the direct API (its text, as a client
    would read it: `WRONGTYPE Operation against a key holding the wrong kind of value`)."""


@dataclass
class Snapshot:
    """A server's data at one moment (`srv.snapshot()`): each database's keys as DUMP
    payloads with their absolute expiry times; `srv.restore(snap)` puts it back."""

    databases: dict[int, list[tuple[bytes, bytes, int]]] = field(default_factory=dict)

    def key_count(self) -> int:
        return sum(len(keys) for keys in self.databases.values())


def plain(reply: Any) -> Any:
    """A typed reply as a plain Python value; an error reply raises."""
    if isinstance(reply, ReplyError):
        raise DirectCommandError(reply.message.decode("utf-8", "replace"))
    if reply is None or reply is NULL_ARRAY:
        return None
    if isinstance(reply, Simple):
        return reply.decode("utf-8", "replace")
    if isinstance(reply, BigNumber):
        return int(reply)
    if isinstance(reply, bytes):
        return bytes(reply)
    if isinstance(reply, bool | int | float):
        return reply
    if isinstance(reply, SetReply):
        return {plain(item) for item in reply}
    if isinstance(reply, dict):
        return {plain(k): plain(v) for k, v in reply.items()}
    if isinstance(reply, list | tuple):
        return [plain(item) for item in reply]
    raise TypeError(f"no plain value for the reply {reply!r}")


def _arg(value: Arg) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return repr(value).encode() if isinstance(value, float) else str(value).encode()


class DirectAccess:
    """Mixed into `fakekey.Server`: the direct API. `state` and `_on_loop` are Server's."""

    state: ServerState
    _direct_client: Client | None = None  # made on first use

    def _on_loop(self, fn: Any, *args: Any) -> Any:  # Server's: run fn on the server's loop
        raise NotImplementedError

    # --- any command ------------------------------------------------------------------

    def execute(self, *args: Arg, db: int = 0) -> Any:
        """Run one command as the server's internal client, in database `db`; its reply
        as a plain value (bytes, int, float, None, list, dict, set)."""
        argv = [_arg(a) for a in args]
        return plain(self._on_loop(self._run_direct, db, argv))

    def _run_direct(self, db: int, argv: list[bytes]) -> Any:
        client = self._internal_client()
        client.select(db)
        reply = self.state.call(client, argv)
        if client.blocked is not None:  # a blocking command that found nothing: no waiting here
            self.state.blocking.unblock(client, None)
            return None
        return reply

    def _internal_client(self) -> Client:
        client = self._direct_client
        if client is None or client.state is not self.state:
            client = Client(self.state, addr="internal")
            client.authenticated = True
            client.acl_unrestricted = True
            client.set_protocol(3)
            self._direct_client = client
        return client

    # --- strings and keys ---------------------------------------------------------------

    def set(self, key: Arg, value: Arg, *, ex: int | None = None, px: int | None = None,
            db: int = 0) -> bool:
        args: list[Arg] = ["SET", key, value]
        if ex is not None:
            args += ["EX", ex]
        if px is not None:
            args += ["PX", px]
        return self.execute(*args, db=db) == "OK"

    def get(self, key: Arg, *, db: int = 0) -> bytes | None:
        return self.execute("GET", key, db=db)  # type: ignore[no-any-return]

    def keys(self, pattern: Arg = "*", *, db: int = 0) -> list[bytes]:
        return sorted(self.execute("KEYS", pattern, db=db))

    def exists(self, *keys: Arg, db: int = 0) -> int:
        return self.execute("EXISTS", *keys, db=db)  # type: ignore[no-any-return]

    def ttl(self, key: Arg, *, db: int = 0) -> int:
        """Seconds left (-1: no expiry, -2: no such key), as TTL answers."""
        return self.execute("TTL", key, db=db)  # type: ignore[no-any-return]

    def type(self, key: Arg, *, db: int = 0) -> str:
        return self.execute("TYPE", key, db=db)  # type: ignore[no-any-return]

    def delete(self, *keys: Arg, db: int = 0) -> int:
        return self.execute("DEL", *keys, db=db)  # type: ignore[no-any-return]

    def flushall(self) -> None:
        self.execute("FLUSHALL")

    # --- lists, hashes, sets, sorted sets, streams -------------------------------------------

    def lpush(self, key: Arg, *values: Arg, db: int = 0) -> int:
        return self.execute("LPUSH", key, *values, db=db)  # type: ignore[no-any-return]

    def rpush(self, key: Arg, *values: Arg, db: int = 0) -> int:
        return self.execute("RPUSH", key, *values, db=db)  # type: ignore[no-any-return]

    def lrange(self, key: Arg, start: int = 0, end: int = -1, *, db: int = 0) -> list[bytes]:
        return self.execute("LRANGE", key, start, end, db=db)  # type: ignore[no-any-return]

    def hset(self, key: Arg, mapping: Mapping[Arg, Arg], *, db: int = 0) -> int:
        pairs = [item for pair in mapping.items() for item in pair]
        return self.execute("HSET", key, *pairs, db=db)  # type: ignore[no-any-return]

    def hgetall(self, key: Arg, *, db: int = 0) -> dict[bytes, bytes]:
        return self.execute("HGETALL", key, db=db)  # type: ignore[no-any-return]

    def sadd(self, key: Arg, *members: Arg, db: int = 0) -> int:
        return self.execute("SADD", key, *members, db=db)  # type: ignore[no-any-return]

    def smembers(self, key: Arg, *, db: int = 0) -> builtins.set[bytes]:
        return self.execute("SMEMBERS", key, db=db)  # type: ignore[no-any-return]

    def zadd(self, key: Arg, mapping: Mapping[Arg, float], *, db: int = 0) -> int:
        pairs = [item for member, score in mapping.items() for item in (score, member)]
        return self.execute("ZADD", key, *pairs, db=db)  # type: ignore[no-any-return]

    def zrange(self, key: Arg, start: int = 0, end: int = -1, *, withscores: bool = False,
               db: int = 0) -> list[Any]:
        """Members by rank; `withscores=True`: (member, score) pairs."""
        if not withscores:
            return self.execute("ZRANGE", key, start, end, db=db)  # type: ignore[no-any-return]
        return [tuple(pair) for pair in self.execute("ZRANGE", key, start, end, "WITHSCORES", db=db)]

    def xadd(self, key: Arg, fields: Mapping[Arg, Arg], id: Arg = "*", *, db: int = 0) -> bytes:
        pairs = [item for pair in fields.items() for item in pair]
        return self.execute("XADD", key, id, *pairs, db=db)  # type: ignore[no-any-return]

    def xrange(self, key: Arg, start: Arg = "-", end: Arg = "+", *, db: int = 0) -> list[tuple[bytes, dict[bytes, bytes]]]:
        entries = self.execute("XRANGE", key, start, end, db=db)
        return [(entry_id, _pairs(values)) for entry_id, values in entries]

    # --- the whole keyspace ---------------------------------------------------------------

    def dump_keyspace(self, *, db: int = 0) -> dict[bytes, Any]:
        """Every key of database `db` with its value as plain Python: a string as bytes,
        a list as a list, a hash as a dict, a set as a set, a sorted set as a list of
        (member, score) in order, a stream as a list of (id, {field: value}). Expiry
        times are not part of it (`snapshot()` keeps them)."""
        return {key: self._value_of(key, db) for key in self.keys(db=db)}

    def _value_of(self, key: bytes, db: int) -> Any:
        kind = self.type(key, db=db)
        if kind == "string":
            return self.get(key, db=db)
        if kind == "list":
            return self.lrange(key, db=db)
        if kind == "hash":
            return self.hgetall(key, db=db)
        if kind == "set":
            return self.smembers(key, db=db)
        if kind == "zset":
            return self.zrange(key, withscores=True, db=db)
        if kind == "stream":
            return self.xrange(key, db=db)
        return None  # gone meanwhile (expired, deleted by a client)

    def load_keyspace(self, data: Mapping[Arg, Any], *, db: int = 0) -> None:
        """Write each key of `data` (replacing it), in `dump_keyspace`'s shapes: bytes, str
        or a number: a string; a list of values: a list; a dict: a hash; a set: a set; a
        list of (member, score): a sorted set; a list of (id, {field: value}): a stream.
        An empty one deletes the key (Valkey keeps no empty container)."""
        for key, value in data.items():
            self.delete(key, db=db)
            self._load_value(key, value, db)

    def _load_value(self, key: Arg, value: Any, db: int) -> None:
        if isinstance(value, list | tuple | builtins.set | frozenset | Mapping) and not value:
            return  # an empty container is no key, in Valkey as here
        if isinstance(value, bytes | str | int | float):
            self.set(key, value, db=db)
        elif isinstance(value, Mapping):
            self.hset(key, value, db=db)
        elif isinstance(value, builtins.set | frozenset):
            self.sadd(key, *value, db=db)
        elif _is_pairs(value, Mapping):
            for entry_id, fields in value:
                self.xadd(key, fields, entry_id, db=db)
        elif _is_pairs(value, int | float):
            self.zadd(key, {member: score for member, score in value}, db=db)
        elif isinstance(value, list | tuple):
            self.rpush(key, *value, db=db)
        else:
            raise TypeError(f"no Valkey type for {key!r}'s value {value!r}")

    # --- snapshots ----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """Every database's keys (DUMP payloads and expiry times), for `restore()`."""
        return self._on_loop(self._take_snapshot)  # type: ignore[no-any-return]

    def _take_snapshot(self) -> Snapshot:
        snap = Snapshot()
        for database in self.state.dbs:
            if not len(database.data):
                continue
            index = database.index
            keys = sorted(plain(self._run_direct(index, [b"KEYS", b"*"])))
            snap.databases[index] = [
                (key, plain(self._run_direct(index, [b"DUMP", key])),
                 plain(self._run_direct(index, [b"PEXPIRETIME", key])))
                for key in keys
            ]
        return snap

    def restore(self, snap: Snapshot) -> None:
        """Back to the snapshot's data: FLUSHALL, then each key restored with its absolute
        expiry time (a key whose time has passed meanwhile is not brought back)."""
        self._on_loop(self._restore_snapshot, snap)

    def _restore_snapshot(self, snap: Snapshot) -> None:
        plain(self._run_direct(0, [b"FLUSHALL"]))
        for index, keys in snap.databases.items():
            for key, payload, expires in keys:
                ttl = b"0" if expires < 0 else str(expires).encode()
                plain(self._run_direct(index, [b"RESTORE", key, ttl, payload, b"ABSTTL", b"REPLACE"]))


def _pairs(flat: Any) -> dict[bytes, bytes]:
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[::2], flat[1::2]))


def _is_pairs(value: Any, second: Any) -> bool:
    """A non-empty list of 2-tuples whose second items are `second`s."""
    return (isinstance(value, list | tuple) and bool(value)
            and all(isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], second)
                    and not isinstance(item[1], bool) for item in value))


__all__ = ["DirectAccess", "DirectCommandError", "Snapshot", "plain"]
