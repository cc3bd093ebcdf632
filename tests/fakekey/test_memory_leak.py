"""No leak: fakekey's memory stays flat over a run mixing every family (the quick form of
`bench/memory.py --part leak`, which the issue runs for 10 million requests).

The server runs in a subprocess (its RSS is its own); after warm-up, neither its RSS nor
its count of live Python blocks (sys.getallocatedblocks, read inside the server after a
gc) may grow past a small bound. The data the mix writes is bounded, so what grows is
a leak."""

from __future__ import annotations

import json
from pathlib import Path

from bench_scripts import load_bench

bench = load_bench("memory", reuse=True)

REQUESTS = 200_000
WARMUP = 80_000
MAX_RSS_GROWTH = 3 * 2**20  # bytes, after warm-up; one leaked object per request is far more
MAX_BLOCK_GROWTH = 20_000  # live Python blocks, after warm-up
MAX_TYPE_GROWTH = 1_000  # objects of any one gc-tracked type (stream entries move by ~100s)


def test_memory_stays_flat_over_a_mixed_run() -> None:
    with bench.fakekey_process() as fk:
        result = bench.leak_check(fk.port, fk.pid, REQUESTS, 10_000, WARMUP, snapshot=fk.snapshot)
        before, after = (json.loads(Path(path).read_text()) for path in result.trace)
    assert result.requests >= REQUESTS
    assert result.errors == {}  # every command of the mix ran as meant
    assert set(result.per_thread) == {"mix0", "mix1", "mix2", "churn", "emq"}
    assert min(result.per_thread.values()) > 0
    blocks = after["blocks"] - before["blocks"]
    assert blocks < MAX_BLOCK_GROWTH, bench.diff_counts(*result.trace, top=10)
    grown = {name: n - before["types"].get(name, 0) for name, n in after["types"].items()}
    # the end snapshot is taken after the drivers have hung up: no connection may remain
    assert grown.get("Client", 0) <= 0 and grown.get("Connection", 0) <= 0, grown
    assert max(grown.values()) < MAX_TYPE_GROWTH, bench.diff_counts(*result.trace, top=10)
    assert result.growth < MAX_RSS_GROWTH, bench.leak_report(result)


def test_summary_of_samples() -> None:
    result = bench.LeakResult(100, 1.0, 20, [(10, 5_000), (20, 1_000), (40, 1_400), (60, 1_200), (100, 1_800)])
    result.summarize()
    assert (result.first, result.last, result.peak, result.growth) == (1_000, 1_800, 1_800, 800)
    assert abs(result.slope - 31_000 / 3_500 * 1e6) < 1e-3  # least squares after warm-up
    assert bench.least_squares_slope([(1, 5)]) == 0.0


def test_gc_signal_is_acknowledged() -> None:
    with bench.fakekey_process() as fk:
        fk.gc()
        fk.gc()
        path = fk.snapshot()
        counts = json.loads(Path(path).read_text())
        assert fk.acks == 3
        assert counts["blocks"] > 0 and counts["types"]["ServerState"] == 1
        assert counts["types"].get("Client", 0) == 0  # the PINGs of the start have left
