"""What an in-process instance costs: fakekey's `FakeRedis()` against fakeredis's.

    .venv/bin/python bench/instances.py                       # 5 runs of 200 instances each
    .venv/bin/python bench/instances.py --runs 7 --instances 1000 --json out.json
    .venv/bin/python bench/instances.py --only fakekey

Each run of each library is a subprocess of its own (a fresh heap, the other library not
loaded), the libraries taking turns; the table gives the median of the runs. A run:

- **first**: importing the library and making the first instance (fakekey starts its
  shared loop thread then), once;
- **create**: `FakeRedis()` N times in a row, each kept (as a session's fixtures are):
  the time per instance, garbage collections included; and the process's CPU time per
  instance (every thread's: fakekey's loop thread binds and starts the server), which the
  machine's load moves less;
- **first SET**: each kept instance's first command (its client connects then; a
  fakekey server's start, which `FakeRedis()` leaves to the loop thread, is done by
  then): wall time and CPU time per instance. `create` plus `first SET` is the cost of
  an instance that is used (**create+SET CPU**: what a server's start left for the first
  command shows there, not in `create`);
- **cycle**: an instance as a test fixture uses one: made, one SET, closed (fakekey's
  server stopped), the median of 200;
- **round trip**: SET on one instance, the median of 2000;
- **threads** and **fds**: what the N instances added to the process once each has
  answered a command (so each holds its client's connection): threads in all,
  descriptors per instance;
- **idle CPU**: the process's CPU time per second of wall time while the N instances
  sit idle (fakekey's servers run their cron, `hz` times a second each).

fakeredis is measured only when installed (`pip install fakeredis` into the venv; it is
not a dependency of fakekey).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

LIBRARIES = ("fakekey", "fakeredis")
METRICS = (  # key, heading, format
    ("first_ms", "first ms", "{:.1f}"),
    ("create_us", "create µs", "{:.0f}"),
    ("create_cpu_us", "create CPU µs", "{:.0f}"),
    ("first_set_us", "first SET µs", "{:.0f}"),
    ("first_set_cpu_us", "first SET CPU µs", "{:.0f}"),
    ("used_cpu_us", "create+SET CPU µs", "{:.0f}"),
    ("cycle_us", "cycle µs", "{:.0f}"),
    ("rtt_us", "round trip µs", "{:.0f}"),
    ("threads", "threads", "{:.0f}"),
    ("fds_per_instance", "fds/inst", "{:.2f}"),
    ("idle_cpu", "idle CPU s/s", "{:.3f}"),
)


# --- one run, in its own process ------------------------------------------------------------


def fake_redis_class(library: str) -> Callable[[], Any]:
    if library == "fakekey":
        import fakekey

        return fakekey.FakeRedis  # type: ignore[no-any-return]
    import fakeredis

    return fakeredis.FakeRedis  # type: ignore[no-any-return]


def close(library: str, client: Any) -> None:
    client.close()
    if library == "fakekey":
        client.fake_server.close()  # the server stops now, not when collected


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def measure(library: str, instances: int) -> dict[str, float]:
    threads_before, fds_before = threading.active_count(), open_fds()
    started = time.perf_counter()
    make = fake_redis_class(library)
    first = make()
    first.set("k", "v")
    result: dict[str, float] = {"first_ms": (time.perf_counter() - started) * 1000}

    started, cpu = time.perf_counter(), time.process_time()
    kept = [make() for _ in range(instances)]
    result["create_us"] = (time.perf_counter() - started) / instances * 1e6
    result["create_cpu_us"] = (time.process_time() - cpu) / instances * 1e6

    started, cpu = time.perf_counter(), time.process_time()
    for client in kept:
        client.set("k", "v")
    result["first_set_us"] = (time.perf_counter() - started) / instances * 1e6
    result["first_set_cpu_us"] = (time.process_time() - cpu) / instances * 1e6
    result["used_cpu_us"] = result["create_cpu_us"] + result["first_set_cpu_us"]
    result["threads"] = threading.active_count() - threads_before
    result["fds_per_instance"] = (open_fds() - fds_before) / (instances + 1)

    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(1)
    result["idle_cpu"] = (time.process_time() - cpu) / (time.perf_counter() - wall)

    samples = []
    for _ in range(2000):
        t = time.perf_counter()
        first.set("k", "v")
        samples.append(time.perf_counter() - t)
    result["rtt_us"] = median_us(samples)

    for client in kept:
        close(library, client)
    samples = []
    for _ in range(200):
        t = time.perf_counter()
        client = make()
        client.set("k", "v")
        close(library, client)
        samples.append(time.perf_counter() - t)
    result["cycle_us"] = median_us(samples)
    close(library, first)
    return result


# --- the runs, and the table ----------------------------------------------------------------


def installed(library: str) -> bool:
    probe = subprocess.run([sys.executable, "-c", f"import {library}"], capture_output=True)
    return probe.returncode == 0


def run_once(library: str, instances: int, timeout: float) -> dict[str, float]:
    proc = subprocess.run([sys.executable, __file__, "--worker", library, "--instances", str(instances)],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{library} run failed:\n{proc.stderr}")
    return json.loads(proc.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def table(results: dict[str, dict[str, float]]) -> str:
    names = list(results)
    rows = [["measure", *names] + (["fk/fr"] if len(names) == 2 else [])]
    for key, heading, form in METRICS:
        row = [heading, *(form.format(results[name][key]) for name in names)]
        if len(names) == 2:
            theirs = results["fakeredis"][key]
            row.append(f"{results['fakekey'][key] / theirs:.2f}" if theirs else "-")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--instances", type=int, default=200, help="instances kept alive in a run")
    parser.add_argument("--only", choices=LIBRARIES)
    parser.add_argument("--json", help="write the medians and every run here")
    parser.add_argument("--timeout", type=float, default=300, help="seconds for one run")
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.worker, args.instances)))
        return 0
    libraries = [lib for lib in LIBRARIES if (args.only in (None, lib)) and installed(lib)]
    if "fakeredis" not in libraries and args.only is None:
        print("fakeredis is not installed: fakekey alone (pip install fakeredis to compare)")
    runs: dict[str, list[dict[str, float]]] = {lib: [] for lib in libraries}
    for _ in range(args.runs):
        for library in libraries:  # in turns: the machine's load falls on both alike
            runs[library].append(run_once(library, args.instances, args.timeout))
    results = {library: medians(runs[library]) for library in libraries}
    from fakekey import COMPILED

    build = "compiled" if COMPILED else "pure Python"
    print(f"{args.instances} instances, median of {args.runs} runs (fakekey {build})")
    print(table(results))
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"instances": args.instances, "runs": runs, "medians": results}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
