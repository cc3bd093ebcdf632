"""SORT and SORT_RO, as Valkey's src/sort.c does them.

The steps and their order are Valkey's: the options are read left to right (the first bad
one answers, and BY/GET patterns are refused to a user without read access to every key);
then the key is looked up (WRONGTYPE); a sorted set is converted to a skiplist (OBJECT
ENCODING shows it, even after SORT_RO); LIMIT is clamped to the size; the elements are
scored (every one, before LIMIT applies: a bad score anywhere is an error); sorted; and the
range is answered or stored.

Orders, where Valkey's are visible:

- numeric: by the double, equal ones by their bytes;
- ALPHA: by strcoll (the C/C.UTF-8 collation: bytes up to the first NUL) when answering,
  by the whole bytes when storing; with BY, a missing key sorts first;
- ties left by the comparison keep the input order (glibc's qsort is a merge sort), except
  under BY with a LIMIT narrower than the whole, where Valkey's partial quicksort (pqsort)
  decides: `_partial_quicksort` follows the same steps;
- BY without `*` (nosort): a list or sorted set keeps its order (DESC reverses it), a set
  its iteration order, except in a script or with STORE, where Valkey sorts it ALPHA so
  the result replicates the same.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fakekey.codecs.numbers import is_strtod_form
from fakekey.commands.args import SYNTAX, WRONGTYPE, parse_int
from fakekey.core.client import Client
from fakekey.core.registry import KeySpec, command
from fakekey.resp.replies import ReplyError
from fakekey.types.hash import HashValue
from fakekey.types.list import ListValue
from fakekey.types.set import SetValue
from fakekey.types.zset import ZSet

G = "generic"
ACL = "set sortedset list dangerous"
COMPLEXITY = ("O(N+M*log(M)) where N is the number of elements in the list or set to sort, and "
              "M the number of returned elements. When the elements are not sorted, complexity "
              "is O(N).")
NOT_DOUBLE = ReplyError("ERR One or more scores can't be converted into double")
BY_DENIED = ReplyError("ERR BY option of SORT denied due to insufficient ACL permissions.")
GET_DENIED = ReplyError("ERR GET option of SORT denied due to insufficient ACL permissions.")

# The scripting engines' clients (EVAL's is 1, FUNCTION's 2): Valkey's CLIENT_SCRIPT.
_SCRIPT_CLIENT_IDS = (1, 2)
# A score strtod reads exactly as float() does, with no overflow or underflow: the
# commonest elements skip to_double's checks.
_PLAIN_NUMBER = re.compile(rb"-?[0-9]{1,15}(?:\.[0-9]{1,15})?").fullmatch
# An integer written one way only: two with the same score are the same bytes, so the
# score alone orders them (no tie to break by the element).
_CANONICAL_INT = re.compile(rb"-?[1-9][0-9]{0,14}|0").fullmatch
# Ties under BY + LIMIT are ordered by replaying pqsort, a Python loop. The replay gives
# up past PQSORT_BUDGET * n*log2(n) comparisons (an input built to make quicksort
# quadratic) or PQSORT_MAX_COMPARISONS (about a second): fakekey then sorts stably, and
# tied elements may come in another order than Valkey's.
PQSORT_BUDGET = 4
PQSORT_MAX_COMPARISONS = 2_000_000
_ES = 16  # sizeof(redisSortObject): pqsort's range checks compare byte addresses

# --- key specs ---------------------------------------------------------------------------

_PATTERN_NOTES = ("For the optional BY/GET keyword. It is marked 'unknown' because the key "
                  "names derive from the content of the key we sort")
_STORE_NOTES = ("For the optional STORE keyword. It is marked 'unknown' because the keyword "
                "can appear anywhere in the argument array")
# Options followed by arguments, as Valkey's sortGetKeys skips them looking for STORE.
_SKIPPED = {b"limit": 2, b"get": 1, b"by": 1}


def store_key_positions(argv: list[bytes]) -> list[int]:
    """Where sortGetKeys finds the STORE destination: the last `STORE x`, skipping the
    arguments of LIMIT, GET and BY (and not those of STORE itself, as Valkey 9.1)."""
    found: list[int] = []
    i = 2
    while i < len(argv):
        word = c_string(argv[i]).lower()  # strcasecmp: an argument ends at a NUL
        skip = _SKIPPED.get(word)
        if skip is not None:
            i += skip
        elif word == b"store" and i + 1 < len(argv):
            found = [i + 1]
        i += 1
    return found


_SOURCE = KeySpec(1, 1, 1, ("RO", "access"))
_PATTERNS = KeySpec(0, flags=("RO", "access"), notes=_PATTERN_NOTES, unknown=True)
_DESTINATION = KeySpec(0, flags=("OW", "update"), notes=_STORE_NOTES, unknown=True,
                       finder=store_key_positions)

# --- options -----------------------------------------------------------------------------


@dataclass
class SortOptions:
    desc: bool = False
    alpha: bool = False
    dontsort: bool = False  # a BY pattern without `*`
    by: bytes | None = None
    gets: list[bytes] = field(default_factory=list)
    offset: int = 0
    count: int = -1
    store: bytes | None = None


def parse_options(c: Client, argv: list[bytes], readonly: bool) -> SortOptions:
    """The options from argv[2], left to right; the first bad one raises its error."""
    opts = SortOptions()
    full_access: bool | None = None  # asked once, when a pattern needs it
    argc = len(argv)
    j = 2
    while j < argc:
        word = c_string(argv[j]).lower()  # strcasecmp: an argument ends at a NUL
        left = argc - j - 1
        if word == b"asc":
            opts.desc = False
        elif word == b"desc":
            opts.desc = True
        elif word == b"alpha":
            opts.alpha = True
        elif word == b"limit" and left >= 2:
            opts.offset = parse_int(argv[j + 1])
            opts.count = parse_int(argv[j + 2])
            j += 2
        elif word == b"store" and left >= 1 and not readonly:
            opts.store = argv[j + 1]
            j += 1
        elif word == b"by" and left >= 1:
            opts.by = argv[j + 1]
            if b"*" not in c_string(opts.by):
                opts.dontsort = True  # a constant: nothing to sort by (stays set, as Valkey)
            else:
                if full_access is None:
                    full_access = has_full_key_access(c, argv)
                if not full_access:
                    raise BY_DENIED
            j += 1
        elif word == b"get" and left >= 1:
            if full_access is None:
                full_access = has_full_key_access(c, argv)
            if not full_access:
                raise GET_DENIED
            opts.gets.append(argv[j + 1])
            j += 1
        else:
            raise SYNTAX
        j += 1
    return opts


def has_full_key_access(c: Client, argv: list[bytes]) -> bool:
    """Valkey's ACLUserCheckCmdWithUnrestrictedKeyAccess: some selector of the user runs
    this call and may read every key (allkeys, `~*` or `%R~*`)."""
    if c.acl_unrestricted and c.id not in _SCRIPT_CLIENT_IDS:
        return True
    user = c.state.users.get(c.user)  # a script's client runs as its caller's user
    if user is None:
        return True
    cmd = c.cmd
    assert cmd is not None  # the command running now
    for selector in user.selectors:
        if selector.check(cmd, argv, c.db.index) is not None:
            continue
        if selector.all_keys or any(p.pattern == b"*" and p.read for p in selector.keys):
            return True
    return False


# --- patterns ----------------------------------------------------------------------------


def c_string(raw: bytes) -> bytes:
    """What C's string functions see of an argument: the bytes before the first NUL."""
    end = raw.find(b"\0")
    return raw if end < 0 else raw[:end]


