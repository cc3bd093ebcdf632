"""RedisJSON's JSON text: reading a document as serde_json reads it (its numbers, its depth
limit, its error messages) and writing it as serde_json writes it (compact, or with
JSON.GET's INDENT, NEWLINE and SPACE; floats in Rust's shortest form: `1e16`, `0.00001`).

A document is plain Python: None, bool, int (a 64-bit one), float, str, list, and dict
(its keys in their order, as RedisJSON's objects keep them)."""

from __future__ import annotations

import json
import math
import re
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import Any, NoReturn

_LONE_SURROGATE = re.compile(  # an escaped surrogate without its other half
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
# a long integer, a big exponent, or -0 (inside a string too: then merely the slow way)
_SPECIAL_NUMBER = re.compile(r"\d{19}|[eE][+-]?\d{3}|-0(?![.\d])")
_EXPONENT_FORM = re.compile(r"\d[eE][+-]?\d")
MAX_DEPTH = 128  # serde_json's recursion limit, which RedisJSON keeps
I64_MIN = -(1 << 63)
U64_MAX = (1 << 64) - 1


class JsonError(ValueError):
    """Text that is not a JSON value; the message is serde_json's."""


# --- reading -----------------------------------------------------------------------------


def _number_out_of_range(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JsonError("number out of range")
    return value


def _integer(text: str) -> int | float:
    """serde_json's integers are 64-bit: a bigger one is read as a float, and so is -0."""
    if text == "-0":
        return -0.0
    value = int(text)
    if I64_MIN <= value <= U64_MAX:
        return value
    return _number_out_of_range(text)


def _no_constant(text: str) -> Any:
    raise JsonError("expected value")


def parse(raw: bytes) -> Any:
    """The value `raw` holds; JsonError with serde_json's message when it holds none."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise JsonError("Couldn't parse as UTF-8 string") from None
    try:
        if _SPECIAL_NUMBER.search(text):  # numbers Python reads otherwise than serde_json
            value = json.loads(text, parse_int=_integer, parse_float=_number_out_of_range,
                               parse_constant=_no_constant)
        else:
            value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise JsonError(_Scanner(raw).first_error() or "expected value at line 1 column 1") from None
    # serde_json refuses what Python accepts here: deep nesting, lone surrogates
    suspicious = ("\\ud" in text or "\\uD" in text) and _LONE_SURROGATE.search(text)
    if suspicious or (text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(value)):
        problem = _Scanner(raw).first_error()
        if problem:
            raise JsonError(problem)
    return value


def _too_deep(value: Any) -> bool:
    """Whether containers nest deeper than serde_json's limit (a walk of the containers
    only, cheaper than scanning the text)."""
    if type(value) is not dict and type(value) is not list:
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        for child in (node.values() if type(node) is dict else node):
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))
    return False


_WHITESPACE = b" \t\n\r"
_ESCAPES = b'"\\/bfnrtu'
_DIGITS = b"0123456789"


class _Scanner:
    """Finds the first fault in a text and words it as serde_json does (its line and its
    column, in bytes)."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0
        self.depth = 0

    def first_error(self) -> str | None:
        try:
            self._value()
            self._skip()
            if self.pos < len(self.raw):
                self._fail("trailing characters")
        except JsonError as err:
            return str(err)
        return None

    def _fail(self, message: str, at: int | None = None) -> NoReturn:
        at = self.pos if at is None else at
        line_start = self.raw.rfind(b"\n", 0, at) + 1
        line = self.raw.count(b"\n", 0, at) + 1
        column = at - line_start + (1 if at < len(self.raw) else 0)
        raise JsonError(f"{message} at line {line} column {column}")

    def _skip(self) -> None:
        raw = self.raw
        while self.pos < len(raw) and raw[self.pos] in _WHITESPACE:
            self.pos += 1

    def _peek(self) -> int | None:
        return self.raw[self.pos] if self.pos < len(self.raw) else None

    def _value(self) -> None:
        self._skip()
        ch = self._peek()
        if ch is None:
            self._fail("EOF while parsing a value")
        elif ch == ord("{") or ch == ord("["):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                self._fail("recursion limit exceeded", self.pos + 1)
            self.pos += 1
            self._object() if ch == ord("{") else self._list()
            self.depth -= 1
        elif ch == ord('"'):
            self.pos += 1
            self._string()
        elif ch == ord("-") or ch in _DIGITS:
            self._number()
        elif ch in b"tfn":
            self._ident({ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}[ch])
        else:
            self._fail("expected value")

    def _ident(self, word: bytes) -> None:
        for expected in word:
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing a value")
            self.pos += 1
            if ch != expected:
                self._fail("expected ident", self.pos - 1)

    def _number(self) -> None:
        raw, start = self.raw, self.pos
        if raw[self.pos] == ord("-"):
            self.pos += 1
        self._digits(leading=True)
        if self._peek() == ord("."):
            self.pos += 1
            self._digits(leading=False)
        if self._peek() in (ord("e"), ord("E")):
            self.pos += 1
            if self._peek() in (ord("+"), ord("-")):
                self.pos += 1
            self._digits(leading=False)
        if math.isinf(float(raw[start:self.pos])):
            self._fail("number out of range", self.pos - 1)

    def _digits(self, leading: bool) -> None:
        ch = self._peek()
        if ch is None:
            self._fail("EOF while parsing a value")
        if ch not in _DIGITS:
            self._fail("invalid number")
        first = self.pos
        while self.pos < len(self.raw) and self.raw[self.pos] in _DIGITS:
            self.pos += 1
        if leading and self.raw[first] == ord("0") and self.pos - first > 1:
            self._fail("invalid number", first + 1)

    def _string(self) -> None:
        raw = self.raw
        while True:
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing a string")
            self.pos += 1
            if ch == ord('"'):
                return
            if ch < 0x20:
                self._fail("control character (\\u0000-\\u001F) found while parsing a string",
                           self.pos - 1)
            if ch == ord("\\"):
                esc = self._peek()
                if esc is None:
                    self._fail("EOF while parsing a string")
                self.pos += 1
                if esc not in _ESCAPES:
                    self._fail("invalid escape", self.pos - 1)
                if esc == ord("u"):
                    self._unicode_escape(raw)

    def _hex4(self, raw: bytes) -> int:
        digits = raw[self.pos:self.pos + 4]
        if len(digits) < 4:
            self.pos = len(raw)
            self._fail("EOF while parsing a string")
        try:
            code = int(digits, 16)
        except ValueError:
            self._fail("invalid escape", self.pos)
        self.pos += 4
        return code

    def _unicode_escape(self, raw: bytes) -> None:
        code = self._hex4(raw)
        if 0xDC00 <= code <= 0xDFFF:
            self._fail("lone leading surrogate in hex escape", self.pos - 1)
        if 0xD800 <= code <= 0xDBFF:
            if raw[self.pos:self.pos + 2] != b"\\u":
                self._fail("lone leading surrogate in hex escape", self.pos - 1)
            self.pos += 2
            low = self._hex4(raw)
            if not 0xDC00 <= low <= 0xDFFF:
                self._fail("lone leading surrogate in hex escape", self.pos - 1)

    def _list(self) -> None:
        self._skip()
        if self._peek() == ord("]"):
            self.pos += 1
            return
        while True:
            self._value()
            self._skip()
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing a list")
            self.pos += 1
            if ch == ord("]"):
                return
            if ch != ord(","):
                self._fail("expected `,` or `]`", self.pos - 1)
            self._skip()
            if self._peek() == ord("]"):
                self._fail("trailing comma")

    def _object(self) -> None:
        self._skip()
        if self._peek() == ord("}"):
            self.pos += 1
            return
        while True:
            self._skip()
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing an object")
            if ch != ord('"'):
                self._fail("key must be a string")
            self.pos += 1
            self._string()
            self._skip()
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing an object")
            if ch != ord(":"):
                self._fail("expected `:`")
            self.pos += 1
            self._value()
            self._skip()
            ch = self._peek()
            if ch is None:
                self._fail("EOF while parsing an object")
            self.pos += 1
            if ch == ord("}"):
                return
            if ch != ord(","):
                self._fail("expected `,` or `}`", self.pos - 1)
            self._skip()
            if self._peek() == ord("}"):
                self._fail("trailing comma")


# --- writing -----------------------------------------------------------------------------


def format_float(value: float) -> str:
    """A float as Rust's ryu writes it (serde_json's numbers): the shortest digits that
    read back the same, in plain form from 1e-5 up to 1e16 and `1.5e16` beyond."""
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    text = repr(value)
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    exponent = (int(exp_text) if exp_text else 0) - len(frac)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    point = length + exponent  # where the decimal point falls, counted from the first digit
    if exponent >= 0 and point <= 16:
        return f"{sign}{digits}{'0' * exponent}.0"
    if 0 < point <= 16:
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if -5 < point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if length == 1:
        return f"{sign}{digits}e{point - 1}"
    return f"{sign}{digits[0]}.{digits[1:]}e{point - 1}"


def dumps(value: Any) -> str:
    """The value as compact JSON text. Python's own encoder writes it as serde_json does
    but for floats in exponent form (`1e-05`, `1e+16`): those go the slow way."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not _EXPONENT_FORM.search(text):
        return text
    out: list[str] = []
    _compact(value, out)
    return "".join(out)


def _compact(value: Any, out: list[str]) -> None:
    kind = type(value)
    if kind is str:
        out.append(encode_basestring(value))
    elif kind is dict:
        out.append("{")
        first = True
        for key, item in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(encode_basestring(key))
            out.append(":")
            _compact(item, out)
        out.append("}")
    elif kind is list:
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _compact(item, out)
        out.append("]")
    else:
        out.append(scalar_text(value))


def scalar_text(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is float:
        return format_float(value)
    if type(value) is str:
        return str(encode_basestring(value))
    return str(value)


class Layout:
    """JSON.GET's INDENT, NEWLINE and SPACE: what goes before each nesting level, after
    each element and after each colon (serde_json's pretty formatter with these strings)."""

    __slots__ = ("indent", "newline", "space")

    def __init__(self, indent: str = "", newline: str = "", space: str = "") -> None:
        self.indent = indent
        self.newline = newline
        self.space = space

    def is_plain(self) -> bool:
        return not (self.indent or self.newline or self.space)


def dumps_laid_out(value: Any, layout: Layout) -> str:
    """The value as JSON text with `layout`'s strings (compact when it has none)."""
    if layout.is_plain():
        return dumps(value)
    out: list[str] = []
    _laid_out(value, layout, 0, out)
    return "".join(out)


def _laid_out(value: Any, layout: Layout, level: int, out: list[str]) -> None:
    kind = type(value)
    if kind is dict or kind is list:
        opener, closer = ("{", "}") if kind is dict else ("[", "]")
        out.append(opener)
        items = value.items() if kind is dict else enumerate(value)
        count = 0
        for key, item in items:
            out.append(layout.newline if not count else "," + layout.newline)
            out.append(layout.indent * (level + 1))
            if kind is dict:
                out.append(encode_basestring(str(key)))
                out.append(":" + layout.space)
            _laid_out(item, layout, level + 1, out)
            count += 1
        if count:
            out.append(layout.newline + layout.indent * level)
        out.append(closer)
    else:
        out.append(scalar_text(value))
