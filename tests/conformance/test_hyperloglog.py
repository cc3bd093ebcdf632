"""HyperLogLog: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST, byte for byte.

Expected values were read from a real Valkey 9.1.2: short values literally, the long ones
(a dense HyperLogLog is 12304 bytes) as the first 16 hex digits of their SHA-256. A test
passing on both targets shows fakekey writes Valkey's bytes, so an HLL made by either
server loads into the other with SET.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import plain

HLL_WRONGTYPE = ("-", b"WRONGTYPE Key is not a valid HyperLogLog string value.")
WRONGTYPE = ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value")
INVALIDOBJ = ("-", b"INVALIDOBJ Corrupted HLL object detected")
SPARSE = b"HYLL\x01\x00\x00\x00"
DENSE = b"HYLL\x00\x00\x00\x00"
STALE = bytes(7) + b"\x80"  # a cached cardinality of 0 marked stale
EMPTY = SPARSE + STALE + b"\x7f\xff"  # one XZERO opcode: 16384 registers at 0


def words(prefix: str, count: int, start: int = 0) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, start + count)]


def digest(reply: tuple[str, bytes]) -> str:
    kind, value = reply
    assert kind == "$" and value is not None
    return hashlib.sha256(value).hexdigest()[:16]


def dense_value(registers: list[int], card: bytes = STALE) -> bytes:
    """A dense HyperLogLog written out by hand: 6-bit registers packed from the low bit."""
    packed = 0
    for i, value in enumerate(registers):
        packed |= value << (6 * i)
    return DENSE + card + packed.to_bytes(12288, "little")


def encoding(r, key: str) -> bytes:
    kind, value = r.call("PFDEBUG", "ENCODING", key)
    assert kind == "+"
    return value


@pytest.fixture
def sparse_max(r) -> Iterator[None]:
    """Tests that change hll-sparse-max-bytes get the default back."""
    yield
    r.call("CONFIG", "SET", "hll-sparse-max-bytes", "3000")


# --- PFADD and the sparse bytes ----------------------------------------------------------------


def test_pfadd_writes_valkeys_sparse_bytes(r):
    assert r.call("PFADD", "h", "a", "b", "c") == (":", 1)
    assert r.call("GET", "h") == ("$", SPARSE + STALE + bytes.fromhex("60f38050b1844bfb80425a"))
    assert r.call("PFADD", "h", "a") == (":", 0)
    assert r.call("PFADD", "h") == (":", 0)
    assert r.call("PFCOUNT", "h") == (":", 3)
    # the count is cached in the header, valid until the next change
    assert r.call("GET", "h") == ("$", SPARSE + bytes.fromhex("0300000000000000") + bytes.fromhex("60f38050b1844bfb80425a"))
    assert r.call("PFADD", "h", "d") == (":", 1)
    assert r.call("GET", "h") == (
        "$", SPARSE + bytes.fromhex("0300000000000080") + bytes.fromhex("5c7b8044768050b1844bfb80425a"))
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"Z:7292 v:1,1 Z:1143 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603")
    assert r.call("PFCOUNT", "h") == (":", 4)
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"raw")


def test_pfadd_without_elements_creates_an_empty_hll(r):
    assert r.call("PFADD", "e") == (":", 1)
    assert r.call("GET", "e") == ("$", EMPTY)
    assert r.call("PFADD", "e") == (":", 0)
    assert r.call("PFCOUNT", "e") == (":", 0)
    assert r.call("PFCOUNT", "missing") == (":", 0)
    assert r.call("EXISTS", "missing") == (":", 0)


# The sparse bytes depend on the order of the additions (Valkey tidies a few opcodes around
# each change, not the whole string): 1000 elements one by one, 7 at a time, all at once.
@pytest.mark.parametrize("batch", [1, 7, 1000])
def test_sparse_bytes_after_many_additions(r, batch):
    elements = words("e", 1000)
    for i in range(0, len(elements), batch):
        r.call("PFADD", "h", *elements[i:i + batch])
    assert encoding(r, "h") == b"sparse"
    assert digest(r.call("GET", "h")) == "519a7f0764d633e0"
    assert r.call("PFCOUNT", "h") == (":", 1008)


def test_promotion_to_dense_past_the_sparse_limit(r):
    assert r.call("PFADD", "h", *words("e", 1500)) == (":", 1)
    assert encoding(r, "h") == b"sparse"
    kind, value = r.call("GET", "h")
    assert len(value) == 2719
    assert r.call("PFADD", "h", *words("e", 500, 1500)) == (":", 1)
    assert encoding(r, "h") == b"dense"
    assert digest(r.call("GET", "h")) == "2a070facb0df784f"
    assert r.call("STRLEN", "h") == (":", 12304)
    assert r.call("PFCOUNT", "h") == (":", 2000)
    assert r.call("PFADD", "h", *words("e", 100000, 2000)[::97]) == (":", 1)
    assert digest(r.call("GET", "h")) == "d35afdcbe870c253"
    assert r.call("PFCOUNT", "h") == (":", 3037)


@pytest.mark.parametrize("limit, dense_after", [("0", 1), ("40", 8), ("100", 29)])
def test_hll_sparse_max_bytes_sets_the_promotion(r, sparse_max, limit, dense_after):
    assert r.call("CONFIG", "SET", "hll-sparse-max-bytes", limit) == ("+", b"OK")
    encodings = []
    for element in words("x", 40):
        r.call("PFADD", "h", element)
        encodings.append(encoding(r, "h"))
    assert encodings.index(b"dense") == dense_after - 1
    assert r.call("PFCOUNT", "h") == (":", 40)


def test_hll_sparse_max_bytes_bytes_at_a_low_limit(r, sparse_max):
    r.call("CONFIG", "SET", "hll-sparse-max-bytes", "300")
    r.call("PFADD", "h", *words("x", 60))
    assert encoding(r, "h") == b"sparse"
    assert digest(r.call("GET", "h")) == "d8590994d1845ee0"
    r.call("PFADD", "h", *words("x", 200, 60))
    assert encoding(r, "h") == b"dense"
    assert digest(r.call("GET", "h")) == "b3738358669cb16e"


# --- PFMERGE and PFCOUNT of several keys -------------------------------------------------------


def test_pfmerge_of_sparse_hlls_stays_sparse(r):
    r.call("PFADD", "a", *words("a", 300))
    r.call("PFADD", "b", *words("a", 300, 200))
    assert r.call("PFMERGE", "m", "a", "b", "missing") == ("+", b"OK")
    assert encoding(r, "m") == b"sparse"
    assert digest(r.call("GET", "m")) == "a5c9c6dcac117820"
    assert r.call("PFCOUNT", "m") == (":", 496)
    assert r.call("PFCOUNT", "a", "b") == (":", 496)
    # the destination is one of the sources
    r.call("PFADD", "c", "only-in-c")
    assert r.call("PFMERGE", "c", "a") == ("+", b"OK")
    assert r.call("PFCOUNT", "c") == (":", 301)


def test_pfmerge_with_a_dense_source_is_dense(r):
    r.call("PFADD", "a", *words("a", 300))
    r.call("PFADD", "d", *words("d", 3000))
    assert encoding(r, "d") == b"dense"
    assert r.call("PFMERGE", "m", "a", "d") == ("+", b"OK")
    assert encoding(r, "m") == b"dense"
    assert digest(r.call("GET", "m")) == "9c2d81441263b463"
    assert r.call("PFCOUNT", "m") == (":", 3313)
    assert r.call("PFCOUNT", "a", "d", "missing") == (":", 3313)
    # merging into an existing sparse destination turns it dense, its header kept
    r.call("PFCOUNT", "a")
    assert r.call("PFMERGE", "a", "d") == ("+", b"OK")
    assert r.call("GETRANGE", "a", "0", "15") == ("$", DENSE + bytes.fromhex("2c01000000000080"))


def test_pfmerge_into_a_sparse_destination_that_overflows(r, sparse_max):
    r.call("CONFIG", "SET", "hll-sparse-max-bytes", "200")
    r.call("PFADD", "a", *words("a", 60))
    r.call("PFADD", "b", *words("b", 60))
    assert encoding(r, "a") == b"sparse" and encoding(r, "b") == b"sparse"
    assert r.call("PFMERGE", "m", "a", "b") == ("+", b"OK")
    assert encoding(r, "m") == b"dense"
    assert digest(r.call("GET", "m")) == "ab3507d5cde53197"


def test_pfcount_of_several_keys_writes_nothing(r):
    r.call("PFADD", "a", *words("a", 50))
    r.call("PFADD", "b", *words("b", 50))
    before = [r.call("GET", "a"), r.call("GET", "b")]
    assert r.call("PFCOUNT", "a", "b") == (":", 100)
    assert [r.call("GET", "a"), r.call("GET", "b")] == before
    assert r.call("PFCOUNT", "a") == (":", 50)
    assert r.call("GET", "a") != before[0]  # one key: the count is cached


# --- values loaded with SET ----------------------------------------------------------------------


def test_a_valkey_sparse_hll_loaded_with_set(r):
    made_by_valkey = SPARSE + STALE + bytes.fromhex("5c7b8044768050b1844bfb80425a")
    assert r.call("SET", "h", made_by_valkey) == ("+", b"OK")
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"embstr")
    assert r.call("PFCOUNT", "h") == (":", 4)
    assert r.call("OBJECT", "ENCODING", "h") == ("$", b"raw")  # PFCOUNT unshares the value
    assert r.call("PFADD", "h", "a", "b", "c", "d") == (":", 0)
    assert r.call("PFADD", "h", "e") == (":", 1)
    assert r.call("PFCOUNT", "h") == (":", 5)


@pytest.mark.parametrize("registers, count, changed, after_add", [
    ([(i * 7) % 20 for i in range(16384)], 115208, 1, "6aab292fdf542032"),
    ([i % 64 for i in range(16384)], 375261, 1, "dff93c1288590f7b"),
    ([40] * 16384, 12994641697113596, 0, "59eaa3e42f537499"),
    # no register below 51: Ertl's estimate divides by zero; Valkey answers LLONG_MIN
    ([51] * 16384, -9223372036854775808, 0, "e3d861bb48ae781f"),
])
def test_a_dense_hll_loaded_with_set(r, registers, count, changed, after_add):
    value = dense_value(registers)
    r.call("SET", "d", value)
    assert r.call("PFCOUNT", "d") == (":", count)
    assert r.call("PFCOUNT", "d", "missing") == (":", count)
    assert r.call("PFADD", "d", *words("z", 200)) == (":", changed)
    assert digest(r.call("GET", "d")) == after_add
    if not changed:
        assert r.call("GETRANGE", "d", "16", "-1") == ("$", value[16:])  # registers untouched


def test_a_cached_count_is_answered_without_reading_the_registers(r):
    r.call("SET", "h", SPARSE + bytes.fromhex("2a00000000000000") + b"\x40\x63")  # 100 registers only
    assert r.call("PFCOUNT", "h") == (":", 42)
    assert r.call("PFCOUNT", "h", "h") == INVALIDOBJ


# --- corrupted and foreign values ---------------------------------------------------------------


@pytest.mark.parametrize("value", [
    b"abc",
    b"HYLL",
    b"HYLX\x01\x00\x00\x00" + STALE + b"\x7f\xff",
    b"HYLL\x02\x00\x00\x00" + STALE + b"\x7f\xff",  # unknown encoding
    DENSE + STALE + b"\x7f\xff",  # dense of the wrong length
    DENSE + STALE + bytes(12289),
    b"12345678901234567",
])
def test_strings_that_are_not_hlls(r, value):
    r.call("SET", "s", value)
    for command in (("PFADD", "s", "x"), ("PFCOUNT", "s"), ("PFCOUNT", "s", "missing"),
                    ("PFMERGE", "d", "s"), ("PFMERGE", "s"), ("PFDEBUG", "ENCODING", "s")):
        assert r.call(*command) == HLL_WRONGTYPE
    assert r.call("GET", "s") == ("$", value)
    assert r.call("EXISTS", "d") == (":", 0)


def test_other_types_answer_the_usual_wrongtype(r):
    r.call("RPUSH", "l", "a")
    for command in (("PFADD", "l", "x"), ("PFCOUNT", "l"), ("PFCOUNT", "l", "x"), ("PFMERGE", "l"),
                    ("PFMERGE", "d", "l"), ("PFDEBUG", "GETREG", "l")):
        assert r.call(*command) == WRONGTYPE


def test_corrupted_sparse_hlls(r):
    short = SPARSE + STALE + b"\x40\x63"  # covers 100 registers of 16384
    r.call("SET", "h", short)
    assert r.call("PFCOUNT", "h") == INVALIDOBJ
    assert r.call("PFCOUNT", "h", "missing") == INVALIDOBJ
    assert r.call("PFMERGE", "m", "h") == INVALIDOBJ
    assert r.call("EXISTS", "m") == (":", 0)
    assert r.call("PFDEBUG", "TODENSE", "h") == INVALIDOBJ
    assert r.call("PFDEBUG", "GETREG", "h") == INVALIDOBJ
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"Z:100")
    # an element for a register past the last opcode is refused, one inside is taken
    assert r.call("PFADD", "h", "a") == INVALIDOBJ
    assert r.call("GET", "h") == ("$", short)
    assert r.call("PFADD", "h", "x35") == (":", 1)  # register 57
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"z:57 v:1,1 z:42")
    assert r.call("PFADD", "h", "x276", "a", "x146") == INVALIDOBJ  # the first one stays
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"z:40 v:4,1 z:16 v:1,1 z:42")


def test_corrupted_sparse_keeps_the_changes_made_before_the_error(r):
    r.call("SET", "h", SPARSE + STALE + b"\x7f\xff\x7f\xff")  # 32768 registers
    assert r.call("PFCOUNT", "h") == INVALIDOBJ
    assert r.call("PFADD", "h", "a", "b") == (":", 1)
    assert r.call("GET", "h") == ("$", SPARSE + STALE + bytes.fromhex("71a6844bfb80425a7fff"))
    assert r.call("PFCOUNT", "h", "missing") == INVALIDOBJ


def test_an_hll_with_bytes_appended(r):
    r.call("PFADD", "h", "a")
    assert r.call("APPEND", "h", b"\x80") == (":", 22)
    assert r.call("PFCOUNT", "h") == INVALIDOBJ
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"Z:12711 v:2,1 Z:3672 v:1,1")


# --- PFCOUNT's write-back, WATCH, notifications, the dirty counter --------------------------


def _watched_exec_aborts(target, r, key, *command) -> bool:
    other = target.raw(2)
    try:
        assert r.call("WATCH", key) == ("+", b"OK")
        other.call(*command)
        r.call("MULTI")
        r.call("PING")
        kind, value = r.call("EXEC")
        return value is None
    finally:
        other.close()


def test_watch_sees_pfadd_and_the_first_pfcount_only(target, r):
    r.call("PFADD", "h", "a")
    assert _watched_exec_aborts(target, r, "h", "PFADD", "h", "b")
    assert not _watched_exec_aborts(target, r, "h", "PFADD", "h", "b")  # no change
    assert _watched_exec_aborts(target, r, "h", "PFCOUNT", "h")  # writes the cached count
    assert not _watched_exec_aborts(target, r, "h", "PFCOUNT", "h")  # reads it
    assert not _watched_exec_aborts(target, r, "h", "PFCOUNT", "h", "missing")
    assert not _watched_exec_aborts(target, r, "h", "PFDEBUG", "TODENSE", "h")  # silent rewrite
    assert _watched_exec_aborts(target, r, "h", "PFMERGE", "h")


NOTIFIED = [
    ("KEA", [("PFADD", "h", "a"), ("PFADD", "h", "a"), ("PFCOUNT", "h"), ("PFMERGE", "m", "h"), ("PFMERGE", "m"),
             ("PFDEBUG", "TODENSE", "m"), ("PFDEBUG", "GETREG", "h"), ("PFCOUNT", "h", "m")],
     [("pfadd", b"h"), ("pfadd", b"m"), ("pfadd", b"m")]),
    # PFMERGE reads its sources as a read command does: a missing one is a keymiss
    ("KEmn", [("PFMERGE", "m", "miss1"), ("PFCOUNT", "miss2"), ("PFCOUNT", "miss3", "m"), ("PFADD", "n"),
              ("PFDEBUG", "ENCODING", "miss4")],
     [("keymiss", b"m"), ("keymiss", b"miss1"), ("new", b"m"), ("keymiss", b"miss2"), ("keymiss", b"miss3"),
      ("new", b"n")]),
]


@pytest.mark.parametrize("flags, commands, expected", NOTIFIED)
def test_notifications(target, flags, commands, expected):
    actor, listener = target.raw(2), target.raw(2)
    try:
        actor.call("CONFIG", "SET", "notify-keyspace-events", flags)
        listener.call("PSUBSCRIBE", "__keyevent@0__:*")
        for command in commands:
            actor.call(*command)
        actor.call("CONFIG", "SET", "notify-keyspace-events", "KE$")
        actor.call("SET", "end", "1")
        events = []
        while not events or events[-1] != ("set", b"end"):
            _, (_, _, (_, channel), (_, key)) = listener.read()
            events.append((channel.decode().split(":", 1)[1], key))
        assert events[:-1] == expected
    finally:
        actor.call("CONFIG", "SET", "notify-keyspace-events", "")
        actor.close()
        listener.close()


def _changes(r) -> int:
    kind, text = r.call("INFO", "persistence")
    line = next(x for x in text.split(b"\r\n") if x.startswith(b"rdb_changes_since_last_save:"))
    return int(line.split(b":")[1])


def test_dirty_counter(r2):
    steps = [
        (("PFADD", "h", "a", "b", "c"), 4),  # the key, then each register changed
        (("PFADD", "h", "a", "d"), 1),
        (("PFADD", "h", "a"), 0),
        (("PFCOUNT", "h"), 1),
        (("PFCOUNT", "h"), 0),
        (("PFCOUNT", "h", "missing"), 0),
        (("PFMERGE", "m", "h"), 1),
        (("PFDEBUG", "TODENSE", "m"), 1),
        (("PFDEBUG", "TODENSE", "m"), 0),
        (("PFDEBUG", "GETREG", "h"), 1),
        (("PFDEBUG", "ENCODING", "h"), 0),
    ]
    for command, moved in steps:
        before = _changes(r2)
        r2.call(*command)
        assert (command, _changes(r2) - before) == (command, moved)


# --- PFDEBUG and PFSELFTEST ---------------------------------------------------------------------


def test_pfdebug(r, proto):
    r.call("PFADD", "h", "a", "b")
    assert r.call("PFDEBUG", "encoding", "h") == ("+", b"sparse")
    assert r.call("PFDEBUG", "DECODE", "h") == ("$", b"Z:12711 v:2,1 Z:3068 v:1,1 Z:603")
    kind, registers = r.call("PFDEBUG", "GETREG", "h")  # turns it dense
    assert kind == "*" and len(registers) == 16384
    assert [(i, v) for i, (_, v) in enumerate(registers) if v] == [(12711, 2), (15780, 1)]
    assert r.call("PFDEBUG", "ENCODING", "h") == ("+", b"dense")
    assert r.call("PFDEBUG", "DECODE", "h") == ("-", b"ERR HLL encoding is not sparse")
    assert r.call("PFDEBUG", "TODENSE", "h") == (":", 0)
    assert r.call("PFCOUNT", "h") == (":", 2)
    assert r.call("PFDEBUG", "GETREG", "missing") == ("-", b"ERR The specified key does not exist")
    assert r.call("PFDEBUG", "nosuch", "missing") == ("-", b"ERR The specified key does not exist")
    assert r.call("PFDEBUG", "NoSuch", "h") == ("-", b"ERR Unknown PFDEBUG subcommand 'NoSuch'")
    assert r.call("PFDEBUG", "SIMD", "x") == ("-", b"ERR Argument must be ON or OFF")


def test_pfdebug_simd_reports_a_state(r):
    kind, state = r.call("PFDEBUG", "SIMD", "OFF")
    assert (kind, state) == ("+", b"disabled")
    kind, state = r.call("PFDEBUG", "SIMD", "on")
    assert kind == "+" and state in (b"enabled", b"disabled")  # Valkey: whether the CPU has AVX2


def test_pfselftest(r2):
    assert r2.call("PFSELFTEST") == ("+", b"OK")


@pytest.mark.parametrize("command", [("PFADD",), ("PFCOUNT",), ("PFMERGE",), ("PFDEBUG", "x"),
                                     ("PFDEBUG", "GETREG", "k", "x"), ("PFSELFTEST", "x")])
def test_arity(r2, command):
    name = command[0].lower()
    assert r2.call(*command) == ("-", f"ERR wrong number of arguments for '{name}' command".encode())


def test_command_info(r2):
    infos = plain(r2.call("COMMAND", "INFO", "pfadd", "pfcount", "pfmerge", "pfdebug", "pfselftest"))
    assert [info[:7] for info in infos] == [
        [b"pfadd", -2, [b"write", b"denyoom", b"fast"], 1, 1, 1, [b"@write", b"@hyperloglog", b"@fast"]],
        [b"pfcount", -2, [b"readonly"], 1, -1, 1, [b"@read", b"@hyperloglog", b"@slow"]],
        [b"pfmerge", -2, [b"write", b"denyoom"], 1, -1, 1, [b"@write", b"@hyperloglog", b"@slow"]],
        [b"pfdebug", 3, [b"write", b"denyoom", b"admin"], 2, 2, 1,
         [b"@write", b"@hyperloglog", b"@admin", b"@slow", b"@dangerous"]],
        [b"pfselftest", 1, [b"admin"], 0, 0, 0, [b"@hyperloglog", b"@admin", b"@slow", b"@dangerous"]],
    ]
    key_flags = [[dict(zip(spec[::2], spec[1::2], strict=True))[b"flags"] for spec in info[8]] for info in infos]
    assert key_flags == [[[b"RW", b"insert"]], [[b"RW", b"access"]], [[b"RW", b"access", b"insert"], [b"RO", b"access"]],
                         [[b"RW", b"access"]], []]
