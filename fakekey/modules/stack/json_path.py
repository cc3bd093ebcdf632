"""RedisJSON's JSONPath: compiling a path (`$.a.b`, `$..x`, `$.arr[-1]`, `$[1:5:2]`,
`$.*`, `$['k','j']`, `$.items[?(@.price < 10 && @.tag == "x")]`) and selecting the
values it matches in a document, each with its location (a tuple of object keys and
array indexes), in RedisJSON's order.

A legacy path (`.a.b`, `a[0]`, `.`) is turned into JSONPath as RedisJSON 2.x does it
(`Path`): `$` in front, and the command answers its first match only."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Location = tuple[str | int, ...]
Match = tuple[Any, Location]

# step kinds
KEY, KEYS, ALL, INDEXES, RANGE, FILTER, SCAN = range(7)

_LITERAL = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_`~+#%$^/:")
_DIGITS = "0123456789"
_OPERATORS = (">=", "<=", "==", "!=", "=~", ">", "<")
_BRACKET_EXPECTED = ("['start:end:steps'], '<number>[,<number>,...]', "
                     "'<string>[,<string>,...]', '*'")
_NUMBER = re.compile(r"-?(?:[1-9][0-9]*|[0-9])")
_DECIMAL = re.compile(r"-?(?:[1-9][0-9]*|[0-9])(?:\.[0-9]+)?")


class PathError(ValueError):
    """A path that does not compile; the message is RedisJSON's (its position and a
    pointer into the path)."""


class Query:
    """A compiled path: its steps, and whether it names one place at most."""

    __slots__ = ("steps", "text")

    def __init__(self, steps: list[tuple[Any, ...]], text: str) -> None:
        self.steps = steps
        self.text = text

    def is_static(self) -> bool:
        """Only single keys and single indexes (a path JSON.SET may create at)."""
        for step in self.steps:
            if step[0] == KEY:
                continue
            if step[0] == KEYS and len(step[1]) == 1:
                continue
            if step[0] == INDEXES and len(step[1]) == 1:
                continue
            return False
        return True

    def select(self, doc: Any) -> list[Match]:
        out: list[Match] = []
        _walk(self.steps, 0, doc, (), doc, out)
        return out

    def values(self, doc: Any) -> list[Any]:
        return [value for value, _ in self.select(doc)]

    def parent_and_last(self) -> tuple[Query, tuple[Any, ...]]:
        """The query without its last step, and that step (for a static path)."""
        return Query(self.steps[:-1], self.text), self.steps[-1]


class Path:
    """A path argument: as given, as JSONPath, and whether it is a legacy one."""

    __slots__ = ("original", "fixed", "legacy", "_query")

    def __init__(self, text: str) -> None:
        self.original = text
        self.legacy = not text.startswith("$")
        if not self.legacy:
            self.fixed = text
        elif text == ".":
            self.fixed = "$"
        elif text.startswith("."):
            self.fixed = "$" + text
        else:
            self.fixed = "$." + text
        self._query: Query | None = None

    def is_root(self) -> bool:
        return self.fixed == "$"

    @property
    def query(self) -> Query:
        """The compiled path; PathError if it does not compile."""
        if self._query is None:
            self._query = compile_path(self.fixed)
        return self._query


# --- compiling ---------------------------------------------------------------------------


def compile_path(text: str) -> Query:
    return Query(_Parser(text).query(), text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, expected: str) -> PathError:
        text, pos = self.text, min(self.pos, len(self.text))
        if pos == len(text):
            where = f'"{text} <<<<----"'
        else:
            where = f'"{text[:pos]} ---->>>> {text[pos:]}"'
        return PathError(f"Error occurred on position {pos}, {where}, "
                         f"expected one of the following: {expected}.")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] == " ":
            self.pos += 1

    def peek(self, ahead: int = 0) -> str:
        self.skip()
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def take(self, word: str) -> bool:
        self.skip()
        if self.text.startswith(word, self.pos):
            self.pos += len(word)
            return True
        return False

    def query(self) -> list[tuple[Any, ...]]:
        if not self.take("$"):
            raise self.fail("'$'")
        steps = self.elements(first=True)
        self.skip()
        if self.pos < len(self.text):
            raise self.fail("'..', EOI")
        return steps

    def elements(self, first: bool) -> list[tuple[Any, ...]]:
        steps: list[tuple[Any, ...]] = []
        while True:
            ch = self.peek()
            if ch == "." and self.peek(1) == ".":
                self.take("..")
                steps.append((SCAN,))
                steps.append(self.after_scan())
            elif ch == ".":
                self.take(".")
                if self.peek() == "[":
                    steps.append(self.bracket())
                elif self.take("*"):
                    steps.append((ALL,))
                else:
                    steps.append((KEY, self.literal()))
            elif ch == "[":
                steps.append(self.bracket())
            elif first and not steps and ch == "*":
                self.take("*")
                steps.append((ALL,))
            elif first and not steps and ch in _LITERAL and ch:
                steps.append((KEY, self.literal()))
            else:
                return steps

    def after_scan(self) -> tuple[Any, ...]:
        if self.take("*"):
            return (ALL,)
        if self.peek() == "[":
            return self.bracket()
        return (KEY, self.literal())

    def literal(self) -> str:
        self.skip()
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _LITERAL:
            self.pos += 1
        if self.pos == start:
            raise self.fail("<string>, '*'")
        return self.text[start:self.pos]

    def bracket(self) -> tuple[Any, ...]:
        self.take("[")
        ch = self.peek()
        if ch == "*":
            self.take("*")
            step: tuple[Any, ...] = (ALL,)
        elif ch == "?":
            self.take("?")
            step = (FILTER, self.filter())
        elif ch in ("'", '"'):
            names = [self.string()]
            while self.take(","):
                names.append(self.string())
            step = (KEY, names[0]) if len(names) == 1 else (KEYS, names)
        elif ch == "-" or ch == ":" or (ch and ch in _DIGITS):
            step = self.numbers()
        else:
            raise self.fail(_BRACKET_EXPECTED)
        if not self.take("]"):
            raise self.fail("']'")
        return step

    def string(self) -> str:
        self.skip()
        quote = self.text[self.pos] if self.pos < len(self.text) else ""
        if quote not in ("'", '"'):
            raise self.fail("'<string>[,<string>,...]'")
        self.pos += 1
        out: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.fail(f"'{quote}'")
            ch = self.text[self.pos]
            if ch == quote:
                self.pos += 1
                return "".join(out)
            if ch == "\\" and self.pos + 1 < len(self.text) and self.text[self.pos + 1] in (quote, "\\"):
                out.append(self.text[self.pos + 1])
                self.pos += 2
                continue
            if ch == "\\":
                raise self.fail(f"'{quote}'")
            out.append(ch)
            self.pos += 1

    def number(self) -> int:
        self.skip()
        found = _NUMBER.match(self.text, self.pos)
        if found is None:
            raise self.fail("'<number>'")
        self.pos = found.end()
        return int(found.group())

    def numbers(self) -> tuple[Any, ...]:
        first = None if self.peek() == ":" else self.number()
        if not self.take(":"):
            assert first is not None
            items = [first]
            while self.take(","):
                items.append(self.number())
            return (INDEXES, items)
        end = None if self.peek() in (":", "]") else self.number()
        step = 1
        if self.take(":") and self.peek() != "]":
            value = self.number()
            if value <= 0:
                raise self.fail("'<number>'")
            step = value
        return (RANGE, first, end, step)

    # filters: `?(@.a > 1 && (@.b == "x" || !@.c))`

    def filter(self) -> Callable[[Any, Any], bool]:
        terms = [self.conjunction()]
        while self.take("||"):
            terms.append(self.conjunction())
        if len(terms) == 1:
            return terms[0]
        return lambda node, root: any(term(node, root) for term in terms)

    def conjunction(self) -> Callable[[Any, Any], bool]:
        terms = [self.inner()]
        while self.take("&&"):
            terms.append(self.inner())
        if len(terms) == 1:
            return terms[0]
        return lambda node, root: all(term(node, root) for term in terms)

    def inner(self) -> Callable[[Any, Any], bool]:
        if self.take("!"):
            inner = self.inner()
            return lambda node, root: not inner(node, root)
        if self.take("("):
            inside = self.filter()
            if not self.take(")"):
                raise self.fail("')'")
            return inside
        left = self.term()
        for op in _OPERATORS:
            if self.take(op):
                right = self.term()
                return _comparison(left, op, right)
        return lambda node, root: left(node, root) is not _INVALID

    def term(self) -> Callable[[Any, Any], Any]:
        ch = self.peek()
        if ch in ("@", "$"):
            self.take(ch)
            steps = self.elements(first=True)
            if ch == "@":
                return lambda node, root: _single(steps, node, root)
            return lambda node, root: _single(steps, root, root)
        if ch in ("'", '"'):
            return _constant(self.string())
        for word, constant in (("true", True), ("false", False), ("null", None)):
            if self.take(word):
                return _constant(constant)
        if ch == "-" or (ch and ch in _DIGITS):
            return _constant(self.decimal())
        raise self.fail("'[?(filter_expression)]'")

    def decimal(self) -> int | float:
        self.skip()
        found = _DECIMAL.match(self.text, self.pos)
        if found is None:
            raise self.fail("'<number>'")
        self.pos = found.end()
        text = found.group()
        if "." not in text and -(1 << 63) <= int(text) < (1 << 63):
            return int(text)
        return float(text)


# --- selecting ---------------------------------------------------------------------------


def _walk(steps: list[tuple[Any, ...]], i: int, node: Any, loc: Location, root: Any,
          out: list[Match]) -> None:
    if i == len(steps):
        out.append((node, loc))
        return
    step = steps[i]
    kind = step[0]
    if kind == KEY:
        if type(node) is dict and step[1] in node:
            _walk(steps, i + 1, node[step[1]], loc + (step[1],), root, out)
    elif kind == SCAN:
        _walk(steps, i + 1, node, loc, root, out)
        _scan(steps, i + 1, node, loc, root, out)
    elif kind == ALL:
        for key, child in _children(node):
            _walk(steps, i + 1, child, loc + (key,), root, out)
    elif kind == KEYS:
        if type(node) is dict:
            for name in step[1]:
                if name in node:
                    _walk(steps, i + 1, node[name], loc + (name,), root, out)
    elif kind == INDEXES:
        if type(node) is list:
            n = len(node)
            for index in step[1]:
                at = _absolute(index, n)
                if at < n:
                    _walk(steps, i + 1, node[at], loc + (at,), root, out)
    elif kind == RANGE:
        if type(node) is list:
            n = len(node)
            start = 0 if step[1] is None else _absolute(step[1], n)
            end = n if step[2] is None else _absolute(step[2], n)
            for at in range(start, end, step[3]):
                _walk(steps, i + 1, node[at], loc + (at,), root, out)
    elif kind == FILTER:
        test = step[1]
        for key, child in _children(node):
            if test(child, root):
                _walk(steps, i + 1, child, loc + (key,), root, out)


def _scan(steps: list[tuple[Any, ...]], i: int, node: Any, loc: Location, root: Any,
          out: list[Match]) -> None:
    """`..`: the rest of the path from every descendant, in document order."""
    for key, child in _children(node):
        _walk(steps, i, child, loc + (key,), root, out)
        _scan(steps, i, child, loc + (key,), root, out)


def _children(node: Any) -> Any:
    if type(node) is dict:
        return node.items()
    if type(node) is list:
        return enumerate(node)
    return ()


def _absolute(index: int, n: int) -> int:
    """RedisJSON's index: a negative one counts from the end, clamped to the first."""
    return min(index, n) if index >= 0 else max(index + n, 0)


