"""The dirty counter (INFO persistence's rdb_changes_since_last_save), as Valkey moves it.

The write funnel (keyspace.py) counts one per change it sees. Valkey's commands count
their own way: SADD the members added, HSET every field pair given (even unchanged ones),
LPUSH every element pushed, EXPIRE or RENAME one whatever the funnel saw, ... and some
commands change data without the funnel (stream groups). Such a command is declared with
one of the rules below (`@command(..., dirty=INTEGER_REPLY)`): its handler is wrapped as
it is declared (`Counted`), so that after a run the counter moved by Valkey's amount;
other commands cost nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from fakekey.resp.replies import Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client


def _size(c: Any, key: bytes) -> int:
    """Elements at `key` (a string is one), 0 if missing or past its deadline."""
    db = c.db
    value = db.data.get(key)
    if value is None or (db.expires and key in db.expires and db.is_expired(key)):
        return 0
    kind = type(value)
    return 1 if kind is bytes or kind is bytearray or kind is int else len(value)


def _consumer_exists(c: Any, argv: list[bytes]) -> bool:
    """XCLAIM/XAUTOCLAIM key group consumer: is the consumer known before the call?"""
    group = getattr(c.db.data.get(argv[1]), "groups", {}).get(argv[2])
    return group is not None and argv[3] in group.consumers


class Dirty:
    """How one command moves the dirty counter: `count` answers its count after the run
    (seeing the reply and what the funnel counted); `measure` what it needs to know
    before the handler runs (nothing, by default). Given to `@command(..., dirty=...)`.

    Each rule is a subclass, not a function held as a value: the compiled `run` calls
    its methods directly, where a held function is a generic call that parses its
    arguments (some 300 of a pipelined LPUSH's 6,700 instructions)."""

    def measure(self, c: Any, argv: list[bytes]) -> Any:
        return None

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        raise NotImplementedError

    def run(self, handler: Callable[..., Any], c: Client, argv: list[bytes]) -> Any:
        """The handler, then the counter set to where Valkey's count puts it (an error
        leaves what the funnel counted). `c` typed: its state and the counter are read
        natively."""
        state = c.state
        start = state.dirty
        before = self.measure(c, argv)
        reply = handler(c, argv)
        state.dirty = start + self.count(c, argv, reply, state.dirty - start, before)
        return reply


class _ElementsChanged(Dirty):
    """Elements removed at the first key, measured (LTRIM, ZPOPMIN count, ...)."""

    def measure(self, c: Any, argv: list[bytes]) -> Any:
        return _size(c, argv[1])

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return abs(_size(c, argv[1]) - before) if funnel else 0


class _Popped(Dirty):
    """LPOP/RPOP/SPOP: one element, or as many as a count popped."""

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        if not funnel:
            return 0
        return len(reply) if isinstance(reply, list) else 1


class _OneIfWritten(Dirty):
    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return 1 if funnel else 0


class _IntegerReply(Dirty):
    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return reply if type(reply) is int and reply > 0 else 0


class _OneIfOk(Dirty):
    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return 1 if isinstance(reply, Simple) else 0


class _PairsFrom(Dirty):
    """Every field/value (key/value) pair given counts, changed or not (HSET, MSET)."""

    def __init__(self, start: int) -> None:
        self.start = start

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return (len(argv) - self.start) // 2 if funnel or reply == 1 else 0


class _Pushed(Dirty):
    """LPUSH and friends count every element pushed; the X forms on a missing key none."""

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return len(argv) - 2 if type(reply) is int and reply > 0 else 0


class _PoppedMany(Dirty):
    """LMPOP/ZMPOP: [key, elements]."""

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return len(reply[1]) if isinstance(reply, list) and len(reply) == 2 else 0


class _Claimed(Dirty):
    """Each entry claimed counts, and a consumer the claim created."""

    def measure(self, c: Any, argv: list[bytes]) -> Any:
        return _consumer_exists(c, argv)

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        if not isinstance(reply, list):
            return 0
        entries = reply[1] if argv[0].lower() == b"xautoclaim" else reply
        created = not before and _consumer_exists(c, argv)
        return len(entries) + created


class _ConsumerDeleted(Dirty):
    """XGROUP DELCONSUMER key group consumer: one if the consumer was there."""

    def measure(self, c: Any, argv: list[bytes]) -> Any:
        return _consumer_exists(c, argv[1:])

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        return 1 if before else 0


class _TtlChanged(Dirty):
    """GETEX counts one when the key was there and got a deadline (even the one it had:
    Valkey's getexCommand counts every EX, PX, EXAT, PXAT), or lost it (PERSIST)."""

    def measure(self, c: Any, argv: list[bytes]) -> Any:
        return c.db.expires.get(argv[1])

    def count(self, c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
        if reply is None:
            return 0
        if len(argv) > 2 and argv[2].upper() != b"PERSIST":
            return 1
        return 1 if funnel or c.db.expires.get(argv[1]) != before else 0


ELEMENTS_CHANGED: Final = _ElementsChanged()  # LTRIM, ZPOPMIN count...
POPPED: Final = _Popped()  # LPOP, RPOP, SPOP
ONE_IF_WRITTEN: Final = _OneIfWritten()  # RENAME, MOVE, LMOVE, COPY...
TTL_CHANGED: Final = _TtlChanged()  # GETEX
# the reply is the count of elements (keys, entries) changed: SADD, HDEL, EXPIRE, XACK...
INTEGER_REPLY: Final = _IntegerReply()
ONE_IF_OK: Final = _OneIfOk()  # XGROUP CREATE, XGROUP SETID, XSETID
PUSHED: Final = _Pushed()  # LPUSH, RPUSH, LPUSHX, RPUSHX
FIELD_PAIRS: Final = _PairsFrom(2)  # HSET, HMSET
KEY_PAIRS: Final = _PairsFrom(1)  # MSET, MSETNX
POPPED_MANY: Final = _PoppedMany()  # LMPOP, ZMPOP and their blocking forms
CLAIMED: Final = _Claimed()  # XCLAIM, XAUTOCLAIM
CONSUMER_DELETED: Final = _ConsumerDeleted()  # XGROUP DELCONSUMER


class Counted:
    """A handler whose command counts by a rule: what the registry declares as its
    handler (every caller of a handler gets the count). The server's own path calls
    `run` directly (`ServerState.run_command`), skipping the generic call."""

    __slots__ = ("handler", "dirty")

    def __init__(self, handler: Callable[..., Any], dirty: Dirty) -> None:
        self.handler = handler
        self.dirty = dirty

    def __call__(self, c: Client, argv: list[bytes]) -> Any:
        return self.run(c, argv)

    def run(self, c: Client, argv: list[bytes]) -> Any:
        return self.dirty.run(self.handler, c, argv)
