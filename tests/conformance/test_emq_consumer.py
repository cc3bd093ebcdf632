"""The EMQ `Consumer` and `Bus` (fakekey/emq/consumer.py, bus.py) on fakekey and on Valkey.

Wire 4 (the scripts and built-ins) runs on both targets; wire 6 (the verbs) on fakekey
only. The doorbell lesson of the seed is kept as tests that state it:

- a consumer parked on `BLPOP emq:{q}:wake` returns within milliseconds of a ringing
  transition (`@genqueue` into an idle lane), long before its beat runs out;
- a flat enqueue rings nothing: the parked consumer finds that job only at its next beat;
- a wake that finds nothing costs one empty claim.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
import redis

from fakekey.emq import Queue
from fakekey.emq.bus import Bus, EnvelopeError
from fakekey.emq.consumer import COMPLETED, DEAD, LOST, Consumer, Job
from fakekey.testing.targets import Target

Q = "work"


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0, what: str = "condition") -> float:
    """Polls until `predicate` holds; returns the time it took."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)
    return time.monotonic() - start


def parked(client: redis.Redis) -> bool:
    """Whether a client is blocked in BLPOP now."""
    return any(c.get("cmd") == "blpop" and "b" in c.get("flags", "") for c in client.client_list())


class Recorder:
    """Handler and settlement log shared by the consumers of a test."""

    def __init__(self) -> None:
        self.handled: list[tuple[str, float]] = []
        self.settled: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def handler(self, job: Job) -> None:
        with self.lock:
            self.handled.append((job.id, time.monotonic()))

    def on_settle(self, job: Job, outcome: str) -> None:
        with self.lock:
            self.settled.append((job.id, outcome))


# --- the doorbell ---------------------------------------------------------------------------


def test_a_ringing_transition_wakes_the_parked_consumer_at_once(client: redis.Redis) -> None:
    log = Recorder()
    consumer = Consumer(client, Q, log.handler, beat=5, drain=("lanes",))
    consumer.start()
    try:
        wait_until(lambda: parked(client), what="the consumer to park")
        rung = time.monotonic()
        assert Queue(client, Q).enqueue("JOB1", b"p", group="g1") is True
        wait_until(lambda: bool(log.handled), timeout=2, what="the job")
        assert log.handled[0][0] == "JOB1"
        # within milliseconds of the ring, not at the end of the 5 s beat
        assert log.handled[0][1] - rung < 0.5
        assert consumer.counts["wakes"] == 1
    finally:
        consumer.stop()


@pytest.mark.fakekey_only
def test_a_flat_enqueue_rings_nothing_the_frozen_beat_finds_it(client: redis.Redis) -> None:
    client.execute_command("FAKEKEY.CLOCK", "SET", 1_700_000_000_000)
    log = Recorder()
    consumer = Consumer(client, Q, log.handler, beat=1)
    consumer.start()
    try:
        wait_until(lambda: parked(client), what="the consumer to park")
        assert Queue(client, Q).enqueue("JOB1", b"p") is True
        assert client.llen(f"emq:{{{Q}}}:wake") == 0
        time.sleep(0.2)  # the clock is frozen: the park cannot time out, nothing rang
        assert log.handled == []
        client.execute_command("FAKEKEY.CLOCK", "ADVANCE", 1000)  # the beat runs out
        wait_until(lambda: bool(log.handled), timeout=2, what="the next beat")
        assert log.handled[0][0] == "JOB1"
        assert consumer.counts["wakes"] == 0 and consumer.counts["beats"] == 2
    finally:
        consumer.stop()


def test_a_flat_enqueue_rings_nothing_found_at_the_next_beat(target: Target, client: redis.Redis) -> None:
    if target.is_fakekey:  # the real clock here; the frozen-clock form is the test above
        client.execute_command("FAKEKEY.CLOCK", "REAL")
    log = Recorder()
    consumer = Consumer(client, Q, log.handler, beat=0.3)
    consumer.start()
    try:
        wait_until(lambda: parked(client), what="the consumer to park")
        beats = consumer.counts["beats"]
        assert Queue(client, Q).enqueue("JOB1", b"p") is True
        assert client.llen(f"emq:{{{Q}}}:wake") == 0
        wait_until(lambda: bool(log.handled), timeout=2, what="the next beat")
        # found by a later beat, after a park that ended on its timeout: no wake came
        assert consumer.counts["wakes"] == 0
        assert consumer.counts["beats"] > beats
    finally:
        consumer.stop()


