"""The MULTI queue's memory as Valkey counts it: CLIENT LIST multi-mem (argument bytes
plus a pointer per argument), freed when the transaction is doomed, and limited with the
query buffer by client-query-buffer-limit."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target


def fields_of(observer: RawClient, client_id: int) -> dict[str, str]:
    line = observer.call("CLIENT", "LIST", "ID", client_id)[1].decode()
    return dict(re.findall(r"(\S+?)=(\S*)", line))


@pytest.fixture
def pair(target: Target) -> Iterator[tuple[RawClient, RawClient, int]]:
    """A client that queues, another that watches its CLIENT LIST line, and its id."""
    with target.raw() as queuer, target.raw() as observer:
        yield queuer, observer, queuer.call("CLIENT", "ID")[1]


def multi_state(observer: RawClient, client_id: int) -> tuple[int, int]:
    fields = fields_of(observer, client_id)
    return int(fields["multi"]), int(fields["multi-mem"])


def test_multi_mem_counts_each_queued_argument(pair):
    queuer, observer, cid = pair
    assert multi_state(observer, cid) == (-1, 0)
    assert queuer.call("MULTI") == ("+", b"OK")
    assert multi_state(observer, cid) == (0, 0)
    queuer.call("SET", "a", "b")
    assert multi_state(observer, cid) == (1, 5 + 3 * 8)
    queuer.call("GET", "abc")
    assert multi_state(observer, cid) == (2, 29 + 6 + 2 * 8)
    queuer.call("SET", "x" * 100, "y" * 1000)
    assert multi_state(observer, cid) == (3, 51 + 1103 + 3 * 8)
    assert queuer.call("EXEC")[0] == "*"
    assert multi_state(observer, cid) == (0, 0)  # a client that ran MULTI keeps a count


def test_multi_count_shows_once_multi_or_watch_ran(pair):
    queuer, observer, cid = pair
    assert queuer.call("EXEC")[0] == "-"
    assert multi_state(observer, cid) == (-1, 0)
    assert queuer.call("WATCH", "k") == ("+", b"OK")
    assert queuer.call("UNWATCH") == ("+", b"OK")
    assert multi_state(observer, cid) == (0, 0)


def test_a_queueing_error_frees_the_queue(pair):
    queuer, observer, cid = pair
    queuer.call("MULTI")
    queuer.call("SET", "a", "b")
    assert queuer.call("NOSUCHCOMMAND")[0] == "-"
    assert multi_state(observer, cid) == (0, 0)
    assert queuer.call("PING") == ("+", b"QUEUED")
    assert multi_state(observer, cid) == (0, 0)
    assert queuer.call("EXEC")[0] == "-"


def test_a_touched_watched_key_frees_the_queue(pair):
    queuer, observer, cid = pair
    queuer.call("WATCH", "watched")
    queuer.call("MULTI")
    queuer.call("SET", "a", "b")
    assert observer.call("SET", "watched", "1") == ("+", b"OK")
    assert multi_state(observer, cid) == (0, 0)
    assert queuer.call("SET", "a", "b") == ("+", b"QUEUED")
    assert multi_state(observer, cid) == (0, 0)
    assert queuer.call("EXEC") == ("*", None)


@pytest.fixture
def small_query_buffer(target: Target) -> Iterator[None]:
    with target.raw() as client:
        assert client.call("CONFIG", "SET", "client-query-buffer-limit", "1mb") == ("+", b"OK")
    yield
    with target.raw() as client:
        assert client.call("CONFIG", "SET", "client-query-buffer-limit", "1gb") == ("+", b"OK")


def queue_sets(client: RawClient, count: int, size: int = 300_000) -> list[tuple[str, object]]:
    return [client.call("SET", f"k{i}", "v" * size) for i in range(count)]


def test_the_queue_counts_against_the_query_buffer_limit(target, small_query_buffer):
    with target.raw() as client:
        client.call("MULTI")
        assert queue_sets(client, 3) == [("+", b"QUEUED")] * 3
        assert client.call("EXEC") == ("*", [("+", b"OK")] * 3)
    with target.raw() as client:
        client.call("MULTI")
        assert queue_sets(client, 3) == [("+", b"QUEUED")] * 3
        with pytest.raises(OSError):  # the queue and the 4th request pass 1mb: closed
            client.call("SET", "k4", "v" * 300_000)
            client.call("PING")


def test_a_doomed_queue_holds_no_memory(target, small_query_buffer):
    with target.raw() as client:
        client.call("MULTI")
        assert client.call("NOSUCHCOMMAND")[0] == "-"
        assert queue_sets(client, 5) == [("+", b"QUEUED")] * 5
        assert client.call("EXEC")[1].startswith(b"EXECABORT")
