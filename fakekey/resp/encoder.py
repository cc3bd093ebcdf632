"""Typed replies -> RESP bytes. One encoder per protocol; RESP2's downgrades live here only.

RESP2 downgrades (as Valkey): map -> flat array, set -> array, double -> bulk string,
boolean -> integer 1/0, null -> `$-1` (bulk) or `*-1` (array), push -> array,
verbatim and big number -> bulk string.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import islice
from typing import Any, Final

from fakekey.resp.replies import (
    NULL_ARRAY,
    BigNumber,
    Multi,
    Push,
    Raw,
    ReplyError,
    SetReply,
    Simple,
    Verbatim,
    _NullArray,
)

CRLF: Final = b"\r\n"
# ready-made `$N\r\n` (and `N\r\n` for aggregate counts, `:N\r\n` for integer replies): a
# table lookup costs a fraction of formatting the number, and bulk strings are most of
# every array reply
_TABLE_SIZE: Final = 1024
BULK_HEADS: Final = tuple([b"$%d\r\n" % n for n in range(_TABLE_SIZE)])
_COUNTS: Final = tuple([b"%d\r\n" % n for n in range(_TABLE_SIZE)])
INT_WIRES: Final = tuple([b":%d\r\n" % n for n in range(_TABLE_SIZE)])
# parts joined at a time: bytes.join takes an 80-byte buffer view of every part first, and
# for a million-key reply (three million parts) paging those in cost more than the copy
JOIN_RUN: Final = 4096
SMALL_AGGREGATE: Final = 256  # items: a bigger aggregate is framed a slice at a time, in runs
# a nested array's whole header, one part of the join where prefix and count were two
# (a stream entry has two nested arrays: 13 parts, not 15)
_ARRAY_HEADS: Final = tuple([b"*%d\r\n" % n for n in range(SMALL_AGGREGATE + 1)])


# Valkey's d2string prints an integral double with |d| <= LLONG_MAX/2 (2**62 as a double)
# as an integer; anything else goes through fpconv_dtoa.
_LL_HALF: Final = 4611686018427387904.0


def format_double(value: float) -> bytes:
    """Valkey's text for a double (d2string): integers as integers, else fpconv's layout."""
    if value != value:
        return b"nan"
    if math.isinf(value):
        return b"inf" if value > 0 else b"-inf"
    if value == 0:
        return b"0" if math.copysign(1.0, value) > 0 else b"-0"
    if -_LL_HALF <= value <= _LL_HALF and value.is_integer():
        return b"%d" % int(value)
    return _fpconv_dtoa(value).encode()


def _fpconv_dtoa(value: float) -> str:
    """fpconv's emit rules over the shortest round-trip digits (value = DIGITS * 10**k).

    Plain integer digits when k >= 0 and the exponent is below ndigits + 7; a plain decimal
    when k < 0 and (k > -7 or the exponent is below 4); scientific (`1.5e+20`, `1e-7`)
    otherwise. fpconv's Grisu2 very rarely picks a longer digit string than the shortest
    one Python gives; those few values differ in their last digits.
    """
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp = text.partition("e")
    int_part, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (int_part + frac).lstrip("0")
    k = (int(exp) if exp else 0) - len(frac)
    trimmed = digits.rstrip("0")
    k += len(digits) - len(trimmed)
    digits = trimmed
    ndigits = len(digits)
    sci_exp = k + ndigits - 1
    if k >= 0 and abs(sci_exp) < ndigits + 7:
        return sign + digits + "0" * k
    if k < 0 and (k > -7 or abs(sci_exp) < 4):
        point = ndigits + k
        if point <= 0:
            return sign + "0." + "0" * -point + digits
        return sign + digits[:point] + "." + digits[point:]
    head = digits[0] + ("." + digits[1:] if ndigits > 1 else "")
    return "%s%se%s%d" % (sign, head, "-" if sci_exp < 0 else "+", abs(sci_exp))


def _bulk(v: bytes) -> bytes:
    n = len(v)
    if n < _TABLE_SIZE:
        return BULK_HEADS[n] + v + CRLF
    return b"$%d\r\n%s\r\n" % (n, v)


def _simple(v: bytes) -> bytes:
    return b"+" + v + CRLF


def _error(v: ReplyError) -> bytes:
    return b"-" + v.message.replace(b"\r", b" ").replace(b"\n", b" ") + CRLF


def _int(v: int) -> bytes:
    return INT_WIRES[v] if 0 <= v < _TABLE_SIZE else b":%d\r\n" % v


def _raw(v: bytes) -> bytes:
    return v


class Encoder:
    """Encodes typed replies for one protocol version (2 or 3)."""

    def __init__(self, protocol: int) -> None:
        self.protocol = protocol
        resp3 = protocol == 3
        self.null = b"_\r\n" if resp3 else b"$-1\r\n"
        self.null_array = b"_\r\n" if resp3 else b"*-1\r\n"
        table: dict[type, Callable[[Any], bytes]] = {
            bytes: _bulk,
            Simple: _simple,
            int: _int,
            type(None): self._null,
            list: self._array,
            tuple: self._array,
            ReplyError: _error,
            Raw: _raw,
            _NullArray: self._null_array,
            Multi: lambda v: b"".join([self.encode(i) for i in v]),
        }
        if resp3:
            table.update(
                {
                    float: lambda v: b"," + format_double(v) + CRLF,
                    bool: lambda v: b"#t\r\n" if v else b"#f\r\n",
                    dict: self._map,
                    SetReply: lambda v: self._aggregate(b"~", v),
                    Push: lambda v: self._aggregate(b">", v),
                    Verbatim: lambda v: b"=%d\r\ntxt:%s\r\n" % (len(v) + 4, v),
                    BigNumber: lambda v: b"(" + v + CRLF,
                }
            )
        else:
            resp2: dict[type, Callable[[Any], bytes]] = {
                    float: lambda v: _bulk(format_double(v)),
                    bool: lambda v: b":1\r\n" if v else b":0\r\n",
                    dict: self._flat_map,
                    SetReply: self._array,
                    Push: self._array,
                    Verbatim: _bulk,
                    BigNumber: _bulk,
                }
            table.update(resp2)
        self._table = table

    def _null(self, _v: None) -> bytes:
        return self.null

    def _null_array(self, _v: Any) -> bytes:
        return self.null_array

    def encode(self, value: Any) -> bytes:
        try:
            return self._table[type(value)](value)
        except KeyError:
            return self._encode_subclass(value)

    def _encode_subclass(self, value: Any) -> bytes:
        for kind in type(value).__mro__[1:]:
            fn = self._table.get(kind)
            if fn is not None:
                return fn(value)
        raise TypeError(f"cannot encode reply {value!r}")

    def _aggregate(self, prefix: bytes, items: Any) -> bytes:
        count = len(items)
        parts = [prefix, _COUNTS[count] if count < _TABLE_SIZE else b"%d\r\n" % count]
        if count <= SMALL_AGGREGATE:  # most replies: one join
            self._add_items(parts, items)
            return b"".join(parts)
        runs: list[bytes] = []
        rest = iter(items)
        for _ in range(0, count, SMALL_AGGREGATE):
            self._add_items(parts, islice(rest, SMALL_AGGREGATE))
            if len(parts) >= JOIN_RUN:
                runs.append(b"".join(parts))
                parts.clear()
        runs.append(b"".join(parts))
        return b"".join(runs)

    def _add_items(self, parts: list[bytes], items: Any) -> None:
        """The framed `items` of an aggregate, added to `parts` (joined by the caller)."""
        for i in items:
            kind = type(i)
            # bulk strings, the commonest items, are framed inline (no dispatch): header,
            # payload and CRLF as parts of the one join, nothing allocated per item
            if kind is bytes:
                n = len(i)
                parts.append(BULK_HEADS[n] if n < _TABLE_SIZE else b"$%d\r\n" % n)
                parts.append(i)
                parts.append(CRLF)
            elif kind is list or kind is tuple:  # a nested array (a stream entry...)
                n = len(i)
                if n > SMALL_AGGREGATE:  # joined in runs of its own
                    parts.append(self._aggregate(b"*", i))
                    continue
                parts.append(_ARRAY_HEADS[n])  # else into the same join
                self._add_items(parts, i)
            elif kind is int:  # the same in RESP2 and RESP3
                parts.append(INT_WIRES[i] if 0 <= i < _TABLE_SIZE else b":%d\r\n" % i)
            else:
                parts.append(self.encode(i))

    def _array(self, items: Any) -> bytes:
        return self._aggregate(b"*", items)

    # Any, not dict: a compiled call to a dict's len/items would skip _PairMap's own
    def _map(self, d: Any) -> bytes:
        return self._pairs(b"%%%d\r\n" % len(d), d)

    def _flat_map(self, d: Any) -> bytes:
        return self._pairs(b"*%d\r\n" % (2 * len(d)), d)

    def _pairs(self, head: bytes, d: Any) -> bytes:
        parts = [head]
        runs: list[bytes] | None = None  # a big map's parts, JOIN_RUN at a time
        for k, v in d.items():
            if type(k) is bytes and type(v) is bytes:  # a field and its value: inline
                n = len(k)
                parts.append(BULK_HEADS[n] if n < _TABLE_SIZE else b"$%d\r\n" % n)
                parts.append(k)
                parts.append(CRLF)
                n = len(v)
                parts.append(BULK_HEADS[n] if n < _TABLE_SIZE else b"$%d\r\n" % n)
                parts.append(v)
                parts.append(CRLF)
            else:
                parts.append(self.encode(k))  # a native call (a held method is a generic one)
                parts.append(self.encode(v))
            if len(parts) >= JOIN_RUN:
                if runs is None:
                    runs = []
                runs.append(b"".join(parts))
                parts.clear()
        if runs is None:
            return b"".join(parts)
        runs.append(b"".join(parts))
        return b"".join(runs)


def join_after(head: bytes, parts: list[bytes]) -> bytes:
    """`head` then every one of `parts`, joined JOIN_RUN at a time (EXEC's replies)."""
    if len(parts) <= JOIN_RUN:
        return head + b"".join(parts)
    runs = [head]
    for start in range(0, len(parts), JOIN_RUN):
        runs.append(b"".join(parts[start:start + JOIN_RUN]))
    return b"".join(runs)


RESP2 = Encoder(2)
RESP3 = Encoder(3)
ENCODERS = {2: RESP2, 3: RESP3}

__all__ = ["BULK_HEADS", "CRLF", "INT_WIRES", "JOIN_RUN", "Encoder", "join_after", "RESP2", "RESP3", "ENCODERS", "format_double", "NULL_ARRAY"]
