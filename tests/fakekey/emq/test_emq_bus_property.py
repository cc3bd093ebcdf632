"""EMQ.APPEND on random batches: a batch of valid envelopes is appended whole, exactly as
XADD MAXLEN ~ would append each; a batch with any invalid envelope writes nothing and
answers what EMQ.PUBLISH answers for the first invalid one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

STREAM = "emq:{orders}:stream"
TWIN = "emq:{twin}:stream"
SCRATCH = "emq:{scratch}:stream"
NOW = 1_700_000_000_000
ALLOWED = (b"id", b"type", b"data", b"source", b"time", b"trace")

names = st.sampled_from([*ALLOWED, b"id", b"type", b"data", b"ID", b"extra", b""])
values = st.binary(max_size=4)
envelopes = st.lists(st.tuples(names, values), max_size=7)
batches = st.lists(envelopes, min_size=1, max_size=5)


def is_valid(pairs: list[tuple[bytes, bytes]]) -> bool:
    fields = [name for name, _ in pairs]
    return (all(f in ALLOWED for f in fields) and len(set(fields)) == len(fields)
            and {b"id", b"type", b"data"} <= set(fields))


def words_of(pairs: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [w for pair in pairs for w in pair]


@pytest.fixture(scope="module")
def client(server: Server) -> Iterator[RawClient]:
    with RawClient(server.host, server.port) as c:
        yield c


def expected_error(client: RawClient, batch: list[list[tuple[bytes, bytes]]],
                   words: list) -> tuple[str, bytes] | None:
    """What the batch must answer: None when every envelope is valid, else the refusal of
    the first invalid one (EMQ.PUBLISH's answer for it, or the count's for an empty one),
    unless the call is too short for APPEND's arity."""
    if len(words) < 3:
        return ("-", b"ERR wrong number of arguments for 'emq.append' command")
    for pairs in batch:
        if not pairs:
            return ("-", b"EMQARG n must be a positive integer")
        if not is_valid(pairs):
            return client.call("EMQ.PUBLISH", 1, SCRATCH, 0, *words_of(pairs))
    return None


@given(batch=batches, seed=st.lists(envelopes.filter(is_valid), max_size=3),
       maxlen=st.sampled_from([0, 1, 3]))
def test_a_batch_is_written_whole_or_not_at_all(client: RawClient, batch: list, seed: list,
                                                maxlen: int) -> None:
    client.call("FLUSHALL")
    client.call("FAKEKEY.CLOCK", "SET", NOW)  # both streams draw their ids from one instant
    for pairs in seed:
        client.call("XADD", STREAM, "*", *words_of(pairs))
        client.call("XADD", TWIN, "*", *words_of(pairs))
    before = client.call("DUMP", STREAM)
    words = [w for pairs in batch for w in (len(pairs), *words_of(pairs))]
    error = expected_error(client, batch, words)
    reply = client.call("EMQ.APPEND", 1, STREAM, maxlen, *words)
    if error is not None:
        assert error[0] == "-" and reply == error
        assert client.call("DUMP", STREAM) == before
        return
    trim = ["MAXLEN", "~", maxlen] if maxlen else []
    twin_ids = [plain(client.call("XADD", TWIN, *trim, "*", *words_of(pairs))) for pairs in batch]
    assert plain(reply) == twin_ids
    assert plain(client.call("XRANGE", STREAM, "-", "+")) == plain(client.call("XRANGE", TWIN, "-", "+"))
    assert plain(client.call("XRANGE", STREAM, twin_ids[0], "+")) == [
        [sid, words_of(pairs)] for sid, pairs in zip(twin_ids, batch, strict=True)]
