"""What a thread waits on while a server starts or stops on the shared loop thread.

`threading.Event` and `concurrent.futures.Future` would do, but each is four or five
objects (a condition, its lock, its waiters...) that the garbage collector walks for a
server's whole life, and a new in-process server is meant to cost a fraction of a
millisecond (bench/instances.py). These hold one lock each."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Latch:
    """`threading.Event`'s set / clear / is_set / wait, on one lock held while not set."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held = threading.Lock()

    def is_set(self) -> bool:
        return not self._held.locked()

    def clear(self) -> None:
        self._held.acquire(blocking=False)

    def set(self) -> None:
        if self._held.locked():
            self._held.release()

    def wait(self, timeout: float | None = None) -> bool:
        """True once set (False: `timeout` seconds passed first)."""
        if not self._held.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self._held.release()  # set it stays: the next waiter passes too
        return True


class BackgroundStart:
    """The part of a start that runs on the loop thread after `Server.start(wait=False)`
    returned: done once it ran, with the error that stopped it, if one did. `then` runs a
    callable when it is done; it is called on the loop's thread only, as `finish` is."""

    __slots__ = ("_latch", "error", "task", "_then")

    def __init__(self) -> None:
        self._latch = Latch()
        self._latch.clear()
        self.error: BaseException | None = None
        self.task: Any = None  # the loop's task that runs it (held: a loop holds tasks weakly)
        self._then: Callable[[], None] | None = None

    def done(self) -> bool:
        return self._latch.is_set()

    def wait(self) -> None:
        self._latch.wait()

    def result(self) -> None:
        """Wait until done; raises the error that stopped the start, if one did."""
        self._latch.wait()
        if self.error is not None:
            raise self.error

    def then(self, callback: Callable[[], None]) -> None:
        if self.done():
            callback()
        else:
            self._then = callback

    def finish(self, error: BaseException | None) -> None:
        self.error, self.task = error, None
        self._latch.set()
        callback, self._then = self._then, None
        if callback is not None:
            callback()
