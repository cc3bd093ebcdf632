"""Behaviour that client code written for Valkey relies on: SCAN cursors a double holds,
pub/sub under CLIENT REPLY, a refused EXEC, the counters INFO reports (commandstats of
blocking commands, the dirty counter, blocking keys, lazily freed objects), SWAPDB's
argument checks and list-max-listpack-size's edges."""

from __future__ import annotations

import time

import pytest

DOUBLE_EXACT = 2**53


def err(text: str) -> tuple[str, bytes]:
    return ("-", text.encode())


# --- 1. SCAN cursors are exact in a double ------------------------------------------------

# The cursor is kept as a Lua number (a double) between calls, as many scripts do.
NUMERIC_CURSOR_LOOP = """
local cursor = 0
repeat
  local args = {ARGV[1]}
  if #KEYS > 0 then table.insert(args, KEYS[1]) end
  table.insert(args, cursor)
  table.insert(args, 'COUNT')
  table.insert(args, 10)
  local res = redis.call(unpack(args))
  cursor = tonumber(res[1])
  local items = res[2]
  local step = (ARGV[1] == 'ZSCAN' or ARGV[1] == 'HSCAN') and 2 or 1
  for i = 1, #items, step do
    if #KEYS > 0 then redis.call(ARGV[2], KEYS[1], items[i]) else redis.call('DEL', items[i]) end
  end
until cursor == 0
return 1
"""


def fill(r, kind: str, n: int) -> None:
    items = [f"item:{i}" for i in range(n)]
    for start in range(0, n, 500):
        chunk = items[start:start + 500]
        if kind == "SCAN":
            r.call("MSET", *[x for k in chunk for x in (k, "v")])
        elif kind == "HSCAN":
            r.call("HSET", "h", *[x for k in chunk for x in (k, "v")])
        elif kind == "SSCAN":
            r.call("SADD", "s", *chunk)
        else:
            r.call("ZADD", "z", *[x for k in chunk for x in ("1", k)])


SCANS = {  # kind -> (key, the command deleting one item)
    "SCAN": (None, "DEL"),
    "HSCAN": ("h", "HDEL"),
    "SSCAN": ("s", "SREM"),
    "ZSCAN": ("z", "ZREM"),
}


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("kind", list(SCANS))
def test_scan_delete_loop_with_numeric_cursor_deletes_everything(r, kind, n):
    fill(r, kind, n)
    key, remove = SCANS[kind]
    keys = [] if key is None else [key]
    assert r.call("EVAL", NUMERIC_CURSOR_LOOP, len(keys), *keys, kind, remove) == (":", 1)
    assert r.call("DBSIZE") == (":", 0)


@pytest.mark.parametrize("kind", list(SCANS))
def test_scan_cursors_are_exact_in_a_double(r, kind):
    fill(r, kind, 1000)
    key = SCANS[kind][0]
    head = [kind] if key is None else [kind, key]
    cursor, calls, seen = b"0", 0, 0
    while True:
        _, ((_, cursor), (_, page)) = r.call(*head, cursor, "COUNT", "7")
        assert int(cursor) < DOUBLE_EXACT
        seen += len(page)
        calls += 1
        if cursor == b"0":
            break
    assert calls > 10 and seen >= 1000


# --- 2. CLIENT REPLY OFF / SKIP leave pub/sub pushes alone --------------------------------

PUSH = {2: "*", 3: ">"}


def push(proto: int, *items: object) -> tuple[str, list]:
    def wire(item: object) -> tuple[str, object]:
        return (":", item) if isinstance(item, int) else ("$", item.encode())
    return (PUSH[proto], [wire(item) for item in items])


@pytest.mark.parametrize("mode", ["OFF", "SKIP"])
def test_pubsub_pushes_ignore_client_reply(r, target, proto, mode):
    r.send("CLIENT", "REPLY", mode)
    assert r.call("SUBSCRIBE", "ch") == push(proto, "subscribe", "ch", 1)
    with target.raw() as publisher:
        assert publisher.call("PUBLISH", "ch", "hi") == (":", 1)
        assert r.read() == push(proto, "message", "ch", "hi")
        assert r.call("PSUBSCRIBE", "c*") == push(proto, "psubscribe", "c*", 2)
        assert publisher.call("PUBLISH", "ch", "ho") == (":", 2)
        assert r.read() == push(proto, "message", "ch", "ho")
        assert r.read() == push(proto, "pmessage", "c*", "ch", "ho")
    r.send("PING")  # OFF drops its reply; SKIP was used up by SUBSCRIBE
    if mode == "SKIP":
        assert r.read() == (("*", [("$", b"pong"), ("$", b"")]) if proto == 2 else ("+", b"PONG"))
    assert r.call("UNSUBSCRIBE") == push(proto, "unsubscribe", "ch", 1)
    assert r.call("PUNSUBSCRIBE") == push(proto, "punsubscribe", "c*", 0)
    assert r.call("CLIENT", "REPLY", "ON") == ("+", b"OK")


