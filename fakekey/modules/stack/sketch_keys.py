"""How the sketch verbs (CMS, Top-K, t-digest) meet their keys, as RedisBloom's do: a
missing key is the sketch's own error, a key of another type WRONGTYPE, and every change
goes through the write funnel with the verb's name as its keyspace event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import BLOOM_MODULE, STACK_SINCE
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

V = TypeVar("V")

WRITES = keys_range(1, flags="RW update")
READS = keys_range(1, flags="RO access")


def sketch_verb(name: str, arity: int, flags: str, summary: str, complexity: str = "O(1)",
                keys: Any = READS) -> Any:
    """Declare a verb of RedisBloom's module (a command decorator)."""
    return command(name, arity, flags, keys=keys, group="module", module=BLOOM_MODULE,
                   since=STACK_SINCE, summary=summary, complexity=complexity)


def existing(c: Client, key: bytes, kind: type[V], missing: ReplyError) -> V:
    """The sketch at `key`; `missing` when there is none, WRONGTYPE for another type."""
    value = existing_or_none(c, key, kind)
    if value is None:
        raise missing
    return value


def existing_or_none(c: Client, key: bytes, kind: type[V]) -> V | None:
    """The sketch at `key` or None; WRONGTYPE for another type."""
    return c.db.lookup_type(key, kind)  # type: ignore[no-any-return]


def created(c: Client, key: bytes, value: Any, verb: str) -> None:
    """Store a new (or replacing) sketch; the keyspace event is the verb's name."""
    c.db.set_value(key, value, event=verb, klass="g")


def changed(c: Client, key: bytes, verb: str) -> None:
    """A sketch changed in place: WATCH, tracking, the dirty counter, the event."""
    c.db.written(key, verb, "g")
