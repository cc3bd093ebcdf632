"""Failing a test on a lost wake (docs/pytest.md, "Lost wakes"; docs/emq.md, "The lost-wake
detector"): `assert_no_lost_wakes(server_or_client)` and the `fakekey_no_lost_wakes`
fixture's guard."""

from __future__ import annotations

from typing import Any

from fakekey.core.wakes import LostWake, WakeReport
from fakekey.net.server import Server
from fakekey.testing.raw import RawClient, plain
from fakekey.testing.servers import RunningServer

__all__ = ["LostWake", "LostWakeGuard", "WakeReport", "assert_no_lost_wakes", "reset_wakes",
           "wake_report"]


def wake_report(target: Any) -> WakeReport:
    """The detector's report from a `fakekey.Server`, the plugin's server handle
    (`fakekey_server`, `fakekey_running`), a redis-py/valkey-py client (sync) or a
    `RawClient`: what FAKEKEY.WAKES GET answers."""
    if isinstance(target, Server):
        return target.wakes()
    if isinstance(target, RunningServer):
        if target.server is not None:
            return target.server.wakes()
        with target.raw() as raw:
            return _raw_report(raw)
    if isinstance(target, RawClient):
        return _raw_report(target)
    execute = getattr(target, "execute_command", None)
    if execute is None:
        raise TypeError(f"cannot read the lost wakes of {target!r}: pass a fakekey.Server, "
                        "a server handle, a redis-py style client or a RawClient")
    return WakeReport.from_reply(execute("FAKEKEY.WAKES", "GET"))


def _raw_report(raw: RawClient) -> WakeReport:
    reply = raw.call("FAKEKEY.WAKES", "GET")
    if reply[0] == "-":
        raise RuntimeError(f"FAKEKEY.WAKES GET failed: {reply[1]!r}")
    return WakeReport.from_reply(plain(reply))


def reset_wakes(target: Any) -> None:
    """Clear the detector's counts and records (FAKEKEY.WAKES RESET), on the same targets
    as `wake_report`."""
    if isinstance(target, RunningServer) and target.server is not None:
        target = target.server
    if isinstance(target, Server):
        target.reset_wakes()
    elif isinstance(target, RunningServer):
        with target.raw() as raw:
            raw.call("FAKEKEY.WAKES", "RESET")
    elif isinstance(target, RawClient):
        target.call("FAKEKEY.WAKES", "RESET")
    else:
        target.execute_command("FAKEKEY.WAKES", "RESET")


def assert_no_lost_wakes(target: Any) -> WakeReport:
    """Fails (AssertionError, listing each lost wake: when, queue, transition, the command
    or script that made it, the parked client) when the server recorded any lost wake.
    Returns the report (wasted wakes do not fail it)."""
    __tracebackhide__ = True
    report = wake_report(target)
    if report.lost:
        raise AssertionError("lost wakes: a claimable transition pushed no token while a "
                             "client was parked on the wake list\n" + report.describe())
    return report


class LostWakeGuard:
    """What `fakekey_no_lost_wakes` gives: the test's server, its detector emptied when the
    test starts; the plugin fails the test after its body if a wake was lost. On a target
    that is not fakekey (a real Valkey has no detector) it checks nothing."""

    def __init__(self, running: RunningServer) -> None:
        self.running = running
        self.active = running.is_fakekey
        if self.active:
            reset_wakes(running)

    def report(self) -> WakeReport | None:
        """The detector's report so far (None on a target without one)."""
        return wake_report(self.running) if self.active else None

    def check(self) -> None:
        __tracebackhide__ = True
        if self.active:
            assert_no_lost_wakes(self.running)