# --- 3. a refused EXEC ends the transaction ------------------------------------------------

EXEC_ARITY_ABORT = err(
    "EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command"
)


def test_exec_with_wrong_arity_ends_the_transaction(r):
    assert r.call("MULTI") == ("+", b"OK")
    assert r.call("SET", "a", "b") == ("+", b"QUEUED")
    assert r.call("EXEC", "blahblah") == EXEC_ARITY_ABORT
    assert r.call("EXEC") == err("ERR EXEC without MULTI")  # no longer in MULTI
    assert r.call("EXISTS", "a") == (":", 0)  # nothing ran


def test_exec_with_wrong_arity_outside_multi(r):
    assert r.call("EXEC", "blahblah") == EXEC_ARITY_ABORT
    assert r.call("PING") == ("+", b"PONG")


def test_exec_refused_while_subscribed_in_resp2(r2):
    r2.call("SUBSCRIBE", "ch")
    assert r2.call("EXEC") == err(
        "EXECABORT Transaction discarded because of: Can't execute 'exec': only (P|S)SUBSCRIBE"
        " / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )
    assert r2.call("EXEC", "x") == EXEC_ARITY_ABORT


@pytest.mark.parametrize("request_", [("DISCARD", "x"), ("MULTI", "x"), ("WATCH",), ("UNWATCH", "x"),
                                      ("RESET", "x"), ("SET", "a")])
def test_other_arity_errors_inside_multi_doom_the_transaction(r, request_):
    assert r.call("MULTI") == ("+", b"OK")
    assert r.call("SET", "a", "b") == ("+", b"QUEUED")
    name = request_[0].lower()
    assert r.call(*request_) == err(f"ERR wrong number of arguments for '{name}' command")
    assert r.call("EXEC") == err("EXECABORT Transaction discarded because of previous errors.")
    assert r.call("EXISTS", "a") == (":", 0)


def test_refused_exec_counts_as_an_execabort_error(r2):
    r2.call("CONFIG", "RESETSTAT")
    r2.call("EXEC", "x")
    info = r2.call("INFO", "errorstats")[1].decode()
    assert "errorstat_EXECABORT:count=1" in info
    stats = r2.call("INFO", "commandstats")[1].decode()
    assert "cmdstat_exec:calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0" in stats


def test_exec_refused_before_auth(target, r2):
    r2.call("CONFIG", "SET", "requirepass", "pw")
    try:
        with target.raw() as stranger:
            assert stranger.call("EXEC") == err(
                "EXECABORT Transaction discarded because of: NOAUTH Authentication required."
            )
    finally:
        r2.call("AUTH", "pw")
        r2.call("CONFIG", "SET", "requirepass", "")


# --- 4a. a blocking command counts one call, when it completes ------------------------------


def info_section(conn, section: str) -> dict[str, str]:
    text = conn.call("INFO", section)[1].decode()
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def cmdstat(conn, name: str) -> dict[str, float]:
    raw = info_section(conn, "commandstats").get(f"cmdstat_{name}")
    if raw is None:
        return {}
    return {field: float(value) for field, value in (kv.split("=") for kv in raw.split(","))}


def tot_cmds(conn, client_id: int) -> int:
    line = conn.call("CLIENT", "LIST", "ID", str(client_id))[1].decode()
    return int(next(f for f in line.split() if f.startswith("tot-cmds="))[len("tot-cmds="):])


def wait_blocked(conn, count: int = 1) -> None:
    deadline = time.time() + 2
    while f"blocked_clients:{count}" not in conn.call("INFO", "clients")[1].decode():
        assert time.time() < deadline, "the client never blocked"
        time.sleep(0.005)


@pytest.fixture
def other(target):
    client = target.raw(2)
    yield client
    client.close()


def test_blocking_command_counts_once_when_served(r, other, proto):
    other.call("CONFIG", "RESETSTAT")
    client_id = r.call("CLIENT", "ID")[1]
    before = tot_cmds(other, client_id)
    r.send("BLPOP", "l", "0")
    wait_blocked(other)
    assert cmdstat(other, "blpop") == {}  # not a call while it waits
    assert tot_cmds(other, client_id) == before
    processed = int(info_section(other, "stats")["total_commands_processed"])
    # woken by a write that leaves it nothing: it blocks again, still no call
    other.call("MULTI")
    other.call("RPUSH", "l", "x")
    other.call("DEL", "l")
    other.call("EXEC")
    assert cmdstat(other, "blpop") == {}
    other.call("RPUSH", "l", "y")
    assert r.read() == ("*", [("$", b"l"), ("$", b"y")])
    stat = cmdstat(other, "blpop")
    assert stat["calls"] == 1 and stat["rejected_calls"] == 0 and stat["failed_calls"] == 0
    assert stat["usec"] > 0 and stat["usec_per_call"] == stat["usec"]
    assert tot_cmds(other, client_id) == before + 1
    # other ran INFO, MULTI, RPUSH, DEL, EXEC, INFO, RPUSH, INFO, CLIENT LIST; r's BLPOP
    assert int(info_section(other, "stats")["total_commands_processed"]) == processed + 10


def test_blocking_command_counts_once_when_timed_out_or_unblocked(r, other, proto):
    other.call("CONFIG", "RESETSTAT")
    client_id = r.call("CLIENT", "ID")[1]
    before = tot_cmds(other, client_id)
    assert r.call("BLPOP", "l", "0.01") == (("*", None) if proto == 2 else ("_", None))
    r.send("BLPOP", "l", "0")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id)) == (":", 1)
    assert r.read()[1] is None
    r.send("BLPOP", "l", "0")
    wait_blocked(other)
    assert other.call("CLIENT", "UNBLOCK", str(client_id), "ERROR") == (":", 1)
    assert r.read() == err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    stat = cmdstat(other, "blpop")
    assert (stat["calls"], stat["rejected_calls"], stat["failed_calls"]) == (3, 1, 0)
    assert stat["usec"] > 0
    assert tot_cmds(other, client_id) == before + 3
    assert info_section(other, "errorstats")["errorstat_UNBLOCKED"] == "count=1"


