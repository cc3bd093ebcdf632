"""`fakekey-server run [flags] -- CMD ARGS...`: a server on a free port for one command,
found in REDIS_URL, VALKEY_URL, REDIS_HOST and REDIS_PORT; the command's exit status is
the wrapper's, signals go on to the command; and the CI examples (Node, Go) run under it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUN = [sys.executable, "-m", "fakekey", "run"]
CLIENT = ("import os, redis; r = redis.Redis.from_url(os.environ['REDIS_URL']); "
          "r.set('k', 'v'); print(r.get('k').decode(), r.info('server')['fakekey_version'] != '')")


def run(*args: str, timeout: float = 60, **options) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=timeout, **options)


def test_the_command_finds_the_server_in_its_environment():
    done = run("--", "sh", "-c", 'echo "$REDIS_URL $VALKEY_URL $REDIS_HOST $REDIS_PORT"')
    assert done.returncode == 0, done.stderr
    url, valkey_url, host, port = done.stdout.split()
    assert url == valkey_url == f"redis://{host}:{port}" and host == "127.0.0.1" and int(port) > 0
    done = run("--", sys.executable, "-c", CLIENT)
    assert (done.returncode, done.stdout) == (0, "v True\n"), done.stderr


def test_server_flags_before_the_separator():
    done = run("--requirepass", "s3cret", "--", sys.executable, "-c", CLIENT)
    assert (done.returncode, done.stdout) == (0, "v True\n"), done.stderr
    done = run("--requirepass", "s3cret", "--", "sh", "-c", 'echo "$REDIS_URL"')
    assert re.fullmatch(r"redis://:s3cret@127\.0\.0\.1:\d+\n", done.stdout)


@pytest.mark.parametrize(("script", "status"), [("exit 0", 0), ("exit 7", 7), ("kill -KILL $$", 128 + 9)])
def test_the_exit_status_is_the_commands(script, status):
    assert run("--", "sh", "-c", script).returncode == status


def test_a_missing_command():
    done = run("--", "no-such-command-anywhere")
    assert done.returncode == 127 and "no-such-command-anywhere" in done.stderr
    done = run()
    assert done.returncode == 2 and "usage: fakekey-server run" in done.stderr


def test_a_refused_setting_is_reported():
    done = run("--maxmemory-policy", "nope", "--", "true")
    assert done.returncode == 1 and "maxmemory-policy" in done.stderr


def test_signals_are_passed_on_to_the_command():
    script = 'trap "echo got TERM; exit 42" TERM; echo ready; while :; do sleep 0.05; done'
    wrapper = subprocess.Popen([*RUN, "--", "sh", "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert wrapper.stdout is not None
        assert wrapper.stdout.readline() == "ready\n"
        wrapper.send_signal(signal.SIGTERM)
        assert wrapper.wait(30) == 42
        assert wrapper.stdout.read() == "got TERM\n"
    finally:
        if wrapper.poll() is None:
            wrapper.kill()
            wrapper.wait(10)


def test_the_node_ci_example():
    node = shutil.which("node")
    if node is None or not (EXAMPLES / "node" / "node_modules" / "ioredis").is_dir():
        pytest.skip("needs node and examples/node's ioredis (cd examples/node && npm install)")
    done = run("--", node, "--test", "ci.test.mjs", cwd=EXAMPLES / "node", timeout=120)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert re.search(r"^\S* ?pass 1$", done.stdout, re.M), done.stdout
    assert re.search(r"^\S* ?skipped 0$", done.stdout, re.M), done.stdout


def test_the_go_example():
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed: examples/go (go-redis) runs as `fakekey-server run -- go test ./...`")
    env = {**os.environ, "GOFLAGS": "-mod=mod"}  # fetches go-redis when go.sum lacks it
    done = run("--", go, "test", "-count=1", "-v", "./...", cwd=EXAMPLES / "go", env=env, timeout=600)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "--- PASS: TestComputesOnceThenReadsTheCache" in done.stdout
    assert "--- PASS: TestExpiryWithTheServerClock" in done.stdout
