"""bench/instructions.py: its in-process driver runs every workload to correct replies
(what callgrind counts is real work), and its reading of callgrind's report."""

from __future__ import annotations

import pytest
from bench_scripts import load_bench

bench = load_bench("instructions")

EXPECTED_LAST = {
    "PING": b"+PONG\r\n",
    "GET": b"$1\r\nv\r\n",
    "SET": b"+OK\r\n",
    "INCR": b":6\r\n",  # 3 batches of 2
    "LPUSH": b":6\r\n",
    "HSET": b":0\r\n",  # the field exists after the first
    "ZADD": b":0\r\n",  # an update of a member's score
    "ZRANGEBYSCORE": b"*10\r\n",
    "ZADD_10K": b":0\r\n:0\r\n",  # a pair of updates
    "EVALSHA_1CALL": b":6\r\n",
    "EVALSHA_10CALLS": b"$1\r\n6\r\n",  # HGET of a field the script increments by 1
    "FCALL_1CALL": b":6\r\n",
    "HGET10": b"$6\r\nvalue7\r\n",
    "HSET10": b":0\r\n",
    "SADD10": b":0\r\n",
    "SISMEMBER10": b":1\r\n",
    "LPUSH_RPOP10": b":11\r\n$5\r\nitem4\r\n",  # the 6th pair pops the 6th item from the right
    "ZADD10": b":0\r\n",
    "LPOP": b"$5\r\nitem5\r\n",  # the 6th pop of a list pushed item0, item1...
    "LPOP_RPUSH10": b"$5\r\nitem5\r\n:10\r\n",
    "LRANGE10": b"*10\r\n" + b"".join(b"$5\r\nitem%d\r\n" % i for i in range(10)),
    "LINDEX10": b"$5\r\nitem6\r\n",
}


@pytest.mark.parametrize("name", list(bench.WORKLOADS))
def test_every_workload_answers_without_errors(name: str) -> None:
    kept = bench.drive(name, pipeline=2, batches=3)
    assert kept.errors == 0
    assert kept.writes >= 3  # the setup's replies, then one write per batch
    last_batch = kept.last
    if name == "XADD":
        assert last_batch.count(b"$") == 2  # two entry ids
    elif name == "ZRANGEBYSCORE":
        assert last_batch.startswith(EXPECTED_LAST[name]) and last_batch.count(b"*10\r\n") == 2
    else:
        assert last_batch.endswith(EXPECTED_LAST[name]) and len(last_batch) <= 2 * len(EXPECTED_LAST[name]) + 2, last_batch


def test_the_instruction_total_is_read_from_callgrinds_report() -> None:
    report = "==4242== Events    : Ir\n==4242== Collected : 123456789\n==4242==\n==4242== I   refs:      123,456,789\n"
    assert bench.collected(report) == 123456789
    with pytest.raises(RuntimeError, match="no instruction count"):
        bench.collected("valgrind: command not found")


def test_unknown_workloads_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["-t", "GET,NOSUCH"]) == 2
    assert "unknown workloads: NOSUCH" in capsys.readouterr().err


def test_without_valgrind_it_says_what_is_missing(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    assert bench.main(["-t", "GET"]) == 2
    assert "valgrind is needed" in capsys.readouterr().err