def own_tot_cmds(conn) -> int:
    line = conn.call("CLIENT", "INFO")[1].decode()
    return int(next(f for f in line.split() if f.startswith("tot-cmds="))[len("tot-cmds="):])


TOT_CMDS_CASES = [  # (requests, the commands Valkey runs for them)
    ([("MULTI",), ("SET", "a", "1"), ("GET", "a"), ("EXEC",)], 4),  # EXEC and the two it runs
    ([("MULTI",), ("EXEC",)], 2),
    ([("MULTI",), ("SET", "a", "1"), ("DISCARD",)], 2),  # a queued command never ran
    ([("MULTI",), ("SET", "a"), ("EXEC",)], 2),  # refused at queueing, then EXECABORT
    ([("MULTI",), ("LPUSH", "l", "1"), ("INCR", "l"), ("EXEC",)], 4),  # a failed one ran
    ([("EVAL", "redis.call('set','x','1') return redis.call('get','x')", "0")], 3),
    ([("EVAL", "return redis.pcall('incr','x') and redis.pcall('nosuch')", "0")], 2),
    ([("MULTI",), ("EVAL", "return redis.call('ping')", "0"), ("EXEC",)], 4),
    ([("NOSUCH",), ("GET",), ("CLIENT", "NOSUCH")], 0),  # refused before running
    ([("SET", "x", "1"), ("LPUSH", "x", "1")], 2),  # WRONGTYPE: it ran
    ([("BLPOP", "nolist", "0.01")], 1),  # timed out: one command
]


@pytest.mark.parametrize(("requests", "ran"), TOT_CMDS_CASES)
def test_tot_cmds_counts_the_commands_run_for_the_client(r, requests, ran):
    before = own_tot_cmds(r)
    for request in requests:
        r.call(*request)
    assert own_tot_cmds(r) - before == ran + 1  # and the first CLIENT INFO


def test_tot_cmds_counts_a_functions_commands(r):
    r.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=totlib\n"
           "server.register_function('two', function() server.call('ping') return server.call('ping') end)")
    before = own_tot_cmds(r)
    assert r.call("FCALL", "two", "0") == ("+", b"PONG")
    assert own_tot_cmds(r) - before == 4
    r.call("FUNCTION", "DELETE", "totlib")


def test_tot_cmds_after_a_watched_key_changed(r, other):
    r.call("WATCH", "w")
    other.call("SET", "w", "1")
    before = own_tot_cmds(r)
    r.call("MULTI")
    r.call("SET", "a", "1")
    assert r.call("EXEC")[1] is None
    assert own_tot_cmds(r) - before == 3  # CLIENT INFO, MULTI, EXEC


