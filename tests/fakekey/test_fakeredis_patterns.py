"""The usual ways tests use fakeredis, with `fakeredis` replaced by `fakekey`: a patched
client class, URLs, `connection_class` pools (django, django-redis, Celery), rq, asyncio,
fakeredis's `version=`/`server_type=`/`lua_modules=`, `TcpFakeServer`, and redis.log
in Python's logging. Servers shared by address live as long as the process (fakeredis's
rule), so each test names an address of its own and closes its servers."""

import logging
import threading
import types
import uuid

import pytest
import redis
import redis.asyncio

import fakekey


@pytest.fixture
def address(request):
    """A host name no other test uses; the shared servers made for it close after the test."""
    host = f"cache-{uuid.uuid4().hex[:8]}"
    yield host
    from fakekey.compat import fakeredis

    for (addr, _gate), server in list(fakeredis._shared.items()):
        if addr[1] == host:
            server.close()


# --- shared by address ------------------------------------------------------------------


def test_a_patched_class_reads_back_what_a_request_wrote(monkeypatch, address):
    """An app that makes a client per request, its redis module's class patched."""
    app_redis = types.SimpleNamespace(Redis=redis.Redis)

    def handle_write(key, value):
        app_redis.Redis(host=address, port=6379).set(key, value)

    def handle_read(key):
        return app_redis.Redis(host=address, port=6379, decode_responses=True).get(key)

    monkeypatch.setattr(app_redis, "Redis", fakekey.FakeRedis)
    handle_write("user:1", "alice")
    assert handle_read("user:1") == "alice"


def test_clients_for_one_address_share_a_server_and_others_do_not(address):
    a = fakekey.FakeRedis(host=address, port=6379)
    a.set("k", "v")
    assert fakekey.FakeRedis(host=address, port=6379).get("k") == b"v"
    assert fakekey.FakeRedis(address, 6379).get("k") == b"v"  # positional, as redis.Redis
    assert fakekey.FakeRedis(host=address, port=6380).get("k") is None
    assert fakekey.FakeRedis().get("k") is None  # no address: a private server
    assert fakekey.FakeRedis(host=address, port=6379, version=6).get("k") is None  # another server


def test_from_url_shares_with_clients_for_its_address(address):
    fakekey.FakeRedis(host=address, port=6379, db=1).set("k", "v")
    r = fakekey.FakeRedis.from_url(f"redis://{address}:6379/1", decode_responses=True)
    assert r.get("k") == "v"
    assert fakekey.FakeStrictRedis.from_url(f"redis://{address}:6379/0").get("k") is None  # db 0
    assert fakekey.FakeRedis.from_url(f"redis://{address}:6379/1").fake_server is r.fake_server


def test_the_pytest_fixture_of_fakeredis_docs(redis_client):
    redis_client.set("user:1", "alice")
    assert redis_client.get("user:1") == b"alice"


@pytest.fixture
def redis_client(request):
    import fakekey

    redis_client = fakekey.FakeRedis()
    return redis_client


# --- connection_class and connection_pool -----------------------------------------------


def test_a_fake_connection_pool_reaches_the_server_of_its_address(address):
    fakekey.FakeRedis(host=address, port=6379).set("k", "v")
    pool = redis.ConnectionPool(connection_class=fakekey.FakeConnection, host=address, port=6379)
    assert redis.Redis(connection_pool=pool).get("k") == b"v"
    client = fakekey.FakeRedis(connection_pool=pool)
    assert client.get("k") == b"v"
    assert client.fake_server is fakekey.FakeRedis(host=address, port=6379).fake_server
    pool.disconnect()


def test_a_fake_connection_pool_with_its_server():
    server = fakekey.FakeServer()
    fakekey.FakeRedis(server=server).set("k", "v")
    pool = redis.ConnectionPool(connection_class=fakekey.FakeConnection, server=server)
    assert redis.Redis(connection_pool=pool).get("k") == b"v"
    assert fakekey.FakeRedis(connection_pool=pool).fake_server is server
    pool.disconnect()
    server.close()


def test_a_pool_of_plain_connections_to_the_servers_address():
    server = fakekey.FakeServer()
    fakekey.FakeRedis(server=server).set("k", "v")
    pool = redis.ConnectionPool(host=server.host, port=server.port)
    client = fakekey.FakeRedis(connection_pool=pool)
    assert client.get("k") == b"v"
    assert client.fake_server is server
    pool.disconnect()
    server.close()


