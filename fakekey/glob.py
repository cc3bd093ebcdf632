"""Glob-style matching exactly as Valkey's `stringmatchlen` (src/util.c) decides it.

The rules, byte for byte:

- `*` matches any run of bytes, `?` any one byte, `\\x` the byte `x`; a trailing `\\`
  is a literal backslash.
- `[...]` matches one byte of a set, `[^...]` one byte outside it. Inside, `\\x` is `x`
  (always case-sensitive), `a-z` a range (reversed ranges such as `z-a` work too; a range
  may end on `]`, as in `[a-]`), anything else a literal. A `[` without its `]` runs to
  the end of the pattern. Bytes compare as C's signed `char`, so a range that spans
  0x7f/0x80 behaves as Valkey's does on x86.
- With `nocase`, ASCII letters compare case-insensitively (not inside `\\` escapes in a
  set).
- An empty text matches only the empty pattern: even `*` does not match it.

`compile_glob(pattern)` turns a pattern into a matcher once (cached); `glob_match` is the
one-shot form. Patterns are split on `*` into fixed-width segments; literal segments use
bytes.find/startswith, the others a small regular expression, so matching is linear for
the common shapes (`prefix*`, `*`, exact names).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from operator import methodcaller

Matcher = Callable[[bytes], bool]

STAR = None  # a `*` token; every other token matches exactly one byte
_ALL_BYTES = frozenset(range(256))


def glob_match(pattern: bytes, text: bytes, nocase: bool = False) -> bool:
    """Whether `text` matches the glob `pattern`, as Valkey's stringmatchlen answers."""
    return compile_glob(bytes(pattern), nocase)(bytes(text))


@lru_cache(maxsize=2048)
def compile_glob(pattern: bytes, nocase: bool = False) -> Matcher:
    """A function text -> bool for `pattern`; cached, so callers need not keep it."""
    tokens = _tokenize(pattern, nocase)
    segments = _split_on_stars(tokens)
    if len(segments) == 1:
        return _whole_matcher(pattern, segments[0])
    return _starred_matcher(segments)


# --- tokens ------------------------------------------------------------------------------


def _tokenize(pattern: bytes, nocase: bool) -> list[frozenset[int] | None]:
    """The pattern as a list of STAR and one-byte tokens (each the set of bytes it takes)."""
    tokens: list[frozenset[int] | None] = []
    n = len(pattern)
    i = 0
    while i < n:
        ch = pattern[i]
        if ch == 0x2A:  # '*': a run of stars is one star
            while i + 1 < n and pattern[i + 1] == 0x2A:
                i += 1
            tokens.append(STAR)
            i += 1
        elif ch == 0x3F:  # '?'
            tokens.append(_ALL_BYTES)
            i += 1
        elif ch == 0x5B:  # '['
            token, i = _bracket(pattern, i + 1, nocase)
            tokens.append(token)
        else:
            if ch == 0x5C and n - i >= 2:  # '\x' is x; a final '\' is itself
                i += 1
                ch = pattern[i]
            tokens.append(_literal(ch, nocase))
            i += 1
    return tokens


def _literal(byte: int, nocase: bool) -> frozenset[int]:
    if nocase and (0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A):
        return frozenset((byte | 0x20, byte & 0xDF))  # both cases of an ASCII letter
    return frozenset((byte,))


def _bracket(pattern: bytes, i: int, nocase: bool) -> tuple[frozenset[int], int]:
    """Parse a set starting after its '['; returns (bytes it matches, index after it)."""
    n = len(pattern)
    negate = i < n and pattern[i] == 0x5E  # '^'
    if negate:
        i += 1
    escapes: list[int] = []
    ranges: list[tuple[int, int]] = []
    literals: list[int] = []
    while i < n:
        ch = pattern[i]
        if ch == 0x5C and n - i >= 2:  # '\x' inside a set: x, case-sensitive
            escapes.append(pattern[i + 1])
            i += 2
        elif ch == 0x5D:  # ']' closes the set
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == 0x2D:  # 'a-z'
            ranges.append((pattern[i], pattern[i + 2]))
            i += 3
        else:
            literals.append(ch)
            i += 1
    members = {c for c in range(256) if _in_set(c, escapes, ranges, literals, nocase)}
    if negate:
        members = set(range(256)) - members
    return frozenset(members), i


def _signed(byte: int) -> int:
    """A byte as C's (signed) char."""
    return byte - 256 if byte >= 128 else byte


