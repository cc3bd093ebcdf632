"""INFO's total_forks counts the background jobs (BGSAVE, BGREWRITEAOF): Valkey forks a
child for each, fakekey runs each between event-loop turns and counts it the same. A
BGREWRITEAOF inside EXEC is scheduled, and started by the cron after it."""

from __future__ import annotations

import time

DEADLINE_S = 10.0


def stat(client, section: str, name: str) -> str:
    info = client.call("INFO", section)[1].decode()
    return dict(line.split(":", 1) for line in info.split("\r\n") if ":" in line)[name]


def wait_idle(client) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while (stat(client, "persistence", "rdb_bgsave_in_progress") != "0"
           or stat(client, "persistence", "aof_rewrite_in_progress") != "0"):
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_background_jobs_count_as_forks(private_target, tmp_path):
    server = private_target("--dir", str(tmp_path))
    with server.raw(2) as client:
        before = int(stat(client, "stats", "total_forks"))
        assert client.call("BGSAVE") == ("+", b"Background saving started")
        wait_idle(client)
        assert int(stat(client, "stats", "total_forks")) == before + 1
        client.call("BGREWRITEAOF")
        wait_idle(client)
        assert int(stat(client, "stats", "total_forks")) == before + 2


def test_bgrewriteaof_in_exec_is_scheduled(private_target, tmp_path):
    server = private_target("--dir", str(tmp_path))
    with server.raw(2) as client:
        before = int(stat(client, "stats", "total_forks"))
        client.call("MULTI")
        client.call("SET", "foo", "bar")
        client.call("BGREWRITEAOF")
        assert client.call("EXEC") == (
            "*", [("+", b"OK"), ("+", b"Background append only file rewriting scheduled")])
        deadline = time.monotonic() + DEADLINE_S
        while int(stat(client, "stats", "total_forks")) == before:  # the cron starts it
            assert time.monotonic() < deadline
            time.sleep(0.02)
        wait_idle(client)
