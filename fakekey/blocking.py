"""Blocked clients: waiters per key, first come first served, woken only after the command,
transaction or script that made their key ready has ended."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fakekey.client import Client
    from fakekey.keyspace import Database
    from fakekey.state import ServerState


class Blocking:
    """The registry of waiters and the queue of keys made ready."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.ready: list[tuple[Database, bytes]] = []

    def signal(self, db: Database, key: bytes) -> None:
        """A key that clients wait on received data: serve them after the command."""
        self.ready.append((db, key))

    def signal_deleted(self, db: Database, key: bytes) -> None:
        """A waited-on key was deleted or replaced: waiters re-check after the command."""
        self.ready.append((db, key))

    def serve(self) -> None:
        """Serve the waiters of every ready key (called after a command ends)."""
        self.ready.clear()

    def forget(self, client: Client) -> None:
        """A client went away: it no longer waits on anything."""

    def expire_timeouts(self) -> None:
        """Time out every waiter whose deadline has passed on the server clock."""

    def blocked_count(self) -> int:
        return 0

    def timeout_due(self) -> Any:
        return None