# --- 4b. the dirty counter moves by Valkey's amounts -------------------------------------

DIRTY_CASES = [  # (setup steps joined by ' ;; ', command, Valkey's count)
    ('', 'SET k v', 1),
    ('SET k v', 'SET k v', 1),
    ('SET k v', 'SET k v NX', 0),
    ('', 'SET k v XX', 0),
    ('', 'MSET a 1 b 2 c 3', 3),
    ('', 'MSETNX a 1 b 2', 2),
    ('SET a 1', 'MSETNX a 1 b 2', 0),
    ('', 'INCR k', 1),
    ('', 'INCRBY k 5', 1),
    ('', 'INCRBYFLOAT k 1.5', 1),
    ('', 'APPEND k abc', 1),
    ('SET k abc', 'APPEND k EMPTY', 1),
    ('', 'SETRANGE k 0 abc', 1),
    ('SET k abc', 'SETRANGE k 0 EMPTY', 0),
    ('SET k abc', 'SETRANGE k 0 abc', 1),
    ('', 'SETBIT k 3 1', 1),
    ('SETBIT k 3 1', 'SETBIT k 3 1', 0),
    ('SETBIT k 3 1', 'SETBIT k 3 0', 1),
    ('', 'SETBIT k 3 0', 1),
    ('', 'GETSET k v', 1),
    ('SET k v', 'GETDEL k', 1),
    ('', 'GETDEL k', 0),
    ('SET k v', 'GETEX k EX 100', 1),
    ('SET k v', 'GETEX k PERSIST', 0),
    ('SET k v', 'GETEX k', 0),
    ('', 'SETEX k 10 v', 1),
    ('', 'PSETEX k 10000 v', 1),
    ('', 'SETNX k v', 1),
    ('SET k v', 'SETNX k v', 0),
    ('SET a 1 ;; SET b 2', 'DEL a b c', 2),
    ('SET a 1 ;; SET b 2', 'UNLINK a b c', 2),
    ('SET k v', 'EXPIRE k 100', 1),
    ('SET k v', 'EXPIRE k 100 NX', 1),
    ('SET k v', 'PEXPIRE k 100000', 1),
    ('SET k v', 'EXPIRE k -1', 1),
    ('SET k v', 'PERSIST k', 0),
    ('SET k v ;; EXPIRE k 100', 'PERSIST k', 1),
    ('SET k v', 'RENAME k k2', 1),
    ('SET k v', 'RENAMENX k k2', 1),
    ('SET k v', 'COPY k k2', 1),
    ('SET k v', 'MOVE k 1', 1),
    ('SET k v', 'TOUCH k', 0),
    ('', 'LPUSH l a b c', 3),
    ('', 'RPUSH l a b c', 3),
    ('', 'LPUSHX l a', 0),
    ('RPUSH l a', 'LPUSHX l a b', 2),
    ('RPUSH l a b c', 'LPOP l', 1),
    ('RPUSH l a b c', 'LPOP l 2', 2),
    ('RPUSH l a b c', 'RPOP l 5', 3),
    ('', 'LPOP l', 0),
    ('RPUSH l a b c', 'LSET l 0 x', 1),
    ('RPUSH l a b c', 'LINSERT l BEFORE b x', 1),
    ('RPUSH l a b c', 'LINSERT l BEFORE z x', 0),
    ('RPUSH l a b a', 'LREM l 0 a', 2),
    ('RPUSH l a b a', 'LREM l 0 z', 0),
    ('RPUSH l a b c', 'LTRIM l 0 0', 2),
    ('RPUSH l a b c', 'LTRIM l 0 -1', 0),
    ('RPUSH l a b c', 'LMOVE l l2 LEFT RIGHT', 1),
    ('RPUSH l a b c', 'RPOPLPUSH l l2', 1),
    ('RPUSH l a b c', 'LMPOP 1 l LEFT COUNT 2', 2),
    ('RPUSH l a b c', 'BLPOP l 0', 1),
    ('', 'SADD s a b c', 3),
    ('SADD s a', 'SADD s a b', 1),
    ('SADD s a', 'SADD s a', 0),
    ('SADD s a b', 'SREM s a z', 1),
    ('SADD s a b', 'SPOP s', 1),
    ('SADD s a b c', 'SPOP s 2', 2),
    ('SADD s a b', 'SMOVE s s2 a', 2),
    ('SADD s a b', 'SMOVE s s2 z', 0),
    ('SADD s a b ;; SADD t b', 'SINTERSTORE d s t', 1),
    ('SADD s a b ;; SADD t b', 'SUNIONSTORE d s t', 1),
    ('SADD s a b ;; SADD t b', 'SDIFFSTORE d s t', 1),
    ('', 'SINTERSTORE d s t', 0),
    ('', 'HSET h a 1 b 2', 2),
    ('HSET h a 1', 'HSET h a 1 b 2', 2),
    ('HSET h a 1', 'HSET h a 1', 1),
    ('', 'HMSET h a 1 b 2', 2),
    ('', 'HSETNX h a 1', 1),
    ('HSET h a 1', 'HSETNX h a 1', 0),
    ('HSET h a 1 b 2', 'HDEL h a b c', 2),
    ('HSET h a 1', 'HINCRBY h a 2', 1),
    ('HSET h a 1', 'HINCRBYFLOAT h a 2', 1),
    ('HSET h a 1', 'HEXPIRE h 100 FIELDS 2 a z', 1),
    ('HSET h a 1 b 2', 'HGETDEL h FIELDS 2 a z', 1),
    ('', 'ZADD z 1 a 2 b', 2),
    ('ZADD z 1 a', 'ZADD z 1 a 2 b', 1),
    ('ZADD z 1 a', 'ZADD z 1 a', 0),
    ('ZADD z 1 a', 'ZADD z 5 a', 1),
    ('', 'ZADD z 1 a 2 a', 2),  # a member given twice: added, then given a new score
    ('ZADD z 2 a', 'ZADD z 3 a 2 a', 2),
    ('ZADD z 1 a', 'ZADD z INCR 5 a', 1),
    ('ZADD z 1 a', 'ZINCRBY z 5 a', 1),
    ('ZADD z 1 a 2 b', 'ZREM z a z', 1),
    ('ZADD z 1 a 2 b', 'ZPOPMIN z', 1),
    ('ZADD z 1 a 2 b', 'ZPOPMIN z 5', 2),
    ('ZADD z 1 a 2 b 3 c', 'ZREMRANGEBYRANK z 0 1', 2),
    ('ZADD z 1 a 2 b 3 c', 'ZREMRANGEBYSCORE z 0 1', 1),
    ('ZADD z 1 a 2 b 3 c', 'ZREMRANGEBYLEX z - +', 3),
    ('ZADD z 1 a 2 b ;; ZADD y 1 a', 'ZUNIONSTORE d 2 z y', 1),
    ('ZADD z 1 a 2 b ;; ZADD y 1 a', 'ZINTERSTORE d 2 z y', 1),
    ('ZADD z 1 a 2 b', 'ZRANGESTORE d z 0 -1', 1),
    ('ZADD z 1 a 2 b', 'ZMPOP 1 z MIN COUNT 2', 2),
    ('', 'XADD s * f v', 1),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v', 'XDEL s 1-1 9-9', 1),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v', 'XTRIM s MAXLEN 0', 2),
    ('XADD s 1-1 f v', 'XGROUP CREATE s g 0', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XREADGROUP GROUP g c STREAMS s >', 2),
    # one per consumer made, one per stream served: a history read always serves, a
    # second '>' on the same stream finds nothing new
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >',
     'XREADGROUP GROUP g c STREAMS s 0', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XREADGROUP GROUP g c2 STREAMS s 0', 2),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XREADGROUP GROUP g c COUNT 5 STREAMS s s > >', 2),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g $', 'XREADGROUP GROUP g c NOACK STREAMS s >', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XGROUP CREATECONSUMER s g c', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XGROUP SETID s g 0', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0', 'XGROUP DESTROY s g', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XACK s g 1-1', 1),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XCLAIM s g c2 0 1-1', 2),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XAUTOCLAIM s g c2 0 0', 2),
    ('XADD s 1-1 f v', 'XSETID s 5-5', 1),
    ('SET a 1', 'BITOP OR d a a', 1),
    ('SET k v', 'FLUSHDB', 1),
    ('SET k v ;; SET k2 v', 'FLUSHALL', 2),
    ('SET k v', 'SWAPDB 0 1', 1),
    ('', 'EVAL return 1 0', 0),
    ('', 'PUBLISH c m', 0),
    ('', 'SET k v KEEPTTL', 1),
    ('SET k v', 'EXPIREAT k 1', 1),
    ('', 'LPUSH l a a a', 3),
    ('ZADD z 1 a 2 b', 'ZADD z 1 a 3 b 4 c', 2),
    ('ZADD z 1 a 2 b', 'ZADD z GT 0 a 3 b', 1),
    ('ZADD z 1 a', 'ZADD z CH 1 a 2 a', 1),
    ('ZADD z 1 a', 'ZADD z NX 5 a 1 b', 1),
    ('HSET h a 1', 'HINCRBY h b 2', 1),
    ('RPUSH l a b', 'LSET l 0 a', 1),
    ('SET k 10', 'INCRBY k 0', 1),
    ('SET k 1.5', 'INCRBYFLOAT k 0', 1),
    ('SET k v', 'SET k v GET', 1),
    ('SET k v', 'GETSET k v', 1),
    ('SADD s a b', 'SINTERCARD 1 s', 0),
    ('ZADD z 1 a', 'ZINCRBY z 0 a', 0),
    ('HSET h a 1', 'HSETEX h FIELDS 1 a 2', 1),
    ('XADD s 1-1 f v', 'XADD s MAXLEN 0 * f v', 1),
    ('RPUSH l a', 'BRPOP l 0', 1),
    ('ZADD z 1 a 2 b', 'BZPOPMIN z 0', 1),
    ('SADD s a', 'SADD s a b c d', 3),
    ('SET a 1 ;; SET b 2 ;; EXPIRE a 100', 'MSET a 1 b 2', 2),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XGROUP CREATECONSUMER s g c', 'XREADGROUP GROUP g c STREAMS s >', 1),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0', 'XREADGROUP GROUP g c STREAMS s >', 2),
    ('XADD s 1-1 f v ;; XGROUP CREATE s g $', 'XREADGROUP GROUP g c STREAMS s >', 1),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XCLAIM s g c 0 1-1 2-1', 2),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XCLAIM s g c2 0 1-1 2-1', 3),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XCLAIM s g c2 0 1-1 2-1 JUSTID', 3),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XAUTOCLAIM s g c 0 0', 2),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c STREAMS s >', 'XAUTOCLAIM s g c3 0 0', 3),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0 ;; XREADGROUP GROUP g c NOACK STREAMS s >', 'XGROUP DELCONSUMER s g c', 1),
    ('XADD s 1-1 f v ;; XADD s 2-1 f v ;; XGROUP CREATE s g 0', 'XREADGROUP GROUP g c NOACK STREAMS s >', 2),
]


