"""RedisJSON's writing verbs on whole documents and members: JSON.SET, JSON.MSET,
JSON.MERGE, JSON.DEL, JSON.FORGET, JSON.CLEAR and JSON.TOGGLE, with RedisJSON 2.x's
replies. A document changes in place (its TTL stays); only a write at the root of a
missing key creates one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.core.registry import command, keys_range
from fakekey.modules.stack import JSON_MODULE, STACK_SINCE
from fakekey.modules.stack.json_access import (
    KEY_RW,
    SYNTAX,
    WRITE,
    WRITE_GROWS,
    arity_error,
    changed,
    created,
    deleted,
    existing_doc,
    json_arg,
    path_arg,
    path_missing_or,
    query_of,
    read_doc,
    remove_at,
    remove_member,
    replace_at,
    select,
    text,
    value_at,
)
from fakekey.modules.stack.json_path import INDEXES, KEY, Location, Path
from fakekey.modules.stack.json_value import JsonValue, deep_copy
from fakekey.resp.replies import OK, ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client

NEW_AT_ROOT = ReplyError("ERR new objects must be created at the root")
WRONG_STATIC = ReplyError("Err wrong static path")
OUT_OF_RANGE = ReplyError("ERR array index out of range")
WRONG_FORMAT = ReplyError("ERR wrong format")
INPUT_FORMATS = ("JSON", "STRING")
NX, XX = "NX", "XX"


def declare(name: str, summary: str, flags: str = WRITE, last_key: int = 0, step: int = 1) -> Any:
    return command(name, -1, flags, keys=keys_range(1, last_key, step, flags=KEY_RW),
                   group="module", module=JSON_MODULE, since=STACK_SINCE, summary=summary)


# --- where a write goes ------------------------------------------------------------------


class Target:
    """A place a value goes: an existing value to replace (`name` None), or a new member
    `name` of the object at `loc`."""

    __slots__ = ("loc", "name")

    def __init__(self, loc: Location, name: str | None = None) -> None:
        self.loc = loc
        self.name = name


def set_targets(root: Any, path: Path, condition: str | None) -> list[Target]:
    """Where JSON.SET puts its value: every match (unless NX), else (unless XX) the one
    new member a static path names."""
    query = query_of(path)
    if condition != NX:
        matches = query.select(root)
        if matches:
            return [Target(loc) for _, loc in matches]
    if condition == XX:
        return []
    if not query.is_static():
        raise WRONG_STATIC
    parent, last = query.parent_and_last()
    if last[0] == INDEXES:  # an index past the end is never created
        if not query.select(root):
            raise OUT_OF_RANGE
        return []
    name = last[1] if last[0] == KEY else last[1][0]
    return [Target(loc, name) for _, loc in parent.select(root)]


def put(doc: JsonValue, target: Target, value: Any) -> bool:
    """Store `value` at `target`; False when there is no such place (a new member of
    something that is no object, or a name already there)."""
    try:
        if target.name is None:
            replace_at(doc, target.loc, value)
            return True
        parent = value_at(doc.root, target.loc)
    except ReplyError:
        return False
    if type(parent) is not dict or target.name in parent:
        return False
    parent[target.name] = value
    return True


def put_all(doc: JsonValue, targets: list[Target], value: Any) -> bool:
    updated = False
    for i, target in enumerate(targets):
        updated = put(doc, target, value if i == len(targets) - 1 else deep_copy(value)) or updated
    return updated


def input_format(argv: list[bytes], at: int) -> int:
    """FORMAT's argument (JSON text either way); the index after it."""
    if at >= len(argv):
        raise arity_error(argv)
    if text(argv[at]) not in INPUT_FORMATS:
        raise WRONG_FORMAT
    return at + 1


# --- JSON.SET, JSON.MSET, JSON.MERGE -----------------------------------------------------


