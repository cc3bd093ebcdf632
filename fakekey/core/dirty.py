"""The dirty counter (INFO persistence's rdb_changes_since_last_save), as Valkey moves it.

The write funnel (keyspace.py) counts one per change it sees. Valkey's commands count
their own way: SADD the members added, HSET every field pair given (even unchanged ones),
LPUSH every element pushed, EXPIRE or RENAME one whatever the funnel saw, ... and some
commands change data without the funnel (stream groups). Such a command is declared with
one of the rules below (`@command(..., dirty=INTEGER_REPLY)`): its handler is wrapped as
it is declared, so that after a run the counter moved by Valkey's amount; other commands
cost nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from fakekey.resp.replies import Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client

# A rule sees the client, the request, the reply, what the funnel counted, and what its
# `before` hook (if any) measured before the handler ran; it answers the command's count.
Rule = Callable[[Any, list[bytes], Any, int, Any], int]
Before = Callable[[Any, list[bytes]], Any]


def _size(c: Any, key: bytes) -> int:
    """Elements at `key` (a string is one), 0 if missing or past its deadline."""
    db = c.db
    value = db.data.get(key)
    if value is None or (db.expires and key in db.expires and db.is_expired(key)):
        return 0
    kind = type(value)
    return 1 if kind is bytes or kind is bytearray or kind is int else len(value)


def _size_before(c: Any, argv: list[bytes]) -> int:
    return _size(c, argv[1])


def _elements_changed(c: Any, argv: list[bytes], reply: Any, funnel: int, before: int) -> int:
    """Elements removed at the first key, measured (LTRIM, ZPOPMIN count, ...)."""
    return abs(_size(c, argv[1]) - before) if funnel else 0


def _popped(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    """LPOP/RPOP/SPOP: one element, or as many as a count popped."""
    if not funnel:
        return 0
    return len(reply) if isinstance(reply, list) else 1


def _one_if_written(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    return 1 if funnel else 0


def _integer_reply(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    return reply if type(reply) is int and reply > 0 else 0


def _one_if_ok(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    return 1 if isinstance(reply, Simple) else 0


def _pairs_from(start: int) -> Rule:
    """Every field/value (key/value) pair given counts, changed or not (HSET, MSET)."""
    def rule(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return (len(argv) - start) // 2 if funnel or reply == 1 else 0
    return rule


def _pushed(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    """LPUSH and friends count every element pushed; the X forms on a missing key none."""
    return len(argv) - 2 if type(reply) is int and reply > 0 else 0


def _popped_many(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    """LMPOP/ZMPOP: [key, elements]."""
    return len(reply[1]) if isinstance(reply, list) and len(reply) == 2 else 0


def _consumer_exists(c: Any, argv: list[bytes]) -> bool:
    """XCLAIM/XAUTOCLAIM key group consumer: is the consumer known before the call?"""
    group = getattr(c.db.data.get(argv[1]), "groups", {}).get(argv[2])
    return group is not None and argv[3] in group.consumers


def _claimed(c: Any, argv: list[bytes], reply: Any, funnel: int, existed: bool) -> int:
    """Each entry claimed counts, and a consumer the claim created."""
    if not isinstance(reply, list):
        return 0
    entries = reply[1] if argv[0].lower() == b"xautoclaim" else reply
    created = not existed and _consumer_exists(c, argv)
    return len(entries) + created


def _delconsumer_before(c: Any, argv: list[bytes]) -> bool:
    """XGROUP DELCONSUMER key group consumer."""
    return _consumer_exists(c, argv[1:])


def _one_if_existed(c: Any, argv: list[bytes], reply: Any, funnel: int, existed: bool) -> int:
    return 1 if existed else 0


def _ttl_before(c: Any, argv: list[bytes]) -> int | None:
    return c.db.expires.get(argv[1])


def _ttl_changed(c: Any, argv: list[bytes], reply: Any, funnel: int, before: int | None) -> int:
    """GETEX counts one when the key was there and got a deadline (even the one it had:
    Valkey's getexCommand counts every EX, PX, EXAT, PXAT), or lost it (PERSIST)."""
    if reply is None:
        return 0
    if len(argv) > 2 and argv[2].upper() != b"PERSIST":
        return 1
    return 1 if funnel or c.db.expires.get(argv[1]) != before else 0


class Dirty:
    """How one command moves the dirty counter: `rule` answers its count after the run
    (seeing the reply and what the funnel counted); `before`, if any, measures what the
    rule needs before the handler runs. Given to `@command(..., dirty=...)`."""

    __slots__ = ("rule", "before")

    def __init__(self, rule: Rule, before: Before | None = None) -> None:
        self.rule = rule
        self.before = before


ELEMENTS_CHANGED: Final = Dirty(_elements_changed, _size_before)  # LTRIM, ZPOPMIN count...
POPPED: Final = Dirty(_popped)  # LPOP, RPOP, SPOP
ONE_IF_WRITTEN: Final = Dirty(_one_if_written)  # RENAME, MOVE, LMOVE, COPY...
TTL_CHANGED: Final = Dirty(_ttl_changed, _ttl_before)  # GETEX
# the reply is the count of elements (keys, entries) changed: SADD, HDEL, EXPIRE, XACK...
INTEGER_REPLY: Final = Dirty(_integer_reply)
ONE_IF_OK: Final = Dirty(_one_if_ok)  # XGROUP CREATE, XGROUP SETID, XSETID
PUSHED: Final = Dirty(_pushed)  # LPUSH, RPUSH, LPUSHX, RPUSHX
FIELD_PAIRS: Final = Dirty(_pairs_from(2))  # HSET, HMSET
KEY_PAIRS: Final = Dirty(_pairs_from(1))  # MSET, MSETNX
POPPED_MANY: Final = Dirty(_popped_many)  # LMPOP, ZMPOP and their blocking forms
CLAIMED: Final = Dirty(_claimed, _consumer_exists)  # XCLAIM, XAUTOCLAIM
CONSUMER_DELETED: Final = Dirty(_one_if_existed, _delconsumer_before)  # XGROUP DELCONSUMER


def counted(handler: Callable[..., Any], dirty: Dirty) -> Callable[..., Any]:
    """The handler, then the counter set to where Valkey's count puts it (an error
    leaves what the funnel counted). The registry wraps a handler so when its command
    is declared with `dirty=`."""
    rule, before = dirty.rule, dirty.before
    # `c` typed: compiled, its state and the counter are read natively
    if before is None:
        def run(c: Client, argv: list[bytes]) -> Any:
            state = c.state
            start = state.dirty
            reply = handler(c, argv)
            state.dirty = start + rule(c, argv, reply, state.dirty - start, None)
            return reply
    else:
        measure = before

        def run(c: Client, argv: list[bytes]) -> Any:
            state = c.state
            start = state.dirty
            measured = measure(c, argv)
            reply = handler(c, argv)
            state.dirty = start + rule(c, argv, reply, state.dirty - start, measured)
            return reply
    return run