def test_a_wake_that_finds_nothing_costs_one_empty_claim(client: redis.Redis) -> None:
    consumer = Consumer(client, Q, Recorder().handler, beat=5, drain=("lanes",))
    consumer.start()
    try:
        wait_until(lambda: parked(client), what="the consumer to park")
        before = Counter(consumer.counts)
        client.lpush(f"emq:{{{Q}}}:wake", 1)  # a token with no work behind it
        wait_until(lambda: consumer.counts["beats"] == before["beats"] + 1 and parked(client),
                   what="one more beat and the park")
        assert consumer.counts["wakes"] - before["wakes"] == 1
        assert consumer.counts["claims"] - before["claims"] == 1
        assert consumer.counts["empty_claims"] - before["empty_claims"] == 1
    finally:
        consumer.stop()


def test_stop_wakes_the_park(client: redis.Redis) -> None:
    consumer = Consumer(client, Q, Recorder().handler, beat=30)
    thread = consumer.start()
    wait_until(lambda: parked(client), what="the consumer to park")
    started = time.monotonic()
    consumer.stop()
    assert not thread.is_alive()
    assert time.monotonic() - started < 1
    assert not parked(client)


# --- the consumer end to end ----------------------------------------------------------------


def lane_jobs(groups: int, per_group: int) -> list[tuple[str, str]]:
    return [(f"JOB{g}-{i:03}", f"g{g}") for i in range(per_group) for g in range(groups)]


@pytest.mark.parametrize("wire", [4, pytest.param(6, marks=pytest.mark.fakekey_only)])
def test_every_job_completes_once_or_dies_none_lost(client: redis.Redis, wire: int) -> None:
    """200 lane jobs over 4 groups (two with limits) and 20 flat ones; some handlers fail
    once and are retried, some always fail (dead after 3 attempts); one worker hangs
    mid-job without heartbeats, so its lease expires and the reaper hands the job on. On
    wire 6 the whole beat runs on the verbs (EMQ.REAP, EMQ.GPROMOTE, EMQ.GCLAIM ...)."""
    queue = Queue(client, Q, wire=wire)
    queue.limit_group("g0", 1)
    queue.limit_group("g1", 2)
    jobs = lane_jobs(4, 50)
    flat = [f"JOBF{i:02}" for i in range(20)]
    poison = {jobs[7][0], jobs[99][0], flat[3]}
    flaky = {job for job, _ in jobs[::17]} | {flat[5]}
    tries: Counter[str] = Counter()
    log = Recorder()
    hang, hung = threading.Event(), threading.Event()

    def handler(job: Job) -> None:
        tries[job.id] += 1
        if job.id in poison or (job.id in flaky and tries[job.id] == 1):
            raise RuntimeError("handler failed")

    def zombie_handler(job: Job) -> None:
        hung.set()
        hang.wait(10)  # a worker stuck mid-job: no heartbeat, no settlement in time

    for job, group in jobs:
        assert queue.enqueue(job, b"payload", group=group)
    for job in flat:
        assert queue.enqueue(job, b"payload")
    zombie = Consumer(client, Q, zombie_handler, wire=wire, lease_ms=300, heartbeat=False, beat=0.1,
                      on_settle=log.on_settle)
    zombie.start()
    wait_until(hung.is_set, what="the zombie to take a job")
    workers = [Consumer(client, Q, handler, wire=wire, lease_ms=5000, beat=0.05, backoff=5,
                        on_settle=log.on_settle) for _ in range(3)]
    try:
        for worker in workers:
            worker.start()
        wait_until(lambda: _settled(queue), timeout=15, what="every job settled")
        hang.set()
        wait_until(lambda: LOST in {outcome for _, outcome in log.settled}, what="the zombie's refused settlement")
    finally:
        hang.set()
        for consumer in [zombie, *workers]:
            consumer.stop()
    everything = {job for job, _ in jobs} | set(flat)
    completed = Counter(job for job, outcome in log.settled if outcome == COMPLETED)
    dead = {job for job, outcome in log.settled if outcome == DEAD}
    assert dead == poison
    assert set(completed) == everything - poison
    assert set(completed.values()) == {1}, "a job completed twice"
    stats = queue.stats()
    assert stats["completed"] == len(everything) - len(poison)
    assert stats["dead"] == len(poison)
    # only the dead jobs' rows are left
    assert sorted(k.decode().rsplit(":", 1)[1] for k in client.keys(f"emq:{{{Q}}}:JOB*")) == sorted(poison)
    assert [o for _, o in log.settled].count(LOST) == 1
    assert client.hgetall(f"emq:{{{Q}}}:gactive") == {}


