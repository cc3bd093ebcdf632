"""`Bus`: EMQ's event bus for one topic, on either wire.

- Ephemeral tier: `publish` sends the envelope with `PUBLISH` on the channel
  `emq:{topic}:stream` (channels and keys are separate namespaces), as JSON.
- Durable tier: `append` adds one envelope to the stream `emq:{topic}:stream`,
  `append_batch` several. On `wire=4` these are built-ins (`XADD`, a pipeline of them for
  a batch); on `wire=6` the module's verbs (`EMQ.PUBLISH`, `EMQ.APPEND`, which check the
  envelope and write a batch whole or not at all). Both wires check the envelope the same
  way before sending, so a bad envelope never reaches the stream on either.
- `StreamConsumer`: a consumer-group loop: `XAUTOCLAIM` what other consumers left idle,
  `XREADGROUP` new entries, a handler per entry, `XACK` on success; on failure a count per
  entry (`emq:{topic}:failures:<entry id>`, with a TTL: `INCR` then `PEXPIRE` on wire 4,
  `EMQ.FAILURES.INCR` on wire 6), and after `max_failures` the entry is parked: appended
  to the dead-letter stream `emq:{topic}:dlq`, then acknowledged.

An envelope is a mapping with `id`, `type`, `data` and optionally `source`, `time`,
`trace` (str or bytes values), written in the mapping's order.

On a cluster (redis-py's `RedisCluster`) a topic's keys share one slot (`emq:{topic}:`), so
the topic lives on one shard, and the blocking XREADGROUP parks on a connection to it; a
PUBLISH reaches subscribers on every node.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis
from redis.exceptions import RedisClusterException

from fakekey.emq.connections import ParkingConnection, send_verb
from fakekey.emq.consumer import BeatError, RedisClient

ENVELOPE_FIELDS = ("id", "type", "data", "source", "time", "trace")
REQUIRED_FIELDS = ("id", "type", "data")
Envelope = Mapping[str, Any]
EntryHandler = Callable[[str, dict[str, bytes]], Any]


class EnvelopeError(ValueError):
    """An envelope the bus refuses (the same reasons as the verbs' EMQENVELOPE)."""


def envelope_words(envelope: Envelope) -> list[Any]:
    """The envelope as field/value words, after the verbs' checks (unknown, missing)."""
    for name in envelope:
        if name not in ENVELOPE_FIELDS:
            raise EnvelopeError(f"unknown field {name}")
    for name in REQUIRED_FIELDS:
        if name not in envelope:
            raise EnvelopeError(f"missing field {name}")
    return [word for pair in envelope.items() for word in pair]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Bus:
    """The bus of `topic` (keys `emq:{topic}:stream`, `:dlq`, `:failures:<entry id>`)."""

    def __init__(self, client: RedisClient, topic: str, *, wire: int = 4, maxlen: int = 0,
                 failures_ttl_ms: int = 86_400_000) -> None:
        if wire not in (4, 6):
            raise ValueError("wire must be 4 (built-ins) or 6 (verbs)")
        if not topic or "{" in topic or "}" in topic:
            raise ValueError("a topic name is non-empty and has no '{' or '}'")
        self.client = client
        self.topic = topic
        self.wire = wire
        self.maxlen = maxlen
        self.failures_ttl_ms = failures_ttl_ms

    def key(self, suffix: str) -> str:
        """The topic key with this suffix (`stream`, `dlq`, `failures:<entry id>`)."""
        return f"emq:{{{self.topic}}}:{suffix}"

    @property
    def stream(self) -> str:
        return self.key("stream")

    @property
    def dlq(self) -> str:
        return self.key("dlq")

    # --- producing -----------------------------------------------------------------------

    def publish(self, envelope: Envelope) -> int:
        """Ephemeral: PUBLISH on the topic's channel; returns how many subscribers got it."""
        envelope_words(envelope)
        message = json.dumps({name: _text(value) for name, value in envelope.items()})
        return int(self.client.execute_command("PUBLISH", self.stream, message))

    def append(self, envelope: Envelope, *, stream: str | None = None) -> str:
        """Durable: appends one envelope; returns its entry id."""
        words = envelope_words(envelope)
        key = stream or self.stream
        if self.wire == 6:
            return _text(send_verb(self.client, key, "EMQ.PUBLISH", 1, key, self.maxlen, *words))
        return _text(self.client.execute_command("XADD", key, *self._trim(), "*", *words))

    def append_batch(self, envelopes: Iterable[Envelope]) -> list[str]:
        """Durable: appends several envelopes in order; returns their entry ids. Wire 6
        writes the batch whole or not at all; wire 4 pipelines one XADD each."""
        batch = [envelope_words(envelope) for envelope in envelopes]
        if not batch:
            return []
        if self.wire == 6:
            words = [word for envelope in batch for word in (len(envelope) // 2, *envelope)]
            ids = send_verb(self.client, self.stream, "EMQ.APPEND", 1, self.stream, self.maxlen, *words)
            return [_text(i) for i in ids]
        pipe = self.client.pipeline(transaction=False)
        for words in batch:
            pipe.execute_command("XADD", self.stream, *self._trim(), "*", *words)
        return [_text(i) for i in pipe.execute()]

    def _trim(self) -> list[Any]:
        return ["MAXLEN", "~", self.maxlen] if self.maxlen else []

    # --- failure counts ------------------------------------------------------------------

    def count_failure(self, entry_id: str) -> int:
        """Counts one more failure of a stream entry (with the bus's TTL); returns the count."""
        key = self.key(f"failures:{entry_id}")
        if self.wire == 6:
            return int(send_verb(self.client, key, "EMQ.FAILURES.INCR", 1, key, self.failures_ttl_ms))
        count = int(self.client.execute_command("INCR", key))
        self.client.execute_command("PEXPIRE", key, self.failures_ttl_ms)
        return count

    def forget_failures(self, entry_id: str) -> None:
        """Drops an entry's failure count (once it is acknowledged or parked)."""
        self.client.execute_command("DEL", self.key(f"failures:{entry_id}"))

    # --- groups --------------------------------------------------------------------------

    def create_group(self, group: str, start: str = "0") -> bool:
        """Creates a consumer group on the stream (and the stream); False if it exists."""
        try:
            self.client.execute_command("XGROUP", "CREATE", self.stream, group, start, "MKSTREAM")
        except redis.ResponseError as error:
            if str(error).startswith("BUSYGROUP"):
                return False
            raise
        return True

    def consumer(self, group: str, name: str, handler: EntryHandler, **options: Any) -> StreamConsumer:
        """A `StreamConsumer` of this bus (see its options)."""
        return StreamConsumer(self, group, name, handler, **options)


class StreamConsumer:
    """One consumer of a group: `run()` loops until `stop()`; `start()` runs it in a thread.

    Each pass: XAUTOCLAIM entries idle at least `min_idle_ms` (left by a failure or a dead
    consumer), then XREADGROUP new ones (blocking up to `block_ms`). `handler(entry_id,
    fields)` returning acks the entry; raising counts a failure, and at `max_failures`
    parks the entry on the dead-letter stream and acks it; below that the entry stays
    pending until a later XAUTOCLAIM retries it.
    """

    def __init__(self, bus: Bus, group: str, name: str, handler: EntryHandler, *,
                 max_failures: int = 3, count: int = 10, block_ms: int = 1000,
                 min_idle_ms: int = 1000) -> None:
        self.bus = bus
        self.group = group
        self.name = name
        self.handler = handler
        self.max_failures = max_failures
        self.count = count
        self.block_ms = block_ms
        self.min_idle_ms = min_idle_ms
        self.counts: Counter[str] = Counter()
        self._stopping = threading.Event()
        self._running = threading.Event()
        self._thread: threading.Thread | None = None
        self._park: ParkingConnection | None = None
        self.last_error: BeatError | None = None

    def run(self) -> None:
        """Passes until `stop()`. A pass the server refuses or a lost connection ends that
        pass; the loop backs off for `block_ms` and goes on."""
        self._running.set()
        try:
            self.bus.create_group(self.group)
            while not self._stopping.is_set():
                try:
                    self.reclaim_once()
                    if not self._stopping.is_set():
                        self.read_once(block=True)
                except (redis.RedisError, RedisClusterException) as error:
                    self.counts["errors"] += 1
                    self.last_error = error
                    self._close_park()
                    self._stopping.wait(self.block_ms / 1000)
        finally:
            self._close_park()
            self._running.clear()

    def _close_park(self) -> None:
        park, self._park = self._park, None
        if park is not None:
            park.close()

    def start(self) -> threading.Thread:
        """Runs the loop in a daemon thread; returns it."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self.run, name=f"emq-stream-{self.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        """Ends the loop: wakes its blocked XREADGROUP and waits for the thread."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        while self._running.is_set() and time.monotonic() < deadline:
            park = self._park  # the loop thread may clear it meanwhile
            if park is not None:
                with contextlib.suppress(redis.RedisError):  # the loop may be closing it
                    park.unblock()
            time.sleep(0.005)
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    async def run_async(self) -> None:
        """The loop for asyncio code, in a worker thread; `stop()` ends it."""
        await asyncio.to_thread(self.run)

    # --- one pass ------------------------------------------------------------------------

    def reclaim_once(self) -> int:
        """XAUTOCLAIM idle entries to this consumer and handles them; returns how many."""
        reply = self.bus.client.execute_command(
            "XAUTOCLAIM", self.bus.stream, self.group, self.name, self.min_idle_ms, "0-0", "COUNT", self.count)
        entries = [entry for entry in reply[1] if entry is not None]
        for entry_id, fields in entries:
            self.counts["reclaimed"] += 1
            self._handle(_text(entry_id), fields)
        return len(entries)

    def read_once(self, block: bool = False) -> int:
        """XREADGROUP new entries (blocking up to `block_ms` if asked); returns how many."""
        argv: list[Any] = ["XREADGROUP", "GROUP", self.group, self.name, "COUNT", self.count]
        if block:
            argv += ["BLOCK", self.block_ms]
        argv += ["STREAMS", self.bus.stream, ">"]
        if block:
            if self._park is not None and not self._park.serves(self.bus.client, self.bus.stream):
                self._close_park()  # the topic's slot moved (a failover): block on its new node
            if self._park is None:
                self._park = ParkingConnection(self.bus.client, self.bus.stream)
            reply = self._park.call(*argv)
        else:
            reply = self.bus.client.execute_command(*argv)
        entries = _stream_entries(reply)
        for entry_id, fields in entries:
            self._handle(_text(entry_id), fields)
        return len(entries)

    def _handle(self, entry_id: str, fields: Any) -> None:
        envelope = _fields(fields)
        try:
            self.handler(entry_id, envelope)
        except Exception:  # the handler's failure is the entry's failure
            self._failed(entry_id, envelope)
            return
        self.bus.client.execute_command("XACK", self.bus.stream, self.group, entry_id)
        self.bus.forget_failures(entry_id)
        self.counts["acked"] += 1

    def _failed(self, entry_id: str, envelope: dict[str, bytes]) -> None:
        self.counts["failures"] += 1
        if self.bus.count_failure(entry_id) < self.max_failures:
            return
        # park: the dead-letter append comes before the ack, so a crash between the two
        # leaves the entry pending (parked twice at worst), never lost
        self.bus.append(envelope, stream=self.bus.dlq)
        self.bus.client.execute_command("XACK", self.bus.stream, self.group, entry_id)
        self.bus.forget_failures(entry_id)
        self.counts["parked"] += 1


def _stream_entries(reply: Any) -> list[tuple[Any, Any]]:
    """XREADGROUP's entries for one stream, from RESP2 (an array) or RESP3 (a map)."""
    if not reply:
        return []
    streams = list(reply.values()) if isinstance(reply, dict) else [entries for _, entries in reply]
    return [entry for entries in streams for entry in entries if entry is not None]


def _fields(fields: Any) -> dict[str, bytes]:
    """An entry's fields (a flat array, or a map in some clients) as a str-keyed dict."""
    if isinstance(fields, dict):
        return {_text(k): v for k, v in fields.items()}
    return {_text(fields[i]): fields[i + 1] for i in range(0, len(fields), 2)}
