"""The queue's doorbell rule (spec emq.md 7.3): who pushes a token to `emq:{Q}:wake`.

Meta's field `ring` holds the rule. Absent or `lanes`: the seed's rule, only a group
joining the ring pushes a token (the lane verbs and scripts do it themselves). `all`: every
claimable transition pushes one, once per command however many jobs it made claimable; a
flat verb marks its transitions (`Call.claimable`) and the verb's wrapper rings at its end,
as the flat scripts do at theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakekey.commands.lists import lpush, ltrim
from fakekey.types.hash import HashValue
from fakekey.types.zset import ZSet

if TYPE_CHECKING:
    from fakekey.modules.emq.layout import Call

ALL = b"all"
RULES = (b"lanes", ALL)
WAKE_CAP = b"63"  # LTRIM wake 0 63: at most 64 tokens


def rule(call: Call) -> bytes | None:
    """Meta's `ring`, or None. A meta of another type has no rule: the scripts read it
    with pcall, so neither wire fails where the seed's verbs did not."""
    meta = peek(call, call.key(b"meta"))
    if type(meta) is not HashValue:
        return None
    return meta.get(b"ring")


def peek(call: Call, key: bytes) -> object:
    """The live value at `key`, read without a side effect (no lazy expiry, no access
    time, no keymiss event): the rule is looked up before every ringing verb."""
    db = call.db
    value = db.data.get(key)
    if value is not None and db.expires:
        deadline = db.expires.get(key)
        if deadline is not None and deadline <= call.now:
            return None
    return value


def ring(call: Call) -> None:
    """LPUSH wake 1, LTRIM wake 0 63: the built-ins themselves, so the keyspace events,
    WATCH and the log see what the scripts' calls make."""
    wake = call.key(b"wake")
    lpush(call.c, [b"LPUSH", wake, b"1"])
    ltrim(call.c, [b"LTRIM", wake, b"0", WAKE_CAP])


def pending_size(call: Call) -> int:
    """Jobs in pending, or 0 when pending is absent or of another type (read leniently,
    as @resume reads it with pcall)."""
    pending = peek(call, call.key(b"pending"))
    return len(pending) if type(pending) is ZSet else 0

