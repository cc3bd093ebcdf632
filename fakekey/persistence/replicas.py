"""In-process replicas (a fakekey.Cluster's): a primary's changes, recorded as the
append-only log records them (persistence/aof.py: the command as it ran under its clock
snapshot, a random write by its effect, an expiry as a removal), applied to each replica
as the command ends, in order. The replication offset counts the bytes of those records.

A replica applies a unit as a client that may do anything and never blocks (the log's
Replayer), so what it holds after each command is what its primary holds.

The server may also serve real replicas (persistence/replication_primary.py): then its
feed is a Propagation (persistence/propagate.py) that wraps this one, whichever attached
first, and the offset is that stream's (a Valkey primary has one offset): the in-process
replicas take it instead of counting their own records."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.core.keyspace import string_bytes
from fakekey.persistence.aof import Recorder, Replayer
from fakekey.persistence.propagate import Propagation

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

# the PING a primary sends its replicas every repl-ping-replica-period, as it travels
REPLICATION_PING = b"*1\r\n$4\r\nPING\r\n"


class ReplicaFeed(Recorder):
    """`state.feed` while the server has in-process replicas."""

    def __init__(self, state: ServerState) -> None:
        super().__init__(state)
        self.replicas: list[Replayer] = []
        self.offset = 0
        self.behind: set[int] = set()  # ids of replica states that missed records

    def attach(self, replica: ServerState) -> None:
        """A new replica: it gets the primary's data, then follows it (a full sync)."""
        replayer = Replayer(replica)
        for db in replica.dbs:
            db.flush()
        for mine in self.state.dbs:
            if not mine.data or mine.index >= len(replica.dbs):
                continue
            db = replica.dbs[mine.index]
            for key, value in mine.data.items():
                db.load(key, value.copy() if hasattr(value, "copy") else string_bytes(value),
                        mine.expires.get(key, -1), self.state.now)
        self.replicas.append(replayer)
        replica.replica_of = self.state
        replica.replid = self.state.replid
        self.ping()

    def _reaches(self, replica: ServerState) -> bool:
        mine, theirs = self.state.cluster, replica.cluster
        if mine is None or theirs is None or mine.bus is None:
            return True
        return mine.bus.sees(mine, theirs)

    def catch_up(self) -> None:
        """The replicas that missed records and can be reached again: a full sync."""
        for replayer in list(self.replicas):
            replica = replayer.state
            if id(replica) in self.behind and self._reaches(replica):
                self.behind.discard(id(replica))
                self.detach(replica)
                self.attach(replica)

    def detach(self, replica: ServerState) -> None:
        self.replicas = [r for r in self.replicas if r.state is not replica]
        if replica.replica_of is self.state:
            replica.replica_of = None

    def followers(self) -> list[Any]:
        found = [r.state for r in self.replicas if id(r.state) not in self.behind and self._reaches(r.state)]
        if self._offset_shared():  # the last unit moved the shared offset after they applied it
            for replica in found:
                replica.repl_offset = self.state.repl_offset
                replica.replid = self.state.replid
        return found

    def _offset_shared(self) -> bool:
        """Real replicas follow too: the offset is their stream's, not these records'."""
        primary = self.state.repl_primary
        return primary is not None and primary.backlog is not None

    def _advance(self, size: int) -> None:
        """The offset after a unit of `size` bytes of these records (or, shared, the
        real replicas' stream's, which moves by itself)."""
        if not self._offset_shared():
            self.state.repl_offset = max(self.offset, self.state.repl_offset) + size
        self.offset = self.state.repl_offset

    def ping(self) -> None:
        """The replication PING: it moves the offset (an idle replica's offset is not 0)."""
        self._advance(len(REPLICATION_PING))
        for replayer in self.replicas:
            replayer.state.repl_offset = self.offset

    def handle(self, client: Any, cmd: Any, argv: list[bytes]) -> Any:
        aof = self.state.aof
        return cmd.handler(client, argv) if aof is None else aof.run(client, cmd, argv)

    def expired(self, db: int, key: bytes) -> None:
        if self.state.aof is not None:
            self.state.aof.expired(db, key)
        super().expired(db, key)

    def deliver(self, unit: bytes) -> None:
        self._advance(len(unit))
        for replayer in self.replicas:
            replica = replayer.state
            if not self._reaches(replica):  # cut off or dead: it resyncs when back
                self.behind.add(id(replica))
                continue
            saved = replica.now
            try:
                replayer.apply(unit)
            finally:
                replica.now = saved
            replica.repl_offset = self.offset
            replica.replid = self.state.replid  # a real replica's first sync starts a new history
            if replica.blocking.ready:  # readers parked on the replica (READONLY) wake
                replica.blocking.serve()


def replica_feed(state: ServerState) -> ReplicaFeed | None:
    """The server's in-process replicas' feed, if it has one (under a Propagation too)."""
    feed = state.feed
    if isinstance(feed, Propagation):
        feed = feed.inner
    return feed if isinstance(feed, ReplicaFeed) else None


def install_feed(state: ServerState, feed: ReplicaFeed | None) -> None:
    """`feed` becomes the server's in-process replicas' feed (None: it has none), under the
    Propagation that serves real replicas when there is one, so they keep the stream."""
    outer = state.feed
    if isinstance(outer, Propagation):
        outer.inner = feed
    else:
        state.feed = feed


def attach(replica: ServerState, primary: ServerState) -> None:
    """`replica` takes `primary`'s data and follows its writes from now on."""
    feed = replica_feed(primary)
    if feed is None:
        feed = ReplicaFeed(primary)
        install_feed(primary, feed)
    feed.attach(replica)


def promote(replica: ServerState) -> None:
    """A failover: `replica` becomes the primary of its shard with a new config epoch,
    takes its primary's slots, and the old primary (if it lives) and the other replicas
    follow it. The nodes that can see it learn the new claim at once."""
    view = replica.cluster
    assert view is not None and view.myself.primary is not None and view.bus is not None
    old_id = view.myself.primary.id
    shard = [v for v in view.bus.views if v.myself.id == old_id or (
        v.myself.primary is not None and v.myself.primary.id == old_id and v is not view)]
    epoch = max(v.current_epoch for v in view.bus.views if v.alive) + 1
    view.current_epoch = view.myself.config_epoch = epoch
    view.myself.primary = None
    replica.replica_of = None
    for slot, owner in enumerate(view.owners):
        if owner is not None and owner.id == old_id:
            view.claim(slot, view.myself)
    if replica_feed(replica) is None:
        install_feed(replica, ReplicaFeed(replica))
    for other in shard:
        old_feed = replica_feed(other.state)
        if old_feed is not None:
            install_feed(other.state, None)
            if old_feed.offset > replica.repl_offset:
                replica.repl_offset = old_feed.offset
        # the old primary learns it from the claim below (its blocked clients are told
        # MOVED, then it follows); the other replicas follow now; one dead or cut off
        # learns it on its return
        if other.myself.id != old_id and view.bus.sees(view, other):
            other.myself.primary = other.nodes.get(view.myself.id) or other.meet_node(view.myself)
            attach(other.state, replica)
    feed = replica_feed(replica)
    assert feed is not None
    feed.offset = max(feed.offset, replica.repl_offset)
    view.myself.repl_offset = feed.offset
    view.announce()
    for other in shard:
        other.announce()