def dirty(conn) -> int:
    return int(info_section(conn, "persistence")["rdb_changes_since_last_save"])


def words(text: str) -> list[str]:
    return [w.replace("EMPTY", "") for w in text.split()]  # EMPTY: an empty argument


def wrong_dirty_counts(conn) -> list[tuple[str, str, int, int]]:
    """The DIRTY_CASES whose command moved the counter by other than Valkey's count."""
    wrong = []
    for setup, command, expected in DIRTY_CASES:
        conn.call("FLUSHALL")
        for step in filter(None, setup.split(" ;; ")):
            conn.call(*words(step))
        before = dirty(conn)
        conn.call(*words(command))
        if dirty(conn) - before != expected:
            wrong.append((setup, command, dirty(conn) - before, expected))
    return wrong


def test_dirty_counter_moves_as_valkey_counts(r2):
    assert wrong_dirty_counts(r2) == []


def test_dirty_counter_moves_the_same_with_the_log_on(r2):
    """With appendonly, commands run through the log's path (a handler called as a value,
    not the server's direct call of a counted one): the counts are the same."""
    assert r2.call("CONFIG", "SET", "appendonly", "yes") == ("+", b"OK")
    try:
        assert wrong_dirty_counts(r2) == []
    finally:
        assert r2.call("CONFIG", "SET", "appendonly", "no") == ("+", b"OK")