def _settled(queue: Queue) -> bool:
    stats = queue.stats()
    return stats["pending"] == stats["scheduled"] == stats["active"] == 0 and stats["completed"] > 0 and \
        queue.client.llen(queue.key("ring")) == 0 and not queue.client.keys(queue.key("lane:*"))


@pytest.mark.fakekey_only
def test_a_wire_6_consumer_drains_the_flat_set(client: redis.Redis) -> None:
    queue = Queue(client, Q, wire=6)
    jobs = [f"JOB{i:03}" for i in range(60)]
    for job in jobs:
        assert queue.enqueue(job, b"p")
    log = Recorder()
    fails: Counter[str] = Counter()

    def handler(job: Job) -> None:
        fails[job.id] += 1
        if job.id == "JOB010" and fails[job.id] == 1:
            raise RuntimeError("once")

    consumer = Consumer(client, Q, handler, wire=6, beat=0.05, backoff=5, on_settle=log.on_settle)
    assert consumer.recovery == "reap" and consumer.drain == ("lanes", "flat")  # as on wire 4
    consumer.start()
    try:
        wait_until(lambda: queue.stats()["completed"] == len(jobs), what="every job")
    finally:
        consumer.stop()
    assert Counter(job for job, outcome in log.settled if outcome == COMPLETED) == Counter(jobs)


@pytest.mark.fakekey_only
def test_a_refused_recovery_ends_the_beat_and_the_consumer_backs_off(client: redis.Redis) -> None:
    """An expired lease whose row is inconsistent (its `stalls` is no integer) makes
    EMQ.REAP refuse (EMQHOST, nothing written), so the beat stops there, backs off and
    claims nothing."""
    lanes = Queue(client, Q, wire=6)
    lanes.enqueue("JOBL", b"p", group="g")
    assert lanes.claim_lane(1) is not None
    client.hset(lanes.key("JOBL"), "stalls", "x")
    time.sleep(0.005)  # its 1 ms lease has expired
    assert lanes.enqueue("JOBF", b"p")
    log = Recorder()
    consumer = Consumer(client, Q, log.handler, wire=6, beat=0.02)
    consumer.start()
    try:
        wait_until(lambda: consumer.counts["errors"] >= 2, what="two refused beats")
    finally:
        consumer.stop()
    assert str(consumer.last_error) == "EMQHOST unexpected reply from host"
    assert log.handled == [] and consumer.counts["claims"] == 0


@pytest.mark.fakekey_only
@pytest.mark.parametrize("recovery", ["reap", "sweep"])
def test_a_wire_6_consumer_recovers_and_drains_the_lanes(client: redis.Redis, recovery: str) -> None:
    """Wire 6 runs the whole beat: an expired lane lease is recovered (the reaper or the
    counted sweep), a retried lane job is promoted back to its lane, and the ring and the
    flat set are drained."""
    queue = Queue(client, Q, wire=6)
    queue.enqueue("JOBL0", b"p", group="g")
    assert queue.claim_lane(1) is not None  # a holder that never comes back
    time.sleep(0.005)
    jobs = [("JOBL1", "g"), ("JOBL2", "h"), ("JOBL3", "h")]
    for job, group in jobs:
        assert queue.enqueue(job, b"p", group=group)
    assert queue.enqueue("JOBF", b"p")
    log = Recorder()
    tries: Counter[str] = Counter()

    def handler(job: Job) -> None:
        tries[job.id] += 1
        if job.id == "JOBL2" and tries[job.id] == 1:
            raise RuntimeError("once")

    consumer = Consumer(client, Q, handler, wire=6, recovery=recovery, beat=0.02, backoff=5,
                        on_settle=log.on_settle)
    consumer.start()
    try:
        wait_until(lambda: queue.stats()["completed"] == 5, what="every job completed")
    finally:
        consumer.stop()
    completed = Counter(job for job, outcome in log.settled if outcome == COMPLETED)
    assert completed == Counter(["JOBL0", "JOBL1", "JOBL2", "JOBL3", "JOBF"])
    assert _settled(queue)
    assert client.hgetall(queue.key("gactive")) == {}


