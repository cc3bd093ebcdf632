"""The request parser alone: Valkey 9.1's framing, limits and error texts (each case was
checked against a real valkey-server 9.1.2; tests/conformance/test_protocol.py replays the
important ones on both servers), and that how the bytes are split never matters."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.compiled import source_path
from fakekey.resp.parser import INLINE_MAX, ProtocolError, RequestParser
from fakekey.resp.splitargs import split_args
from fakekey.testing.raw import encode_command


def source_module(name: str):
    """Module `name` loaded afresh from its .py source: the pure-Python code even where
    fakekey runs compiled (a compiled class takes no subclass written in Python)."""
    spec = importlib.util.spec_from_file_location(f"{name}_from_source", source_path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pure = source_module("fakekey.resp.parser")


def parse(data: bytes, *, step: int = 0, parser: RequestParser | None = None):
    """Feed `data` whole (or `step` bytes at a time); return (requests, error message)."""
    p = parser or RequestParser()
    chunks = [data[i : i + step] for i in range(0, len(data), step)] if step else [data]
    requests: list[list[bytes]] = []
    for chunk in chunks:
        p.feed(chunk)
        try:
            while (argv := p.next_request()) is not None:
                requests.append(argv)
        except (ProtocolError, pure.ProtocolError) as err:
            return requests, err.message
    return requests, None


# --- framing ---------------------------------------------------------------------------------


def test_multibulk_and_inline_requests():
    data = encode_command("SET", "k", "v") + b"GET k\r\n" + b"PING\n"
    assert parse(data) == ([[b"SET", b"k", b"v"], [b"GET", b"k"], [b"PING"]], None)


def test_empty_requests_are_skipped():
    data = b"\r\n\n   \r\n*0\r\n*-1\r\n*-9223372036854775808\r\nPING\r\n"
    assert parse(data) == ([[b"PING"]], None)


def test_binary_and_empty_arguments():
    data = encode_command("SET", b"\x00\r\n\xff", b"")
    assert parse(data) == ([[b"SET", b"\x00\r\n\xff", b""]], None)


def test_byte_by_byte_is_the_same_as_whole():
    data = encode_command("SET", "k", "x" * 100) + b'ECHO "a b"\r\n' + encode_command("GET", "k")
    assert parse(data, step=1) == parse(data)
    assert parse(data)[0][1] == [b"ECHO", b"a b"]


@pytest.mark.parametrize(
    "data",
    [
        b"*1\r\n$4\r\nPING",  # payload incomplete
        b"*1\r\n$4\r\nPING\r",  # half the terminator
        b"*1\r",  # a count line without its '\n' yet
        b"*1\r\nx",  # Valkey waits for the line end before checking for '$'
        b"*1\r\nx\r",
        b"*1\r\n$4\r",
        b"PING",
        b"*1\n$4\nPING\n",  # '\n' alone does not end a header line
        b"PING\x00\r\n",  # a NUL hides the inline line end (strchr)
    ],
)
def test_incomplete_input_waits(data):
    parser = RequestParser()
    assert parse(data, parser=parser) == ([], None)
    assert parser.buffered() > 0


def test_nul_in_an_inline_line_waits_until_the_inline_limit():
    parser = RequestParser()
    assert parse(b"PING\x00\r\nPING\r\n", parser=parser) == ([], None)
    assert parse(b"x" * INLINE_MAX, parser=parser) == ([], b"too big inline request")


def test_bytes_after_a_complete_request_wait_for_the_next():
    assert parse(b"*1\r\n$4\r\nPING\r\n\x00") == ([[b"PING"]], None)


# --- protocol errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"*x\r\n", b"invalid multibulk length"),
        (b"*\r\n", b"invalid multibulk length"),
        (b"*01\r\n", b"invalid multibulk length"),
        (b"*+1\r\n", b"invalid multibulk length"),
        (b"*-0\r\n", b"invalid multibulk length"),
        (b"*1 \r\n", b"invalid multibulk length"),
        (b"*1\x00\r\n", b"invalid multibulk length"),
        (b"*2147483648\r\n", b"invalid multibulk length"),
        (b"*-9223372036854775809\r\n", b"invalid multibulk length"),
        (b"*1\r\n$-1\r\n", b"invalid bulk length"),
        (b"*1\r\n$\r\n", b"invalid bulk length"),
        (b"*1\r\n$01\r\n", b"invalid bulk length"),
        (b"*1\r\n$-0\r\n", b"invalid bulk length"),
        (b"*1\r\n$+1\r\n", b"invalid bulk length"),
        (b"*1\r\n$536870913\r\n", b"invalid bulk length"),
        (b"*1\r\n$9223372036854775808\r\n", b"invalid bulk length"),
        (b"*1\r\nxyz\r\n", b"expected '$', got 'x'"),
        (b"*1\r\n\x00\r\n", b"expected '$', got '\x00'"),
        (b"*1\r\n\xff\r\n", b"expected '$', got '\xff'"),
        (b"*1\r\n\r\n", b"expected '$', got ' '"),  # CR/LF are shown as spaces
        (b"*1\r\n\n\r\n", b"expected '$', got ' '"),
        (b"*2\r\n$4\r\nECHO\r\n*1\r\n", b"expected '$', got '*'"),
        (b"*1\rX", b"invalid CRLF in request"),
        (b"*abc\rX", b"invalid CRLF in request"),  # the line end is checked first
        (b"*1\r\n$4\rX", b"invalid CRLF in request"),
        (b"*1\r\n$x\rY", b"invalid CRLF in request"),
        (b"*1\r\n$4\r\r\nPING\r\n", b"invalid CRLF in request"),
        (b"*1\r\n$4\r\nPINGXY", b"invalid CRLF in request"),
        (b"*1\r\n$4\r\nPING\rX", b"invalid CRLF in request"),
        (b"*1\r\n$4\r\nPING\nX", b"invalid CRLF in request"),
        (b'ECHO "abc\r\n', b"unbalanced quotes in request"),
        (b"ECHO 'abc\r\n", b"unbalanced quotes in request"),
        (b"*" + b"1" * (INLINE_MAX + 1), b"too big mbulk count string"),
        (b"*1\r\n$" + b"1" * INLINE_MAX, b"too big bulk count string"),
        (b"*1\r\n" + b"x" * (INLINE_MAX + 1), b"too big bulk count string"),
        (b"x" * (INLINE_MAX + 1), b"too big inline request"),
    ],
)
def test_protocol_errors(data, message):
    assert parse(data) == ([], message)


def test_requests_before_an_error_are_returned():
    data = b"PING\r\n" + encode_command("GET", "k") + b"*1\r\n$x\r\n" + b"PING\r\n"
    assert parse(data) == ([[b"PING"], [b"GET", b"k"]], b"invalid bulk length")


def test_limits_are_exactly_at_the_boundary():
    assert parse(b"*2147483647\r\n") == ([], None)
    assert parse(b"*1\r\n$536870912\r\n") == ([], None)
    assert parse(b"*" + b"1" * (INLINE_MAX - 1)) == ([], None)
    assert parse(b"x" * INLINE_MAX) == ([], None)


# --- limits that depend on the connection ----------------------------------------------------


def test_unauthenticated_limits():
    parser = RequestParser()
    parser.authenticated = False
    assert parse(b"*10\r\n", parser=parser) == ([], None)
    assert parse(b"*11\r\n") == ([], None)
    for data, message in [
        (b"*11\r\n", b"unauthenticated multibulk length"),
        (b"*1\r\n$16385\r\n", b"unauthenticated bulk length"),
    ]:
        parser = RequestParser()
        parser.authenticated = False
        assert parse(data, parser=parser) == ([], message)
    parser = RequestParser()
    parser.authenticated = False
    assert parse(encode_command("ECHO", "x" * 16384), parser=parser)[1] is None


def test_limits_are_read_per_request():
    """AUTH or CONFIG SET take effect from the next request on, as in Valkey."""
    parser = RequestParser()
    parser.authenticated = False
    data = encode_command("AUTH", "pw") + encode_command(*["RPUSH", "l"] + ["v"] * 10)
    parser.feed(data)
    assert parser.next_request() == [b"AUTH", b"pw"]
    parser.authenticated = True
    assert parser.next_request() == [b"RPUSH", b"l"] + [b"v"] * 10
    parser.max_bulk = 3
    parser.feed(encode_command("GET", "abcd"))
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        parser.next_request()


def test_buffered_counts_only_unparsed_bytes():
    """Arguments already read do not count against client-query-buffer-limit."""
    parser = RequestParser()
    assert parse(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc", parser=parser) == ([], None)
    assert parser.buffered() == 3
    assert parse(b"defghij\r\n", parser=parser) == ([[b"SET", b"k", b"abcdefghij"]], None)
    assert parser.buffered() == 0


def test_a_large_bulk_arrives_in_many_chunks():
    value = bytes(range(256)) * 4096  # 1 MiB
    data = encode_command("SET", "k", value) + b"PING\r\n"
    assert parse(data, step=1000) == ([[b"SET", b"k", value], [b"PING"]], None)


# --- inline argument splitting (Valkey 9.1's rules, probed on a real server) ------------


@pytest.mark.parametrize(
    ("line", "args"),
    [
        (b"a b  c   ", [b"a", b"b", b"c"]),
        (b"a\tb\rc", [b"a", b"b", b"c"]),
        (b"\x0b\x0c a", [b"a"]),  # \v and \f are skipped before an argument...
        (b"a\x0bb\x0cc", [b"a\x0bb\x0cc"]),  # ...but do not end one
        (b'"a\\x41\\n"', [b"aA\n"]),
        (b'"\\e\\a\\b\\t\\v\\f\\r\\n"', [b"e\x07\x08\tvf\r\n"]),
        (b'"\\x4" "\\xZZ" "\\x"', [b"x4", b"xZZ", b"x"]),
        (b'"\\xff\\x00"', [b"\xff\x00"]),
        (b'"\\""', [b'"']),
        (b"'a\\'b' 'a\\nb' '\\x41'", [b"a'b", b"a\\nb", b"\\x41"]),
        (b'"" \'\'', [b"", b""]),
        (b'"a"b a"b c"d a\'b\'c "a""b" \'a\'"b"', [b"ab", b"ab cd", b"abc", b"ab", b"ab"]),
        (b'""""a', [b"a"]),
        (b'"a"\tb', [b"a", b"b"]),
        (b"a\\x41 a\\ b", [b"a\\x41", b"a\\", b"b"]),  # no escapes outside quotes
        # a backslash escapes only when a byte follows the escaped one
        (b'x "a\\"', [b"x", b"a\\"]),
        (b"'a\\'", [b"a\\"]),
        (b'"\\\\"', [b"\\"]),
        (b'"\\x41\\"', [b"A\\"]),
        # a literal 0xff byte is dropped (a hex escape still makes one)
        (b"a\xffb \xff", [b"ab", b""]),
        (b'"\\\xff"x', [b"x"]),
        (b"\x80\xfe\xc3\xa9", [b"\x80\xfe\xc3\xa9"]),
    ],
)
def test_split_args(line, args):
    assert split_args(line) == args


