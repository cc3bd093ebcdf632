"""bench/emq_consumer.py: its quickest run against fakekey, so the consumer benchmark keeps
working as the consumer, the scripts and the server change."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH_PY = Path(__file__).resolve().parents[2] / "bench" / "emq_consumer.py"


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_emq_consumer", BENCH_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_emq_consumer"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


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
