"""The test process's patched `time.time()` (unittest.mock, freezegun), read for a running
server clock (core/clock.py) when a test has replaced it.

freezegun answers the real time to a caller with a frame of a module it ignores (its
list has `threading`) among the 5 Python frames nearest its caller; in a server's loop
thread every callback runs a few frames above threading's. So the time is read from
deeper than that, in Python frames: this module stays out of the compiled ones (mypyc's
functions have no frames)."""

from __future__ import annotations

import time
from typing import Final

FREEZEGUN_FRAMES: Final = 5


def patched_time_us() -> int:
    """The patched time in microseconds, to the nearest (a patched 1234567890.1234567 is
    TIME's 123457 µs, not 123456: a float's seconds rarely hold the exact microsecond);
    the wall clock when the patch answers no number (a mock whose side_effect list ran
    out, or that raises)."""
    try:
        return round(float(_read_time(FREEZEGUN_FRAMES)) * 1_000_000)
    except Exception:  # noqa: BLE001 - the test's patch, not the server, is at fault
        return time.time_ns() // 1000


def _read_time(depth: int) -> float:
    return time.time() if depth == 0 else _read_time(depth - 1)
