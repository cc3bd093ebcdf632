"""RedisJSON's reading verbs: JSON.GET, JSON.MGET, JSON.TYPE, JSON.STRLEN, JSON.ARRLEN,
JSON.ARRINDEX, JSON.OBJKEYS, JSON.OBJLEN, JSON.RESP and JSON.DEBUG, with RedisJSON 2.x's
replies. A JSONPath (`$...`) answers an array with one entry per match; a legacy path
(`.a.b`) answers its first match alone, and an error when there is none."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import JSON_MODULE, STACK_SINCE
from fakekey.modules.stack.json_access import (
    KEY_RO,
    NO_KEY,
    READ,
    arity_error,
    existing_doc,
    expected,
    first_value,
    integer,
    json_arg,
    json_type,
    path_arg,
    path_missing,
    path_missing_or,
    read_doc,
    select,
    text,
)
from fakekey.modules.stack.json_path import Path, PathError, same_value
from fakekey.modules.stack.json_text import Layout, dumps, dumps_laid_out
from fakekey.modules.stack.json_value import memory_of
from fakekey.resp.replies import ReplyError, Simple

if TYPE_CHECKING:
    from fakekey.core.client import Client

ROOT = "."  # the default path: the legacy root
OPTION_MAX_LEN = 8  # longer arguments of JSON.GET are paths, never options
REPLY_FORMATS = ("STRING", "EXPAND1", "EXPAND")
FORMAT_ON_RESP2 = ReplyError("ERR FORMAT argument is not supported on RESP2")
WRONG_REPLY_FORMAT = ReplyError("ERR wrong reply format")
UNKNOWN_DEBUG = ReplyError("ERR unknown subcommand - try `JSON.DEBUG HELP`")
DEBUG_HELP = [b"MEMORY <key> [path] - reports memory usage",
              b"HELP                - this message"]


def declare(name: str, summary: str, first_key: int = 1, last_key: int = 0,
            flags: str = READ) -> Any:
    return command(name, -1, flags, keys=keys_range(first_key, last_key, flags=KEY_RO),
                   group="module", module=JSON_MODULE, since=STACK_SINCE, summary=summary)


def optional_path(argv: list[bytes], at: int) -> Path:
    return path_arg(argv[at]) if len(argv) > at else Path(ROOT)


def encoded(value: str) -> bytes:
    return value.encode("utf-8")


def resp3(c: Client) -> bool:
    return c.protocol == 3


# --- JSON.GET and JSON.MGET --------------------------------------------------------------


class GetOptions:
    __slots__ = ("layout", "paths", "reply_format")

    def __init__(self) -> None:
        self.layout = Layout()
        self.paths: list[Path] = []
        self.reply_format = "STRING"


def get_options(c: Client, argv: list[bytes]) -> GetOptions:
    options = GetOptions()
    i = 2
    while i < len(argv):
        arg = text(argv[i])
        i += 1
        word = arg.upper() if len(arg) <= OPTION_MAX_LEN else ""
        if word == "NOESCAPE":
            continue
        if word not in ("INDENT", "NEWLINE", "SPACE", "FORMAT"):
            options.paths.append(Path(arg))
            continue
        if word == "FORMAT" and not resp3(c) and not options.paths:
            raise FORMAT_ON_RESP2
        if i >= len(argv):
            raise arity_error(argv)
        value = text(argv[i])
        i += 1
        if word == "FORMAT":
            if value not in REPLY_FORMATS:
                raise WRONG_REPLY_FORMAT
            options.reply_format = value
        else:
            setattr(options.layout, word.lower(), value)
    if not options.paths:
        options.paths.append(Path(ROOT))
    return options


@declare("json.get", "Returns the JSON values at paths of a document.")
def json_get(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    options = get_options(c, argv)
    doc = read_doc(c, argv[1])
    if doc is None:
        return None
    root, paths, layout = doc.root, options.paths, options.layout
    if resp3(c) and options.reply_format != "STRING":
        return [expanded_matches(path, root, options.reply_format) for path in paths]
    legacy = all(path.legacy for path in paths)
    if len(paths) > 1:
        return encoded(dumps_laid_out(several_paths(paths, root, legacy), layout))
    path = paths[0]
    if legacy:
        return encoded(dumps_laid_out(first_value(path, root), layout))
    return encoded(dumps_laid_out([value for value, _ in select(path, root)], layout))


def several_paths(paths: list[Path], root: Any, legacy: bool) -> dict[str, Any]:
    """JSON.GET with several paths: an object of each path (as given) and its answer;
    a path that does not compile is left out."""
    out: dict[str, Any] = {}
    missing = None
    for path in paths:
        try:
            values = path.query.values(root)
        except PathError:
            continue
        if not legacy:
            out[path.original] = values
        elif values:
            out[path.original] = values[0]
        elif missing is None:
            missing = path.original
    if missing is not None:
        raise path_missing(missing)
    return out


def expanded_matches(path: Path, root: Any, reply_format: str) -> list[Any]:
    try:
        values = path.query.values(root)
    except PathError:
        return []
    return [expanded(value, reply_format == "EXPAND") for value in values]


def expanded(value: Any, deep: bool) -> Any:
    """FORMAT EXPAND's RESP3 form of a value: maps, arrays, booleans, numbers; with
    EXPAND1 only the value itself, its members as JSON text."""
    kind = type(value)
    if kind is str:
        return encoded(value)
    if kind is list:
        return [expanded(item, False) if deep else member(item) for item in value]
    if kind is dict:
        return {encoded(k): expanded(item, False) if deep else member(item) for k, item in value.items()}
    return value


def member(value: Any) -> Any:
    if type(value) in (list, dict):
        return encoded(dumps(value))
    return expanded(value, False)


@declare("json.mget", "Returns the JSON values at a path of several documents.", 1, -2)
def json_mget(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    path = path_arg(argv[-1])
    return [mget_one(c, key, path) for key in argv[1:-1]]


def mget_one(c: Client, key: bytes, path: Path) -> Any:
    try:
        doc = read_doc(c, key)
        if doc is None:
            return None
        values = path.query.values(doc.root)
    except (ReplyError, PathError):
        return None
    if not path.legacy:
        return encoded(dumps(values))
    return encoded(dumps(values[0])) if values else None


# --- types, lengths, keys ----------------------------------------------------------------


def quiet_select(path: Path, root: Any) -> list[Any]:
    """A legacy path's matches for the verbs that answer null where it finds nothing,
    a path that does not compile included (JSON.TYPE, JSON.OBJKEYS, JSON.OBJLEN)."""
    try:
        return path.query.select(root)
    except PathError:
        return []


@declare("json.type", "Returns the types of the JSON values at a path.")
def json_type_cmd(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    doc = read_doc(c, argv[1])
    if path.legacy:
        reply: Any = None
        if doc is not None:
            matches = quiet_select(path, doc.root)
            reply = encoded(json_type(matches[0][0])) if matches else None
    else:
        reply = None if doc is None else [encoded(json_type(v)) for v, _ in select(path, doc.root)]
    return [reply] if resp3(c) else reply


@declare("json.strlen", "Returns the lengths of the JSON strings at a path.")
def json_strlen(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    if path.legacy:
        doc = read_doc(c, argv[1])
        if doc is None:
            return None
        value = first_value(path, doc.root)
        if type(value) is not str:
            raise expected("string", json_type(value))
        return len(value.encode("utf-8"))
    doc = existing_doc(c, argv[1])
    return [len(v.encode("utf-8")) if type(v) is str else None for v, _ in select(path, doc.root)]


@declare("json.arrlen", "Returns the lengths of the JSON arrays at a path.")
def json_arrlen(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    doc = read_doc(c, argv[1])
    if doc is None:
        if path.legacy:
            return None
        raise NO_KEY
    values = [v for v, _ in select(path, doc.root)]
    if not path.legacy:
        return [len(v) if type(v) is list else None for v in values]
    if not values:
        raise path_missing(path.original)
    if type(values[0]) is not list:
        raise path_missing_or(path.original, "not an array")
    return len(values[0])


@declare("json.objkeys", "Returns the member names of the JSON objects at a path.")
def json_objkeys(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    if path.legacy:
        doc = read_doc(c, argv[1])
        if doc is None:
            return None
        matches = quiet_select(path, doc.root)
        if not matches:
            return None
        value = matches[0][0]
        if type(value) is not dict:
            raise path_missing_or(path.fixed, "not an object")
        return [encoded(k) for k in value]
    doc = existing_doc(c, argv[1])
    return [[encoded(k) for k in v] if type(v) is dict else None for v, _ in select(path, doc.root)]


@declare("json.objlen", "Returns the member counts of the JSON objects at a path.")
def json_objlen(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    doc = read_doc(c, argv[1])
    if path.legacy:
        if doc is None:
            return None
        matches = quiet_select(path, doc.root)
        if not matches:
            return None
        value = matches[0][0]
        if type(value) is not dict:
            raise expected("object", json_type(value))
        return len(value)
    if doc is None:
        raise path_missing_or(path.fixed, "not an object")
    return [len(v) if type(v) is dict else None for v, _ in select(path, doc.root)]


# --- JSON.ARRINDEX -----------------------------------------------------------------------


@declare("json.arrindex", "Returns the first index of a JSON value in the arrays at a path.")
def json_arrindex(c: Client, argv: list[bytes]) -> Any:
    if not 4 <= len(argv) <= 6:
        raise arity_error(argv)
    path = path_arg(argv[2])
    text(argv[3])
    start = integer(argv[4]) if len(argv) > 4 else 0
    stop = integer(argv[5]) if len(argv) > 5 else 0
    doc = read_doc(c, argv[1])
    needle = json_arg(argv[3])
    if doc is None:
        raise path_missing(path.original)
    if not path.legacy:
        return [index_in(v, needle, start, stop) for v, _ in select(path, doc.root)]
    value = first_value(path, doc.root)
    found = index_in(value, needle, start, stop)
    if found is None:
        raise expected("array", json_type(value))
    return found


def index_in(array: Any, needle: Any, start: int, stop: int) -> int | None:
    """The first index of `needle` in array[start:stop] (stop 0: to the end), -1 when
    absent, None when `array` is not one."""
    if type(array) is not list:
        return None
    n = len(array)
    if not n:
        return -1
    start = max(0, n + start) if start < 0 else min(start, n - 1)
    stop = n if stop == 0 else (max(0, n + stop) if stop < 0 else min(stop, n))
    for i in range(start, stop):
        if same_json(array[i], needle):
            return i
    return -1


def same_json(a: Any, b: Any) -> bool:
    """ARRINDEX's equality: an integer is not a float (3 is not 3.0)."""
    if type(a) is not type(b):
        return False
    if type(a) is list:
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(k in b and same_json(v, b[k]) for k, v in a.items())
    return bool(same_value(a, b))