def lookup_by_pattern(c: Client, pattern: bytes, subst: bytes) -> bytes | None:
    """lookupKeyByPattern: `#` is the element itself; otherwise the first `*` becomes the
    element and the key's string value (or, after `->field`, the hash field) is read.
    A pattern without `*` and a key of another type read as missing."""
    head = c_string(pattern)
    if head == b"#":
        return subst
    star = head.find(b"*")
    if star < 0:
        return None
    arrow = head.find(b"->", star + 1)
    field_name: bytes | None = None
    end = len(pattern)
    if arrow >= 0 and arrow + 2 < len(head):
        field_name = pattern[arrow + 2:]
        end = arrow
    key = pattern[:star] + subst + pattern[star + 1:end]
    value = c.db.lookup(key)
    if value is None:
        return None
    if field_name is None:
        kind = type(value)
        if kind is bytes:
            return value
        return bytes(value) if kind is bytearray else None
    if type(value) is not HashValue:
        return None
    found = value.get(field_name)
    if found is not None and value.ttls:
        deadline = value.ttls.get(field_name)
        if deadline is not None and c.state.now > deadline:
            return None  # due, not yet reclaimed: reads as missing
    return found


def to_double(raw: bytes) -> float | None:
    """The score of an element as Valkey's strtod reads it (up to a NUL, the whole of the
    rest a number, no nan, no overflow or underflow); None when it is not one."""
    text = c_string(raw)
    if not is_strtod_form(text):
        return None
    value = float(text)
    if math.isinf(value) and b"inf" not in text.lower():
        return None  # ERANGE: overflow
    if value == 0.0 and any(48 < ch <= 57 for ch in text.lower().split(b"e", 1)[0]):
        return None  # ERANGE: underflow
    return value