@pytest.mark.parametrize(
    "line",
    [b'"abc', b"'abc", b'"a"b\'', b"'''", b'"\\', b'"abc\\', b'"a\\"b', b'"a\\" b', b"'a\\'b", b'"\\x41'],
)
def test_split_args_unbalanced(line):
    assert split_args(line) is None


# --- properties ---------------------------------------------------------------------------

ARG = st.binary(max_size=40) | st.sampled_from([b"", b"\r\n", b"*1", b"$3", b'"', b"'", b"\\"])
REQUEST = st.lists(ARG, min_size=1, max_size=6).map(lambda args: encode_command(*args))
PIECE = REQUEST | st.binary(max_size=30) | st.sampled_from(
    [b"\r\n", b"\r", b"\n", b"*", b"$", b"*1\r\n", b"$4\r\n", b"PING\r\n", b'"a" b\r\n', b"\x00", b"*11\r\n", b"$6\r\n"]
)


@given(pieces=st.lists(PIECE, max_size=12), cuts=st.lists(st.integers(0, 2000), max_size=20))
def test_how_bytes_are_split_never_matters(pieces, cuts):
    data = b"".join(pieces)
    whole = parse(data)
    parser = RequestParser()
    requests: list[list[bytes]] = []
    error = None
    start = 0
    for cut in sorted({c for c in cuts if c < len(data)} | {len(data)}):
        got, error = parse(data[start:cut], parser=parser)
        requests += got
        start = cut
        if error is not None:
            break
    assert (requests, error) == whole


