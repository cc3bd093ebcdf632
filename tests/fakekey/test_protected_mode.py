"""protected-mode, side by side with a real valkey-server: with no password, a client
from outside loopback gets Valkey's DENIED text and is closed; CONFIG SET protected-mode
no (at run time) or a password lets it in. Both servers listen on every address and are
reached through this machine's own non-loopback address."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from fakekey import Server
from fakekey.net.server import PROTECTED_MODE_DENIED
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import find_valkey_binary, free_port


def outside_address() -> str | None:
    """An address of this machine that is not loopback (None when there is none)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
            address = probe.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


ADDRESS = outside_address()
pytestmark = pytest.mark.skipif(ADDRESS is None, reason="no non-loopback address here")


@pytest.fixture
def fakekey_port() -> Iterator[int]:
    with Server(bind="0.0.0.0") as server:
        yield server.port


@pytest.fixture
def valkey_port(tmp_path) -> Iterator[int]:
    binary = find_valkey_binary()
    if binary is None:
        pytest.skip("no valkey-server binary")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "0.0.0.0", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with RawClient("127.0.0.1", port, timeout=1) as client:
                    client.call("PING")
                    break
            except OSError:
                time.sleep(0.02)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)


def first_answer_from_outside(port: int) -> bytes:
    """What a client connecting from outside loopback receives for PING, until closed or answered."""
    with socket.create_connection((ADDRESS, port), timeout=5) as sock:
        sock.sendall(b"PING\r\n")
        received = b""
        while not received.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += chunk
        return received


@pytest.mark.parametrize("server", ["fakekey", "valkey"])
def test_protected_mode_refuses_outside_clients_until_turned_off(request, server):
    port = request.getfixturevalue(f"{server}_port")
    assert first_answer_from_outside(port) == PROTECTED_MODE_DENIED
    with RawClient("127.0.0.1", port) as local:
        assert local.call("PING") == ("+", b"PONG")
        assert local.call("CONFIG", "SET", "protected-mode", "no") == ("+", b"OK")
        assert first_answer_from_outside(port) == b"+PONG\r\n"
        assert local.call("CONFIG", "SET", "protected-mode", "yes", "requirepass", "pw") == ("+", b"OK")
        assert first_answer_from_outside(port) == b"-NOAUTH Authentication required.\r\n"
