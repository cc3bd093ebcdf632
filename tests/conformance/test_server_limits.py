"""Limits that keep the server alive, on both targets: client-output-buffer-limit (a
client that never reads is dropped past its class's limit; with no limit it keeps its
connection and gets every reply once it reads), maxmemory (OOM errors under noeviction,
eviction under the other policies), timeout, and commands that would allocate without
bound."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import Target

MB = 1 << 20
OOM = b"OOM command not allowed when used memory > 'maxmemory'."
SETTINGS = ("client-output-buffer-limit", "maxmemory", "maxmemory-policy", "timeout",
            "proto-max-bulk-len", "maxmemory-samples")


@pytest.fixture
def admin(target: Target) -> Iterator[RawClient]:
    """A RESP2 client; the settings a test changes are put back after it."""
    with target.raw(2) as client:
        saved = {name: client.call("CONFIG", "GET", name)[1][1][1] for name in SETTINGS}
        try:
            yield client
        finally:
            with target.raw(2) as restorer:  # the test's client may have been closed
                restorer.call("CONFIG", "SET", "maxmemory", "0")  # first: the rest may need memory
                for name, value in saved.items():
                    restorer.call("CONFIG", "SET", name, value)


def stat(client: RawClient, section: str, field: str) -> int:
    text = client.call("INFO", section)[1].decode()
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    raise AssertionError(f"no {field} in INFO {section}")


def client_count(client: RawClient) -> int:
    return stat(client, "clients", "connected_clients")


def wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def slow_reader(target: Target) -> socket.socket:
    """A connection with a small receive window: what it does not read stays with the server."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((target.host, target.port))
    return sock


def read_exactly(sock: socket.socket, size: int, seconds: float = 30.0) -> int:
    """Read until `size` bytes came (or the connection closed); the count read."""
    sock.settimeout(seconds)
    got = 0
    while got < size:
        chunk = sock.recv(4 * MB)
        if not chunk:
            break
        got += len(chunk)
    return got


# --- client-output-buffer-limit -----------------------------------------------------------


def test_a_client_that_never_reads_is_dropped_past_the_normal_hard_limit(target, admin):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 10mb 0 0") == ("+", b"OK")
    admin.call("SET", "big", "x" * MB)
    dropped = stat(admin, "stats", "client_output_buffer_limit_disconnections")
    clients = client_count(admin)
    with slow_reader(target) as sock:
        sock.sendall(b"GET big\r\n" * 100)  # 100 MB of replies it never reads
        assert wait_for(lambda: stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped + 1)
        assert wait_for(lambda: client_count(admin) == clients)
    assert admin.call("PING") == ("+", b"PONG")


def test_without_a_normal_limit_a_client_that_reads_late_gets_every_reply(target, admin):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 0 0") == ("+", b"OK")
    admin.call("SET", "big", "x" * MB)
    dropped = stat(admin, "stats", "client_output_buffer_limit_disconnections")
    with slow_reader(target) as sock:
        sock.sendall(b"GET big\r\n" * 60 + b"PING\r\n")
        time.sleep(0.5)
        assert stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped
        reply = b"$%d\r\n%s\r\n" % (MB, b"x" * MB)
        assert read_exactly(sock, 60 * len(reply) + 7) == 60 * len(reply) + 7
    assert stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped


def test_a_normal_client_over_its_soft_limit_for_longer_than_its_seconds_is_dropped(target, admin):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "normal 0 4mb 1") == ("+", b"OK")
    admin.call("SET", "big", "x" * 10_000)  # small: Valkey copies it into the buffer
    dropped = stat(admin, "stats", "client_output_buffer_limit_disconnections")
    started = time.monotonic()
    with slow_reader(target) as sock:
        try:
            while time.monotonic() - started < 10:
                sock.sendall(b"GET big\r\n" * 100)  # the limit is looked at as replies are added
                if stat(admin, "stats", "client_output_buffer_limit_disconnections") > dropped:
                    break
                time.sleep(0.05)
        except OSError:  # the server closed it while we were sending
            pass
    assert wait_for(lambda: stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped + 1)
    assert time.monotonic() - started > 1  # not at once: after the soft limit's seconds


def test_a_subscriber_over_the_pubsub_soft_limit_for_its_seconds_is_dropped(target, admin):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 0 2mb 1") == ("+", b"OK")
    dropped = stat(admin, "stats", "client_output_buffer_limit_disconnections")
    with slow_reader(target) as sock:
        sock.sendall(b"SUBSCRIBE ch\r\n")
        assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 1))
        started = time.monotonic()
        while time.monotonic() - started < 15:
            for _ in range(40):
                admin.call("PUBLISH", "ch", "x" * 10_000)
            if stat(admin, "stats", "client_output_buffer_limit_disconnections") > dropped:
                break
            time.sleep(0.05)
        assert stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped + 1
        assert time.monotonic() - started > 1
    assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 0))


