"""What SCAN, HSCAN, SSCAN and ZSCAN share: the cursor and the options, parsed as
Valkey's parseScanCursorOrReply and scanGenericCommand do."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakekey.codecs.glob import Matcher, compile_glob
from fakekey.commands.args import SYNTAX, c_text, parse_int, try_int
from fakekey.resp.replies import ReplyError
from fakekey.types.module_value import MODULE_TYPES

INVALID_CURSOR = ReplyError("ERR invalid cursor")
NOVALUES_ONLY_HSCAN = ReplyError("ERR NOVALUES option can only be used in HSCAN")
NOSCORES_ONLY_ZSCAN = ReplyError("ERR NOSCORES option can only be used in ZSCAN")
SCAN_TYPES = frozenset((b"string", b"list", b"set", b"zset", b"hash", b"stream"))
U64 = 2**64 - 1

# SCAN, SSCAN and ZSCAN walk a table as Valkey's hashtable does, and hand out its cursors.
# An item's position is its 64-bit hash (Python caches the hash of bytes); a table of 2**B
# buckets splits positions by their top B bits, and the buckets are visited in increasing
# order. The cursor naming bucket b is b's B bits reversed, Valkey's reverse-binary cursor:
# it stays below the table's size, and means the same place when B grows between two
# calls, an earlier one (items seen again, never missed) when B shrinks.
HASH_OFFSET = 2**63  # hash() is signed: this makes positions 0 .. 2**64-1, in hash order
POSITION_BITS = 64
ENTRIES_PER_BUCKET = 7  # Valkey's hashtable: 7 entries to a 64-byte bucket


def table_bits(size: int) -> int:
    """B for a table of `size` items: the bucket count of Valkey's table grown to that
    size, the fewest power of two whose buckets of 7 hold every item."""
    buckets = max(1, -(-size // ENTRIES_PER_BUCKET))
    return (buckets - 1).bit_length()


def reverse_bits(value: int, bits: int) -> int:
    """`value`'s low `bits` bits in reverse order."""
    return int(format(value, "0%db" % bits)[::-1], 2) if bits else 0


def at_start(cursor: int, size: int) -> bool:
    """Whether `cursor` names bucket 0 of a `size`-item table (Valkey masks it): an
    iteration begins there, so its order is built anew."""
    return cursor & ((1 << table_bits(size)) - 1) == 0


def hash_order(items: Any) -> list[bytes]:
    """`items` sorted by position: the order an iteration walks, bucket after bucket."""
    return sorted(items, key=hash)


def bucket_page(
    order: list[bytes], cursor: int, size: int, count: int, alive: Callable[[bytes], bool]
) -> tuple[int, list[bytes]]:
    """Visit the buckets of a `size`-item table from `cursor`'s on, whole, until `count`
    live items of `order` are visited; answer the next bucket's cursor (0 at the end) and
    the live items visited.

    An order built at any time holds every item present since then at the same position,
    so an item present for a whole iteration is visited whatever came and went. A call
    starts at or before the place the last one handed out (B shrank: a bucket holding it)
    and ends past it, whatever B is, so the calls cover every position and an iteration
    ends. A cursor past the table's size is masked, as Valkey masks it. A cursor handed
    out is never 0: bucket 0 is behind it."""
    bits = table_bits(size)
    shift = POSITION_BITS - bits
    start = reverse_bits(cursor & ((1 << bits) - 1), bits) << shift
    end = len(order)
    i = bisect_left(order, start - HASH_OFFSET, key=hash)
    visited: list[bytes] = []
    while i < end and len(visited) < count:
        item = order[i]
        i += 1
        if alive(item):
            visited.append(item)
    if i < end:  # the rest of the last item's bucket (count >= 1: there was one)
        last = bucket_of(order[i - 1], shift)
        while i < end and bucket_of(order[i], shift) == last:
            if alive(order[i]):
                visited.append(order[i])
            i += 1
    return (reverse_bits(bucket_of(order[i], shift), bits) if i < end else 0), visited


