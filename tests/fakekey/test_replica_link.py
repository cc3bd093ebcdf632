"""fakekey as a replica of a real valkey-server (REPLICAOF host port, net/replica_link.py).

A real primary, fakekey following it (in process), and where the comparison matters a
real Valkey replica of the same primary beside it: the data after a mixed workload, WAIT,
READONLY, INFO replication's replica lines and ROLE, a partial resync after the link is
killed, REPLICAOF NO ONE, expired keys left for the primary's DEL; and a fake primary (a
raw socket server here) whose garbage, bad RDB files, huge lengths and cut transfers
leave fakekey's data as it was."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from fakekey import Server
from fakekey.emq import Queue
from fakekey.testing.raw import RawClient
from fakekey.testing.servers import RunningServer, TargetSkip, start_valkey
from fakekey.testing.targets import find_valkey_binary

pytestmark = pytest.mark.skipif(find_valkey_binary() is None, reason="no valkey-server")

DEADLINE = 10.0  # s: the most any asynchronous outcome is waited for


def until(check: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """Poll `check` until it answers something true; fail past the deadline."""
    end = time.monotonic() + deadline
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


# --- servers --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def primary() -> Iterator[RunningServer]:
    try:
        running = start_valkey({"repl-diskless-sync-delay": 0})
    except TargetSkip as skip:
        pytest.skip(str(skip))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def p(primary: RunningServer) -> Iterator[redis.Redis]:
    client = redis.Redis(port=primary.port)
    client.flushall()
    client.function_flush()
    yield client
    client.close()


def linked(client: redis.Redis) -> bool:
    return client.info("replication").get("master_link_status") == "up"


@pytest.fixture
def fake(primary: RunningServer) -> Iterator[redis.Redis]:
    """fakekey in process, a replica of the primary from its start (--replicaof)."""
    with Server(replicaof=f"127.0.0.1 {primary.port}") as server:
        client = redis.Redis(port=server.port)
        until(lambda: linked(client), "fakekey's link up")
        yield client
        client.close()


@pytest.fixture
def real(primary: RunningServer) -> Iterator[redis.Redis]:
    """A real Valkey replica of the same primary: the reference."""
    running = start_valkey({"replicaof": f"127.0.0.1 {primary.port}"})
    try:
        client = redis.Redis(port=running.port)
        until(lambda: linked(client), "the Valkey replica's link up")
        yield client
        client.close()
    finally:
        running.stop()


def caught_up(p: redis.Redis, *replicas: redis.Redis) -> None:
    """WAIT for every replica, then each one's offset is the primary's."""
    assert p.wait(len(replicas), 5000) == len(replicas)
    offset = p.info("replication")["master_repl_offset"]
    for replica in replicas:
        until(lambda r=replica: r.info("replication")["slave_repl_offset"] >= offset,
              "the replica's offset")


# --- the data -------------------------------------------------------------------------------


def workload(p: redis.Redis, port: int) -> None:
    """Every type and encoding, expiries, scripts, functions, a transaction, SPOP, a
    consumer group, a served blocking pop, an EMQ queue (its scripts) and a second
    database."""
    p.set("s:int", 12345)
    p.set("s:emb", "hello")
    p.set("s:raw", "x" * 100)
    p.append("s:raw", "y")
    p.incrbyfloat("s:float", 1.5)
    p.set("s:ex", "v", ex=1000)
    p.set("s:px", "v", px=500_000)
    p.expire("s:int", 2000)
    p.setbit("bits", 100, 1)
    p.pfadd("hll", "a", "b", "c")
    p.rpush("l:small", 1, 2, 3)
    p.rpush("l:big", *[str(i) * 20 for i in range(200)])
    p.hset("h:small", mapping={"a": 1, "b": 2})
    p.hincrbyfloat("h:small", "c", 2.5)
    p.hset("h:big", mapping={f"f{i}": "v" * 70 for i in range(200)})
    p.hset("h:ttl", mapping={"a": 1, "b": 2})
    p.execute_command("HEXPIRE", "h:ttl", 1000, "FIELDS", 1, "a")
    p.sadd("set:int", 1, 2, 3)
    p.sadd("set:lp", "a", "b")
    p.sadd("set:ht", *[f"m{i}" for i in range(300)])
    p.spop("set:ht", 5)
    p.zadd("z:small", {"a": 1, "b": 2.5})
    p.zadd("z:big", {f"m{i}": i for i in range(200)})
    p.geoadd("geo", (13.361389, 38.115556, "Palermo"))
    for i in range(3):
        p.xadd("st", {"f": str(i)})
    p.xgroup_create("st", "g", id="0")
    p.xreadgroup("g", "c1", {"st": ">"}, count=2)
    p.eval("redis.call('set', KEYS[1], ARGV[1]); return redis.call('incr', KEYS[2])", 2,
           "lua:a", "lua:n", "x")
    p.function_load("#!lua name=lib\nredis.register_function('setf', function(keys, args) "
                    "return redis.call('set', keys[1], args[1]) end)")
    p.fcall("setf", 1, "fn:a", "y")
    tx = p.pipeline(transaction=True)
    tx.set("tx:a", 1).incr("tx:a").lpush("tx:l", "q")
    tx.execute()
    served_blocking_pop(p, port)
    emq_cycle(p)
    other = redis.Redis(port=port, db=3)
    other.set("db3:k", "v", px=300_000)
    other.close()


def emq_cycle(p: redis.Redis) -> None:
    """An EMQ queue on the real primary, by the wire-4 scripts Valkey runs (it has no EMQ
    module): enqueued, one job claimed and completed, one failed back, one left waiting."""
    queue = Queue(p, "rq", wire=4)
    for i in range(3):
        queue.enqueue(f"JOB{i}", f"payload {i}")
    done = queue.claim(60_000)
    assert done is not None
    queue.complete(done.id, done.fence)
    failed = queue.claim(60_000)
    assert failed is not None
    queue.fail(failed.id, failed.fence, "try again", backoff_ms=500_000)


def served_blocking_pop(p: redis.Redis, port: int) -> None:
    popped: list[Any] = []
    waiter = redis.Redis(port=port)
    thread = threading.Thread(target=lambda: popped.append(waiter.blpop(["bl"], 5)))
    thread.start()
    until(lambda: p.info("clients")["blocked_clients"] == 1, "the BLPOP blocked")
    p.rpush("bl", "a", "b")
    thread.join(5)
    waiter.close()
    assert popped == [(b"bl", b"a")]


def snapshot(client: redis.Redis, db: int) -> dict[bytes, tuple[Any, ...]]:
    """Each key of one database: its type, value (DUMP's bytes) and TTL."""
    client.execute_command("SELECT", db)
    out = {}
    for key in client.keys("*"):
        kind = client.type(key)
        value = (client.object("encoding", key), VALUE_OF[kind](client, key))
        out[key] = (kind, value, client.pttl(key))
    client.execute_command("SELECT", 0)
    return out


def stream_value(client: redis.Redis, key: bytes) -> tuple[Any, ...]:
    """A stream's entries, groups and pending entries (its DUMP holds times of delivery
    and of consumers' activity, which a replica sets from the commands it runs)."""
    groups = [(g["name"], g["consumers"], g["pending"], g["last-delivered-id"], g["entries-read"])
              for g in client.xinfo_groups(key)]
    pending = [(e["message_id"], e["consumer"], e["times_delivered"])
               for g in client.xinfo_groups(key)
               for e in client.xpending_range(key, g["name"], "-", "+", 100)]
    return client.xrange(key), groups, pending


def field_ttls(client: redis.Redis, key: bytes) -> list[bool]:
    """Which fields of a hash have a deadline (HEXPIRE's)."""
    fields = client.hkeys(key)
    return [ttl >= 0 for ttl in client.execute_command("HPTTL", key, "FIELDS", len(fields), *fields)]


VALUE_OF: dict[bytes, Callable[[redis.Redis, bytes], Any]] = {
    b"string": lambda c, k: c.dump(k),  # the same bytes: integers, embstr, raw, HLL, bits
    b"list": lambda c, k: c.lrange(k, 0, -1),
    b"hash": lambda c, k: (c.hgetall(k), field_ttls(c, k)),
    b"set": lambda c, k: c.smembers(k),
    b"zset": lambda c, k: c.zrange(k, 0, -1, withscores=True),
    b"stream": stream_value,
}


def same_data(expected: dict[bytes, tuple[Any, ...]], got: dict[bytes, tuple[Any, ...]]) -> None:
    assert sorted(got) == sorted(expected)
    for key, (kind, dump, ttl) in expected.items():
        got_kind, got_dump, got_ttl = got[key]
        assert (key, got_kind) == (key, kind)
        assert (key, got_dump) == (key, dump)
        assert (ttl == -1) == (got_ttl == -1), key
        assert abs(got_ttl - ttl) < 5000, key


def test_a_workload_on_the_primary_reaches_fakekey(p: redis.Redis, primary: RunningServer,
                                                   fake: redis.Redis) -> None:
    p.set("before", "the sync")  # after the sync: the stream
    workload(p, primary.port)
    caught_up(p, fake)
    for db in (0, 3):
        primary_data = snapshot(redis.Redis(port=primary.port), db)
        same_data(primary_data, snapshot(fake, db))
    assert fake.function_list(withcode=True) == p.function_list(withcode=True)  # FUNCTION LOAD


def test_the_rdb_of_a_full_sync_is_loaded(p: redis.Redis, primary: RunningServer) -> None:
    """The workload before the replicas exist: it comes in the RDB file, to fakekey as to
    a real Valkey replica (the reference for what loading leaves: encodings too)."""
    workload(p, primary.port)
    with Server() as server:
        client = redis.Redis(port=server.port)
        client.set("old", "data")  # a full sync replaces it
        client.execute_command("REPLICAOF", "127.0.0.1", primary.port)
        real = start_valkey({"replicaof": f"127.0.0.1 {primary.port}"})
        try:
            reference = redis.Redis(port=real.port)
            until(lambda: linked(client) and linked(reference), "the links up")
            caught_up(p, client, reference)
            for db in (0, 3):
                same_data(snapshot(reference, db), snapshot(client, db))
            assert client.function_list(withcode=True) == p.function_list(withcode=True)
            reference.close()
        finally:
            real.stop()
        client.close()


def test_wait_counts_fakekey(p: redis.Redis, fake: redis.Redis) -> None:
    p.set("k", "v")
    assert p.wait(1, 1000) == 1
    assert fake.get("k") == b"v"


def test_writes_are_refused_on_a_replica(fake: redis.Redis, real: redis.Redis) -> None:
    for replica in (fake, real):
        with pytest.raises(redis.ReadOnlyError, match="You can't write against a read only replica."):
            replica.set("k", "v")
        with pytest.raises(redis.ReadOnlyError, match="You can't write against a read only "
                           "replica. script: on @user_script:1."):
            replica.eval("return redis.call('set', 'k', 'v')", 0)
        with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
            replica.wait(1, 10)
    fake.config_set("replica-read-only", "no")
    assert fake.set("k", "local") is True


def replica_lines(client: redis.Redis) -> list[str]:
    """INFO replication from role to replica_announced, the seconds since the last
    message from the primary normalised (0 or 1 by timing)."""
    port = client.connection_pool.connection_kwargs["port"]
    with RawClient("127.0.0.1", port) as raw:
        text = raw.call("INFO", "replication")[1].decode()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    end = next(i for i, line in enumerate(lines) if line.startswith("replica_announced:"))
    shown = lines[: end + 1]
    return ["master_last_io_seconds_ago:>=0" if line.startswith("master_last_io_seconds_ago:")
            and not line.endswith(":-1") else line for line in shown]


def test_info_replication_and_role_as_a_real_replica(p: redis.Redis, fake: redis.Redis,
                                                     real: redis.Redis) -> None:
    p.set("k", "v")
    caught_up(p, fake, real)
    until(lambda: replica_lines(fake) == replica_lines(real), "the same INFO lines")
    until(lambda: fake.execute_command("ROLE") == real.execute_command("ROLE"), "the same ROLE")
    assert fake.execute_command("ROLE")[3] == b"connected"
    assert fake.config_get("replicaof") == real.config_get("replicaof")
    # the same primary again: nothing to do
    port = p.connection_pool.connection_kwargs["port"]
    for replica in (fake, real):
        assert replica.execute_command("REPLICAOF", "127.0.0.1", port) == \
            b"OK Already connected to specified master"
    # a primary that cannot be reached: link down, trying again
    closed = free_closed_port()
    for replica in (fake, real):
        assert replica.execute_command("REPLICAOF", "127.0.0.1", closed) == b"OK"
    until(lambda: fake.execute_command("ROLE") == real.execute_command("ROLE"), "the same ROLE, down")
    assert fake.execute_command("ROLE")[3] in (b"connect", b"connecting")
    try:
        until(lambda: replica_lines(fake) == replica_lines(real), "the same INFO lines, down")
    except AssertionError:
        assert replica_lines(fake) == replica_lines(real)
    for replica in (fake, real):  # stale data: served, unless replica-serve-stale-data no
        assert replica.get("k") == b"v"
        replica.config_set("replica-serve-stale-data", "no")
        with RawClient("127.0.0.1", replica.connection_pool.connection_kwargs["port"]) as raw:
            assert raw.call("GET", "k") == ("-", b"MASTERDOWN Link with MASTER is down and "
                                            b"replica-serve-stale-data is set to 'no'.")
        assert replica.info("replication")["role"] == "slave"  # INFO is flagged stale


def free_closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_replicaof_no_one_promotes_as_valkey(p: redis.Redis, fake: redis.Redis,
                                             real: redis.Redis) -> None:
    p.set("k", "v")
    caught_up(p, fake, real)
    primary_replid = p.info("replication")["master_replid"]
    infos = []
    for replica in (fake, real):
        assert replica.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        info = replica.info("replication")
        infos.append({name: info[name] for name in ("role", "master_replid2", "master_repl_offset",
                                                    "second_repl_offset")})
        assert info["master_replid"] != primary_replid
        assert replica.get("k") == b"v"  # the data stays
        assert replica.set("w", "1") is True  # a primary takes writes
        assert replica.execute_command("ROLE")[0] == b"master"
    assert infos[0] == infos[1]
    assert infos[0]["master_replid2"] == primary_replid


def test_a_killed_link_resumes_with_a_partial_resync(p: redis.Redis, fake: redis.Redis) -> None:
    p.set("k", "1")
    caught_up(p, fake)
    before = p.info("stats")
    p.execute_command("CLIENT", "KILL", "TYPE", "replica")
    until(lambda: p.info("stats")["sync_partial_ok"] > before["sync_partial_ok"], "a partial resync")
    assert p.info("stats")["sync_full"] == before["sync_full"]
    until(lambda: linked(fake), "the link up again")
    p.incr("k")
    caught_up(p, fake)
    assert fake.get("k") == b"2"


def test_expired_keys_wait_for_the_primarys_del(p: redis.Redis, fake: redis.Redis,
                                                real: redis.Redis) -> None:
    p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        p.set("short", "v", px=100)
        caught_up(p, fake, real)
        for replica in (fake, real):  # gone to readers, still stored
            until(lambda r=replica: r.get("short") is None, "the key expired")
            assert replica.exists("short") == 0
            assert replica.dbsize() == 1
        assert p.get("short") is None  # the primary expires it: DEL goes to its replicas
        caught_up(p, fake, real)
        assert fake.dbsize() == real.dbsize() == 0
    finally:
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


# --- a fake primary --------------------------------------------------------------------------


def rdb_of(primary: RunningServer) -> bytes:
    """A real RDB file of the primary's data: what SYNC sends (diskless: EOF-marked)."""
    with socket.create_connection(("127.0.0.1", primary.port), timeout=5) as sock:
        sock.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n")
        data = b""
        while not data.endswith(b"+OK\r\n"):
            data += sock.recv(100)
        sock.sendall(b"*1\r\n$4\r\nSYNC\r\n")
        data = b""
        while True:
            data += sock.recv(65536)
            data = data.lstrip(b"\n")
            if b"\r\n" in data and data.startswith(b"$EOF:"):
                header, _, body = data.partition(b"\r\n")
                mark = header[5:]
                if body.endswith(mark):
                    return body[: -len(mark)]


class FakePrimary:
    """A raw socket server that plays one scripted session per connection: it answers
    the handshake (+OK to all), then sends what the session says, and hangs up (or, with
    `hold`, keeps the connection until closed)."""

    def __init__(self, sessions: list[bytes], hold: bool = False) -> None:
        self.sessions = sessions
        self.hold = hold
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.served = 0  # sessions played to their end
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        taken = 0
        while not self.done.is_set() and taken < len(self.sessions):
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._play, args=(conn, self.sessions[taken]), daemon=True)
            taken += 1
            self.threads.append(thread)
            thread.start()
        self.sock.close()

    def _play(self, conn: socket.socket, then: bytes) -> None:
        with conn, contextlib.suppress(OSError):  # the replica hung up: the session is over
            conn.settimeout(5)
            received = b""
            while b"PSYNC" not in received:  # PING, REPLCONF..., PSYNC
                chunk = conn.recv(4096)
                if not chunk:
                    return
                received += chunk
                conn.sendall(b"+OK\r\n" * (chunk.count(b"*") - chunk.count(b"PSYNC")))
            conn.sendall(then)
            if self.hold:
                self.done.wait(DEADLINE)
            else:
                time.sleep(0.1)  # let the replica read it all before the connection closes
        self.served += 1

    def close(self) -> None:
        self.done.set()
        for thread in self.threads:
            thread.join(5)