def test_a_subscriber_past_the_pubsub_hard_limit_is_dropped(target, admin):
    assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 4mb 0 0") == ("+", b"OK")
    dropped = stat(admin, "stats", "client_output_buffer_limit_disconnections")
    with slow_reader(target) as sock:
        sock.sendall(b"SUBSCRIBE ch\r\n")
        assert wait_for(lambda: admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 1))
        for _ in range(1500):  # 15 MB
            admin.call("PUBLISH", "ch", "x" * 10_000)
        assert wait_for(lambda: stat(admin, "stats", "client_output_buffer_limit_disconnections") == dropped + 1)
    assert admin.call("PUBSUB", "NUMSUB", "ch")[1][1] == (":", 0)


# --- maxmemory ----------------------------------------------------------------------------------


def fill(admin: RawClient, policy: str, count: int = 60, volatile_every: int = 0) -> list[tuple]:
    """maxmemory 2 MB above the memory in use now, then `count` 100 KB strings (every
    `volatile_every`-th with a TTL, the nearest first); the replies."""
    assert admin.call("CONFIG", "SET", "maxmemory-policy", policy) == ("+", b"OK")
    settled(admin)
    used = stat(admin, "memory", "used_memory")
    assert admin.call("CONFIG", "SET", "maxmemory", str(used + 2_000_000)) == ("+", b"OK")
    replies = []
    for i in range(count):
        ttl = ("EX", str(1000 + i)) if volatile_every and i % volatile_every == 0 else ()
        replies.append(admin.call("SET", f"k{i}", "x" * 100_000, *ttl))
    return replies


def settled(admin: RawClient) -> None:
    """The previous test's keys freed (Valkey frees a FLUSHALL's in the background)."""
    assert wait_for(lambda: stat(admin, "memory", "lazyfree_pending_objects") == 0)


def out_of_memory(admin: RawClient) -> None:
    """Well past maxmemory under noeviction: every denyoom command is refused."""
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "noeviction") == ("+", b"OK")
    assert admin.call("CONFIG", "SET", "maxmemory", "1") == ("+", b"OK")


def keys_left(admin: RawClient) -> set[str]:
    return {key.decode() for _, key in admin.call("KEYS", "*")[1]}


def test_noeviction_refuses_denyoom_commands_and_runs_the_rest(admin):
    replies = fill(admin, "noeviction")
    assert ("-", OOM) in replies
    stored = replies.index(("-", OOM))
    assert 10 <= stored <= 25  # about 2 MB of 100 KB values
    assert all(reply == ("+", b"OK") for reply in replies[:stored])
    assert all(reply == ("-", OOM) for reply in replies[stored:])
    assert stat(admin, "stats", "evicted_keys") == 0
    out_of_memory(admin)
    assert admin.call("INCR", "counter") == ("-", OOM)  # denyoom
    assert admin.call("GET", "k0") == ("$", b"x" * 100_000)  # reads run
    assert admin.call("EXPIRE", "k0", "100") == (":", 1)  # a write that is not denyoom runs
    assert admin.call("DEL", "k0", "k1", "k2") == (":", 3)


def test_out_of_memory_in_multi_refuses_denyoom_commands_at_queue_time(admin):
    out_of_memory(admin)
    assert admin.call("MULTI") == ("+", b"OK")
    assert admin.call("GET", "k0") == ("+", b"QUEUED")
    assert admin.call("SET", "k0", "v") == ("-", OOM)
    assert admin.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of previous errors.")


def test_exec_of_a_queue_with_denyoom_commands_is_refused_once_out_of_memory(target, admin):
    assert admin.call("MULTI") == ("+", b"OK")
    assert admin.call("SET", "a", "b") == ("+", b"QUEUED")
    with target.raw(2) as other:
        out_of_memory(other)
    assert admin.call("EXEC") == ("-", b"EXECABORT Transaction discarded because of: " + OOM)
    admin.call("CONFIG", "SET", "maxmemory", "0")
    admin.call("SET", "k0", "v")
    out_of_memory(admin)
    assert admin.call("MULTI") == ("+", b"OK")
    assert admin.call("GET", "k0") == ("+", b"QUEUED")
    assert admin.call("EXEC") == ("*", [("$", b"v")])


