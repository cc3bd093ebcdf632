"""The clients' Unix socket (`unixsocket`, `unixsocketperm`, `unixsocketgroup`), on
fakekey-server and on a real valkey-server: both listen on it next to TCP (on it alone with
port 0), replace what was at the path, set its mode and group, remove it at shutdown, and
log Valkey's lines; its clients show Valkey's address and flag U, are taken by protected
mode and authenticate as over TCP; the settings cannot be changed at run time.

Each server is a process (`python -m fakekey`, or the valkey-server binary) with its socket
in a short temporary folder: a socket's path holds at most 107 bytes."""

from __future__ import annotations

import contextlib
import grp
import io
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fakekey.cli import main
from fakekey.testing.targets import find_valkey_binary, free_port

KINDS = [k.strip() for k in os.environ.get("FAKEKEY_TARGETS", "fakekey,valkey").split(",") if k.strip()]
LOG_PREFIX = re.compile(r"^\d+:[A-Z] \d\d \w{3} \d{4} [\d:.]+ ", re.M)  # pid:role date time
START_TIMEOUT = 30.0


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    if request.param == "valkey" and find_valkey_binary() is None:
        pytest.skip("no valkey-server binary")
    return request.param



def command_line(kind: str) -> list[str]:
    if kind == "fakekey":
        return [sys.executable, "-m", "fakekey"]
    binary = find_valkey_binary()
    assert binary is not None
    return [binary]


class Spawned:
    """A server process, its socket's path and its log (read once it has exited)."""

    def __init__(self, proc: subprocess.Popen[bytes], path: Path, log: Path) -> None:
        self.proc, self.path, self.log = proc, path, log

    def client(self, protocol: int = 2, **options: object) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.path), protocol=protocol, **options)

    def stop(self) -> list[str]:
        """SIGTERM, as a harness stops it; the log's lines (pid and time left out)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(30)
        return LOG_PREFIX.sub("", self.log.read_text()).splitlines()


@contextlib.contextmanager
def spawned(kind: str, socket_folder: Path, *flags: str, port: int | None = None) -> Iterator[Spawned]:
    """A server on a free TCP port (or `port`) and on socket_folder/s.sock, killed on exit
    whatever happened."""
    path, log = socket_folder / "s.sock", socket_folder / "server.log"
    args = [*command_line(kind), "--port", str(free_port() if port is None else port),
            "--unixsocket", str(path), "--save", "", "--dir", str(socket_folder), *flags]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    server = Spawned(proc, path, log)
    try:
        _wait_until_it_answers(server)
        yield server
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _wait_until_it_answers(server: Spawned) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if server.proc.poll() is not None:
            raise AssertionError(f"the server exited: {server.log.read_text()}")
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(5)
            sock.connect(str(server.path))
            sock.sendall(b"PING\r\n")
            if sock.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                return
        assert time.monotonic() < deadline, "the server did not answer on its socket"
        time.sleep(0.02)


@contextlib.contextmanager
def monitoring(path: Path) -> Iterator[io.BufferedReader]:
    """A MONITOR client on the socket (AUTH pw first), its OK read."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(b"AUTH pw\r\nMONITOR\r\n")
        reader = sock.makefile("rb")
        assert reader.readline() == b"+OK\r\n" and reader.readline() == b"+OK\r\n"
        yield reader
        reader.close()


def listener_lines(client: redis.Redis) -> dict[str, dict[str, str]]:
    """INFO server's listenerN lines (redis-py reads each as a dict)."""
    return {name: value for name, value in client.info("server").items() if name.startswith("listener")}


def own_group() -> str:
    return grp.getgrgid(os.getgid()).gr_name


def test_socket_clients(kind: str, socket_folder: Path) -> None:
    """One server, a client in RESP2 then one in RESP3 (a server process each would
    double the run time for nothing the protocol changes)."""
    with spawned(kind, socket_folder, "--unixsocketperm", "740", "--unixsocketgroup", own_group(),
                 "--protected-mode", "yes") as server:
        mode = server.path.stat()
        assert stat.S_ISSOCK(mode.st_mode)
        assert stat.S_IMODE(mode.st_mode) == 0o740
        assert mode.st_gid == os.getgid()
        for protocol in (2, 3):
            check_socket_client(server, protocol)
        lines = server.stop()
    assert "* Ready to accept connections tcp" in lines
    assert "* Ready to accept connections unix" in lines
    assert "* Removing the unix socket file." in lines
    assert not server.path.exists()


