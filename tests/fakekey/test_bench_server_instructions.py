"""bench/server_instructions.py: the servers it starts, and its arithmetic (a driven run
under valgrind takes minutes: the tool itself is run by hand, bench/README.md)."""

from __future__ import annotations

from bench_scripts import load_bench

from fakekey.testing.targets import server_flags

bench = load_bench("server_instructions")


def test_both_servers_start_without_persistence_on_loopback():
    valkey = bench.server_argv("valkey", 7000, "/tmp/d", "/bin/valkey-server")
    assert valkey[:3] == ["/bin/valkey-server", "--port", "7000"]
    fakekey = bench.server_argv("fakekey", 7001, "/tmp/d", None)
    assert fakekey[1:5] == ["-m", "fakekey", "--port", "7001"]
    for argv in (valkey, fakekey):
        flags = argv[argv.index("--bind"):]
        assert flags == server_flags("/tmp/d")  # the conformance targets' own
        pairs = dict(zip(flags[::2], flags[1::2], strict=True))
        assert (pairs["--bind"], pairs["--save"], pairs["--appendonly"]) == ("127.0.0.1", "", "no")


def test_per_request_is_the_driven_runs_excess_over_the_idle_one():
    assert bench.per_request(1_000_000, 1_450_000, 100) == 4500.0


def test_the_report_is_read_by_the_in_process_tools_reader():
    report = "==1== Events    : Ir\n==1== Collected : 123456789\n==1==\n==1== I   refs:      123,456,789\n"
    assert bench.collected(report) == 123456789


def test_defaults_cover_the_keyspace_workloads_at_both_depths():
    args = bench.parse_args([])
    assert args.tests.split(",") == ["get", "set", "incr", "lpush"]
    assert args.pipeline == "1,16" and args.keys == 100000