# --- filter terms and comparisons --------------------------------------------------------


class _Invalid:
    pass


_INVALID = _Invalid()  # a path term that matched nothing or several values


class _Literal:
    """A constant of the filter (a number, a string, true, false, null)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _constant(value: Any) -> Callable[[Any, Any], Any]:
    literal = _Literal(value)
    return lambda node, root: literal


def _single(steps: list[tuple[Any, ...]], node: Any, root: Any) -> Any:
    if not steps:
        return node
    out: list[Match] = []
    _walk(steps, 0, node, (), root, out)
    return out[0][0] if len(out) == 1 else _INVALID


def _ordered(value: Any) -> tuple[str, Any] | None:
    """A term's kind and value for ordering (numbers together); None if unordered."""
    if isinstance(value, _Literal):
        value = value.value
    elif value is _INVALID:
        return None
    kind = type(value)
    if kind is bool:
        return ("b", value)
    if kind is int or kind is float:
        return ("n", value)
    if kind is str:
        return ("s", value)
    if value is None:
        return ("z", None)
    return None


def _compare(left: Any, right: Any) -> int | None:
    a, b = _ordered(left), _ordered(right)
    if a is None or b is None or a[0] != b[0]:
        return None
    if a[0] == "z":
        return 0
    return (a[1] > b[1]) - (a[1] < b[1])


