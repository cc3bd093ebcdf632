"""What SCAN, HSCAN, SSCAN and ZSCAN share: the cursor and the options, parsed as
Valkey's parseScanCursorOrReply and scanGenericCommand do."""

from __future__ import annotations

from dataclasses import dataclass

from fakekey.commands.args import SYNTAX, c_text, parse_int, try_int
from fakekey.glob import Matcher, compile_glob
from fakekey.resp.replies import ReplyError

INVALID_CURSOR = ReplyError("ERR invalid cursor")
NOVALUES_ONLY_HSCAN = ReplyError("ERR NOVALUES option can only be used in HSCAN")
NOSCORES_ONLY_ZSCAN = ReplyError("ERR NOSCORES option can only be used in ZSCAN")
SCAN_TYPES = frozenset((b"string", b"list", b"set", b"zset", b"hash", b"stream"))
U64 = 2**64 - 1


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
