"""How the sketch verbs (CMS, Top-K, t-digest) meet their keys, as RedisBloom's do: a
missing key is the sketch's own error, a key of another type WRONGTYPE, and every change
goes through the write funnel with the verb's name as its keyspace event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from fakekey.commands.args import WRONGTYPE
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

V = TypeVar("V")


def existing(c: Client, key: bytes, kind: type[V], missing: ReplyError) -> V:
    """The sketch at `key`; `missing` when there is none, WRONGTYPE for another type."""
    value: Any = c.db.lookup(key)
    if value is None:
        raise missing
    if type(value) is not kind:
        raise WRONGTYPE
    return value  # type: ignore[no-any-return]


def existing_or_none(c: Client, key: bytes, kind: type[V]) -> V | None:
    """The sketch at `key` or None; WRONGTYPE for another type."""
    value: Any = c.db.lookup(key)
    if value is not None and type(value) is not kind:
        raise WRONGTYPE
    return value  # type: ignore[no-any-return]


def created(c: Client, key: bytes, value: Any, verb: str) -> None:
    """Store a new (or replacing) sketch; the keyspace event is the verb's name."""
    c.db.set_value(key, value, event=verb, klass="g")


def changed(c: Client, key: bytes, verb: str) -> None:
    """A sketch changed in place: WATCH, tracking, the dirty counter, the event."""
    c.db.written(key, verb, "g")