def test_django_cache_settings_with_fake_connection(address):
    """django's RedisCache makes its pool as `ConnectionPool.from_url(LOCATION,
    **OPTIONS)`; django-redis as `from_url(LOCATION, **CONNECTION_POOL_KWARGS)` and then
    `Redis(connection_pool=pool)`. Both with `connection_class: FakeConnection`."""
    location = f"redis://{address}:6379/2"
    django_pool = redis.ConnectionPool.from_url(location, connection_class=fakekey.FakeConnection)
    django_client = redis.Redis(connection_pool=django_pool)
    django_client.set(":1:greeting", "hello", ex=300)
    django_redis_pool = redis.ConnectionPool.from_url(
        location, **{"connection_class": fakekey.FakeConnection, "max_connections": 10})
    django_redis_client = redis.Redis(connection_pool=django_redis_pool)
    assert django_redis_client.get(":1:greeting") == b"hello"
    assert 0 < django_redis_client.ttl(":1:greeting") <= 300
    # the server of that address, seen by a client made for it, in db 2 as the URL says
    assert fakekey.FakeRedis.from_url(location).get(":1:greeting") == b"hello"
    django_pool.disconnect()
    django_redis_pool.disconnect()


def test_celery_style_pool_kwargs_with_fake_connection(address):
    """Celery's redis transport and result backend pass `connection_class` in the pool's
    keyword arguments; a blocking list pop is how its workers wait."""
    pool = redis.ConnectionPool(connection_class=fakekey.FakeConnection, host=address, port=6379, db=0)
    broker = redis.Redis(connection_pool=pool)
    broker.lpush("celery", "task-1")
    assert fakekey.FakeRedis(host=address, port=6379).brpop("celery", timeout=1) == (b"celery", b"task-1")
    pool.disconnect()


# --- rq ---------------------------------------------------------------------------------


def add(a, b):
    return a + b


def test_an_rq_queue_and_worker_on_fake_redis(address):
    rq = pytest.importorskip("rq")
    connection = fakekey.FakeRedis(host=address, port=6379)
    queue = rq.Queue("default", connection=connection)
    job = queue.enqueue(add, 2, 3)
    assert queue.count == 1
    worker = rq.SimpleWorker([queue], connection=fakekey.FakeRedis(host=address, port=6379))
    assert worker.work(burst=True) is True
    job.refresh()
    assert job.get_status() == rq.job.JobStatus.FINISHED
    assert job.return_value() == 5
    assert queue.count == 0


# --- asyncio ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_async_clients_share_by_address_with_sync_ones(address):
    fakekey.FakeRedis(host=address, port=6379).set("k", "v")
    r = fakekey.FakeAsyncRedis.from_url(f"redis://{address}:6379/0", decode_responses=True)
    assert await r.get("k") == "v"
    await r.aclose()


@pytest.mark.asyncio
async def test_the_aioredis_names(address):
    import fakekey.aioredis

    r = fakekey.aioredis.FakeRedis(host=address, port=6379)
    assert isinstance(r, redis.asyncio.Redis)
    await r.set("k", "v")
    pool = redis.asyncio.ConnectionPool(connection_class=fakekey.aioredis.FakeConnection, host=address, port=6379)
    other = redis.asyncio.Redis(connection_pool=pool)
    assert await other.get("k") == b"v"
    await other.aclose()
    await pool.disconnect()
    await r.aclose()


@pytest.mark.asyncio
async def test_the_fastapi_override_pattern():
    async with fakekey.FakeAsyncRedis() as client:
        await client.set("foo", "bar")
        assert await client.keys() == [b"foo"]


# --- version=, server_type=, lua_modules= -----------------------------------------------


def test_version_6_has_no_functions_and_no_later_options():
    r = fakekey.FakeStrictRedis(version=6)
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'function'"):
        r.function_list()
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'getdel'"):
        r.getdel("k")  # 6.2
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.set("k", "v", get=True)  # SET's GET came in 6.2
    assert r.set("k", "GET") is True  # a value is no option
    assert r.set("k", "v", keepttl=True) is True  # 6.0: there
    r.close()


def test_hash_field_ttl_commands_from_redis_7_4():
    older = fakekey.FakeRedis(version=(7, 2))
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'hexpire'"):
        older.hexpire("h", 10, "f")
    newer = fakekey.FakeRedis(version="7.4")
    newer.hset("h", "f", "v")
    assert newer.hexpire("h", 10, "f") == [1]
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'hgetex'"):
        newer.execute_command("HGETEX", "h", "FIELDS", "1", "f")  # Redis 8.0
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'commandlog'"):
        newer.execute_command("COMMANDLOG", "LEN", "slow")  # Valkey's own
    valkey_8 = fakekey.FakeRedis(version=8, server_type="valkey")
    with pytest.raises(redis.ResponseError, match="(?i)unknown command 'hexpire'"):
        valkey_8.hexpire("h", 10, "f")  # Valkey 9.0
    with pytest.raises(redis.ResponseError, match="No matching script"):
        valkey_8.execute_command("SCRIPT", "SHOW", "0" * 40)  # Valkey 8.0's
    valkey_7 = fakekey.FakeRedis(version=7, server_type="valkey")
    with pytest.raises(redis.ResponseError, match="(?i)unknown subcommand 'show'"):
        valkey_7.execute_command("SCRIPT", "SHOW", "0" * 40)


