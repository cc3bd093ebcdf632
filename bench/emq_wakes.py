"""Benchmark how fast a parked EMQ consumer learns of flat work: the seed's doorbell, `ring
all`, and the blocking claim `EMQ.BCLAIM`, on fakekey and on a real Valkey, in one run.

    .venv/bin/python bench/emq_wakes.py            # the whole run (about 2-3 minutes)
    .venv/bin/python bench/emq_wakes.py --quick    # a smoke run in seconds
    .venv/bin/python bench/emq_wakes.py --servers fakekey --modes ring-all,bclaim -r 5

Three consumers of flat jobs (`fakekey.emq.consumer.Consumer`, `drain=("flat",)`, no
heartbeat), fed by the same producer, `Queue(wire=4).enqueue` (the `@enqueue` script, TIME
then EVALSHA), so that the figures differ by the consumer alone (`--producer consumer`
feeds bclaim with `EMQ.ENQUEUE` instead):

- seed: wire 4 (the scripts), parked on `BLPOP emq:{q}:wake`, the queue under the seed's
  rule (meta has no `ring`): a flat enqueue rings nothing, so the job is found at the
  consumer's next beat. Its beat is `--beat` (0.2 s), so its latency is about beat/2 on
  average and bounded by the beat (on Valkey, by the beat plus up to 1/hz = 100 ms: its
  BLPOP timeouts are noticed when the event loop next wakes): it measures the beat, not
  the server.
- ring-all: the same consumer, the queue set with `Queue.set_ring("all")` (`@ring`): every
  claimable transition pushes a wake token, so the enqueue itself ends the park; the
  consumer then runs its beat (reap, promote, claim: three scripts) to lease the job.
- bclaim: wire 6 (the verbs), `Consumer(park="claim")` parked on `EMQ.BCLAIM`: the
  enqueue makes the parked claim lease the job and reply it. fakekey only: the verbs are
  the module's.

The two doorbell modes run on both servers (the wire-4 scripts, `@ring` included, run on
Valkey 9.1.2 unchanged); ring-all and bclaim park with a 5 s beat, so a wake that never
came would show as seconds, not be hidden by the next beat.

- latency: one job at a time: the producer reads the clock just before `Queue.enqueue`
  (a flat job, no delay), the handler reads it when it starts (the claim that leased the
  job has returned); the next job is enqueued once the consumer is parked again
  (`blocked_clients` 1). For seed the enqueue comes a random time (0 to one beat) after the
  park, so that it falls anywhere in the beat. p50 and p99 over K jobs.
- throughput: a producer enqueues N flat jobs while 1 or 4 consumers (one process each, as
  deployed) drain them; jobs/s from the first enqueue to the last completion (meta
  `completed` reaching N), and the server's CPU time per job. The producer runs twice
  (`--batch 1,50`): in a loop of `Queue.enqueue` (batch 1: a steady stream, the consumers
  park between jobs once they keep up, and the producer's own rate can be the bound), and
  pipelined, 50 enqueues a round trip (one TIME, then 50 EVALSHAs of `@enqueue` with that
  `now`): a burst that the consumers' drain bounds.

Each figure is the median of `--runs` runs (3); the runs of one figure take turns, server
after server. Tables go to stdout, the results to a JSON file (default
bench/results/emq-wakes-<time>.json).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import multiprocessing
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType

import redis

from fakekey.emq import Queue
from fakekey.emq.consumer import Consumer, Job
from fakekey.emq.scripts import SCRIPTS

BENCH_DIR = Path(__file__).resolve().parent
QUEUE = "wakes"
WAKE_BEAT = 5.0  # the beat of the consumers a wake should reach at once (ring-all, bclaim)
P99_TARGET_MS = 5.0  # the target for ring-all and bclaim


def _load_harness() -> ModuleType:
    """bench/run.py (servers, percentiles, CPU time), loaded once under the name the tests use."""
    if "bench_run" in sys.modules:
        return sys.modules["bench_run"]
    spec = importlib.util.spec_from_file_location("bench_run", BENCH_DIR / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    return module


harness = _load_harness()


@dataclass(frozen=True)
class Mode:
    """One way a consumer learns of flat work."""

    name: str
    wire: int
    park: str  # Consumer's `park`: "wake" (BLPOP on the wake list) or "claim" (EMQ.BCLAIM)
    ring: str | None  # the queue's doorbell rule, set before the consumers start (None: the seed's)
    fakekey_only: bool

    def beat(self, seed_beat: float) -> float:
        return seed_beat if self.name == "seed" else WAKE_BEAT

    def describe(self, seed_beat: float) -> str:
        where = "EMQ.BCLAIM" if self.park == "claim" else "BLPOP wake"
        return f"wire {self.wire}, {where}, beat {self.beat(seed_beat):g} s"


MODES = {
    "seed": Mode("seed", 4, "wake", None, False),
    "ring-all": Mode("ring-all", 4, "wake", "all", False),
    "bclaim": Mode("bclaim", 6, "claim", None, True),
}


@dataclass
class Latency:
    mode: str
    server: str
    jobs: int
    beat_s: float
    p50_ms: float  # medians of the runs' percentiles
    p99_ms: float
    lost_wakes: int | None  # fakekey's lost-wake count (FAKEKEY.WAKES), the median of the runs
    runs: list[tuple[float, float, int | None]]


@dataclass
class Throughput:
    mode: str
    server: str
    consumers: int
    batch: int  # enqueues per round trip of the producer (1: Queue.enqueue in a loop)
    jobs: int
    beat_s: float
    jobs_per_s: float  # the median of the runs
    enqueues_per_s: float  # the producer's own rate (its loop alone), the median of the runs
    cpu_us_per_job: float | None  # the server's CPU time per job, the median of the runs
    runs: list[tuple[float, float, float | None]]


# --- helpers ---------------------------------------------------------------------------------


def connect(endpoint: harness.Endpoint) -> redis.Redis:
    client = redis.Redis(host=endpoint.host, port=endpoint.port, max_connections=64)
    client.flushall()
    return client


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, pause: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(pause)


def server_pid(client: redis.Redis) -> int | None:
    """The server's process id (INFO server), when it runs on this machine."""
    pid = client.info("server").get("process_id")
    return int(pid) if pid and Path(f"/proc/{pid}/task").exists() else None


