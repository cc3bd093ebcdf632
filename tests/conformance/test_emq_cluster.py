"""EMQ on a cluster: `Queue`, `Consumer` and `Bus` (fakekey/emq/) through redis-py's
`RedisCluster`, on fakekey's cluster and on a real Valkey cluster (3 primaries, a replica
each). Wire 4 (the scripts) runs on both, wire 6 (the verbs) on fakekey only: a real
Valkey has no EMQ module.

- Queues on every shard, drained by consumers (two per queue), and topics on every shard.
- A failover of a primary holding a queue, under running consumers, loses no acknowledged
  job: every job whose enqueue was acknowledged is completed exactly once. A manual
  failover (`CLUSTER FAILOVER` on the replica) on both targets; on fakekey's cluster also a
  primary killed, its replica promoted once the frozen clock passes cluster-node-timeout.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.exceptions import RedisClusterException
from redis.retry import Retry

from fakekey.core.cluster import key_slot
from fakekey.emq import Queue
from fakekey.emq.bus import Bus
from fakekey.emq.consumer import COMPLETED, Consumer, Job
from fakekey.net.cluster import Cluster
from fakekey.testing.clusters import cluster_client, cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()
NODE_TIMEOUT = 2000  # cluster-node-timeout of the cluster a test kills a node of (ms)
LEASE_MS = 1500  # the failover tests' leases: they run out when the clock passes the timeout
WAIT = 60.0  # generous: a loaded machine is slow, never wrong
BEAT = 1.0  # the consumers' beat (s): retries found within a beat, idle consumers cheap


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    made = cluster_client(cluster)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def killable() -> Iterator[Cluster]:
    """A fakekey cluster of the test's own, to kill a node of."""
    if "fakekey" not in TARGETS:
        pytest.skip("the fakekey target is not selected")
    with Cluster(primaries=3, replicas=1, cluster_node_timeout=NODE_TIMEOUT) as made:
        yield made


def needs_wire(cluster: Any, wire: int) -> None:
    if wire == 6 and not isinstance(cluster, Cluster):
        pytest.skip("wire 6 needs the EMQ module: fakekey's cluster only")


# --- helpers ------------------------------------------------------------------------------


def names_on_every_shard(client: Any, stem: str) -> list[str]:
    """One queue (or topic) name per primary: the first `stem<i>` each primary serves."""
    found: dict[str, str] = {}
    for i in itertools.count():
        name = f"{stem}{i}"
        found.setdefault(client.get_node_from_key(f"emq:{{{name}}}:").name, name)
        if len(found) == len(client.get_primaries()):
            return list(found.values())
    raise AssertionError("unreachable")


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = WAIT,
               meanwhile: Callable[[], None] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        if meanwhile is not None:
            meanwhile()
        time.sleep(0.01)


class Log:
    """What the consumers of a test did, per (queue, job id)."""

    def __init__(self) -> None:
        self.handled: Counter[tuple[str, str]] = Counter()
        self.settled: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()

    def handle(self, queue: str, job: Job) -> None:
        with self.lock:
            self.handled[queue, job.id] += 1

    def settle(self, queue: str, job: Job, outcome: str) -> None:
        with self.lock:
            self.settled.append((queue, job.id, outcome))

    def completions(self) -> Counter[tuple[str, str]]:
        with self.lock:
            return Counter((q, job) for q, job, outcome in self.settled if outcome == COMPLETED)


def enqueue_jobs(queue: Queue, stem: str, flat: int, lanes: int) -> set[str]:
    """Flat jobs (priorities 0-2) and lane jobs over three groups; returns their ids, each
    acknowledged by the server."""
    acked = set()
    for i in range(flat):
        acked.add(admit(queue, f"JOB{stem}F{i:03}", priority=i % 3))
    for i in range(lanes):
        acked.add(admit(queue, f"JOB{stem}L{i:03}", group=f"g{i % 3}"))
    return acked


def admit(queue: Queue, job_id: str, **options: Any) -> str:
    """Enqueues until the server acknowledges it: an enqueue the client gave up on (the
    cluster's topology changing under it) is sent again; a duplicate answer then means
    the earlier try was applied."""
    deadline = time.monotonic() + WAIT
    tried = False
    while True:
        try:
            added = queue.enqueue(job_id, b"payload", **options)
        except (redis.RedisError, RedisClusterException):
            assert time.monotonic() < deadline, f"no acknowledgement for {job_id}"
            tried = True
            time.sleep(0.05)
            continue
        assert added or tried, f"{job_id} is a duplicate"
        return job_id


