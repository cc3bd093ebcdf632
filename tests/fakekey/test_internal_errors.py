"""Every failure answers: a handler that raises something other than a ReplyError (a
defect) costs its client an `ERR internal error` reply, not the connection; the server,
its other clients and its data go on as they were."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fakekey import Server


def break_command(monkeypatch: pytest.MonkeyPatch, server: Server, name: bytes) -> None:
    """Make `name` do its work, then raise an unexpected exception."""
    cmd = server.state.lookup(name)
    assert cmd is not None
    handler = cmd.handler

    def broken(client, argv):  # type: ignore[no-untyped-def]
        handler(client, argv)
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(cmd, "handler", broken)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with Server(dir=str(tmp_path), appendonly="yes", save="") as s:
        yield s


def test_a_broken_handler_answers_and_the_connection_goes_on(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    r = redis.Redis.from_url(server.url)
    other = redis.Redis.from_url(server.url)
    watcher = redis.Redis.from_url(server.url)
    watch = watcher.pipeline()
    watch.watch("h")
    assert other.ping() and watcher.ping()
    errors_before = r.info("errorstats")["errorstat_ERR"]["count"]  # the clients' handshakes have some
    break_command(monkeypatch, server, b"hset")
    with caplog.at_level(logging.ERROR, logger="fakekey.net.server"), \
            pytest.raises(redis.ResponseError) as failure:
        r.hset("h", "f", "v")
    message = str(failure.value)
    assert message == "internal error running 'hset': RuntimeError (boom second line)"
    assert sum("internal error running 'hset'" in rec.getMessage() for rec in caplog.records) == 1
    assert r.ping() and other.ping()  # the same connection and another go on
    assert server.state.current_client is None
    assert r.hgetall("h") == {b"f": b"v"}  # what the handler wrote went through the funnel
    watch.multi()
    watch.set("x", "1")
    with pytest.raises(redis.WatchError):  # ... so the watcher saw the change
        watch.execute()
    stats = r.info("commandstats")["cmdstat_hset"]
    assert stats["calls"] == 1 and stats["failed_calls"] == 1
    assert r.info("errorstats")["errorstat_ERR"]["count"] == errors_before + 1
    for c in (r, other, watcher):
        c.close()


def test_a_broken_write_is_logged_as_what_it_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Server(dir=str(tmp_path), appendonly="yes", save="") as first:
        r = redis.Redis.from_url(first.url)
        r.rpush("l", "a")
        break_command(monkeypatch, first, b"rpush")
        with pytest.raises(redis.ResponseError):
            r.rpush("l", "b", "c")
        monkeypatch.undo()
        r.rpush("l", "d")
        assert r.lrange("l", 0, -1) == [b"a", b"b", b"c", b"d"]
        r.close()
    with Server(dir=str(tmp_path), appendonly="yes", save="") as second:  # the log replayed
        r = redis.Redis.from_url(second.url)
        assert r.lrange("l", 0, -1) == [b"a", b"b", b"c", b"d"]
        r.close()


def test_a_broken_command_inside_exec_and_a_script(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    r = redis.Redis.from_url(server.url)
    break_command(monkeypatch, server, b"incr")
    pipe = r.pipeline()
    pipe.set("n", 1).execute_command("INCR", "n").get("n")
    results = pipe.execute(raise_on_error=False)
    assert results[0] is True and isinstance(results[1], redis.ResponseError)
    assert results[2] == b"2"
    with pytest.raises(redis.ResponseError, match="internal error running 'incr'"):
        r.eval("return redis.call('incr', KEYS[1])", 1, "n")
    assert r.eval("return redis.pcall('incr', KEYS[1])['err']", 1, "n").startswith(
        b"ERR internal error running 'incr'")
    assert r.get("n") == b"4" and r.ping()
    r.close()
