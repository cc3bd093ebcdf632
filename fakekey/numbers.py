"""Valkey's number parsing (util.c's string2ll, getDoubleFromObject's strtod forms) and the
C bounds, below the commands: the data types use them too. `fakekey.commands.args`
re-exports every name."""

from __future__ import annotations

import math
import re

from fakekey.errors import NOT_FLOAT, NOT_INTEGER
from fakekey.resp.replies import ReplyError

LLONG_MIN = -(2**63)
LLONG_MAX = 2**63 - 1

_INT_RE = re.compile(rb"(?:0|-?[1-9][0-9]{0,18})\Z")
# strtod's decimal forms and inf/infinity; no spaces, no nan, no hex. Every quantifier is
# possessive: a digit run is never given back, so a long run followed by a bad byte fails
# in one linear pass instead of retrying every split of the run (which took seconds).
_FLOAT_RE = re.compile(
    rb"[+-]?+(?:(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+|inf(?:inity)?+)\Z",
    re.I,
)


def is_strtod_form(raw: bytes) -> bool:
    """Whether strtod reads all of `raw` (decimal or inf forms, no spaces/nan/hex); linear."""
    return _FLOAT_RE.match(raw) is not None


def parse_int(raw: bytes | bytearray, error: ReplyError = NOT_INTEGER) -> int:
    """string2ll: canonical decimal, signed 64-bit."""
    if _INT_RE.match(raw):
        value = int(raw)
        if LLONG_MIN <= value <= LLONG_MAX:
            return value
    raise error


def try_int(raw: bytes | bytearray) -> int | None:
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
