"""Bad input, measured by the keyspace digest (issue 13): raw bytes, RESP frames with
hostile lengths and nesting, inline commands with odd quoting, valid commands of every
family with random arguments (built from the registry's argument docs), and random Lua.

The property every time: the server answers or closes that one connection (never hangs
it, never fails internally), another client keeps getting PING answers, and `DEBUG
DIGEST` of the keyspace is what it was. Requests that may write run in a scratch database
(SELECTed first; commands that reach other databases are left out) that the watcher
empties afterwards, so the digest also proves the writes stayed there; read-only commands
and garbage run on database 0 itself, over keys of every type.

HYPOTHESIS_PROFILE=deep runs many more; `-s` prints the counts at the end of the module."""

from __future__ import annotations

import contextlib
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekey.commands.doc_data import ArgDoc
from fakekey.core.registry import REGISTRY, Command
from fakekey.net.registry import load_all
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, encode_command

SCRATCH = 9
DEADLINE = 10.0  # seconds for one connection's whole exchange: far above any honest run
READ_CAP = 8 << 20  # bytes read back before the fuzzer leaves a huge reply (server-side streaming)

# Keys of every type, the same in database 0 and in the scratch database.
SEED: list[tuple[Any, ...]] = [
    ("SET", "str", "hello"), ("SET", "num", "42"), ("SET", "flt", "2.5"),
    ("SET", "bits", "\x0f\xf0"), ("SET", "ttl", "v", "EX", "100000"),
    ("RPUSH", "l", "a", "b", "c", "1", "2"), ("SADD", "s", "a", "b", "c"), ("SADD", "si", "1", "2", "3"),
    ("ZADD", "z", "1", "a", "2", "b", "2.5", "c", "-inf", "d"),
    ("HSET", "h", "f", "v", "n", "1", "x", "2.5"), ("HEXPIRE", "h", "100000", "FIELDS", "1", "x"),
    ("XADD", "x", "1-1", "f", "v"), ("XADD", "x", "2-1", "f", "w", "g", "1"),
    ("XGROUP", "CREATE", "x", "g", "0"), ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "x", ">"),
    # PFCOUNT writes its cached cardinality into the value (Valkey too): done once here,
    # so a later PFCOUNT finds the cache valid and leaves the bytes as they are
    ("PFADD", "hll", "a", "b", "c"), ("PFCOUNT", "hll"), ("GEOADD", "geo", "13.361389", "38.115556", "Palermo"),
]
SEED_KEYS = ["str", "num", "flt", "bits", "ttl", "l", "s", "si", "z", "h", "x", "hll", "geo"]
KEY = st.sampled_from([*SEED_KEYS, "missing", "k1", "k2", "{t}a", ""])

