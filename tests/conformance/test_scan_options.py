"""The options every SCAN flavour shares, and the ones only one of them takes."""

import pytest

NOVALUES = ("-", b"ERR NOVALUES option can only be used in HSCAN")
NOSCORES = ("-", b"ERR NOSCORES option can only be used in ZSCAN")
SYNTAX = ("-", b"ERR syntax error")


@pytest.mark.parametrize(
    "args,expected",
    [
        (("HSCAN", "h", "0", "NOSCORES"), NOSCORES),
        (("HSCAN", "h", "0", "TYPE", "string"), SYNTAX),
        (("SSCAN", "s", "0", "NOVALUES"), NOVALUES),
        (("SSCAN", "s", "0", "NOSCORES"), NOSCORES),
        (("ZSCAN", "z", "0", "NOVALUES"), NOVALUES),
        (("ZSCAN", "z", "0", "NOSCORES", "COUNT", "0"), SYNTAX),
        (("SCAN", "0", "NOVALUES"), NOVALUES),
        (("SCAN", "0", "NOSCORES"), NOSCORES),
        (("SCAN", "0", "TYPE", "foo"), ("-", b"ERR unknown type name 'foo'")),
        (("SCAN", "0", "COUNT", "x"), ("-", b"ERR value is not an integer or out of range")),
        (("HSCAN", "h", "-1"), ("-", b"ERR invalid cursor")),
        (("SSCAN", "s", "x"), ("-", b"ERR invalid cursor")),
    ],
)
def test_scan_option_errors(r2, args, expected):
    r2.call("HSET", "h", "a", "1")
    r2.call("SADD", "s", "a")
    r2.call("ZADD", "z", "1", "a")
    assert r2.call(*args) == expected


def test_cursor_forms_strtoull_takes(r2):
    r2.call("SADD", "s", "a")
    for cursor in ("0", "+0", " 0", "00", "-0"):
        assert r2.call("SSCAN", "s", cursor) == ("*", [("$", b"0"), ("*", [("$", b"a")])]), cursor