def start_consumers(client: Any, names: list[str], wire: int, log: Log,
                    handler: Callable[[str, Job], None], **options: Any) -> list[Consumer]:
    """Two consumers per queue; on wire 6 the second parks on the blocking claim."""
    consumers = []
    for name in names:
        for park in ("wake", "claim" if wire == 6 else "wake"):
            consumer = Consumer(client, name, lambda job, n=name: handler(n, job), wire=wire, park=park,
                                on_settle=lambda job, outcome, n=name: log.settle(n, job, outcome), **options)
            consumer.start()
            consumers.append(consumer)
    return consumers


def stop_all(consumers: list[Consumer]) -> None:
    for consumer in consumers:
        consumer.stop()


def drained(queues: dict[str, Queue], expected: dict[str, set[str]]) -> bool:
    for name, queue in queues.items():
        stats = queue.stats()
        if stats["completed"] < len(expected[name]) or stats["pending"] or stats["active"] or stats["scheduled"]:
            return False
    return True


def assert_each_acknowledged_job_completed_once(queues: dict[str, Queue], acked: dict[str, set[str]],
                                                log: Log) -> None:
    completions = log.completions()
    assert all(count == 1 for count in completions.values()), "a job completed twice"
    for name, queue in queues.items():
        stats = queue.stats()
        assert (stats["completed"], stats["pending"], stats["active"], stats["scheduled"], stats["dead"]) == \
            (len(acked[name]), 0, 0, 0, 0), name  # the server counted each completion once
        assert all(log.handled[name, job] >= 1 for job in acked[name])
        rows = [queue.key(job) for job in sorted(acked[name])]
        assert queue.client.exists(*rows) == 0  # every row settled and gone
        assert queue.client.llen(queue.key("ring")) == 0 and queue.client.hgetall(queue.key("gactive")) == {}
    # every completion a consumer logged is of an acknowledged job (a settlement whose reply
    # a dead node never sent is completed but not logged: the server's count is the truth)
    assert {job for (_, job) in completions} <= {job for jobs in acked.values() for job in jobs}


# --- queues and topics on every shard -------------------------------------------------------


@pytest.mark.parametrize("wire", [4, 6])
def test_consumers_drain_queues_on_every_shard(cluster: Any, client: Any, wire: int) -> None:
    needs_wire(cluster, wire)
    names = names_on_every_shard(client, f"drain{wire}-")
    queues = {name: Queue(client, name, wire=wire) for name in names}
    assert len({client.get_node_from_key(q.prefix).name for q in queues.values()}) == 3
    acked = {}
    for name, queue in queues.items():
        queue.set_ring("all")
        queue.limit_group("g0", 1)
        acked[name] = enqueue_jobs(queue, "", flat=8, lanes=9)
    log = Log()
    tries: Counter[tuple[str, str]] = Counter()

    def handler(queue: str, job: Job) -> None:
        log.handle(queue, job)
        tries[queue, job.id] += 1
        if job.id.endswith("7") and tries[queue, job.id] == 1:
            raise RuntimeError("fails once: retried")

    consumers = start_consumers(client, names, wire, log, handler, beat=BEAT, backoff=5, lease_ms=30_000)
    try:
        wait_until(lambda: drained(queues, acked), "every queue drained")
        for name, queue in queues.items():  # each consumer's connections are on its queue's primary, named
            node = client.get_node_from_key(queue.prefix)
            listed = client.execute_command("CLIENT", "LIST", target_nodes=node)
            listed = listed.decode() if isinstance(listed, bytes) else listed
            assert f"name=emq-consumer:{name}:" in listed
    finally:
        stop_all(consumers)
    assert_each_acknowledged_job_completed_once(queues, acked, log)
    assert sum(1 for _, job, outcome in log.settled if outcome == "scheduled") == \
        sum(1 for jobs in acked.values() for job in jobs if job.endswith("7"))


def envelope(i: int) -> dict[str, str]:
    return {"id": f"e{i}", "type": "order.created", "data": f"{{\"n\":{i}}}"}


@pytest.mark.parametrize("wire", [4, 6])
def test_topics_on_every_shard(cluster: Any, client: Any, wire: int) -> None:
    """Each topic's stream, failure counts and dead-letter stream live on its shard; a
    stream consumer acks, retries and parks there; PUBLISH reaches a subscriber whatever
    node it went to."""
    needs_wire(cluster, wire)
    topics = names_on_every_shard(client, f"topic{wire}-")
    for topic in topics:
        topic_round_trip(Bus(client, topic, wire=wire, failures_ttl_ms=60_000))
    pubsub = client.pubsub()
    try:
        channel = Bus(client, topics[0]).stream
        pubsub.subscribe(channel)
        wait_until(lambda: (pubsub.get_message(timeout=0.01) or {}).get("type") == "subscribe", "the subscription")
        Bus(client, topics[0], wire=wire).publish(envelope(9))
        message = None
        deadline = time.monotonic() + 10
        while message is None and time.monotonic() < deadline:
            message = pubsub.get_message(timeout=0.05)
        assert message is not None and message["channel"] == channel.encode()
        assert message["data"] == b'{"id": "e9", "type": "order.created", "data": "{\\"n\\":9}"}'
    finally:
        pubsub.close()


