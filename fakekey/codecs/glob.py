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
- Valkey's matcher recurses once per run of `*` and gives up past a nesting of 1000: when
  the pattern still has something after its 1001st run of stars, nothing matches.

`compile_glob(pattern)` turns a pattern into a matcher; `glob_match` is the one-shot form.
A pattern becomes a list of one-byte tokens (each a 256-bit mask of the bytes it takes)
split on `*` into fixed-width segments, in time and memory linear in the pattern. Literal
segments use bytes.find/startswith, short ones a small regular expression, long ones a
walk over the masks. Head and tail segments are anchored and middle ones are found
leftmost in order, which is exact for globs and linear in the text per segment.
Matchers of short patterns are cached, within a budget of pattern bytes.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from operator import methodcaller

Matcher = Callable[[bytes], bool]

MAX_NESTING = 1000  # stringmatchlen's limit on `*` recursion

STAR = None  # a `*` token; every other token is the mask of the bytes it matches
Token = int | None
_FULL = (1 << 256) - 1
_UPPER = ((1 << 26) - 1) << 0x41  # 'A'..'Z'

# The cache: least recently used first; bounded by the bytes of the patterns it holds.
_CACHE_BUDGET = 256 * 1024
_CACHE_MAX_PATTERN = 4 * 1024  # longer patterns are cheap to rebuild and not kept
_cache: OrderedDict[tuple[bytes, bool], Matcher] = OrderedDict()
_cache_bytes = 0

# Patterns of at most this many tokens and bytes match through regular expressions
# (compiling one costs ~10 us per token, and `re` keeps the last 512 it compiled: small
# ones only); longer ones through masks and bitsets, never compiled.
_REGEX_MAX_TOKENS = 256
_REGEX_MAX_PATTERN = 1024


def glob_match(pattern: bytes, text: bytes, nocase: bool = False) -> bool:
    """Whether `text` matches the glob `pattern`, as Valkey's stringmatchlen answers."""
    return compile_glob(bytes(pattern), nocase)(bytes(text))


def compile_glob(pattern: bytes, nocase: bool = False) -> Matcher:
    """A function text -> bool for `pattern`; short patterns are cached, so callers need
    not keep it."""
    key = (pattern, nocase)
    matcher = _cache.get(key)
    if matcher is not None:
        _cache.move_to_end(key)
        return matcher
    matcher = _build(pattern, nocase)
    if len(pattern) <= _CACHE_MAX_PATTERN:
        _remember(key, matcher)
    return matcher


def _remember(key: tuple[bytes, bool], matcher: Matcher) -> None:
    global _cache_bytes
    _cache[key] = matcher
    _cache_bytes += len(key[0]) + 64  # the entry's own overhead counts too
    while _cache_bytes > _CACHE_BUDGET and _cache:
        (old, _), _ = _cache.popitem(last=False)
        _cache_bytes -= len(old) + 64


def clear_cache() -> None:
    """Forget every cached matcher (tests that change how patterns are built)."""
    global _cache_bytes
    _cache.clear()
    _cache_bytes = 0


def _never(text: bytes) -> bool:
    return False


def _build(pattern: bytes, nocase: bool) -> Matcher:
    tokens = _tokenize(pattern, nocase)
    if _past_nesting_limit(tokens):
        return _never
    compiled = len(tokens) <= _REGEX_MAX_TOKENS and len(pattern) <= _REGEX_MAX_PATTERN
    segments = [_Segment(masks, compiled) for masks in _split_on_stars(tokens)]
    if len(segments) == 1:
        return _whole_matcher(segments[0])
    return _starred_matcher(segments)


def _past_nesting_limit(tokens: list[Token]) -> bool:
    """stringmatchlen recurses for each run of stars; at nesting 1001 it answers 'no
    match' and the caller gives up the whole search. A final run of stars matches
    without recursing, so only a pattern with more after its 1001st run never matches."""
    runs = tokens.count(STAR)
    if runs <= MAX_NESTING:
        return False
    return not (runs == MAX_NESTING + 1 and tokens[-1] is STAR)


# --- tokens ------------------------------------------------------------------------------