def blocked_clients(client: redis.Redis) -> int:
    return int(client.info("clients").get("blocked_clients", 0))


def make_consumer(client: redis.Redis, mode: Mode, handler: Callable[[Job], None], beat: float) -> Consumer:
    return Consumer(client, QUEUE, handler, wire=mode.wire, park=mode.park, beat=beat,
                    drain=("flat",), heartbeat=False)


def prepare_queue(client: redis.Redis, mode: Mode, producer: str) -> Queue:
    """The producer's queue (on wire 4, or on the consumer's wire when `producer` is
    "consumer"), the mode's doorbell rule set."""
    queue = Queue(client, QUEUE, wire=mode.wire if producer == "consumer" else 4)
    if mode.ring is not None:
        queue.set_ring(mode.ring)
    return queue


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


# --- latency ---------------------------------------------------------------------------------


def latency_run(endpoint: harness.Endpoint, mode: Mode, jobs: int, seed_beat: float, producer: str,
                rng: random.Random) -> tuple[float, float, int | None]:
    """One run: (p50, p99) in ms from just before a flat enqueue to the handler's start,
    and fakekey's lost wakes over the run (None on another server)."""
    client = connect(endpoint)
    queue = prepare_queue(client, mode, producer)
    beat = mode.beat(seed_beat)
    handled = threading.Event()
    started_at = [0.0]

    def handler(job: Job) -> None:
        started_at[0] = time.perf_counter()
        handled.set()

    consumer = make_consumer(client, mode, handler, beat)
    consumer.start()
    latencies = []
    lost: int | None = None
    try:
        wait_for(lambda: consumer.counts["beats"] >= 1, 10, "the consumer did not start")
        if endpoint.name == "fakekey":
            client.execute_command("FAKEKEY.WAKES", "RESET")
        for i in range(jobs):
            wait_for(lambda: blocked_clients(client) >= 1, beat + 5, "the consumer did not park", 0.0005)
            if mode.name == "seed":
                time.sleep(rng.uniform(0, beat))  # anywhere in the beat
            empty = consumer.counts["empty_claims"]
            handled.clear()
            enqueued = time.perf_counter()
            queue.enqueue(f"JOB{i:08}", b"payload")
            if not handled.wait(beat + 5):
                raise TimeoutError(f"{mode.name}: the job was not claimed within the beat")
            latencies.append((started_at[0] - enqueued) * 1000)
            # the consumer settled it and drained to empty: it is on its way back to the park
            wait_for(lambda empty=empty: consumer.counts["empty_claims"] > empty, beat + 5,
                     "the consumer did not drain")
        if endpoint.name == "fakekey":
            report = client.execute_command("FAKEKEY.WAKES", "GET")
            fields = report if isinstance(report, dict) else dict(zip(report[::2], report[1::2]))
            lost = int(fields.get(b"lost", fields.get("lost", 0)))
    finally:
        consumer.stop()
        client.close()
    latencies.sort()
    return harness.percentile(latencies, 0.5), harness.percentile(latencies, 0.99), lost


