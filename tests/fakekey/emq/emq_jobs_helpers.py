"""Shared helpers of the flat job verbs' tests: key names, one call per verb with the
queue's usual keys, and a dump of the keyspace exact enough to prove that a call wrote
nothing (type, contents in order, scores, TTL)."""

from __future__ import annotations

from typing import Any

from fakekey.testing.raw import RawClient, Reply, plain


def key(suffix: str, queue: str = "a") -> str:
    return f"emq:{{{queue}}}:{suffix}"


PENDING, SCHEDULE, ACTIVE, DEAD, META, PREFIX = (
    key("pending"), key("schedule"), key("active"), key("dead"), key("meta"), key(""))


def enqueue(r: RawClient, job: str, payload: str = "p", delay: int = 0, priority: int = 0,
            queue: str = "a") -> Reply:
    return r.call("EMQ.ENQUEUE", 3, key(job, queue), key("pending", queue),
                  key("schedule", queue), payload, delay, priority)


def claim(r: RawClient, lease_ms: int = 1000, queue: str = "a") -> Reply:
    return r.call("EMQ.CLAIM", 2, key("pending", queue), key("active", queue), lease_ms)


def extend(r: RawClient, job: str, fence: int, lease_ms: int = 1000) -> Reply:
    return r.call("EMQ.EXTEND", 2, key(job), ACTIVE, fence, lease_ms)


def complete(r: RawClient, job: str, fence: int) -> Reply:
    return r.call("EMQ.COMPLETE", 2, key(job), ACTIVE, fence)


def fail(r: RawClient, job: str, fence: int, backoff_ms: int = 0, reason: str = "boom") -> Reply:
    return r.call("EMQ.FAIL", 4, key(job), ACTIVE, SCHEDULE, DEAD, fence, backoff_ms, reason)


def release(r: RawClient, job: str, fence: int) -> Reply:
    return r.call("EMQ.RELEASE", 2, key(job), ACTIVE, fence)


def promote(r: RawClient, batch: int = 100) -> Reply:
    return r.call("EMQ.PROMOTE", 3, SCHEDULE, PENDING, PREFIX, batch)


def stalled_check(r: RawClient, limit: int = 100, max_stalls: int = 1) -> Reply:
    return r.call("EMQ.STALLED.CHECK", 4, ACTIVE, PENDING, DEAD, PREFIX, limit, max_stalls)


def reprocess(r: RawClient, job: str) -> Reply:
    return r.call("EMQ.REPROCESS", 3, key(job), DEAD, PENDING)


def remove(r: RawClient, job: str) -> Reply:
    return r.call("EMQ.REMOVE", 1, key(job))


def advance(r: RawClient, ms: int) -> None:
    r.call("FAKEKEY.CLOCK", "ADVANCE", ms)


def pairs(reply: Reply) -> list[tuple[Any, Any]]:
    """A field/value reply as ordered pairs: a RESP3 map or a RESP2 flat array."""
    kind, value = reply
    if kind == "%":
        return [(plain(k), plain(v)) for k, v in value]
    flat = plain(reply)
    return list(zip(flat[::2], flat[1::2], strict=True))


def row(r: RawClient, job: str, queue: str = "a") -> list[tuple[bytes, bytes]]:
    """A row's fields in HGETALL order."""
    return pairs(r.call("HGETALL", key(job, queue)))


def zset(r: RawClient, name: str, queue: str = "a") -> list[tuple[bytes, int]]:
    """A set's members with their scores (as integers), lowest first."""
    flat = plain(r.call("ZRANGE", key(name, queue), 0, -1, "WITHSCORES"))
    if flat and isinstance(flat[0], list):  # RESP3: [member, score] pairs
        return [(m, int(float(s))) for m, s in flat]
    return [(m, int(float(s))) for m, s in zip(flat[::2], flat[1::2], strict=True)]


def dump_key(r: RawClient, name: bytes) -> tuple[Any, ...]:
    kind = plain(r.call("TYPE", name))
    ttl = plain(r.call("PTTL", name))
    if kind == b"hash":
        body: Any = pairs(r.call("HGETALL", name))
    elif kind == b"zset":
        body = plain(r.call("ZRANGE", name, 0, -1, "WITHSCORES"))
    elif kind == b"list":
        body = plain(r.call("LRANGE", name, 0, -1))
    elif kind == b"set":
        body = sorted(plain(r.call("SMEMBERS", name)))
    elif kind == b"stream":
        body = plain(r.call("XRANGE", name, "-", "+"))
    else:
        body = plain(r.call("GET", name))
    return (name, kind, ttl, body)


def dump(r: RawClient) -> list[tuple[Any, ...]]:
    """Every key of the (test's own) server: name, type, PTTL and contents in order."""
    return [dump_key(r, name) for name in sorted(plain(r.call("KEYS", "*")))]