def test_a_long_handler_is_kept_alive_by_heartbeats(client: redis.Redis) -> None:
    """A handler running 2.5 leases long keeps its job: extended every lease/3 (the margin
    of two thirds of a lease absorbs a busy machine's scheduling delays)."""
    queue = Queue(client, Q)
    queue.enqueue("JOB1", b"p")
    log = Recorder()
    consumer = Consumer(client, Q, lambda job: time.sleep(1.0), lease_ms=400, beat=0.05,
                        on_settle=log.on_settle)
    rival = Consumer(client, Q, log.handler, beat=0.05, on_settle=log.on_settle)  # reaps every beat
    consumer.start()
    wait_until(lambda: client.zcard(queue.key("active")) == 1, what="the claim")
    rival.start()
    try:
        wait_until(lambda: bool(log.settled), timeout=3, what="the settlement")
    finally:
        consumer.stop()
        rival.stop()
    assert log.settled == [("JOB1", COMPLETED)]
    assert log.handled == []  # the rival never got the job
    assert consumer.counts["heartbeats"] >= 2


# --- the bus --------------------------------------------------------------------------------


def envelope(i: int, **extra: str) -> dict[str, str]:
    return {"id": f"e{i}", "type": "order.created", "data": f"{{\"n\":{i}}}", **extra}


def bus_round_trip(client: redis.Redis, wire: int) -> None:
    bus = Bus(client, "orders", wire=wire, failures_ttl_ms=60_000)
    ids = bus.append_batch([envelope(i) for i in range(10)])
    assert len(ids) == 10 and ids == sorted(ids, key=lambda e: tuple(map(int, e.split("-"))))
    ids.append(bus.append(envelope(10, source="shop", trace="t1")))
    assert client.xlen(bus.stream) == 11
    with pytest.raises(EnvelopeError, match="missing field data"):
        bus.append({"id": "x", "type": "y"})
    with pytest.raises(EnvelopeError, match="unknown field colour"):
        bus.append_batch([envelope(1), {**envelope(2), "colour": "red"}])
    assert client.xlen(bus.stream) == 11  # a refused envelope never reaches the stream
    failures: Counter[str] = Counter()
    acked: list[bytes] = []

    def handler(entry_id: str, fields: dict[str, bytes]) -> None:
        failures[entry_id] += 1
        if fields["id"] == b"e3" or (fields["id"] == b"e5" and failures[entry_id] == 1):
            raise RuntimeError("cannot handle")
        acked.append(fields["id"])

    first = bus.consumer("billing", "c1", handler, block_ms=50, min_idle_ms=0, max_failures=3)
    first.start()
    try:
        wait_until(lambda: first.counts["parked"] == 1 and first.counts["acked"] == 10, what="the bus to drain")
    finally:
        first.stop()
    assert sorted(acked) == sorted(f"e{i}".encode() for i in range(11) if i != 3)
    parked_entries = client.xrange(bus.dlq)
    assert [fields for _, fields in parked_entries] == [
        {b"id": b"e3", b"type": b"order.created", b"data": b'{"n":3}'}]
    assert client.xpending(bus.stream, "billing")["pending"] == 0
    assert client.keys("emq:{orders}:failures:*") == []  # counts are dropped once settled
    # the failure count: a TTL set with every increment
    assert bus.count_failure(ids[0]) == 1 and bus.count_failure(ids[0]) == 2
    assert 0 < client.pttl(f"emq:{{orders}}:failures:{ids[0]}") <= 60_000


def test_the_bus_on_wire_4(client: redis.Redis) -> None:
    bus_round_trip(client, 4)


@pytest.mark.fakekey_only
def test_the_bus_on_wire_6(client: redis.Redis) -> None:
    bus_round_trip(client, 6)


def test_the_ephemeral_tier_reaches_subscribers(client: redis.Redis) -> None:
    bus = Bus(client, "orders")
    pubsub = client.pubsub()
    pubsub.subscribe(bus.stream)
    wait_until(lambda: pubsub.get_message(timeout=0.01) is not None, what="the subscription")
    assert bus.publish(envelope(1)) == 1
    message = None
    for _ in range(100):
        message = pubsub.get_message(timeout=0.02)
        if message is not None:
            break
    pubsub.close()
    assert message is not None and message["type"] == "message"
    assert message["data"] == b'{"id": "e1", "type": "order.created", "data": "{\\"n\\":1}"}'
    assert client.exists(bus.stream) == 0  # the ephemeral tier leaves no key
