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

INVALID_CURSOR = ReplyError("ERR invalid cursor")
NOVALUES_ONLY_HSCAN = ReplyError("ERR NOVALUES option can only be used in HSCAN")
NOSCORES_ONLY_ZSCAN = ReplyError("ERR NOSCORES option can only be used in ZSCAN")
SCAN_TYPES = frozenset((b"string", b"list", b"set", b"zset", b"hash", b"stream"))
U64 = 2**64 - 1

# SCAN and ZSCAN visit items in the order of their (per-process stable) hash, and a
# cursor is the position of the next item to visit. Positions keep 52 bits of the hash
# so that every cursor is exact in a double: Lua scripts and JavaScript clients keep
# cursors as numbers, and a rounded cursor would skip items.
CURSOR_MASK = 2**52 - 1


def scan_position(item: bytes) -> int:
    """An item's place in SCAN/ZSCAN order, and the cursor that resumes at it."""
    return hash(item) & CURSOR_MASK


def hash_order(items: Any) -> list[bytes]:
    """`items` sorted by scan position: the order an iteration walks."""
    return sorted(items, key=scan_position)


def hash_order_page(
    order: list[bytes], cursor: int, count: int, alive: Callable[[bytes], bool]
) -> tuple[int, list[bytes]]:
    """Visit up to `count` live items of `order` from `cursor` on; answer the cursor of
    the first item not visited (0 at the end) and the live items visited.

    An order built at any time holds every item present since then at the same
    position, so an item present for a whole iteration is visited whatever came and went.
    Items sharing a position are visited in one call, never split across two. A cursor
    handed out is never 0: it is greater than the position of an item just visited."""
    size = len(order)
    i = bisect_left(order, cursor, key=scan_position)
    visited: list[bytes] = []
    while i < size and len(visited) < count:
        item = order[i]
        i += 1
        if alive(item):
            visited.append(item)
    while i < size and scan_position(order[i]) == scan_position(order[i - 1]):
        if alive(order[i]):
            visited.append(order[i])
        i += 1
    return (scan_position(order[i]) if i < size else 0), visited


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


def parse_scan_options(argv: list[bytes], start: int, kind: str | None) -> ScanOptions:
    """COUNT, MATCH, and the options of one SCAN flavour (`kind`: None for SCAN over the
    keys, else "hash", "set" or "zset"), checked in argument order."""
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
            options.type_name = argv[i + 1].lower()
            if options.type_name not in SCAN_TYPES:
                raise ReplyError(b"ERR unknown type name '" + c_text(argv[i + 1]) + b"'")
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
