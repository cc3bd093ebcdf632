"""DEBUG DIGEST and DEBUG DIGEST-VALUE: Valkey's SHA1 signature of the data (debug.c).

Two ways to fold a piece of data into a 20-byte digest:

- xor: digest ^= SHA1(data). Commutative, for what has no order (the keys of a database,
  set members, hash fields, sorted-set members).
- mix: digest = SHA1(digest ^ SHA1(data)). Order-sensitive, for what has one (a list's
  elements, a stream's entries, the parts of one key/value pair).

A value's digest mixes its type code (a 4-byte big-endian integer), then its content, and
xors the marker `!!expire!!` when the key has a TTL (whatever its deadline). A dataset's
digest is, for every non-empty database, a mix of the database number followed by the xor
of the SHA1 of every key's (mix of the key name, then its value's parts); an empty dataset
is all zeros.
Hash field TTLs are not part of it, but fields already past their deadline are left out;
logically expired keys not deleted yet are part of it (as in Valkey: no lookup happens).

Pure: works on the values and the databases' plain mappings, imports no command layer.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Container, Iterable
from hashlib import sha1
from typing import Any, Protocol


class KeyValues(Protocol):
    """A database's keys and values (a dict, or the keyspace's Table)."""

    def __len__(self) -> int: ...

    def items(self) -> Iterable[tuple[bytes, Any]]: ...

# Valkey's object type codes (server.h: OBJ_STRING ... OBJ_STREAM)
TYPE_CODES = {"string": 0, "list": 1, "set": 2, "zset": 3, "hash": 4, "stream": 6}
OBJ_MODULE = 5  # any other TYPE name is a module type's
EXPIRE_MARK = b"!!expire!!"
ZERO = bytes(20)
_STREAM_EDGES = ((0, 0), (2**64 - 1, 2**64 - 1))


def _sha1_int(data: bytes) -> int:
    return int.from_bytes(sha1(data).digest(), "big")


def mix(digest: int, data: bytes) -> int:
    """mixDigest: SHA1 of (digest xor SHA1(data)); digests are 160-bit integers here."""
    return _sha1_int((digest ^ _sha1_int(data)).to_bytes(20, "big"))


def xor(digest: int, data: bytes) -> int:
    """xorDigest: digest xor SHA1(data)."""
    return digest ^ _sha1_int(data)


# --- fpconv_dtoa: Grisu2 as Valkey's deps/fpconv runs it --------------------------------
# Grisu2 is not always shortest (66027599256038864.0 prints all 17 digits where repr()
# needs 16), and the digest hashes the text, so the algorithm is followed step by step,
# 64-bit wrap-around included.

M64 = 2**64 - 1
_HIDDEN = 1 << 52
_FIRST_POWER, _STEP = -348, 8  # cached powers 10**-348, 10**-340, ... 10**340
_TENS = [10**i for i in range(19, -1, -1)]


def _cached_power(k: int) -> tuple[int, int]:
    """10**k as a 64-bit significand rounded to nearest and a binary exponent."""
    num, den = (10**k, 1) if k >= 0 else (1, 10**-k)
    exp = num.bit_length() - den.bit_length() - 64
    while (num << max(-exp, 0)) >= (den << max(exp, 0)) << 64:
        exp += 1
    while (num << max(-exp, 0)) < (den << max(exp, 0)) << 63:
        exp -= 1
    num, den = num << max(-exp, 0), den << max(exp, 0)
    frac, rest = divmod(num, den)
    return frac + (2 * rest >= den), exp


_POWERS = [_cached_power(_FIRST_POWER + i * _STEP) for i in range(87)]


def _find_cached_power(exp: int) -> tuple[int, int, int]:
    """The cached power that brings a product's exponent into [-60, -32], and its k."""
    index = (int(-(exp + 87) * 0.30102999566398114) - _FIRST_POWER) // _STEP
    while True:
        frac, pexp = _POWERS[index]
        current = exp + pexp + 64
        if current < -60:
            index += 1
        elif current > -32:
            index -= 1
        else:
            return frac, pexp, _FIRST_POWER + index * _STEP