def test_xreadgroup_counts_each_stream_served_in_either_protocol(r):
    """A stream named twice serves twice (its map reply in RESP3 has the key twice): one
    change for the consumer made, one for each serving, as Valkey counts."""
    r.call("FLUSHALL")
    r.call("XADD", "s", "1-1", "f", "v")
    r.call("XADD", "s", "2-1", "f", "v")
    r.call("XGROUP", "CREATE", "s", "g", "0")
    before = dirty(r)
    r.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", "s", ">", ">")
    assert dirty(r) - before == 3


# --- 4c. total_blocking_keys_on_nokey counts keys XREADGROUP waits on ------------------------


def blocking_keys(conn) -> tuple[int, int, int]:
    info = info_section(conn, "clients")
    return (int(info["blocked_clients"]), int(info["total_blocking_keys"]),
            int(info["total_blocking_keys_on_nokey"]))


def test_blocking_keys_on_nokey_counts_xreadgroup_keys(target, other):
    other.call("XADD", "s", "1-1", "f", "v")
    other.call("XGROUP", "CREATE", "s", "g", "$")
    waiters = [target.raw(2) for _ in range(4)]
    try:
        readers, lister, plain_reader = waiters[:2], waiters[2], waiters[3]
        for i, reader in enumerate(readers):
            reader.send("XREADGROUP", "GROUP", "g", f"c{i}", "BLOCK", "0", "STREAMS", "s", ">")
        lister.send("BLPOP", "l", "0")
        plain_reader.send("XREAD", "BLOCK", "0", "STREAMS", "s2", "$")
        wait_blocked(other, 4)
        assert blocking_keys(other) == (4, 3, 1)  # one key ("s") for both group readers
        assert other.call("DEL", "s") == (":", 1)  # the deletion wakes the group readers
        for reader in readers:
            assert reader.read() == err(
                "NOGROUP No such key 's' or consumer group 'g' in XREADGROUP with GROUP option"
            )
        assert blocking_keys(other) == (2, 2, 0)
    finally:
        for waiter in waiters:
            waiter.close()


