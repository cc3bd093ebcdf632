"""bench/stalls.py: its RESP reader, the table's ratios, and a few scenarios at tiny sizes
against fakekey (one on valkey when its binary is there), checking the shape of what it
prints and writes, never the timings."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from bench_scripts import load_bench

from fakekey.testing.targets import find_valkey_binary

bench = load_bench("stalls")

ASKED_FOR = [
    "expiry", "randomkey", "field-ttl-cron", "flushall", "flushall-async", "flushdb", "del-big",
    "unlink-big", "swapdb", "keys", "scan-start", "eviction", "tracking", "tracking-max-keys",
    "client-list", "pubsub-channels", "blocked-many-keys", "save", "bgsave", "bgrewriteaof",
    "load-at-start", "setrange-512mb", "sort-1m", "sadd-1m-args", "zadd-1m-args", "hset-1m-args",
    "pipeline-ping-flood", "pipeline-set-flood", "multi-queue-flood", "exec-long-queue",
]


def test_every_scenario_is_registered_and_listed(capsys: pytest.CaptureFixture[str]) -> None:
    assert set(ASKED_FOR) <= set(bench.SCENARIOS)
    assert bench.main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == list(bench.SCENARIOS)


def test_reader_builds_or_counts_replies() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        conn = bench.Conn.__new__(bench.Conn)
        conn.sock, conn.buf, conn.pos = ours, bytearray(), 0
        theirs.sendall(b"*3\r\n$1\r\na\r\n:5\r\n*1\r\n+OK\r\n-ERR boom\r\n*2\r\n$2\r\nxy\r\n$-1\r\n$3\r\nabc\r\n")
        assert conn.read() == [b"a", 5, [b"OK"]]
        error = conn.read()
        assert isinstance(error, bench.ServerError) and str(error) == "ERR boom"
        assert conn.read(keep=False) == 2
        assert conn.answer() == b"abc"


def outcome(server: str, size: int | None, value: float, metric: str = "gap", error: str = "") -> Any:
    return bench.Outcome("s", server, size, 1, metric=metric, value_ms=None if error else value, error=error)


def test_ratios_leave_out_noise_and_growth_sits_on_the_biggest_size() -> None:
    outcomes = [outcome("fakekey", 10, 6.0), outcome("valkey", 10, 5.0),
                outcome("fakekey", 100, 60.0), outcome("valkey", 100, 6.0)]
    small, big = bench.table_rows(outcomes, [10, 100], 0.005)
    assert (small["ratio"], small["growth"]) == (None, None)  # both under two PING intervals
    assert (big["ratio"], big["growth"]) == (10.0, 10.0)
    startup = bench.table_rows([outcome("fakekey", 10, 6.0, "startup"), outcome("valkey", 10, 3.0, "startup")],
                               [10], 0.005)
    assert startup[0]["ratio"] == 2.0  # startup times always compare


def test_a_failed_run_is_a_cell_with_its_error() -> None:
    rows = bench.table_rows([outcome("fakekey", 10, 0, error="ERR unknown command 'X'"),
                             outcome("valkey", 10, 50.0)], [10], 0.005)
    text = bench.format_table(rows)
    assert text.splitlines()[1].split()[:4] == ["s", "10", "error", "50.0"] and rows[0]["ratio"] is None
    assert bench.notes(rows) == ["s 10 fakekey: ERR unknown command 'X'"]


def measure_once(act: Any) -> Any:
    """One run of a scenario made for the test (`act(run)`), on fakekey, size 10."""
    bench.scenario("made-here", "a scenario of this test")(act)
    try:
        return bench.measure(bench.SCENARIOS["made-here"], "fakekey", 10, 1,
                             bench.parse_args(["--servers", "fakekey"]))
    finally:
        del bench.SCENARIOS["made-here"]


def test_an_unsupported_command_becomes_an_error_row() -> None:
    def nosuch(run: Any) -> None:
        with run.watched():
            run.call("NOSUCHCMD")

    result = measure_once(nosuch)
    assert result.error.startswith("ERR unknown command") and result.value_ms is None


def test_a_connection_the_server_closes_is_an_error_row_with_the_servers_log() -> None:
    def selfkill(run: Any) -> None:
        with run.watched():
            run.call("CLIENT", "KILL", "SKIPME", "no")
            run.call("PING")

    result = measure_once(selfkill)
    # closed or reset, as the kernel has it: either way the row says what the server logged
    assert result.error.startswith("Connection") and "(server log: fakekey ready port=" in result.error
    assert result.value_ms is None


QUICK = ["keys", "expiry", "load-at-start", "multi-queue-flood"]


def test_short_run_prints_the_table_and_writes_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "stalls.json"
    argv = ["--sizes", "200,400", "--runs", "1", "--servers", "fakekey", "--scenarios", ",".join(QUICK),
            "--json", str(out)]
    assert bench.main(argv) == 0
    printed = capsys.readouterr().out
    assert "scenario" in printed and "fk growth" in printed and "load-at-start (startup)" in printed
    data = json.loads(out.read_text())
    runs = data["runs"]
    assert [(r["scenario"], r["size"]) for r in runs] == [(s, n) for s in QUICK for n in (200, 400)]
    assert all(r["error"] == "" and r["value_ms"] > 0 and r["peak_rss_mb"] > 0 for r in runs), runs
    assert {r["metric"] for r in runs} == {"gap", "startup"}
    assert all(r["pings"] >= 1 and r["action_ms"] >= 0 for r in runs if r["metric"] == "gap")
    assert [(row["scenario"], row["size"]) for row in data["summary"]] == [(s, n) for s in QUICK for n in (200, 400)]
    assert all(row["valkey"] is None and row["ratio"] is None for row in data["summary"])


def test_a_load_that_outlasts_its_deadline_is_loaded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # the first try's deadline is already past when the load ends, as on a machine whose
    # other work stalled the load: its keys go, and the second try measures
    monkeypatch.setattr(bench, "LOAD_SLACK_S", (-10.0, 0.2))
    args = bench.parse_args(["--servers", "fakekey"])
    result = bench.measure(bench.SCENARIOS["expiry"], "fakekey", 200, 1, args)
    assert result.error == "" and result.value_ms is not None and result.value_ms > 0
    monkeypatch.setattr(bench, "LOAD_SLACK_S", (-10.0,))
    result = bench.measure(bench.SCENARIOS["expiry"], "fakekey", 200, 1, args)
    assert result.error == "the load outlasted its TTL deadline on every try" and result.value_ms is None


@pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server binary")
def test_valkey_runs_the_same_scenario(tmp_path: Path) -> None:
    out = tmp_path / "stalls.json"
    assert bench.main(["--sizes", "200", "--servers", "valkey", "--scenarios", "keys", "--json", str(out)]) == 0
    [run] = json.loads(out.read_text())["runs"]
    assert (run["server"], run["error"]) == ("valkey", "") and run["value_ms"] > 0
