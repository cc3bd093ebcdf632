"""The dirty counter (INFO persistence's rdb_changes_since_last_save), as Valkey moves it.

The write funnel (keyspace.py) counts one per change it sees. Valkey's commands count
their own way: SADD the members added, HSET every field pair given (even unchanged ones),
LPUSH every element pushed, EXPIRE or RENAME one whatever the funnel saw, ... and some
commands change data without the funnel (stream groups). The commands listed here get
their handler wrapped once, so that after a run the counter moved by Valkey's amount;
other commands cost nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fakekey.core.registry import Command, Registry
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
    return 1 if type(value) is bytes or type(value) is bytearray else len(value)


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


def _readgroup_groups(c: Any, argv: list[bytes]) -> list[Any]:
    """XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS k1 .. kn id1 .. idn: the
    group of each distinct key that has one."""
    i = 4
    while i < len(argv):
        word = argv[i].upper()
        if word == b"STREAMS":
            break
        i += 2 if word in (b"COUNT", b"BLOCK") else 1
    else:
        return []
    keys = argv[i + 1:i + 1 + (len(argv) - i - 1) // 2]
    data = c.db.data
    groups = (getattr(data.get(k), "groups", {}).get(argv[2]) for k in dict.fromkeys(keys))
    return [g for g in groups if g is not None]


def _readgroup_before(c: Any, argv: list[bytes]) -> list[tuple[Any, bool]]:
    return [(group, argv[3] in group.consumers) for group in _readgroup_groups(c, argv)]


def _readgroup_counted(c: Any, argv: list[bytes], reply: Any, funnel: int, before: Any) -> int:
    """As Valkey's XREADGROUP: one per consumer it creates, one per stream it serves (a
    history read always serves; '>' serves when there were new entries)."""
    created = sum(1 for group, existed in before if not existed and argv[3] in group.consumers)
    served = len(reply) if isinstance(reply, (list, dict)) else 0
    return created + served


def _delconsumer_before(c: Any, argv: list[bytes]) -> bool:
    """XGROUP DELCONSUMER key group consumer."""
    return _consumer_exists(c, argv[1:])


def _one_if_existed(c: Any, argv: list[bytes], reply: Any, funnel: int, existed: bool) -> int:
    return 1 if existed else 0


def _ttl_before(c: Any, argv: list[bytes]) -> int | None:
    return c.db.expires.get(argv[1])


def _ttl_changed(c: Any, argv: list[bytes], reply: Any, funnel: int, before: int | None) -> int:
    """GETEX counts one when it set or removed the key's deadline."""
    return 1 if funnel or c.db.expires.get(argv[1]) != before else 0


RULES: dict[str, tuple[Rule, Before | None]] = {}


def _add(names: str, rule: Rule, before: Before | None = None) -> None:
    for name in names.split():
        RULES[name] = (rule, before)


_add("ltrim zpopmin zpopmax", _elements_changed, _size_before)
_add("lpop rpop spop", _popped)
_add("rename renamenx move lmove blmove rpoplpush brpoplpush copy", _one_if_written)
_add("getex", _ttl_changed, _ttl_before)
_add("sadd srem hdel lrem zrem zremrangebyrank zremrangebyscore zremrangebylex xdel xtrim "
     "expire pexpire expireat pexpireat persist xack xgroup|destroy xgroup|createconsumer",
     _integer_reply)  # the reply is the count of elements (keys, entries) changed
_add("xgroup|create xgroup|setid xsetid", _one_if_ok)
_add("lpush rpush lpushx rpushx", _pushed)
_add("hset hmset", _pairs_from(2))
_add("mset msetnx", _pairs_from(1))
_add("lmpop blmpop zmpop bzmpop", _popped_many)
_add("xclaim xautoclaim", _claimed, _consumer_exists)
_add("xreadgroup", _readgroup_counted, _readgroup_before)
_add("xgroup|delconsumer", _one_if_existed, _delconsumer_before)


# the handlers already wrapped (a second install must not count twice)
_WRAPPED: set[Any] = set()


def _counted(handler: Callable[..., Any], rule: Rule, before: Before | None) -> Callable[..., Any]:
    """The handler, then the counter set to where Valkey's count puts it (an error
    leaves what the funnel counted)."""
    # `c` typed: compiled, its state and the counter are read natively
    if before is None:
        def run(c: Client, argv: list[bytes]) -> Any:
            state = c.state
            start = state.dirty
            reply = handler(c, argv)
            state.dirty = start + rule(c, argv, reply, state.dirty - start, None)
            return reply
    else:
        def run(c: Client, argv: list[bytes]) -> Any:
            state = c.state
            start = state.dirty
            measured = before(c, argv)
            reply = handler(c, argv)
            state.dirty = start + rule(c, argv, reply, state.dirty - start, measured)
            return reply
    _WRAPPED.add(run)  # (a compiled closure takes no attributes to mark it with)
    return run



def _command(registry: Registry, name: str) -> Command | None:
    container, _, sub = name.encode().partition(b"|")
    cmd = registry.commands.get(container)
    if cmd is not None and sub:
        cmd = cmd.subcommands.get(sub)
    return cmd


def install(registry: Registry) -> None:
    """Wrap the handlers of the commands in RULES (once per process)."""
    for name, (rule, before) in RULES.items():
        cmd = _command(registry, name)
        if cmd is None or cmd.handler is None or cmd.handler in _WRAPPED:
            continue
        cmd.handler = _counted(cmd.handler, rule, before)
