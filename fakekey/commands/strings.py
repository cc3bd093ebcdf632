"""String commands."""

from __future__ import annotations

from typing import Any

from fakekey.client import Client
from fakekey.commands.args import SYNTAX, WRONGTYPE, parse_int
from fakekey.commands.registry import command, keys_range
from fakekey.resp.replies import OK, ReplyError

G = "string"
LLONG_MAX = 2**63 - 1


def invalid_expire(name: str) -> ReplyError:
    return ReplyError(f"ERR invalid expire time in '{name}' command")


def expire_deadline(c: Client, unit: bytes, raw: bytes, name: str) -> int:
    """An EX/PX/EXAT/PXAT argument -> absolute unix ms, with Valkey's checks."""
    value = parse_int(raw)
    if value <= 0:
        raise invalid_expire(name)
    if unit in (b"EX", b"EXAT"):
        if value > LLONG_MAX // 1000:
            raise invalid_expire(name)
        value *= 1000
    if unit in (b"EX", b"PX"):
        value += c.state.now
        if value > LLONG_MAX:
            raise invalid_expire(name)
    return value


@command("get", 2, "readonly fast", keys=keys_range(1, flags="RO access"), acl="string",
         group=G, since="1.0.0", summary="Reads the string value of a key.")
def get(c: Client, argv: list[bytes]) -> Any:
    value = c.db.lookup(argv[1])
    if value is None or type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    raise WRONGTYPE


_SET_FLAGS = {b"NX": 1, b"XX": 2, b"GET": 4, b"KEEPTTL": 8}
_EXPIRE_UNITS = (b"EX", b"PX", b"EXAT", b"PXAT")


@command("set", -3, "write denyoom", keys=keys_range(1, flags="RW access update variable_flags"),
         acl="string", group=G, since="1.0.0", complexity="O(1)",
         summary="Stores a string at a key, with optional expiry and conditions; "
         "can answer the previous value.")
def set_(c: Client, argv: list[bytes]) -> Any:
    db = c.db
    key = argv[1]
    if len(argv) == 3:  # the plain SET: no option parsing at all
        db.set_value(key, argv[2], event="set", klass="$")
        return OK
    flags = 0
    unit = None
    deadline_raw = b""
    ifeq = None
    i = 3
    argc = len(argv)
    while i < argc:
        opt = argv[i].upper()
        bit = _SET_FLAGS.get(opt)
        if bit is not None:
            if (bit == 1 and flags & 2) or (bit == 2 and flags & 1) or (bit == 8 and unit) or (
                bit in (1, 2) and ifeq is not None
            ):
                raise SYNTAX
            flags |= bit
            i += 1
        elif opt in _EXPIRE_UNITS and i + 1 < argc:
            if (unit is not None and unit != opt) or flags & 8:
                raise SYNTAX
            unit = opt
            deadline_raw = argv[i + 1]
            i += 2
        elif opt == b"IFEQ" and i + 1 < argc and not flags & 3:
            ifeq = argv[i + 1]
            i += 2
        else:
            raise SYNTAX
    deadline = expire_deadline(c, unit, deadline_raw, "set") if unit else None
    old = db.lookup(key)
    if old is not None and type(old) is not bytes and type(old) is not bytearray:
        if flags & 4 or ifeq is not None:
            raise WRONGTYPE
    reply: Any = OK
    if flags & 4:
        reply = bytes(old) if old is not None else None
    if (flags & 1 and old is not None) or (flags & 2 and old is None) or (
        ifeq is not None and (old is None or bytes(old) != ifeq)
    ):
        return reply if flags & 4 else None
    db.set_value(key, argv[2], keep_ttl=bool(flags & 8), event="set", klass="$")
    if deadline is not None:
        set_deadline(c, key, deadline)
    return reply


def set_deadline(c: Client, key: bytes, deadline: int) -> None:
    """Give `key` a deadline; one already past deletes the key now, as Valkey does."""
    db = c.db
    if deadline <= c.state.now:
        db.delete(key, event=None)
        if c.state.notify_flags:
            c.state.notify(db, "g", "del", key)
        return
    db.set_expire(key, deadline)
    if c.state.notify_flags:
        c.state.notify(db, "g", "expire", key)
