"""fakeredis-style tests, as its documentation writes them, with `fakeredis` replaced by
`fakekey`: the Fake* clients are the real client classes on a private fakekey server."""

import asyncio
import gc
import socket
import time
from unittest import mock

import pytest
import redis
import redis.asyncio

import fakekey


@pytest.fixture
def redis_client(request):
    import fakekey

    redis_client = fakekey.FakeRedis()
    return redis_client


def test_fixture_client_is_a_real_redis_client(redis_client):
    assert isinstance(redis_client, redis.Redis)
    assert redis_client.set("foo", "bar") is True
    assert redis_client.get("foo") == b"bar"


def test_each_client_without_a_server_has_its_own(redis_client):
    redis_client.set("foo", "bar")
    assert fakekey.FakeRedis().get("foo") is None


def test_general_usage():
    r = fakekey.FakeStrictRedis(version=6, decode_responses=True)
    assert r.set("foo", "bar") is True
    assert r.get("foo") == "bar"
    assert r.lpush("bar", 1) == 1
    assert r.lpush("bar", 2) == 2
    assert r.lrange("bar", 0, -1) == ["2", "1"]


def test_share_state_through_a_server():
    server = fakekey.FakeServer()
    r1 = fakekey.FakeStrictRedis(server=server)
    assert r1.set("foo", "bar") is True
    r2 = fakekey.FakeStrictRedis(server=server)
    assert r2.get("foo") == b"bar"
    assert r2.set("bar", "baz") is True
    assert r1.get("bar") == b"baz"
    assert r2.get("bar") == b"baz"


def test_emulating_a_connection_error():
    server = fakekey.FakeServer()
    server.connected = False
    r = fakekey.FakeStrictRedis(server=server)
    with pytest.raises(redis.ConnectionError):
        r.set("foo", "bar")
    server.connected = True
    assert r.set("foo", "bar") is True


def test_connection_error_drops_open_connections():
    r = fakekey.FakeRedis()
    assert r.ping() is True
    r.fake_server.connected = False
    with pytest.raises(redis.ConnectionError):
        r.ping()
    r.fake_server.connected = True
    assert r.ping() is True


def test_connected_false_at_construction():
    r = fakekey.FakeRedis(connected=False)
    with pytest.raises(redis.ConnectionError):
        r.ping()


def test_client_options_pass_through():
    r = fakekey.FakeRedis(db=2, decode_responses=True, protocol=3, client_name="app")
    r.set("k", "v")
    assert r.client_getname() == "app"
    assert int(r.client_info()["db"]) == 2
    assert int(r.client_info()["resp"]) == 3
    assert r.hgetall("missing") == {}


def test_from_url_keeps_the_url_options():
    r = fakekey.FakeRedis.from_url("redis://localhost:6379/3", decode_responses=True)
    r.set("k", "v")
    assert r.get("k") == "v"
    assert int(r.client_info()["db"]) == 3


def test_server_settings_and_the_clock():
    server = fakekey.FakeServer(config={b"maxclients": b"64"}, notify_keyspace_events="KEA")
    r = fakekey.FakeRedis(server=server, decode_responses=True)
    assert r.config_get("maxclients") == {"maxclients": "64"}
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": "AKE"}
    server.server.freeze()
    r.set("k", "v", ex=5)
    server.server.advance(seconds=5, ms=1)
    assert r.get("k") is None


def test_unknown_server_type_is_refused():
    with pytest.raises(ValueError, match="dragonfly"):
        fakekey.FakeServer(server_type="dragonfly")


def test_a_connection_pool_is_the_clients():
    server = fakekey.FakeServer()
    pool = redis.ConnectionPool(connection_class=fakekey.FakeConnection, server=server)
    r = fakekey.FakeRedis(connection_pool=pool)
    assert r.connection_pool is pool
    assert r.fake_server is server
    assert r.ping() is True
    pool.disconnect()
    server.close()


def test_lock_pipeline_and_pubsub():
    r = fakekey.FakeRedis()
    with r.lock("resource", timeout=5):
        assert r.exists("resource") == 1
    assert r.exists("resource") == 0
    with r.pipeline() as pipe:
        assert pipe.incr("n").incr("n").execute() == [1, 2]
    pubsub = r.pubsub()
    pubsub.subscribe("news")
    assert pubsub.get_message(timeout=1)["type"] == "subscribe"
    assert r.publish("news", "hello") == 1
    assert pubsub.get_message(timeout=1)["data"] == b"hello"
    pubsub.close()


def test_private_servers_stop_when_their_clients_go():
    r = fakekey.FakeRedis()
    r.ping()
    address = (r.fake_server.host, r.fake_server.port)
    r.close()
    del r
    gc.collect()
    deadline = time.monotonic() + 10
    while True:  # the server stops on its own loop: poll until its port refuses
        try:
            socket.create_connection(address, timeout=1).close()
        except OSError:
            break
        assert time.monotonic() < deadline, "the private server still listens"
        time.sleep(0.01)


