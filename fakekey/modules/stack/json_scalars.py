"""RedisJSON's verbs on numbers and strings: JSON.NUMINCRBY, JSON.NUMMULTBY,
JSON.NUMPOWBY and JSON.STRAPPEND. Integer arithmetic wraps at 64 bits as RedisJSON's does;
an integer meeting a float gives a float (`2 + 0.5` is 2.5, `2 * 1.0` is 2.0)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import JSON_MODULE, STACK_SINCE
from fakekey.modules.stack.json_access import (
    KEY_RW,
    WRITE,
    WRITE_GROWS,
    arity_error,
    changed,
    existing_doc,
    expected,
    is_number,
    json_arg,
    path_arg,
    path_missing_or,
    replace_at,
    select,
    text,
)
from fakekey.modules.stack.json_path import Path
from fakekey.modules.stack.json_text import dumps, scalar_text
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

BAD_NUMBER = ReplyError("bad input number")
NOT_A_NUMBER = ReplyError("result is not a number")
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def declare(name: str, summary: str, flags: str = WRITE) -> Any:
    return command(name, -1, flags, keys=keys_range(1, flags=KEY_RW), group="module",
                   module=JSON_MODULE, since=STACK_SINCE, summary=summary)


# --- numbers -----------------------------------------------------------------------------


def wrapped(value: int) -> int:
    """An i64 result as Rust's wrapping arithmetic leaves it."""
    value &= (1 << 64) - 1
    return value - (1 << 64) if value > I64_MAX else value


def int_pow(base: int, exponent: int) -> int:
    return wrapped(pow(base, exponent & 0xFFFFFFFF, 1 << 64))  # i64::pow(exp as u32)


def float_pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except (OverflowError, ValueError):
        return math.nan


INT_OPS: dict[str, Callable[[int, int], int]] = {
    "json.numincrby": lambda a, b: wrapped(a + b),
    "json.nummultby": lambda a, b: wrapped(a * b),
    "json.numpowby": int_pow,
}
FLOAT_OPS: dict[str, Callable[[float, float], float]] = {
    "json.numincrby": lambda a, b: a + b,
    "json.nummultby": lambda a, b: a * b,
    "json.numpowby": float_pow,
}


class Operand:
    """The number argument, read the first time a number needs it (RedisJSON reads it
    per value, so a bad one is an error only where there is a number to change)."""

    __slots__ = ("raw", "_value")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._value: int | float | None = None

    def value(self) -> int | float:
        if self._value is None:
            number = json_arg(self.raw)
            if not is_number(number):
                raise BAD_NUMBER
            self._value = number
        return self._value


def apply_op(verb: str, current: int | float, operand: int | float) -> int | float:
    if type(current) is int and type(operand) is int and I64_MIN <= current <= I64_MAX \
            and I64_MIN <= operand <= I64_MAX:
        return INT_OPS[verb](current, operand)
    result = FLOAT_OPS[verb](float(current), float(operand))
    if math.isnan(result) or math.isinf(result):
        raise NOT_A_NUMBER
    return result


def number_verb(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 4:
        raise arity_error(argv)
    verb = argv[0].decode("utf-8", "replace").lower()
    key, path = argv[1], path_arg(argv[2])
    text(argv[3])
    operand = Operand(argv[3])
    doc = existing_doc(c, key)
    results: list[Any] = []
    for value, loc in select(path, doc.root):
        if not is_number(value):
            results.append(None)
            continue
        result = apply_op(verb, value, operand.value())
        replace_at(doc, loc, result)
        results.append(result)
    numbers = [r for r in results if r is not None]
    if path.legacy and not numbers and c.protocol != 3:
        raise path_missing_or(path.fixed, "does not contains a number")
    if numbers:
        changed(c, key, verb)
    if c.protocol == 3:
        return results
    if path.legacy:
        return scalar_text(numbers[-1]).encode("utf-8")
    return dumps(results).encode("utf-8")


declare("json.numincrby", "Adds a number to the numbers at a path.")(number_verb)
declare("json.nummultby", "Multiplies the numbers at a path by a number.")(number_verb)
declare("json.numpowby", "Raises the numbers at a path to a power.")(number_verb)


# --- strings -----------------------------------------------------------------------------


@declare("json.strappend", "Appends a JSON string to the strings at a path.", WRITE_GROWS)
def json_strappend(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    if len(argv) > 3:
        path, raw = path_arg(argv[2]), argv[3]
    else:
        path, raw = Path("."), argv[2]
    shown = text(raw)
    doc = existing_doc(c, argv[1])
    matches = select(path, doc.root)
    if path.legacy and not any(type(v) is str for v, _ in matches):
        raise path_missing_or(path.fixed, "not a string")
    suffix: str | None = None
    answers: list[Any] = []
    for value, loc in matches:
        if type(value) is not str:
            if not path.legacy:
                answers.append(None)
            continue
        if suffix is None:
            parsed = json_arg(raw)
            if type(parsed) is not str:
                raise expected("string", shown)
            suffix = parsed
        grown = value + suffix
        replace_at(doc, loc, grown)
        answers.append(len(grown.encode("utf-8")))
    if suffix is not None:
        changed(c, key=argv[1], event="json.strappend")
    return answers[-1] if path.legacy else answers