def test_info_and_hello_report_the_version_and_server_type():
    redis_7 = fakekey.FakeRedis(version=(7, 4), decode_responses=True, protocol=3)
    info = redis_7.info("server")
    assert str(info["redis_version"]) == "7.4.0"
    assert "server_name" not in info and "valkey_version" not in info
    assert redis_7.fake_server.server_type == "redis"
    assert redis_7.fake_server.version == (7, 4, 0)
    hello = redis_7.execute_command("HELLO", 3)
    assert (hello["server"], hello["version"]) == ("redis", "7.4.0")
    valkey_8 = fakekey.FakeRedis(version="8.1", server_type="valkey", decode_responses=True)
    info = valkey_8.info("server")
    assert (info["server_name"], str(info["valkey_version"])) == ("valkey", "8.1.0")
    plain = fakekey.FakeRedis(decode_responses=True).info("server")
    assert (plain["server_name"], plain["valkey_version"]) == ("valkey", fakekey.VALKEY_VERSION)


def test_a_version_without_a_server_type_is_a_redis_version():
    assert fakekey.FakeServer(version=7).server_type == "redis"
    assert fakekey.FakeServer().server_type == "valkey" and fakekey.FakeServer().version is None
    with pytest.raises(ValueError, match="not a server version"):
        fakekey.FakeServer(version="seven")


def test_lua_modules():
    assert fakekey.FakeRedis(lua_modules=None).ping() is True
    r = fakekey.FakeRedis(lua_modules=set())
    assert r.eval("return cjson.encode({1})", 0) == b"[1]"
    assert fakekey.FakeRedis(lua_modules={"cjson", "/usr/lib/lua/5.1/cmsgpack.so"}).ping() is True
    with pytest.raises(ValueError, match="'nosuchmod'"):
        fakekey.FakeRedis(lua_modules={"nosuchmod"})


# --- redis.log ---------------------------------------------------------------------------


def test_redis_log_goes_to_pythons_logging(caplog):
    r = fakekey.FakeRedis()
    script = ("redis.log(redis.LOG_DEBUG, 'd') redis.log(redis.LOG_VERBOSE, 'v') "
              "redis.log(redis.LOG_NOTICE, 'n') redis.log(redis.LOG_WARNING, 'w', 'two')")
    with caplog.at_level(logging.DEBUG, logger="fakekey"):
        r.eval(script, 0)
        r.function_load("#!lua name=lib\nredis.register_function('f', function() "
                        "redis.log(redis.LOG_WARNING, 'from a function') end)")
        r.fcall("f", 0)
    lines = [(rec.name, rec.levelno, rec.getMessage()) for rec in caplog.records if rec.name == "fakekey"]
    assert lines == [("fakekey", logging.DEBUG, "d"), ("fakekey", logging.INFO, "v"),
                     ("fakekey", logging.INFO, "n"), ("fakekey", logging.WARNING, "w two"),
                     ("fakekey", logging.WARNING, "from a function")]


# --- TcpFakeServer and the public names ---------------------------------------------------


def test_tcp_fake_server_as_fakeredis_docs_start_it():
    server = fakekey.TcpFakeServer(("127.0.0.1", 0), server_type="redis")
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        host, port = server.server_address
        r = redis.Redis(host=host, port=port)
        r.set("foo", "bar")
        assert r.get("foo") == b"bar"
        assert fakekey.FakeRedis(host=host, port=port, version=(8, 0)).get("foo") == b"bar"
        r.close()
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)
    assert not t.is_alive()


def test_every_public_name_of_fakeredis():
    import fakekey.aioredis

    names = ("FakeServer", "FakeRedis", "FakeStrictRedis", "FakeAsyncRedis", "FakeValkey", "FakeStrictValkey",
             "FakeAsyncValkey", "FakeConnection", "FakeAsyncConnection", "TcpFakeServer")
    assert all(getattr(fakekey, name) is not None for name in names)
    assert fakekey.FakeStrictRedis is fakekey.FakeRedis
    assert fakekey.FakeStrictValkey is fakekey.FakeValkey
    assert fakekey.aioredis.FakeRedis is fakekey.FakeAsyncRedis
    assert fakekey.aioredis.FakeConnection is fakekey.FakeAsyncConnection
    assert issubclass(fakekey.FakeConnection, redis.connection.Connection)
