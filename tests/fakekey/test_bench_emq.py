"""bench/emq.py: its quickest run against an in-process fakekey (both parts, every wire
fakekey serves), so the EMQ benchmark keeps working as the verbs and scripts change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from bench_scripts import load_bench

from fakekey import Server
from fakekey.emq.scripts import SCRIPTS

bench = load_bench("emq")


def test_scripts_are_loaded_by_name() -> None:
    assert bench.script_text("claim") == SCRIPTS["claim"].source
    with pytest.raises(bench.harness.WorkloadFailed, match="no script nosuch.lua"):
        bench.script_text("nosuch")


def test_cpu_seconds_reads_this_process() -> None:
    spent = bench.cpu_seconds(os.getpid())
    assert spent is not None and spent > 0
    assert bench.cpu_seconds(None) is None


def test_quick_options() -> None:
    plan = bench.plan_from_args(bench.parse_args(["--quick"]))
    assert (plan.jobs, plan.repeats, plan.sizes, plan.due) == (300, 1, [1_000, 10_000], 100)
    plan = bench.plan_from_args(bench.parse_args(["--quick", "--jobs", "50", "--part", "sweeps"]))
    assert (plan.jobs, plan.parts) == (50, ["sweeps"])
    plan = bench.plan_from_args(bench.parse_args([]))
    assert (plan.jobs, plan.sizes, plan.due, plan.clients) == (4_000, [10_000, 1_000_000], 1_000, [1, 50])


def test_quickest_run_on_fakekey(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "emq.json"
    with Server() as srv:
        argv = ["--quick", "--only", "fakekey", "--fakekey-url", srv.url, "--json", str(out), "--jobs", "24",
                "-c", "1,3", "-P", "1,4", "--sizes", "50,500", "--due", "10", "--sweep-repeats", "1"]
        assert bench.main(argv) == 0
    results = json.loads(out.read_text())
    cycles = {(r["wire"], r["clients"], r["pipeline"]): r for r in results["cycle"]}
    assert set(cycles) == {(w, c, p) for w in ("verbs", "scripts") for c in (1, 3) for p in (1, 4)}
    for r in cycles.values():
        assert r["note"] == "" and r["runs"][0]["jobs"] == 24  # every job enqueued, leased, completed
        # in-process, other tests' threads end meanwhile: the CPU reading is only >= 0
        assert r["jobs_per_s"] > 0 and r["cpu_us_per_job"] >= 0
    sweeps = {(r["sweep"], r["wire"], r["size"]) for r in results["sweeps"] if r["note"] == "" and r["median_ms"]}
    assert sweeps == {(s, w, n) for s in ("PROMOTE", "STALLED.CHECK") for w in ("verbs", "scripts")
                      for n in (50, 500)}
    printed = capsys.readouterr().out
    assert "EMQ job cycle" in printed and "EMQ sweeps" in printed
