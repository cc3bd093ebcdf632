"""Set commands.

Orders follow Valkey's: replies iterate a set the way Valkey iterates its encoding, and
results built by SUNION/SDIFF/SINTERSTORE (and the reply of SPOP taking everything) are
built member by member from an empty set, as Valkey builds them, so their encoding and
order come out the same.
"""

from __future__ import annotations

import random
from typing import Any

from fakekey.commands.args import LLONG_MIN, SYNTAX, WRONGTYPE, parse_int, try_int
from fakekey.commands.picks import draws, repeated_picks
from fakekey.commands.scan import at_start, bucket_page, hash_order, parse_cursor, parse_scan_options
from fakekey.core.client import Client
from fakekey.core.dirty import INTEGER_REPLY, POPPED
from fakekey.core.registry import command, keys_numkeys, keys_range
from fakekey.resp.replies import ReplyError, SetReply
from fakekey.types.set import HASHTABLE, INTSET, LISTPACK, SetLimits, SetValue, is_integer

G = "set"
POSITIVE = ReplyError("ERR value is out of range, must be positive")
SRANDMEMBER_RANGE = ReplyError(
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)
NUMKEYS = ReplyError("ERR numkeys should be greater than 0")
TOO_MANY_KEYS = ReplyError("ERR Number of keys can't be greater than number of args")
LIMIT_NEGATIVE = ReplyError("ERR LIMIT can't be negative")

# SPOP with a count pops members one by one while remainder * this > count; otherwise
# the members to keep move to a new set (Valkey's SPOP_MOVE_STRATEGY_MUL).
SPOP_MOVE_STRATEGY_MUL = 5
# SRANDMEMBER copies the set and drops members when count * this > size.
SRANDMEMBER_SUB_STRATEGY_MUL = 3
C_SPACE = b" \t\n\v\f\r"


# --- shared helpers ----------------------------------------------------------------------


def lookup_set(c: Client, key: bytes) -> SetValue | None:
    return c.db.lookup_type(key, SetValue)


def lookup_sets(c: Client, keys: list[bytes]) -> list[SetValue | None]:
    """Every key looked up and type-checked before any work (WRONGTYPE wins over empty)."""
    return [lookup_set(c, key) for key in keys]


def every_set(c: Client, keys: list[bytes]) -> list[SetValue] | None:
    """The sets at `keys`, all looked up first (WRONGTYPE wins over empty); None when one
    of them is missing: an intersection with it is empty."""
    sets = lookup_sets(c, keys)
    found = [s for s in sets if s is not None]
    return found if len(found) == len(sets) else None


def removed_from(c: Client, key: bytes, event: str) -> None:
    """After removing members: the funnel announces the event, deletes an emptied set and
    announces its `del`."""
    c.db.written(key, event, "s")


def store(c: Client, dest: bytes, result: SetValue, event: str) -> int:
    """*STORE: the result replaces `dest` (TTL cleared); an empty result deletes it."""
    if result:
        c.db.set_value(dest, result, event=event, klass="s")
    else:
        c.db.delete(dest)
    return len(result)


def parse_positive_count(raw: bytes) -> int:
    """getPositiveLongFromObjectOrReply: 0..LONG_MAX, any failure is the same error."""
    value = try_int(raw)
    if value is None or value < 0:
        raise POSITIVE
    return value


# --- single-set commands -------------------------------------------------------------------


@command("sadd", -3, "write denyoom fast", keys=keys_range(1, flags="RW insert"), acl="set",
         group=G, since="1.0.0",
         complexity="O(1) for each element added, so O(N) to add N elements when the "
         "command is called with multiple arguments.",
         summary="Adds members to a set, creating it if needed; answers how many were new.", dirty=INTEGER_REPLY)
