"""Work the server does by itself at due times on its own clock (the EMQ module's queue
timers): the sources say when they are next due and do what is due; this runs them.

- On the real clock, a loop timer wakes at the earliest due time, set again after every
  command while a source exists (a write may have moved a due time); the cron looks too.
- On a frozen clock nothing fires by itself: `advance_to` (FAKEKEY.CLOCK ADVANCE,
  Server.advance) steps the clock to each due time within the advance, in due-time order,
  fires what is due there and serves the clients it made ready, before the clock reaches
  its target.
- A firing is bounded (each source does at most a batch), so one loop turn does one
  firing per due source; a source still due is fired again at the next turn.
- Nothing fires during a busy script or while clients are paused (CLIENT PAUSE), as keys
  do not expire then.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fakekey.core.state import ServerState


class TimerSource(Protocol):
    def next_due(self) -> int | None:
        """The earliest time (server clock ms) something is due, or None."""

    def fire_due(self, now: int) -> None:
        """Do (a bounded batch of) what is due at `now`."""


class Timers:
    """The server's timer sources and the one loop timer that serves them."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.sources: list[TimerSource] = []  # changed in place: state.timer_sources is it
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0  # the due time the loop timer is set for (0: none)

    def add(self, source: TimerSource) -> None:
        if source not in self.sources:
            self.sources.append(source)

    def next_due(self) -> int | None:
        due: int | None = None
        for source in self.sources:
            at = source.next_due()
            if at is not None and (due is None or at < due):
                due = at
        return due

    def run_due(self) -> None:
        """Fire every source due now, once each, then wait for the next due time."""
        if not self.sources or self.held():
            return
        state = self.state
        now = state.clock.now_ms()
        for source in list(self.sources):
            at = source.next_due()
            if at is not None and at <= now:
                state.now = now  # a firing reads the clock once, as a command does
                source.fire_due(now)
                state.blocking.serve()
        self.rearm()

    def held(self) -> bool:
        """Nothing fires during a busy script (it owns the data) or while clients are
        paused (they see no writes: keys do not expire then either); the cron looks again
        once it ends."""
        state = self.state
        return state.busy_script is not None or state.paused is not None

    def advance_to(self, target: int) -> None:
        """A frozen clock moved to `target`: step through each due time on the way."""
        state = self.state
        clock = state.clock
        while self.sources and not self.held():
            due = self.next_due()
            now = clock.now_ms()
            if due is None or due > target:
                return
            if due > now:
                clock.advance(due - now)
                state.expire_all_due()
                state.blocking.clock_changed()
            written = state.dirty
            self.run_due()
            if state.dirty == written and self.next_due() == due:  # fired and changed nothing
                return

    def rearm(self) -> None:
        """Set the loop timer for the earliest due time (none on a frozen clock)."""
        state = self.state
        due = self.next_due()
        if due is None or state.clock.frozen:
            self._cancel()
            return
        if self._handle is not None and self._at == due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._cancel()
        delay = max(0.0, (due - state.clock.now_ms()) / 1000)
        self._at = due
        self._handle = loop.call_later(delay, self._on_timer)

    def _cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._at = 0

    def _on_timer(self) -> None:
        self._handle = None
        self._at = 0
        self.run_due()