def topic_round_trip(bus: Bus) -> None:
    """Six envelopes appended (a batch, then one); a consumer group acks five (one after a
    retry) and parks the sixth, which always fails, on the dead-letter stream."""
    client = bus.client
    ids = bus.append_batch([envelope(i) for i in range(5)])
    ids.append(bus.append(envelope(5)))
    assert len(ids) == 6 and client.xlen(bus.stream) == 6
    acked: list[bytes] = []
    failures: Counter[str] = Counter()

    def handler(entry_id: str, fields: dict[str, bytes]) -> None:
        failures[entry_id] += 1
        if fields["id"] == b"e3" or (fields["id"] == b"e1" and failures[entry_id] == 1):
            raise RuntimeError("cannot handle")
        acked.append(fields["id"])

    consumer = bus.consumer("billing", "c1", handler, block_ms=50, min_idle_ms=0, max_failures=3)
    consumer.start()
    try:
        wait_until(lambda: consumer.counts["parked"] == 1 and consumer.counts["acked"] == 5, "the topic drained")
    finally:
        consumer.stop()
    assert consumer.counts["errors"] == 0, consumer.last_error
    assert sorted(acked) == [b"e0", b"e1", b"e2", b"e4", b"e5"]
    assert [fields[b"id"] for _, fields in client.xrange(bus.dlq)] == [b"e3"]
    assert client.xpending(bus.stream, "billing")["pending"] == 0
    assert bus.count_failure(ids[0]) == 1 and bus.count_failure(ids[0]) == 2
    assert 0 < client.pttl(bus.key(f"failures:{ids[0]}")) <= 60_000


# --- failovers ------------------------------------------------------------------------------