def _tokenize(pattern: bytes, nocase: bool) -> list[Token]:
    """The pattern as a list of STAR and one-byte tokens (each the mask of its bytes)."""
    tokens: list[Token] = []
    sets: dict[bytes, int] = {}  # a set's text -> its mask: repeated sets cost one parse
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
            tokens.append(_FULL)
            i += 1
        elif ch == 0x5B:  # '['
            end = _bracket_end(pattern, i + 1)
            body = pattern[i + 1 : end]
            mask = sets.get(body)
            if mask is None:
                mask = sets[body] = _bracket_mask(body, nocase)
            tokens.append(mask)
            i = end + 1
        else:
            if ch == 0x5C and n - i >= 2:  # '\x' is x; a final '\' is itself
                i += 1
                ch = pattern[i]
            tokens.append(_literal_mask(ch, nocase))
            i += 1
    return tokens


def _case_folded(byte: int) -> int:
    if 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A:
        return (1 << (byte | 0x20)) | (1 << (byte & 0xDF))  # both cases of an ASCII letter
    return 1 << byte


# One shared mask object per byte: a long literal pattern allocates no big ints.
_EXACT = tuple(1 << byte for byte in range(256))
_FOLDED = tuple(_case_folded(byte) for byte in range(256))


def _literal_mask(byte: int, nocase: bool) -> int:
    return _FOLDED[byte] if nocase else _EXACT[byte]


def _bracket_end(pattern: bytes, i: int) -> int:
    """The index of the `]` closing a set whose body starts at `i` (len when unclosed).

    Walks the body as Valkey does: `\\x` and `a-z` are read whole, so `[\\]]` and
    `[a-]]` close on their last `]`."""
    n = len(pattern)
    if i < n and pattern[i] == 0x5E:  # '^'
        i += 1
    while i < n:
        ch = pattern[i]
        if ch == 0x5C and n - i >= 2:
            i += 2
        elif ch == 0x5D:
            return i
        elif n - i >= 3 and pattern[i + 1] == 0x2D:
            i += 3
        else:
            i += 1
    return n


def _bracket_mask(body: bytes, nocase: bool) -> int:
    """The bytes one set takes; `body` is its text between `[` and `]`."""
    negate = body[:1] == b"^"
    i = 1 if negate else 0
    n = len(body)
    mask = 0
    while i < n:
        ch = body[i]
        if ch == 0x5C and n - i >= 2:  # an escape: that byte, case-sensitive
            mask |= 1 << body[i + 1]
            i += 2
        elif n - i >= 3 and body[i + 1] == 0x2D:  # 'a-z'
            mask |= _range_mask(body[i], body[i + 2], nocase)
            i += 3
        else:
            mask |= _literal_mask(ch, nocase)
            i += 1
    return mask ^ _FULL if negate else mask


def _signed(byte: int) -> int:
    """A byte as C's (signed) char."""
    return byte - 256 if byte >= 128 else byte


def _lower(value: int) -> int:
    """tolower() in the C locale, on a signed char value."""
    return value + 32 if 0x41 <= value <= 0x5A else value


def _range_mask(low: int, high: int, nocase: bool) -> int:
    """Bytes c with start <= c <= end compared as signed chars, the ends swapped when
    reversed; with nocase the ends and c are lowered after the swap, as Valkey does."""
    start, end = _signed(low), _signed(high)
    if start > end:
        start, end = end, start
    if not nocase:
        return _signed_interval(start, end)
    within = _signed_interval(_lower(start), _lower(end))
    # c is lowered too: an upper-case letter is in when its lower case is.
    return (within & ~_UPPER) | ((within >> 32) & _UPPER)


def _signed_interval(start: int, end: int) -> int:
    """The mask of bytes whose signed value lies in [start, end]."""
    mask = 0
    lo, hi = max(start, 0), min(end, 127)  # 0x00..0x7f are themselves
    if lo <= hi:
        mask |= ((1 << (hi - lo + 1)) - 1) << lo
    lo, hi = max(start, -128), min(end, -1)  # 0x80..0xff are -128..-1
    if lo <= hi:
        mask |= ((1 << (hi - lo + 1)) - 1) << (lo + 256)
    return mask


def _split_on_stars(tokens: list[Token]) -> list[list[int]]:
    """Segments between stars: n stars give n + 1 segments (some possibly empty)."""
    segments: list[list[int]] = [[]]
    for token in tokens:
        if token is STAR:
            segments.append([])
        else:
            segments[-1].append(token)
    return segments


# --- matchers ----------------------------------------------------------------------------


