"""The Unix socket of an in-process server (`fakekey.Server(unixsocket=...)`, FakeServer):
served on the shared loop next to TCP, or alone with port=0 (its url then unix://PATH);
a relative path lies in `dir`; the file goes at stop; a socket that cannot be opened fails
the start and leaves no TCP listener behind. tests/conformance/test_unix_socket.py checks
the behaviour itself against a real valkey-server."""

from __future__ import annotations

import asyncio
import socket
import stat
import sys
from pathlib import Path

import pytest
import redis

import fakekey
from fakekey.net.sockets import UnixSocketFailure
from fakekey.testing.targets import free_port


def test_a_server_listens_on_tcp_and_on_its_socket(socket_folder: Path) -> None:
    path = socket_folder / "s.sock"
    with fakekey.Server(unixsocket=str(path), unixsocketperm=700) as srv:
        assert srv.url.startswith("redis://127.0.0.1:") and srv.port
        assert srv.unix_socket_path == str(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        with redis.Redis(unix_socket_path=str(path)) as by_socket, redis.Redis.from_url(srv.url) as by_tcp:
            by_socket.set("k", "v")
            assert by_tcp.get("k") == b"v"
            assert by_socket.client_info()["flags"] == "U"
            assert by_tcp.client_info()["flags"] == "N"
    assert not path.exists()


def test_port_0_with_a_socket_is_the_socket_alone(socket_folder: Path) -> None:
    path = socket_folder / "s.sock"
    with fakekey.Server(port=0, unixsocket=str(path)) as srv:
        assert srv.port == 0 and srv.url == f"unix://{path}"
        with redis.Redis.from_url(srv.url) as client:
            assert client.ping() is True
            assert client.config_get("port") == {"port": "0"}
            port = free_port()
            client.config_set("port", port)  # TCP from now on: the url says so
            assert srv.url == f"redis://127.0.0.1:{port}"
            client.config_set("port", 0)
            assert srv.url == f"unix://{path}"
    assert not path.exists()


def test_a_relative_path_is_in_dir(socket_folder: Path) -> None:
    with fakekey.Server(port=0, unixsocket="s.sock", dir=str(socket_folder)) as srv:
        with redis.Redis(unix_socket_path=str(socket_folder / "s.sock")) as client:
            assert client.ping() is True
            assert client.config_get("unixsocket") == {"unixsocket": "s.sock"}
        assert srv.unix_socket_path == "s.sock"
    assert not (socket_folder / "s.sock").exists()


def test_a_socket_that_cannot_be_opened_fails_the_start(socket_folder: Path) -> None:
    port = free_port()
    srv = fakekey.Server(port=port, unixsocket=str(socket_folder / "missing" / "s.sock"))
    with pytest.raises(UnixSocketFailure, match="^bind: No such file or directory$"):
        srv.start()
    with socket.socket() as probe:  # its TCP port was let go
        probe.bind(("127.0.0.1", port))


def test_fake_server_takes_a_socket(socket_folder: Path) -> None:
    path = socket_folder / "s.sock"
    server = fakekey.FakeServer(unixsocket=str(path))
    try:
        fake = fakekey.FakeRedis(server=server)
        fake.set("k", "v")  # its clients go on by TCP
        with redis.Redis(unix_socket_path=str(path)) as client:
            assert client.get("k") == b"v"
    finally:
        server.server.stop()
    assert not path.exists()


def test_start_async_serves_the_socket_in_the_running_loop(socket_folder: Path) -> None:
    path = socket_folder / "s.sock"

    async def scenario() -> bytes:
        async with fakekey.Server(port=0, unixsocket=str(path)):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(b"PING\r\n")
            reply = await reader.readline()
            writer.close()
            await writer.wait_closed()
            return reply

    assert asyncio.run(scenario()) == b"+PONG\r\n"
    assert not path.exists()


def test_fakekey_server_run_on_the_socket_alone(socket_folder: Path) -> None:
    """`fakekey-server run --port 0 --unixsocket PATH -- CMD`: REDIS_URL names the socket
    (with the password); without --port, a free TCP port as ever."""
    from fakekey.cli import run_with_server

    path = socket_folder / "s.sock"
    check = ("import os, redis; url = os.environ['REDIS_URL']; "
             "assert url == 'unix://%s?password=p%%2Fw', url; "
             "assert redis.Redis.from_url(url).ping()" % path)
    assert run_with_server(["--port", "0", "--unixsocket", str(path), "--requirepass", "p/w", "--",
                            sys.executable, "-c", check]) == 0
    check = "import os; assert os.environ['REDIS_URL'].startswith('redis://127.0.0.1:'), os.environ['REDIS_URL']"
    assert run_with_server(["--unixsocket", str(path), "--", sys.executable, "-c", check]) == 0
    assert not path.exists()
