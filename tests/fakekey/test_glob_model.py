"""fakekey.codecs.glob against a slow, literal model of Valkey's stringmatchlen, including the
case-insensitive form that no server command exposes through KEYS."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.codecs.glob import compile_glob, glob_match

STAR, QMARK, LBRACKET, RBRACKET, CARET, BACKSLASH, DASH = b"*?[]^\\-"


def model_match(pattern: bytes, text: bytes, nocase: bool = False) -> bool:
    """Walks pattern and text with explicit lengths, as the C code does on a
    NUL-terminated buffer: reading past the pattern's end sees 0. A failed `*` gives up
    the whole match (a longer run for an earlier `*` cannot help)."""
    gave_up = False

    def at(i: int) -> int:
        return pattern[i] if i < len(pattern) else 0

    def signed(b: int) -> int:
        return b - 256 if b >= 128 else b

    def lower(v: int) -> int:
        return v + 32 if 65 <= v <= 90 else v

    def same(p: int, c: int) -> bool:
        return lower(signed(p)) == lower(signed(c)) if nocase else p == c

    def walk(pi: int, plen: int, si: int, slen: int) -> bool:
        nonlocal gave_up
        while plen and slen:
            ch = pattern[pi]
            if ch == STAR:
                while plen and at(pi + 1) == STAR:
                    pi, plen = pi + 1, plen - 1
                if plen == 1:
                    return True
                while slen:
                    if walk(pi + 1, plen - 1, si, slen):
                        return True
                    if gave_up:
                        return False
                    si, slen = si + 1, slen - 1
                gave_up = True
                return False
            if ch == QMARK:
                si, slen = si + 1, slen - 1
            elif ch == LBRACKET:
                pi, plen = pi + 1, plen - 1
                negate = at(pi) == CARET
                if negate:
                    pi, plen = pi + 1, plen - 1
                hit = False
                while True:
                    if at(pi) == BACKSLASH and plen >= 2:
                        pi, plen = pi + 1, plen - 1
                        hit = hit or pattern[pi] == text[si]
                    elif at(pi) == RBRACKET:
                        break
                    elif plen == 0:
                        pi, plen = pi - 1, plen + 1
                        break
                    elif plen >= 3 and pattern[pi + 1] == DASH:
                        lo, hi, c = signed(pattern[pi]), signed(pattern[pi + 2]), signed(text[si])
                        if lo > hi:
                            lo, hi = hi, lo
                        if nocase:
                            lo, hi, c = lower(lo), lower(hi), lower(c)
                        pi, plen = pi + 2, plen - 2
                        hit = hit or lo <= c <= hi
                    else:
                        hit = hit or same(pattern[pi], text[si])
                    pi, plen = pi + 1, plen - 1
                if hit == negate:
                    return False
                si, slen = si + 1, slen - 1
            else:
                if ch == BACKSLASH and plen >= 2:
                    pi, plen = pi + 1, plen - 1
                if not same(pattern[pi], text[si]):
                    return False
                si, slen = si + 1, slen - 1
            pi, plen = pi + 1, plen - 1
            if slen == 0:
                while at(pi) == STAR:
                    pi, plen = pi + 1, plen - 1
                break
        return plen == 0 and slen == 0

    return walk(0, len(pattern), 0, len(text))


PATTERN_BYTES = b"aAbzZ*?[]^\\-\x80\xff"
TEXT_BYTES = b"aAbzZ*?[]^\\-\x80\xff`{"


def from_alphabet(alphabet: bytes, max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(alphabet), max_size=max_size).map(bytes)


@given(from_alphabet(PATTERN_BYTES, 10), from_alphabet(TEXT_BYTES, 8), st.booleans())
def test_matches_the_model(pattern, text, nocase):
    assert glob_match(pattern, text, nocase) == model_match(pattern, text, nocase)


@given(st.binary(max_size=8), st.binary(max_size=8), st.booleans())
def test_matches_the_model_on_any_bytes(pattern, text, nocase):
    assert glob_match(pattern, text, nocase) == model_match(pattern, text, nocase)


@pytest.mark.parametrize(
    ("pattern", "text", "nocase", "expected"),
    [
        (b"*", b"", False, False),  # an empty text matches only an empty pattern
        (b"", b"", False, True),
        (b"a*", b"a", False, True),
        (b"*", b"anything", False, True),
        (b"h[z-a]llo", b"hello", False, True),  # reversed range
        (b"[a-]", b"_", False, True),  # the range a..']' runs to the pattern's end
        (b"[a-]", b"-", False, False),
        (b"[abc", b"c", False, True),  # unclosed set
        (b"[", b"[", False, False),
        (b"[^", b"x", False, True),
        (b"[]", b"]", False, False),
        (b"[]]", b"]", False, False),  # empty set, then a literal ']'
        (b"[]]", b"]]", False, False),
        (b"[\\]]", b"]", False, True),
        (b"a\\", b"a\\", False, True),  # a trailing backslash is itself
        (b"\\*", b"*", False, True),
        (b"\\*", b"x", False, False),
        (b"[a-\xff]", b"\x80", False, False),  # signed: 0xff is -1, the range is -1..97
        (b"[a-\xff]", b"\xff", False, True),
        (b"[a-\xff]", b"0", False, True),
        (b"HeLLo", b"hello", True, True),
        (b"h[A-Z]llo", b"hello", True, True),
        (b"[Z-a]", b"z", True, False),  # lowered after the swap: the range becomes 'z'..'a'
        (b"[\\A]", b"a", True, False),  # an escape inside a set stays case-sensitive
        (b"\\A", b"a", True, True),  # outside a set it does not
    ],
)
def test_edge_cases(pattern, text, nocase, expected):
    assert model_match(pattern, text, nocase) == expected
    assert glob_match(pattern, text, nocase) == expected


def test_many_stars_stay_linear():
    pattern = b"*a" * 200 + b"*b"
    text = b"a" * 5000
    assert glob_match(pattern, text) is False
    assert glob_match(pattern, text + b"b") is True


def test_compiled_matchers_are_cached():
    assert compile_glob(b"user:*") is compile_glob(b"user:*")
    assert compile_glob(b"user:*", True) is not compile_glob(b"user:*")


def test_accepts_bytearray_text():
    assert glob_match(b"a*", bytearray(b"abc"))