# --- the elements ------------------------------------------------------------------------


def _in_script(c: Client) -> bool:
    return c.id in _SCRIPT_CLIENT_IDS and c.connection is None


def clamp_range(offset: int, count: int, size: int) -> tuple[int, int]:
    """LIMIT as Valkey bounds it: (start, end), end < start when the range is empty."""
    start = min(max(offset, 0), size)
    count = min(max(count, -1), size)
    end = size - 1 if count < 0 else start + count - 1
    if start >= size:
        start, end = size - 1, size - 2
    return start, min(end, size - 1)


def in_native_order(value: Any, desc: bool, start: int, end: int) -> list[bytes]:
    """Elements start..end of a list or sorted set as stored (from the tail with DESC)."""
    if end < start:
        return []
    size = len(value)
    if isinstance(value, ZSet):
        if desc:
            return [m for m, _ in value.pairs(size - 1 - end, size - start, reverse=True)]
        return [m for m, _ in value.pairs(start, end + 1)]
    if desc:
        value = reversed(value)
    out: list[bytes] = []
    for i, item in enumerate(value):
        if i > end:
            break
        if i >= start:
            out.append(item)
    return out


def every_element(value: Any) -> list[bytes]:
    if isinstance(value, SetValue):
        return list(value.ordered())
    if isinstance(value, ZSet):
        return value.members()  # Valkey walks the dict: an order of its own
    return list(value)


# --- sorting -----------------------------------------------------------------------------


def sort_keys(c: Client, elements: list[bytes], opts: SortOptions, storing: bool) -> list[Any]:
    """Each element's comparison key (sortCompare's, as one Python value); NOT_DOUBLE
    after scoring them all when a score is not a number."""
    by = opts.by
    if opts.alpha:
        if by is None:
            return elements if storing else [c_string(e) for e in elements]
        keys: list[Any] = []
        for element in elements:
            value = lookup_by_pattern(c, by, element)
            if value is None:
                keys.append((0, b""))  # a missing key sorts first
            else:
                keys.append((1, value if storing else c_string(value)))
        return keys
    plain = _PLAIN_NUMBER
    raws = elements if by is None else [lookup_by_pattern(c, by, element) for element in elements]
    scores = [float(raw) if raw is not None and plain(raw) is not None else score_of(raw)
              for raw in raws]
    if None in scores:
        raise NOT_DOUBLE
    return scores


