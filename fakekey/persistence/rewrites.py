"""Valkey's rewrites: the commands Valkey 9.1.2 propagates in place of a command it does
not send as it came (its rewriteClientCommandVector, rewriteClientCommandArgument,
replaceClientCommandVector and alsoPropagate calls), for persistence/propagate.py.

A rewrite sees the command's argv, its reply and the data as the command left it; the
ones of `PEEKED` also what the command found (`peek`, read before it runs): the fields a
HSETEX overwrote or deleted, the pending entries an XCLAIM dropped, a consumer XREADGROUP
created. A rewrite answers a list of argv (none: nothing goes out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fakekey.codecs import geohash
from fakekey.codecs.numbers import parse_float

SREM_BATCH = 1024  # SPOP with a count propagates its SREMs in batches of this many


# --- rewrites from the command and its reply ------------------------------------------------

Rewrite = Any  # (client, argv, reply) -> list of argv


def _deadline(c: Any, key: bytes) -> bytes | None:
    when = c.db.expires.get(key)
    return None if when is None or key not in c.db.data else b"%d" % when


def _expired_away(c: Any, key: bytes) -> list[bytes]:
    """A write whose deadline had passed deleted the key: DEL or UNLINK, as Valkey's
    deleteExpiredKeyFromOverwriteAndPropagate."""
    return [b"UNLINK" if c.state.config["lazyfree-lazy-expire"] else b"DEL", key]


EXPIRY_WORDS = frozenset({b"ex", b"px", b"exat", b"pxat"})


def rewrite_set(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    words = [arg.lower() for arg in argv[3:]]
    unit = next((w for w in words if w in EXPIRY_WORDS), None)
    if unit is None:
        if b"get" in words:  # propagated without GET
            return [argv[:3] + [arg for arg in argv[3:] if arg.lower() != b"get"]]
        return [argv]
    if unit == b"pxat":
        return [argv]
    key = argv[1]
    when = _deadline(c, key)
    if when is None:
        return [_expired_away(c, key)]
    if len(argv) == 5:
        return [argv[:3] + [b"PXAT", when]]
    return [[b"SET", key, argv[2], b"PXAT", when]]


def rewrite_msetex(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    """EX, PX or EXAT and its value replaced in place by PXAT and the keys' deadline, as
    Valkey; PXAT goes as it came."""
    first_option = 2 + 2 * int(argv[1])
    for i in range(first_option, len(argv) - 1):
        unit = argv[i].lower()
        if unit in EXPIRY_WORDS:
            when = _deadline(c, argv[2])
            if unit == b"pxat" or when is None:
                return [argv]
            return [argv[:i] + [b"PXAT", when] + argv[i + 2:]]
    return [argv]


def rewrite_setex(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    key = argv[1]
    when = _deadline(c, key)
    return [[b"SET", key, argv[3], b"PXAT", when] if when is not None else _expired_away(c, key)]


def rewrite_getex(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    key = argv[1]
    if key not in c.db.data:
        return [_expired_away(c, key)]
    when = _deadline(c, key)
    return [[b"PEXPIREAT", key, when] if when is not None else [b"PERSIST", key]]


def rewrite_expire(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    key = argv[1]
    when = _deadline(c, key)
    if when is None:
        return [_expired_away(c, key)]
    if argv[0].lower() == b"pexpireat":
        return [argv]
    return [[b"PEXPIREAT", key, when, *argv[3:]]]


def rewrite_getset(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"SET", *argv[1:]]]


def rewrite_as_del(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"DEL", argv[1]]]


def rewrite_incrbyfloat(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"SET", argv[1], _text(reply), b"KEEPTTL"]]


def rewrite_hincrbyfloat(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"HSET", argv[1], argv[2], _text(reply)]]


def _text(reply: Any) -> bytes:
    if isinstance(reply, (bytes, bytearray)):
        return bytes(reply)
    return repr(reply).encode() if isinstance(reply, float) else str(reply).encode()


def rewrite_spop(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    key = argv[1]
    if len(argv) == 2:
        return [[b"SREM", key, reply]]
    if key not in c.db.data:  # the whole set popped
        return [[b"UNLINK" if c.state.config["lazyfree-lazy-server-del"] else b"DEL", key]]
    members = list(reply)
    return [[b"SREM", key, *members[i:i + SREM_BATCH]] for i in range(0, len(members), SREM_BATCH)]


def rewrite_blocking_pop(name: bytes) -> Rewrite:
    """BLPOP, BRPOP, BZPOPMIN, BZPOPMAX served: the non-blocking pop of the key served."""
    def rewrite(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
        return [[name, reply[0]]]
    return rewrite


def rewrite_mpop(left: bytes, right: bytes, numkeys_at: int) -> Rewrite:
    """LMPOP/BLMPOP, ZMPOP/BZMPOP: the pop of the key served, with its count."""
    def rewrite(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
        numkeys = int(argv[numkeys_at])
        where = argv[numkeys_at + 1 + numkeys].lower()
        name = left if where in (b"left", b"min") else right
        return [[name, reply[0], b"%d" % len(reply[1])]]
    return rewrite


def rewrite_brpoplpush(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"RPOPLPUSH", argv[1], argv[2]]]


def rewrite_blmove(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [[b"LMOVE", *argv[1:5]]]


TRIM_WORDS = frozenset({b"maxlen", b"minid"})


def _exact_trim(c: Any, argv: list[bytes], start: int) -> list[bytes]:
    """MAXLEN/MINID ~ n becomes = (the stream's length, or its first ID), as Valkey's
    streamRewriteApproxSpecifier and streamRewriteTrimArgument."""
    out = list(argv)
    for i in range(start, len(out) - 2):
        word = out[i].lower()
        if word in TRIM_WORDS and out[i + 1] == b"~":
            stream = c.db.data.get(argv[1])
            out[i + 1] = b"="
            if word == b"maxlen":
                out[i + 2] = b"%d" % (len(stream) if stream is not None else 0)
            else:
                out[i + 2] = _first_id(stream)
            break
    return out


def _first_id(stream: Any) -> bytes:
    first = stream.first_valid_id() if stream is not None and len(stream) else None
    return b"0-0" if first is None else b"%d-%d" % (first[0], first[1])


def rewrite_xadd(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    out = _exact_trim(c, argv, 2)
    position = xadd_id_position(argv)
    if position and (argv[position] == b"*" or argv[position].endswith(b"-*")):
        out[position] = bytes(reply)
    return [out]


def xadd_id_position(argv: list[bytes]) -> int:
    """Where XADD's ID is: after its options (NOMKSTREAM, MAXLEN/MINID [=|~] n, LIMIT n)."""
    i = 2
    while i < len(argv):
        word = argv[i].lower()
        if word == b"nomkstream":
            i += 1
        elif word in TRIM_WORDS:
            i += 3 if argv[i + 1] in (b"=", b"~") else 2
        elif word == b"limit":
            i += 2
        else:
            return i
    return 0


def rewrite_xtrim(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    return [_exact_trim(c, argv, 2)]


# --- RESTORE, GEOADD ---------------------------------------------------------------------


def rewrite_restore(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    """A relative TTL goes out absolute (ABSTTL added at the end); a TTL already past
    deleted the key it replaced: DEL or UNLINK (lazyfree-lazy-server-del)."""
    key = argv[1]
    if key not in c.db.data:
        return [[b"UNLINK" if c.state.config["lazyfree-lazy-server-del"] else b"DEL", key]]
    if argv[2] == b"0" or any(arg.upper() == b"ABSTTL" for arg in argv[4:]):
        return [argv]
    when = _deadline(c, key)
    if when is None:  # a TTL of 0 written otherwise ("00", "+0"): none set
        return [argv]
    return [[*argv[:2], when, *argv[3:], b"ABSTTL"]]


GEOADD_FLAGS = frozenset({b"nx", b"xx", b"ch"})


def rewrite_geoadd(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    """The ZADD Valkey's GEOADD runs: its flags as given, each member at its geohash."""
    first = 2
    while first < len(argv) and argv[first].lower() in GEOADD_FLAGS:
        first += 1
    out = [b"ZADD", *argv[1:first]]
    for i in range(first, len(argv) - 2, 3):
        score = geohash.score_of(parse_float(argv[i]), parse_float(argv[i + 1]))
        out += [b"%d" % score, argv[i + 2]]
    return [out]


# --- rewrites that need what the command found (PEEKED) ---------------------------------

Peek = Callable[[Any, list[bytes]], Any]  # (client, argv) -> what the rewrite needs
PeekedRewrite = Callable[[Any, list[bytes], Any, Any], list[list[bytes]]]


def _live(c: Any, key: bytes) -> Any:
    """The value at `key` as a command will find it (None: absent or past its deadline)."""
    deadline = c.db.expires.get(key)
    if deadline is not None and deadline <= c.state.now:
        return None
    return c.db.data.get(key)


def _fields_at(argv: list[bytes], start: int) -> int:
    """Where FIELDS is (the first from `start`), or 0."""
    for i in range(start, len(argv) - 1):
        if argv[i].upper() == b"FIELDS":
            return i
    return 0


# hash fields: HEXPIRE and its forms, HSETEX, HGETEX

HASH_UNITS = {b"EX": (1000, True), b"PX": (1, True), b"EXAT": (1000, False), b"PXAT": (1, False)}


def rewrite_hexpire(c: Any, argv: list[bytes], reply: Any) -> list[list[bytes]]:
    """HDEL of the fields a time already past deleted; else HPEXPIREAT (the time
    absolute, the rest as given) when a field took the deadline."""
    at = _fields_at(argv, 3)
    fields = argv[at + 2:]
    deleted = [field for field, answer in zip(fields, reply, strict=False) if answer == 2]
    if deleted:
        return [[b"HDEL", argv[1], *deleted]]
    updated = next((field for field, answer in zip(fields, reply, strict=False) if answer == 1), None)
    if updated is None:
        return []
    if argv[0].lower() == b"hpexpireat":
        return [argv]
    h = c.db.data.get(argv[1])
    return [[b"HPEXPIREAT", argv[1], b"%d" % h.ttl_of(updated), *argv[3:]]]


def peek_fields(c: Any, argv: list[bytes]) -> dict[bytes, int | None]:
    """HSETEX/HGETEX: each named field the hash holds, due or not, with its deadline."""
    h = _live(c, argv[1])
    if h is None or not hasattr(h, "ttl_of"):
        return {}
    at = _fields_at(argv, 1)
    names = argv[at + 2::2] if argv[0].lower() == b"hsetex" else argv[at + 2:]
    return {field: h.ttl_of(field) for field in names if field in h}


def _due(seen: dict[bytes, int | None], field: bytes, now: int) -> bool:
    """The field was there, past its deadline (held until active expiry deletes it)."""
    deadline = seen.get(field)
    return deadline is not None and deadline < now


def peek_due_field(c: Any, argv: list[bytes]) -> bool:
    """HSETNX/HINCRBY: whether the field named is held past its deadline."""
    h = _live(c, argv[1])
    return h is not None and hasattr(h, "expired") and h.expired(argv[2], c.state.now)


def rewrite_hsetnx(c: Any, argv: list[bytes], reply: Any, due: bool) -> list[list[bytes]]:
    """Over a field past its deadline: HSET, as the replica, which still holds the
    field, would refuse HSETNX."""
    return [[b"HSET", argv[1], argv[2], argv[3]]] if due else [argv]


def rewrite_hincrby(c: Any, argv: list[bytes], reply: Any, due: bool) -> list[list[bytes]]:
    """Over a field past its deadline: HSET of the result, as the replica still holds
    the old value."""
    return [[b"HSET", argv[1], argv[2], b"%d" % reply]] if due else [argv]


def _expiry_option(c: Any, options: list[bytes]) -> tuple[int, int] | None:
    """(position among `options`, unix ms) of the last EX/PX/EXAT/PXAT, or None."""
    found = None
    i = 0
    while i < len(options):
        unit = HASH_UNITS.get(options[i].upper())
        if unit is not None and i + 1 < len(options):
            factor, relative = unit
            found = (i, int(options[i + 1]) * factor + (c.state.now if relative else 0))
            i += 2
        else:
            i += 1
    return found


HSETEX_DROPPED = frozenset({b"NX", b"XX", b"FNX", b"FXX"})
HSETEX_REWRITTEN = frozenset({b"NX", b"XX", b"FNX", b"FXX", b"EX", b"PX", b"EXAT"})


def rewrite_hsetex(c: Any, argv: list[bytes], reply: Any, seen: dict[bytes, int | None]) -> list[list[bytes]]:
    """A time already past: HDEL of the fields it deleted. Else, with a key or field
    condition or a relative time, the command without its conditions and with PXAT."""
    if reply != 1:
        return []
    key = argv[1]
    at = _fields_at(argv, 1)
    options = argv[2:at]
    names = list(dict.fromkeys(argv[at + 2::2]))
    now = c.state.now
    expiry = _expiry_option(c, options)
    if expiry is not None and expiry[1] <= now:
        deleted = [field for field in names if field in seen]
        return [[b"HDEL", key, *deleted]] if deleted else []
    out = argv
    if any(option.upper() in HSETEX_REWRITTEN for option in options):
        kept: list[bytes] = []
        for i, option in enumerate(options):
            if option.upper() in HSETEX_DROPPED or (expiry is not None and i == expiry[0] + 1):
                continue
            if expiry is not None and i == expiry[0] and option.upper() != b"PXAT":
                kept += [b"PXAT", b"%d" % expiry[1]]
            elif expiry is not None and i == expiry[0]:
                kept += options[i:i + 2]
            else:
                kept.append(option)
        out = [argv[0], key, *kept, *argv[at:]]
    return [out]  # with KEEPTTL, fields it overwrote past their deadline went first, as HDEL


def rewrite_hgetex(c: Any, argv: list[bytes], reply: Any, seen: dict[bytes, int | None]) -> list[list[bytes]]:
    """Never as sent: HPERSIST, HPEXPIREAT or HDEL of the fields it changed."""
    key = argv[1]
    at = _fields_at(argv, 1)
    options = argv[2:at]
    fields = argv[at + 2:]
    now = c.state.now
    live = [field for field in fields if field in seen and not _due(seen, field, now)]
    if any(option.upper() == b"PERSIST" for option in options):
        changed = [field for field in dict.fromkeys(live) if seen[field] is not None]
        return [[b"HPERSIST", key, b"FIELDS", b"%d" % len(changed), *changed]] if changed else []
    expiry = _expiry_option(c, options)
    if expiry is None or not live:
        return []
    if expiry[1] <= now:
        return [[b"HDEL", key, *dict.fromkeys(live)]]
    return [[b"HPEXPIREAT", key, b"%d" % expiry[1], b"FIELDS", b"%d" % len(live), *live]]


# stream groups: XREADGROUP, XCLAIM, XAUTOCLAIM (streamPropagateXCLAIM, streamPropagateGroupID,
# streamPropagateConsumerCreation)

StreamID = tuple[int, int]


def _sid(raw: bytes) -> StreamID | None:
    """A complete stream ID as XCLAIM takes it (ms or ms-seq), or None."""
    ms, _, seq = raw.partition(b"-")
    try:
        return int(ms), int(seq) if seq else 0
    except ValueError:
        return None


def _id_text(sid: StreamID) -> bytes:
    return b"%d-%d" % sid


def _group(c: Any, key: bytes, name: bytes) -> Any:
    groups = getattr(c.db.data.get(key), "groups", None)
    return None if groups is None else groups.get(name)


def _xclaim(key: bytes, group_name: bytes, consumer: bytes, sid: StreamID, time: int,
            count: int, last_id: StreamID) -> list[bytes]:
    """streamPropagateXCLAIM: the replica's PEL entry made as the primary's."""
    return [b"XCLAIM", key, group_name, consumer, b"0", _id_text(sid), b"TIME", b"%d" % time,
            b"RETRYCOUNT", b"%d" % count, b"FORCE", b"JUSTID", b"LASTID", _id_text(last_id)]


def _setid(key: bytes, group_name: bytes, group: Any) -> list[bytes]:
    """streamPropagateGroupID: the group's last ID and read counter."""
    return [b"XGROUP", b"SETID", key, group_name, _id_text(group.last_id), b"ENTRIESREAD",
            b"%d" % group.entries_read]


def _claimed_ids(entries: Any) -> list[bytes]:
    """The IDs of an XCLAIM/XAUTOCLAIM reply's entries (JUSTID: the IDs themselves)."""
    return [bytes(entry) if isinstance(entry, (bytes, bytearray)) else entry[0] for entry in entries]


def _readgroup_layout(argv: list[bytes]) -> tuple[bool, list[bytes], list[bytes]]:
    """XREADGROUP GROUP g c [COUNT n] [BLOCK ms] [NOACK] STREAMS keys... ids...:
    (NOACK, keys, ids)."""
    noack = False
    i = 4
    while i < len(argv) and argv[i].upper() != b"STREAMS":
        word = argv[i].upper()
        noack = noack or word == b"NOACK"
        i += 2 if word in (b"COUNT", b"BLOCK") else 1
    half = (len(argv) - i - 1) // 2
    return noack, argv[i + 1:i + 1 + half], argv[i + 1 + half:]


def peek_readgroup(c: Any, argv: list[bytes]) -> set[bytes]:
    """XREADGROUP: the keys whose group knew the consumer already."""
    _, keys, _ = _readgroup_layout(argv)
    known = set()
    for key in keys:
        group = _group(c, key, argv[2])
        if group is not None and argv[3] in group.consumers:
            known.add(key)
    return known


def _served(reply: Any) -> list[tuple[bytes, Any]]:
    """XREADGROUP's reply as (key, entries), RESP2's array or RESP3's map."""
    pairs = getattr(reply, "pairs", None)
    if pairs is not None:
        return list(pairs)
    if isinstance(reply, dict):
        return list(reply.items())
    if isinstance(reply, list):
        return [(item[0], item[1]) for item in reply]
    return []  # nothing served


def rewrite_xreadgroup(c: Any, argv: list[bytes], reply: Any, known: set[bytes]) -> list[list[bytes]]:
    """New entries read: an XCLAIM each (unless NOACK: the consumer's creation, if new),
    then the group's last ID. A read of the consumer's own history: nothing."""
    noack, keys, ids = _readgroup_layout(argv)
    new_reads = {key for key, raw in zip(keys, ids, strict=False) if raw == b">"}
    group_name, consumer = argv[2], argv[3]
    out: list[list[bytes]] = []
    for key, entries in _served(reply):
        if key not in new_reads or not entries:
            continue
        group = _group(c, key, group_name)
        if noack:
            if key not in known:
                out.append([b"XGROUP", b"CREATECONSUMER", key, group_name, consumer])
        else:
            for raw in _claimed_ids(entries):
                sid = _sid(raw)
                nack = group.pel.get(sid)
                if sid is not None and nack is not None:
                    out.append(_xclaim(key, group_name, consumer, sid, nack.delivery_time,
                                       nack.delivery_count, sid))
        out.append(_setid(key, group_name, group))
    return out


class ClaimPeek:
    """What XCLAIM/XAUTOCLAIM found: the group's last ID, and the pending entries it may
    take, in the order it looks at them, with their owner, delivery time and count."""

    __slots__ = ("last_id", "order", "pending")

    def __init__(self, group: Any, order: list[StreamID]) -> None:
        self.last_id: StreamID = group.last_id
        self.order = order
        self.pending: dict[StreamID, tuple[bytes, int, int]] = {}
        for sid in order:
            nack = group.pel.get(sid)
            if nack is not None and nack.consumer is not None:
                self.pending[sid] = (nack.consumer.name, nack.delivery_time, nack.delivery_count)


def claim_ids(argv: list[bytes]) -> list[StreamID]:
    """XCLAIM's IDs: the arguments from argv[5] that parse as IDs, up to the options."""
    sids = []
    for raw in argv[5:]:
        sid = _sid(raw)
        if sid is None:
            break
        sids.append(sid)
    return sids


def peek_xclaim(c: Any, argv: list[bytes]) -> ClaimPeek | None:
    group = _group(c, argv[1], argv[2])
    return None if group is None else ClaimPeek(group, claim_ids(argv))


def peek_xautoclaim(c: Any, argv: list[bytes]) -> ClaimPeek | None:
    """The pending entries from the start ID on, as many as XAUTOCLAIM may look at
    (COUNT times 10)."""
    group = _group(c, argv[1], argv[2])
    if group is None:
        return None
    count = 100
    for i in range(6, len(argv) - 1):
        if argv[i].upper() == b"COUNT":
            count = int(argv[i + 1])
    start = _sid(argv[5].lstrip(b"(")) or (0, 0)
    order: list[StreamID] = []
    for sid, _nack in group.pel.items(start):
        if len(order) > count * 10:
            break
        order.append(sid)
    return ClaimPeek(group, order)


def _claims(c: Any, argv: list[bytes], found: ClaimPeek, taken: set[bytes],
            dropped: set[bytes]) -> list[list[bytes]]:
    """An XCLAIM for each entry claimed (the new owner's) or dropped from the PEL because
    the stream lost it (the old owner's, so the replica drops it too), in the order the
    command took them; with none, XGROUP SETID when the group's last ID moved."""
    key, group_name = argv[1], argv[2]
    group = _group(c, key, group_name)
    out = []
    for sid in found.order:
        text = _id_text(sid)
        nack = group.pel.get(sid)
        if text in taken and nack is not None:
            out.append(_xclaim(key, group_name, argv[3], sid, nack.delivery_time,
                               nack.delivery_count, group.last_id))
        elif text in dropped and sid in found.pending:
            owner, time, count = found.pending[sid]
            out.append(_xclaim(key, group_name, owner, sid, time, count, group.last_id))
            dropped.discard(text)  # once: named again, it is no longer pending
    if not out and group.last_id != found.last_id:
        out.append(_setid(key, group_name, group))
    return out


def rewrite_xclaim(c: Any, argv: list[bytes], reply: Any, found: ClaimPeek | None) -> list[list[bytes]]:
    group = _group(c, argv[1], argv[2])
    if found is None or group is None:
        return []
    stream = c.db.data.get(argv[1])
    dropped = {_id_text(sid) for sid in found.pending
               if sid not in group.pel and stream.get(sid) is None}
    return _claims(c, argv, found, set(_claimed_ids(reply)), dropped)


def rewrite_xautoclaim(c: Any, argv: list[bytes], reply: Any, found: ClaimPeek | None) -> list[list[bytes]]:
    if found is None or _group(c, argv[1], argv[2]) is None:
        return []
    return _claims(c, argv, found, set(_claimed_ids(reply[1])), set(reply[2]))


# MIGRATE


def _migrated_keys(argv: list[bytes]) -> list[bytes]:
    """MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH...] [KEYS k...]."""
    if argv[3]:
        return [argv[3]]
    for i in range(6, len(argv)):
        if argv[i].upper() == b"KEYS":
            return argv[i + 1:]
    return []


def peek_migrate(c: Any, argv: list[bytes]) -> set[bytes]:
    return {key for key in _migrated_keys(argv) if _live(c, key) is not None}


def rewrite_migrate(c: Any, argv: list[bytes], reply: Any, present: set[bytes]) -> list[list[bytes]]:
    """DEL of the keys moved away (none with COPY)."""
    moved = [key for key in _migrated_keys(argv) if key in present and key not in c.db.data]
    return [[b"DEL", *moved]] if moved else []


# --- the tables --------------------------------------------------------------------------

REWRITES: dict[str, Rewrite] = {
    "set": rewrite_set,
    "setex": rewrite_setex,
    "msetex": rewrite_msetex,
    "psetex": rewrite_setex,
    "getex": rewrite_getex,
    "expire": rewrite_expire,
    "pexpire": rewrite_expire,
    "expireat": rewrite_expire,
    "pexpireat": rewrite_expire,
    "getset": rewrite_getset,
    "getdel": rewrite_as_del,
    "delifeq": rewrite_as_del,
    "incrbyfloat": rewrite_incrbyfloat,
    "hincrbyfloat": rewrite_hincrbyfloat,
    "spop": rewrite_spop,
    "blpop": rewrite_blocking_pop(b"LPOP"),
    "brpop": rewrite_blocking_pop(b"RPOP"),
    "bzpopmin": rewrite_blocking_pop(b"ZPOPMIN"),
    "bzpopmax": rewrite_blocking_pop(b"ZPOPMAX"),
    "lmpop": rewrite_mpop(b"LPOP", b"RPOP", 1),
    "blmpop": rewrite_mpop(b"LPOP", b"RPOP", 2),
    "zmpop": rewrite_mpop(b"ZPOPMIN", b"ZPOPMAX", 1),
    "bzmpop": rewrite_mpop(b"ZPOPMIN", b"ZPOPMAX", 2),
    "brpoplpush": rewrite_brpoplpush,
    "blmove": rewrite_blmove,
    "xadd": rewrite_xadd,
    "xtrim": rewrite_xtrim,
    "restore": rewrite_restore,
    "restore-asking": rewrite_restore,
    "geoadd": rewrite_geoadd,
    "hexpire": rewrite_hexpire,
    "hpexpire": rewrite_hexpire,
    "hexpireat": rewrite_hexpire,
    "hpexpireat": rewrite_hexpire,
}

PEEKED: dict[str, tuple[Peek | None, PeekedRewrite]] = {
    "hsetex": (peek_fields, rewrite_hsetex),
    "hgetex": (peek_fields, rewrite_hgetex),
    "hsetnx": (peek_due_field, rewrite_hsetnx),
    "hincrby": (peek_due_field, rewrite_hincrby),
    "xreadgroup": (peek_readgroup, rewrite_xreadgroup),
    "xclaim": (peek_xclaim, rewrite_xclaim),
    "xautoclaim": (peek_xautoclaim, rewrite_xautoclaim),
    "migrate": (peek_migrate, rewrite_migrate),
}

# writes that may propagate without moving fakekey's dirty counter (dropping pending
# entries the stream lost, moving only a group's last ID): asked after each success
UNCOUNTED = frozenset({"xclaim", "xautoclaim"})


def peek(client: Any, name: str, argv: list[bytes]) -> Any:
    """What the command's rewrite needs from before it runs (None for most)."""
    looked = PEEKED.get(name)
    if looked is None or looked[0] is None:
        return None
    try:
        return looked[0](client, argv)
    except (ValueError, IndexError, TypeError, AttributeError):  # a malformed call: it fails itself
        return None
