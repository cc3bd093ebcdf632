"""What every JSON.* verb shares: reading its arguments as RedisJSON does, opening the
document at a key, finding and changing values by location, RedisJSON 2.x's error
texts, and the write funnel (each change announced as the verb's `json.*` event of
class `d`, a module's key-space events)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from fakekey.codecs.errors import wrong_args
from fakekey.codecs.numbers import try_int
from fakekey.modules.stack.json_path import Location, Match, Path, PathError, Query
from fakekey.modules.stack.json_text import JsonError, parse
from fakekey.modules.stack.json_value import JsonValue
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

WRITE: Final = "write"
WRITE_GROWS: Final = "write denyoom"
READ: Final = "readonly"
KEY_RW: Final = "RW update"
KEY_RO: Final = "RO access"
EVENT_CLASS: Final = "d"  # REDISMODULE_NOTIFY_MODULE

NO_KEY = ReplyError("ERR could not perform this operation on a key that doesn't exist")
WRONG_REDIS_TYPE = ReplyError("Existing key has wrong Redis type")
NOT_INTEGER = ReplyError("Couldn't parse as integer")
NOT_UTF8 = ReplyError("Couldn't parse as UTF-8 string")
SYNTAX = ReplyError("ERR syntax error")
GONE = ReplyError("ERR Path does not exist")  # a location that moved under a multi-path write


def arity_error(argv: list[bytes]) -> ReplyError:
    """RedisModule_WrongArity: the verb's name as it was sent."""
    return wrong_args(argv[0].decode("utf-8", "replace"))


def text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NOT_UTF8 from None


def integer(raw: bytes) -> int:
    value = try_int(raw)
    if value is None:
        raise NOT_INTEGER
    return value


def json_arg(raw: bytes) -> Any:
    """A JSON value argument; serde_json's message when it is none."""
    try:
        return parse(raw)
    except JsonError as exc:
        raise ReplyError(str(exc)) from None


def path_arg(raw: bytes) -> Path:
    return Path(text(raw))


def query_of(path: Path) -> Query:
    try:
        return path.query
    except PathError as exc:
        raise ReplyError(str(exc)) from None


def select(path: Path, root: Any) -> list[Match]:
    return query_of(path).select(root)


def path_missing(shown: str) -> ReplyError:
    return ReplyError(f"ERR Path '{shown}' does not exist")


def path_missing_or(shown: str, why: str) -> ReplyError:
    return ReplyError(f"ERR Path '{shown}' does not exist or {why}")


def expected(kind: str, found: str) -> ReplyError:
    return ReplyError(f"WRONGTYPE wrong type of path value - expected {kind} but found {found}")


def first_value(path: Path, root: Any) -> Any:
    """A legacy path's value: its first match (RedisJSON's get_first)."""
    matches = select(path, root)
    if not matches:
        raise path_missing(path.fixed)
    return matches[0][0]


def json_type(value: Any) -> str:
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    if kind is str:
        return "string"
    if kind is list:
        return "array"
    return "object"


def is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


# --- documents ---------------------------------------------------------------------------


def read_doc(c: Client, key: bytes) -> JsonValue | None:
    """The document at `key`, None if there is none; any other type is refused."""
    value = c.db.lookup(key)
    if value is None or type(value) is JsonValue:
        return value
    raise WRONG_REDIS_TYPE


def existing_doc(c: Client, key: bytes) -> JsonValue:
    doc = read_doc(c, key)
    if doc is None:
        raise NO_KEY
    return doc


def changed(c: Client, key: bytes, event: str) -> None:
    """A document changed in place (its TTL stays): through the write funnel."""
    c.db.written(key, event, EVENT_CLASS)


def created(c: Client, key: bytes, root: Any, event: str) -> None:
    c.db.set_value(key, JsonValue(root), event=event, klass=EVENT_CLASS)


def deleted(c: Client, key: bytes, event: str) -> None:
    c.db.delete(key, event=None)
    if c.state.notify_flags:
        c.state.notify(c.db, EVENT_CLASS, event, key)


# --- values by location ------------------------------------------------------------------


def value_at(root: Any, loc: Location) -> Any:
    """The value at `loc`; GONE when an earlier change of the same command moved it."""
    node: Any = root
    for step in loc:
        if not has_member(node, step):
            raise GONE
        node = node[step]
    return node


def has_member(node: Any, step: str | int) -> bool:
    if type(node) is dict:
        return type(step) is str and step in node
    return type(node) is list and type(step) is int and 0 <= step < len(node)


def replace_at(doc: JsonValue, loc: Location, value: Any) -> None:
    if not loc:
        doc.root = value
        return
    parent = value_at(doc.root, loc[:-1])
    if not has_member(parent, loc[-1]):
        raise GONE
    parent[loc[-1]] = value


def remove_at(root: Any, loc: Location) -> bool:
    """Remove the value at `loc` from its container. An object's last member takes the
    removed one's place, as RedisJSON's objects do."""
    try:
        parent = value_at(root, loc[:-1])
    except ReplyError:
        return False
    last = loc[-1]
    if type(parent) is list and type(last) is int and last < len(parent):
        del parent[last]
        return True
    if type(parent) is dict and last in parent:
        remove_member(parent, str(last))
        return True
    return False


def remove_member(obj: dict[str, Any], name: str) -> None:
    """Remove `name`, the last member moving into its place (ijson's swap_remove)."""
    keys = list(obj)
    if keys[-1] == name:
        del obj[name]
        return
    items = list(obj.items())
    at = keys.index(name)
    items[at] = items[-1]
    items.pop()
    obj.clear()
    obj.update(items)
