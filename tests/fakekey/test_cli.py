"""fakekey-server as a harness in another language sees it: a process that announces
where it listens, writes its port and pid files, detaches when asked, and stops cleanly
on SIGTERM, SIGINT and SHUTDOWN."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from fakekey import VALKEY_VERSION, __version__
from fakekey.cli import parse_argv
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary

SERVER = [sys.executable, "-m", "fakekey"]
READY = re.compile(r"fakekey ready port=(\d+) pid=(\d+) url=(redis://127\.0\.0\.1:\d+)\n")
VERSION_SHAPE = re.compile(r"Valkey server v=(\S+) sha=[0-9a-f]{8}:[01] malloc=\S+ bits=(32|64) build=[0-9a-f]+")


def read_ready_line(proc: subprocess.Popen[str]) -> re.Match[str]:
    """The first stdout line of the ready form (log lines may come before it)."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if match := READY.fullmatch(line):
            return match
    raise AssertionError(f"no ready line; exit status {proc.wait(10)}")


def start(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([*SERVER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=cwd, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def busy_port() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise AssertionError(f"process {pid} is still running")


@pytest.mark.parametrize("flag", ["--version", "-v"])
def test_version_has_valkey_server_shape_with_fakekey_version(flag: str) -> None:
    out = subprocess.run([*SERVER, flag], capture_output=True, text=True, timeout=30, check=True).stdout
    line = out.rstrip("\n")
    assert "\n" not in line
    match = VERSION_SHAPE.match(line)
    assert match and match.group(1) == VALKEY_VERSION
    assert line.endswith(f" fakekey={__version__}")  # one more key=value, after valkey's own


def test_version_shape_is_the_real_servers() -> None:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    real = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    assert VERSION_SHAPE.fullmatch(real.rstrip("\n")), real


def test_port_zero_announces_a_free_port_and_sigterm_stops_cleanly(tmp_path: Path) -> None:
    port_file = tmp_path / "run" / "port"
    port_file.parent.mkdir()
    proc = start("--port", "0", "--port-file", str(port_file))
    try:
        ready = read_ready_line(proc)
        port, pid, url = int(ready.group(1)), int(ready.group(2)), ready.group(3)
        assert pid == proc.pid
        assert url == f"redis://127.0.0.1:{port}"
        assert port_file.read_text() == f"{port}\n"
        assert [p.name for p in port_file.parent.iterdir()] == ["port"]  # no temporary left
        with RawClient("127.0.0.1", port) as client:
            assert client.call("SET", "k", "v") == ("+", b"OK")
            assert client.call("CONFIG", "GET", "port") == ("*", [("$", b"port"), ("$", str(port).encode())])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert not port_file.exists()  # removed at a clean exit
    finally:
        proc.kill()
        proc.wait(10)


def test_sigint_and_a_pidfile_without_daemonizing(tmp_path: Path) -> None:
    pidfile = tmp_path / "fakekey.pid"
    proc = start("--port", "0", "--pidfile", str(pidfile))
    try:
        read_ready_line(proc)
        assert pidfile.read_text() == f"{proc.pid}\n"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert not pidfile.exists()
        _, err = proc.communicate(timeout=10)
        assert "Traceback" not in err
    finally:
        proc.kill()
        proc.wait(10)


def test_daemonize_writes_pidfile_and_log_and_shutdown_removes_the_pidfile(tmp_path: Path) -> None:
    pidfile, logfile, port_file = tmp_path / "d.pid", tmp_path / "d.log", tmp_path / "d.port"
    launcher = subprocess.run(
        [*SERVER, "--port", "0", "--daemonize", "yes", "--pidfile", "d.pid", "--logfile", "d.log",
         "--port-file", "d.port"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert launcher.returncode == 0, launcher.stderr
    ready = READY.fullmatch(launcher.stdout)
    assert ready, launcher.stdout
    port, pid = int(ready.group(1)), int(ready.group(2))
    try:
        assert pidfile.read_text() == f"{pid}\n"
        assert port_file.read_text() == f"{port}\n"
        # a new session (no terminal of ours), which it does not lead (it can gain none)
        assert os.getsid(pid) not in (os.getsid(0), pid)
        with RawClient("127.0.0.1", port) as client:
            assert client.call("CONFIG", "GET", "daemonize") == ("*", [("$", b"daemonize"), ("$", b"yes")])
            assert client.call("CONFIG", "GET", "pidfile") == ("*", [("$", b"pidfile"), ("$", b"d.pid")])
            client.send("SHUTDOWN")
        wait_gone(pid)
    finally:
        with_kill(pid)
    assert not pidfile.exists()
    assert not port_file.exists()
    log = logfile.read_text()
    assert f"{pid}:M " in log and "Ready to accept connections tcp" in log
    assert "ready to exit" in log


def test_a_daemon_that_cannot_listen_fails_its_launcher(tmp_path: Path) -> None:
    with busy_port() as taken:
        port = taken.getsockname()[1]
        launcher = subprocess.run(
            [*SERVER, "--port", str(port), "--daemonize", "yes", "--pidfile", str(tmp_path / "d.pid"),
             "--logfile", str(tmp_path / "d.log")],
            capture_output=True, text=True, timeout=60)
    assert launcher.returncode == 1
    assert launcher.stdout == ""
    assert f"see {tmp_path / 'd.log'}" in launcher.stderr
    assert "Could not create server TCP listening socket" in (tmp_path / "d.log").read_text()
    assert not (tmp_path / "d.pid").exists()


def test_port_file_is_no_server_setting() -> None:
    proc = start("--port", "0", "--port-file")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "FATAL CONFIG FILE ERROR" in err


def with_kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("dash_first", [True, False])
def test_settings_from_stdin_come_after_the_file_and_before_the_flags(tmp_path: Path, dash_first: bool) -> None:
    """As valkey-server reads them: the config file, then stdin (`-` first or last), then flags."""
    conf = tmp_path / "fakekey.conf"
    conf.write_text("hz 33\nmaxclients 7\n")
    stdin = io.StringIO("# from stdin\nhz 44\nrequirepass 'a b'\n")
    argv = ["-", "--hz", "55"] if dash_first else [str(conf), "--hz", "55", "-"]
    directives = parse_argv(argv, stdin)
    expected = [("hz", ["44"]), ("requirepass", ["a b"]), ("hz", ["55"])]
    assert directives == (expected if dash_first else [("hz", ["33"]), ("maxclients", ["7"]), *expected])


def test_a_port_file_that_cannot_be_written_stops_the_server(tmp_path: Path) -> None:
    proc = start("--port", "0", "--port-file", str(tmp_path / "missing" / "port"))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "Failed to write the port file" in out and "fakekey ready" not in out


CLUSTER_READY = re.compile(r"fakekey ready ports=([\d,]+) pid=(\d+) url=(redis://127\.0\.0\.1:\d+)\n")


def test_a_cluster_in_one_process_announces_its_ports_and_routes(tmp_path: Path) -> None:
    proc = start("--cluster-primaries", "3", "--cluster-replicas", "1", "--port", "0", cwd=tmp_path)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            ready = CLUSTER_READY.fullmatch(line)
            if ready:
                break
        else:
            raise AssertionError(f"no ready line; exit status {proc.wait(10)}")
        ports = [int(p) for p in ready.group(1).split(",")]
        assert len(set(ports)) == 6 and ready.group(3).endswith(f":{ports[0]}")
        first = redis.Redis(port=ports[0])
        assert first.execute_command("CLUSTER", "KEYSLOT", "foo") == 12182
        with pytest.raises(redis.exceptions.ResponseError, match=f"12182 127.0.0.1:{ports[2]}"):
            first.set("foo", "bar")  # slots 10923-16383: the third primary
        assert redis.Redis(port=ports[2]).set("foo", "bar")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cluster_launch_flags_are_checked() -> None:
    bad = subprocess.run([sys.executable, "-m", "fakekey", "--cluster-primaries", "0"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1
    assert "argument must be between 1 and 100 inclusive" in bad.stdout + bad.stderr
