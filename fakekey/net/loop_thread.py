"""The one background event loop that every in-process server of a process shares.

`Server.start()` serves on this loop instead of a thread and a loop of its own: a
thread costs its stack and a start-up, and a loop its descriptors (an epoll, a
self-pipe, an eventfd...). The loop and its thread belong to the process, not to any
server (each server keeps its own state, config and clock), so they live here, made on
first use and kept for the life of the process. A forked child gets the loop object but
not its thread: it starts a loop of its own on first use."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

new_event_loop: Callable[[], asyncio.AbstractEventLoop]
try:  # uvloop where installed
    import uvloop

    new_event_loop = uvloop.new_event_loop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    new_event_loop = asyncio.new_event_loop

THREAD_NAME = "fakekey-loop"


class LoopThread:
    """An event loop running forever in a daemon thread. Work reaches it through the
    loop's thread-safe calls (`call_soon_threadsafe`, `run_coroutine_threadsafe`), which
    wait in the loop's queue until the thread runs it: no need to wait for the start."""

    def __init__(self) -> None:
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def is_current(self) -> bool:
        """True on the loop's own thread (where waiting for the loop would never end)."""
        return threading.get_ident() == self.thread.ident


_shared: list[LoopThread] = []  # the process's loop thread, once made
_making = threading.Lock()


def shared_loop_thread() -> LoopThread:
    """The process's background loop thread, started on first use."""
    if not _shared:
        with _making:
            if not _shared:
                _shared.append(LoopThread())
    return _shared[0]


def _forget_in_child() -> None:
    global _making
    _shared.clear()
    _making = threading.Lock()  # it may have been held by a thread the child does not have


os.register_at_fork(after_in_child=_forget_in_child)


# --- servers that share a loop ----------------------------------------------------------------
# A server on a loop cannot reach another server on the same loop through a blocking socket
# (MIGRATE's): the other would answer only once the first let go of the loop. So each loop
# knows the servers it runs, by port, and such a request is handed to the other's state.

LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_neighbours: dict[int, dict[int, ServerState]] = {}  # id(loop) -> port -> a server's state


def serving_on(loop: asyncio.AbstractEventLoop, port: int, state: ServerState) -> None:
    _neighbours.setdefault(id(loop), {})[port] = state


def gone_from(loop: asyncio.AbstractEventLoop, port: int, state: ServerState) -> None:
    served = _neighbours.get(id(loop))
    if served is not None and served.get(port) is state:
        del served[port]
        if not served:
            del _neighbours[id(loop)]


def neighbour(loop: asyncio.AbstractEventLoop, own_host: str, host: str, port: int) -> ServerState | None:
    """The state of the server this loop runs at host:port (a loopback address, or the
    asking server's own host), or None."""
    if host not in LOOPBACK and host != own_host:
        return None
    return _neighbours.get(id(loop), {}).get(port)