# --- 4d. lazyfreed_objects: values Valkey frees in the background --------------------------


def big_set(key: str = "s", n: int = 200) -> tuple:
    return ("SADD", key, *[f"m{i}" for i in range(n)])  # a hashtable: 200 > 128 members


def lazyfreed(conn) -> int:
    """After the background thread is done (Valkey frees there; fakekey only counts)."""
    deadline = time.time() + 2
    while info_section(conn, "memory")["lazyfree_pending_objects"] != "0":
        assert time.time() < deadline
        time.sleep(0.005)
    return int(info_section(conn, "memory")["lazyfreed_objects"])


LAZYFREE_CASES = [  # (name, requests, objects Valkey frees in the background)
    ("DEL of a listpack set", [big_set(n=128), ("DEL", "s")], 0),
    ("DEL of a hashtable set", [big_set(), ("DEL", "s")], 1),
    ("UNLINK of a skiplist", [("ZADD", "z", *[x for i in range(200) for x in (i, f"m{i}")]),
                              ("UNLINK", "z")], 1),
    ("hash of 600 fields", [("HSET", "h", *[x for i in range(600) for x in (f"f{i}", "v")]),
                            ("UNLINK", "h")], 1),
    ("list of 64 nodes", [("RPUSH", "l", *["x" * 8000] * 64), ("UNLINK", "l")], 0),
    ("list of 65 nodes", [("RPUSH", "l", *["x" * 8000] * 65), ("UNLINK", "l")], 1),
    ("SET over a big set", [big_set(), ("SET", "s", "v")], 1),
    ("RENAME over a big set", [big_set(), ("SET", "a", "v"), ("RENAME", "a", "s")], 1),
    ("RENAME moves a big set", [big_set(), ("RENAME", "s", "t")], 0),
    ("MOVE moves a big set", [big_set(), ("MOVE", "s", "1")], 0),
    ("SUNIONSTORE over a big set", [big_set(), ("SADD", "t", "x"), ("SUNIONSTORE", "s", "t")], 1),
    ("DEL with lazyfree-lazy-user-del no", [("CONFIG", "SET", "lazyfree-lazy-user-del", "no"),
                                            big_set(), ("DEL", "s")], 0),
    ("UNLINK with lazyfree-lazy-user-del no", [("CONFIG", "SET", "lazyfree-lazy-user-del", "no"),
                                               big_set(), ("UNLINK", "s")], 1),
    ("SET over with lazyfree-lazy-server-del no",
     [("CONFIG", "SET", "lazyfree-lazy-server-del", "no"), big_set(), ("SET", "s", "v")], 0),
    ("FLUSHALL ASYNC", [("MSET", "a", "1", "b", "2"), ("SELECT", "1"), ("SET", "c", "3"),
                        ("SELECT", "0"), ("FLUSHALL", "ASYNC")], 3),
    ("FLUSHALL SYNC", [("MSET", "a", "1", "b", "2"), ("FLUSHALL", "SYNC")], 0),
    ("FLUSHALL, lazyfree-lazy-user-flush yes", [("MSET", "a", "1", "b", "2"), ("FLUSHALL",)], 2),
    ("FLUSHDB ASYNC", [("MSET", "a", "1", "b", "2"), ("FLUSHDB", "ASYNC")], 2),
    ("stream: 1 node and 63 groups", [("XADD", "st", "1-1", "f", "v"),
                                      *[("XGROUP", "CREATE", "st", f"g{i}", "0") for i in range(63)],
                                      ("UNLINK", "st")], 1),
    ("stream: 1 node and 62 groups", [("XADD", "st", "1-1", "f", "v"),
                                      *[("XGROUP", "CREATE", "st", f"g{i}", "0") for i in range(62)],
                                      ("UNLINK", "st")], 0),
    ("stream: the first group's PEL counts for each group",
     [*[("XADD", "st", f"{i + 1}-1", "f", "v") for i in range(40)],
      ("XGROUP", "CREATE", "st", "a", "0"), ("XGROUP", "CREATE", "st", "b", "0"),
      ("XREADGROUP", "GROUP", "a", "c", "STREAMS", "st", ">"), ("UNLINK", "st")], 1),
    ("stream: another group's PEL does not",
     [*[("XADD", "st", f"{i + 1}-1", "f", "v") for i in range(40)],
      ("XGROUP", "CREATE", "st", "a", "0"), ("XGROUP", "CREATE", "st", "b", "0"),
      ("XREADGROUP", "GROUP", "b", "c", "STREAMS", "st", ">"), ("UNLINK", "st")], 0),
]