class _Segment:
    """A run of one-byte tokens between stars: fixed width, tested at or after a position.

    Literal runs use bytes methods. Otherwise a segment of a short pattern compiles a
    regular expression (C speed for the common `user:?:*`); a segment of a
    long pattern is never compiled: `at` walks its masks and `find` tests every start of
    a window at once, one big-int AND per token (bit-parallel), so a hostile pattern
    costs time linear in the pattern and memory linear in it too."""

    __slots__ = ("width", "literal", "masks", "regex", "_accept_tables")

    def __init__(self, masks: list[int], compiled: bool) -> None:
        self.width = len(masks)
        self.literal: bytes | None = None
        self.regex: re.Pattern[bytes] | None = None
        self.masks = masks
        self._accept_tables: dict[int, bytes] = {}
        if all(m and m & (m - 1) == 0 for m in masks):  # one byte each
            self.literal = bytes(m.bit_length() - 1 for m in masks)
        elif compiled:
            self.regex = re.compile(b"".join(map(_mask_regex, masks)), re.DOTALL)

    def at(self, text: bytes, pos: int) -> bool:
        if self.literal is not None:
            return text.startswith(self.literal, pos)
        if self.regex is not None:
            return self.regex.match(text, pos) is not None
        if len(text) - pos < self.width:
            return False
        window = text[pos : pos + self.width]
        return all((mask >> byte) & 1 for mask, byte in zip(self.masks, window))

    def find(self, text: bytes, pos: int, end: int) -> int:
        """The first start >= pos where the segment fits before `end`, or -1."""
        if self.literal is not None:
            return text.find(self.literal, pos, end)
        if self.regex is not None:
            found = self.regex.search(text, pos, end)
            return -1 if found is None else found.start()
        return self._find_in_windows(text, pos, end)

    def _find_in_windows(self, text: bytes, pos: int, end: int) -> int:
        """Search windows that double in size, so the work stays proportional to how far
        the first fit lies, not to the whole text."""
        span = 2 * self.width + 64
        while end - pos >= self.width:
            stop = min(end, pos + span)
            starts = self._starts(text[pos:stop])
            if starts:
                return pos + (starts & -starts).bit_length() - 1
            pos = stop - self.width + 1
            span *= 2
        return -1

    def _starts(self, window: bytes) -> int:
        """A bitset of the offsets in `window` where the whole segment fits."""
        fits = (1 << (len(window) - self.width + 1)) - 1
        for offset, mask in enumerate(self.masks):
            fits &= self._accepts(mask, window) >> offset
            if not fits:
                break
        return fits

    def _accepts(self, mask: int, window: bytes) -> int:
        """A bitset of the offsets in `window` whose byte `mask` takes (C-speed: one
        translate to '0'/'1' text, read as a binary number)."""
        table = self._accept_tables.get(mask)
        if table is None:
            table = self._accept_tables[mask] = format(mask, "0256b")[::-1].encode()
        return int(window.translate(table)[::-1], 2)


def _mask_regex(mask: int) -> bytes:
    """One token as a regex atom: a byte class, written as its shorter form."""
    if mask == _FULL:
        return b"."
    if not mask:
        return b"(?!)"
    if mask & (mask - 1) == 0:
        return b"\\x%02x" % (mask.bit_length() - 1)
    members = bin(mask).count("1")
    if members > 128:
        return b"[^" + _class_ranges(mask ^ _FULL) + b"]"
    return b"[" + _class_ranges(mask) + b"]"


def _class_ranges(mask: int) -> bytes:
    """The bytes of `mask` as runs `\\xNN-\\xMM` for a regex class."""
    parts = []
    byte = 0
    while mask >> byte:
        if not (mask >> byte) & 1:
            byte += 1
            continue
        first = byte
        while byte < 256 and (mask >> byte) & 1:
            byte += 1
        last = byte - 1
        parts.append(b"\\x%02x" % first if first == last else b"\\x%02x-\\x%02x" % (first, last))
    return b"".join(parts)


def _whole_matcher(segment: _Segment) -> Matcher:
    """No star: the text has the pattern's width and fits it byte by byte."""
    literal = segment.literal
    if literal is not None:
        return literal.__eq__  # type: ignore[return-value]
    width = segment.width

    def match(text: bytes) -> bool:
        return len(text) == width and segment.at(text, 0)

    return match


def _starred_matcher(parts: list[_Segment]) -> Matcher:
    """Head and tail segments are anchored; middle ones are found leftmost in order,
    which is exact for globs (taking the earliest fit never loses a later match)."""
    head, tail = parts[0], parts[-1]
    middles = [p for p in parts[1:-1] if p.width]
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
