"""Argument parsing shared by every family. Each helper raises Valkey's exact error."""

from __future__ import annotations

import math
import re
from decimal import ROUND_CEILING, Decimal

from fakekey.resp.replies import ReplyError

WRONGTYPE = ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value")
SYNTAX = ReplyError("ERR syntax error")
NOT_INTEGER = ReplyError("ERR value is not an integer or out of range")
NOT_FLOAT = ReplyError("ERR value is not a valid float")
NO_SUCH_KEY = ReplyError("ERR no such key")
OVERFLOW = ReplyError("ERR increment or decrement would overflow")
DB_RANGE = ReplyError("ERR DB index is out of range")

LLONG_MIN = -(2**63)
LLONG_MAX = 2**63 - 1

_INT_RE = re.compile(rb"(?:0|-?[1-9][0-9]{0,18})\Z")
# strtod's decimal forms and inf/infinity; no spaces, no nan, no hex.
_FLOAT_RE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?)\Z", re.I
)


def parse_int(raw: bytes, error: ReplyError = NOT_INTEGER) -> int:
    """string2ll: canonical decimal, signed 64-bit."""
    if _INT_RE.match(raw):
        value = int(raw)
        if LLONG_MIN <= value <= LLONG_MAX:
            return value
    raise error


def try_int(raw: bytes) -> int | None:
    if _INT_RE.match(raw):
        value = int(raw)
        if LLONG_MIN <= value <= LLONG_MAX:
            return value
    return None


def parse_float(raw: bytes, error: ReplyError = NOT_FLOAT) -> float:
    """getDoubleFromObject: strtod forms, no spaces, no nan, out of range is an error."""
    if not _FLOAT_RE.match(raw):
        raise error
    value = float(raw)
    if math.isinf(value) and b"inf" not in raw.lower():
        raise error  # ERANGE overflow
    if value == 0.0 and _has_nonzero_digit(raw):
        raise error  # ERANGE underflow
    return value


def _has_nonzero_digit(raw: bytes) -> bool:
    mantissa = raw.lower().split(b"e", 1)[0]
    return any(48 < c <= 57 for c in mantissa)


def parse_non_negative(raw: bytes, what: str) -> int:
    value = parse_int(raw)
    if value < 0:
        raise ReplyError(f"ERR {what} is negative")
    return value


def upper(raw: bytes) -> bytes:
    return raw.upper()


def wrong_args(name: str) -> ReplyError:
    return ReplyError(f"ERR wrong number of arguments for '{name}' command")


def unknown_subcommand(sub: bytes, parent: str) -> ReplyError:
    text = sub.decode("utf-8", "replace")
    return ReplyError(f"ERR unknown subcommand '{text[:128]}'. Try {parent.upper()} HELP.")


def parse_db_index(raw: bytes, count: int) -> int:
    index = parse_int(raw)
    if not 0 <= index < count:
        raise DB_RANGE
    return index


_LONG_DOUBLE_RE = re.compile(
    rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?"
    rb"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)\Z",
    re.I,
)


def parse_long_double(raw: bytes, error: ReplyError) -> Decimal:
    """strtold's forms (decimal, hex, inf), as an exact Decimal; no spaces, no nan."""
    if not _LONG_DOUBLE_RE.match(raw):
        raise error
    text = raw.decode()
    if "x" in text.lower():
        sign = -1 if text.startswith("-") else 1
        body = text.lstrip("+-")
        if "p" not in body.lower():
            body += "p0"
        return Decimal(float.fromhex(body)) * sign
    return Decimal(text)


TIMEOUT_NOT_FLOAT = ReplyError("ERR timeout is not a float or out of range")
TIMEOUT_NEGATIVE = ReplyError("ERR timeout is negative")
TIMEOUT_RANGE = ReplyError("ERR timeout is out of range")


def parse_timeout(raw: bytes, now_ms: int) -> int:
    """A blocking command's timeout in seconds -> absolute deadline in ms (0 = forever)."""
    if raw.isdigit() and len(raw) <= 9:  # whole seconds, the common case: no Decimal
        ticks = int(raw) * 1000
        return ticks + now_ms if ticks else 0
    seconds = parse_long_double(raw, TIMEOUT_NOT_FLOAT)
    if seconds.is_infinite():
        if seconds < 0:
            raise TIMEOUT_NEGATIVE
        raise TIMEOUT_RANGE
    ms = seconds * 1000
    if ms > LLONG_MAX:
        raise TIMEOUT_RANGE
    ticks = int(ms.to_integral_value(rounding=ROUND_CEILING))
    if ticks < 0:
        raise TIMEOUT_NEGATIVE
    if ticks == 0:
        return 0
    if ticks > LLONG_MAX - now_ms:
        raise TIMEOUT_RANGE
    return ticks + now_ms


def c_text(raw: bytes) -> bytes:
    """An argument as C's %s prints it in an error: up to a NUL, CR/LF made spaces."""
    return raw.split(b"\0", 1)[0].replace(b"\r", b" ").replace(b"\n", b" ")