def score_of(raw: bytes | None) -> float | None:
    """A score not in plain decimal form: strtod's, 0 for a missing BY key, None when
    it is not a number."""
    return 0.0 if raw is None else to_double(raw)


def sorted_elements(elements: list[bytes], keys: list[Any], opts: SortOptions,
                    start: int, end: int) -> list[bytes]:
    """The elements in Valkey's order (correct at least over start..end)."""
    n = len(elements)
    order = list(range(n))
    partial = opts.by is not None and (start != 0 or end != n - 1)
    if partial and opts.alpha and n > 1:
        distinct = sorted(set(keys))
        if len(distinct) < n:  # ties: pqsort's own steps decide where they land
            rank = {key: i for i, key in enumerate(distinct)}
            ranks = [rank[k] if not opts.desc else -rank[k] for k in keys]
            try:
                _partial_quicksort(order, ranks, start, end)
                return [elements[i] for i in order]
            except _TooManyComparisons:
                order = list(range(n))  # over budget: sort stably instead
    if not opts.alpha:
        unique_bytes = opts.by is None and all(map(_CANONICAL_INT, elements))
        return numeric_order(elements, keys, opts.desc, unique_bytes)
    order.sort(key=keys.__getitem__, reverse=opts.desc)
    return [elements[i] for i in order]


def numeric_order(elements: list[bytes], scores: list[float], desc: bool,
                  unique_bytes: bool) -> list[bytes]:
    """By score, ties by the elements' bytes (Valkey's sortCompare). Where equal scores
    mean equal bytes, or no score repeats, the floats alone decide, which Python compares
    far faster than (score, element) pairs."""
    if unique_bytes or len(set(scores)) == len(scores):
        # list.sort computes the keys in list order: each element's is the next score
        return sorted(elements, key=partial(next, iter(scores)), reverse=desc)
    return [element for _, element in sorted(zip(scores, elements), reverse=desc)]


class _TooManyComparisons(Exception):
    """The replay went past its budget (quadratic, or just too long): give up on it."""


def _partial_quicksort(order: list[int], ranks: list[int], lo: int, hi: int) -> None:
    """Valkey's pqsort (Bentley-McIlroy quicksort that skips the parts outside lo..hi)
    replayed on `order`, comparing ranks: where tied elements end up is what it leaves.
    Raises _TooManyComparisons past its budget of comparisons."""
    left, right = lo * _ES, (hi + 1) * _ES - 1  # the byte range pqsort keeps sorted
    n = len(order)
    budget = min(PQSORT_BUDGET * n * max(n.bit_length(), 1), PQSORT_MAX_COMPARISONS) + 64

    def cmp(a: int, b: int) -> int:
        nonlocal budget
        budget -= 1
        if budget < 0:
            raise _TooManyComparisons
        return ranks[order[a]] - ranks[order[b]]

    def swap(a: int, b: int) -> None:
        order[a], order[b] = order[b], order[a]

    def med3(a: int, b: int, c: int) -> int:
        if cmp(a, b) < 0:
            return b if cmp(b, c) < 0 else (c if cmp(a, c) < 0 else a)
        return b if cmp(b, c) > 0 else (a if cmp(a, c) < 0 else c)

    def wanted(first: int, count: int) -> bool:
        lo_byte, hi_byte = first * _ES, (first + count) * _ES - 1
        return not ((left < lo_byte and right < lo_byte) or (left > hi_byte and right > hi_byte))

    pending = [(0, len(order))]
    while pending:
        base, n = pending.pop()
        if n < 7:
            for pm in range(base + 1, base + n):
                pl = pm
                while pl > base and cmp(pl - 1, pl) > 0:
                    swap(pl, pl - 1)
                    pl -= 1
            continue
        pm = base + n // 2
        if n > 7:
            pl, pn = base, base + n - 1
            if n > 40:
                d = n // 8
                pl = med3(pl, pl + d, pl + 2 * d)
                pm = med3(pm - d, pm, pm + d)
                pn = med3(pn - 2 * d, pn - d, pn)
            pm = med3(pl, pm, pn)
        swap(base, pm)
        pa = pb = base + 1
        pc = pd = base + n - 1
        while True:
            while pb <= pc and (r := cmp(pb, base)) <= 0:
                if r == 0:
                    swap(pa, pb)
                    pa += 1
                pb += 1
            while pb <= pc and (r := cmp(pc, base)) >= 0:
                if r == 0:
                    swap(pc, pd)
                    pd -= 1
                pc -= 1
            if pb > pc:
                break
            swap(pb, pc)
            pb += 1
            pc -= 1
        pn = base + n
        s = min(pa - base, pb - pa)
        for k in range(s):
            swap(base + k, pb - s + k)
        s = min(pd - pc, pn - pd - 1)
        for k in range(s):
            swap(pb + k, pn - s + k)
        if (s := pb - pa) > 1 and wanted(base, s):
            pending.append((base, s))
        if (s := pd - pc) > 1 and wanted(pn - s, s):
            pending.append((pn - s, s))