def check_socket_client(server: Spawned, protocol: int) -> None:
    with server.client(protocol) as client:
        assert client.set("k", "v") is True  # protected mode takes a socket's client
        assert client.get("k") == b"v"
        info = client.execute_command("CLIENT", "INFO").decode()
        address = f"[{server.path}:0]:0"
        assert f" addr={address} laddr={address} " in info
        assert " flags=U " in info
        assert f" resp={protocol} " in info
        listed = client.execute_command("CLIENT", "LIST", "FLAGS", "U").decode()
        assert listed.count("\n") == 1 and f"addr={address}" in listed
        by_address = client.execute_command("CLIENT", "LIST", "ADDR", address).decode()
        assert by_address.split(" ", 1)[0] == listed.split(" ", 1)[0]  # the same client
        assert client.config_get("unixsocket*") == {
            "unixsocket": str(server.path), "unixsocketgroup": own_group(), "unixsocketperm": "740"}
        for name, value in (("unixsocket", str(server.path.with_name("t.sock"))), ("unixsocketperm", "700"),
                            ("unixsocketgroup", own_group())):
            with pytest.raises(redis.ResponseError) as refused:
                client.config_set(name, value)
            assert str(refused.value) == (
                f"CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config")
        listeners = listener_lines(client)
        assert sorted(listeners) == ["listener0", "listener1"]
        assert listeners["listener1"] == {"name": "unix", "bind": str(server.path)}
        assert listeners["listener0"]["name"] == "tcp"


def test_port_0_listens_on_the_socket_alone_and_auth_is_as_over_tcp(kind: str, socket_folder: Path) -> None:
    with spawned(kind, socket_folder, "--requirepass", "pw", port=0) as server:
        with socket.socket(socket.AF_UNIX) as sock:  # (raw: redis-py retries a refused HELLO)
            sock.settimeout(10)
            sock.connect(str(server.path))
            sock.sendall(b"PING\r\nAUTH nope\r\nAUTH pw\r\nPING\r\n")
            replies = sock.makefile("rb")
            assert [replies.readline() for _ in range(4)] == [
                b"-NOAUTH Authentication required.\r\n",
                b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
                b"+OK\r\n", b"+PONG\r\n"]
            replies.close()
        with server.client(password="pw") as client:
            assert client.ping() is True
            assert client.config_get("port") == {"port": "0"}
            assert listener_lines(client) == {"listener1": {"name": "unix", "bind": str(server.path)}}
            with monitoring(server.path) as monitor:
                client.set("k", "v")
                assert re.fullmatch(rf'\+\d+\.\d{{6}} \[0 unix:{re.escape(str(server.path))}\] "SET" "k" "v"\r\n',
                                    monitor.readline().decode())
            port = free_port()  # CONFIG SET port opens TCP, and port 0 closes it again
            assert client.config_set("port", port) is True
            with redis.Redis(port=port, password="pw") as by_tcp:
                assert by_tcp.ping() is True
            assert client.config_set("port", 0) is True
            with pytest.raises(ConnectionRefusedError):  # (one made before stays, as in Valkey)
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
        lines = server.stop()
    assert "* Ready to accept connections unix" in lines
    assert "* Ready to accept connections tcp" not in lines


def test_what_was_at_the_path_is_replaced(kind: str, socket_folder: Path) -> None:
    (socket_folder / "s.sock").write_text("not a socket")  # even a regular file goes, as in Valkey
    with spawned(kind, socket_folder) as server:
        assert stat.S_ISSOCK(server.path.stat().st_mode)
        with server.client() as client:
            assert client.ping() is True


def start_refused(kind: str, socket_folder: Path, *flags: str) -> list[str]:
    """A start that fails at the socket: exit status 1 and its warning lines (fakekey's
    `main` runs in this process: the same code without a Python start-up)."""
    args = ["--port", str(free_port()), "--save", "", "--dir", str(socket_folder), *flags]
    if kind == "fakekey":
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = main(args)
        stdout = out.getvalue()
    else:
        proc = subprocess.run([*command_line(kind), *args], capture_output=True, text=True, timeout=60)
        status, stdout = proc.returncode, proc.stdout
    assert status == 1, stdout
    return [line for line in LOG_PREFIX.sub("", stdout).splitlines() if line.startswith("# Failed")]


def test_a_socket_that_cannot_be_opened_stops_the_start(kind: str, socket_folder: Path) -> None:
    missing = socket_folder / "missing" / "s.sock"
    assert start_refused(kind, socket_folder, "--unixsocket", str(missing)) == [
        "# Failed opening Unix socket: bind: No such file or directory"]
    long_path = "/tmp/" + "x" * 110
    assert start_refused(kind, socket_folder, "--unixsocket", long_path) == [
        "# Failed opening Unix socket: unix socket path too long (115), must be under 108"]
    path = socket_folder / "g.sock"
    assert start_refused(kind, socket_folder, "--unixsocket", str(path), "--unixsocketgroup", "no-such-group-fk") == [
        "# Failed opening Unix socket: getgrnam error for group 'no-such-group-fk': Success"]
    assert stat.S_ISSOCK(path.stat().st_mode)  # bound before the group was looked up: left, as Valkey
