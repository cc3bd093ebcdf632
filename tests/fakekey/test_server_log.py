"""fakekey-server's log as a harness reads it (Valkey's own tests/support/server.tcl waits
for the logo's `PID: N` then `Server initialized`), and DEBUG's crash reports: each case on
fakekey-server and on a real valkey-server, spawned with a config file as the harness does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port

DEADLINE_S = 30.0


def fakekey_server() -> list[str]:
    return [sys.executable, "-m", "fakekey"]


def commands() -> Iterator[tuple[str, list[str]]]:
    yield "fakekey", fakekey_server()
    valkey = find_valkey_binary()
    if valkey is not None:
        yield "valkey", [str(valkey)]


@pytest.fixture(params=[name for name, _ in commands()])
def spawn(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """Start the server with a config file (its first argument) and stdout to a file;
    answers (process, port, stdout path). The process is always ended after the test."""
    argv = dict(commands())[request.param]
    started: list[subprocess.Popen[bytes]] = []

    def start(*lines: str) -> tuple[subprocess.Popen[bytes], int, Path]:
        port = free_port()
        config = tmp_path / "server.conf"
        config.write_text("\n".join((f"port {port}", f"dir {tmp_path}", 'save ""',
                                     "enable-debug-command yes", *lines)) + "\n")
        stdout = tmp_path / "stdout"
        with open(stdout, "wb") as out:
            proc = subprocess.Popen([*argv, str(config)], stdout=out, stderr=subprocess.STDOUT,
                                    env={**os.environ, "FAKEKEY_PURE": "1"})
        started.append(proc)
        wait_for(lambda: b"Ready to accept connections tcp" in stdout.read_bytes(), proc)
        return proc, port, stdout

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def wait_for(condition, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert proc.poll() is None or condition(), "the server ended before it was ready"
        assert time.monotonic() < deadline, "no ready line in time"
        time.sleep(0.02)


def ended(proc: subprocess.Popen[bytes]) -> int:
    return proc.wait(timeout=DEADLINE_S)


def test_logo_with_pid_then_server_initialized_then_ready(spawn):
    proc, port, stdout = spawn("always-show-logo yes")
    text = stdout.read_text()
    # Valkey's harness: [regexp -- " PID: $pid.*Server initialized" $stdout]
    assert re.search(rf" PID: {proc.pid}.*Server initialized", text, re.S)
    assert re.search(rf"\|####\+'     \.\+#######\+\.     '\+####\|    Port: {port}\n", text)
    assert re.search(r"Running in standalone mode\n", text)
    order = [text.index(line) for line in ("Configuration loaded", f"PID: {proc.pid}",
                                          "Server initialized", "Ready to accept connections tcp")]
    assert order == sorted(order)
    with RawClient("127.0.0.1", port) as client:
        client.send("SHUTDOWN", "NOSAVE")
    assert ended(proc) == 0
    text = stdout.read_text()
    assert re.search(r"\* User requested shutdown\.\.\. \(user request from 'id=\d+ addr=127\.0\.0\.1:\d+ "
                     rf"laddr=127\.0\.0\.1:{port} fd=\d+ name=\*redacted\* user=\*redacted\*", text)
    assert text.index("User requested shutdown") < text.index("# Valkey is now ready to exit, bye bye...")


def test_without_the_logo_one_running_mode_line(spawn):
    proc, port, stdout = spawn()
    text = stdout.read_text()
    assert f"* Running mode=standalone, port={port}.\n" in text
    assert " PID: " not in text
    proc.send_signal(signal.SIGTERM)
    assert ended(proc) == 0
    text = stdout.read_text()
    assert "Received SIGTERM scheduling shutdown..." in text
    assert text.index("User requested shutdown...") < text.index("Valkey is now ready to exit")


def test_loading_lines_after_server_initialized(spawn, tmp_path):
    proc, port, stdout = spawn("save 3600 1")
    with RawClient("127.0.0.1", port) as client:
        client.call("SET", "k", "v")
        client.send("SHUTDOWN", "SAVE")
    assert ended(proc) == 0
    assert "DB saved on disk" in stdout.read_text()
    proc, port, stdout = spawn("save 3600 1")
    text = stdout.read_text()
    lines = ["Server initialized", "Loading RDB produced by Valkey version",
             "Done loading RDB, keys loaded: 1, keys expired: 0, all fields expired hashes: 0.",
             "DB loaded from disk: ", "Ready to accept connections tcp"]
    order = [text.index(line) for line in lines]
    assert order == sorted(order)


@pytest.mark.parametrize("sub,signum,why", [
    ("SEGFAULT", signal.SIGSEGV, r"# valkey [\d.]+ crashed by signal: 11"),
    ("PANIC", signal.SIGABRT, r"# Guru Meditation: DEBUG PANIC called at Unix time \d+"),
    ("ASSERT", signal.SIGABRT, r"# ==> debug\.c:\d+ '1 == 2' is not true"),
])
def test_crash_report_then_the_signal(spawn, sub, signum, why):
    proc, port, stdout = spawn("crash-memcheck-enabled no")
    with RawClient("127.0.0.1", port) as client:
        client.send("DEBUG", sub)
        assert ended(proc) == -signum
    text = stdout.read_text()
    assert "=== VALKEY BUG REPORT START: Cut & paste starting from here ===" in text
    assert re.search(why, text)
    assert "------ STACK TRACE ------" in text
    assert "=== VALKEY BUG REPORT END. Make sure to include from START to END. ===" in text