@given(requests=st.lists(st.lists(st.binary(max_size=50), min_size=1, max_size=8), max_size=10))
def test_encoded_requests_round_trip(requests):
    data = b"".join(encode_command(*argv) for argv in requests)
    assert parse(data) == (requests, None)
    assert parse(data, step=7) == (requests, None)


class IncrementalOnly(pure.RequestParser):
    """The parser without its fast path for whole requests."""

    __slots__ = ()

    def _complete_multibulk(self, buf: bytes, pos: int) -> list[bytes] | None:
        return None


@given(pieces=st.lists(PIECE, max_size=12), authenticated=st.booleans(), max_bulk=st.sampled_from([5, 2**29]),
       step=st.sampled_from([0, 1, 7]))
def test_the_fast_path_agrees_with_the_incremental_parser(pieces, authenticated, max_bulk, step):
    data = b"".join(pieces)
    parsers = [RequestParser(max_bulk), pure.RequestParser(max_bulk), IncrementalOnly(max_bulk)]
    for parser in parsers:
        parser.authenticated = authenticated
    results = [parse(data, parser=parser, step=step) for parser in parsers]
    assert results[0] == results[2]
    assert results[1] == results[2]


@pytest.mark.parametrize("request_", [
    b"*01\r\n$1\r\na\r\n", b"*1\r\n$01\r\na\r\n", b"*1\r\n$-1\r\n", b"*+1\r\n$1\r\na\r\n",
    b"*1\r\n$1\r\nab\r\n", b"*1\n$1\r\na\r\n", b"*1\r\n$1\na\r\n", b"*1\r\n:1\r\n",
    b"*1\r\n$" + b"1" * 20 + b"\r\n", b"*" + b"1" * 11 + b"\r\n", b"*2147483648\r\n",
    b"*0\r\n*1\r\n$4\r\nPING\r\n", b"*-1\r\n*1\r\n$4\r\nPING\r\n",
    # two-digit numbers, read inline too
    b"*1\r\n$09\r\n123456789\r\n", b"*1\r\n$1a\r\n", b"*1\r\n$-9\r\n", b"*1\r\n$+9\r\n",
    b"*1\r\n$10\r\n123456789\r\n", b"*1\r\n$10\r\n1234567890\r\n", b"*1\r\n$99\r\n" + b"x" * 99 + b"\r\n",
    b"*1\r\n$10\n1234567890\r\n", b"*1\r\n$10\r\r1234567890\r\n", b"*1\r\n$1:\r\n",
    b"*10\r\n" + b"$1\r\na\r\n" * 10, b"*11\r\n" + b"$1\r\na\r\n" * 11, b"*09\r\n$1\r\na\r\n",
    b"*-2\r\n*1\r\n$4\r\nPING\r\n", b"*1/\r\n", b"*99\r\n" + b"$2\r\nab\r\n" * 99,
    # 19-digit sizes: past 2**62 the compiled fast path (i64) leaves them alone
    b"*1\r\n$" + b"9" * 19 + b"\r\n", b"*1\r\n$9223372036854775807\r\nab\r\n",
    b"*1\r\n$4611686018427387904\r\n", b"*1\r\n$4611686018427387903\r\nab\r\n",
])
@pytest.mark.parametrize("authenticated", [True, False])
def test_the_fast_path_leaves_every_odd_request_to_the_incremental_parser(request_, authenticated):
    """Near misses of the plain layout: the fast path must not take them (the incremental
    parser answers them as Valkey does), whole or cut anywhere."""
    for parser_type in (RequestParser, pure.RequestParser):
        for step in (0, 1, 3):
            fast, slow = parser_type(), IncrementalOnly()
            fast.authenticated = slow.authenticated = authenticated
            assert parse(request_, parser=fast, step=step) == parse(request_, parser=slow, step=step)


