"""Two servers in one process share nothing: what one counts, logs, caches, stores or
does with its clock leaves the other as it was. (The command declarations are the only
module-level table, read-only once loaded.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from fakekey import Server


@pytest.fixture
def pair() -> Iterator[tuple[Server, Server, redis.Redis, redis.Redis]]:
    with Server() as a, Server() as b:
        ra, rb = redis.Redis.from_url(a.url), redis.Redis.from_url(b.url)
        yield a, b, ra, rb
        ra.close()
        rb.close()


def commandstat(r: redis.Redis, name: str) -> dict | None:
    return r.info("commandstats").get(f"cmdstat_{name}")


def test_command_counters_are_per_server(pair) -> None:
    a, b, ra, rb = pair
    for _ in range(3):
        ra.set("k", "v")
    with pytest.raises(redis.ResponseError):
        ra.execute_command("LPUSH", "k", "x")  # WRONGTYPE: a failed call
    assert commandstat(ra, "set")["calls"] == 3
    assert commandstat(ra, "lpush")["failed_calls"] == 1
    assert commandstat(rb, "set") is None
    assert commandstat(rb, "lpush") is None
    rb.set("k", "v")
    rb.config_resetstat()
    assert commandstat(rb, "set") is None
    assert commandstat(ra, "set")["calls"] == 3  # B's reset leaves A's counters


def test_field_ttl_expiry_is_per_server(pair) -> None:
    a, b, ra, rb = pair
    a.freeze()
    b.freeze()
    ra.hset("h", mapping={"f": "1", "g": "2"})
    rb.hset("h", mapping={"f": "1", "g": "2"})
    ra.execute_command("HPEXPIRE", "h", 100, "FIELDS", 1, "f")
    assert a.state.dbs[0].field_ttl_keys == {b"h"}
    assert not b.state.dbs[0].field_ttl_keys  # B's active expiry does not look at A's TTLs
    a.advance(200)  # a moved clock expires what is due, fields too, on A alone
    b.advance(200)
    assert ra.hgetall("h") == {b"g": b"2"}
    assert ra.info("stats")["expired_fields"] == 1
    assert rb.hgetall("h") == {b"f": b"1", b"g": b"2"}
    assert rb.info("stats")["expired_fields"] == 0


def test_slow_log_is_per_server(pair) -> None:
    a, b, ra, rb = pair
    ra.config_set("slowlog-log-slower-than", 0)
    ra.set("k", "v")
    assert ra.slowlog_len() > 0
    assert rb.slowlog_len() == 0
    rb.slowlog_reset()
    assert ra.slowlog_len() > 0


def test_script_caches_are_per_server(pair) -> None:
    a, b, ra, rb = pair
    sha = ra.script_load("return 1")
    assert rb.script_exists(sha) == [False]
    rb.script_load("return 1")
    rb.script_flush()
    assert ra.script_exists(sha) == [True]
    assert ra.evalsha(sha, 0) == 1


def test_acl_users_are_per_server(pair) -> None:
    a, b, ra, rb = pair
    ra.acl_setuser("alice", enabled=True, passwords=["+pw"], commands=["+@all"], keys=["*"])
    assert "alice" in ra.acl_users()
    assert rb.acl_users() == ["default"]
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(b.url, username="alice", password="pw").ping()


def test_clocks_are_per_server(pair) -> None:
    a, b, ra, rb = pair
    a.freeze(at=1_000_000)
    assert a.time_ms() == 1_000_000
    assert b.time_ms() > 1_700_000_000_000  # B still runs on the wall clock
    ra.set("k", "v", px=500)
    rb.set("k", "v", px=500)
    a.advance(1000)
    assert ra.get("k") is None
    assert rb.get("k") == b"v"


def test_module_switch_is_per_server() -> None:
    """One server without the EMQ module beside one with it: each answers for itself."""
    with Server(enable_emq_module="no") as plain, Server() as full:
        rp, rf = redis.Redis.from_url(plain.url), redis.Redis.from_url(full.url)
        assert [m[b"name"] for m in rp.execute_command("MODULE", "LIST")] == [b"lua"]
        assert b"trafikey" in [m[b"name"] for m in rf.execute_command("MODULE", "LIST")]
        with pytest.raises(redis.ResponseError, match="unknown command"):
            rp.execute_command("EMQ.CAPS", 0)
        assert rf.execute_command("EMQ.CAPS", 0)
        rp.close()
        rf.close()


def test_renamed_and_removed_commands_are_per_server() -> None:
    """rename-command and enable-fakekey-commands change one server's table, never the
    declarations another server (or the next one) is made from."""
    renamed = [("rename-command", ["get", "fetch"]), ("rename-command", ["flushall", ""])]
    with Server(config=renamed, enable_fakekey_commands="no") as one, Server() as other:
        r1, r2 = redis.Redis.from_url(one.url), redis.Redis.from_url(other.url)
        r1.set("k", "1")
        r2.set("k", "2")
        assert r1.execute_command("FETCH", "k") == b"1"
        assert r2.get("k") == b"2"
        with pytest.raises(redis.ResponseError, match="unknown command 'GET'"):
            r1.get("k")
        with pytest.raises(redis.ResponseError, match="unknown command 'FETCH'"):
            r2.execute_command("FETCH", "k")
        with pytest.raises(redis.ResponseError, match="unknown command 'FAKEKEY.CLOCK'"):
            r1.execute_command("FAKEKEY.CLOCK", "GET")
        assert r2.execute_command("FAKEKEY.CLOCK", "GET") > 0
        assert r2.flushall()
        r1.close()
        r2.close()
    with Server() as later, redis.Redis.from_url(later.url) as r3:
        assert r3.execute_command("FAKEKEY.CLOCK", "GET") > 0  # the next server has them all


def test_servers_that_rename_nothing_share_their_read_only_command_table() -> None:
    """The table of a server that leaves commands out (a module, FAKEKEY.*) but renames
    none is made once per process and shared, read-only, as the declarations are; a
    server that renames has its own, and the others keep the command."""
    plain = Server(enable_emq_module="no")
    assert Server(enable_emq_module="no").state.registry is plain.state.registry
    assert Server(enable_fakekey_commands="no").state.registry is not plain.state.registry
    with Server(config=[("rename-command", ["get", "fetch"])], enable_emq_module="no") as renamed, \
            Server(enable_emq_module="no") as other:
        assert renamed.state.registry is not plain.state.registry
        assert other.state.registry is plain.state.registry
        with redis.Redis.from_url(renamed.url) as r1, redis.Redis.from_url(other.url) as r2:
            r2.set("k", "v")
            assert r2.get("k") == b"v"
            with pytest.raises(redis.ResponseError, match="unknown command 'EMQ.CAPS'"):
                r2.execute_command("EMQ.CAPS", 0)
            with pytest.raises(redis.ResponseError, match="unknown command 'GET'"):
                r1.get("k")