def measure_latency(endpoints: list, modes: list[Mode], jobs: int, seed_jobs: int, seed_beat: float,
                    producer: str, runs: int, log: Callable[[str], None]) -> list[Latency]:
    results = []
    rng = random.Random(25)
    for mode in modes:
        servers = [e for e in endpoints if e.name == "fakekey" or not mode.fakekey_only]
        count = seed_jobs if mode.name == "seed" else jobs
        by_server: dict[str, list[tuple[float, float, int | None]]] = {e.name: [] for e in servers}
        for _ in range(runs):  # the runs take turns, server after server
            for endpoint in servers:
                by_server[endpoint.name].append(latency_run(endpoint, mode, count, seed_beat, producer, rng))
        for endpoint in servers:
            rs = by_server[endpoint.name]
            p50, p99 = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
            lost = _median([r[2] for r in rs])
            results.append(Latency(mode.name, endpoint.name, count, mode.beat(seed_beat), p50, p99,
                                   None if lost is None else round(lost), rs))
            log(f"latency {mode.name} {endpoint.name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms"
                + ("" if lost is None else f", lost wakes {lost:g}"))
    return results


# --- throughput ------------------------------------------------------------------------------


def consumer_process(host: str, port: int, mode: Mode, beat: float, ready, stop) -> None:
    """One consumer in a process of its own (as deployed), until `stop` is set."""
    client = redis.Redis(host=host, port=port)
    consumer = make_consumer(client, mode, lambda job: None, beat)
    consumer.start()
    wait_for(lambda: consumer.counts["beats"] >= 1, 10, "the consumer did not start")
    ready.release()
    stop.wait()
    consumer.stop()


def enqueue_pipelined(client: redis.Redis, queue: Queue, first: int, count: int) -> None:
    """`count` flat jobs in one round trip (after one TIME on wire 4): what `Queue.enqueue`
    sends for each, `@enqueue` by EVALSHA (loaded beforehand) or `EMQ.ENQUEUE`."""
    pipe = client.pipeline(transaction=False)
    keys = (queue.key("pending"), queue.key("schedule"))
    if queue.wire == 6:
        for i in range(first, first + count):
            pipe.execute_command("EMQ.ENQUEUE", 3, queue.key(f"JOB{i:08}"), *keys, b"payload", 0, 0)
    else:
        sha, now = SCRIPTS["enqueue"].sha, queue.now_ms()
        for i in range(first, first + count):
            pipe.execute_command("EVALSHA", sha, 3, queue.key(f"JOB{i:08}"), *keys, b"payload", 0, 0, now)
    replies = pipe.execute()
    if any(reply != 1 for reply in replies):
        raise RuntimeError(f"an enqueue was refused: {replies}")


def throughput_run(endpoint: harness.Endpoint, mode: Mode, consumers: int, batch: int, jobs: int,
                   seed_beat: float, producer: str) -> tuple[float, float, float | None]:
    """One run: jobs/s from the first enqueue to the last completion, the producer's
    enqueues/s, and the server's CPU time per job (µs)."""
    client = connect(endpoint)
    pid = server_pid(client)
    queue = prepare_queue(client, mode, producer)
    client.execute_command("SCRIPT", "LOAD", SCRIPTS["enqueue"].source)
    context = multiprocessing.get_context("fork")
    ready, stop = context.Semaphore(0), context.Event()
    args = (endpoint.host, endpoint.port, mode, mode.beat(seed_beat), ready, stop)
    workers = [context.Process(target=consumer_process, args=args) for _ in range(consumers)]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            if not ready.acquire(timeout=20):
                raise TimeoutError("a consumer did not start")
        wait_for(lambda: blocked_clients(client) >= consumers, 10, "the consumers did not park")
        started, cpu = time.perf_counter(), harness.cpu_seconds(pid)
        if batch == 1:
            for i in range(jobs):
                queue.enqueue(f"JOB{i:08}", b"payload")
        else:
            for first in range(0, jobs, batch):
                enqueue_pipelined(client, queue, first, min(batch, jobs - first))
        enqueued = time.perf_counter()
        meta = queue.key("meta")
        wait_for(lambda: int(client.hget(meta, "completed") or 0) >= jobs, 120,
                 "the consumers did not finish in time", pause=0.002)
        finished = time.perf_counter()
        after = harness.cpu_seconds(pid)
        completed = int(client.hget(meta, "completed") or 0)
        if completed != jobs:
            raise RuntimeError(f"{completed} jobs completed, {jobs} enqueued")
        cpu_per_job = None if after is None or cpu is None else max(0.0, after - cpu) * 1e6 / jobs
        return jobs / (finished - started), jobs / (enqueued - started), cpu_per_job
    finally:
        stop.set()
        for worker in workers:
            worker.join(10)
        client.close()