class Hold:
    """Holds the first job of one queue in its handler until the failover has begun, so
    a lease is in flight on the failing primary."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.holding = threading.Event()
        self.release = threading.Event()
        self.taken = False
        self.lock = threading.Lock()

    def __call__(self, queue: str) -> None:
        if queue != self.queue:
            return
        with self.lock:
            if self.taken:
                return
            self.taken = True
        self.holding.set()
        self.release.wait(WAIT)


@pytest.mark.parametrize("wire", [4, 6])
def test_a_manual_failover_loses_no_acknowledged_job(cluster: Any, client: Any, wire: int) -> None:
    """CLUSTER FAILOVER on the replica of a primary holding a queue, while consumers work
    every shard: the consumers follow the queue to its new primary (the parks on the old
    one end, the scripts are loaded there on NOSCRIPT), and jobs enqueued before and after
    are each completed once."""
    needs_wire(cluster, wire)
    names = names_on_every_shard(client, f"manual{wire}-")
    queues = {name: Queue(client, name, wire=wire) for name in names}
    victim = queues[names[0]]
    acked = {}
    for name, queue in queues.items():
        queue.set_ring("all")
        acked[name] = enqueue_jobs(queue, "a", flat=5, lanes=5)
    log, hold = Log(), Hold(victim.name)

    def handler(queue: str, job: Job) -> None:
        log.handle(queue, job)
        hold(queue)

    consumers = start_consumers(client, names, wire, log, handler, beat=BEAT, lease_ms=2000)
    try:
        wait_until(hold.holding.is_set, "a job held on the queue's primary")
        old_primary = client.get_node_from_key(victim.prefix)
        replica = client.get_node_from_key(victim.prefix, replica=True)
        wait_until(lambda: parked_on(old_primary, victim.name), "the queue's other consumer parked on its primary")
        assert call(replica, "CLUSTER", "FAILOVER") == ("+", b"OK")
        wait_until(lambda: role(replica) == "master" and role(old_primary) == "slave",
                   "the replica promoted and its old primary following it")
        hold.release.set()
        for name, queue in queues.items():
            acked[name] |= enqueue_jobs(queue, "b", flat=5, lanes=5)
        wait_until(lambda: drained(queues, acked), "every queue drained after the failover")
        assert client.get_node_from_key(victim.prefix).name == replica.name
    finally:
        hold.release.set()
        stop_all(consumers)
    assert_each_acknowledged_job_completed_once(queues, acked, log)


def call(node: Any, *argv: Any) -> Any:
    with RawClient(node.host, node.port) as raw:
        return raw.call(*argv)


def parked_on(node: Any, queue: str) -> bool:
    """Whether a consumer of `queue` is blocked on `node` (BLPOP or EMQ.BCLAIM)."""
    _kind, listed = call(node, "CLIENT", "LIST")
    return any(f"name=emq-consumer:{queue}:" in line and "flags=b" in line
               for line in listed.decode().splitlines())


def role(node: Any) -> str:
    """What ROLE says on `node` (anything with `host` and `port`): master or slave."""
    _kind, reply = call(node, "ROLE")
    return reply[0][1].decode()


@pytest.mark.parametrize("wire", [4, 6])
def test_a_killed_primary_loses_no_acknowledged_job(killable: Cluster, wire: int) -> None:
    """A primary holding a queue is killed with a lease in flight; its shard refuses an
    enqueue while down (not acknowledged: never applied), the other shards go on. Past
    cluster-node-timeout on the frozen clock its replica takes over; the consumers move
    there, the expired leases of the dead node's holders are recovered, and every job whose
    enqueue was acknowledged, before or after, is completed once."""
    cluster = killable
    cluster.freeze()
    client = cluster_client(cluster)
    once = cluster_client(cluster, retry=Retry(NoBackoff(), 0))  # a producer that does not retry
    names = names_on_every_shard(client, f"killed{wire}-")
    queues = {name: Queue(client, name, wire=wire) for name in names}
    victim = queues[names[0]]
    dead = cluster.node_for_slot(key_slot(victim.prefix.encode()))
    replica = client.get_node_from_key(victim.prefix, replica=True)
    acked = {}
    for name, queue in queues.items():
        queue.set_ring("all")  # every enqueue rings: a frozen clock ends no park by itself
        acked[name] = enqueue_jobs(queue, "a", flat=5, lanes=5)
    log, hold = Log(), Hold(victim.name)

    def handler(queue: str, job: Job) -> None:
        log.handle(queue, job)
        hold(queue)

    consumers = start_consumers(client, names, wire, log, handler, beat=BEAT, lease_ms=LEASE_MS)
    try:
        wait_until(hold.holding.is_set, "a job held on the queue's primary")
        wait_until(lambda: parked_on(dead, victim.name), "the queue's other consumer parked on its primary")
        cluster.kill(dead)
        hold.release.set()  # its settlement goes to a dead node now
        wait_until(lambda: any(c.counts["errors"] for c in consumers[:2]), "the park on the dead node ended")
        with pytest.raises((redis.RedisError, RedisClusterException)):
            Queue(once, victim.name, wire=wire).enqueue("JOBdown", b"refused")
        for name in names[1:]:  # the other shards take work meanwhile
            acked[name] |= enqueue_jobs(queues[name], "b", flat=3, lanes=3)
        cluster.advance(NODE_TIMEOUT + 1)  # failure detected, the replica promoted, the leases run out
        assert role(replica) == "master"
        for name, queue in queues.items():  # the client follows the queue to its new primary
            acked[name] |= enqueue_jobs(queue, "c", flat=5, lanes=5)
        progress = Progress(cluster, queues)
        wait_until(lambda: drained(queues, acked), "every queue drained after the failover",
                   meanwhile=progress.advance_when_stalled)
        cluster.restart(dead)  # back as a replica of the node that replaced it
        assert role(dead) == "slave"
        assert victim.stats()["completed"] == len(acked[victim.name])
        assert_each_acknowledged_job_completed_once(queues, acked, log)
        assert not client.exists(victim.key("JOBdown"))  # the refused enqueue left nothing
        assert all(job != "JOBdown" for _, job in log.handled)
    finally:
        hold.release.set()
        stop_all(consumers)
        once.close()
        client.close()


class Progress:
    """On the frozen clock a lease whose holder lost its settlement to the dead node never
    runs out by itself: when the drain stalls for a while, the clock moves a lease on."""

    def __init__(self, cluster: Cluster, queues: dict[str, Queue]) -> None:
        self.cluster = cluster
        self.queues = queues
        self.seen = -1
        self.since = time.monotonic()

    def advance_when_stalled(self) -> None:
        if time.monotonic() - self.since < 0.5:
            return
        done = sum(queue.stats()["completed"] for queue in self.queues.values())
        if done == self.seen:
            self.cluster.advance(LEASE_MS + 1)
        self.seen, self.since = done, time.monotonic()
