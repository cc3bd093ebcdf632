"""Valkey's number parsing (util.c's string2ll, getDoubleFromObject's strtod forms) and the
C bounds, below the commands: the data types use them too. `fakekey.commands.args`
re-exports every name."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Final

from fakekey.codecs.errors import NOT_FLOAT, NOT_INTEGER
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:  # mypyc's native 64-bit int; plain int when run as Python
    from mypy_extensions import i64

# Final: compiled code reads them as constants, not from the module's dict
LLONG_MIN: Final = -(2**63)
LLONG_MAX: Final = 2**63 - 1
# the largest int compiled code keeps unboxed: a comparison with it is native, one with
# LLONG_MAX (boxed) is a call
SHORT_INT_MAX: Final = 2**62 - 1


def outside_int64(value: int) -> bool:
    """Whether an integer result is past a signed 64-bit one's range (an overflow for
    INCRBY and HINCRBY); the bounds are compared only for a value near them."""
    return not -SHORT_INT_MAX <= value <= SHORT_INT_MAX and not LLONG_MIN <= value <= LLONG_MAX

_INT_RE: Final = re.compile(rb"(?:0|-?[1-9][0-9]{0,18})\Z")
# strtod's decimal forms and inf/infinity; no spaces, no nan, no hex. Every quantifier is
# possessive: a digit run is never given back, so a long run followed by a bad byte fails
# in one linear pass instead of retrying every split of the run (which took seconds).
_FLOAT_RE: Final = re.compile(
    rb"[+-]?+(?:(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+|inf(?:inity)?+)\Z",
    re.I,
)


def is_strtod_form(raw: bytes) -> bool:
    """Whether strtod reads all of `raw` (decimal or inf forms, no spaces/nan/hex); linear."""
    return _FLOAT_RE.match(raw) is not None


def parse_int(raw: bytes | bytearray, error: ReplyError = NOT_INTEGER) -> int:
    """string2ll: canonical decimal, signed 64-bit."""
    value = try_int(raw)
    if value is None:
        raise error
    return value


def try_int(raw: bytes | bytearray) -> int | None:
    """string2ll's value of `raw`, or None. Up to 18 bytes, digits are read in a loop (no
    regex, no int() call: the common case, a few times per command); longer ones, near
    the 64-bit bounds, go through the regex and the range check."""
    if isinstance(raw, bytes) and 0 < len(raw) <= 18:  # 18 digits never leave the range
        size = len(raw)
        start = 1 if raw[0] == 45 else 0  # '-'
        if start == size:
            return None
        lead = raw[start]
        if not (49 <= lead <= 57 or (lead == 48 and size == 1)):  # no leading zero, no -0
            return None
        value: i64 = 0  # native: no tagged-int checks per digit (18 digits fit)
        for i in range(start, size):
            digit: i64 = raw[i] - 48
            if digit < 0 or digit > 9:
                return None
            value = value * 10 + digit
        return -value if start else value
    if _INT_RE.match(raw):
        wide = int(raw)  # not `value`: that one is a native 64-bit int
        if LLONG_MIN <= wide <= LLONG_MAX:
            return wide
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
