"""EMQ.PUBLISH, EMQ.APPEND and EMQ.FAILURES.INCR: the bus's compositions in one turn.

The library composes its bus from built-ins: a batch append is a pipeline, a failure count
is INCR then EXPIRE. These verbs do the same work in one server turn: every envelope of a
call is checked (and every XADD error foreseen) before the first entry is written, and a
failure count gets its TTL in the same turn as its increment.
"""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import try_int
from fakekey.modules.emq import host
from fakekey.modules.emq.layout import FAILURES, HOST, NON_NEGATIVE, POSITIVE, STREAM, Arg, Call, verb
from fakekey.resp.replies import ReplyError

ENVELOPE_FIELDS = frozenset((b"id", b"type", b"data", b"source", b"time", b"trace"))
REQUIRED_FIELDS = (b"id", b"type", b"data")  # reported missing in this order

UNPAIRED = ReplyError("EMQENVELOPE field without a value")
CUT_SHORT = ReplyError("EMQENVELOPE envelope is cut short")
BAD_COUNT = ReplyError("EMQARG n must be a positive integer")

Envelope = tuple[bytes, ...]


def check_envelope(words: list[bytes]) -> Envelope:
    """The envelope's field/value words, or EMQENVELOPE: pairs first, then the first unknown
    field, then the first repeated one, then the first required one missing."""
    if len(words) % 2:
        raise UNPAIRED
    names = words[::2]
    for name in names:
        if name not in ENVELOPE_FIELDS:
            raise ReplyError(b"EMQENVELOPE unknown field " + name)
    seen: set[bytes] = set()
    for name in names:
        if name in seen:
            raise ReplyError(b"EMQENVELOPE duplicate field " + name)
        seen.add(name)
    for name in REQUIRED_FIELDS:
        if name not in seen:
            raise ReplyError(b"EMQENVELOPE missing field " + name)
    return tuple(words)


def split_batch(words: list[bytes]) -> list[Envelope]:
    """APPEND's `n field value [...] [n ...]`, each envelope checked in turn as it is cut."""
    batch: list[Envelope] = []
    at = 0
    while at < len(words):
        count = try_int(words[at])
        if count is None or count < 1:
            raise BAD_COUNT
        end = at + 1 + 2 * count
        if end > len(words):
            raise CUT_SHORT
        batch.append(check_envelope(words[at + 1 : end]))
        at = end
    return batch


def append_batch(call: Call, batch: list[Envelope]) -> list[bytes]:
    """XADD each envelope in order (MAXLEN ~ maxlen unless 0), once the whole batch is
    known to go in: WRONGTYPE and XADD's own errors come before the first entry."""
    key = call.keys[0]
    host.check_appendable(call, host.read_stream(call, key), batch)
    trim = host.approx_maxlen(call, call.args[0])
    return [host.xadd(call, key, envelope, trim) for envelope in batch]


@verb("publish", (STREAM,), (Arg("maxlen", NON_NEGATIVE),), rest=2,
      summary="Append one envelope to a topic's stream after checking its fields (@publish)",
      complexity="O(1) amortized; O(N) trim")
def publish(call: Call) -> Any:
    return append_batch(call, [check_envelope(call.rest)])[0]


@verb("append", (STREAM,), (Arg("maxlen", NON_NEGATIVE),), rest=3,
      summary="Append a batch of envelopes to a topic's stream, whole or not at all (@append)",
      complexity="O(M) for M envelopes; O(N) trim")
def append(call: Call) -> Any:
    return append_batch(call, split_batch(call.rest))


@verb("failures.incr", (FAILURES,), (Arg("ttl_ms", POSITIVE),),
      summary="Count a stream entry's failures and set the count's TTL in one turn (@failures.incr)",
      complexity="O(1)")
def failures_incr(call: Call) -> Any:
    key, ttl_ms = call.keys[0], call.args[0]
    current = host.read_counter(call, key)
    if not host.expire_fits(call, ttl_ms):
        raise HOST  # PEXPIRE would refuse the deadline: refuse before the INCR
    count = host.incr(call, key, current)
    host.pexpire(call, key, ttl_ms)
    return count