LAZYFREE_SETTINGS = ("user-del", "server-del", "expire", "user-flush")


def test_lazyfreed_objects_counts_as_valkey_frees(r2):
    wrong = []
    try:
        for name, requests, expected in LAZYFREE_CASES:
            r2.call("FLUSHALL", "SYNC")
            before = lazyfreed(r2)
            for request in requests:
                assert r2.call(*request)[0] != "-", (name, request)
            if lazyfreed(r2) - before != expected:
                wrong.append((name, lazyfreed(r2) - before, expected))
            for setting in LAZYFREE_SETTINGS:
                r2.call("CONFIG", "SET", f"lazyfree-lazy-{setting}", "yes")
    finally:
        r2.call("SELECT", "0")
    assert wrong == []


def test_lazyfreed_objects_counts_expiry_and_resets(r2):
    before = lazyfreed(r2)
    r2.call(*big_set())
    r2.call("PEXPIRE", "s", "1")
    time.sleep(0.01)
    assert r2.call("EXISTS", "s") == (":", 0)
    assert lazyfreed(r2) == before + 1
    r2.call("CONFIG", "RESETSTAT")
    assert lazyfreed(r2) == 0


# --- 5. edge cases -------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "expected"), [
    (("44", "a"), "ERR invalid second DB index"),  # both parsed before the range check
    (("a", "44"), "ERR invalid first DB index"),
    (("a", "b"), "ERR invalid first DB index"),
    (("2147483648", "0"), "ERR invalid first DB index"),  # not a C int
    (("0", "-2147483649"), "ERR invalid second DB index"),
    (("2147483647", "0"), "ERR DB index is out of range"),
    (("44", "0"), "ERR DB index is out of range"),
    (("0", "-1"), "ERR DB index is out of range"),
    (("+1", "0"), "ERR invalid first DB index"),
])
def test_swapdb_checks_arguments_in_valkeys_order(r2, args, expected):
    assert r2.call("SWAPDB", *args) == err(expected)


def test_swapdb_with_itself_counts_a_change(r2):
    before = dirty(r2)
    assert r2.call("SWAPDB", "3", "3") == ("+", b"OK")
    assert dirty(r2) == before + 1


LISTPACK_SIZE_CASES = [  # (list-max-listpack-size, elements, encoding)
    ("0", ["a"], "listpack"),
    ("0", ["a", "b"], "quicklist"),  # 0 is read as one entry per node
    ("1", ["a", "b"], "quicklist"),
    ("2", ["a", "b"], "listpack"),
    ("128", ["x" * 5000, "x" * 5000], "quicklist"),  # no node passes 8 KiB
    ("-2", ["x" * 10000], "quicklist"),  # one entry too big for a node
    ("-1", ["x" * 3000, "x" * 3000], "quicklist"),
    ("-2", ["x" * 3000, "x" * 3000], "listpack"),
    ("-9", ["x" * 60000], "listpack"),  # below -5: the 64 KiB level
]


def test_list_max_listpack_size_edges(r2):
    try:
        for limit, elements, encoding in LISTPACK_SIZE_CASES:
            r2.call("CONFIG", "SET", "list-max-listpack-size", limit)
            r2.call("DEL", "l")
            r2.call("RPUSH", "l", *elements)
            assert r2.call("OBJECT", "ENCODING", "l") == ("$", encoding.encode()), (limit, elements)
    finally:
        r2.call("CONFIG", "SET", "list-max-listpack-size", "-2")
