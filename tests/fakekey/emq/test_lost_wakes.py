"""The lost-wake detector (spec emq.md 7.5, docs/emq.md "The lost-wake detector"):
FAKEKEY.WAKES, `Server.wakes()`, and the pytest helpers, over real sockets.

A lost wake: a claimable transition of a queue (a flat job entering pending, a group
joining the ring, a resume with pending non-empty) made while a client is parked on the
queue's wake list, by a command, transaction or script that pushes no token there. A wasted
wake: a token popped by a connection that leases nothing before it pops or parks again."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator

import pytest
import redis

from fakekey.core.wakes import LostWake, WakeReport
from fakekey.emq import Queue
from fakekey.emq.scripts import SCRIPTS, run_script
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.wakes import assert_no_lost_wakes, reset_wakes, wake_report

NOW = 1_700_000_000_000  # the clock every test starts from (ms), as conftest.py

pytest_plugins = ["pytester"]

Q = "q"


def key(suffix: str, queue: str = Q) -> str:
    return f"emq:{{{queue}}}:{suffix}"


@pytest.fixture
def r(server: Server) -> Iterator[redis.Redis]:
    """A redis-py client on an empty server, its clock frozen at NOW, the detector emptied."""
    client = redis.Redis(host=server.host, port=server.port, protocol=2)
    client.flushall()
    client.execute_command("FAKEKEY.CLOCK", "SET", NOW)
    client.execute_command("FAKEKEY.WAKES", "RESET")
    yield client
    client.close()


class Parked:
    """A connection of its own parked with `BLPOP <keys> 0` (the wire-4 consumer's park)."""

    def __init__(self, server: Server, *keys: str, name: str | None = None) -> None:
        self.server = server
        self.raw = RawClient(server.host, server.port)
        self.id = self.raw.call("CLIENT", "ID")[1]
        if name is not None:
            assert self.raw.call("CLIENT", "SETNAME", name) == ("+", b"OK")
        self.keys = keys or (key("wake"),)
        self.park()

    def park(self) -> None:
        self.raw.send("BLPOP", *self.keys, 0)
        with RawClient(self.server.host, self.server.port) as other:
            deadline = time.monotonic() + 5
            while b"flags=b" not in other.call("CLIENT", "LIST", "ID", self.id)[1]:
                assert time.monotonic() < deadline, "the client never parked"
                time.sleep(0.002)

    def woken(self) -> list[bytes]:
        """The BLPOP's reply (it was served): [key, token]."""
        kind, value = self.raw.read()
        assert kind == "*" and value is not None
        return [v for _, v in value]

    def close(self) -> None:
        self.raw.close()


@pytest.fixture
def parked(server: Server, r: redis.Redis) -> Iterator[Parked]:
    conn = Parked(server)
    yield conn
    conn.close()


def enqueue_verb(r: redis.Redis, job: str, delay_ms: int = 0, queue: str = Q) -> None:
    assert r.execute_command("EMQ.ENQUEUE", 3, key(job, queue), key("pending", queue),
                             key("schedule", queue), "payload", delay_ms, 0) == 1


def enqueue_script(r: redis.Redis, job: str) -> None:
    assert run_script(r, "enqueue", [key(job), key("pending"), key("schedule")],
                      ["payload", 0, 0, NOW]) == 1


def enqueue_queue(r: redis.Redis, job: str) -> None:
    assert Queue(r, Q, wire=4).enqueue(job, "payload") is True


def genqueue(r: redis.Redis, job: str, group: str = "g") -> None:
    assert Queue(r, Q, wire=4).enqueue(job, "payload", group=group) is True


ENQUEUES = {"verb": (enqueue_verb, "emq.enqueue", None),
            "run_script": (enqueue_script, "evalsha", SCRIPTS["enqueue"].sha),
            "queue_wire4": (enqueue_queue, "evalsha", SCRIPTS["enqueue"].sha)}


# --- the seed's rule (meta has no `ring`): flat transitions ring nothing --------------------


@pytest.mark.parametrize("how", list(ENQUEUES))
def test_a_flat_enqueue_while_a_consumer_parks_is_one_lost_wake(server, r, parked, how):
    enqueue, command, script = ENQUEUES[how]
    enqueue(r, "JOB1")
    report = server.wakes()
    assert report == WakeReport(lost=1, wasted=0, records=(
        LostWake(time=NOW, queue=Q, transition="pending", command=command, script=script,
                 client=parked.id),))


def test_a_lane_admission_pushes_a_token_and_loses_nothing(server, r, parked):
    genqueue(r, "JOB1")
    assert parked.woken() == [key("wake").encode(), b"1"]
    assert server.wakes().lost == 0


def test_nobody_parked_nothing_lost(server, r):
    enqueue_verb(r, "JOB1")
    enqueue_script(r, "JOB2")
    assert server.wakes() == WakeReport(0, 0, ())
    assert server.state.wake_watch is None  # idle: the funnel pays one attribute test


def test_a_parked_client_of_another_queue_or_key_sees_no_lost_wake(server, r):
    others = [Parked(server, key("wake", "other")), Parked(server, "emq:{q}:wakeful"),
              Parked(server, "plain-list")]
    try:
        enqueue_verb(r, "JOB1")
        assert server.wakes().lost == 0
        enqueue_verb(r, "JOB1", queue="other")
        assert [rec.queue for rec in server.wakes().records] == ["other"]
    finally:
        for conn in others:
            conn.close()


def test_a_park_among_other_keys_counts(server, r):
    conn = Parked(server, "some-list", key("wake"))
    try:
        enqueue_verb(r, "JOB1")
        assert [(rec.queue, rec.client) for rec in server.wakes().records] == [(Q, conn.id)]
    finally:
        conn.close()


def test_one_lost_wake_per_command_however_many_parked(server, r, parked):
    second = Parked(server)
    try:
        enqueue_verb(r, "JOB1")
        report = server.wakes()
        assert report.lost == 1
        assert report.records[0].client == parked.id  # the first parked, whom a token wakes
    finally:
        second.close()


def test_a_multi_with_two_enqueues_is_one_lost_wake(server, r, parked):
    pipe = r.pipeline(transaction=True)
    for job in ("JOB1", "JOB2"):
        pipe.execute_command("EMQ.ENQUEUE", 3, key(job), key("pending"), key("schedule"), "p", 0, 0)
    assert pipe.execute() == [1, 1]
    report = server.wakes()
    assert report.lost == 1
    assert (report.records[0].command, report.records[0].transition) == ("exec", "pending")


def test_a_delayed_enqueue_is_no_transition_and_its_promotion_is_one(server, r, parked):
    enqueue_verb(r, "JOB1", delay_ms=100)
    assert server.wakes().lost == 0
    r.execute_command("FAKEKEY.CLOCK", "ADVANCE", 100)
    assert r.execute_command("EMQ.PROMOTE", 3, key("schedule"), key("pending"), key(""), 10) == 1
    report = server.wakes()
    assert report.lost == 1
    assert report.records[0] == LostWake(NOW + 100, Q, "pending", "emq.promote", None, parked.id)


def test_a_resume_with_pending_non_empty_is_one_lost_wake(server, r, parked):
    r.execute_command("EMQ.PAUSE", 1, key("meta"))
    enqueue_verb(r, "JOB1")  # while paused a job in pending is not claimable: no transition
    assert server.wakes().lost == 0
    r.execute_command("EMQ.RESUME", 1, key("meta"))
    report = server.wakes()
    assert report.lost == 1
    assert report.records[0] == LostWake(NOW, Q, "resume", "emq.resume", None, parked.id)


def test_a_resume_with_pending_empty_is_none(server, r, parked):
    r.execute_command("EMQ.PAUSE", 1, key("meta"))
    r.execute_command("EMQ.RESUME", 1, key("meta"))
    Queue(r, Q, wire=4).pause()
    Queue(r, Q, wire=4).resume()
    assert server.wakes().lost == 0


def test_a_resume_by_script_names_the_script(server, r, parked):
    queue = Queue(r, Q, wire=4)
    queue.pause()
    queue.enqueue("JOB1", "p")
    queue.resume()
    report = server.wakes()
    assert [(rec.transition, rec.command, rec.script) for rec in report.records] == [
        ("resume", "evalsha", SCRIPTS["resume"].sha)]


def test_eval_and_fcall_are_named_by_sha_and_function(server, r, parked):
    body = "return redis.call('ZADD', KEYS[1], 0, ARGV[1])"
    r.execute_command("EVAL", body, 1, key("pending"), "JOB1")
    r.function_load("#!lua name=lib\nredis.register_function('push_job', function(keys, args)"
                    " return redis.call('ZADD', keys[1], 0, args[1]) end)")
    r.fcall("push_job", 1, key("pending"), "JOB2")
    assert [(rec.command, rec.script) for rec in server.wakes().records] == [
        ("eval", hashlib.sha1(body.encode()).hexdigest()), ("fcall", "push_job")]


def test_a_claim_and_a_rescore_are_no_transition(server, r):
    enqueue_verb(r, "JOB1")
    enqueue_verb(r, "JOB2")
    conn = Parked(server)
    try:
        r.execute_command("ZADD", key("pending"), 5, "JOB1")  # a member already there
        assert r.execute_command("EMQ.CLAIM", 2, key("pending"), key("active"), 1000)
        assert server.wakes().lost == 0
    finally:
        conn.close()


def test_a_group_joining_the_ring_without_a_token_is_a_lost_wake(server, r, parked):
    r.rpush(key("ring"), "g")
    assert server.wakes().records[0].transition == "ring"


def test_reset_clears_counts_and_records(server, r, parked):
    enqueue_verb(r, "JOB1")
    assert server.wakes().lost == 1
    assert r.execute_command("FAKEKEY.WAKES", "RESET") in (b"OK", "OK", True)
    assert server.wakes() == WakeReport(0, 0, ())
    enqueue_verb(r, "JOB2")
    server.reset_wakes()
    assert server.wakes() == WakeReport(0, 0, ())


def test_the_records_keep_the_latest_128(server, r, parked):
    for i in range(130):
        enqueue_verb(r, f"JOB{i}")
        r.execute_command("EMQ.CLAIM", 2, key("pending"), key("active"), 1000)
    report = server.wakes()
    assert report.lost == 130
    assert len(report.records) == 128


def test_the_detector_disarms_when_the_parked_client_leaves(server, r):
    conn = Parked(server)
    assert server.state.wake_watch is not None
    conn.close()
    deadline = time.monotonic() + 5
    while server.state.blocking.blocked_count():
        assert time.monotonic() < deadline
        time.sleep(0.002)
    r.ping()  # the end of a command prunes
    assert server.state.wake_watch is None
    enqueue_verb(r, "JOB1")
    assert server.wakes().lost == 0


def test_a_park_that_times_out_disarms_it_too(server, r):
    with RawClient(server.host, server.port) as raw:
        raw.send("BLPOP", key("wake"), 1)  # the clock is frozen: it waits until advanced
        deadline = time.monotonic() + 5
        while not server.state.blocking.blocked_count():
            assert time.monotonic() < deadline
            time.sleep(0.002)
        r.execute_command("FAKEKEY.CLOCK", "ADVANCE", 1000)
        assert raw.read() == ("*", None)
    r.ping()
    assert server.state.wake_watch is None


# --- FAKEKEY.WAKES GET's shape --------------------------------------------------------------


def test_get_in_resp3_is_a_map_of_maps(server, r, parked):
    enqueue_verb(r, "JOB1")
    enqueue_script(r, "JOB2")
    with RawClient(server.host, server.port) as raw:
        raw.call("HELLO", 3)
        assert raw.call("FAKEKEY.WAKES", "GET") == ("%", [
            (("$", b"lost"), (":", 2)),
            (("$", b"wasted"), (":", 0)),
            (("$", b"records"), ("*", [
                ("%", [(("$", b"time"), (":", NOW)), (("$", b"queue"), ("$", b"q")),
                       (("$", b"transition"), ("$", b"pending")),
                       (("$", b"command"), ("$", b"emq.enqueue")),
                       (("$", b"script"), ("_", None)),
                       (("$", b"client"), (":", parked.id))]),
                ("%", [(("$", b"time"), (":", NOW)), (("$", b"queue"), ("$", b"q")),
                       (("$", b"transition"), ("$", b"pending")),
                       (("$", b"command"), ("$", b"evalsha")),
                       (("$", b"script"), ("$", SCRIPTS["enqueue"].sha.encode())),
                       (("$", b"client"), (":", parked.id))]),
            ])),
        ])


def test_get_in_resp2_is_a_flat_array(server, r, parked):
    enqueue_verb(r, "JOB1")
    with RawClient(server.host, server.port) as raw:
        assert raw.call("FAKEKEY.WAKES", "GET") == ("*", [
            ("$", b"lost"), (":", 1), ("$", b"wasted"), (":", 0), ("$", b"records"), ("*", [
                ("*", [("$", b"time"), (":", NOW), ("$", b"queue"), ("$", b"q"),
                       ("$", b"transition"), ("$", b"pending"),
                       ("$", b"command"), ("$", b"emq.enqueue"),
                       ("$", b"script"), ("$", None), ("$", b"client"), (":", parked.id)]),
            ]),
        ])
        assert raw.call("FAKEKEY.WAKES", "RESET") == ("+", b"OK")
        assert raw.call("FAKEKEY.WAKES", "GET") == ("*", [
            ("$", b"lost"), (":", 0), ("$", b"wasted"), (":", 0), ("$", b"records"), ("*", [])])


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_reads_the_report(server, r, parked, protocol):
    enqueue_verb(r, "JOB1")
    client = redis.Redis(host=server.host, port=server.port, protocol=protocol, decode_responses=True)
    try:
        assert wake_report(client) == server.wakes()
    finally:
        client.close()


def test_errors_arity_and_help(server, r):
    with RawClient(server.host, server.port) as raw:
        assert raw.call("FAKEKEY.WAKES") == (
            "-", b"ERR wrong number of arguments for 'fakekey.wakes' command")
        assert raw.call("FAKEKEY.WAKES", "GET", "x") == (
            "-", b"ERR wrong number of arguments for 'fakekey.wakes' command")
        assert raw.call("FAKEKEY.WAKES", "NOPE") == (
            "-", b"ERR unknown subcommand 'NOPE'. Try FAKEKEY.WAKES GET|RESET|HELP.")
        kind, lines = raw.call("FAKEKEY.WAKES", "HELP")
        assert kind == "*" and all(k == "+" for k, _ in lines)
        assert raw.call("EVAL", "return redis.call('FAKEKEY.WAKES', 'GET')", 0)[0] == "-"


def test_absent_with_the_fakekey_commands():
    with Server(enable_fakekey_commands=False) as srv, RawClient(srv.host, srv.port) as raw:
        assert raw.call("FAKEKEY.WAKES", "GET") == (
            "-", b"ERR unknown command 'FAKEKEY.WAKES', with args beginning with: 'GET' ")


# --- wasted wakes ---------------------------------------------------------------------------


def gclaim(client: RawClient | redis.Redis) -> list:
    """One turn of the ring (the wire-4 lane claim, @gclaim2) on this connection."""
    keys = [key("ring"), key("active"), key("")]
    if isinstance(client, RawClient):
        kind, value = client.call("EVALSHA", SCRIPTS["gclaim2"].sha, 3, *keys, 1000, NOW)
        assert kind == "*", value
        return value
    return run_script(client, "gclaim2", keys, [1000, NOW])


def test_a_wake_whose_claim_finds_the_job_taken_is_wasted(server, r, parked):
    r.script_load(SCRIPTS["gclaim2"].source)
    genqueue(r, "JOB1")  # the lane joins the ring: one token
    assert parked.woken() == [key("wake").encode(), b"1"]
    assert gclaim(r) != []  # another connection leases the job first
    assert gclaim(parked.raw) == []  # the woken connection's claim leases nothing
    assert server.wakes().wasted == 0  # judged when it parks again
    parked.park()
    assert server.wakes() == WakeReport(lost=0, wasted=1, records=())


def test_a_wake_whose_claim_leases_is_not_wasted(server, r, parked):
    r.script_load(SCRIPTS["gclaim2"].source)
    genqueue(r, "JOB1")
    parked.woken()
    assert gclaim(parked.raw) != []
    parked.park()
    assert server.wakes() == WakeReport(0, 0, ())


def test_the_verbs_are_judged_alike(server, r, parked):
    """The same rule on wire 6: the claim verb on the connection that popped the token."""
    r.lpush(key("wake"), 1)
    parked.woken()
    enqueue_verb(r, "JOB1")  # nobody parked now: nothing lost
    claim = ("EMQ.CLAIM", 2, key("pending"), key("active"), 1000)
    assert parked.raw.call(*claim)[1]  # leases
    parked.park()
    assert server.wakes() == WakeReport(0, 0, ())
    r.lpush(key("wake"), 1)  # a token for nothing
    parked.woken()
    assert parked.raw.call(*claim) == ("*", [])
    parked.park()
    assert server.wakes() == WakeReport(0, 1, ())


def test_a_second_pop_without_a_lease_judges_the_first(server, r, parked):
    r.lpush(key("wake"), 1)
    parked.woken()
    r.lpush(key("wake"), 1)
    assert parked.raw.call("LPOP", key("wake")) == ("$", b"1")
    assert server.wakes().wasted == 1


def test_a_consumer_named_alike_on_two_connections_is_one_connection(server, r):
    """A consumer that parks on a connection of its own and claims on another pairs them by
    name (CLIENT SETNAME)."""
    r.script_load(SCRIPTS["gclaim2"].source)
    claimer = RawClient(server.host, server.port)
    park = Parked(server, name="worker-1")
    try:
        assert claimer.call("CLIENT", "SETNAME", "worker-1") == ("+", b"OK")
        genqueue(r, "JOB1")
        park.woken()
        assert gclaim(claimer) != []  # the job leased on the other connection of the pair
        park.park()
        assert server.wakes() == WakeReport(0, 0, ())
    finally:
        claimer.close()
        park.close()


# --- the `ring all` rule: every claimable transition pushes one token -----------------------


def ring_known(r: redis.Redis) -> bool:
    return r.execute_command("COMMAND", "INFO", "emq.ring") not in ([None], [], None)


@pytest.fixture
def ring_all(r: redis.Redis) -> None:
    if not ring_known(r):
        pytest.skip("EMQ.RING is not a known command yet (spec emq.md 7.3, the `ring all` rule)")
    assert r.execute_command("EMQ.RING", 1, key("meta"), "all") in (b"OK", "OK", True)


def test_with_ring_all_the_same_run_has_no_lost_wake(server, r, ring_all):
    conn = Parked(server)
    try:
        for i, (enqueue, _, _) in enumerate(ENQUEUES.values()):
            enqueue(r, f"JOB{i}")
            assert conn.woken() == [key("wake").encode(), b"1"]
            conn.park()
        pipe = r.pipeline(transaction=True)
        for job in ("JOBm1", "JOBm2"):
            pipe.execute_command("EMQ.ENQUEUE", 3, key(job), key("pending"), key("schedule"), "p", 0, 0)
        pipe.execute()
        conn.woken()
        r.delete(key("wake"))  # a token per command: the transaction's second one is left
        conn.park()
        r.execute_command("EMQ.PAUSE", 1, key("meta"))
        r.execute_command("EMQ.RESUME", 1, key("meta"))
        conn.woken()
        conn.park()
        enqueue_verb(r, "JOBd", delay_ms=100)
        r.execute_command("FAKEKEY.CLOCK", "ADVANCE", 100)
        r.execute_command("EMQ.PROMOTE", 3, key("schedule"), key("pending"), key(""), 10)
        conn.woken()
        conn.park()
        assert_no_lost_wakes(server)
    finally:
        conn.close()


# --- from Python ----------------------------------------------------------------------------


def test_assert_no_lost_wakes_names_what_was_lost(server, r, parked):
    assert assert_no_lost_wakes(server) == WakeReport(0, 0, ())
    enqueue_verb(r, "JOB1")
    for target in (server, r):
        with pytest.raises(AssertionError) as failure:
            assert_no_lost_wakes(target)
        text = str(failure.value)
        assert "1 lost wake(s)" in text
        assert f"queue 'q', transition pending, made by emq.enqueue, client {parked.id} parked" in text
    reset_wakes(r)
    assert_no_lost_wakes(server)


def test_a_timer_firing_settles_under_its_label(server, r, parked):
    """The server's own writes (a timer's firing) are settled by `state.wakes.settle`."""

    def fire() -> None:
        state = server.state
        state.dbs[0].set_value(key("pending").encode(), _zset_with(state, b"JOB1"), event="zadd",
                               klass="z")
        state.wakes.settle("emq.timer")

    server._on_loop(fire)
    assert server.wakes().records == (LostWake(NOW, Q, "pending", "emq.timer", None, parked.id),)


def _zset_with(state, member: bytes):
    from fakekey.types.zset import ZSet

    zs = ZSet()
    zs.insert(member, 0.0, state.config.zset_limits())
    return zs


def test_two_servers_share_nothing(r, server):
    with Server() as other:
        conn = Parked(other, key("wake"))
        try:
            rb = redis.Redis(host=other.host, port=other.port)
            enqueue_verb(rb, "JOB1")
            rb.close()
            assert other.wakes().lost == 1
            assert server.wakes().lost == 0
        finally:
            conn.close()


PYTEST_USER = """
import time
import redis
from fakekey.testing.raw import RawClient

def park(server):
    raw = RawClient(server.host, server.port)
    raw.send("BLPOP", "emq:{q}:wake", 0)
    while server.state.blocking.blocked_count() == 0:
        time.sleep(0.002)
    return raw

def test_loses_a_wake(fakekey_no_lost_wakes, fakekey_server, fakekey_client):
    raw = park(fakekey_server)
    fakekey_client.execute_command(
        "EMQ.ENQUEUE", 3, "emq:{q}:JOB1", "emq:{q}:pending", "emq:{q}:schedule", "p", 0, 0)
    raw.close()

def test_rings(fakekey_no_lost_wakes, fakekey_server, fakekey_client):
    raw = park(fakekey_server)
    pipe = fakekey_client.pipeline(transaction=True)
    pipe.execute_command(
        "EMQ.ENQUEUE", 3, "emq:{q}:JOB1", "emq:{q}:pending", "emq:{q}:schedule", "p", 0, 0)
    pipe.lpush("emq:{q}:wake", 1)  # the token, in the same transaction
    pipe.execute()
    assert raw.read()[0] == "*"
    raw.close()
"""


@pytest.mark.parametrize("scope", ["function", "session"])
def test_the_fixture_fails_a_test_that_loses_a_wake(pytester, monkeypatch, scope):
    monkeypatch.delenv("FAKEKEY_TARGET", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(PYTEST_USER)
    result = pytester.runpytest("-p", "no:cacheprovider", "--fakekey-scope", scope)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_loses_a_wake*", "*lost wakes*",
                                 "*queue 'q', transition pending, made by emq.enqueue*"])