def sadd(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    members = argv[2:]
    limits = SetLimits.of(c.state)
    s = lookup_set(c, key)
    created = s is None
    if s is None:
        s = SetValue.create(members[0], len(members), limits)
    else:
        s.grow_for(len(members), limits)
    added = s.add_all(members, limits)
    if created:
        c.db.set_value(key, s, event="sadd", klass="s")
    elif added:
        c.db.written(key, "sadd", "s")
    return added


@command("srem", -3, "write fast", keys=keys_range(1, flags="RW delete"), acl="set", group=G,
         since="1.0.0", complexity="O(N) where N is the number of members to be removed.",
         summary="Removes members from a set, deleting it when emptied; answers how many "
         "were removed.", dirty=INTEGER_REPLY)
def srem(c: Client, argv: list[bytes]) -> Any:
    key = argv[1]
    s = lookup_set(c, key)
    if s is None:
        return 0
    removed = sum(s.remove(member) for member in argv[2:])
    if removed:
        removed_from(c, key, "srem")
    return removed


@command("smembers", 2, "readonly", keys=keys_range(1, flags="RO access"), acl="set", group=G,
         since="1.0.0", complexity="O(N) where N is the set cardinality.",
         tips="nondeterministic_output_order", summary="Lists every member of a set.")
def smembers(c: Client, argv: list[bytes]) -> Any:
    s = lookup_set(c, argv[1])
    return SetReply(s.ordered() if s is not None else ())


@command("sismember", 3, "readonly fast", keys=keys_range(1, flags="RO"), acl="set", group=G,
         since="1.0.0", summary="Tells whether a value is a member of a set.")
def sismember(c: Client, argv: list[bytes]) -> Any:
    s = lookup_set(c, argv[1])
    return int(s is not None and argv[2] in s)


@command("smismember", -3, "readonly fast", keys=keys_range(1, flags="RO access"), acl="set",
         group=G, since="6.2.0",
         complexity="O(N) where N is the number of elements being checked for membership",
         summary="Tells, for each of several values, whether it is a member of a set.")
def smismember(c: Client, argv: list[bytes]) -> Any:
    s = lookup_set(c, argv[1])
    if s is None:
        return [0] * (len(argv) - 2)
    return [int(member in s) for member in argv[2:]]


@command("scard", 2, "readonly fast", keys=keys_range(1, flags="RO"), acl="set", group=G,
         since="1.0.0", summary="Counts the members of a set.")
def scard(c: Client, argv: list[bytes]) -> Any:
    s = lookup_set(c, argv[1])
    return len(s) if s is not None else 0


@command("smove", 4, "write fast",
         keys=(keys_range(1, flags="RW access delete"), keys_range(2, flags="RW insert")),
         acl="set", group=G, since="1.0.0",
         summary="Moves a member from one set to another; answers whether it moved.")
def smove(c: Client, argv: list[bytes]) -> Any:
    src_key, dst_key, member = argv[1], argv[2], argv[3]
    # Both keys are looked up (expiring them) first; a missing source answers 0 before
    # any type is checked, then the source's type, then the destination's.
    src = c.db.lookup(src_key)
    dst = c.db.lookup(dst_key)
    if src is None:
        return 0
    if type(src) is not SetValue or (dst is not None and type(dst) is not SetValue):
        raise WRONGTYPE
    if src is dst:
        return int(member in src)
    if not src.remove(member):
        return 0
    removed_from(c, src_key, "srem")
    limits = SetLimits.of(c.state)
    if dst is None:
        dst = SetValue.create(member, 1, limits)
        dst.add(member, limits)
        c.db.set_value(dst_key, dst, event="sadd", klass="s")
    elif dst.add(member, limits):
        c.db.written(dst_key, "sadd", "s")
    return 1


# --- random members ------------------------------------------------------------------------


@command("spop", -2, "write fast", keys=keys_range(1, flags="RW access delete"), acl="set",
         group=G, since="1.0.0",
         complexity="Without the count argument O(1), otherwise O(N) where N is the value "
         "of the passed count.",
         tips="nondeterministic_output",
         summary="Removes and answers random members of a set, deleting it when emptied.", dirty=POPPED)
def spop(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 3:
        return spop_count(c, argv[1], parse_positive_count(argv[2]))
    if len(argv) > 3:
        raise SYNTAX
    key = argv[1]
    s = lookup_set(c, key)
    if s is None:
        return None
    member = s.random_member()
    s.remove(member)
    removed_from(c, key, "spop")
    return member


def spop_count(c: Client, key: bytes, count: int) -> Any:
    s = lookup_set(c, key)
    if s is None or count == 0:
        return SetReply()
    size = len(s)
    if count >= size:
        everything = list(s.ordered())  # Valkey answers with SUNION of the set: its order
        c.db.written(key, "spop", "s")
        c.db.delete(key)
        return SetReply(everything)
    remaining = size - count
    if remaining * SPOP_MOVE_STRATEGY_MUL > count:
        popped = pop_members(s, count)
        c.db.written(key, "spop", "s")
        return SetReply(popped)
    kept, popped = split_random(s, remaining, SetLimits.of(c.state))
    c.db.set_value(key, kept, keep_ttl=True, event="spop", klass="s")
    return SetReply(popped)


def pop_members(s: SetValue, count: int) -> list[bytes]:
    """Remove `count` random members: a listpack answers them in its own order."""
    if s.enc == LISTPACK:
        members = s.ordered()
        popped = [members[i] for i in sorted(random.sample(range(len(members)), count))]
        for member in popped:
            s.remove(member)
        return popped
    popped = []
    for _ in range(count):
        member = s.random_member()
        s.remove(member)
        popped.append(member)
    return popped


def split_random(s: SetValue, keep: int, limits: SetLimits) -> tuple[SetValue, list[bytes]]:
    """SPOP's large-count strategy: `keep` random members go to a new set (a listpack
    unless the old one was an intset), the others are answered in the old set's order."""
    members = s.ordered()
    chosen = random.sample(range(len(members)), keep)
    if s.enc == LISTPACK:
        chosen.sort()
    kept = SetValue(INTSET if s.enc == INTSET else LISTPACK)
    for i in chosen:
        kept.add(members[i], limits)
    return kept, [m for m in members if m not in kept]


@command("srandmember", -2, "readonly", keys=keys_range(1, flags="RO access"), acl="set",
         group=G, since="1.0.0",
         complexity="Without the count argument O(1), otherwise O(N) where N is the "
         "absolute value of the passed count.",
         tips="nondeterministic_output",
         summary="Answers random members of a set without removing them.")
def srandmember(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 3:
        count = parse_int(argv[2])
        if count == LLONG_MIN:
            raise SRANDMEMBER_RANGE
        return srandmember_count(c, argv[1], count)
    if len(argv) > 3:
        raise SYNTAX
    s = lookup_set(c, argv[1])
    return s.random_member() if s is not None else None


def srandmember_count(c: Client, key: bytes, count: int) -> list[bytes]:
    s = lookup_set(c, key)
    if s is None or count == 0:
        return []
    if count < 0:
        return repeated_picks(c, -count, lambda k: [s.random_member() for _ in range(k)],
                              lambda: draws(s.ordered()))
    if count == 1:
        return [s.random_member()]
    size = len(s)
    if count >= size:
        return list(s.ordered())
    if s.enc == LISTPACK or count * SRANDMEMBER_SUB_STRATEGY_MUL > size:
        # A listpack samples in its own order; otherwise Valkey copies the set and
        # drops random members, so the survivors keep the set's order too.
        members = s.ordered()
        return [members[i] for i in sorted(random.sample(range(size), count))]
    # A few members of a big set: random picks until enough distinct ones.
    picked: dict[bytes, None] = {}
    while len(picked) < count:
        picked[s.random_member()] = None
    return list(picked)


# --- algebra -------------------------------------------------------------------------------


def result_set(sets: list[SetValue | None], for_store: bool) -> SetValue:
    """The empty set SUNION/SDIFF fill: an intset when storing or when every source is
    one, else a hashtable (which Valkey iterates in insertion order while small)."""
    if for_store or all(s is None or s.enc == INTSET for s in sets):
        return SetValue(INTSET)
    return SetValue(HASHTABLE)


def union(sets: list[SetValue | None], limits: SetLimits, for_store: bool) -> SetValue:
    """Every member of every set, added in turn to `result_set`."""
    out = result_set(sets, for_store)
    for s in sets:
        if s is not None:
            for member in s.ordered():
                out.add(member, limits)
    return out


def difference(sets: list[SetValue | None], limits: SetLimits, for_store: bool) -> SetValue:
    """The first set minus the others, with Valkey's choice of algorithm: it decides what
    the result passes through (all of the first set, or only the survivors) and so its
    encoding."""
    out = result_set(sets, for_store)
    first = sets[0]
    if first is None or any(s is first for s in sets[1:]):
        return out
    others = [s for s in sets[1:] if s is not None]
    per_member_work = len(first) * (1 + len(others)) // 2
    whole_sets_work = len(first) + sum(len(s) for s in others)
    if per_member_work <= whole_sets_work:
        for member in first.ordered():
            if not any(member in s for s in others):
                out.add(member, limits)
        return out
    for member in first.ordered():
        out.add(member, limits)
    for s in others:
        for member in s.ordered():
            out.remove(member)
        if not out:
            break
    return out


def intersection_order(sets: list[SetValue]) -> tuple[SetValue, list[SetValue]]:
    """The smallest set (the first of equal sizes), whose order the result follows, and
    the other sets to test membership in."""
    ranked = sorted(sets, key=len)
    smallest = ranked[0]
    return smallest, [s for s in ranked[1:] if s is not smallest]


def intersect(sets: list[SetValue], limit: int = 0) -> list[bytes]:
    smallest, others = intersection_order(sets)
    out: list[bytes] = []
    for member in smallest.ordered():
        if all(member in s for s in others):
            out.append(member)
            if len(out) == limit:
                break
    return out


def intersection_value(sets: list[SetValue], limits: SetLimits) -> SetValue:
    """SINTERSTORE's result: an intset if the smallest source is one, else a listpack,
    growing as members arrive; all integers at the end makes it an intset if it fits."""
    smallest, _ = intersection_order(sets)
    out = SetValue(INTSET if smallest.enc == INTSET else LISTPACK)
    members = intersect(sets)
    for member in members:
        out.add(member, limits)
    if out and all(is_integer(m) for m in members):
        out.to_intset_if_fits(limits)
    return out


@command("sinter", -2, "readonly", keys=keys_range(1, -1, flags="RO access"), acl="set",
         group=G, since="1.0.0",
         complexity="O(N*M) worst case where N is the cardinality of the smallest set and "
         "M is the number of sets.",
         tips="nondeterministic_output_order",
         summary="Answers the members common to all the given sets.")
def sinter(c: Client, argv: list[bytes]) -> Any:
    sets = every_set(c, argv[1:])
    if sets is None:
        return SetReply()
    return SetReply(intersect(sets))


@command("sintercard", -3, "readonly", keys=keys_numkeys(1, flags="RO access"), acl="set",
         group=G, since="7.0.0",
         complexity="O(N*M) worst case where N is the cardinality of the smallest set and "
         "M is the number of sets.",
         summary="Counts the members common to all the given sets, optionally stopping at "
         "a limit.")
def sintercard(c: Client, argv: list[bytes]) -> Any:
    numkeys = try_int(argv[1])
    if numkeys is None or numkeys < 1:
        raise NUMKEYS
    if numkeys > len(argv) - 2:
        raise TOO_MANY_KEYS
    limit = 0
    i = 2 + numkeys
    while i < len(argv):
        if argv[i].lower() == b"limit" and i + 1 < len(argv):
            given = try_int(argv[i + 1])
            if given is None or given < 0:
                raise LIMIT_NEGATIVE
            limit = given
            i += 2
        else:
            raise SYNTAX
    sets = every_set(c, argv[2 : 2 + numkeys])
    if sets is None:
        return 0
    return len(intersect(sets, limit))


@command("sinterstore", -3, "write denyoom",
         keys=(keys_range(1, flags="OW update"), keys_range(2, -1, flags="RO access")),
         acl="set", group=G, since="1.0.0",
         complexity="O(N*M) worst case where N is the cardinality of the smallest set and "
         "M is the number of sets.",
         summary="Stores the members common to all the given sets; answers their count.")
def sinterstore(c: Client, argv: list[bytes]) -> Any:
    sets = every_set(c, argv[2:])
    if sets is None:
        c.db.delete(argv[1])
        return 0
    return store(c, argv[1], intersection_value(sets, SetLimits.of(c.state)), "sinterstore")


@command("sunion", -2, "readonly", keys=keys_range(1, -1, flags="RO access"), acl="set",
         group=G, since="1.0.0",
         complexity="O(N) where N is the total number of elements in all given sets.",
         tips="nondeterministic_output_order",
         summary="Answers the members of any of the given sets.")
def sunion(c: Client, argv: list[bytes]) -> Any:
    sets = lookup_sets(c, argv[1:])
    return SetReply(union(sets, SetLimits.of(c.state), for_store=False).ordered())


@command("sunionstore", -3, "write denyoom",
         keys=(keys_range(1, flags="OW update"), keys_range(2, -1, flags="RO access")),
         acl="set", group=G, since="1.0.0",
         complexity="O(N) where N is the total number of elements in all given sets.",
         summary="Stores the members of any of the given sets; answers their count.")
def sunionstore(c: Client, argv: list[bytes]) -> Any:
    sets = lookup_sets(c, argv[2:])
    return store(c, argv[1], union(sets, SetLimits.of(c.state), for_store=True), "sunionstore")


@command("sdiff", -2, "readonly", keys=keys_range(1, -1, flags="RO access"), acl="set",
         group=G, since="1.0.0",
         complexity="O(N) where N is the total number of elements in all given sets.",
         tips="nondeterministic_output_order",
         summary="Answers the members of the first set that are in none of the others.")
def sdiff(c: Client, argv: list[bytes]) -> Any:
    sets = lookup_sets(c, argv[1:])
    return SetReply(difference(sets, SetLimits.of(c.state), for_store=False).ordered())


@command("sdiffstore", -3, "write denyoom",
         keys=(keys_range(1, flags="OW update"), keys_range(2, -1, flags="RO access")),
         acl="set", group=G, since="1.0.0",
         complexity="O(N) where N is the total number of elements in all given sets.",
         summary="Stores the members of the first set that are in none of the others; "
         "answers their count.")
def sdiffstore(c: Client, argv: list[bytes]) -> Any:
    sets = lookup_sets(c, argv[2:])
    return store(c, argv[1], difference(sets, SetLimits.of(c.state), for_store=True), "sdiffstore")


# --- SSCAN ---------------------------------------------------------------------------------


def scan_page(s: SetValue, cursor: int, count: int) -> tuple[int, list[bytes]]:
    """A hashtable set is visited a bucket at a time, `count` members or more a call
    (commands/scan.py), in an order fixed when an iteration starts (at bucket 0), as
    ZSCAN's."""
    order = s.scan_order
    if order is None or at_start(cursor, len(s)):
        order = s.scan_order = hash_order(s.ordered())
    return bucket_page(order, cursor, len(s), count, s.__contains__)


@command("sscan", -3, "readonly", keys=keys_range(1, flags="RO access"), acl="set", group=G,
         since="2.8.0",
         complexity="O(1) for every call. O(N) for a complete iteration, including enough "
         "command calls for the cursor to return back to 0. N is the number of elements "
         "inside the collection.",
         tips="nondeterministic_output",
         summary="Iterates over the members of a set with a cursor.")
def sscan(c: Client, argv: list[bytes]) -> Any:
    cursor = parse_cursor(argv[2])
    s = lookup_set(c, argv[1])
    if s is None:
        return [b"0", []]
    options = parse_scan_options(argv, 3, "set")
    if s.enc == INTSET or s.enc == LISTPACK:
        cursor, members = 0, s.ordered()  # a compact encoding is answered in one go
    else:
        cursor, members = scan_page(s, cursor, options.count)
    if options.matches is not None:
        members = [m for m in members if options.matches(m)]
    return [str(cursor).encode(), list(members)]
