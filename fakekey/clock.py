"""The one clock: the wall clock, or a frozen time that tests set and advance.

Everything time-dependent (expiry, TIME, stream ids, idle times, blocking deadlines, the
EMQ verbs) reads this clock, through the per-command snapshot the server takes.
"""

from __future__ import annotations

import time


class Clock:
    """Milliseconds since the epoch. Frozen when `frozen_ms` is set."""

    __slots__ = ("frozen_us",)

    def __init__(self) -> None:
        self.frozen_us: int | None = None

    @property
    def frozen(self) -> bool:
        return self.frozen_us is not None

    def now_us(self) -> int:
        if self.frozen_us is None:
            return time.time_ns() // 1000
        return self.frozen_us

    def now_ms(self) -> int:
        if self.frozen_us is None:
            return time.time_ns() // 1_000_000
        return self.frozen_us // 1000

    def freeze(self, ms: int) -> None:
        self.frozen_us = ms * 1000

    def advance(self, ms: int) -> None:
        """Move the clock forward; a running clock is frozen at now + ms."""
        self.frozen_us = self.now_us() + ms * 1000

    def real(self) -> None:
        self.frozen_us = None
