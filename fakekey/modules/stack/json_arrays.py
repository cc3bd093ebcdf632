"""RedisJSON's array verbs that write: JSON.ARRAPPEND, JSON.ARRINSERT, JSON.ARRPOP and
JSON.ARRTRIM. A JSONPath answers one entry per match (null where the match is no array);
a legacy path changes every array it matches and answers for the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fakekey.codecs.numbers import try_int
from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import JSON_MODULE, STACK_SINCE
from fakekey.modules.stack.json_access import (
    KEY_RW,
    WRITE,
    WRITE_GROWS,
    arity_error,
    changed,
    existing_doc,
    integer,
    json_arg,
    path_arg,
    path_missing_or,
    select,
)
from fakekey.modules.stack.json_path import Path
from fakekey.modules.stack.json_text import dumps
from fakekey.modules.stack.json_value import deep_copy
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

INDEX_OUT_OF_BOUNDS = ReplyError("ERR index out of bounds")
LAST = (1 << 63) - 1  # JSON.ARRPOP without a path pops the last element


def declare(name: str, summary: str, flags: str = WRITE) -> Any:
    return command(name, -1, flags, keys=keys_range(1, flags=KEY_RW), group="module",
                   module=JSON_MODULE, since=STACK_SINCE, summary=summary)


def on_arrays(c: Client, key: bytes, path: Path, shown: str, event: str,
              change: Callable[[list[Any]], Any]) -> Any:
    """Apply `change` to every array `path` matches; a JSONPath answers each result (null
    for a match that is no array), a legacy path the last one (an error when it matches
    no array, naming the path as `shown`). A result of None changed nothing."""
    doc = existing_doc(c, key)
    answers: list[Any] = []
    touched = False
    for value, _ in select(path, doc.root):
        if type(value) is list:
            result = change(value)
            touched = touched or result is not None
            answers.append(result)
        elif not path.legacy:
            answers.append(None)
    if path.legacy and not answers:
        raise path_missing_or(shown, "not an array")
    if touched and (not path.legacy or answers[-1] is not None):
        changed(c, key, event)
    return answers if not path.legacy else answers[-1]


def copies(values: list[Any]) -> list[Any]:
    return [deep_copy(value) for value in values]


@declare("json.arrappend", "Appends JSON values to the arrays at a path.", WRITE_GROWS)
def json_arrappend(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 4:
        raise arity_error(argv)
    path = path_arg(argv[2])
    values = [json_arg(raw) for raw in argv[3:]]

    def append(array: list[Any]) -> int:
        array.extend(copies(values))
        return len(array)
    return on_arrays(c, argv[1], path, path.original, "json.arrappend", append)


@declare("json.arrinsert", "Inserts JSON values into the arrays at a path before an index.",
         WRITE_GROWS)
def json_arrinsert(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 5:
        raise arity_error(argv)
    path = path_arg(argv[2])
    index = integer(argv[3])
    values = [json_arg(raw) for raw in argv[4:]]

    def insert(array: list[Any]) -> int:
        at = len(array) + index if index < 0 else index
        if not 0 <= at <= len(array):
            raise INDEX_OUT_OF_BOUNDS
        array[at:at] = copies(values)
        return len(array)
    return on_arrays(c, argv[1], path, path.fixed, "json.arrinsert", insert)


def start_index(index: int, length: int) -> int:
    """RedisJSON's index into an array: from the end when negative, clamped to it."""
    return max(0, length + index) if index < 0 else min(index, length - 1)


@declare("json.arrpop", "Removes and returns an element of the arrays at a path.")
def json_arrpop(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    if len(argv) == 2:
        path, index = Path("."), LAST
    else:
        path = path_arg(argv[2])
        given = try_int(argv[3]) if len(argv) > 3 else None
        index = -1 if given is None else given

    def pop(array: list[Any]) -> bytes | None:
        if not array:
            return None
        return dumps(array.pop(start_index(index, len(array)))).encode("utf-8")
    return on_arrays(c, argv[1], path, path.fixed, "json.arrpop", pop)


@declare("json.arrtrim", "Trims the arrays at a path to a range of their elements.")
def json_arrtrim(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 5:
        raise arity_error(argv)
    path = path_arg(argv[2])
    start, stop = integer(argv[3]), integer(argv[4])

    def trim(array: list[Any]) -> int:
        length = len(array)
        if not length:
            return 0
        last = start_index(stop, length)
        first = start_index(start, length) if start < 0 or start < length else last + 1
        array[:] = array[first:last + 1] if first <= last else []
        return len(array)
    return on_arrays(c, argv[1], path, path.fixed, "json.arrtrim", trim)