def test_scripts_out_of_memory_follow_valkey_rules(admin):
    out_of_memory(admin)
    script_oom = OOM + b" script: on @user_script:1."
    assert admin.call("EVAL", "return redis.call('set', 'x', 'y')", "0") == ("-", script_oom)
    assert admin.call("EVAL", "return redis.pcall('set', 'x', 'y')", "0") == ("-", OOM)
    # a script that wrote already may go on: it cannot be stopped half way
    assert admin.call("EVAL", "redis.call('del', 'nokey'); return redis.pcall('set', 'x', 'y')", "0") == (
        "+", b"OK")
    # a shebang makes the script itself denyoom, unless it declares no-writes or allow-oom
    assert admin.call("EVAL", "#!lua\nreturn 1", "0") == ("-", OOM)
    assert admin.call("EVAL", "#!lua flags=no-writes\nreturn 1", "0") == (":", 1)
    assert admin.call("EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', 'y', 'z')", "0") == (
        "+", b"OK")


def test_functions_out_of_memory_are_denyoom_unless_flagged(admin):
    library = ("#!lua name=oomlib\n"
               "server.register_function('plain', function() return 1 end)\n"
               "server.register_function{function_name='ro', callback=function() return 2 end, flags={'no-writes'}}\n"
               "server.register_function{function_name='big', callback=function() "
               "return server.call('set', 'f', 'v') end, flags={'allow-oom'}}\n")
    assert admin.call("FUNCTION", "LOAD", "REPLACE", library) == ("$", b"oomlib")
    try:
        out_of_memory(admin)
        assert admin.call("FCALL", "plain", "0") == ("-", OOM)
        assert admin.call("FCALL", "ro", "0") == (":", 2)
        assert admin.call("FCALL", "big", "0") == ("+", b"OK")
    finally:
        admin.call("CONFIG", "SET", "maxmemory", "0")
        admin.call("FUNCTION", "DELETE", "oomlib")


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_allkeys_policies_evict_to_make_room(admin, policy):
    before = stat(admin, "stats", "evicted_keys")
    replies = fill(admin, policy, count=60)
    assert all(reply == ("+", b"OK") for reply in replies)
    left = keys_left(admin)
    evicted = stat(admin, "stats", "evicted_keys") - before
    assert 10 <= len(left) <= 25
    # every key missing was evicted (one more may go before the INFO that counts them)
    assert 60 - len(left) <= evicted <= 61 - len(left)
    assert stat(admin, "memory", "used_memory") <= int(admin.call("CONFIG", "GET", "maxmemory")[1][1][1])


def idle_for_a_second(admin: RawClient, key: str) -> None:
    """Wait until `key` reads idle (Valkey's LRU clock counts seconds, and its cron moves
    it: on a loaded machine a fixed sleep may end before the clock has ticked)."""
    deadline = time.monotonic() + 10
    time.sleep(1.1)
    while admin.call("OBJECT", "IDLETIME", key) == (":", 0):
        assert time.monotonic() < deadline, f"{key} never read idle"
        time.sleep(0.1)


def test_allkeys_lru_evicts_the_least_recently_used(admin):
    # as many samples as keys: Valkey's approximation then sees every key, so which ones
    # go does not depend on which keys the samples happened to draw
    assert admin.call("CONFIG", "SET", "maxmemory-samples", "64") == ("+", b"OK")
    assert admin.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == ("+", b"OK")
    settled(admin)
    limit = stat(admin, "memory", "used_memory") + 2_000_000
    for i in range(8):
        admin.call("SET", f"old{i}", "x" * 100_000)
    idle_for_a_second(admin, "old7")
    assert admin.call("CONFIG", "SET", "maxmemory", str(limit)) == ("+", b"OK")
    for i in range(20):
        assert admin.call("SET", f"k{i}", "x" * 100_000) == ("+", b"OK")
    left = keys_left(admin)
    assert len({f"old{i}" for i in range(8)} & left) <= 1  # the idle ones went first


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"])
def test_volatile_policies_evict_only_keys_with_a_ttl(admin, policy):
    replies = fill(admin, policy, count=60, volatile_every=2)
    left = keys_left(admin)
    persistent = {f"k{i}" for i in range(1, 60, 2)}
    written = {f"k{i}" for i, reply in enumerate(replies) if reply == ("+", b"OK")}
    assert persistent & written <= left  # no key without a TTL was evicted
    assert ("-", OOM) in replies  # once no volatile key is left: out of memory
    assert stat(admin, "stats", "evicted_keys") > 0


def test_volatile_ttl_evicts_the_nearest_expiry_first(admin):
    fill(admin, "volatile-ttl", count=10)
    assert admin.call("SET", "soon", "x" * 100_000, "EX", "10") == ("+", b"OK")
    assert admin.call("SET", "late", "x" * 100_000, "EX", "100000") == ("+", b"OK")
    for i in range(30):
        admin.call("SET", f"p{i}", "x" * 100_000)
    left = keys_left(admin)
    assert "soon" not in left


