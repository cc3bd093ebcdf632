"""Valkey's sdssplitargs: one line of words, as an inline request, a config file line or a
script's shebang is split. Valkey 9.1's rules, which older copies of it did not have:
quoted and unquoted parts next to each other join into one word, and a 0xff byte is dropped."""

from __future__ import annotations

from typing import Final

_SKIP: Final = frozenset(b" \t\r\n\x0b\x0c")  # skipped before an argument (isspace)
_SEPARATORS: Final = frozenset(b" \t\r\n")  # end an unquoted argument (\v and \f do not)
_HEX: Final = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES: Final = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_DROPPED: Final = 0xFF  # a literal 0xff byte never reaches an argument in Valkey 9.1
_DQ: Final = 34
_SQ: Final = 39
_BACKSLASH: Final = 92


def split_args(line: bytes) -> list[bytes] | None:
    """Split a line into words the way Valkey 9.1 does; None for unbalanced quotes.

    Shell-like: "double" quotes take escapes (\\xHH, \\n \\r \\t \\b \\a, any other
    character stands for itself), 'single' quotes only \\'. A backslash escapes only when
    at least one byte follows the escaped one. Quoted and unquoted parts next to each other
    join into one argument (`a"b c"d` is `ab cd`).
    """
    args: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in _SKIP:
            i += 1
        if i >= n:
            return args
        arg = bytearray()
        quote = 0
        while i < n:
            c = line[i]
            if quote == _DQ:
                if c == _BACKSLASH and i + 2 < n:
                    if (
                        line[i + 1] == 120  # 'x'
                        and i + 3 < n
                        and line[i + 2] in _HEX
                        and line[i + 3] in _HEX
                    ):
                        arg.append(int(line[i + 2 : i + 4], 16))
                        i += 4
                        continue
                    c = _ESCAPES.get(line[i + 1], line[i + 1])
                    i += 1
                elif c == _DQ:
                    quote = 0
                    i += 1
                    continue
            elif quote == _SQ:
                if c == _BACKSLASH and i + 2 < n and line[i + 1] == _SQ:
                    c = _SQ
                    i += 1
                elif c == _SQ:
                    quote = 0
                    i += 1
                    continue
            elif c in _SEPARATORS:
                break
            elif c in (_DQ, _SQ):
                quote = c
                i += 1
                continue
            if c != _DROPPED:
                arg.append(c)
            i += 1
        if quote:
            return None
        args.append(bytes(arg))
