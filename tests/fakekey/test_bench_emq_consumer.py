"""bench/emq_consumer.py: its quickest run against fakekey, so the consumer benchmark keeps
working as the consumer, the scripts and the server change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_scripts import load_bench

bench = load_bench("emq_consumer")


def test_quickest_run_on_fakekey(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # fakekey as a subprocess (the bench's default): the consumers are forked processes,
    # and a fork is safest from a process that runs no server thread
    out = tmp_path / "consumer.json"
    argv = ["--quick", "--only", "fakekey", "--jobs", "40", "--wakes", "5", "-c", "1,2", "--json", str(out)]
    assert bench.main(argv) == 0
    results = json.loads(out.read_text())
    assert [(r["server"], r["consumers"], r["jobs"]) for r in results["throughput"]] == [
        ("fakekey", 1, 40), ("fakekey", 2, 40)]
    assert all(r["jobs_per_s"] > 0 for r in results["throughput"])
    (wake,) = results["wake_latency"]
    assert wake["server"] == "fakekey" and wake["wakes"] == 5 and 0 < wake["p50_ms"] <= wake["p99_ms"]
    printed = capsys.readouterr().out
    assert "consumer throughput" in printed and "wake latency" in printed