def _equal(left: Any, right: Any) -> bool:
    if not isinstance(left, (_Literal, _Invalid)) and not isinstance(right, (_Literal, _Invalid)):
        return same_value(left, right)
    return _compare(left, right) == 0


def _matches(left: Any, right: Any) -> bool:
    """`=~`: a document string against a regular expression (a constant or a string
    from the document)."""
    if isinstance(left, (_Literal, _Invalid)) or type(left) is not str:
        return False
    pattern = right.value if isinstance(right, _Literal) else right
    if type(pattern) is not str:
        return False
    try:
        return re.search(pattern, left) is not None
    except re.error:
        return False


def _comparison(left: Callable[[Any, Any], Any], op: str,
                right: Callable[[Any, Any], Any]) -> Callable[[Any, Any], bool]:
    def test(node: Any, root: Any) -> bool:
        a, b = left(node, root), right(node, root)
        if op == "==":
            return _equal(a, b)
        if op == "!=":
            return not _equal(a, b)
        if op == "=~":
            return _matches(a, b)
        order = _compare(a, b)
        if order is None:
            return False
        return {">": order > 0, ">=": order >= 0, "<": order < 0, "<=": order <= 0}[op]
    return test


def same_value(a: Any, b: Any) -> bool:
    """Deep equality of two document values (true is not 1, 3 is 3.0)."""
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if ta is dict:
        return len(a) == len(b) and all(k in b and same_value(v, b[k]) for k, v in a.items())
    return bool(a == b)
