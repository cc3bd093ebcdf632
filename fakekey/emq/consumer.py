"""`Consumer`: the EMQ worker loop, the beat the seed describes.

One beat: recover expired leases (the reaper, or the counted stall sweep), promote due
jobs, drain the lanes through the ring (`claim_lane`) and then the flat set (`claim`),
running the handler on each job and settling it; then park on
`BLPOP emq:{Q}:wake <beat seconds>`. A wake is a doorbell, not a delivery: it only ends
the park early, and the next beat's claims decide whether there is work. Under the seed's
rule a flat enqueue rings nothing, so a parked consumer finds flat work at its next beat;
under `ring all` (`Queue.set_ring`) every claimable transition rings. On wire 6 the
consumer may park on the blocking claim itself instead (`park="claim"`, EMQ.BCLAIM).

The form: the loop is synchronous and runs in a thread (`start()`), because `Queue` is a
synchronous client (redis-py's `Redis`); `run_async()` is the thin asyncio wrapper that
runs the same loop in a worker thread. Handlers are plain callables; a handler that
returns settles its job as completed, one that raises fails it with a backoff (dead once
its attempts are spent). While a handler runs longer than a third of the lease, a
heartbeat thread extends the lease.

Both wires run the whole beat: on `wire=6` each lane script has its twin verb (spec 7.1),
so a wire-6 consumer reaps (`EMQ.REAP`) or sweeps (`EMQ.GSWEEP`), promotes both kinds
(`EMQ.GPROMOTE`), drains the ring (`EMQ.GCLAIM`) and then the flat set (`EMQ.CLAIM`),
with the same defaults as wire 4.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException

from fakekey.emq.connections import ParkingConnection, disconnect_client, named_client
from fakekey.emq.queue import ClaimedJob, LaneJob, Queue, WireError

Job = ClaimedJob | LaneJob
RedisClient = redis.Redis | RedisCluster  # one server, or a cluster (the queue on its shard)
# what ends a beat: a refusal, a lost connection, or (on a cluster) no node known for the
# queue's slot yet, as during a failover; the loop backs off and goes on
BeatError = redis.RedisError | RedisClusterException
LEASE_GONE = ("EMQSTATE", "EMQFENCE")  # a settlement's refusal: the lease was recovered
Handler = Callable[[Job], Any]
# outcome names passed to `on_settle`
COMPLETED, SCHEDULED, DEAD, LOST = "completed", "scheduled", "dead", "lost"
# a ring turn that claims nothing while the ring still holds groups is retried, this often
_RING_RETRIES = 64


def exponential_backoff(base_ms: int = 1000, cap_ms: int = 60_000) -> Callable[[int], int]:
    """A backoff for the n-th attempt: base, 2x base, 4x base ... at most `cap_ms`."""
    return lambda attempts: min(cap_ms, base_ms * 2 ** max(0, attempts - 1))


class Consumer:
    """Works queue `name` with `handler`, one job at a time, until `stop()`.

    - `beat`: seconds between passes when no wake comes (the BLPOP timeout).
    - `recovery`: `"reap"` (uncounted, flat and lane leases; the default) or `"sweep"`
      (the counted stall sweep of both kinds, `max_stalls`), on either wire.
    - `drain`: what the beat claims from: `("lanes", "flat")` by default, on either wire.
    - `backoff`: a failed job's delay before its retry, in ms: a function of its attempts,
      or a base for `exponential_backoff`.
    - `heartbeat`: extend a long handler's lease (every lease/3).
    - `park`: `"wake"` parks on `BLPOP emq:{Q}:wake` (the seed's doorbell); `"claim"`
      (wire 6) parks on the blocking claim itself, `EMQ.BCLAIM` (or `EMQ.GBCLAIM` when the
      beat drains only lanes), and handles the job it leases as soon as one is claimable.
    - `on_settle(job, outcome)`: called after each settlement with `completed`,
      `scheduled`, `dead`, or `lost` (the lease was recovered meanwhile and the settlement
      refused: the job belongs to another worker now).

    `counts` tallies beats, wakes, claims, empty claims, heartbeats, outcomes and errors
    (a beat the server refused, a lost connection, or on a cluster no node known for the
    queue's slot yet: `last_error`; the loop backs off one beat and goes on), and
    `heartbeat_errors` (an extension that failed short of a refusal: tried again).
    """

    def __init__(self, client: RedisClient, name: str, handler: Handler, *, wire: int = 4,
                 lease_ms: int = 30_000, beat: float = 1.0, recovery: str | None = None,
                 max_stalls: int = 1, batch: int = 100, drain: tuple[str, ...] | None = None,
                 backoff: Callable[[int], int] | int = 1000,
                 heartbeat: bool = True, on_settle: Callable[[Job, str], None] | None = None,
                 park: str = "wake") -> None:
        # the beat and the park run on connections of one name, the consumer's: the server
        # judges a wake by the connection that popped it (FAKEKEY.WAKES counts a wake whose
        # connection leases nothing as wasted), and one name makes them one consumer
        self.client_name = f"emq-consumer:{name}:{next(_CONSUMER_SEQ)}"
        self._own = named_client(client, self.client_name)
        self.queue = Queue(self._own, name, wire=wire)
        if park not in ("wake", "claim"):
            raise ValueError("park is 'wake' (BLPOP on the wake list) or 'claim' (the blocking claim)")
        if park == "claim" and wire != 6:
            raise WireError("park='claim' parks on EMQ.BCLAIM/EMQ.GBCLAIM: it needs wire=6")
        self.park = park
        self.client = client
        self.handler = handler
        self.lease_ms = lease_ms
        self.beat = beat
        self.recovery = recovery or "reap"
        if self.recovery not in ("reap", "sweep"):
            raise ValueError("recovery is 'reap' or 'sweep'")
        self.max_stalls = max_stalls
        self.batch = batch
        self.drain = drain or ("lanes", "flat")
        self.backoff = backoff if callable(backoff) else exponential_backoff(backoff)
        self.heartbeat = heartbeat
        self.on_settle = on_settle
        self.counts: Counter[str] = Counter()
        self._stopping = threading.Event()
        self._running = threading.Event()
        self._thread: threading.Thread | None = None
        self._park: ParkingConnection | None = None
        self._loop_thread: threading.Thread | None = None
        self.last_error: BeatError | None = None
        self._heartbeat: _Heartbeat | None = None

    # --- the loop ------------------------------------------------------------------------

    def run(self) -> None:
        """Beats until `stop()`: recover, promote, drain, park. A beat the server refuses
        or a lost connection ends that beat; the loop backs off for one beat and goes on."""
        self._running.set()
        self._loop_thread = threading.current_thread()
        self._heartbeat = _Heartbeat(self) if self.heartbeat else None
        try:
            while not self._stopping.is_set():
                try:
                    self.beat_once()
                    if not self._stopping.is_set():
                        self._park_once()
                except (redis.RedisError, RedisClusterException) as error:
                    self._back_off(error)
        finally:
            self._close_park()
            if self._heartbeat is not None:
                self._heartbeat.close()
                self._heartbeat = None
            disconnect_client(self._own)  # the consumer's own connections
            self._running.clear()

    def _back_off(self, error: BeatError) -> None:
        self.counts["errors"] += 1
        self.last_error = error
        self._close_park()  # it may be the broken connection; the next park opens another
        self._stopping.wait(self.beat)

    def beat_once(self) -> int:
        """One pass without the park; returns how many jobs it handled."""
        self.counts["beats"] += 1
        self._recover()
        self._promote()
        handled = 0
        if "lanes" in self.drain:
            handled += self._drain(self._claim_lane)
        if "flat" in self.drain:
            handled += self._drain(self._claim_flat)
        return handled

    def start(self) -> threading.Thread:
        """Runs the loop in a daemon thread; returns it."""
        self._stopping.clear()
        self._thread = threading.Thread(target=self.run, name=f"emq-consumer-{self.queue.name}", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        """Asks the loop to end, wakes its park (CLIENT UNBLOCK) and waits for it. From
        inside a handler it only asks: the loop ends after that job."""
        self._stopping.set()
        if threading.current_thread() is self._loop_thread:
            return
        deadline = time.monotonic() + timeout
        while self._running.is_set() and time.monotonic() < deadline:
            self._unblock_park()  # again until it ends: the loop may be on its way to park
            time.sleep(0.005)
        if self._thread is not None:
            self._thread.join(max(0.0, deadline - time.monotonic()))

    async def run_async(self) -> None:
        """The loop for asyncio code: runs `run()` in a worker thread; `stop()` ends it."""
        await asyncio.to_thread(self.run)

    # --- one beat's parts ----------------------------------------------------------------

    def _recover(self) -> None:
        if self.recovery == "reap":
            self.queue.reap(self.batch)
        else:
            self.queue.sweep_lanes(self.batch, self.max_stalls)

    def _promote(self) -> None:
        self.queue.promote_lanes(self.batch)

    def _drain(self, claim: Callable[[], Job | None]) -> int:
        """Claims and handles until the source answers empty (or the consumer stops)."""
        handled = 0
        while not self._stopping.is_set():
            job = claim()
            self.counts["claims"] += 1
            if job is None:
                self.counts["empty_claims"] += 1
                return handled
            self._handle(job)
            handled += 1
        return handled

    def _claim_flat(self) -> Job | None:
        return self.queue.claim(self.lease_ms)

    def _claim_lane(self) -> Job | None:
        """One ring turn; a turn that only dropped an unserviceable group or a rowless
        head is taken again while the ring still holds groups (and the queue runs)."""
        for _ in range(_RING_RETRIES):
            job = self.queue.claim_lane(self.lease_ms)
            if job is not None or not self._ring_has_groups():
                return job
        return None

    def _ring_has_groups(self) -> bool:
        if self.queue.is_paused():
            return False
        return int(self.client.execute_command("LLEN", self.queue.key("ring"))) > 0

    # --- a job ---------------------------------------------------------------------------

    def _handle(self, job: Job) -> None:
        if self._heartbeat is not None:
            self._heartbeat.begin(job)
        try:
            self.handler(job)
        except Exception as error:  # the handler's failure is the job's failure
            outcome = self._settle_failure(job, error)
        else:
            outcome = self._settle(job, lambda: self._complete(job), COMPLETED)
        finally:
            if self._heartbeat is not None:
                self._heartbeat.end()
        self.counts[outcome] += 1
        if self.on_settle is not None:
            self.on_settle(job, outcome)

    def _complete(self, job: Job) -> str:
        if isinstance(job, LaneJob):
            self.queue.complete_lane(job.id, job.attempts)
        else:
            self.queue.complete(job.id, job.fence)
        return COMPLETED

    def _settle_failure(self, job: Job, error: Exception) -> str:
        reason = f"{type(error).__name__}: {error}"[:200]
        delay = max(0, int(self.backoff(job.attempts)))
        if isinstance(job, LaneJob):
            return self._settle(job, lambda: self.queue.fail_lane(job.id, job.attempts, reason, delay), SCHEDULED)
        return self._settle(job, lambda: self.queue.fail(job.id, job.fence, reason, delay), SCHEDULED)

    @staticmethod
    def _settle(job: Job, send: Callable[[], str], default: str) -> str:
        """Sends a settlement; a refused one (EMQSTATE/EMQFENCE: the lease was recovered
        and may be someone else's now) is `lost`, never retried."""
        try:
            outcome = send()
        except redis.ResponseError as error:
            if lease_gone(error):
                return LOST
            raise
        return outcome if outcome in (COMPLETED, SCHEDULED, DEAD) else default

    def extend(self, job: Job) -> int:
        """Extends `job`'s lease by `lease_ms`; returns the new deadline."""
        if isinstance(job, LaneJob):
            return self.queue.extend_lane(job.id, job.attempts, self.lease_ms)
        return self.queue.extend(job.id, job.fence, self.lease_ms)

    # --- the park ------------------------------------------------------------------------

    def _park_once(self) -> None:
        wake = self.queue.key("wake")
        if self._park is not None and not self._park.serves(self._own, wake):
            self._close_park()  # the queue's slot moved (a failover): park on its new node
        if self._park is None:
            self._park = ParkingConnection(self._own, wake)
        if self.park == "claim":
            self._park_on_claim(self._park)
            return
        if self._park.call("BLPOP", self.queue.key("wake"), blpop_timeout(self.beat)) is not None:
            self.counts["wakes"] += 1

    def _park_on_claim(self, park: ParkingConnection) -> None:
        """Park on the blocking claim itself (wire 6): the flat one when the beat drains the
        flat set, else the lane ring's; the job it leases is handled at once, and any other
        work is found at the next beat."""
        timeout_ms = max(1, round(self.beat * 1000))
        if "flat" in self.drain:
            job: Job | None = self.queue.claim_wait(self.lease_ms, timeout_ms, via=park.call)
        else:
            job = self.queue.claim_lane_wait(self.lease_ms, timeout_ms, via=park.call)
        self.counts["claims"] += 1
        if job is None:
            self.counts["empty_claims"] += 1
            return
        self.counts["wakes"] += 1
        self._handle(job)

    def _unblock_park(self) -> None:
        park = self._park  # the loop thread may clear it meanwhile
        if park is not None:
            with contextlib.suppress(redis.RedisError):  # the loop may be closing its connections
                park.unblock()

    def _close_park(self) -> None:
        park, self._park = self._park, None
        if park is not None:
            park.close()


_CONSUMER_SEQ = itertools.count(1)


class _Heartbeat:
    """One thread per consumer that extends the current job's lease every lease/3 while
    its handler runs (a quick handler costs two lock round trips, no thread); it gives up
    on a job once its lease is gone (the settlement then reports it `lost`)."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.job: Job | None = None
        self.turn = 0  # bumped on every begin/end, so a late extension is never sent
        self.closed = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, name="emq-heartbeat", daemon=True)
        self.thread.start()

    def begin(self, job: Job) -> None:
        with self.cond:
            self.job, self.turn = job, self.turn + 1
            self.cond.notify()

    def end(self) -> None:
        with self.cond:
            self.job, self.turn = None, self.turn + 1
            self.cond.notify()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify()
        self.thread.join()

    def _run(self) -> None:
        interval = self.consumer.lease_ms / 3000
        with self.cond:
            while not self.closed:
                if self.job is None:
                    self.cond.wait()
                    continue
                job, turn = self.job, self.turn
                if self.cond.wait_for(partial(self._moved_on, turn), interval):
                    continue
                self.cond.release()
                try:
                    alive = self._extend(job)
                finally:
                    self.cond.acquire()
                if not alive and self.turn == turn:
                    self.job = None

    def _moved_on(self, turn: int) -> bool:
        return self.closed or self.turn != turn

    def _extend(self, job: Job) -> bool:
        """False once the lease is gone. Any other failure (a node down, a failover under
        way) keeps the job: the lease may live on (a promoted replica holds it), and the
        next interval tries again."""
        try:
            self.consumer.extend(job)
        except (redis.RedisError, RedisClusterException) as error:
            if isinstance(error, redis.ResponseError) and lease_gone(error):
                return False
            self.consumer.counts["heartbeat_errors"] += 1
            return True
        self.consumer.counts["heartbeats"] += 1
        return True


def lease_gone(error: redis.ResponseError) -> bool:
    """Whether a refusal says the lease was recovered (and may be someone else's now)."""
    return str(error).startswith(LEASE_GONE)


def blpop_timeout(beat: float) -> str:
    """BLPOP's timeout: whole seconds as an integer, else a decimal with ms precision."""
    return str(int(beat)) if float(beat).is_integer() else f"{beat:.3f}"