@declare("json.set", "Sets the JSON value at a path of a document.", WRITE_GROWS)
def json_set(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 4:
        raise arity_error(argv)
    key, path = argv[1], path_arg(argv[2])
    text(argv[3])
    condition: str | None = None
    i = 4
    while i < len(argv):
        word = text(argv[i]).upper()
        i += 1
        if word in (NX, XX) and condition is None:
            condition = word
        elif word == "FORMAT":
            i = input_format(argv, i)
        else:
            raise SYNTAX
    doc = read_doc(c, key)
    value = json_arg(argv[3])
    if doc is None:
        if condition == XX:
            return None
        if not path.is_root():
            raise NEW_AT_ROOT
        created(c, key, value, "json.set")
        return OK
    if path.is_root():
        if condition == NX:
            return None
        doc.root = value
        changed(c, key, "json.set")
        return OK
    targets = set_targets(doc.root, path, condition)
    if not targets or not put_all(doc, targets, value):
        return None
    changed(c, key, "json.set")
    return OK


@declare("json.mset", "Sets JSON values at paths of several documents.", WRITE_GROWS, -1, 3)
def json_mset(c: Client, argv: list[bytes]) -> Any:
    if len(argv) == 1 or (len(argv) - 1) % 3:
        raise arity_error(argv)
    planned: list[tuple[bytes, list[Target] | None, Any]] = []
    for i in range(1, len(argv), 3):  # every triplet is checked before anything is written
        key = argv[i]
        doc = read_doc(c, key)
        path = path_arg(argv[i + 1])
        targets = None
        if not path.is_root():
            if doc is None:
                raise NEW_AT_ROOT
            targets = set_targets(doc.root, path, None)
        planned.append((key, targets, json_arg(argv[i + 2])))
    for key, targets, value in planned:
        doc = read_doc(c, key)
        if targets is None:
            if doc is None:
                created(c, key, value, "json.mset")
                continue
            doc.root = value
        elif doc is None or not targets or not put_all(doc, targets, value):
            continue
        changed(c, key, "json.mset")
    return OK


def merged(target: Any, patch: Any) -> Any:
    """RFC 7396's merge patch: null removes a member, an object merges into an object,
    anything else replaces."""
    if type(patch) is not dict:
        return patch
    if type(target) is not dict:
        target = {}
    for name, value in patch.items():
        if value is None:
            if name in target:
                remove_member(target, name)
        else:
            target[name] = merged(target.get(name), value)
    return target


@declare("json.merge", "Merges a JSON value into the values at a path of a document.", WRITE_GROWS)
def json_merge(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 4:
        raise arity_error(argv)
    key, path = argv[1], path_arg(argv[2])
    text(argv[3])
    i = 4
    while i < len(argv):
        if text(argv[i]).upper() != "FORMAT":
            raise SYNTAX
        i = input_format(argv, i + 1)
    doc = read_doc(c, key)
    patch = json_arg(argv[3])
    if doc is None:
        if not path.is_root():
            raise NEW_AT_ROOT
        created(c, key, patch, "json.merge")
        return OK
    if path.is_root():
        doc.root = merged(doc.root, patch)
        changed(c, key, "json.merge")
        return OK
    updated = False
    for target in set_targets(doc.root, path, None):
        if target.name is None:
            try:
                current = value_at(doc.root, target.loc)
            except ReplyError:
                continue
            replace_at(doc, target.loc, merged(current, deep_copy(patch)))
            updated = True
        else:
            updated = put(doc, target, deep_copy(patch)) or updated
    if not updated:
        return None
    changed(c, key, "json.merge")
    return OK


# --- JSON.DEL, JSON.FORGET, JSON.CLEAR, JSON.TOGGLE --------------------------------------


def json_del(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    key = argv[1]
    path = path_arg(argv[2]) if len(argv) > 2 else Path(".")
    doc = read_doc(c, key)
    if doc is None:
        return 0
    if path.is_root():
        deleted(c, key, "json.del")
        return 1
    removed = 0
    for loc in deletion_order([loc for _, loc in select(path, doc.root)]):
        removed += remove_at(doc.root, loc)
    if removed:
        changed(c, key, "json.del")
    return removed


declare("json.del", "Deletes the JSON values at a path of a document.")(json_del)
declare("json.forget", "Deletes the JSON values at a path of a document (JSON.DEL).")(json_del)


def deletion_order(locs: list[Location]) -> list[Location]:
    """The locations to remove: none inside another one, the higher index of an array
    first, so that each removal leaves the next one's location as it was."""
    unique = set(locs)
    kept = [loc for loc in unique
            if loc and not any(loc[:n] in unique for n in range(1, len(loc)))]
    kept.sort(key=lambda loc: tuple((1, -s) if type(s) is int else (0, s) for s in loc))
    return kept


def clearable(value: Any) -> bool:
    kind = type(value)
    if kind is list or kind is dict:
        return bool(value)
    return (kind is int or kind is float) and value != 0


@declare("json.clear", "Empties the arrays and objects and zeroes the numbers at a path.")
def json_clear(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 2:
        raise arity_error(argv)
    key = argv[1]
    path = path_arg(argv[2]) if len(argv) > 2 else Path("$")
    doc = existing_doc(c, key)
    cleared = 0
    for value, loc in select(path, doc.root):
        if not clearable(value):
            continue
        if type(value) is list or type(value) is dict:
            value.clear()
        else:
            replace_at(doc, loc, 0)
        cleared += 1
    if cleared:
        changed(c, key, "json.clear")
    return cleared


@declare("json.toggle", "Toggles the booleans at a path of a document.", WRITE_GROWS)
def json_toggle(c: Client, argv: list[bytes]) -> Any:
    if len(argv) < 3:
        raise arity_error(argv)
    key, path = argv[1], path_arg(argv[2])
    doc = existing_doc(c, key)
    answers: list[Any] = []
    last = None
    for value, loc in select(path, doc.root):
        if type(value) is bool:
            last = not value
            replace_at(doc, loc, last)
            answers.append(int(last))
        else:
            answers.append(None)
    if last is not None:
        changed(c, key, "json.toggle")
    if not path.legacy:
        return answers
    if last is None:
        raise path_missing_or(path.fixed, "not a bool")
    return b"true" if last else b"false"