def orders_page(
    orders: list[list[bytes]], cursor: int, size: int, count: int, alive: Callable[[bytes], bool]
) -> tuple[int, list[bytes]]:
    """`bucket_page` over several sorted orders walked as one (SCAN's keys: the order
    kept since the last rebuild and the keys added since, fakekey/commands/key_order.py).
    A key in both (deleted, then added again) is visited once."""
    if len(orders) == 1:
        return bucket_page(orders[0], cursor, size, count, alive)
    bits = table_bits(size)
    shift = POSITION_BITS - bits
    start = reverse_bits(cursor & ((1 << bits) - 1), bits) << shift
    at = [bisect_left(order, start - HASH_OFFSET, key=hash) for order in orders]
    visited: list[bytes] = []
    current = -1  # the bucket being visited
    while True:
        best, best_hash = -1, 0
        for k, order in enumerate(orders):
            if at[k] < len(order) and (best < 0 or hash(order[at[k]]) < best_hash):
                best, best_hash = k, hash(order[at[k]])
        if best < 0:
            return 0, visited
        bucket = (best_hash + HASH_OFFSET) >> shift
        if len(visited) >= count and bucket != current:
            return reverse_bits(bucket, bits), visited
        item = orders[best][at[best]]
        at[best] += 1
        current = bucket
        if alive(item) and not (visited and visited[-1] == item):
            visited.append(item)


def bucket_of(item: bytes, shift: int) -> int:
    """The bucket holding `item` in a table of 2**(64 - shift) buckets."""
    return (hash(item) + HASH_OFFSET) >> shift


def parse_cursor(raw: bytes) -> int:
    """string2ull: a canonical integer must not be negative; anything else is what C's
    strtoull takes whole (leading blanks, a sign, leading zeros; `-` wraps around)."""
    text = raw.split(b"\0", 1)[0]  # the C string ends at a NUL
    value = try_int(text)
    if value is not None:
        if value < 0:
            raise INVALID_CURSOR
        return value
    text = text.lstrip(b" \t\n\v\f\r")
    negative = text[:1] == b"-"
    if text[:1] in (b"+", b"-"):
        text = text[1:]
    if not text.isdigit():  # bytes.isdigit: ASCII digits only, False when empty
        raise INVALID_CURSOR
    value = int(text)
    if value > U64:
        raise INVALID_CURSOR  # ERANGE
    return (-value) & U64 if negative else value


@dataclass
class ScanOptions:
    count: int = 10
    matches: Matcher | None = None  # None: every name matches
    type_name: bytes | None = None  # SCAN's TYPE
    novalues: bool = False  # HSCAN's NOVALUES
    noscores: bool = False  # ZSCAN's NOSCORES


def scan_type(raw: bytes, module_types: bool) -> bytes:
    """getObjectTypeByName: a built-in type's name, or (`module_types`: the emulated
    modules are on) a module type's in its own case, in any case; an error for any other."""
    name = raw.lower()
    if name in SCAN_TYPES:
        return name
    for module_type in MODULE_TYPES if module_types else ():
        if module_type.lower().encode() == name:
            return module_type.encode()
    raise ReplyError(b"ERR unknown type name '" + c_text(raw) + b"'")


def parse_scan_options(argv: list[bytes], start: int, kind: str | None,
                       module_types: bool = False) -> ScanOptions:
    """COUNT, MATCH, and the options of one SCAN flavour (`kind`: None for SCAN over the
    keys, else "hash", "set" or "zset"), checked in argument order. `module_types`: TYPE
    takes the emulated modules' type names too."""
    options = ScanOptions()
    i, argc = start, len(argv)
    while i < argc:
        opt = argv[i].upper()
        has_value = i + 1 < argc
        if opt == b"COUNT" and has_value:
            options.count = parse_int(argv[i + 1])
            if options.count < 1:
                raise SYNTAX
            i += 2
        elif opt == b"MATCH" and has_value:
            pattern = argv[i + 1]
            options.matches = None if pattern == b"*" else compile_glob(pattern)
            i += 2
        elif opt == b"TYPE" and kind is None and has_value:
            options.type_name = scan_type(argv[i + 1], module_types)
            i += 2
        elif opt == b"NOVALUES":
            if kind != "hash":
                raise NOVALUES_ONLY_HSCAN
            options.novalues = True
            i += 1
        elif opt == b"NOSCORES":
            if kind != "zset":
                raise NOSCORES_ONLY_ZSCAN
            options.noscores = True
            i += 1
        else:
            raise SYNTAX
    return options