# --- the command -------------------------------------------------------------------------


def sort_generic(c: Client, argv: list[bytes], readonly: bool) -> Any:
    opts = parse_options(c, argv, readonly)
    value = c.db.lookup(argv[1])
    if value is None:
        value = ListValue()
    elif not isinstance(value, ListValue | SetValue | ZSet):
        raise WRONGTYPE
    storing = opts.store is not None
    if opts.dontsort and isinstance(value, SetValue) and (storing or _in_script(c)):
        # a set's order is its own: sorted, so that scripts and replicas see the same
        opts.dontsort, opts.alpha, opts.by = False, True, None
    if isinstance(value, ZSet):
        value.to_skiplist()  # SORT converts a sorted set for good (zsetConvert)
    size = len(value)
    start, end = clamp_range(opts.offset, opts.count, size)
    if opts.dontsort and not isinstance(value, SetValue):
        elements = in_native_order(value, opts.desc, start, end)
        start, end = 0, end - start
    else:
        elements = every_element(value)
        if not opts.dontsort:
            keys = sort_keys(c, elements, opts, storing)
            elements = sorted_elements(elements, keys, opts, start, end)
    chosen = elements[start:end + 1] if end >= start else []
    if opts.store is None:
        return answer(c, chosen, opts.gets)
    return store(c, opts.store, chosen, opts.gets)


def answer(c: Client, chosen: list[bytes], gets: list[bytes]) -> list[Any]:
    if not gets:
        return chosen
    return [lookup_by_pattern(c, pattern, element) for element in chosen for pattern in gets]


def store(c: Client, dest: bytes, chosen: list[bytes], gets: list[bytes]) -> int:
    """STORE: the result replaces `dest` as a list (an empty one deletes it); the count
    answers. Valkey counts every stored element as a change."""
    if gets:
        items = [lookup_by_pattern(c, pattern, element) or b""
                 for element in chosen for pattern in gets]
    else:
        items = chosen
    if items:
        c.db.set_value(dest, ListValue(items), event="sortstore", klass="l")
        c.state.dirty += len(items) - 1  # the funnel counted one
    else:
        c.db.delete(dest)
    return len(items)


@command("sort", -2, "write denyoom", keys=(_SOURCE, _PATTERNS, _DESTINATION), acl=ACL,
         group=G, since="1.0.0", complexity=COMPLEXITY,
         summary="Sorts a list, set or sorted set (numerically or ALPHA, by itself or by "
         "other keys), answering or storing the result.")
def sort(c: Client, argv: list[bytes]) -> Any:
    return sort_generic(c, argv, readonly=False)


@command("sort_ro", -2, "readonly", keys=(_SOURCE, _PATTERNS), acl=ACL, group=G,
         since="7.0.0", complexity=COMPLEXITY,
         summary="Sorts a list, set or sorted set like SORT, without the STORE option.")
def sort_ro(c: Client, argv: list[bytes]) -> Any:
    return sort_generic(c, argv, readonly=True)