def test_eviction_notifies_and_invalidates_watch(target, admin):
    assert admin.call("CONFIG", "SET", "notify-keyspace-events", "Ee") == ("+", b"OK")
    assert admin.call("CONFIG", "SET", "maxmemory-samples", "10") == ("+", b"OK")
    admin.call("SET", "watched", "x" * 100_000)
    idle_for_a_second(admin, "watched")  # the least recently used key
    before = stat(admin, "stats", "evicted_keys")
    with target.raw(2) as watcher, target.raw(2) as listener:
        assert listener.call("SUBSCRIBE", "__keyevent@0__:evicted")[0] == "*"
        assert watcher.call("WATCH", "watched") == ("+", b"OK")
        fill(admin, "allkeys-lru", count=40)
        assert "watched" not in keys_left(admin)
        assert watcher.call("MULTI") == ("+", b"OK")
        assert watcher.call("GET", "k0") == ("+", b"QUEUED")
        assert watcher.call("EXEC") == ("*", None)  # the eviction touched the watched key
        evicted = stat(admin, "stats", "evicted_keys") - before
        messages = [listener.read() for _ in range(evicted)]
        assert ("*", [("$", b"message"), ("$", b"__keyevent@0__:evicted"), ("$", b"watched")]) in messages
        assert all(message[1][1] == ("$", b"__keyevent@0__:evicted") for message in messages)


def test_used_memory_follows_the_keyspace(admin):
    settled(admin)
    before = stat(admin, "memory", "used_memory")
    for i in range(20):
        admin.call("SET", f"m{i}", "x" * 100_000)
    grown = stat(admin, "memory", "used_memory") - before
    assert 2_000_000 <= grown <= 2_600_000
    admin.call("FLUSHALL", "SYNC")
    assert wait_for(lambda: stat(admin, "memory", "used_memory") - before < 200_000)


# --- timeout --------------------------------------------------------------------------------


def test_idle_clients_are_closed_after_timeout_but_not_blocked_or_subscribed_ones(target, admin):
    ids = {}
    with target.raw(2) as idle, target.raw(2) as blocked, target.raw(2) as subscribed, \
            target.raw(2) as in_multi, target.raw(2) as monitor:
        for name, client in (("idle", idle), ("blocked", blocked), ("subscribed", subscribed),
                             ("multi", in_multi), ("monitor", monitor)):
            ids[name] = client.call("CLIENT", "ID")[1]
        assert in_multi.call("MULTI") == ("+", b"OK")
        blocked.send("BLPOP", "nolist", "0")
        subscribed.send("SUBSCRIBE", "ch")
        monitor.send("MONITOR")
        assert admin.call("CONFIG", "SET", "timeout", "1") == ("+", b"OK")
        time.sleep(3.5)
        with target.raw(2) as observer:
            assert observer.call("CONFIG", "SET", "timeout", "0") == ("+", b"OK")
            listed = observer.call("CLIENT", "LIST")[1].decode()
        alive = {int(field[3:]) for field in listed.split() if field.startswith("id=")}
        assert {name for name, cid in ids.items() if cid in alive} == {"blocked", "subscribed", "monitor"}


# --- commands that would allocate without bound ---------------------------------------------


def test_strings_past_proto_max_bulk_len_are_refused(r, admin):
    assert admin.call("CONFIG", "SET", "proto-max-bulk-len", "1mb") == ("+", b"OK")
    too_big = ("-", b"ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    assert r.call("SETRANGE", "s", str(MB), "x") == too_big
    assert r.call("SETRANGE", "s", str(MB - 1), "x") == (":", MB)
    assert r.call("APPEND", "s", "y") == too_big
    assert r.call("SETBIT", "b", str(8 * MB), "1") == ("-", b"ERR bit offset is not an integer or out of range")
    assert r.call("SETBIT", "b", str(8 * MB - 1), "1") == (":", 0)
    assert r.call("BITFIELD", "f", "SET", "u8", str(8 * MB), "1") == (
        "-", b"ERR bit offset is not an integer or out of range")
    assert r.call("SETRANGE", "s2", "536870912", "x") == too_big
    assert r.call("STRLEN", "s") == (":", MB)


def test_string_rep_counts_as_lua_5_1_makes_them(r):
    assert r.call("EVAL", "return #string.rep('x', 2^40)", "0") == (":", 0)  # the C int is 0
    assert r.call("EVAL", "return #string.rep('x', 2^32 + 5)", "0") == (":", 5)
    assert r.call("EVAL", "return #string.rep('ab', -1)", "0") == (":", 0)
    assert r.call("EVAL", "return #string.rep('ab', 3.7)", "0") == (":", 6)
    assert r.call("EVAL", "return ('ab'):rep(2)", "0") == ("$", b"abab")
    assert r.call("EVAL", "return string.rep(12, 2)", "0") == ("$", b"1212")