# --- JSON.RESP and JSON.DEBUG ------------------------------------------------------------


@declare("json.resp", "Returns the JSON values at a path in RESP form.")
def json_resp(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    path = optional_path(argv, 2)
    doc = read_doc(c, argv[1])
    if doc is None:
        return None
    if path.legacy:
        return resp_form(first_value(path, doc.root))
    return [resp_form(v) for v, _ in select(path, doc.root)]


def resp_form(value: Any) -> Any:
    """JSON.RESP's form: `[` or `{` first in each array, true and false as simple
    strings, floats as doubles."""
    kind = type(value)
    if kind is bool:
        return Simple(b"true" if value else b"false")
    if kind is str:
        return encoded(value)
    if kind is list:
        return [Simple(b"[")] + [resp_form(item) for item in value]
    if kind is dict:
        out: list[Any] = [Simple(b"{")]
        for key, item in value.items():
            out.append(encoded(key))
            out.append(resp_form(item))
        return out
    return value


@declare("json.debug", "Reports the memory a JSON value uses.", 2)
def json_debug(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    sub = text(argv[1]).upper()
    if sub == "HELP":
        return list(DEBUG_HELP)
    if sub != "MEMORY":
        raise UNKNOWN_DEBUG
    if len(argv) < 3:
        raise arity_error(argv)
    path = optional_path(argv, 3)
    doc = read_doc(c, argv[2])
    if path.legacy:
        return 0 if doc is None else memory_of(first_value(path, doc.root))
    return [] if doc is None else [memory_of(v) for v, _ in select(path, doc.root)]