def test_a_bad_primary_never_harms_the_data(primary: RunningServer, p: redis.Redis) -> None:
    p.set("kept", "from the first sync")
    good = rdb_of(primary)
    replid = b"a" * 40
    full = b"+FULLRESYNC " + replid + b" 0\r\n"
    corrupt = bytearray(good)
    corrupt[len(corrupt) // 2] ^= 0xFF
    sessions = [
        full + b"$%d\r\n" % len(good) + good + b"*1\r\n$4\r\nPING\r\n*zz\r\n",  # then garbage
        b"+WHAT IS THIS\r\n",  # garbage for PSYNC's answer
        full + b"$%d\r\n" % len(corrupt) + bytes(corrupt),  # a bad RDB file
        full + b"$1099511627776\r\n" + good,  # 2^40 bytes claimed
        full + b"$%d\r\n" % len(good) + good[:20],  # a cut transfer
    ]
    fake_primary = FakePrimary(sessions)
    try:
        with Server() as server:
            client = redis.Redis(port=server.port)
            client.execute_command("REPLICAOF", "127.0.0.1", fake_primary.port)
            until(lambda: client.get("kept") == b"from the first sync", "the first sync")
            until(lambda: fake_primary.served == len(sessions), "every session tried", 15)
            until(lambda: client.execute_command("ROLE")[3] != b"connected", "the link down")
            assert client.keys("*") == [b"kept"]  # intact, never half-loaded
            info = client.info("replication")
            assert info["master_link_status"] == "down"
            assert info["master_replid"] == replid.decode()
            assert info["slave_repl_offset"] == 14  # the PING's bytes, not the garbage
            client.close()
    finally:
        fake_primary.close()


# --- becoming a replica -------------------------------------------------------------------------


def test_blocked_clients_are_unblocked_as_the_server_becomes_a_replica(
        primary: RunningServer) -> None:
    other = start_valkey({})
    try:
        with Server() as server:
            for port in (other.port, server.port):
                client = redis.Redis(port=port)
                popped: list[Any] = []

                def pop(port: int = port, popped: list[Any] = popped) -> None:
                    waiter = redis.Redis(port=port)
                    try:
                        popped.append(waiter.blpop(["x"], 5))
                    except redis.ResponseError as err:
                        popped.append(str(err))
                    waiter.close()

                thread = threading.Thread(target=pop)
                thread.start()
                until(lambda c=client: c.info("clients")["blocked_clients"] == 1, "BLPOP blocked")
                client.execute_command("REPLICAOF", "127.0.0.1", primary.port)
                thread.join(5)
                assert popped == ["UNBLOCKED force unblock from blocking operation, instance "
                                  "state changed (master -> replica?)"]
                assert client.info("errorstats")["errorstat_UNBLOCKED"] == {"count": 1}
                client.close()
    finally:
        other.stop()


def test_a_password_protected_primary(primary: RunningServer) -> None:
    guarded = start_valkey({"requirepass": "secret", "repl-diskless-sync-delay": 0})
    try:
        p = redis.Redis(port=guarded.port, password="secret")
        p.set("k", "v")
        with Server(replicaof=f"127.0.0.1 {guarded.port}", masterauth="wrong") as server:
            client = redis.Redis(port=server.port)
            until(lambda: client.execute_command("ROLE")[3] in (b"connect", b"handshake"),
                  "a refused handshake")
            assert not linked(client) and client.dbsize() == 0
            client.config_set("masterauth", "secret")  # the next try authenticates
            until(lambda: linked(client), "the link up")
            caught_up(p, client)
            assert client.get("k") == b"v"
            client.close()
        p.close()
    finally:
        guarded.stop()


def test_a_replica_neither_evicts_nor_refuses_for_maxmemory(p: redis.Redis) -> None:
    port = p.connection_pool.connection_kwargs["port"]
    with Server(replicaof=f"127.0.0.1 {port}", maxmemory="2mb",
                maxmemory_policy="allkeys-lru") as server:
        client = redis.Redis(port=server.port)
        until(lambda: linked(client), "the link up")
        for i in range(40):
            p.set(f"big:{i}", "x" * 100_000)  # 4 MB: past the replica's maxmemory
        caught_up(p, client)
        assert client.dbsize() == 40
        assert client.info("stats")["evicted_keys"] == 0
        assert client.get("big:0") == b"x" * 100_000  # reads are not refused either
        client.close()


def test_info_and_role_during_a_transfer_as_a_real_replica() -> None:
    """A full sync under way (a 1000-byte file, 100 bytes of it sent): the same lines."""
    transfer = b"+FULLRESYNC " + b"b" * 40 + b" 100\r\n$1000\r\nREDIS0011" + b"x" * 91
    fake_primary = FakePrimary([transfer, transfer], hold=True)
    try:
        real = start_valkey({"replicaof": f"127.0.0.1 {fake_primary.port}"})
        try:
            with Server(replicaof=f"127.0.0.1 {fake_primary.port}") as server:
                fake, reference = redis.Redis(port=server.port), redis.Redis(port=real.port)
                for replica in (fake, reference):
                    until(lambda r=replica: r.execute_command("ROLE")[3] == b"sync", "the transfer")
                until(lambda: replica_lines(fake) == replica_lines(reference), "the same INFO lines")
                assert "master_sync_in_progress:1" in replica_lines(fake)
                assert fake.execute_command("ROLE") == reference.execute_command("ROLE")
                fake.close()
                reference.close()
        finally:
            real.stop()
    finally:
        fake_primary.close()


def test_waitaof_counts_a_replica_with_its_append_only_log(p: redis.Redis, tmp_path: Any) -> None:
    port = p.connection_pool.connection_kwargs["port"]
    with Server(replicaof=f"127.0.0.1 {port}", appendonly="yes", dir=str(tmp_path)) as server:
        client = redis.Redis(port=server.port)
        until(lambda: linked(client), "the link up")
        p.set("k", "v")
        assert p.execute_command("WAITAOF", 0, 1, 5000) == [0, 1]  # REPLCONF ACK ... FACK
        assert client.get("k") == b"v"
        client.close()
