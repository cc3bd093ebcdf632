"""fakekey.Server's direct API (fakekey/net/direct.py): seeding and inspecting without a
client, through the same write funnel as any client's command (keyspace events, WATCH,
client-side caching, blocked clients), safe while clients run; dump/load of the keyspace
as plain Python values; snapshot/restore."""

import threading

import pytest
import redis

from fakekey.net.direct import DirectCommandError
from fakekey.net.server import Server


@pytest.fixture(scope="module")
def server():
    with Server() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.flushall()
    return server


@pytest.fixture
def client(srv):
    client = redis.Redis(port=srv.port)
    yield client
    client.close()


def test_seed_and_inspect_every_type(srv, client):
    assert srv.set("s", "v", ex=100) is True
    assert srv.lpush("l", "a", "b") == 2
    assert srv.hset("h", {"f": "v", "n": 1}) == 2
    assert srv.zadd("z", {"m": 1.5, "n": 2}) == 2
    assert srv.sadd("set", "x") == 1
    assert srv.xadd("x", {"f": "v"}, "1-1") == b"1-1"
    assert srv.get("s") == b"v" and srv.get("missing") is None
    assert srv.ttl("s") == 100 and srv.ttl("l") == -1 and srv.ttl("missing") == -2
    assert [srv.type(k) for k in ("s", "l", "h", "z", "set", "x", "no")] == [
        "string", "list", "hash", "zset", "set", "stream", "none"]
    assert srv.exists("s", "l", "missing") == 2
    assert srv.keys() == [b"h", b"l", b"s", b"set", b"x", b"z"] and srv.keys("s*") == [b"s", b"set"]
    assert srv.lrange("l") == [b"b", b"a"]
    assert srv.hgetall("h") == {b"f": b"v", b"n": b"1"}
    assert srv.zrange("z") == [b"m", b"n"]
    assert srv.zrange("z", withscores=True) == [(b"m", 1.5), (b"n", 2.0)]
    assert client.get("s") == b"v"  # the clients see the same data
    client.rpush("l", "c")
    assert srv.lrange("l", -1) == [b"c"]


def test_an_error_reply_raises(srv):
    srv.lpush("l", "a")
    with pytest.raises(DirectCommandError, match="^WRONGTYPE Operation against a key holding the wrong kind"):
        srv.get("l")
    assert srv.execute("INCRBY", "n", 5) == 5


def test_writes_raise_keyspace_events(srv, client):
    client.config_set("notify-keyspace-events", "KEA")
    try:
        pubsub = client.pubsub()
        pubsub.psubscribe("__keyspace@0__:*")
        assert pubsub.get_message(timeout=5)["type"] == "psubscribe"
        srv.set("k", "v")
        message = pubsub.get_message(timeout=5)
        assert (message["channel"], message["data"]) == (b"__keyspace@0__:k", b"set")
        pubsub.close()
    finally:
        client.config_set("notify-keyspace-events", "")


def test_a_write_touches_watched_keys(srv, client):
    with client.pipeline() as pipe:
        pipe.watch("k")
        srv.set("k", "changed")
        pipe.multi()
        pipe.set("k", "mine")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert srv.get("k") == b"changed"


def test_a_write_invalidates_tracked_keys(srv):
    tracked = redis.Redis(port=srv.port, protocol=3)
    try:
        invalidated = []
        tracked.execute_command("CLIENT", "TRACKING", "ON")
        connection = tracked.connection_pool.get_connection()
        connection._parser.set_invalidation_push_handler(invalidated.append)
        connection.send_command("GET", "k")
        connection.read_response()
        srv.set("k", "v")
        connection.send_command("PING")
        connection.read_response()
        tracked.connection_pool.release(connection)
        assert invalidated == [[b"invalidate", [b"k"]]]
    finally:
        tracked.close()


def test_a_write_serves_a_blocked_client(srv, client):
    replies = []
    waiter = threading.Thread(target=lambda: replies.append(redis.Redis(port=srv.port).blpop(["q"], 10)))
    waiter.start()
    try:
        for _ in range(1000):
            if client.info("clients")["blocked_clients"]:
                break
            threading.Event().wait(0.005)
        srv.rpush("q", "job")
        waiter.join(10)
    finally:
        client.lpush("q", "release")
        waiter.join(10)
    assert replies == [(b"q", b"job")]


def test_safe_while_clients_run(srv):
    def hammer():
        with redis.Redis(port=srv.port) as mine:
            for _ in range(300):
                mine.incr("n")

    workers = [threading.Thread(target=hammer) for _ in range(2)]
    for worker in workers:
        worker.start()
    for _ in range(300):
        srv.execute("INCR", "n")
    for worker in workers:
        worker.join(30)
    assert srv.get("n") == b"900"


def test_dump_and_load_the_keyspace_as_plain_values(srv):
    data = {
        b"s": b"v",
        b"l": [b"a", b"b"],
        b"h": {b"f": b"v"},
        b"set": {b"x", b"y"},
        b"z": [(b"m", 1.5), (b"n", 2.0)],
        b"x": [(b"1-1", {b"f": b"v"}), (b"2-0", {b"g": b"w"})],
    }
    srv.load_keyspace(data)
    assert srv.dump_keyspace() == data
    srv.load_keyspace({"s": "new", "count": 3, "l": ["c"]}, db=2)  # str and numbers too
    assert srv.dump_keyspace(db=2) == {b"s": b"new", b"count": b"3", b"l": [b"c"]}
    assert srv.dump_keyspace() == data  # another database
    srv.load_keyspace({"l": [], "h": {}})  # no empty containers: the keys are gone
    assert srv.exists("l", "h") == 0
    with pytest.raises(TypeError, match="no Valkey type"):
        srv.load_keyspace({"k": object()})


def test_seed_before_the_server_starts():
    server = Server()
    server.set("k", "seeded")
    with server, redis.Redis(port=server.port) as client:
        assert client.get("k") == b"seeded"


def test_snapshot_and_restore(srv, client):
    with srv.frozen(at=1_000_000):
        srv.set("keep", "1", px=100_000)
        srv.zadd("z", {"a": 1})
        srv.set("other-db", "x", db=3)
        snap = srv.snapshot()
        assert snap.key_count() == 3
        client.flushall()
        client.set("new", "gone after restore")
        srv.restore(snap)
        assert srv.keys() == [b"keep", b"z"] and srv.keys(db=3) == [b"other-db"]
        assert client.pttl("keep") == 100_000
        assert srv.zrange("z", withscores=True) == [(b"a", 1.0)]


def test_snapshot_keeps_expiry_times_on_the_server_clock(srv):
    srv.freeze(at=1_000_000)
    try:
        srv.set("k", "v", px=500)
        snap = srv.snapshot()
        srv.advance(1000)
        srv.restore(snap)  # its time has passed: not brought back
        assert srv.exists("k") == 0
    finally:
        srv.real_time()
