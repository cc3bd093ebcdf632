"""bench/run.py: parsing redis-benchmark's CSV, ratios and tables, the workload table, the
prefill helper, and one very short real run when redis-benchmark is installed."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fakekey import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary

RUN_PY = Path(__file__).resolve().parents[2] / "bench" / "run.py"


def _load_harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", RUN_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_run"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


bench = _load_harness()

CANNED = (
    "WARNING: Could not fetch server CONFIG\n"
    '"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n'
    'PING_INLINE: rps=0.0 (overall: nan) avg_msec=nan (overall: nan)\r"PING_INLINE","37950.66","0.781","0.176","0.607","1.463","3.855","16.911"\n'
    '"MSET (10 keys)","52910.05","0.713","0.168","0.647","1.223","1.887","4.935"\n'
    '"eval \'return {1,2}\' 0","1000.50","1","0.1","0.9","2","3","4"\n'
    '"BROKEN","n/a","1","1","1","1","1","1"\n'
)


def test_parse_csv_reads_every_row_and_column() -> None:
    rows = bench.parse_csv(CANNED)
    assert list(rows) == ["PING_INLINE", "MSET (10 keys)", "eval 'return {1,2}' 0"]
    ping = rows["PING_INLINE"]
    assert (ping.rps, ping.avg_ms, ping.min_ms, ping.p50_ms) == (37950.66, 0.781, 0.176, 0.607)
    assert (ping.p95_ms, ping.p99_ms, ping.max_ms) == (1.463, 3.855, 16.911)
    assert rows["MSET (10 keys)"].p50_ms == 0.647


def test_parse_csv_headerless_old_format_and_reordered_columns() -> None:
    old = bench.parse_csv('"PING_INLINE","41000.00"\n"SET","39000.50"\n')
    assert {name: m.rps for name, m in old.items()} == {"PING_INLINE": 41000.0, "SET": 39000.5}
    assert old["SET"].p50_ms is None
    reordered = bench.parse_csv('"test","p50_latency_ms","rps"\n"GET","0.5","1234"\n')
    assert (reordered["GET"].rps, reordered["GET"].p50_ms) == (1234.0, 0.5)


def test_parse_csv_of_a_failed_run_is_empty() -> None:
    assert bench.parse_csv('"test","rps","avg_latency_ms"\n') == {}
    assert bench.parse_csv("") == {}


def test_ratio() -> None:
    fast, slow = bench.Measurement(rps=200.0), bench.Measurement(rps=50.0)
    assert bench.ratio(slow, fast) == 0.25
    assert bench.ratio(None, fast) is None
    assert bench.ratio(slow, bench.Measurement(rps=0.0)) is None


def test_table_rows_ratio_latency_and_notes() -> None:
    R, M = bench.Result, bench.Measurement
    results = [
        R("SET", "fakekey", 1, 1000, 50, M(rps=25000.0, p50_ms=1.5, p99_ms=4.0)),
        R("SET", "valkey", 1, 1000, 50, M(rps=50000.0, p50_ms=0.5, p99_ms=1.0)),
        R("INCR", "fakekey", 1, 1000, 50, note="fakekey: ERR unknown command 'INCR'"),
        R("INCR", "valkey", 1, 1000, 50, M(rps=40000.0, p50_ms=0.6)),
        R("SET", "fakekey", 16, 5000, 50, M(rps=1.0)),
    ]
    rows, notes = bench.table_rows(results, 1)
    assert rows == [
        ("SET", "25,000", "50,000", "0.50", "1.500", "0.500", "4.000", "1.000"),
        ("INCR", "-", "40,000", "-", "-", "0.600", "-", "-"),
    ]
    assert notes == ["INCR: fakekey: ERR unknown command 'INCR'"]
    table = bench.format_table(rows).splitlines()
    assert table[0].split() == [w for h in bench.TABLE_HEADER for w in h.split()]
    assert len({len(line) for line in table}) == 1  # aligned columns


def test_benchmark_error_prefers_the_server_error_and_trims_it() -> None:
    stderr = (
        "WARNING: Could not fetch server CONFIG\n"
        "Error from server: ERR unknown command 'MSET', with args beginning with: 'key:1' 'VXK'\n"
    )
    assert bench._benchmark_error(stderr) == "ERR unknown command 'MSET'"
    assert bench._benchmark_error("WARNING: x\nCould not connect\n") == "Could not connect"
    assert len(bench.short_error("E" * 500)) == 120


def test_argv_of_builtin_and_custom_workloads() -> None:
    endpoint = bench.Endpoint("valkey", "127.0.0.1", 7000)
    settings = bench.RunSettings(requests=10, clients=5, pipeline=16, timeout=1)
    builtin = bench.BenchmarkWorkload("SET", ("set",), test="set", keyspace=1000).argv(endpoint, settings)
    assert builtin == [
        "redis-benchmark", "-h", "127.0.0.1", "-p", "7000", "-c", "5", "-n", "10", "-P", "16",
        "--csv", "-r", "1000", "-t", "set",
    ]
    custom = bench.BenchmarkWorkload("ZADD", ("zadd",), command=("ZADD", "z", "__rand_int__", "m"))
    # the command line follows the options directly: redis-benchmark 7 rejects "--"
    assert custom.argv(endpoint, settings)[-6:] == ["-r", "100000", "ZADD", "z", "__rand_int__", "m"]


def test_workload_table_and_selection() -> None:
    names = [w.name for w in bench.WORKLOADS]
    assert len(names) == len(set(names))
    for expected in ("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET", "LPUSH", "LPOP"):
        assert expected in names
    assert [w.name for w in bench.select_workloads("set, ping_inline")] == ["SET", "PING_INLINE"]
    with pytest.raises(SystemExit):
        bench.select_workloads("set,nosuch")


def test_python_workloads_run_once_unpipelined() -> None:
    plan = bench.Plan(bench.select_workloads("set,push_wake"), [1, 16], 100, 500, 50, 1)
    runs = [(w.name, s.pipeline, s.requests) for w, s in bench.workload_runs(plan)]
    assert runs == [("SET", 1, 100), ("PUSH_WAKE", 1, 100), ("SET", 16, 500)]


def test_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [bench.percentile(values, q) for q in (0.5, 0.99, 1.0)] == [50.0, 99.0, 100.0]
    m = bench.measurement_from_latencies([0.001, 0.003, 0.002], elapsed_s=0.5)
    assert (m.rps, m.min_ms, m.p50_ms, m.max_ms) == (6.0, 1.0, 2.0, 3.0)


@pytest.fixture(scope="module")
def fakekey_endpoint() -> Iterator[Any]:
    with Server() as srv:
        yield bench.Endpoint("fakekey", srv.host, srv.port)


def test_prefill_pipelines_commands_and_stops_at_an_error(fakekey_endpoint: Any) -> None:
    assert list(bench.variadic(("RPUSH", "l"), range(5), per_command=2)) == [
        ["RPUSH", "l", 0, 1], ["RPUSH", "l", 2, 3], ["RPUSH", "l", 4],
    ]
    sent = bench.prefill(fakekey_endpoint, [("SET", f"bench:p{i}", str(i)) for i in range(450)], batch=100)
    assert sent == 450
    with RawClient(fakekey_endpoint.host, fakekey_endpoint.port) as client:
        assert client.call("GET", "bench:p449") == ("$", b"449")
    with pytest.raises(bench.WorkloadFailed, match="prefill NOSUCHCMD: ERR unknown command"):
        bench.prefill(fakekey_endpoint, [("SET", "bench:a", "1"), ("NOSUCHCMD", "x")])


@pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server binary")
def test_missing_commands_reads_command_info() -> None:
    target = ValkeyTarget(find_valkey_binary())
    target.start()
    try:
        endpoint = bench.Endpoint("valkey", target.host, target.port)
        assert bench.missing_commands(endpoint, ("ping", "nosuchcmd", "lpush")) == ["nosuchcmd"]
        assert bench.guard_note(bench.BenchmarkWorkload("X", ("get", "nosuchcmd")), [endpoint]) == (
            "valkey lacks NOSUCHCMD"
        )
    finally:
        target.stop()


@pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="redis-benchmark not installed")
def test_short_real_run(fakekey_endpoint: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://{fakekey_endpoint.host}:{fakekey_endpoint.port}"
    out = tmp_path / "r.json"
    argv = ["--only", "fakekey", "--fakekey-url", url, "--tests", "ping_mbulk", "-n", "2000",
            "-c", "10", "--pipeline", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    results = json.loads(out.read_text())["results"]
    assert [(r["workload"], r["server"], r["pipeline"]) for r in results] == [("PING_MBULK", "fakekey", 1)]
    assert results[0]["measurement"]["rps"] > 0 and results[0]["note"] == ""
    assert "PING_MBULK" in capsys.readouterr().out
