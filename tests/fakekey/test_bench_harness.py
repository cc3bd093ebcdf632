"""bench/run.py: parsing redis-benchmark's CSV, ratios and tables (main, extras, size
scaling), the workload table and its selection, the setup steps and the Python measurements
on small counts (on fakekey, and on valkey when its binary is there), and one very short
real run when redis-benchmark is installed."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import load_bench

from fakekey import Server
from fakekey.testing.raw import RawClient, encode_command
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary

bench = load_bench("run")

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
        R("SET", "fakekey", 1, 1000, 50, M(rps=25000.0, p50_ms=1.5, p99_ms=4.0, cpu_us=20.0)),
        R("SET", "valkey", 1, 1000, 50, M(rps=50000.0, p50_ms=0.5, p99_ms=1.0, cpu_us=8.0)),
        R("INCR", "fakekey", 1, 1000, 50, note="fakekey: ERR unknown command 'INCR'"),
        R("INCR", "valkey", 1, 1000, 50, M(rps=40000.0, p50_ms=0.6)),
        R("SET", "fakekey", 16, 5000, 50, M(rps=1.0)),
    ]
    rows, notes = bench.table_rows(results, 1)
    assert rows == [
        ("SET", "25,000", "50,000", "0.50", "1.500", "0.500", "4.000", "1.000", "20.00", "8.00", "0.40"),
        ("INCR", "-", "40,000", "-", "-", "0.600", "-", "-", "-", "-", "-"),
    ]
    assert notes == ["INCR: fakekey: ERR unknown command 'INCR'"]
    table = bench.format_table(rows).splitlines()
    assert table[0].split() == [w for h in bench.TABLE_HEADER for w in h.split()]
    assert len({len(line) for line in table}) == 1  # aligned columns


def test_history_records_cpu_and_shows_the_change(tmp_path: Path) -> None:
    R, M = bench.Result, bench.Measurement
    first = [R("SET", "fakekey", 16, 1000, 50, M(rps=1.0, cpu_us=4.0)),
             R("SET", "valkey", 16, 1000, 50, M(rps=2.0, cpu_us=1.5)),
             R("GET", "fakekey", 16, 1000, 50, M(rps=1.0))]  # no CPU figure: not recorded
    path = tmp_path / "history.csv"
    rows = bench.history_rows(first, "t1", "abc1234")
    assert [(r["workload"], r["fk_cpu_us"], r["vk_cpu_us"]) for r in rows] == [("SET", "4.000", "1.500")]
    assert bench.changes_since(bench.read_history(path), rows) == []
    bench.append_history(path, rows)
    later = bench.history_rows([R("SET", "fakekey", 16, 1000, 50, M(rps=1.0, cpu_us=5.0))], "t2", "def5678")
    [line] = bench.changes_since(bench.read_history(path), later)
    assert "4.00 ->     5.00  x1.25 (since abc1234)  SLOWER" in line
    bench.append_history(path, later)
    assert [r["commit"] for r in bench.read_history(path)] == ["abc1234", "def5678"]


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
    for expected in ("PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "MSET", "LPUSH", "LPOP", "BLPOP",
                     "PUSH_WAKE", "HSET", "HGETALL", "XADD", "XREADGROUP_ACK", "PUBSUB_FANOUT",
                     "EVALSHA_1CALL", "EVALSHA_10CALLS"):
        assert expected in names
    for op in ("ZADD", "ZRANGE", "ZRANGEBYSCORE", "ZPOPMIN"):
        assert {f"{op}_10K", f"{op}_1M"} <= set(names)
    assert all(w.group for w in bench.WORKLOADS)
    assert [w.name for w in bench.select_workloads("set, ping_inline")] == ["SET", "PING_INLINE"]
    with pytest.raises(SystemExit):
        bench.select_workloads("set,nosuch")


def test_every_command_line_draws_from_a_keyspace_only_when_it_uses_rand_int() -> None:
    for w in bench.WORKLOADS:
        if isinstance(w, bench.BenchmarkWorkload) and w.command:
            uses_rand = any("__rand_int__" in arg for arg in w.command)
            assert bool(w.keyspace) == uses_rand, w.name


def test_selection_by_group_and_quick() -> None:
    zset = [w.name for w in bench.select_workloads("zset")]
    assert zset == ["ZADD_10K", "ZRANGE_10K", "ZRANGEBYSCORE_10K", "ZPOPMIN_10K",
                    "ZADD_1M", "ZRANGE_1M", "ZRANGEBYSCORE_1M", "ZPOPMIN_1M"]
    assert [w.name for w in bench.select_workloads("zset", quick=True)] == zset[:4]
    # named explicitly, a big one runs even with --quick; a name and its group are not doubled
    assert [w.name for w in bench.select_workloads("zadd_1m,zset", quick=True)] == ["ZADD_1M", *zset[:4]]
    quick = bench.select_workloads(None, quick=True)
    assert "ZADD_1M" not in [w.name for w in quick] and len(quick) == len(bench.WORKLOADS) - 4
    assert {w.group for w in quick} == {"basic", "list", "hash", "zset", "stream", "pubsub", "script"}


def test_quick_and_explicit_options() -> None:
    plan = bench.plan_from_args(bench.parse_args(["--quick"]))
    assert (plan.requests, plan.pipelines, plan.pipelined_requests) == (2000, [1], 10000)
    plan = bench.plan_from_args(bench.parse_args(["--quick", "-n", "300", "-P", "1,4", "-t", "hash"]))
    assert (plan.requests, plan.pipelines, [w.name for w in plan.workloads]) == (300, [1, 4], ["HSET", "HGETALL"])
    plan = bench.plan_from_args(bench.parse_args([]))
    assert (plan.requests, plan.pipelines, len(plan.workloads)) == (100_000, [1, 16], len(bench.WORKLOADS))


def test_python_workloads_run_once_unpipelined() -> None:
    plan = bench.Plan(bench.select_workloads("set,push_wake"), [1, 16], 100, 500, 50, 1)
    runs = [(w.name, s.pipeline, s.requests) for w, s in bench.workload_runs(plan)]
    assert runs == [("SET", 1, 100), ("PUSH_WAKE", 1, 100), ("SET", 16, 500)]


def test_effective_settings_cap_pops_and_name_python_connections() -> None:
    settings = bench.RunSettings(requests=100_000, clients=50, pipeline=16, timeout=1)
    # never below half the smallest set, and as many pops at every size
    for zpopmin in bench.select_workloads("zpopmin_10k,zpopmin_1m"):
        assert zpopmin.effective(settings) == bench.RunSettings(5000, 50, 16, 1)
    fanout = bench.select_workloads("pubsub_fanout")[0]
    assert fanout.effective(settings) == bench.RunSettings(5_000, bench.FANOUT_SUBSCRIBERS + 1, 1, 1)
    assert bench.select_workloads("set")[0].effective(settings) == settings


def test_run_one_times_the_setup_and_turns_failures_into_notes() -> None:
    calls: list[str] = []

    class Setup:
        def prepare(self, settings: Any) -> None:
            calls.append("prepare")

        def __call__(self, endpoint: Any, settings: Any) -> None:
            calls.append(f"setup {settings.requests}")

    def measure(endpoint: Any, settings: Any) -> Any:
        calls.append("measure")
        return bench.Measurement(rps=float(settings.requests))

    endpoint = bench.Endpoint("fakekey", "127.0.0.1", 1)
    workload = bench.PythonWorkload("W", (), measure=measure, setup=Setup(), max_requests=7, clients=3)
    result = bench.run_one(workload, endpoint, bench.RunSettings(100, 50, 16, 1))
    assert calls == ["prepare", "setup 7", "measure"]
    assert (result.requests, result.clients, result.pipeline, result.measurement.rps) == (7, 3, 1, 7.0)
    assert result.setup_s is not None and result.setup_s >= 0 and result.note == ""

    def failing(endpoint: Any, settings: Any) -> None:
        raise bench.WorkloadFailed("prefill ZADD: ERR boom")

    result = bench.run_one(bench.PythonWorkload("W", (), measure=measure, setup=failing), endpoint,
                           bench.RunSettings(100, 50, 1, 1))
    assert (result.measurement, result.note) == (None, "fakekey: prefill ZADD: ERR boom")


def test_table_notes_rows_that_ran_another_count() -> None:
    R, M = bench.Result, bench.Measurement
    results = [R("ZPOPMIN_10K", "fakekey", 1, 5000, 50, M(rps=1.0)), R("ZPOPMIN_10K", "valkey", 1, 5000, 50, M(rps=2.0)),
               R("SET", "fakekey", 1, 20000, 50, M(rps=1.0))]
    assert bench.table_rows(results, 1, 20000)[1] == ["ZPOPMIN_10K: 5,000 requests over 50 connections"]


def test_extra_lines() -> None:
    R, M = bench.Result, bench.Measurement
    results = [
        R("PUBSUB_FANOUT", "fakekey", 1, 100, 51, M(rps=25000.0, extra={"publish/s": 500.0})),
        R("PUBSUB_FANOUT", "valkey", 1, 100, 51, M(rps=1e6, extra={"publish/s": 20000.0})),
        R("XREADGROUP_ACK", "fakekey", 1, 100, 10, M(rps=5.0, extra={"read+ack cycles/s": 1234.4})),
        R("SET", "valkey", 1, 100, 50, M(rps=5.0)),
    ]
    assert bench.extra_lines(results, 1) == [
        "PUBSUB_FANOUT publish/s: fakekey 500, valkey 20,000  fk/vk 0.03",
        "XREADGROUP_ACK read+ack cycles/s: fakekey 1,234, valkey -",
    ]


def test_scaling_table_sets_sizes_side_by_side() -> None:
    R, M = bench.Result, bench.Measurement
    workloads = bench.select_workloads("zadd_10k,zadd_1m,zpopmin_10k,zpopmin_1m,zrange_10k,set")
    results = [
        R("ZADD_10K", "fakekey", 1, 10, 50, M(rps=10000.0), setup_s=0.1),
        R("ZADD_10K", "valkey", 1, 10, 50, M(rps=40000.0), setup_s=0.0),
        R("ZADD_1M", "fakekey", 1, 10, 50, M(rps=9000.0), setup_s=7.25),
        R("ZADD_1M", "valkey", 1, 10, 50, M(rps=20000.0), setup_s=2.0),
        R("ZPOPMIN_10K", "fakekey", 1, 10, 50, M(rps=12000.0)),
        R("ZPOPMIN_10K", "valkey", 1, 10, 50, M(rps=30000.0)),
        R("ZPOPMIN_1M", "fakekey", 1, 10, 50, note="fakekey: ERR boom", setup_s=6.5),
        R("ZPOPMIN_1M", "valkey", 1, 10, 50, M(rps=30000.0), setup_s=2.5),
        R("ZRANGE_10K", "fakekey", 1, 10, 50, M(rps=1.0)),  # no 1M counterpart: no row
        R("ZADD_10K", "fakekey", 16, 10, 50, M(rps=1.0)),
    ]
    lines = bench.scaling_table(results, workloads, 1).splitlines()
    assert lines[0] == "sorted sets, 10K vs 1M members, -P 1"
    assert lines[1].split() == ["operation", "fk", "10K", "rps", "fk", "1M", "rps", "fk", "1M/10K",
                                "vk", "10K", "rps", "vk", "1M", "rps", "vk", "1M/10K"]
    assert lines[3].split() == ["ZADD", "10,000", "9,000", "0.90", "40,000", "20,000", "0.50"]
    assert lines[4].split() == ["ZPOPMIN", "12,000", "-", "-", "30,000", "30,000", "1.00"]
    assert lines[5] == "  prefill of a 1M-member sorted set: fakekey 7.2 s, valkey 2.5 s"
    assert len(lines) == 6
    assert bench.scaling_table(results, bench.select_workloads("zadd_10k,set"), 1) == ""


def test_size_label_and_zset_prefill_encoding() -> None:
    assert [bench.size_label(n) for n in (10_000, 1_000_000, 1500, 250_000)] == ["10K", "1M", "1500", "250K"]
    pairs = (x for i in range(2500) for x in (i, f"m:{i:012d}"))
    expected = [encode_command(*c) for c in bench.variadic(("ZADD", "k"), pairs, per_command=2000)]
    assert list(bench.zadd_commands("k", bench.zset_members(2500))) == expected


def test_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]
    assert [bench.percentile(values, q) for q in (0.5, 0.99, 1.0)] == [50.0, 99.0, 100.0]
    m = bench.measurement_from_latencies([0.001, 0.003, 0.002], elapsed_s=0.5)
    assert (m.rps, m.min_ms, m.p50_ms, m.max_ms) == (6.0, 1.0, 2.0, 3.0)


@pytest.fixture(scope="module")
def fakekey_endpoint() -> Iterator[Any]:
    with Server() as srv:
        yield bench.Endpoint("fakekey", srv.host, srv.port)


@pytest.fixture(scope="module")
def valkey_endpoint() -> Iterator[Any]:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    target = ValkeyTarget(binary)
    target.start()
    try:
        yield bench.Endpoint("valkey", target.host, target.port)
    finally:
        target.stop()


@pytest.fixture(params=["fakekey", "valkey"])
def endpoint(request: pytest.FixtureRequest) -> Any:
    """The same setup or measurement code on each server."""
    return request.getfixturevalue(f"{request.param}_endpoint")


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
    with pytest.raises(bench.WorkloadFailed, match="prefill NOSUCHCMD: ERR unknown command"):
        bench.prefill(fakekey_endpoint, [encode_command("NOSUCHCMD", "x")])  # pre-encoded


def test_missing_commands_reads_command_info(valkey_endpoint: Any) -> None:
    assert bench.missing_commands(valkey_endpoint, ("ping", "nosuchcmd", "lpush")) == ["nosuchcmd"]
    assert bench.guard_note(bench.BenchmarkWorkload("X", ("get", "nosuchcmd")), [valkey_endpoint]) == (
        "valkey lacks NOSUCHCMD"
    )


SMALL = bench.RunSettings(requests=300, clients=5, pipeline=4, timeout=30)


def test_fill_list_hash_and_stream(endpoint: Any) -> None:
    bench.FillList("bench:t:list")(endpoint, SMALL)
    bench.FillHash("bench:t:hash", 16)(endpoint, SMALL)
    bench.FillStream("bench:t:stream", "g")(endpoint, SMALL)
    assert bench.call(endpoint, "LLEN", "bench:t:list") == 300 + bench.in_flight(SMALL)
    assert bench.call(endpoint, "HLEN", "bench:t:hash") == 16
    assert bench.call(endpoint, "XLEN", "bench:t:stream") == 300
    assert bench.call(endpoint, "XINFO", "GROUPS", "bench:t:stream")[0][:2] == [b"name", b"g"]
    bench.DeleteKeys(("bench:t:list", "bench:t:hash"))(endpoint, SMALL)
    assert bench.call(endpoint, "EXISTS", "bench:t:list", "bench:t:hash") == 0


def test_fill_zset_and_its_reuse(endpoint: Any) -> None:
    key = "bench:t:zset"
    bench.FillZset(key, 2500)(endpoint, SMALL)
    assert bench.call(endpoint, "ZRANGE", key, "0", "1", "WITHSCORES") == [
        b"m:000000000000", b"0", b"m:000000000001", b"1"]
    assert bench.call(endpoint, "ZCARD", key) == 2500
    bench.call(endpoint, "ZADD", key, "-1", "m:000000000007")
    bench.FillZset(key, 2500, reuse=True)(endpoint, SMALL)  # same size: kept as it is
    assert bench.call(endpoint, "ZSCORE", key, "m:000000000007") == b"-1"
    bench.call(endpoint, "ZREM", key, "m:000000000009")
    bench.FillZset(key, 2500, reuse=True)(endpoint, SMALL)  # another size: built again
    assert bench.call(endpoint, "ZSCORE", key, "m:000000000007") == b"7"
    assert bench.call(endpoint, "ZCARD", key) == 2500


def test_push_wake_measures_each_cycle(endpoint: Any) -> None:
    m = bench.push_wake_latency(endpoint, bench.RunSettings(30, 2, 1, 30))
    assert m.rps > 0 and 0 < m.min_ms <= m.p50_ms <= m.p99_ms <= m.max_ms


def test_stream_group_is_drained_and_acknowledged(endpoint: Any) -> None:
    settings = bench.RunSettings(requests=305, clients=bench.STREAM_CONSUMERS, pipeline=1, timeout=30)
    bench.FillStream(bench.STREAM_KEY, bench.STREAM_GROUP)(endpoint, settings)
    m = bench.drain_stream_group(endpoint, settings)
    assert m.rps > 0 and m.p50_ms is not None and m.extra["read+ack cycles/s"] > 0
    assert bench.call(endpoint, "XPENDING", bench.STREAM_KEY, bench.STREAM_GROUP)[0] == 0
    with pytest.raises(bench.WorkloadFailed, match="acknowledged 0 of 305 entries"):
        bench.drain_stream_group(endpoint, settings)  # nothing new left for the group


def test_pubsub_fanout_delivers_every_message(endpoint: Any) -> None:
    m = bench.pubsub_fanout(endpoint, bench.RunSettings(requests=120, clients=51, pipeline=1, timeout=30))
    # pubsub_fanout raises unless every subscriber got exactly 120 intact messages
    assert m.rps > 0 and m.extra["publish/s"] > 0 and m.p50_ms is None


def test_fanout_reader_checks_every_byte() -> None:
    message = bench.fanout_message("ch", b"hi")
    assert message == b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
    reader = bench.FanoutReader([None, None], message, per_socket=2)  # type: ignore[list-item]
    assert reader._take(0, message[:5]) is False and reader._take(0, message[5:] + message) is True
    assert reader.slowest() == 0 and reader.error == ""
    assert reader._take(1, message[:3] + b"X") is True
    assert reader.error.startswith("subscriber 1 got unexpected bytes")
    assert bench.FanoutReader([None], message, 1)._take(0, b"") is True  # type: ignore[list-item]


def test_scripts_load_under_their_sha_and_run(valkey_endpoint: Any) -> None:
    for name, expected in (("EVALSHA_1CALL", [1, 2]), ("EVALSHA_10CALLS", [b"1", b"2"])):
        workload = bench.select_workloads(name)[0]
        workload.setup(valkey_endpoint, SMALL)
        assert workload.command[1] == bench.script_sha(workload.setup.script)
        replies = [bench.call(valkey_endpoint, *workload.command) for _ in range(2)]
        assert replies == expected
    assert bench.call(valkey_endpoint, "LLEN", bench.SCRIPT_KEYS[3]) == 2


@pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="redis-benchmark not installed")
def test_short_real_run(fakekey_endpoint: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"redis://{fakekey_endpoint.host}:{fakekey_endpoint.port}"
    out = tmp_path / "r.json"
    argv = ["--only", "fakekey", "--fakekey-url", url, "--tests", "ping_mbulk,zpopmin_10k", "-n", "2000",
            "-c", "10", "--pipeline", "1", "--json", str(out)]
    assert bench.main(argv) == 0
    results = json.loads(out.read_text())["results"]
    assert [(r["workload"], r["server"], r["pipeline"]) for r in results] == [
        ("PING_MBULK", "fakekey", 1), ("ZPOPMIN_10K", "fakekey", 1)]
    assert all(r["measurement"]["rps"] > 0 and r["note"] == "" for r in results)
    assert all(r["measurement"]["cpu_us"] is None for r in results)  # a server it did not start
    assert results[0]["setup_s"] is None and results[1]["setup_s"] >= 0
    with RawClient(fakekey_endpoint.host, fakekey_endpoint.port) as client:  # 2,000 pops (and a few more)
        assert 7000 <= client.call("ZCARD", "bench:zpop:10K")[1] <= 8000
    assert "ZPOPMIN_10K" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("redis-benchmark") is None, reason="redis-benchmark not installed")
def test_a_server_with_a_known_process_gets_its_cpu_per_request(fakekey_endpoint: Any) -> None:
    local = bench.Endpoint("fakekey", fakekey_endpoint.host, fakekey_endpoint.port, os.getpid())
    [workload] = bench.select_workloads("ping_mbulk")
    result = bench.run_one(workload, local, bench.RunSettings(2000, 10, 1, 60))
    assert result.measurement is not None and result.measurement.cpu_us > 0
