"""bench/emq_wakes.py: its quickest run against fakekey, so the wake benchmark (the seed's
doorbell, `ring all`, `EMQ.BCLAIM`) keeps working as the consumer, the scripts and the
server change. No timing is asserted: only that every figure is there and positive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_scripts import load_bench

MODES = ["seed", "ring-all", "bclaim"]

bench = load_bench("emq_wakes")


def test_quickest_run_on_fakekey(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # fakekey as a subprocess (the bench's default): the throughput consumers are forked
    # processes, and a fork is safest from a process that runs no server thread
    out = tmp_path / "wakes.json"
    argv = ["--quick", "--servers", "fakekey", "--latency-jobs", "5", "--seed-jobs", "2", "--jobs", "30",
            "-c", "1,2", "-b", "1,10", "--beat", "0.1", "--json", str(out)]
    assert bench.main(argv) == 0
    results = json.loads(out.read_text())

    latency = {r["mode"]: r for r in results["latency"]}
    assert sorted(latency) == sorted(MODES)
    for mode, r in latency.items():
        assert r["server"] == "fakekey"
        assert r["jobs"] == (2 if mode == "seed" else 5)
        assert 0 < r["p50_ms"] <= r["p99_ms"], r
    # the seed's rule rings nothing for a flat enqueue: a job enqueued while the consumer
    # parks is a lost wake (one enqueued during its beat is not); ring all loses none
    assert 0 <= latency["seed"]["lost_wakes"] <= 2 and latency["ring-all"]["lost_wakes"] == 0

    throughput = [(r["mode"], r["server"], r["consumers"], r["batch"], r["jobs"]) for r in results["throughput"]]
    assert sorted(throughput) == sorted((m, "fakekey", c, b, 30) for m in MODES for c in (1, 2) for b in (1, 10))
    for r in results["throughput"]:
        assert r["jobs_per_s"] > 0 and r["enqueues_per_s"] > 0, r
    assert results["targets"] and all(isinstance(t["met"], bool) for t in results["targets"])

    printed = capsys.readouterr().out
    assert "wake latency" in printed and "throughput" in printed and "targets" in printed
