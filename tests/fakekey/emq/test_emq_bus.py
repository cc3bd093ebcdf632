"""EMQ.PUBLISH, EMQ.APPEND and EMQ.FAILURES.INCR: their checks in order, the entries they
write as the built-in consumer-group commands see them, a refused batch that writes
nothing, MAXLEN ~ trimming identical to XADD's, and a failure count with a fresh TTL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain

STREAM = "emq:{orders}:stream"
DLQ = "emq:{orders}:dlq"
FAILS = "emq:{orders}:failures:1700000000000-0"
OTHER = "emq:{refunds}:stream"
U64_MAX = 2**64 - 1
LLONG_MAX = 2**63 - 1

GOOD = ["id", "e1", "type", "order.created", "data", "{}"]


def envelope(n: int, *extra: str) -> list[str]:
    return ["id", f"e{n}", "type", "order.created", "data", f'{{"n":{n}}}', *extra]


def batch(*envelopes: list[str]) -> list[str | int]:
    """APPEND's words for these envelopes: each one's pair count, then its pairs."""
    words: list[str | int] = []
    for env in envelopes:
        words += [len(env) // 2, *env]
    return words


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


def bulk(text: str) -> tuple[str, bytes]:
    return ("$", text.encode())


def entry_id(now: int, seq: int = 0) -> str:
    return f"{now}-{seq}"


def as_pairs(fields: list[bytes]) -> dict[bytes, bytes]:
    return dict(zip(fields[::2], fields[1::2], strict=True))


def xrange(r: RawClient, key: str) -> list[tuple[bytes, list[bytes]]]:
    return [(sid, fields) for sid, fields in plain(r.call("XRANGE", key, "-", "+"))]


# --- the checks, in order ------------------------------------------------------------------


CHECKS = [
    # arity, by the registry
    (["EMQ.PUBLISH", 1, STREAM, 0, "id"], "ERR wrong number of arguments for 'emq.publish' command"),
    (["EMQ.APPEND", 1, STREAM, 0, 1, "id"], "ERR wrong number of arguments for 'emq.append' command"),
    (["EMQ.FAILURES.INCR", 1, FAILS], "ERR wrong number of arguments for 'emq.failures.incr' command"),
    (["EMQ.FAILURES.INCR", 1, FAILS, 10, 1], "ERR wrong number of arguments for 'emq.failures.incr' command"),
    # shape before layout
    (["EMQ.PUBLISH", 2, "nope", 0, *GOOD], "EMQSHAPE numkeys must be 1"),
    (["EMQ.APPEND", "x", "nope", 0, *batch(GOOD)], "EMQSHAPE numkeys must be 1"),
    (["EMQ.FAILURES.INCR", 0, FAILS, 10], "EMQSHAPE numkeys must be 1"),
    # layout before arguments
    (["EMQ.PUBLISH", 1, "emq:{orders}:pending", -1, *GOOD],
     "EMQLAYOUT key 1 must be emq:{orders}:stream or emq:{orders}:dlq"),
    (["EMQ.APPEND", 1, "orders", -1, *batch(GOOD)],
     "EMQLAYOUT key 1 must be emq:{<queue>}:stream or emq:{<queue>}:dlq"),
    (["EMQ.PUBLISH", 1, "emq:{orders}:Stream", 0, *GOOD],
     "EMQLAYOUT key 1 must be emq:{orders}:stream or emq:{orders}:dlq"),
    (["EMQ.FAILURES.INCR", 1, "emq:{orders}:failures:", 0],
     "EMQLAYOUT key 1 must be emq:{orders}:failures:<entry id>"),
    (["EMQ.FAILURES.INCR", 1, "emq:{orders}:failures", 10],
     "EMQLAYOUT key 1 must be emq:{orders}:failures:<entry id>"),
    # arguments before the envelopes
    (["EMQ.PUBLISH", 1, STREAM, -1, "id", "1", "type"], "EMQARG maxlen must be a non-negative integer"),
    (["EMQ.APPEND", 1, DLQ, "1.5", 0, "x", "y"], "EMQARG maxlen must be a non-negative integer"),
    (["EMQ.FAILURES.INCR", 1, FAILS, 0], "EMQARG ttl_ms must be a positive integer"),
    (["EMQ.FAILURES.INCR", 1, FAILS, "-5"], "EMQARG ttl_ms must be a positive integer"),
    (["EMQ.FAILURES.INCR", 1, FAILS, " 5"], "EMQARG ttl_ms must be a positive integer"),
    # the envelope: pairs, then unknown, then duplicate, then missing (id, type, data)
    (["EMQ.PUBLISH", 1, STREAM, 0, "id", "1", "nope"], "EMQENVELOPE field without a value"),
    (["EMQ.PUBLISH", 1, STREAM, 0, "id", "1", "id", "2", "nope", "3"], "EMQENVELOPE unknown field nope"),
    (["EMQ.PUBLISH", 1, STREAM, 0, *GOOD, "ID", "x"], "EMQENVELOPE unknown field ID"),
    (["EMQ.PUBLISH", 1, STREAM, 0, "data", "d", "data", "d"], "EMQENVELOPE duplicate field data"),
    (["EMQ.PUBLISH", 1, STREAM, 0, *GOOD, "trace", "t", "trace", "t"], "EMQENVELOPE duplicate field trace"),
    (["EMQ.PUBLISH", 1, STREAM, 0, "data", "d", "type", "t"], "EMQENVELOPE missing field id"),
    (["EMQ.PUBLISH", 1, STREAM, 0, "data", "d", "id", "i"], "EMQENVELOPE missing field type"),
    (["EMQ.PUBLISH", 1, STREAM, 0, "id", "i", "type", "t", "source", "s"], "EMQENVELOPE missing field data"),
    # APPEND: each count, then the words it needs, then that envelope
    (["EMQ.APPEND", 1, STREAM, 0, 0, "id", "1"], "EMQARG n must be a positive integer"),
    (["EMQ.APPEND", 1, STREAM, 0, "x", "id", "1"], "EMQARG n must be a positive integer"),
    (["EMQ.APPEND", 1, STREAM, 0, *batch(GOOD), "-1", "id", "1"], "EMQARG n must be a positive integer"),
    (["EMQ.APPEND", 1, STREAM, 0, 4, *GOOD], "EMQENVELOPE envelope is cut short"),
    (["EMQ.APPEND", 1, STREAM, 0, 2, "id", "1", "type", "t", 5], "EMQENVELOPE missing field data"),
    (["EMQ.APPEND", 1, STREAM, 0, 1, "nope", "1", 9], "EMQENVELOPE unknown field nope"),
    (["EMQ.APPEND", 1, STREAM, 0, *batch(GOOD, [*GOOD, "extra", "1"])], "EMQENVELOPE unknown field extra"),
]


@pytest.mark.parametrize(("argv", "error"), CHECKS, ids=[e for _, e in CHECKS])
def test_each_check_answers_in_order(r: RawClient, argv: list, error: str) -> None:
    assert r.call(*argv) == err(error)
    assert r.call("DBSIZE") == (":", 0)


def test_wrong_type_comes_after_the_envelope(r: RawClient) -> None:
    r.call("SET", STREAM, "x")
    r.call("HSET", FAILS, "f", "v")
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, "id", "1") == err("EMQENVELOPE missing field type")
    wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value")
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *GOOD) == wrongtype
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD)) == wrongtype
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 10) == wrongtype
    assert r.call("GET", STREAM) == bulk("x")


# --- the entries, as the consumer-group commands see them -----------------------------------


def test_published_and_appended_entries_are_read_acked_and_reclaimed(r: RawClient, now: int) -> None:
    assert r.call("XGROUP", "CREATE", STREAM, "workers", "$", "MKSTREAM") == ("+", b"OK")
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *envelope(1, "source", "shop")) == bulk(entry_id(now, 0))
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(envelope(2), envelope(3, "trace", "t3"))) == (
        "*", [bulk(entry_id(now, 1)), bulk(entry_id(now, 2))])
    r.call("FAKEKEY.CLOCK", "ADVANCE", 5)
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *envelope(4)) == bulk(entry_id(now + 5))

    read = plain(r.call("XREADGROUP", "GROUP", "workers", "w1", "COUNT", 10, "STREAMS", STREAM, ">"))
    streams = read if isinstance(read, dict) else dict(read)
    entries = streams[STREAM.encode()]
    assert [sid for sid, _ in entries] == [
        entry_id(now, 0).encode(), entry_id(now, 1).encode(), entry_id(now, 2).encode(),
        entry_id(now + 5).encode()]
    assert entries[0][1] == [b"id", b"e1", b"type", b"order.created", b"data", b'{"n":1}', b"source", b"shop"]
    assert as_pairs(entries[2][1])[b"trace"] == b"t3"

    assert r.call("XACK", STREAM, "workers", entry_id(now, 0), entry_id(now, 1)) == (":", 2)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1_000)
    claimed = plain(r.call("XAUTOCLAIM", STREAM, "workers", "w2", 500, "0"))
    assert claimed[0] == b"0-0"
    assert [sid for sid, _ in claimed[1]] == [entry_id(now, 2).encode(), entry_id(now + 5).encode()]
    pending = plain(r.call("XPENDING", STREAM, "workers"))
    assert pending[0] == 2 and pending[3] == [[b"w2", b"2"]]


def test_the_dead_letter_stream_takes_envelopes_too(r: RawClient, now: int) -> None:
    assert r.call("EMQ.PUBLISH", 1, DLQ, 0, *GOOD) == bulk(entry_id(now))
    assert r.call("TYPE", DLQ) == ("+", b"stream")


def test_ids_come_from_the_server_clock_after_the_stream_top(r: RawClient, now: int) -> None:
    r.call("XADD", STREAM, f"{now + 10}-3", "id", "x", "type", "t", "data", "d")
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *GOOD) == bulk(entry_id(now + 10, 4))
    r.call("FAKEKEY.CLOCK", "ADVANCE", 20)
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD, GOOD)) == (
        "*", [bulk(entry_id(now + 20, 0)), bulk(entry_id(now + 20, 1))])


# --- a refused batch writes nothing -----------------------------------------------------------


@pytest.fixture
def events(server: Server) -> Iterator[RawClient]:
    """A RESP2 subscriber to every keyspace event of db 0 (notifications on for the test)."""
    admin = RawClient(server.host, server.port)
    admin.call("CONFIG", "SET", "notify-keyspace-events", "KEA")
    sub = RawClient(server.host, server.port)
    sub.call("PSUBSCRIBE", "__keyspace@0__:*")
    yield sub
    sub.close()
    admin.call("CONFIG", "SET", "notify-keyspace-events", "")
    admin.close()


def next_event(sub: RawClient) -> tuple[bytes, bytes]:
    """(key, event) of the next keyspace notification."""
    _, channel, event = plain(sub.read())[1:]
    return channel.split(b":", 1)[1], event


REFUSED_BATCHES = [
    (batch(GOOD, GOOD[:4]), "EMQENVELOPE missing field data"),
    (batch(GOOD, GOOD, [*GOOD, "time", "1", "time", "2"]), "EMQENVELOPE duplicate field time"),
    ([*batch(GOOD), 0], "EMQARG n must be a positive integer"),
    ([*batch(GOOD), 3, "id", "2", "type", "t"], "EMQENVELOPE envelope is cut short"),
]


@pytest.mark.parametrize(("words", "error"), REFUSED_BATCHES, ids=[e for _, e in REFUSED_BATCHES])
def test_one_bad_envelope_refuses_the_whole_batch(r: RawClient, server: Server, events: RawClient,
                                                  words: list, error: str) -> None:
    r.call("EMQ.PUBLISH", 1, STREAM, 1, *GOOD)
    assert next_event(events) == (STREAM.encode(), b"xadd")
    before = r.call("DUMP", STREAM)
    r.call("WATCH", STREAM)
    assert r.call("EMQ.APPEND", 1, STREAM, 1, *words) == err(error)
    assert r.call("EMQ.APPEND", 1, OTHER, 0, *words) == err(error)
    assert r.call("DUMP", STREAM) == before
    assert r.call("EXISTS", OTHER) == (":", 0)
    r.call("MULTI")
    r.call("PING")
    assert plain(r.call("EXEC")) == [b"PONG"]  # the WATCHed key was not touched
    r.call("SET", "marker", "1")
    assert next_event(events) == (b"marker", b"set")  # nothing was announced before it


def test_a_batch_the_stream_cannot_take_whole_writes_nothing(r: RawClient) -> None:
    """The stream's ids run out inside the batch: XADD's error, before the first entry."""
    r.call("XADD", STREAM, "1-1", *GOOD)
    r.call("XSETID", STREAM, f"{U64_MAX}-{U64_MAX - 1}")
    before = r.call("DUMP", STREAM)
    exhausted = err("ERR The stream has exhausted the last possible ID, unable to add more items")
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD, GOOD)) == exhausted
    assert r.call("DUMP", STREAM) == before
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD)) == ("*", [bulk(f"{U64_MAX}-{U64_MAX}")])
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *GOOD) == exhausted
    assert r.call("XLEN", STREAM) == (":", 2)


def test_a_written_batch_announces_each_entry(r: RawClient, events: RawClient) -> None:
    r.call("WATCH", STREAM)
    r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD, GOOD))
    r.call("MULTI")
    r.call("PING")
    assert r.call("EXEC")[1] is None  # the WATCHed stream was written
    assert [next_event(events) for _ in range(2)] == [(STREAM.encode(), b"xadd")] * 2


# --- MAXLEN ~ ---------------------------------------------------------------------------------


def xadd_each(r: RawClient, key: str, envelopes: list[list[str]], maxlen: int) -> None:
    trim = ["MAXLEN", "~", maxlen] if maxlen else []
    for env in envelopes:
        r.call("XADD", key, *trim, "*", *env)


def same_stream(r: RawClient, a: str, b: str) -> None:
    assert xrange(r, a) == xrange(r, b)
    info_a, info_b = plain(r.call("XINFO", "STREAM", a)), plain(r.call("XINFO", "STREAM", b))
    assert info_a == info_b


@pytest.mark.parametrize("maxlen", [0, 1, 5, 150])
def test_append_trims_as_xadd_does(r: RawClient, maxlen: int) -> None:
    envelopes = [envelope(n) for n in range(260)]
    ids = plain(r.call("EMQ.APPEND", 1, STREAM, maxlen, *batch(*envelopes)))
    xadd_each(r, OTHER, envelopes, maxlen)
    assert len(ids) == 260
    same_stream(r, STREAM, OTHER)
    if maxlen:
        assert maxlen <= plain(r.call("XLEN", STREAM)) < 260
    else:
        assert r.call("XLEN", STREAM) == (":", 260)


def test_publish_trims_as_xadd_does_and_announces_xtrim(r: RawClient, events: RawClient) -> None:
    envelopes = [envelope(n) for n in range(120)]
    for env in envelopes:
        r.call("EMQ.PUBLISH", 1, STREAM, 10, *env)
    xadd_each(r, OTHER, envelopes, 10)
    same_stream(r, STREAM, OTHER)
    seen = events_until_marker(r, events)
    mine = [event for key, event in seen if key == STREAM.encode()]
    assert mine == [event for key, event in seen if key == OTHER.encode()]
    assert mine.count(b"xadd") == 120 and b"xtrim" in mine


def events_until_marker(r: RawClient, sub: RawClient) -> list[tuple[bytes, bytes]]:
    """Every keyspace event announced so far: write a marker key, read up to its event."""
    r.call("SET", "marker", "1")
    seen: list[tuple[bytes, bytes]] = []
    while (event := next_event(sub))[0] != b"marker":
        seen.append(event)
    return seen


# --- EMQ.FAILURES.INCR ------------------------------------------------------------------------


def test_failure_count_keeps_counting_with_a_fresh_ttl(r: RawClient) -> None:
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000) == (":", 1)
    assert r.call("PTTL", FAILS) == (":", 1_000)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 400)
    assert r.call("PTTL", FAILS) == (":", 600)
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000) == (":", 2)
    assert r.call("PTTL", FAILS) == (":", 1_000)
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 250) == (":", 3)
    assert r.call("PTTL", FAILS) == (":", 250)
    assert r.call("GET", FAILS) == bulk("3")
    assert r.call("OBJECT", "ENCODING", FAILS) == bulk("int")


def test_failure_count_expires_when_the_clock_passes_it(r: RawClient) -> None:
    r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000)
    r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000)
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1_000)
    assert r.call("GET", FAILS) == bulk("2")  # alive at its deadline, as in Valkey
    r.call("FAKEKEY.CLOCK", "ADVANCE", 1)
    assert r.call("EXISTS", FAILS) == (":", 0)
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000) == (":", 1)


def test_failure_count_on_a_persistent_counter_gains_a_ttl(r: RawClient) -> None:
    r.call("SET", FAILS, "41")
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 5_000) == (":", 42)
    assert r.call("PTTL", FAILS) == (":", 5_000)


def test_failure_count_announces_incrby_then_expire(r: RawClient, events: RawClient) -> None:
    r.call("EMQ.FAILURES.INCR", 1, FAILS, 1_000)
    assert [next_event(events) for _ in range(2)] == [(FAILS.encode(), b"incrby"), (FAILS.encode(), b"expire")]


@pytest.mark.parametrize(("value", "ttl"), [("nope", 1_000), ("1.5", 1_000), (str(LLONG_MAX), 1_000),
                                            ("7", LLONG_MAX)])
def test_failure_count_the_host_refuses_writes_nothing(r: RawClient, value: str, ttl: int) -> None:
    r.call("SET", FAILS, value, "PX", 60_000)
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, ttl) == err("EMQHOST unexpected reply from host")
    assert r.call("GET", FAILS) == bulk(value)
    assert r.call("PTTL", FAILS) == (":", 60_000)


def test_reply_types(r: RawClient, now: int) -> None:
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *GOOD)[0] == "$"
    assert r.call("EMQ.APPEND", 1, STREAM, 0, *batch(GOOD))[0] == "*"
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 10)[0] == ":"


# --- access -----------------------------------------------------------------------------------


def restrict(server: Server, r: RawClient, rules: list[str]) -> None:
    """Make this connection's user one allowed every command but only the keys of `rules`,
    through ACL SETUSER and AUTH."""
    assert plain(r.call("ACL", "SETUSER", "bus-user", "reset", "on", "nopass", "+@all", "&*",
                        *rules)) == b"OK"
    assert plain(r.call("AUTH", "bus-user", "any")) == b"OK"


@pytest.mark.parametrize("rules", [["~emq:{orders}:*"], ["%RW~emq:{orders}:*", "%R~emq:{refunds}:*"]])
def test_a_restricted_user_reaches_only_its_queue(r: RawClient, server: Server, now: int,
                                                  rules: list[str]) -> None:
    restrict(server, r, rules)
    noperm = err("NOPERM No permissions to access a key")
    assert r.call("EMQ.PUBLISH", 1, OTHER, 0, *GOOD) == noperm
    assert r.call("EMQ.APPEND", 1, OTHER, 0, *batch(GOOD)) == noperm
    assert r.call("EMQ.FAILURES.INCR", 1, "emq:{refunds}:failures:1-0", 10) == noperm
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, *GOOD) == bulk(entry_id(now))
    assert r.call("EMQ.FAILURES.INCR", 1, FAILS, 10) == (":", 1)
    with RawClient(server.host, server.port) as admin:
        assert admin.call("KEYS", "*refunds*") == ("*", [])


def test_access_is_checked_before_the_envelope(r: RawClient, server: Server) -> None:
    restrict(server, r, ["~emq:{orders}:*"])
    assert r.call("EMQ.PUBLISH", 1, OTHER, 0, "id", "1", "type") == err("NOPERM No permissions to access a key")
    assert r.call("EMQ.PUBLISH", 1, STREAM, 0, "id", "1", "type") == err("EMQENVELOPE field without a value")