def _multiply(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    """The high 64 bits of a 64x64 product, rounded as fpconv does (half up)."""
    (af, ae), (bf, be) = a, b
    lo = 0xFFFFFFFF
    ah_bl, al_bh = (af >> 32) * (bf & lo), (af & lo) * (bf >> 32)
    al_bl, ah_bh = (af & lo) * (bf & lo), (af >> 32) * (bf >> 32)
    tmp = (ah_bl & lo) + (al_bh & lo) + (al_bl >> 32) + (1 << 31)
    return (ah_bh + (ah_bl >> 32) + (al_bh >> 32) + (tmp >> 32)) & M64, ae + be + 64


def _round_digit(digits: list[int], delta: int, rem: int, kappa: int, frac: int) -> None:
    while (rem < frac and (delta - rem) & M64 >= kappa
           and ((rem + kappa) & M64 < frac or (frac - rem) & M64 > (rem + kappa - frac) & M64)):
        digits[-1] -= 1
        rem = (rem + kappa) & M64


def _generate_digits(w: int, upper: tuple[int, int], lower: int) -> tuple[list[int], int]:
    """Digits and the decimal exponent adjustment (kappa) between the boundaries."""
    ufrac, uexp = upper
    wfrac = (ufrac - w) & M64
    delta = (ufrac - lower) & M64
    shift = -uexp
    one = 1 << shift
    part1, part2 = ufrac >> shift, ufrac & (one - 1)
    digits: list[int] = []
    kappa = 10
    for div in _TENS[10:]:
        digit, part1 = divmod(part1, div)
        if digit or digits:
            digits.append(digit)
        kappa -= 1
        rem = ((part1 << shift) + part2) & M64
        if rem <= delta:
            _round_digit(digits, delta, rem, (div << shift) & M64, wfrac)
            return digits, kappa
    unit = 18
    while True:
        part2 = (part2 * 10) & M64
        delta = (delta * 10) & M64
        kappa -= 1
        digit = part2 >> shift
        if digit or digits:
            digits.append(digit)
        part2 &= one - 1
        if part2 < delta:
            _round_digit(digits, delta, part2, one, (wfrac * _TENS[unit]) & M64)
            return digits, kappa
        unit -= 1


def _grisu2(value: float) -> tuple[str, int]:
    """The digit string and decimal exponent K (value ~ DIGITS * 10**K) of a finite,
    non-zero, positive double."""
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    frac, exp = bits & (_HIDDEN - 1), (bits >> 52) & 0x7FF
    if exp:
        frac, exp = frac + _HIDDEN, exp - 1075
    else:
        exp = -1074
    # the boundaries, normalized to the upper one's exponent
    ufrac, uexp = (frac << 1) + 1, exp - 1
    while not ufrac & (_HIDDEN << 1):
        ufrac, uexp = ufrac << 1, uexp - 1
    ufrac, uexp = (ufrac << 10) & M64, uexp - 10
    lshift = 2 if frac == _HIDDEN else 1
    lfrac, lexp = (frac << lshift) - 1, exp - lshift
    lfrac = (lfrac << (lexp - uexp)) & M64
    # the value itself, normalized
    while not frac & _HIDDEN:
        frac, exp = frac << 1, exp - 1
    frac, exp = frac << 11, exp - 11
    pfrac, pexp, k = _find_cached_power(uexp)
    w = _multiply((frac, exp), (pfrac, pexp))
    upper = _multiply((ufrac, uexp), (pfrac, pexp))
    lower = _multiply((lfrac, uexp), (pfrac, pexp))
    digits, kappa = _generate_digits(w[0], ((upper[0] - 1) & M64, upper[1]), (lower[0] + 1) & M64)
    return "".join(map(str, digits)), kappa - k


def _emit(digits: str, k: int, negative: bool) -> str:
    """fpconv's layout: plain integer, plain decimal, or scientific with a 2-3 digit exp."""
    ndigits = len(digits)
    exp = abs(k + ndigits - 1)
    if k >= 0 and exp < ndigits + 7:
        return digits + "0" * k
    if k < 0 and (k > -7 or exp < 4):
        offset = ndigits + k
        if offset <= 0:
            return "0." + "0" * -offset + digits
        return digits[:offset] + "." + digits[offset:]
    ndigits = min(ndigits, 18 - negative)
    sign = "-" if k + ndigits - 1 < 0 else "+"
    head = digits[0] + ("." + digits[1:ndigits] if ndigits > 1 else "")
    return f"{head}e{sign}{exp}"


def fpconv_dtoa(value: float) -> bytes:
    """Valkey's fpconv_dtoa: the text the digest hashes for a sorted-set score."""
    negative = math.copysign(1.0, value) < 0
    sign = "-" if negative else ""
    if value == 0:
        return (sign + "0").encode()
    if math.isinf(value):
        return (sign + "inf").encode()
    if value != value:
        return (sign + "nan").encode()
    digits, k = _grisu2(abs(value))
    return (sign + _emit(digits, k, negative)).encode()


def score_text(score: float) -> bytes:
    """The score as the digest hashes it: fpconv_dtoa, not d2string (1e15 is `1e+15`)."""
    return fpconv_dtoa(score)


def _pair_digest(first: bytes, second: bytes) -> bytes:
    """The 20 bytes of mix(mix(0, first), second): one hash field or sorted-set member."""
    return mix(mix(0, first), second).to_bytes(20, "big")


def _type_name(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return "string"
    return value.TYPE_NAME


def _content_digest(digest: int, kind: str, value: Any, now: int) -> int:
    if kind == "string":
        return mix(digest, bytes(value))
    if kind == "list":
        for item in value:
            digest = mix(digest, item)
    elif kind == "set":
        for member in value:
            digest = xor(digest, member)
    elif kind == "zset":
        for member, score in value.mapping().items():
            digest = xor(digest, _pair_digest(member, score_text(score)))
    elif kind == "hash":
        ttls = value.ttls
        for field, item in value.mapping().items():
            if ttls and field in ttls and now > ttls[field]:
                continue  # past its deadline: Valkey's iterator skips it
            digest = xor(digest, _pair_digest(field, item))
    elif kind == "stream":
        for (ms, seq), pairs in value.range(*_STREAM_EDGES):
            digest = mix(digest, b"%d.%d" % (ms, seq))
            for part in pairs:
                digest = mix(digest, part)
    else:
        raise TypeError(f"no digest for a value of type {kind}")
    return digest


def object_digest(digest: int, value: Any, has_expire: bool, now: int) -> int:
    """xorObjectDigest: fold one value (type code, content, TTL marker) into `digest`."""
    if type(value) is int:  # a counter INCR left (fakekey/core/keyspace.py): its bytes
        value = b"%d" % value
    kind = _type_name(value)
    code = TYPE_CODES.get(kind)
    if code is None:  # an emulated module's value: OBJ_MODULE, no digest callback to fold in
        digest = mix(digest, OBJ_MODULE.to_bytes(4, "big"))
    else:
        digest = mix(digest, code.to_bytes(4, "big"))
        digest = _content_digest(digest, kind, value, now)
    if has_expire:
        digest = xor(digest, EXPIRE_MARK)
    return digest


def value_digest(value: Any, has_expire: bool, now: int) -> bytes:
    """DEBUG DIGEST-VALUE for one key: 40 hex digits (all zeros for a missing key)."""
    if value is None:
        return ZERO.hex().encode()
    return object_digest(0, value, has_expire, now).to_bytes(20, "big").hex().encode()


def database_digest(data: KeyValues, expires: Container[bytes], now: int) -> int:
    """The xor over one database of the SHA1 of every key's digest (mix of the key name,
    then its value)."""
    total = 0
    for key, value in data.items():
        pair = object_digest(mix(0, key), value, key in expires, now)
        total = xor(total, pair.to_bytes(20, "big"))
    return total


def dataset_digest(databases: Iterable[tuple[int, KeyValues, Container[bytes]]],
                   now: int) -> bytes:
    """DEBUG DIGEST: 40 hex digits over every (index, data, expires) database."""
    final = 0
    for index, data, expires in databases:
        if not data:
            continue
        final = mix(final, index.to_bytes(4, "big"))
        final ^= database_digest(data, expires, now)
    return final.to_bytes(20, "big").hex().encode()