# Argument pools: ordinary values, members the seeds hold, and hostile forms.
INTEGER = st.one_of(
    st.sampled_from(["0", "1", "-1", "2", "3", "10", "-2", "100"]),
    st.sampled_from(["9223372036854775807", "-9223372036854775808", "9223372036854775808",
                     "4294967296", "2147483648", "-2147483649", "1e3", "0x10", "", " 1", "1.5", "x"]),
    st.integers(-1000, 1000).map(str),
)
DOUBLE = st.one_of(
    st.sampled_from(["0", "1.5", "-1", "inf", "-inf", "+inf", "nan", "1e308", "1e309", "-0",
                     "0x1p3", "(1", "", "1e", ".", "5e-324"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
STRING = st.one_of(
    st.sampled_from(["a", "b", "c", "f", "v", "g", "Palermo", "*", "?", "[a-", "\\", "0", "-",
                     "+", "$", ">", "0-0", "1-1", "*-*", "", "\x00", "\r\n", "a b", "\xff\xfe"]),
    st.binary(max_size=12),
)
# Arguments that decide how long a command may wait: kept short, never "forever".
WAITING = {"integer": st.sampled_from(["1", "2", "-1", "x"]),
           "double": st.sampled_from(["0.01", "0.002", "-1", "x"])}


def _text(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode("utf-8", "surrogateescape")


# A family's own keys come first, so most requests meet the type they work on.
FAMILY_KEYS = {"string": ["str", "num", "flt", "bits"], "bitmap": ["bits", "str"], "list": ["l"],
               "set": ["s", "si"], "sorted-set": ["z", "geo"], "geo": ["geo"], "hash": ["h"],
               "stream": ["x"], "hyperloglog": ["hll"]}


def keys_for(group: str) -> st.SearchStrategy[str]:
    own = FAMILY_KEYS.get(group)
    return st.one_of(st.sampled_from(own), KEY) if own else KEY


def _leaf(arg: ArgDoc, keys: st.SearchStrategy[str]) -> st.SearchStrategy[list[bytes]]:
    kind = arg.type
    if kind == "pure-token":
        return st.just([_text(arg.token or arg.name)])
    if kind in ("oneof", "block"):
        children = [argument(child, keys) for child in arg.arguments]
        if not children:
            return st.just([])
        if kind == "oneof":
            return st.one_of(children)
        return st.tuples(*children).map(lambda parts: [a for part in parts for a in part])
    if arg.name in ("timeout", "milliseconds") and kind in WAITING:
        values = WAITING[kind]
    else:
        values = {"key": keys, "integer": INTEGER, "double": DOUBLE,
                  "unix-time": INTEGER}.get(kind, STRING)
    return values.map(lambda v: [_text(v)])


_ARGUMENTS: dict[int, st.SearchStrategy[list[bytes]]] = {}


def argument(arg: ArgDoc, keys: st.SearchStrategy[str]) -> st.SearchStrategy[list[bytes]]:
    """Requests' words for one documented argument: its token, repetitions, absence (the
    docs of a command are its own, so one strategy a documented argument is enough)."""
    cached = _ARGUMENTS.get(id(arg))
    if cached is not None:
        return cached
    one = _leaf(arg, keys)
    token = [_text(arg.token)] if arg.token and arg.type != "pure-token" else []
    if "multiple" in arg.flags:
        groups = st.lists(one, min_size=1, max_size=3)
        if "multiple_token" in arg.flags:  # the token before each repetition
            one = groups.map(lambda gs: [w for g in gs for w in (*token, *g)])
        else:
            one = groups.map(lambda gs: [*token, *(w for g in gs for w in g)])
    elif token:
        one = one.map(lambda words: [*token, *words])
    if "optional" in arg.flags:
        one = st.one_of(st.just([]), one)
    _ARGUMENTS[id(arg)] = one
    return one


def leaves(commands: list[Command]) -> list[Command]:
    out = []
    for cmd in commands:
        out.extend(cmd.subcommands.values() if cmd.subcommands else [cmd])
    return out


@st.composite
def request(draw: st.DrawFn, cmd: Command) -> list[bytes]:
    """One request for `cmd`: its documented arguments, then sometimes mangled."""
    head = [part.upper().encode() for part in cmd.name.split("|")]
    docs = cmd.docs.arguments if cmd.docs else []
    keys = keys_for(cmd.group)
    words = [w for arg in docs for w in draw(argument(arg, keys))]
    # a blocking command keeps its short timeout where it is: mangled, it may wait for good
    mangles = ["none"] * 6 + (["case"] if "blocking" in cmd.flags else ["drop", "extra", "swap", "case"])
    mangle = draw(st.sampled_from(mangles))
    if mangle == "drop" and words:
        del words[draw(st.integers(0, len(words) - 1))]
    elif mangle == "extra":
        words.insert(draw(st.integers(0, len(words))), _text(draw(st.one_of(STRING, INTEGER))))
    elif mangle == "swap" and len(words) > 1:
        i, j = draw(st.integers(0, len(words) - 1)), draw(st.integers(0, len(words) - 1))
        words[i], words[j] = words[j], words[i]
    elif mangle == "case":
        head = [part.lower() for part in head]
    return head + words


load_all()
EVERY = leaves(list(REGISTRY.all()))
# Never generated where they could reach beyond the scratch database or stop the server
# (DEBUG, CONFIG, SHUTDOWN, ACL SETUSER ... are admin), hang a connection (CLIENT REPLY
# OFF leaves no reply to wait for), move the clock, or run Lua (fuzzed on its own below).
CROSS_DB = {"select", "move", "swapdb", "copy", "flushall", "migrate", "reset"}
OUT = CROSS_DB | {"client|reply", "fakekey.clock", "monitor", "eval", "evalsha", "eval_ro",
                  "evalsha_ro", "fcall", "fcall_ro"}


def writable(cmd: Command) -> bool:
    return "admin" not in cmd.flags and cmd.name not in OUT


def reading(cmd: Command) -> bool:
    return writable(cmd) and "readonly" in cmd.flags


WRITERS = [cmd for cmd in EVERY if writable(cmd)]
READERS = [cmd for cmd in EVERY if reading(cmd)]


def requests_of(commands: list[Command]) -> st.SearchStrategy[list[bytes]]:
    return st.sampled_from(commands).flatmap(request)


# --- the server under fire ------------------------------------------------------------------


class Harness:
    """A private server with keys of every type, its baseline digest, and a watcher."""

    def __init__(self) -> None:
        self.server = Server(config={"enable-debug-command": "yes"}).start()
        self.errors: list[dict[str, Any]] = []
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(lambda _loop, context: self.errors.append(context))
        self.watcher = RawClient(self.server.host, self.server.port, timeout=DEADLINE)
        self.seed(0)
        self.baseline = self.watcher.call("DEBUG", "DIGEST")
        assert self.baseline[0] == "+" and self.baseline[1] != b"0" * 40
        self.counts: Counter[str] = Counter()

    def seed(self, db: int) -> None:
        self.watcher.call("SELECT", db)
        for reply in self.watcher.pipeline(*SEED):
            assert reply[0] != "-", reply
        self.watcher.call("SELECT", 0)

    def connect(self) -> socket.socket:
        sock = socket.create_connection((self.server.host, self.server.port), timeout=DEADLINE)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def converse(self, data: bytes, db: int = 0) -> str:
        """Send well-formed requests, then RESET and an ECHO of a fresh token; read until
        the token comes back, or the server closes (QUIT, a protocol error), or the reply
        is too big to read. Anything else within DEADLINE is a hang."""
        return self.converse_all([data], db)[0]

    def converse_all(self, streams: list[bytes], db: int = 0) -> list[str]:
        """`converse` on one connection per stream, all sent before any is read (so one
        connection's commands may wake or race another's)."""
        head = encode_command("SELECT", db) if db else b""
        tokens = [uuid.uuid4().hex.encode() for _ in streams]
        socks = [self.connect() for _ in streams]
        try:
            for sock, data, token in zip(socks, streams, tokens, strict=True):
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    sock.sendall(head + data + encode_command("RESET") + encode_command("ECHO", token))
            self.served()
            outcomes = [self._read(sock, lambda seen, t=token: t in seen)
                        for sock, token in zip(socks, tokens, strict=True)]
        finally:
            for sock in socks:
                sock.close()
        self.counts.update(outcomes)
        return outcomes

    def spray(self, data: bytes, cuts: list[int]) -> str:
        """Send garbage in pieces, then end the sending side: the server must answer what
        it can and close the connection within DEADLINE."""
        with self.connect() as sock:
            start = 0
            with contextlib.suppress(OSError):  # closed already (a protocol error): fine
                for cut in sorted({c % (len(data) + 1) for c in cuts} | {len(data)}):
                    sock.sendall(data[start:cut])
                    start = cut
                sock.shutdown(socket.SHUT_WR)
            self.served()
            outcome = self._read(sock, lambda seen: False)
        self.counts[outcome] += 1
        return outcome

    def served(self) -> None:
        """Another client is served while the fuzzed connection's input is in flight."""
        assert self.watcher.call("PING") == ("+", b"PONG")

    @staticmethod
    def _read(sock: socket.socket, done: Any) -> str:
        seen = bytearray()
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(1 << 16)
            except ConnectionResetError:
                return "closed"
            except TimeoutError:
                break
            if not chunk:
                return "closed"
            seen += chunk
            if done(seen[-4096:] if len(seen) > 8192 else seen):
                return "answered"
            if len(seen) > READ_CAP:
                return "huge reply"
        raise AssertionError(f"no answer and no close within {DEADLINE}s; got {bytes(seen[-300:])!r}")

    def check(self) -> None:
        """The server is whole: no internal error, alive, serving, the digest unchanged
        once the scratch database is emptied."""
        self.counts["inputs"] += 1
        assert not self.errors, self.errors
        assert self.server.loop_thread is not None and self.server.loop_thread.is_alive()
        assert self.watcher.call("PING") == ("+", b"PONG")
        assert self.watcher.pipeline(("SELECT", SCRATCH), ("FLUSHDB",), ("SELECT", 0))[1] == ("+", b"OK")
        assert self.watcher.call("DEBUG", "DIGEST") == self.baseline

    def stop(self) -> None:
        self.watcher.close()
        self.server.stop()
        loop = self.server._loop
        assert loop is not None
        loop.set_exception_handler(None)  # the loop is every in-process server's: as it was


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    print(f"\nfuzz counts: {dict(h.counts)}")
    h.stop()


FUZZ = settings(deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])


# --- raw bytes, hostile frames, inline quoting (database 0) ------------------------------------

CUTS = st.lists(st.integers(0, 10_000), max_size=6)
LENGTH = st.sampled_from([b"-1", b"-2", b"-9223372036854775808", b"0", b"1", b"2", b"3",
                          b"1048577", b"536870913", b"2147483648", b"9223372036854775807",
                          b"99999999999999999999", b"x", b"", b" 3", b"3 ", b"+3", b"0x3", b"3.0",
                          b"\x00", b"1\r", b"-0"])
SAFE_NAMES = [cmd.name.split("|")[0].upper().encode() for cmd in READERS] + [b"PING", b"ECHO", b"NOPE"]
WORD = st.one_of(st.sampled_from(SAFE_NAMES), KEY.map(_text), STRING.map(_text), INTEGER.map(_text))


@st.composite
def frame(draw: st.DrawFn, depth: int = 0) -> bytes:
    """A RESP request-ish frame: any type byte, lengths true or hostile, aggregates nested
    in requests (which Valkey refuses), payloads shorter or longer than announced."""
    kind = draw(st.sampled_from(["bulk", "bulk", "array", "line", "junk"] if depth < 4 else ["bulk", "line"]))
    if kind == "bulk":
        payload = draw(WORD)
        length = draw(st.one_of(st.just(str(len(payload)).encode()), LENGTH))
        return b"$" + length + b"\r\n" + payload + draw(st.sampled_from([b"\r\n", b"\r\n", b"", b"\n", b"xx"]))
    if kind == "array":
        items = draw(st.lists(frame(depth + 1), max_size=4))
        length = draw(st.one_of(st.just(str(len(items)).encode()), LENGTH))
        return b"*" + length + b"\r\n" + b"".join(items)
    if kind == "line":
        prefix = draw(st.sampled_from([b"+", b"-", b":", b",", b"#", b"_", b"%", b"~", b">", b"|", b"(", b"="]))
        return prefix + draw(WORD) + b"\r\n"
    return draw(st.binary(max_size=16))


@st.composite
def nested(draw: st.DrawFn) -> bytes:
    """A request whose arguments are aggregates, deeply: `*1 *1 *1 ... $4 PING`."""
    depth = draw(st.integers(2, 5000))
    return b"*1\r\n" * depth + encode_command("PING")[4:]


QUOTES = st.sampled_from([b'"', b"'", b"\\", b'\\"', b"\\x", b"\\x4", b"\\x41", b"\\n", b'""', b"''",
                          b' ', b"\t", b'"a"b', b"'a'b", b'"\\', b"\\'", b"\x00", b"\r", b"\n"])


@st.composite
def inline(draw: st.DrawFn) -> bytes:
    """An inline command with odd quoting: unbalanced quotes, escapes, quotes glued to text."""
    parts = [draw(st.sampled_from(SAFE_NAMES))]
    for _ in range(draw(st.integers(0, 5))):
        parts.append(draw(st.one_of(WORD, QUOTES)) + draw(st.one_of(st.just(b""), QUOTES)))
    return b" ".join(parts) + draw(st.sampled_from([b"\r\n", b"\n", b"", b"\r"]))


@FUZZ
@given(garbage=st.binary(min_size=1, max_size=2048), cuts=CUTS)
def test_raw_bytes(harness, garbage, cuts):
    harness.spray(garbage, cuts)
    harness.check()


@FUZZ
@given(frames=st.lists(st.one_of(frame(), nested(), inline()), min_size=1, max_size=6), cuts=CUTS)
def test_hostile_frames_nesting_and_quoting(harness, frames, cuts):
    harness.spray(b"".join(frames), cuts)
    harness.check()


# --- commands of every family with random arguments -------------------------------------------


@FUZZ
@given(batch=st.lists(requests_of(READERS), min_size=1, max_size=8))
def test_read_only_commands_keep_the_digest(harness, batch):
    """Read-only commands of every family over database 0's keys of every type."""
    harness.converse(b"".join(encode_command(*argv) for argv in batch))
    harness.check()


@FUZZ
@given(batch=st.lists(requests_of(WRITERS), min_size=1, max_size=8),
       transaction=st.booleans(), connections=st.integers(1, 3))
def test_commands_of_every_family_stay_in_their_database(harness, batch, transaction, connections):
    """Any command (writes included) in the scratch database, seeded with every type, from
    one to three connections at once; in a MULTI now and then. The server survives, and
    database 0 is untouched."""
    harness.seed(SCRATCH)
    shares = [batch[i::connections] for i in range(connections)]
    if transaction:
        shares[0] = [[b"MULTI"], *shares[0], [b"EXEC"]]
    streams = [b"".join(encode_command(*argv) for argv in share) for share in shares]
    harness.converse_all(streams, db=SCRATCH)
    harness.check()


WRITES = [cmd for cmd in WRITERS if "write" in cmd.flags]


@FUZZ
@given(batch=st.lists(requests_of(WRITES), min_size=1, max_size=4))
def test_refused_writes_leave_the_data_whole(harness, batch):
    """Write commands of every family on database 0 itself: one that answers an error
    must leave the keyspace exactly as it was (a write that succeeds is undone by
    seeding the database again, which gives the baseline digest back)."""
    watcher = harness.watcher
    for argv in batch:
        reply = watcher.call(*argv)
        if reply[0] != "-":
            watcher.pipeline(("SELECT", 0), ("FLUSHDB",))
            harness.seed(0)
        assert watcher.call("DEBUG", "DIGEST") == harness.baseline, (argv, reply)
    harness.check()


def test_every_command_once(harness):
    """Each generated command at least once, whatever the profile draws: one example of
    every writable command, in the scratch database."""
    for cmd in WRITERS:
        argv = _plain_request(cmd)
        harness.seed(SCRATCH)
        harness.converse(encode_command(*argv), db=SCRATCH)
        harness.check()


def _plain_request(cmd: Command) -> list[bytes]:
    """The command with its required arguments filled in plainly (first choice each)."""
    words = [part.upper().encode() for part in cmd.name.split("|")]
    for arg in cmd.docs.arguments if cmd.docs else []:
        words += _plain(arg)
    return words


def _plain(arg: ArgDoc) -> list[bytes]:
    if "optional" in arg.flags:
        return []
    token = [_text(arg.token)] if arg.token else []
    if arg.type == "pure-token":
        return token
    if arg.type == "oneof":
        return token + (_plain(arg.arguments[0]) if arg.arguments else [])
    if arg.type == "block":
        return token + [w for child in arg.arguments for w in _plain(child)]
    value = {"key": b"str", "integer": b"1", "double": b"0.01", "unix-time": b"1"}.get(arg.type, b"a")
    return [*token, value]


# --- random Lua ------------------------------------------------------------------------------

LUA_TOKENS = st.sampled_from([
    "local", "if", "then", "else", "elseif", "end", "return", "and", "or", "not", "nil", "true",
    "false", "do", "+", "-", "*", "/", "%", "^", "#", "..", "==", "~=", "<=", ">=", "<", ">", "=",
    "(", ")", "{", "}", "[", "]", ";", ":", ",", ".", "...", "redis", "call", "pcall", "KEYS",
    "ARGV", "string", "rep", "table", "cjson", "decode", "encode", "cmsgpack", "unpack", "pack",
    "bit", "struct", "x", "y", "redis.call", "redis.pcall", "tonumber", "tostring", "error",
    "setmetatable", "getmetatable", "rawset", "_G", "0", "1", "-1", "1e308", "0x7fffffff", "2^53",
    "'a'", '"b"', "'\\0'", "'\\300'", "'\\xff'", "[[long]]", "[==[x]==]", "'unterminated", '"\\',
    "--", "--[[", "]]", "'get'", "'set'", "'str'", "'h'", "'l'", "'z'",
])
LUA_STRING = st.sampled_from(["'a'", "''", "'str'", "'l'", "'h'", "'s'", "'z'", "'x'", "'num'",
                              "'missing'", "'1'", "'-1'", "'inf'", "'1e400'", "'\\0'", "'*'",
                              "'9223372036854775808'", "KEYS[1]", "ARGV[1]", "tostring(1/0)"])
LUA_VALUE = st.one_of(LUA_STRING, st.sampled_from(["1", "-1", "0", "1.5", "2^63", "-2^63", "1e308",
                                                   "0/0", "nil", "true", "false", "{}", "{1, 'a'}"]))
SCRIPT_COMMANDS = [cmd for cmd in WRITERS if "noscript" not in cmd.flags]


def _lua_quote(word: bytes) -> str:
    return '"' + "".join(f"\\{b:03d}" for b in word) + '"'


@st.composite
def lua_call(draw: st.DrawFn) -> str:
    """redis.call / redis.pcall / pcall(redis.call) of a documented command."""
    argv = draw(requests_of(SCRIPT_COMMANDS))
    args = [_lua_quote(word) for word in argv]
    args += draw(st.lists(LUA_VALUE, max_size=2))  # non-string arguments too
    how = draw(st.sampled_from(["redis.pcall({})", "pcall(redis.call, {})", "redis.call({})"]))
    return how.format(", ".join(args))


LUA_EXPRESSION = st.one_of(
    lua_call(),
    LUA_VALUE,
    st.builds("string.rep({}, {})".format, LUA_STRING, st.sampled_from(["1e9", "2^31", "-1", "3", "1e10", "nil"])),
    st.builds("cjson.decode({})".format, st.sampled_from([
        "string.rep('[', 2000)", "'{\"a\":[1,2,{\"b\":null}]}'", "'[1e400]'", "'\"\\\\ud800\"'",
        "'{'", "string.rep('{\"a\":', 100)", "'[' .. string.rep('1,', 1000) .. '1]'"])),
    st.builds("cjson.encode({})".format, st.sampled_from(["{1, 2, {3}}", "{a = 1/0}", "{[1] = 1, x = 2}"])),
    st.builds("cmsgpack.unpack({})".format, st.sampled_from(["'\\xdd\\xff\\xff\\xff\\xff'", "'\\xc1'",
                                                             "string.rep('\\x91', 5000)", "''"])),
    st.builds("cmsgpack.pack({})".format, LUA_VALUE),
    st.builds("struct.unpack({}, {})".format, st.sampled_from(["'>i4'", "'c0'", "'i99'", "'!'"]), LUA_STRING),
    st.builds("bit.band({}, {})".format, LUA_VALUE, LUA_VALUE),
    st.builds("redis.sha1hex({})".format, LUA_VALUE),
    st.builds("tonumber({})".format, LUA_VALUE),
    st.builds("redis.error_reply({})".format, LUA_VALUE),
    st.builds("redis.status_reply({})".format, LUA_VALUE),
    st.builds("unpack({{}}, 1, {})".format, st.sampled_from(["1e8", "3", "-1"])),
    st.builds("{{{}, {{{}, {{{}}}}}}}".format, LUA_VALUE, LUA_VALUE, LUA_VALUE),
)
LUA_STATEMENT = st.one_of(
    st.builds("local v = {}".format, LUA_EXPRESSION),
    st.builds("{}".format, lua_call()),
    st.builds("redis.setresp({})".format, st.sampled_from(["2", "3", "4", "'x'"])),
    st.builds("if {} then return {} end".format, LUA_EXPRESSION, LUA_EXPRESSION),
    st.builds("if not {} then error({}) end".format, LUA_EXPRESSION, LUA_VALUE),
)
LUA_RETURN = st.one_of(st.just(""), st.builds("return {}".format, LUA_EXPRESSION))  # last only
LUA_PROGRAM = st.builds(lambda body, last: "\n".join([*body, last]),
                        st.lists(LUA_STATEMENT, min_size=1, max_size=5), LUA_RETURN)
# no loop keywords, no function definitions: an endless script is BUSY by design, not a bug
LUA_SOUP = st.lists(LUA_TOKENS, min_size=1, max_size=30).map(" ".join)


@FUZZ
@given(source=st.one_of(LUA_SOUP, LUA_PROGRAM), keys=st.lists(KEY, max_size=2),
       args=st.lists(STRING, max_size=2), read_only=st.booleans())
def test_random_lua(harness, source, keys, args, read_only):
    """EVAL of token soup and of valid-ish programs calling redis.call with random
    arguments, in the scratch database: answered, and database 0 untouched."""
    harness.seed(SCRATCH)
    verb = "EVAL_RO" if read_only else "EVAL"
    harness.converse(encode_command(verb, source, len(keys), *keys, *args), db=SCRATCH)
    harness.check()