def _lower(value: int) -> int:
    """tolower() in the C locale, on a signed char value."""
    return value + 32 if 0x41 <= value <= 0x5A else value


def _in_set(
    c: int, escapes: list[int], ranges: list[tuple[int, int]], literals: list[int], nocase: bool
) -> bool:
    if c in escapes:
        return True
    sc = _signed(c)
    for low, high in ranges:
        start, end = _signed(low), _signed(high)
        if start > end:
            start, end = end, start
        value = sc
        if nocase:  # lowered after the swap, as Valkey does: [Z-a] is empty then
            start, end, value = _lower(start), _lower(end), _lower(value)
        if start <= value <= end:
            return True
    if nocase:
        return any(_lower(_signed(p)) == _lower(sc) for p in literals)
    return c in literals


# --- matchers ----------------------------------------------------------------------------


class _Segment:
    """A run of one-byte tokens between stars: fixed width, tested at or after a position."""

    __slots__ = ("width", "literal", "regex")

    def __init__(self, tokens: list[frozenset[int]]) -> None:
        self.width = len(tokens)
        self.literal: bytes | None = None
        self.regex: re.Pattern[bytes] | None = None
        if all(len(t) == 1 for t in tokens):
            self.literal = bytes(next(iter(t)) for t in tokens)
        else:
            self.regex = re.compile(b"".join(_token_regex(t) for t in tokens), re.DOTALL)

    def at(self, text: bytes, pos: int) -> bool:
        if self.literal is not None:
            return text.startswith(self.literal, pos)
        return self.regex.match(text, pos) is not None  # type: ignore[union-attr]

    def find(self, text: bytes, pos: int, end: int) -> int:
        """The first start >= pos where the segment fits before `end`, or -1."""
        if self.literal is not None:
            return text.find(self.literal, pos, end)
        found = self.regex.search(text, pos, end)  # type: ignore[union-attr]
        return -1 if found is None else found.start()


def _token_regex(token: frozenset[int]) -> bytes:
    if token == _ALL_BYTES:
        return b"."
    if not token:
        return b"(?!)"
    if len(token) == 1:
        return re.escape(bytes(token))
    return b"[" + b"".join(b"\\x%02x" % c for c in sorted(token)) + b"]"


def _split_on_stars(tokens: list[frozenset[int] | None]) -> list[list[frozenset[int]]]:
    """Segments between stars: n stars give n + 1 segments (some possibly empty)."""
    segments: list[list[frozenset[int]]] = [[]]
    for token in tokens:
        if token is STAR:
            segments.append([])
        else:
            segments[-1].append(token)
    return segments


def _whole_matcher(pattern: bytes, tokens: list[frozenset[int]]) -> Matcher:
    """No star: the text has the pattern's width and fits it byte by byte."""
    segment = _Segment(tokens)
    literal = segment.literal
    if literal is not None:
        return literal.__eq__  # type: ignore[return-value]
    width = segment.width

    def match(text: bytes) -> bool:
        return len(text) == width and segment.at(text, 0)

    return match


def _starred_matcher(parts: list[list[frozenset[int]]]) -> Matcher:
    """Head and tail segments are anchored; middle ones are found leftmost in order,
    which is exact for globs (taking the earliest fit never loses a later match)."""
    head = _Segment(parts[0])
    tail = _Segment(parts[-1])
    middles = [_Segment(p) for p in parts[1:-1] if p]
    min_width = head.width + tail.width + sum(m.width for m in middles)
    if not middles and head.literal is not None and tail.literal is not None:
        return _affix_matcher(head.literal, tail.literal, min_width)

    def match(text: bytes) -> bool:
        size = len(text)
        if not size or size < min_width:  # an empty text matches only an empty pattern
            return False
        if head.width and not head.at(text, 0):
            return False
        end = size - tail.width
        if tail.width and not tail.at(text, end):
            return False
        pos = head.width
        for middle in middles:
            found = middle.find(text, pos, end)
            if found < 0:
                return False
            pos = found + middle.width
        return True

    return match


def _affix_matcher(prefix: bytes, suffix: bytes, min_width: int) -> Matcher:
    """`prefix*suffix` with literal ends (covers `*`, `prefix*`, `*suffix`)."""
    if not suffix:
        if not prefix:
            return bool  # '*': any non-empty text
        return methodcaller("startswith", prefix)  # C-level calls: KEYS runs these per key
    if not prefix:
        return methodcaller("endswith", suffix)
    return lambda text: len(text) >= min_width and text.startswith(prefix) and text.endswith(suffix)