def test_buffered_counts_the_requests_not_yet_taken():
    parser = RequestParser()
    data = encode_command("SET", "k", "v") * 3
    parser.feed(data)
    assert parser.next_request() == [b"SET", b"k", b"v"]
    assert parser.buffered() == 2 * len(encode_command("SET", "k", "v"))


def test_huge_length_fields_are_refused_not_converted():
    assert parse(b"*1\r\n$" + b"9" * 5000 + b"\r\n") == ([], b"invalid bulk length")
    assert parse(b"*" + b"9" * 5000 + b"\r\n") == ([], b"invalid multibulk length")


@pytest.mark.parametrize("bad", [
    b"*2147483647\r\n", b"*1\r\n*999999\r\n", b"*2\r\n$1\r\na\r\n%123456\r\n",
    b"*1\r\n~100000\r\n", b"*1\r\n$" + b"9" * 100000 + b"\r\n",
])
def test_huge_headers_are_answered_without_allocating_for_them(bad):
    """A header announcing a huge aggregate or bulk is refused or waited on, never sized
    up front: parsing it takes no time and no memory."""
    requests, error = parse(encode_command("PING") + bad)
    assert requests == [[b"PING"]]
    assert error in (None, b"expected '$', got '*'", b"expected '$', got '%'", b"expected '$', got '~'",
                     b"invalid bulk length")