def measure_throughput(endpoints: list, modes: list[Mode], consumer_counts: list[int], batches: list[int],
                       jobs: int, seed_beat: float, producer: str, runs: int,
                       log: Callable[[str], None]) -> list[Throughput]:
    results = []
    for batch, consumers in ((b, c) for b in batches for c in consumer_counts):
        for mode in modes:
            servers = [e for e in endpoints if e.name == "fakekey" or not mode.fakekey_only]
            by_server: dict[str, list[tuple[float, float, float | None]]] = {e.name: [] for e in servers}
            for _ in range(runs):
                for endpoint in servers:
                    run = throughput_run(endpoint, mode, consumers, batch, jobs, seed_beat, producer)
                    by_server[endpoint.name].append(run)
            for endpoint in servers:
                rs = by_server[endpoint.name]
                rate, enq = statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs)
                cpu = _median([r[2] for r in rs])
                results.append(Throughput(mode.name, endpoint.name, consumers, batch, jobs, mode.beat(seed_beat),
                                          rate, enq, cpu, rs))
                log(f"throughput {mode.name} {endpoint.name} x{consumers} batch {batch}: {rate:,.0f} jobs/s"
                    f" (producer {enq:,.0f}/s), server CPU {_num(cpu)} µs/job")
    return results


# --- report ----------------------------------------------------------------------------------


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or not b else f"{a / b:.2f}"


def latency_table(results: list[Latency], modes: list[Mode], seed_beat: float, producer: str) -> str:
    by = {(r.mode, r.server): r for r in results}
    lines = ["wake latency: flat enqueue -> the claim that leases it (handler start), ms",
             f"{'mode':<9} {'how it parks':<32} {'jobs':>4}  {'fk p50':>7} {'fk p99':>7}  "
             f"{'vk p50':>7} {'vk p99':>7}  {'fk/vk p50':>9} {'fk/vk p99':>9}  {'fk lost':>7}",
             f"{'-' * 9} {'-' * 32} {'-' * 4}  {'-' * 7} {'-' * 7}  {'-' * 7} {'-' * 7}  {'-' * 9} {'-' * 9}  {'-' * 7}"]
    for mode in modes:
        fk, vk = by.get((mode.name, "fakekey")), by.get((mode.name, "valkey"))
        if fk is None and vk is None:
            continue
        jobs = (fk or vk).jobs  # type: ignore[union-attr]
        lines.append(
            f"{mode.name:<9} {mode.describe(seed_beat):<32} {jobs:>4}  "
            f"{_num(fk and fk.p50_ms, 3):>7} {_num(fk and fk.p99_ms, 3):>7}  "
            f"{_num(vk and vk.p50_ms, 3):>7} {_num(vk and vk.p99_ms, 3):>7}  "
            f"{_ratio(fk and fk.p50_ms, vk and vk.p50_ms):>9} {_ratio(fk and fk.p99_ms, vk and vk.p99_ms):>9}  "
            f"{_num(fk and fk.lost_wakes):>7}")
    feed = "@enqueue (wire 4) for every mode" if producer == "4" else "on the consumer's wire"
    lines.append(f"  producer: {feed}; fk/vk: fakekey's latency over valkey's (above 1: fakekey slower)")
    lines.append("  fk lost: fakekey's lost wakes (FAKEKEY.WAKES) in a run: the seed's rule loses one per job")
    return "\n".join(lines)