def test_close_stops_a_server_at_once():
    server = fakekey.FakeServer()
    r = fakekey.FakeRedis(server=server)
    r.ping()
    server.close()
    with pytest.raises(redis.ConnectionError):
        fakekey.FakeRedis(server=server).ping()


@pytest.mark.asyncio
async def test_async_client():
    r = fakekey.FakeAsyncRedis()
    assert isinstance(r, redis.asyncio.Redis)
    await r.set("foo", "bar")
    assert await r.get("foo") == b"bar"
    await r.aclose()


@pytest.mark.asyncio
async def test_async_and_sync_clients_share_a_server():
    server = fakekey.FakeServer()
    sync = fakekey.FakeRedis(server=server)
    sync.set("foo", "bar")
    r = fakekey.FakeAsyncRedis(server=server, decode_responses=True)
    assert await r.get("foo") == "bar"
    await r.aclose()


def test_valkey_clients():
    valkey = pytest.importorskip("valkey")
    server = fakekey.FakeServer()
    r = fakekey.FakeValkey(server=server, decode_responses=True)
    assert isinstance(r, valkey.Valkey)
    r.set("foo", "bar")
    assert fakekey.FakeRedis(server=server).get("foo") == b"bar"


@pytest.mark.asyncio
async def test_async_valkey_client():
    valkey_asyncio = pytest.importorskip("valkey.asyncio")
    r = fakekey.FakeAsyncValkey()
    assert isinstance(r, valkey_asyncio.Valkey)
    await r.rpush("l", "a")
    assert await r.lrange("l", 0, -1) == [b"a"]
    await r.aclose()


@pytest.mark.parametrize("name", ["FakeRedis", "FakeValkey"])
def test_the_pool_a_client_makes_names_its_server(name):
    """fakeredis code reaches a client's server as connection_kwargs["server"]: a shared
    one too, and the pool's connections (made later) reach it."""
    pytest.importorskip(name[4:].lower())
    server = fakekey.FakeServer()
    for client in (getattr(fakekey, name)(server=server), getattr(fakekey, name)(),
                   getattr(fakekey, name)(host="pool-names-its-server", port=6379, single_connection_client=True)):
        assert client.connection_pool.connection_kwargs["server"] is client.fake_server
        assert client.set("k", "v") is True
    assert fakekey.FakeRedis(server=server).get("k") == b"v"
    assert fakekey.FakeRedis(host="pool-names-its-server", port=6379).get("k") == b"v"


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["FakeAsyncRedis", "FakeAsyncValkey"])
async def test_the_pool_an_async_client_makes_names_its_server(name):
    pytest.importorskip("valkey" if "Valkey" in name else "redis")
    client = getattr(fakekey, name)()
    assert client.connection_pool.connection_kwargs["server"] is client.fake_server
    assert await client.set("k", "v") is True
    await client.aclose()


@pytest.mark.asyncio
async def test_waiting_for_a_pubsub_message_calls_no_asyncio_sleep():
    """An async client's get_message(timeout=...) waits on its socket, and the in-process
    servers' crons are loop timers: nothing calls asyncio.sleep meanwhile (fakeredis's
    tests patch it to count the calls)."""
    r = fakekey.FakeAsyncRedis()
    async with r.pubsub() as pubsub:
        await pubsub.subscribe("channel")
        assert (await pubsub.get_message(timeout=5))["type"] == "subscribe"
        with mock.patch("asyncio.sleep", wraps=asyncio.sleep) as sleep:
            assert await pubsub.get_message(timeout=0.3) is None  # three of the server's cron turns
        assert sleep.call_count == 0
    await r.aclose()


def test_a_fake_clients_connection_asks_for_no_maintenance_notifications():
    """An in-process server is never moved for maintenance: a Fake* client's connection
    leaves redis-py's CLIENT MAINT_NOTIFICATIONS out of its handshake (which Valkey, and
    fakekey, would refuse), so a new server counts no error. A client that asks for them
    keeps its own setting."""
    from redis.maint_notifications import MaintNotificationsConfig

    r = fakekey.FakeRedis()
    assert r.set("k", "v") is True
    assert r.info("errorstats") == {}
    assert "cmdstat_client|maint_notifications" not in r.info("commandstats")
    asked = fakekey.FakeRedis(server=r.fake_server, maint_notifications_config=MaintNotificationsConfig())
    assert asked.get("k") == b"v"
    assert r.info("errorstats") == {"errorstat_ERR": {"count": 1}}  # refused, as Valkey refuses it