def test_the_packages_consumer_is_judged_as_one_connection(server: Server, r: redis.Redis) -> None:
    """fakekey.emq.Consumer parks on a connection of its own and claims on others, all named
    alike: under `ring all` its wakes are neither lost nor wasted."""
    from fakekey.emq.consumer import Consumer

    r.execute_command("FAKEKEY.CLOCK", "REAL")
    queue = Queue(r, Q, wire=4)
    queue.set_ring("all")
    handled: list[str] = []
    consumer = Consumer(r, Q, lambda job: handled.append(job.id), beat=30, heartbeat=False)
    consumer.start()
    try:
        for i in range(5):
            deadline = time.time() + 2
            while r.info("clients")["blocked_clients"] != 1:
                assert time.time() < deadline, "the consumer never parked"
                time.sleep(0.002)
            queue.enqueue(f"JOB{i}", "p")
            while len(handled) <= i:
                assert time.time() < deadline + 2, "the wake never reached the consumer"
                time.sleep(0.002)
        deadline = time.time() + 2
        while r.info("clients")["blocked_clients"] != 1:  # parked again: the last wake judged
            assert time.time() < deadline
            time.sleep(0.002)
        report = wake_report(server)
        assert (report.lost, report.wasted) == (0, 0)
        names = {c["name"] for c in r.client_list() if c["name"].startswith("emq-consumer:")}
        assert names == {consumer.client_name}
    finally:
        consumer.stop()