def throughput_table(results: list[Throughput], modes: list[Mode]) -> str:
    by = {(r.mode, r.server, r.consumers, r.batch): r for r in results}
    jobs = results[0].jobs if results else 0
    lines = [f"throughput: {jobs:,} flat jobs, enqueue -> handler -> complete (jobs/s)",
             f"{'mode':<9} {'consumers':>9} {'batch':>5}  {'fk jobs/s':>9} {'vk jobs/s':>9} {'fk/vk':>5}  "
             f"{'fk prod/s':>9} {'vk prod/s':>9}  {'fk CPU µs/job':>13} {'vk CPU µs/job':>13}",
             f"{'-' * 9} {'-' * 9} {'-' * 5}  {'-' * 9} {'-' * 9} {'-' * 5}  {'-' * 9} {'-' * 9}  {'-' * 13} {'-' * 13}"]
    for batch, consumers in sorted({(r.batch, r.consumers) for r in results}):
        for mode in modes:
            fk, vk = by.get((mode.name, "fakekey", consumers, batch)), by.get((mode.name, "valkey", consumers, batch))
            if fk is None and vk is None:
                continue
            lines.append(
                f"{mode.name:<9} {consumers:>9} {batch:>5}  {_num(fk and fk.jobs_per_s):>9} "
                f"{_num(vk and vk.jobs_per_s):>9} {_ratio(fk and fk.jobs_per_s, vk and vk.jobs_per_s):>5}  "
                f"{_num(fk and fk.enqueues_per_s):>9} {_num(vk and vk.enqueues_per_s):>9}  "
                f"{_num(fk and fk.cpu_us_per_job):>13} {_num(vk and vk.cpu_us_per_job):>13}")
    lines.append("  batch: enqueues per producer round trip (1: Queue.enqueue in a loop); prod/s: the producer's"
                 " own enqueues/s;\n  fk/vk: fakekey's jobs/s over valkey's (below 1: fakekey slower)")
    return "\n".join(lines)


def targets(latency: list[Latency], throughput: list[Throughput]) -> list[tuple[str, bool]]:
    """The issue's targets, each with whether this run met it."""
    checks = []
    for r in latency:
        if r.mode in ("ring-all", "bclaim"):
            checks.append((f"p99 < {P99_TARGET_MS:g} ms, {r.mode} on {r.server}: {r.p99_ms:.3f} ms",
                           r.p99_ms < P99_TARGET_MS))
    by = {(r.mode, r.server, r.consumers, r.batch): r for r in throughput}
    for (mode, server, consumers, batch), r in sorted(by.items(), key=lambda item: item[0][1:]):
        if mode != "bclaim":
            continue
        for other in ("seed", "ring-all"):
            wake = by.get((other, server, consumers, batch))
            if wake is not None:
                checks.append((f"bclaim >= {other} jobs/s, x{consumers} batch {batch} on {server}: "
                               f"{r.jobs_per_s:,.0f} vs {wake.jobs_per_s:,.0f}", r.jobs_per_s >= wake.jobs_per_s))
    return checks


def targets_text(checks: list[tuple[str, bool]]) -> str:
    if not checks:
        return "targets: none measured in this run"
    return "targets (issue 25):\n" + "\n".join(f"  {'met    ' if ok else 'NOT MET'}  {text}" for text, ok in checks)


# --- command line ----------------------------------------------------------------------------


def ratios(latency: list[Latency], throughput: list[Throughput]) -> dict[str, list[dict]]:
    """fakekey over valkey wherever both ran: latencies (above 1: fakekey slower) and jobs/s
    (below 1: fakekey slower)."""
    lat = {(r.mode, r.server): r for r in latency}
    thr = {(r.mode, r.server, r.consumers, r.batch): r for r in throughput}
    return {
        "latency": [{"mode": mode, "p50": fk.p50_ms / vk.p50_ms, "p99": fk.p99_ms / vk.p99_ms}
                    for (mode, server), fk in lat.items()
                    if server == "fakekey" and (vk := lat.get((mode, "valkey"))) is not None],
        "throughput": [{"mode": mode, "consumers": consumers, "batch": batch,
                        "jobs_per_s": fk.jobs_per_s / vk.jobs_per_s}
                       for (mode, server, consumers, batch), fk in thr.items()
                       if server == "fakekey" and (vk := thr.get((mode, "valkey", consumers, batch))) is not None],
    }


