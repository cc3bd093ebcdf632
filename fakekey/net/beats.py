"""Shared cron timers: one loop timer for every server's cron of the same period.

The servers of a process share one event loop (net/loop_thread.py); with a timer each,
N idle servers wake the loop 2N times a tick (their cron, `hz` times a second, and
persistence's), and each wake costs more than the idle cron's own work. A `Beat` is
one timer per loop and period: every `period` seconds it runs the crons that joined
it, in the order they joined. A server whose `hz` changes moves its cron to the beat
of the new period (at its next turn, as a timer set again for 1/hz would take it).
The beats belong to the loop, not to any server: a server keeps only its own crons."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger("fakekey.net.server")


class Beat:
    """A loop timer every `period` seconds that runs every cron that joined it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, period: float) -> None:
        self.loop = loop
        self.period = period
        # the crons, by themselves (bound methods compare equal across bindings)
        self.crons: dict[Callable[[], None], None] = {}
        self.timer: asyncio.TimerHandle | None = None

    def join(self, cron: Callable[[], None]) -> None:
        self.crons[cron] = None
        if self.timer is None:
            self.timer = self.loop.call_later(self.period, self._run)

    def leave(self, cron: Callable[[], None]) -> None:
        self.crons.pop(cron, None)
        if not self.crons:
            self._stop()

    def _run(self) -> None:
        self.timer = None
        for cron in list(self.crons):
            if cron in self.crons:  # not left meanwhile (a server another's cron stopped)
                try:
                    cron()
                except Exception:  # noqa: BLE001 - one cron's failure stops no other
                    log.exception("cron")
        if self.crons and self.timer is None:
            self.timer = self.loop.call_later(self.period, self._run)

    def _stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if _beats.get((id(self.loop), self.period)) is self:
            del _beats[(id(self.loop), self.period)]


_beats: dict[tuple[int, float], Beat] = {}  # (id(loop), period) -> its beat


def beat_of(loop: asyncio.AbstractEventLoop, period: float) -> Beat:
    """The loop's beat of this period, made on first use (and forgotten once empty)."""
    beat = _beats.get((id(loop), period))
    if beat is None or beat.loop is not loop:
        beat = _beats[(id(loop), period)] = Beat(loop, period)
    return beat
