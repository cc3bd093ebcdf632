"""The clock of `fakekey_clock` on every target, and the guard that turns a silent hang
under a frozen clock into a failed test.

- In-process fakekey: the `fakekey.Server` itself (freeze, advance, real_time...).
- A URL target that is a fakekey: `RemoteClock`, the same methods through FAKEKEY.CLOCK.
- A real Valkey: `SleepingClock`. Its clock runs on; `advance` sleeps for a short step
  (up to the sleep cap) so expiry and timeout tests run there too, and skips the test,
  with the reason, for a longer one or for `freeze`.
- `FrozenClockGuard`: on an in-process server, a client blocked for longer than the guard
  (wall-clock seconds) while the clock is frozen gets an error naming its command, and
  the test fails with it (nothing else would ever end that wait).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fakekey.core.blocking import Waiter
from fakekey.net.server import Server, _unix_ms
from fakekey.resp.replies import ReplyError
from fakekey.testing.servers import RunningServer, target_id

GUARD_SECONDS = 10.0  # the default wall-clock guard
SLEEP_CAP_SECONDS = 2.0  # the default longest advance a real Valkey sleeps for
LOOK_EVERY = 0.25  # seconds between the guard's looks at the blocked clients
SHOWN_ARGS = 80  # characters of a blocked command shown in the failure


@dataclass
class ClockSettings:
    guard: float = GUARD_SECONDS  # 0: no guard
    sleep_cap: float = SLEEP_CAP_SECONDS


def clock_settings(request: pytest.FixtureRequest, param: Any = None) -> ClockSettings:
    """The ini options, then the `fakekey_clock(guard=, sleep_cap=)` marker, then the
    fixture's indirect parameter (a dict), each over the one before."""
    config = request.config
    settings = ClockSettings(_seconds(config.getini("fakekey_frozen_guard"), GUARD_SECONDS),
                             _seconds(config.getini("fakekey_clock_sleep_cap"), SLEEP_CAP_SECONDS))
    marker = request.node.get_closest_marker("fakekey_clock")
    for given in (marker.kwargs if marker else {}, param or {}):
        unknown = set(given) - {"guard", "sleep_cap"}
        if unknown:
            raise pytest.UsageError(f"fakekey_clock takes guard= and sleep_cap=, not {sorted(unknown)}")
        for name, value in given.items():
            setattr(settings, name, float(value))
    return settings


def _seconds(text: Any, default: float) -> float:
    return float(text) if text not in (None, "") else default


# --- the guard ------------------------------------------------------------------------


class FrozenClockGuard:
    """Looks at an in-process server's blocked clients every LOOK_EVERY seconds, on the
    server's own loop (no thread, no connection: the test's server sees nothing of it).
    The wall clock is the loop's (freezegun patches time.monotonic, not uvloop's)."""

    def __init__(self, server: Server, seconds: float) -> None:
        self.server = server
        self.seconds = seconds
        self.trips: list[str] = []
        self._since: dict[int, tuple[object, float]] = {}  # client id: (its wait, first seen)
        self._handle: Any = None
        self._stopped = False

    def start(self) -> FrozenClockGuard:
        loop = self.server.state.loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._look)
        return self

    def stop(self) -> None:
        self._stopped = True
        loop, handle = self.server.state.loop, self._handle
        if handle is not None and loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(handle.cancel)

    def _look(self) -> None:
        if self._stopped:
            return
        state = self.server.state
        loop = state.loop
        assert loop is not None
        if self.seconds > 0 and state.clock.frozen:
            now = loop.time()
            for client in list(state.clients.values()):
                wait = client.blocked
                if not isinstance(wait, Waiter) or not wait.active:
                    self._since.pop(client.id, None)
                    continue
                seen = self._since.get(client.id)
                if seen is None or seen[0] is not wait:
                    self._since[client.id] = (wait, now)
                elif now - seen[1] >= self.seconds:
                    self._trip(wait)
        else:
            self._since.clear()
        self._handle = loop.call_later(LOOK_EVERY, self._look)

    def _trip(self, wait: Waiter) -> None:
        message = frozen_wait_message(wait.argv, self.seconds)
        self.trips.append(message)
        self._since.pop(wait.client.id, None)
        self.server.state.blocking.unblock(wait.client, ReplyError(f"ERR fakekey: {message}"))