def _names(choices: Sequence[str]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [part.strip().lower() for part in text.split(",") if part.strip()]
        unknown = [name for name in names if name not in choices]
        if not names or unknown:
            raise argparse.ArgumentTypeError(f"expected a comma list of {', '.join(choices)}")
        return list(dict.fromkeys(names))
    return parse


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 20 latency jobs (seed 5), 200 throughput jobs, one run each")
    parser.add_argument("--runs", "-r", type=int, help="runs per figure; the median is reported (3)")
    parser.add_argument("--servers", type=_names(("fakekey", "valkey")), default=["fakekey", "valkey"],
                        help="comma list (fakekey,valkey)")
    parser.add_argument("--modes", type=_names(tuple(MODES)), default=list(MODES),
                        help="comma list (seed,ring-all,bclaim)")
    parser.add_argument("--latency-jobs", "-k", type=int, help="jobs per latency run, ring-all and bclaim (200)")
    parser.add_argument("--seed-jobs", type=int, help="jobs per latency run of seed, a beat each (40)")
    parser.add_argument("--jobs", "-n", type=int, help="jobs per throughput run (2000)")
    parser.add_argument("--consumers", "-c", type=harness._int_list, default=[1, 4], help="comma list (1,4)")
    parser.add_argument("--batch", "-b", type=harness._int_list, default=[1, 50],
                        help="the producer's enqueues per round trip, comma list (1,50; 1 = Queue.enqueue in a loop)")
    parser.add_argument("--beat", type=float, default=0.2, help="the seed consumer's beat in seconds (0.2)")
    parser.add_argument("--producer", choices=("4", "consumer"), default="4",
                        help="the producer's wire: 4 (the @enqueue script) for every mode, the default, or"
                             " the consumer's (EMQ.ENQUEUE for bclaim)")
    parser.add_argument("--fakekey-url", help="benchmark this running fakekey instead of starting one (flushed)")
    parser.add_argument("--valkey-url", help="benchmark this running valkey instead of starting one (flushed)")
    parser.add_argument("--json", type=Path, help="results file (default bench/results/emq-wakes-<time>.json)")
    return parser.parse_args(argv)


@contextlib.contextmanager
def _servers(args: argparse.Namespace) -> Iterator[list]:
    with contextlib.ExitStack() as stack:
        endpoints = []
        for name in args.servers:
            url = getattr(args, f"{name}_url")
            if url:
                endpoints.append(harness.endpoint_from_url(name, url))
            else:
                process = harness.fakekey_process() if name == "fakekey" else harness.valkey_process()
                endpoints.append(stack.enter_context(process))
        yield endpoints


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    latency_jobs = args.latency_jobs or (20 if args.quick else 200)
    seed_jobs = args.seed_jobs or (5 if args.quick else 40)
    jobs = args.jobs or (200 if args.quick else 2000)
    modes = [MODES[name] for name in MODES if name in args.modes]
    from fakekey import COMPILED

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    began = time.monotonic()
    with _servers(args) as endpoints:
        log("servers: " + ", ".join(f"{e.name} {e.host}:{e.port}" for e in endpoints)
            + f" (fakekey {'compiled' if COMPILED else 'pure Python'})")
        # throughput first: its consumers are forked, and a fork is safest before any thread
        throughput = measure_throughput(endpoints, modes, args.consumers, args.batch, jobs, args.beat, args.producer,
                                        runs, log)
        latency = measure_latency(endpoints, modes, latency_jobs, seed_jobs, args.beat, args.producer, runs, log)
        versions = {e.name: harness.server_version(e) for e in endpoints}
    checks = targets(latency, throughput)
    build = "compiled" if COMPILED else "pure Python (its compiled modules do not match the source)"
    print(f"fakekey {build}; " + ", ".join(f"{name} {version}" for name, version in versions.items()) + "\n")
    print(latency_table(latency, modes, args.beat, args.producer) + "\n\n" + throughput_table(throughput, modes)
          + "\n\n" + targets_text(checks))
    path = args.json or harness.RESULTS_DIR / f"emq-wakes-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"time": datetime.now().isoformat(timespec="seconds"), "servers": versions,
            "fakekey_compiled": COMPILED, "runs": runs, "latency_jobs": latency_jobs, "seed_jobs": seed_jobs,
            "jobs": jobs, "consumers": args.consumers, "batches": args.batch, "producer_wire": args.producer,
            "seed_beat_s": args.beat, "wake_beat_s": WAKE_BEAT,
            "modes": {m.name: asdict(m) for m in modes}, "elapsed_s": round(time.monotonic() - began, 1)}
    path.write_text(json.dumps({"meta": meta, "latency": [asdict(r) for r in latency],
                                "throughput": [asdict(r) for r in throughput],
                                "fakekey_over_valkey": ratios(latency, throughput),
                                "targets": [{"target": text, "met": ok} for text, ok in checks]}, indent=2))
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
