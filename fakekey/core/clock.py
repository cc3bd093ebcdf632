"""The one clock: the wall clock, or a frozen time that tests set and advance.

Everything time-dependent (expiry, TIME, stream ids, idle times, blocking deadlines, the
EMQ verbs) reads this clock, through the per-command snapshot the server takes.

A running clock is the process's `time.time()`, as a test may patch it: `unittest.mock`
and freezegun replace the module's `time` attribute (one identity check tells, nothing
paid while it is the real one); time-machine changes `time.time_ns` itself, read here.
"""

from __future__ import annotations

import time
from typing import Final

from fakekey.core.patched_time import patched_time_us

# The latest time the clock may show, in ms: the largest absolute time PEXPIREAT accepts
# (LLONG_MAX). Everything Valkey derives from the clock (deadlines, stream ids, TTLs,
# TIME) stays within what it can hold.
MAX_MS = 2**63 - 1


# The unpatched time.time: while `time.time is REAL_TIME[0]`, time.time_ns is the wall
# clock. In a tuple, where freezegun's sweep of module attributes (it swaps each real time
# function it finds for its fake) does not reach it.
REAL_TIME: Final = (time.time,)


def patched_now_us() -> int:
    """The patched `time.time()` (mock, freezegun) in microseconds, within 0..MAX_MS."""
    return min(max(patched_time_us(), 0), MAX_MS * 1000)


class ClockRangeError(ValueError):
    """A time the clock cannot show: before the epoch or past MAX_MS."""


class Clock:
    """Milliseconds since the epoch. Frozen when `frozen_us` is set; between 0 and
    MAX_MS."""

    __slots__ = ("frozen_us",)

    def __init__(self) -> None:
        self.frozen_us: int | None = None

    @property
    def frozen(self) -> bool:
        return self.frozen_us is not None

    def now_us(self) -> int:
        if self.frozen_us is None:
            return time.time_ns() // 1000 if time.time is REAL_TIME[0] else patched_now_us()
        return self.frozen_us

    def now_ms(self) -> int:
        if self.frozen_us is None:
            return time.time_ns() // 1_000_000 if time.time is REAL_TIME[0] else patched_now_us() // 1000
        return self.frozen_us // 1000

    def freeze(self, ms: int) -> None:
        if not 0 <= ms <= MAX_MS:
            raise ClockRangeError(f"clock time {ms} is outside 0..{MAX_MS} ms")
        self.frozen_us = ms * 1000

    def advance(self, ms: int) -> None:
        """Move the clock forward; a running clock is frozen at now + ms."""
        if ms < 0:
            raise ClockRangeError("the clock only moves forward")
        target_us = self.now_us() + ms * 1000
        if target_us // 1000 > MAX_MS:
            raise ClockRangeError(f"the clock cannot move past {MAX_MS} ms")
        self.frozen_us = target_us

    def real(self) -> None:
        self.frozen_us = None