def frozen_wait_message(argv: list[bytes], seconds: float) -> str:
    command = b" ".join(argv).decode("utf-8", "replace")
    if len(command) > SHOWN_ARGS:
        command = command[:SHOWN_ARGS] + "..."
    return (f"'{command}' was blocked for {seconds:g} s of wall-clock time while the server's "
            f"clock is frozen: nothing ends that wait until the clock moves (advance it: "
            f"fakekey_clock.advance(...), FAKEKEY.CLOCK ADVANCE; or raise the guard: "
            f"@pytest.mark.fakekey_clock(guard=...), ini fakekey_frozen_guard)")


# --- the clock on other targets ----------------------------------------------------------


class _ClockMethods:
    """`frozen()` for the clocks below, as `fakekey.Server.frozen` is."""

    def freeze(self, ms: int | None = None, *, at: datetime.datetime | int | None = None) -> None:
        raise NotImplementedError

    def real_time(self) -> None:
        raise NotImplementedError

    @contextlib.contextmanager
    def frozen(self, at: datetime.datetime | int | None = None) -> Iterator[Any]:
        self.freeze(at=at)
        try:
            yield self
        finally:
            self.real_time()


class RemoteClock(_ClockMethods):
    """The clock of a fakekey given by URL, through FAKEKEY.CLOCK: `fakekey.Server`'s
    clock methods."""

    def __init__(self, running: RunningServer) -> None:
        self.running = running

    def _clock(self, *args: Any) -> Any:
        with self.running.raw() as client:
            kind, value = client.call("FAKEKEY.CLOCK", *args)
        if kind == "-":
            raise ValueError(value.decode())
        return value

    def time_ms(self) -> int:
        return int(self._clock("GET"))

    def freeze(self, ms: int | None = None, *, at: datetime.datetime | int | None = None) -> None:
        when = ms if at is None else _unix_ms(at)
        self._clock("SET", self.time_ms() if when is None else when)

    def advance(self, ms: int = 0, *, seconds: float = 0) -> None:
        self._clock("ADVANCE", ms + round(seconds * 1000))

    def real_time(self) -> None:
        self._clock("REAL")


class SleepingClock(_ClockMethods):
    """`fakekey_clock` on a real Valkey, whose clock nobody can move: a short advance is a
    sleep of that long (the server's time passes for real), a longer one skips the test."""

    def __init__(self, running: RunningServer, sleep_cap: float) -> None:
        self.running = running
        self.sleep_cap = sleep_cap

    def time_ms(self) -> int:
        with self.running.raw() as client:
            _, ((_, seconds), (_, micros)) = client.call("TIME")
        return int(seconds) * 1000 + int(micros) // 1000

    def advance(self, ms: int = 0, *, seconds: float = 0) -> None:
        step = ms + round(seconds * 1000)
        if step < 0:
            raise ValueError("the clock only moves forward")
        if step > self.sleep_cap * 1000:
            pytest.skip(f"advancing the clock {step} ms needs fakekey's clock: on "
                        f"{target_id(self.running.target)} that is a sleep over the sleep cap "
                        f"({self.sleep_cap:g} s: fakekey_clock_sleep_cap)")
        time.sleep(step / 1000)

    def freeze(self, ms: int | None = None, *, at: datetime.datetime | int | None = None) -> None:
        pytest.skip(f"freezing the clock needs fakekey (target: {target_id(self.running.target)})")

    def real_time(self) -> None:
        """The clock is real time already."""
