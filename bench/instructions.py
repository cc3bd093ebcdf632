"""Instructions per request, counted by valgrind's callgrind: a figure that does not move
with the machine's load, for comparing two builds of fakekey.

    .venv/bin/python bench/instructions.py                     # every workload, -P 1 and 16
    .venv/bin/python bench/instructions.py -t GET,EVALSHA_1CALL -P 16
    .venv/bin/python bench/instructions.py --root /tmp/old     # another checkout's fakekey

Each figure drives one fakekey in-process (`ServerState` and a `Connection` on a uvloop
loop, with a transport that keeps the replies instead of sending them): a setup, then
batches of P copies of one request, each batch given to the connection as one read. It
runs the driver under callgrind twice, with 20 batches and with enough more for
`--requests` more requests, and divides the difference of the two instruction totals by
the extra requests: start-up, imports and the setup cancel out. The objects alive after
the setup are frozen out of the garbage collector (`gc.freeze()`), so that a collection
of the whole heap (millions of instructions, at a moment that depends on the run's
length) does not land in one run and not the other. No sockets and no kernel: what is counted is fakekey's own work per
request (parse, dispatch, the command, the reply), which is where the two builds differ.

`--root` measures the fakekey of another checkout (its directory goes first on
PYTHONPATH); build it first if it should run compiled (`setup.py build_ext --inplace`
there). Needs `valgrind` (Debian's package); about half a minute per figure.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def encode(*args: Any) -> bytes:
    parts = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


SCRIPT_ONE_CALL = "return redis.call('INCR', KEYS[1])"
SCRIPT_ONE_CALL_SHA = "61636018f4e6b5817b89791bbed242f93fa089e3"
SCRIPT_TEN_CALLS = "\n".join([  # bench/run.py's EVALSHA_10CALLS: ten calls over four keys of four types
    "redis.call('INCR', KEYS[1])",
    "redis.call('INCRBY', KEYS[1], 2)",
    "redis.call('HINCRBY', KEYS[2], 'a', 1)",
    "redis.call('HINCRBY', KEYS[2], 'b', 2)",
    "redis.call('ZINCRBY', KEYS[3], 1, 'm')",
    "redis.call('ZADD', KEYS[3], 5, 'n')",
    "redis.call('LPUSH', KEYS[4], 'x')",
    "redis.call('LTRIM', KEYS[4], 0, 99)",
    "redis.call('GET', KEYS[1])",
    "return redis.call('HGET', KEYS[2], 'a')",
])
SCRIPT_TEN_CALLS_SHA = hashlib.sha1(SCRIPT_TEN_CALLS.encode()).hexdigest()
ZSET_10K = encode("ZADD", "z", *[x for i in range(10000) for x in (i, f"m:{i:012d}")])
LIBRARY = ("#!lua name=benchlib\n"
           "redis.register_function('bench_incr', function(keys, args) return redis.call('INCR', keys[1]) end)")

# name -> (setup requests, the measured request)
WORKLOADS: dict[str, tuple[list[bytes], bytes]] = {
    "PING": ([], encode("PING")),
    "GET": ([encode("SET", "k", "v")], encode("GET", "k")),
    "SET": ([], encode("SET", "k", "v")),
    "INCR": ([], encode("INCR", "n")),
    "LPUSH": ([], encode("LPUSH", "l", "x")),
    "HSET": ([], encode("HSET", "h", "f", "v")),
    # enough elements for every pop of both runs (at most 3,520 with the defaults)
    "LPOP": ([encode("RPUSH", "l", *[f"item{i}" for i in range(10000)])], encode("LPOP", "l")),
    "ZADD": ([encode("ZADD", "z", *[x for i in range(1000) for x in (i, f"m{i}")])],
             encode("ZADD", "z", "500.5", "m500")),
    "ZRANGEBYSCORE": ([encode("ZADD", "z", *[x for i in range(1000) for x in (i, f"m{i}")])],
                      encode("ZRANGE", "z", "500", "+inf", "BYSCORE", "LIMIT", "0", "10")),
    "XADD": ([], encode("XADD", "s", "MAXLEN", "~", "1000", "*", "field", "value")),
    # a member moved across a 10K set and back, with redis-benchmark's zero-padded numbers
    # (bench/run.py's ZADD_10K updates or inserts at random)
    "ZADD_10K": ([ZSET_10K], encode("ZADD", "z", "000000002500", "m:000000007500")
                 + encode("ZADD", "z", "000000007500", "m:000000007500")),
    "EVALSHA_10CALLS": ([encode("SCRIPT", "LOAD", SCRIPT_TEN_CALLS)],
                        encode("EVALSHA", SCRIPT_TEN_CALLS_SHA, 4, "n", "h", "z", "l")),
    "EVALSHA_1CALL": ([encode("SCRIPT", "LOAD", SCRIPT_ONE_CALL)], encode("EVALSHA", SCRIPT_ONE_CALL_SHA, 1, "n")),
    "FCALL_1CALL": ([encode("FUNCTION", "LOAD", "REPLACE", LIBRARY)], encode("FCALL", "bench_incr", 1, "n")),
    # small collections (10 elements, a compact encoding in Valkey)
    "HGET10": ([encode("HSET", "h", *[x for i in range(10) for x in (f"field{i}", f"value{i}")])],
               encode("HGET", "h", "field7")),
    "HSET10": ([encode("HSET", "h", *[x for i in range(10) for x in (f"field{i}", f"value{i}")])],
               encode("HSET", "h", "field7", "other")),
    "SADD10": ([encode("SADD", "s", *[f"member{i}" for i in range(10)])], encode("SADD", "s", "member7")),
    "SISMEMBER10": ([encode("SADD", "s", *[f"member{i}" for i in range(10)])],
                    encode("SISMEMBER", "s", "member7")),
    # a pair of commands, so that the list stays at 10 elements
    "LPUSH_RPOP10": ([encode("RPUSH", "l", *[f"item{i}" for i in range(10)])],
                     encode("LPUSH", "l", "item") + encode("RPOP", "l")),
    "ZADD10": ([encode("ZADD", "z", *[x for i in range(10) for x in (i, f"member{i}")])],
               encode("ZADD", "z", "7.5", "member7")),
    "LPOP_RPUSH10": ([encode("RPUSH", "l", *[f"item{i}" for i in range(10)])],
                     encode("LPOP", "l") + encode("RPUSH", "l", "item")),
    "LRANGE10": ([encode("RPUSH", "l", *[f"item{i}" for i in range(10)])], encode("LRANGE", "l", "0", "-1")),
    "LINDEX10": ([encode("RPUSH", "l", *[f"item{i}" for i in range(10)])], encode("LINDEX", "l", "6")),
}


class KeptTransport:
    """What a Connection writes to: it keeps the last write (the last batch's replies) and
    whether any write held an error reply, not every reply (a growing heap would make the
    garbage collector's work grow with the run's length)."""

    def __init__(self) -> None:
        self.last = b""
        self.writes = 0
        self.errors = 0

    def write(self, data: bytes) -> None:
        self.last = bytes(data)
        self.writes += 1
        # find, not `in`: bytes' `in` tries the argument as an integer first, and the
        # TypeError it formats and drops cost ~1,800 instructions a write (CPython 3.11)
        if self.last.startswith(b"-") or self.last.find(b"\r\n-") >= 0:
            self.errors += 1

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 5555) if name in ("peername", "sockname") else None

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def drive(name: str, pipeline: int, batches: int) -> KeptTransport:
    """Run one workload in-process: the setup, then `batches` reads of `pipeline` copies
    of the request, one per turn of the event loop, whose callbacks (the replies' send)
    run after it as in the server. Returns the transport (the last batch's replies)."""
    from fakekey.config.settings import Config
    from fakekey.net.server import Connection, new_event_loop, new_state

    setup, request = WORKLOADS[name]
    batch = request * pipeline
    loop = new_event_loop()
    state = new_state(Config())
    transport = KeptTransport()
    connection = Connection(state)
    done = loop.create_future()
    left = [batches]

    def read(data: bytes) -> None:
        connection.data_received(data)
        if left[0] == 0:
            done.set_result(None)
            return
        left[0] -= 1
        loop.call_soon(read, batch)

    def start() -> None:
        connection.connection_made(transport)  # type: ignore[arg-type]
        for command in setup:
            connection.data_received(command)
        gc.collect()
        gc.freeze()  # what lives now is never traversed again: no full collection lands in one run only
        loop.call_soon(read, b"")

    try:
        loop.call_soon(start)
        loop.run_until_complete(done)
    finally:
        loop.close()
        gc.unfreeze()  # a caller in-process (the tests) gets its collector back whole
    return transport


def collected(valgrind_output: str) -> int:
    """callgrind's total instruction count ("Collected : N") from its report."""
    found = re.search(r"Collected\s*:\s*(\d+)", valgrind_output)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {valgrind_output[-300:]!r}")
    return int(found.group(1))


def count(name: str, pipeline: int, batches: int, root: Path) -> int:
    """Instructions of one driver run under callgrind, with `root`'s fakekey."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            sys.executable, __file__, "--drive", name, str(pipeline), str(batches)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} -P {pipeline} failed: {done.stderr[-500:]}")
    return collected(done.stderr)


FEW_BATCHES = 20


def per_request(name: str, pipeline: int, root: Path, requests: int) -> float:
    extra = max(requests // pipeline, 1)
    few = count(name, pipeline, FEW_BATCHES, root)
    more = count(name, pipeline, FEW_BATCHES + extra, root)
    return (more - few) / (extra * pipeline)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", "-t", default=",".join(WORKLOADS),
                        help=f"comma list of workloads ({','.join(WORKLOADS)})")
    parser.add_argument("--pipeline", "-P", default="1,16", help="comma list of depths (1,16)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose fakekey is measured")
    parser.add_argument("--requests", type=int, default=3200,
                        help="the second run's extra requests (3200)")
    parser.add_argument("--drive", nargs=3, metavar=("NAME", "P", "BATCHES"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.drive:
        name, pipeline, batches = args.drive
        drive(name, int(pipeline), int(batches))
        return 0
    names = [n.strip().upper() for n in args.tests.split(",") if n.strip()]
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        print(f"unknown workloads: {', '.join(unknown)}", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("valgrind is needed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"fakekey from {args.root.resolve()}; instructions per request (callgrind)")
    print(f"{'workload':16} {'-P':>3} {'instructions':>13}")
    for pipeline in (int(p) for p in args.pipeline.split(",")):
        for name in names:
            print(f"{name:16} {pipeline:>3} {per_request(name, pipeline, args.root, args.requests):>13,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
