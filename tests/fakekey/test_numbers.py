"""fakekey.codecs.numbers' integer reader against string2ll's rule, stated as a regex and a range
check: the digit loop that reads short numbers must accept and refuse exactly as it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.codecs.errors import NOT_INTEGER
from fakekey.codecs.numbers import parse_int, try_int
from fakekey.resp.replies import ReplyError

STRING2LL = re.compile(rb"(?:0|-?[1-9][0-9]{0,18})\Z")


def string2ll(raw: bytes) -> int | None:
    if STRING2LL.match(raw):
        value = int(raw)
        if -(2**63) <= value <= 2**63 - 1:
            return value
    return None


number_like = st.one_of(
    st.binary(max_size=22),
    st.text(alphabet="0123456789-+ \n.e", max_size=22).map(str.encode),
    st.integers(min_value=-(2**64), max_value=2**64).map(lambda n: b"%d" % n),
)


@given(number_like)
def test_try_int_is_string2ll(raw: bytes) -> None:
    assert try_int(raw) == string2ll(raw)
    assert try_int(bytearray(raw)) == string2ll(raw)


@pytest.mark.parametrize("raw", [
    b"0", b"-0", b"-", b"", b"+1", b" 1", b"1 ", b"01", b"-01", b"1\n",
    b"999999999999999999", b"-999999999999999999", b"9223372036854775807",
    b"9223372036854775808", b"-9223372036854775808", b"-9223372036854775809",
])
def test_edges(raw: bytes) -> None:
    expected = string2ll(raw)
    if expected is None:
        with pytest.raises(ReplyError) as caught:
            parse_int(raw)
        assert caught.value is NOT_INTEGER
    else:
        assert parse_int(raw) == expected
