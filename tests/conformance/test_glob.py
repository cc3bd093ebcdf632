"""Glob patterns as KEYS and SCAN MATCH apply them: fakekey and a real Valkey side by side,
on fixed and on random key sets, with fakekey.codecs.glob checked against both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.codecs.glob import glob_match
from fakekey.testing.raw import RawClient

DB = 7  # a database of its own: nothing here uses the per-test reset

KEYSET = [
    b"", b"a", b"b", b"z", b"A", b"ab", b"abc", b"abd", b"aXc", b"a*c", b"a?c", b"a[c", b"a]c",
    b"a\\c", b"a-c", b"a^c", b"*", b"?", b"[", b"]", b"\\", b"-", b"^", b"[]", b"foo:1",
    b"foo:22", b"foo:bar:3", b"bar:foo", b"hello", b"hallo", b"hxllo", b"heeeello",
    b"\x80", b"\xff", b"a\xffc", b"\x00", b"a\x00c", b"x" * 40, b"xy" * 20,
]

PATTERNS = [
    b"*", b"**", b"", b"?", b"??", b"???", b"a*", b"*c", b"a*c", b"*b*", b"a?c", b"foo:*",
    b"foo:*:*", b"*:*", b"h?llo", b"h*llo", b"h[ae]llo", b"h[^e]llo", b"h[a-b]llo", b"h[b-a]llo",
    b"[a-z]", b"[z-a]", b"[A-Z]", b"[^a]", b"[^a-z]", b"[]", b"[]]", b"[^]", b"[^]]", b"[",
    b"[a", b"[a-", b"[a-]", b"a[", b"a[*", b"[\\]]", b"[\\", b"a\\*c", b"a\\?c", b"a\\[c",
    b"a\\", b"\\", b"\\\\", b"a\\\\c", b"\\a*", b"[-]", b"[a-c-]", b"[--]", b"a[-]c", b"[^-]",
    b"a[]]c", b"a[[]c", b"[]a]*", b"[\x7f-\x81]", b"[\x00-\x7f]", b"[\x80-\xff]", b"[a-\xff]",
    b"*\xff*", b"a\x00*", b"?\x00?", b"x*x*x*x*x*", b"*y*y*y*", b"[x]*[y]", b"*[!x]",
    b"[*]", b"[?]", b"*?", b"?*", b"*?*", b"a**c", b"*a*b*c*", b"[ab]*[cd]",
]


def conformance_conftest(config: pytest.Config):
    """The conformance conftest module, as pytest loaded it (it owns the started targets)."""
    here = Path(__file__).with_name("conftest.py")
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "__file__", None) and Path(plugin.__file__) == here:
            return plugin
    raise RuntimeError("tests/conformance/conftest.py is not loaded")


@pytest.fixture(scope="module")
def servers(request: pytest.FixtureRequest) -> Iterator[dict[str, RawClient]]:
    """One client on fakekey and one on Valkey, both in database DB."""
    conftest = conformance_conftest(request.config)
    clients = {name: conftest._started_target(name).raw(2) for name in ("fakekey", "valkey")}
    for client in clients.values():
        assert client.call("SELECT", DB) == ("+", b"OK")
    yield clients
    for client in clients.values():
        client.call("FLUSHDB")
        client.close()


def load(servers: dict[str, RawClient], keys: list[bytes]) -> None:
    for client in servers.values():
        client.call("FLUSHDB")
        if keys:
            client.call("MSET", *[part for key in keys for part in (key, b"1")])


def keys_matching(client: RawClient, pattern: bytes) -> set[bytes]:
    kind, items = client.call("KEYS", pattern)
    assert kind == "*", items
    return {value for _, value in items}


def scan_matching(client: RawClient, pattern: bytes) -> set[bytes]:
    found: set[bytes] = set()
    cursor = b"0"
    while True:
        kind, (cur, page) = client.call("SCAN", cursor, "MATCH", pattern, "COUNT", "7")
        found.update(value for _, value in page[1])
        cursor = cur[1]
        if cursor == b"0":
            return found


def expected_by_glob(keys: list[bytes], pattern: bytes) -> set[bytes]:
    """What fakekey.codecs.glob says; KEYS and SCAN take every key for exactly '*'."""
    if pattern == b"*":
        return set(keys)
    return {key for key in keys if glob_match(pattern, key)}


def disagreements(servers: dict[str, RawClient], keys: list[bytes], pattern: bytes) -> list:
    valkey = keys_matching(servers["valkey"], pattern)
    answers = {
        "fakekey KEYS": keys_matching(servers["fakekey"], pattern),
        "fakekey.codecs.glob": expected_by_glob(keys, pattern),
    }
    return [(pattern, who, sorted(got ^ valkey)) for who, got in answers.items() if got != valkey]


def test_fixed_patterns_match_as_valkey(servers):
    load(servers, KEYSET)
    wrong = [d for pattern in PATTERNS for d in disagreements(servers, KEYSET, pattern)]
    assert wrong == []


def test_scan_match_agrees_with_keys(servers):
    load(servers, KEYSET)
    for pattern in PATTERNS[:40]:
        valkey = keys_matching(servers["valkey"], pattern)
        assert scan_matching(servers["valkey"], pattern) == valkey, pattern
        assert scan_matching(servers["fakekey"], pattern) == valkey, pattern


# Pattern syntax, a byte past 0x7f (signed in C ranges) and plain letters.
ALPHABET = b"ab*?[]^\\-z\xff"


def words(max_size: int) -> st.SearchStrategy[bytes]:
    return st.lists(st.sampled_from(ALPHABET), max_size=max_size).map(bytes)


@given(
    keys=st.lists(words(5), min_size=1, max_size=25, unique=True),
    patterns=st.lists(words(8), min_size=1, max_size=8),
)
def test_random_patterns_match_as_valkey(servers, keys, patterns):
    load(servers, keys)
    wrong = [d for pattern in patterns for d in disagreements(servers, keys, pattern)]
    assert wrong == []
