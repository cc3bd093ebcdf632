"""C `long double` (x87 80-bit extended) arithmetic, exact: what INCRBYFLOAT,
HINCRBYFLOAT and the blocking commands' timeouts compute with, as Valkey computes it."""

from __future__ import annotations

import re
from fractions import Fraction

from fakekey.codecs.errors import NOT_FLOAT

# --- INCRBYFLOAT: C `long double` (x87 80-bit extended) arithmetic ------------------------
#
# Valkey parses both operands with strtold, adds them in long double and prints the sum
# with "%.17Lf" (trailing zeros removed). The values below are exact fractions rounded
# to what an 80-bit long double holds: a 64-bit significand, round half to even,
# subnormals down to 2**-16445, overflow at 2**16384.

_LD_BITS = 64
_LD_MIN_QUANTUM = -16445  # exponent of the smallest subnormal
_LD_MAX_EXP = 16384  # 2**16384 overflows
_LD_MAX_CHARS = 5 * 1024  # MAX_LONG_DOUBLE_CHARS: longer input is refused
_INF = float("inf")

_DEC_RE = re.compile(rb"([+-]?)(?=\.?[0-9])([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?\Z")
_HEX_RE = re.compile(
    rb"([+-]?)0[xX](?=\.?[0-9a-fA-F])([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?(?:[pP]([+-]?[0-9]+))?\Z"
)
_INF_RE = re.compile(rb"([+-]?)inf(?:inity)?\Z", re.I)

LongDouble = Fraction | float  # a finite value, or +-inf as a float


def ld_round(x: Fraction) -> LongDouble:
    """`x` rounded to the nearest long double (ties to even); +-inf past the range."""
    if x == 0:
        return Fraction(0)
    num, den = abs(x.numerator), x.denominator
    exp = num.bit_length() - den.bit_length()  # 2**exp <= |x| < 2**(exp+1) after the fix
    if (num << -exp if exp < 0 else num) < (den << exp if exp > 0 else den):
        exp -= 1
    quantum = max(exp - (_LD_BITS - 1), _LD_MIN_QUANTUM)
    if quantum >= 0:
        mant, rest = divmod(num, den << quantum)
        half_cmp = 2 * rest - (den << quantum)
    else:
        mant, rest = divmod(num << -quantum, den)
        half_cmp = 2 * rest - den
    if half_cmp > 0 or (half_cmp == 0 and mant & 1):
        mant += 1
    if mant.bit_length() + quantum > _LD_MAX_EXP:
        return _INF if x > 0 else -_INF
    if x < 0:
        mant = -mant
    return Fraction(mant << quantum) if quantum >= 0 else Fraction(mant, 1 << -quantum)


def ld_parse(raw: bytes | bytearray) -> LongDouble:
    """string2ld: strtold's decimal, hex and inf forms, whole string, no leading space,
    no nan; overflow and underflow to zero are refused. NOT_FLOAT otherwise."""
    if not raw or len(raw) >= _LD_MAX_CHARS:
        raise NOT_FLOAT
    raw = bytes(raw)
    m = _DEC_RE.match(raw)
    if m:
        sign, whole, frac, exp = m.groups()
        frac = frac or b""
        digits = (whole + frac).lstrip(b"0")
        exp10 = _parse_decimal(exp or b"0") - len(frac)
        return _finish(sign, _parse_decimal(digits), exp10, 10, len(digits), 4933, -4952)
    m = _HEX_RE.match(raw)
    if m:
        sign, whole, frac, exp = m.groups()
        frac = frac or b""
        mant = int(whole + frac or b"0", 16)
        exp2 = _parse_decimal(exp or b"0") - 4 * len(frac)
        return _finish(sign, mant, exp2, 2, mant.bit_length(), _LD_MAX_EXP, -16447)
    m = _INF_RE.match(raw)
    if m:
        return -_INF if m.group(1) == b"-" else _INF
    raise NOT_FLOAT


_CHUNK = 1000  # decimal digits per step: Python refuses int<->str past 4300 digits


def _parse_decimal(text: bytes) -> int:
    """int(text) for a signed decimal of any length."""
    negative = text[:1] == b"-"
    text = text.lstrip(b"+-")
    value = 0
    for i in range(0, len(text), _CHUNK):
        part = text[i : i + _CHUNK]
        value = value * 10 ** len(part) + int(part)
    return -value if negative else value


def _decimal_digits(value: int) -> bytes:
    """The decimal digits of a non-negative int of any size."""
    parts = []
    while value >= 10**_CHUNK:
        value, low = divmod(value, 10**_CHUNK)
        parts.append(b"%0*d" % (_CHUNK, low))
    parts.append(b"%d" % value)
    return b"".join(reversed(parts))


def _finish(
    sign: bytes, mant: int, exp: int, base: int, width: int, too_big: int, too_small: int
) -> LongDouble:
    """mant * base**exp with strtold's range errors; `width` digits of mant in `base`.

    A magnitude certainly past the range is refused before computing base**exp, so an
    exponent of a million digits costs nothing."""
    if mant == 0:
        return Fraction(0)
    if exp + width - 1 >= too_big or exp + width <= too_small:
        raise NOT_FLOAT
    value = Fraction(mant * base**exp) if exp >= 0 else Fraction(mant, base**-exp)
    rounded = ld_round(-value if sign == b"-" else value)
    if rounded == 0 or isinstance(rounded, float):
        raise NOT_FLOAT  # ERANGE: underflow to zero, or overflow
    return rounded


def ld_format(value: Fraction) -> bytes:
    """ld2string in "human" mode: "%.17Lf" (round half to even on the exact binary
    value), trailing zeros and dot removed, "-0" as "0"."""
    scaled = value * 10**17
    whole, rest = divmod(scaled.numerator, scaled.denominator)
    twice = 2 * rest
    if twice > scaled.denominator or (twice == scaled.denominator and whole & 1):
        whole += 1
    negative = whole < 0
    digits = _decimal_digits(abs(whole)).rjust(18, b"0")
    text = digits[:-17] + b"." + digits[-17:]
    text = text.rstrip(b"0").rstrip(b".")
    if negative and text != b"0":
        text = b"-" + text
    return text
