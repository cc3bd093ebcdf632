"""FAILOVER on a primary with real replicas: Valkey's coordinated failover (replication.c's
failoverCommand, updateFailoverStatus, abortFailover).

1. FAILOVER [TO host port [FORCE]] [TIMEOUT ms] pauses the writers (INFO's paused_reason
   `failover_in_progress`; CLIENT UNPAUSE does not end it) and waits (`waiting-for-sync`)
   for the target replica, or any replica, to acknowledge the whole stream.
2. Then this server becomes that replica's replica (`failover-in-progress`) and asks it
   `PSYNC replid offset FAILOVER` (net/replica_link.py): the replica, when its replication
   id is this server's, becomes a primary and answers the PSYNC as one.
3. An answer of +CONTINUE or +FULLRESYNC ends the failover and the pause; another answer
   aborts it: this server is a primary again. So do FAILOVER ABORT and the timeout
   (without FORCE: with it, the failover goes on with a replica not caught up).

The checks run when a replica acknowledges and every second (Valkey's replicationCron).
The role changes themselves are the REPLICAOF ones (commands/replication.py), given here
as `become_replica` and `become_primary`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from fakekey.core.pause import FAILOVER_PAUSE, end_pause, start_pause

if TYPE_CHECKING:
    from fakekey.core.state import ServerState
    from fakekey.persistence.replication_primary import ReplicaLink, ReplicationPrimary

log = logging.getLogger("fakekey.net.server")

NO_FAILOVER = "no-failover"
WAIT_FOR_SYNC = "waiting-for-sync"
IN_PROGRESS = "failover-in-progress"
FOREVER_MS = (1 << 63) - 1


def failover_state(state: ServerState) -> str:
    """INFO's master_failover_state."""
    primary = state.repl_primary
    failover = primary.failover if primary is not None else None
    return failover.phase if failover is not None else NO_FAILOVER


def failover_of(state: ServerState) -> Failover | None:
    primary = state.repl_primary
    return primary.failover if primary is not None else None


class Failover:
    """One FAILOVER, from the command to its end (`primary.failover` meanwhile)."""

    def __init__(self, state: ServerState, primary: ReplicationPrimary, target: tuple[str, int] | None,
                 timeout_ms: int, force: bool, become_replica: Callable[[str, int], None],
                 become_primary: Callable[[], None]) -> None:
        self.state = state
        self.primary = primary
        self.target = target  # (host, port); None: the first replica caught up
        self.end = time.monotonic() + timeout_ms / 1000 if timeout_ms else 0.0
        self.force = force
        self.become_replica = become_replica
        self.become_primary = become_primary
        self.phase = WAIT_FOR_SYNC

    @property
    def in_progress(self) -> bool:
        """This server follows the target now and asks it to take over."""
        return self.phase == IN_PROGRESS

    def start(self) -> None:
        self.primary.failover = self
        start_pause(self.state, FOREVER_MS, everything=False, reason=FAILOVER_PAUSE)

    def check(self) -> None:
        """updateFailoverStatus: the timeout, else whether a replica caught up."""
        if self.phase != WAIT_FOR_SYNC:
            return
        if self.end and time.monotonic() >= self.end:
            if self.force and self.target is not None:
                log.info("FAILOVER to %s:%d time out exceeded, failing over.", *self.target)
                self._hand_over()
            else:
                self.abort("Replica never caught up before timeout")
            return
        link = self._caught_up()
        if link is not None:
            self.target = (link.ip, link.port)
            log.info("Failover target %s:%d is synced, failing over.", *self.target)
            self._hand_over()

    def _caught_up(self) -> ReplicaLink | None:
        offset = self.state.repl_offset
        for link in self.primary.online():
            if self.target is not None and (link.ip.lower(), link.port) != (self.target[0].lower(), self.target[1]):
                continue
            if link.ack_offset == offset:
                return link
        return None

    def _hand_over(self) -> None:
        assert self.target is not None
        self.phase = IN_PROGRESS
        self.become_replica(*self.target)

    def accepted(self) -> None:
        """The target answered the PSYNC as a primary: done (clearFailoverState)."""
        self._clear()

    def rejected(self) -> None:
        self.abort("Failover target rejected psync request")

    def abort(self, why: str) -> None:
        """abortFailover: a server that follows the target already is a primary again."""
        if self.primary.failover is not self:
            return
        if self.target is not None:
            log.info("FAILOVER to %s:%d aborted: %s", self.target[0], self.target[1], why)
        else:
            log.info("FAILOVER to any replica aborted: %s", why)
        if self.phase == IN_PROGRESS:
            self.become_primary()
        self._clear()

    def _clear(self) -> None:
        self.phase = NO_FAILOVER
        if self.primary.failover is self:
            self.primary.failover = None
        end_pause(self.state, FAILOVER_PAUSE)


__all__ = ["Failover", "failover_state", "failover_of", "NO_FAILOVER", "WAIT_FOR_SYNC", "IN_PROGRESS"]
