"""DEBUG DIGEST and DEBUG DIGEST-VALUE: Valkey's SHA1 signature of the data.

The fixed cases pin the 40 hex digits Valkey 9.1.2 answers for one value of every type in
every encoding (and the corner cases: -0, inf and 1e15 scores, integer-like members, field
TTLs, an expired field, stream deletions and groups, key TTLs, several databases); each
runs on both targets, so a pass on both proves the same computation. The property test
builds the same random dataset on fakekey and on valkey and compares the digests."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target, find_valkey_binary

ZERO = b"0" * 40
TUNED = ["zset-max-listpack-entries", "set-max-intset-entries", "set-max-listpack-entries",
         "hash-max-listpack-entries", "list-max-listpack-size"]

# name -> the commands that build key `k` (plus, for some, other keys); "SLEEP" waits 20 ms
CASES: dict[str, list[tuple[Any, ...]]] = {
    "string-int": [("SET", "k", "12345")],
    "string-embstr": [("SET", "k", "hello")],
    "string-raw": [("SET", "k", "x" * 100), ("APPEND", "k", "\x00\xff")],
    "string-empty": [("SET", "k", "")],
    "list-listpack": [("RPUSH", "k", "a", "1", "", "b")],
    "list-quicklist": [("CONFIG", "SET", "list-max-listpack-size", "2"),
                       ("RPUSH", "k", "a", "1", "", "b", "c", "-7")],
    "list-reversed": [("RPUSH", "k", "b", "", "1", "a")],
    "set-intset": [("SADD", "k", "3", "-1", "100000000000")],
    "set-listpack": [("SADD", "k", "a", "1", "b")],
    "set-hashtable": [("CONFIG", "SET", "set-max-listpack-entries", "1"),
                      ("SADD", "k", "b", "1", "a")],
    "zset-listpack": [("ZADD", "k", "-0", "a", "1.5", "b", "1e15", "c", "inf", "d", "0.1", "e",
                       "1e-7", "f", "-inf", "7", "3", "-3")],
    "zset-skiplist": [("CONFIG", "SET", "zset-max-listpack-entries", "0"),
                      ("ZADD", "k", "-0", "a", "1.5", "b", "1e15", "c", "inf", "d", "0.1", "e",
                       "1e-7", "f", "-inf", "7", "3", "-3")],
    "zset-big-scores": [("ZADD", "k", "1e300", "a", "-2.5e-300", "b", "123456789012345678", "c",
                         "4611686018427387904", "d", "0.30000000000000004", "e")],
    "zset-grisu-not-shortest": [("ZADD", "k", "66027599256038864", "a", "5e-324", "b",
                                 "1.7976931348623157e308", "c", "123456789.125", "d")],
    "hash-listpack": [("HSET", "k", "f", "v", "1", "2", "", "empty")],
    "hash-hashtable": [("CONFIG", "SET", "hash-max-listpack-entries", "1"),
                       ("HSET", "k", "f", "v", "1", "2", "", "empty")],
    "hash-field-ttl": [("HSET", "k", "f", "v", "1", "2", "", "empty"),
                       ("HEXPIRE", "k", "1000", "FIELDS", "1", "f")],
    "hash-expired-field": [("DEBUG", "SET-ACTIVE-EXPIRE", "0"),
                           ("HSET", "k", "f", "v", "1", "2", "", "empty", "gone", "x"),
                           ("HPEXPIRE", "k", "1", "FIELDS", "1", "gone"), ("SLEEP",)],
    "stream": [("XADD", "k", "1-1", "f", "v"), ("XADD", "k", "1-2", "f", "w", "g", "12"),
               ("XADD", "k", "5-0", "a", "b")],
    "stream-deleted-and-groups": [("XADD", "k", "1-1", "f", "v"),
                                  ("XADD", "k", "1-2", "f", "w", "g", "12"),
                                  ("XADD", "k", "5-0", "a", "b"), ("XADD", "k", "6-0", "c", "d"),
                                  ("XDEL", "k", "6-0"), ("XGROUP", "CREATE", "k", "g", "0"),
                                  ("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "k", ">")],
    "stream-emptied": [("XADD", "k", "1-1", "f", "v"), ("XDEL", "k", "1-1")],
    "with-ttl": [("SET", "k", "hello"), ("EXPIRE", "k", "1000")],
    "expired-not-deleted": [("DEBUG", "SET-ACTIVE-EXPIRE", "0"), ("SET", "k", "hello", "PX", "1"),
                            ("SLEEP",)],
    "several-keys-and-dbs": [("SET", "k", "v"), ("SELECT", "3"), ("SET", "k", "v"),
                             ("RPUSH", "l", "x"), ("SELECT", "0"), ("SADD", "s", "m")],
}

EXPECTED_VALUE = {  # DEBUG DIGEST-VALUE k, as Valkey 9.1.2 answers
    "string-int": b"e1cf90774e995ae03de66e8109dc5cb9d9c2dc83",
    "string-embstr": b"36b23a1456b2dce2c3ed252c456761301dba8060",
    "string-raw": b"37546905ff81c2711e64860938102b006de1f28d",
    "string-empty": b"8b3447c33a834b810e3e181b6fd6a2ee1020921c",
    "list-listpack": b"dbd4ca4c254e7ef7117bbdfe897f94db597845c5",
    "list-quicklist": b"aa4adc6e7ac60d5181ed0fe650d903e8ba56df26",
    "list-reversed": b"920249770ee6a0389e1827a612772ab7a54da41f",
    "set-intset": b"2bd902be83fd95f89c3c48b407aa90c64fa76ff3",
    "set-listpack": b"e8f32bbb1ad9bf537c8867de4f19fec9e001296d",
    "set-hashtable": b"e8f32bbb1ad9bf537c8867de4f19fec9e001296d",
    "zset-listpack": b"1194f173fbf476ca0348a558878d4cd9f7812295",
    "zset-skiplist": b"55b20f274f810cbdaad8c532d3a18519c8bd3c8c",
    "zset-big-scores": b"f6a7f410a2a4a2f3359c763569069b1102b23761",
    "zset-grisu-not-shortest": b"5bc2f19f7aa746c6c0ff3e653fd82451a706afec",
    "hash-listpack": b"b82883a491a04f82e414ca67ec4d2803e0b92359",
    "hash-hashtable": b"b82883a491a04f82e414ca67ec4d2803e0b92359",
    "hash-field-ttl": b"b82883a491a04f82e414ca67ec4d2803e0b92359",
    "hash-expired-field": b"b82883a491a04f82e414ca67ec4d2803e0b92359",
    "stream": b"0b978435cf67c22b52fdbbdec80856fdc62dc460",
    "stream-deleted-and-groups": b"0b978435cf67c22b52fdbbdec80856fdc62dc460",
    "stream-emptied": b"06bd01623de1d087bbd377851096317b1af476a2",
    "with-ttl": b"d037c4eb8a8b36b602fbced4000daeab0714c1e3",
    "expired-not-deleted": b"d037c4eb8a8b36b602fbced4000daeab0714c1e3",
    "several-keys-and-dbs": b"d79ee9fe5d5ad902d7f6620efc3b07b75ddd742f",
}
EXPECTED_DATASET = {  # DEBUG DIGEST after the same setup
    "string-int": b"f5faf050bcaa840acaedaf70b477448e8acd4aea",
    "string-embstr": b"d101db227d1e3b31616b18b0b8700f84c3ffa5e9",
    "string-raw": b"96a085a91c9cb3d1d0f4d7bca48217d7a27f8785",
    "string-empty": b"15784ec79e7a3914ea55650c4b22a0f1c4b3c499",
    "list-listpack": b"0f6b7ee1ec3ece9780cf98c860f22dd23260f06d",
    "list-quicklist": b"faddabfc3a853952f81971241e83620ee11fd5ce",
    "list-reversed": b"4bd6266c9be321f5063b2c6201ff3ea2e1efeddc",
    "set-intset": b"b1675067d472ef268abeabf7c58bd90526d7c66f",
    "set-listpack": b"e3c027dec5ce7f7036b46ef06deb9c1b09710f79",
    "set-hashtable": b"e3c027dec5ce7f7036b46ef06deb9c1b09710f79",
    "zset-listpack": b"a443d661302e3d6a2a603bd10d9b00207c7ca2e9",
    "zset-skiplist": b"768b4ea4d6745869b1a70090688b273e27778f82",
    "zset-big-scores": b"9f769a21f8f0b8f95dabb00dc06fd56d6cbcc1e5",
    "zset-grisu-not-shortest": b"28a8e7e278964b26a8913dbfe853e6491da939ea",
    "hash-listpack": b"b2859799e8722a0070a4773a944fb349c4e29483",
    "hash-hashtable": b"b2859799e8722a0070a4773a944fb349c4e29483",
    "hash-field-ttl": b"b2859799e8722a0070a4773a944fb349c4e29483",
    "hash-expired-field": b"b2859799e8722a0070a4773a944fb349c4e29483",
    "stream": b"fb5efdbde774c3c42ece305ccd39e8f13ed2c6ec",
    "stream-deleted-and-groups": b"fb5efdbde774c3c42ece305ccd39e8f13ed2c6ec",
    "stream-emptied": b"d50fb13f48b691bb48e1daf761a457f663070a69",
    "with-ttl": b"95d5f52bc5471efa1f0fdce29d0364c17b210e0c",
    "expired-not-deleted": b"95d5f52bc5471efa1f0fdce29d0364c17b210e0c",
    "several-keys-and-dbs": b"93de95eb4d3cfd088f5c37f5a08308d99f8f8174",
}


def build(client: RawClient, setup: list[tuple[Any, ...]]) -> None:
    for command in setup:
        if command == ("SLEEP",):
            time.sleep(0.02)
            continue
        assert client.call(*command)[0] != "-", command
    client.call("SELECT", "0")


@pytest.fixture
def tuned(target: Target) -> Iterator[None]:
    """Restore the encoding thresholds and active expiry the cases change."""
    with target.raw(2) as client:
        saved = {name: client.call("CONFIG", "GET", name)[1][1][1] for name in TUNED}
    yield
    with target.raw(2) as client:
        for name, value in saved.items():
            client.call("CONFIG", "SET", name, value)
        client.call("DEBUG", "SET-ACTIVE-EXPIRE", "1")


@pytest.mark.parametrize("name", list(CASES))
def test_digests_of_every_type_and_encoding(r, tuned, name):
    build(r, CASES[name])
    assert r.call("DEBUG", "DIGEST-VALUE", "k") == ("*", [("+", EXPECTED_VALUE[name])])
    assert r.call("DEBUG", "DIGEST") == ("+", EXPECTED_DATASET[name])


def test_empty_dataset_and_missing_keys(r):
    assert r.call("DEBUG", "DIGEST") == ("+", ZERO)
    assert r.call("DEBUG", "DIGEST-VALUE") == ("*", [])
    assert r.call("DEBUG", "DIGEST-VALUE", "nokey", "other") == ("*", [("+", ZERO), ("+", ZERO)])
    r.call("SELECT", "5")
    r.call("SET", "k", "v")
    r.call("DEL", "k")
    assert r.call("DEBUG", "DIGEST") == ("+", ZERO)  # an emptied database adds nothing


def test_digest_argument_errors(r2):
    assert r2.call("DEBUG", "DIGEST", "x") == (
        "-", b"ERR unknown subcommand or wrong number of arguments for 'DIGEST'. Try DEBUG HELP.")
    kind, lines = r2.call("DEBUG", "HELP")
    assert ("+", b"DIGEST-VALUE <key> [<key> ...]") in lines


def test_digest_value_reads_the_selected_database(r2):
    r2.call("SELECT", "2")
    r2.call("SET", "k", "hello")
    here = r2.call("DEBUG", "DIGEST-VALUE", "k")
    r2.call("SELECT", "0")
    assert r2.call("DEBUG", "DIGEST-VALUE", "k") == ("*", [("+", ZERO)])
    r2.call("SET", "k", "hello")
    assert r2.call("DEBUG", "DIGEST-VALUE", "k") == here


def test_order_matters_for_lists_and_streams_only(r2, tuned):
    r2.call("RPUSH", "l1", "a", "b")
    r2.call("RPUSH", "l2", "b", "a")
    r2.call("SADD", "s1", "a", "b")
    r2.call("SADD", "s2", "b", "a")
    r2.call("HSET", "h1", "a", "1", "b", "2")
    r2.call("HSET", "h2", "b", "2", "a", "1")
    r2.call("CONFIG", "SET", "hash-max-listpack-entries", "0")
    r2.call("HSET", "h3", "b", "2", "a", "1")  # a hashtable: same content, same digest
    _, (l1, l2, s1, s2, h1, h2, h3) = r2.call(
        "DEBUG", "DIGEST-VALUE", "l1", "l2", "s1", "s2", "h1", "h2", "h3")
    assert l1 != l2
    assert s1 == s2
    assert h1 == h2 == h3


# --- the property: the same random data gives the same digest on both targets -------------

def _why_not_both() -> str:
    if os.environ.get("FAKEKEY_TARGET_URL") or "valkey" not in os.environ.get("FAKEKEY_TARGETS", "valkey"):
        return "needs fakekey and a valkey-server it starts"
    if find_valkey_binary() is None and not os.environ.get("CI"):
        return "no valkey-server binary"
    return ""


BOTH = pytest.mark.skipif(bool(_why_not_both()), reason=_why_not_both() or "both targets run")


@pytest.fixture(scope="module")
def both(pytestconfig: pytest.Config) -> Iterator[tuple[RawClient, RawClient]]:
    conftest = pytestconfig.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    assert conftest is not None
    clients = (conftest._started_target("fakekey").raw(2), conftest._started_target("valkey").raw(2))
    yield clients
    for client in clients:
        client.call("FLUSHALL")
        client.close()


ITEM = st.one_of(
    st.binary(max_size=12),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: b"%d" % n),
    st.sampled_from([b"0", b"-0", b"01", b"1.5", b" 1", b"\x00"]),
)
SCORE = st.one_of(
    st.floats(allow_nan=False).map(repr),
    st.integers(-(2**60), 2**60).map(str),
    st.sampled_from(["-0", "inf", "-inf", "1e15", "0.1", "1e-7"]),
).map(str.encode)
VALUE = st.one_of(
    st.tuples(st.just("SET"), ITEM),
    st.tuples(st.just("RPUSH"), st.lists(ITEM, min_size=1, max_size=8)),
    st.tuples(st.just("SADD"), st.lists(ITEM, min_size=1, max_size=8)),
    st.tuples(st.just("ZADD"), st.lists(st.tuples(SCORE, ITEM), min_size=1, max_size=8)),
    st.tuples(st.just("HSET"), st.lists(st.tuples(ITEM, ITEM), min_size=1, max_size=8)),
    st.tuples(st.just("XADD"), st.lists(st.lists(ITEM, min_size=2, max_size=6), min_size=1, max_size=4)),
)
KEYS = st.dictionaries(st.tuples(st.integers(0, 2), st.binary(min_size=1, max_size=6)),
                       st.tuples(VALUE, st.booleans()), max_size=10)
SMALL = st.sampled_from([None, "0", "1", "2"])  # the encoding thresholds: default or tiny
DEFAULTS = {"zset-max-listpack-entries": "128", "set-max-intset-entries": "512",
            "set-max-listpack-entries": "128", "hash-max-listpack-entries": "512"}


def commands_for(db: int, key: bytes, value: tuple[str, Any], ttl: bool) -> list[tuple[Any, ...]]:
    kind, content = value
    out: list[tuple[Any, ...]] = [("SELECT", db)]
    if kind == "SET":
        out.append(("SET", key, content))
    elif kind in ("RPUSH", "SADD"):
        out.append((kind, key, *content))
    elif kind in ("ZADD", "HSET"):
        out.append((kind, key, *[part for pair in content for part in pair]))
    else:
        for seq, fields in enumerate(content, 1):
            out.append(("XADD", key, b"1-%d" % seq, *fields[: len(fields) // 2 * 2]))
    if ttl:
        out.append(("EXPIRE", key, 100_000))
    return out


@BOTH
@settings(max_examples=settings().max_examples, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(keys=KEYS, threshold=SMALL)
def test_same_random_data_same_digest_on_both(both, keys, threshold):
    fake, real = both
    for client in both:
        client.call("FLUSHALL")
        for name, default in DEFAULTS.items():
            client.call("CONFIG", "SET", name, threshold or default)
    try:
        for (db, key), (value, ttl) in keys.items():
            for command in commands_for(db, key, value, ttl):
                assert fake.call(*command) == real.call(*command), command
        fake.call("SELECT", "0")
        real.call("SELECT", "0")
        assert fake.call("DEBUG", "DIGEST") == real.call("DEBUG", "DIGEST")
        names = [key for (db, key) in keys if db == 0]
        assert fake.call("DEBUG", "DIGEST-VALUE", *names) == real.call("DEBUG", "DIGEST-VALUE", *names)
    finally:
        for client in both:
            for name, default in DEFAULTS.items():
                client.call("CONFIG", "SET", name, default)
