"""Argument parsing shared by every family. Each helper raises Valkey's exact error."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

# The shared errors and number parsers live below the commands; every name stays importable
# from here.
from fakekey.codecs.errors import (  # noqa: F401 - re-exported
    DB_RANGE,
    NO_SUCH_KEY,
    NOT_FLOAT,
    NOT_INTEGER,
    OVERFLOW,
    SYNTAX,
    WRONGTYPE,
    c_text,
    wrong_args,
)
from fakekey.codecs.longdouble import ld_parse, ld_round
from fakekey.codecs.numbers import (  # noqa: F401 - re-exported
    LLONG_MAX,
    LLONG_MIN,
    is_strtod_form,
    parse_float,
    parse_int,
    try_int,
)
from fakekey.core.state import protected_allowed
from fakekey.resp.replies import ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client


def parse_non_negative(raw: bytes, what: str) -> int:
    value = parse_int(raw)
    if value < 0:
        raise ReplyError(f"ERR {what} is negative")
    return value


def upper(raw: bytes) -> bytes:
    return raw.upper()


def unknown_subcommand(sub: bytes, parent: str) -> ReplyError:
    text = sub.decode("utf-8", "replace")
    return ReplyError(f"ERR unknown subcommand '{text[:128]}'. Try {parent.upper()} HELP.")


def parse_db_index(raw: bytes, count: int) -> int:
    index = parse_int(raw)
    if not 0 <= index < count:
        raise DB_RANGE
    return index


TIMEOUT_NOT_FLOAT = ReplyError("ERR timeout is not a float or out of range")
TIMEOUT_NEGATIVE = ReplyError("ERR timeout is negative")
TIMEOUT_RANGE = ReplyError("ERR timeout is out of range")


def parse_timeout(raw: bytes, now_ms: int) -> int:
    """A blocking command's timeout in seconds -> absolute deadline in ms (0 = forever)."""
    if raw.isdigit() and len(raw) <= 9:  # whole seconds, the common case: exact already
        ms: Fraction | float | int = int(raw) * 1000
    else:
        ms = _timeout_ms(raw)
    if ms > LLONG_MAX:  # +inf included
        raise TIMEOUT_RANGE
    ticks = math.ceil(ms) if ms != -math.inf else -1
    if ticks < 0:
        raise TIMEOUT_NEGATIVE
    if ticks == 0:
        return 0
    if ticks > LLONG_MAX - now_ms:
        raise TIMEOUT_RANGE
    return ticks + now_ms


def _timeout_ms(raw: bytes) -> Fraction | float:
    """getLongDoubleFromObject (strtold, at most MAX_LONG_DOUBLE_CHARS, no ERANGE), then
    `* 1000.0` in long double: the value Valkey takes the ceiling of."""
    try:
        seconds = ld_parse(raw)
    except ReplyError as err:
        err.__traceback__ = None  # a shared instance: its traceback would keep growing
        raise TIMEOUT_NOT_FLOAT from None
    if isinstance(seconds, float):  # +-inf
        return seconds
    return ld_round(seconds * 1000)




def help_lines(lines: list[str]) -> list[Simple]:
    """A HELP reply: one simple string per line, as Valkey's addReplyHelp sends it."""
    return [Simple(line.encode()) for line in lines]


def option_allows(c: Client, option: str) -> bool:
    """enable-debug-command, enable-module-command: yes, no, or local (loopback and unix
    socket clients)."""
    return protected_allowed(c.state.config[option], c)
