"""Faults on demand against real clients (docs/faults.md's recipes): redis-py and valkey-py
retry, time out, reconnect and see the lost acknowledgement as they would on a failing
Valkey; ioredis too when Node is here. Timing bounds are lower bounds, or seconds wide."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

LOADING = "LOADING Valkey is loading the dataset in memory"
NODE_MODULES = Path(__file__).resolve().parents[2] / "examples" / "node" / "node_modules"


def _library(name: str) -> SimpleNamespace:
    lib = pytest.importorskip(name)
    backoff = pytest.importorskip(f"{name}.backoff")
    retry = pytest.importorskip(f"{name}.retry")
    return SimpleNamespace(
        Client=lib.Redis if name == "redis" else lib.Valkey, Retry=retry.Retry,
        ExponentialBackoff=backoff.ExponentialBackoff, NoBackoff=backoff.NoBackoff,
        ConnectionError=lib.exceptions.ConnectionError, TimeoutError=lib.exceptions.TimeoutError,
        BusyLoadingError=lib.exceptions.BusyLoadingError)


@pytest.fixture(params=["redis", "valkey"])
def lib(request):
    return _library(request.param)


@pytest.fixture
def connect(fakekey_server, lib):
    """connect(**options): a client of the library on the test's server, closed after."""
    clients = []

    def make(**options):
        options.setdefault("retry", lib.Retry(lib.NoBackoff(), 0))
        client = lib.Client(host=fakekey_server.host, port=fakekey_server.port, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def faults(fakekey_faults):
    return fakekey_faults


def retrying(lib, retries=3, backoff=None, **options):
    """A client that retries: valkey-py (as redis-py before 6) retries only the errors
    `retry_on_error` names; BusyLoadingError (LOADING) is a ConnectionError, and a refused
    connection an OSError (valkey-py's connect does not wrap it)."""
    return {"retry": lib.Retry(backoff or lib.ExponentialBackoff(), retries),
            "retry_on_error": [lib.ConnectionError, lib.TimeoutError, OSError], **options}


# --- retry ------------------------------------------------------------------------------------


def test_retry_recovers_from_drop(faults, connect, lib):
    r = connect(**retrying(lib))
    r.set("k", "v")
    rule = faults.drop("get", times=3)
    assert r.get("k") == b"v"  # three dropped attempts, the fourth answered
    assert rule.fired == 3


def test_retry_recovers_from_loading(faults, connect, lib):
    r = connect(**retrying(lib))
    r.set("k", "v")
    rule = faults.error("get", LOADING, times=2)
    assert r.get("k") == b"v"
    assert rule.fired == 2


@pytest.mark.parametrize("action", ["drop", "loading"])
def test_retry_gives_up_when_times_exceeds_its_retries(faults, connect, lib, action):
    r = connect(**retrying(lib))
    rule = faults.drop("get", times=4) if action == "drop" else faults.error("get", LOADING, times=4)
    expected = lib.BusyLoadingError if action == "loading" else lib.ConnectionError
    with pytest.raises(expected):
        r.get("k")
    assert rule.fired == 4  # the first try and three retries
    assert r.get("k") is None  # used up: the next call goes through


# --- timeouts -----------------------------------------------------------------------------------


def test_socket_timeout_fires_on_delay(faults, connect, lib):
    r = connect(socket_timeout=0.3)
    r.set("k", "v")
    with faults.delay("get", 5000):
        started = time.monotonic()
        with pytest.raises(lib.TimeoutError):
            r.get("k")
        assert time.monotonic() - started >= 0.25
    assert r.get("k") == b"v"  # on a new connection


def test_delay_within_the_timeout_is_only_slow(faults, connect):
    r = connect(socket_timeout=10)
    faults.delay("ping", 300, times=1)
    started = time.monotonic()
    assert r.ping() is True
    assert time.monotonic() - started >= 0.25


def test_hang_times_out_and_the_client_reconnects(faults, connect, lib):
    r = connect(socket_timeout=0.3)
    with faults.hang("get", times=1):
        with pytest.raises(lib.TimeoutError):
            r.get("k")
        assert r.get("k") is None  # TIMES 1: the new connection's GET is answered


# --- the lost acknowledgement -------------------------------------------------------------------


def test_drop_after_on_a_pipelines_exec_leaves_the_write(faults, connect, lib):
    r = connect()
    faults.drop_after("exec", times=1)
    pipe = r.pipeline(transaction=True)
    pipe.set("k", "v").incr("n")
    with pytest.raises(lib.ConnectionError):
        pipe.execute()
    assert r.get("k") == b"v" and r.get("n") == b"1"  # it ran; the client was never told


def test_drop_after_with_retry_runs_the_transaction_twice(faults, connect, lib):
    r = connect(**retrying(lib))
    rule = faults.drop_after("exec", times=1)
    pipe = r.pipeline(transaction=True)
    pipe.incr("n")
    assert pipe.execute() == [2]  # the retry ran it again: not idempotent
    assert rule.fired == 1 and r.get("n") == b"2"


def test_noreply_then_the_client_times_out(faults, connect, lib):
    r = connect(socket_timeout=0.3)
    faults.noreply("incr*", times=1)  # redis-py's incr() sends INCRBY
    with pytest.raises(lib.TimeoutError):
        r.incr("n")
    assert r.get("n") == b"1"


# --- a broken reply -----------------------------------------------------------------------------


def test_partial_reply_is_an_error_then_the_next_command_works(faults, connect, lib):
    r = connect()
    r.set("k", "hello")
    first = r.client_id()
    faults.partial("get", 4, times=1)
    with pytest.raises(lib.ConnectionError):
        r.get("k")
    assert r.get("k") == b"hello"
    assert r.client_id() != first  # on a new connection


# --- the network ------------------------------------------------------------------------------


def test_network_down_then_up_by_itself_the_retry_succeeds(fakekey_server, connect, lib):
    r = connect(**retrying(lib, 12, lib.ExponentialBackoff(cap=0.5, base=0.05)))
    control = connect()
    r.set("k", "v")
    assert control.execute_command("FAKEKEY.FAULT", "NETWORK", "DOWN", "200") in (b"OK", "OK", True)
    # its connection was dropped, so only the retry can answer: refused, refused..., then
    # answered on the same port
    assert r.get("k") == b"v"
    assert not fakekey_server.faults.network_is_down


def test_network_down_without_retry_is_a_connection_error(faults, connect, lib):
    r = connect()
    assert r.ping() is True
    with faults.network_outage(), pytest.raises(lib.ConnectionError):
        r.ping()
    assert r.ping() is True


# --- PROBABILITY --------------------------------------------------------------------------------


def test_probability_with_a_seed_fails_the_same_requests_twice(faults, connect, lib):
    r = connect()

    def run() -> list[int]:
        faults.reset()
        faults.seed(1234)
        faults.error("get", LOADING, probability=0.3)
        failed = []
        for i in range(50):
            try:
                r.get("k")
            except lib.BusyLoadingError:
                failed.append(i)
        return failed

    first = run()
    assert first == run()
    assert 0 < len(first) < 50


def test_latency_and_the_controller_connection(faults, connect):
    r = connect(socket_timeout=10)
    faults.latency(200)
    started = time.monotonic()
    assert r.ping() is True
    assert time.monotonic() - started >= 0.15


# --- Node: ioredis -------------------------------------------------------------------------------

IOREDIS = r"""
const Redis = require('ioredis');
const port = Number(process.argv[2]);
const outcome = (promise) => promise.then((value) => value, (err) => 'error: ' + err.message);
(async () => {
  const out = {};
  const control = new Redis(port);
  const app = new Redis(port, { maxRetriesPerRequest: 3, commandTimeout: 1000 });
  for (const c of [control, app]) c.on('error', () => {});  // refused while the network is down
  const fault = (...args) => control.call('FAKEKEY.FAULT', ...args);
  await app.set('k', 'v');
  await fault('ADD', 'drop', 'ACTION', 'DROP', 'MATCH', 'get', 'TIMES', '1');
  out.drop = await outcome(app.get('k'));  // ioredis reconnects and sends the command again
  await fault('ADD', 'half', 'ACTION', 'PARTIAL', '3', 'MATCH', 'get', 'TIMES', '1');
  out.partial = await outcome(app.get('k'));  // the same
  await fault('ADD', 'load', 'ACTION', 'ERROR', 'LOADING busy', 'MATCH', 'get', 'TIMES', '1');
  out.loading = await outcome(app.get('k'));
  await fault('ADD', 'slow', 'ACTION', 'DELAY', '3000', 'MATCH', 'get', 'TIMES', '1');
  out.delay = await outcome(app.get('k'));
  await fault('ADD', 'stuck', 'ACTION', 'HANG', 'MATCH', 'get', 'TIMES', '1');
  out.hang = await outcome(app.get('k'));
  await fault('DEL', 'stuck');
  await fault('ADD', 'mute', 'ACTION', 'NOREPLY', 'MATCH', 'incr', 'TIMES', '1');
  out.noreply = await outcome(app.incr('m'));
  await fault('ADD', 'lost', 'ACTION', 'DROP-AFTER', 'MATCH', 'exec', 'TIMES', '1');
  out.dropAfter = await outcome(app.multi().incr('n').exec());
  out.n = await control.get('n');
  await fault('NETWORK', 'DOWN', '300');
  out.network = await outcome(app.get('k'));  // queued offline, sent once reconnected
  console.log(JSON.stringify(out));
  for (const c of [control, app]) c.disconnect();
})().catch((err) => { console.error(err); process.exit(1); });
"""


def test_ioredis_recipes(fakekey_server, tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (NODE_MODULES / "ioredis").is_dir():
        pytest.skip("ioredis is not installed (cd examples/node && npm install)")
    script = tmp_path / "faults.cjs"
    script.write_text(IOREDIS)
    done = subprocess.run([node, str(script), str(fakekey_server.port)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    timed_out = "error: Command timed out"
    assert out == {"drop": "v", "partial": "v", "loading": "error: LOADING busy", "delay": timed_out,
                   "hang": timed_out, "noreply": timed_out,
                   "dropAfter": "error: Command aborted due to connection close", "n": "1",
                   "network": "v"}
