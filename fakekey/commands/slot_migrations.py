"""Valkey 9's atomic slot migration between the nodes of a fakekey.Cluster (CLUSTER
MIGRATESLOTS, GETSLOTMIGRATIONS, CANCELSLOTMIGRATIONS, SYNCSLOTS as a client sees it),
and CLUSTER FLUSHSLOT. The handlers are CLUSTER subcommands (commands/cluster.py declares
them); this module holds their work.

A MIGRATESLOTS job runs to its end within the command, where Valkey's runs in the
background (snapshot, stream, pause, takeover): the target restores every key of the
slots (through its own command path, so its replicas follow), takes the slots with a new
config epoch, the source deletes the keys (its replicas follow), and the other nodes learn
the new owner from the target's claim. Nothing else runs in between, so the move is
atomic, as Valkey's is to a client: the slots and their keys are the source's until they
are all the target's, then MOVED sends clients there. Each node keeps its jobs for
GETSLOTMIGRATIONS as Valkey does: EXPORT on the source, IMPORT on the target, a tracking
IMPORT (no node ids) on the target's replicas; a job refused by its target is a failed
EXPORT with the target's error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, c_text, try_int
from fakekey.commands.dump import dump_value
from fakekey.core.client import Client
from fakekey.core.cluster import (
    SLOTS,
    ClusterNode,
    ClusterView,
    bump_epoch,
    new_node_id,
    redirect_blocked_clients,
)
from fakekey.resp.replies import OK, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

NO_CLUSTER = ReplyError("ERR This instance has cluster support disabled")
BAD_SLOT = ReplyError("ERR Invalid or out of range slot")
NAME_LEN = 40
Ranges = list[tuple[int, int]]
FINISHED = ("success", "failed", "cancelled")
# the SYNCSLOTS messages only a migration's own link may send
LINK_ONLY = (b"ACK", b"SNAPSHOT-EOF", b"PAUSED", b"REQUEST-PAUSE", b"REQUEST-FAILOVER", b"FAILOVER-GRANTED")
LOST_SOURCE = ("Connection lost to source. Check CLUSTER GETSLOTMIGRATIONS on the source node for "
               "more information.")


def view_of(c: Client) -> ClusterView:
    view = c.state.cluster
    if view is None:
        raise NO_CLUSTER
    return view


def parse_slot(raw: bytes) -> int:
    slot = try_int(raw)
    if slot is None or not 0 <= slot < SLOTS:
        raise BAD_SLOT
    return slot


# --- the jobs -----------------------------------------------------------------------------------


class SlotMigration:
    """One job as CLUSTER GETSLOTMIGRATIONS describes it."""

    def __init__(self, name: str, operation: str, ranges: Ranges, now_s: int,
                 target_id: str | None = None, source_id: str | None = None) -> None:
        self.name = name
        self.operation = operation
        self.ranges = ranges
        self.target_id = target_id  # None on a replica's tracking job
        self.source_id = source_id
        self.created = self.updated = now_s
        self.state = "connecting" if operation == "EXPORT" else "waiting-for-ack"
        self.message = ""

    def finish(self, state: str, now_s: int, message: str = "") -> None:
        self.state = state
        self.message = message
        self.updated = now_s

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def reply(self) -> dict[bytes, Any]:
        out: dict[bytes, Any] = {
            b"name": self.name.encode(),
            b"operation": self.operation.encode(),
            b"slot_ranges": " ".join(f"{a}-{b}" for a, b in self.ranges).encode(),
        }
        if self.target_id is not None and self.source_id is not None:
            out[b"target_node"] = self.target_id.encode()
            out[b"source_node"] = self.source_id.encode()
        out.update({b"create_time": self.created, b"last_update_time": self.updated,
                    b"last_ack_time": self.updated, b"state": self.state.encode(),
                    b"message": self.message.encode(), b"cow_size": 0, b"remaining_repl_size": 0})
        return out


def record_job(view: ClusterView, job: SlotMigration) -> None:
    """A new job, first in the node's list; the finished ones past
    cluster-slot-migration-log-max-len forgotten, oldest first."""
    jobs = view.slot_migrations
    jobs.insert(0, job)
    keep = view.state.config["cluster-slot-migration-log-max-len"]
    finished = [j for j in jobs if j.finished]
    for old in finished[keep:]:
        jobs.remove(old)


def now_s(state: ServerState) -> int:
    return state.now // 1000


# --- CLUSTER MIGRATESLOTS ------------------------------------------------------------------------


def migrateslots(c: Client, argv: list[bytes]) -> Any:
    """MIGRATESLOTS SLOTSRANGE start end [start end ...] NODE id [SLOTSRANGE ... NODE id ...]:
    checked whole as clusterCommandMigrateSlots checks it (nothing starts on an error),
    then each group moved to its node."""
    view = view_of(c)
    refusal = cannot_migrate(view)
    if refusal is not None:
        raise ReplyError("ERR " + refusal)
    groups: list[tuple[Ranges, ClusterNode]] = []
    at = 2
    while at < len(argv):
        if argv[at].lower() != b"slotsrange":
            raise SYNTAX
        ranges, at, owner = parse_ranges(view, argv, at + 1)
        if owner is not view.myself:
            raise ReplyError("ERR Slots are not served by this node.")
        if any(overlap(ranges, earlier) for earlier, _node in groups):
            raise ReplyError("ERR Slot ranges in migrations overlap")
        if at + 1 >= len(argv) or argv[at].lower() != b"node":
            raise SYNTAX
        groups.append((ranges, target_node(view, argv[at + 1])))
        at += 2
    jobs = [export(c.state, view, ranges, target) for ranges, target in groups]
    for job in reversed(jobs):  # listed as Valkey lists them: the first group first
        record_job(view, job)
    return OK


def cannot_migrate(view: ClusterView) -> str | None:
    """validateSlotMigrationCanStartOrReply: why this node may not take part (None: it may)."""
    if not view.myself.is_primary:
        return "Slot migration can only be used on primary nodes."
    if view.importing:
        return "Slots are being manually imported"
    if view.migrating:
        return "Slots are being manually migrated"
    return None


def parse_ranges(view: ClusterView, argv: list[bytes], at: int) -> tuple[Ranges, int, ClusterNode | None]:
    """parseSlotRangesOrReply: start/end pairs up to the first word that is not an integer,
    every slot served, all by one node, no range over another. Returns the ranges, where
    the next argument is, and the node serving them."""
    ranges: Ranges = []
    owner: ClusterNode | None = None
    while at < len(argv) and try_int(argv[at]) is not None:
        first = parse_slot(argv[at])
        if at + 1 >= len(argv):
            raise ReplyError("ERR No end slot for final slot range")
        last = parse_slot(argv[at + 1])
        if first > last:
            raise ReplyError(f"ERR Start slot number {first} is greater than end slot number {last}.")
        for slot in range(first, last + 1):
            served = view.owners[slot]
            if served is None:
                raise ReplyError(f"ERR Slot {slot} has no node served.")
            if owner is None:
                owner = served
            elif served is not owner:
                raise ReplyError("ERR Requested slots span multiple shards")
        for a, b in ranges:
            if last >= a and first <= b:
                raise ReplyError(f"ERR Slot range {first}-{last} overlaps with previous range {a}-{b}.")
        ranges.append((first, last))
        at += 2
    if not ranges:
        raise ReplyError("ERR No slot ranges specified")
    return ranges, at, owner


def overlap(ranges: Ranges, others: Ranges) -> bool:
    return any(b1 >= a2 and a1 <= b2 for a1, b1 in ranges for a2, b2 in others)


def target_node(view: ClusterView, raw: bytes) -> ClusterNode:
    if len(raw) != NAME_LEN:
        raise ReplyError(b"ERR Invalid node name: " + c_text(raw))
    node = view.node(raw)
    if node is None or node.id.encode() != raw:
        raise ReplyError(b"ERR Unknown node name: " + c_text(raw))
    if node is view.myself:
        raise ReplyError("ERR Target node can not be this node.")
    return node


def export(state: ServerState, view: ClusterView, ranges: Ranges, target: ClusterNode) -> SlotMigration:
    """One group: the slots and their keys moved to `target`, or the job failed as
    Valkey's fails when the target cannot be reached or refuses the import."""
    job = SlotMigration(new_node_id(), "EXPORT", ranges, now_s(state), target.id, view.myself.id)
    other = peer_view(view, target.id)
    if other is None:
        job.finish("failed", now_s(state), "Unable to connect to target node: Connection refused")
        return job
    refusal = import_refusal(other, view.myself.id, ranges)
    if refusal is not None:
        job.finish("failed", now_s(state), f"Received error during handshake to target: -ERR {refusal}\r\n")
        return job
    move_slots(state, view, other, ranges)
    job.finish("success", now_s(state))
    record_import(other, job)
    return job


def peer_view(view: ClusterView, node_id: str) -> ClusterView | None:
    """The live node of this process's cluster with that id (a killed one refuses)."""
    bus = view.bus
    if bus is None:
        return None
    return next((v for v in bus.views if v.myself.id == node_id and v.alive), None)


def import_refusal(target: ClusterView, source_id: str, ranges: Ranges) -> str | None:
    """What the target answers CLUSTER SYNCSLOTS ESTABLISH (None: it takes the import)."""
    refusal = cannot_migrate(target)
    if refusal is not None:
        return refusal
    source = target.nodes.get(source_id)
    if source is None:
        return "Target node does not know the source node"
    if any(target.owners[s] is not source for a, b in ranges for s in range(a, b + 1)):
        return "Target node does not agree about current slot ownership"
    return None


def record_import(target: ClusterView, job: SlotMigration) -> None:
    """The target's own job, and its replicas' tracking jobs, by the export's name."""
    now = now_s(target.state)
    mine = SlotMigration(job.name, "IMPORT", job.ranges, now, job.target_id, job.source_id)
    mine.finish("success", now)
    record_job(target, mine)
    bus = target.bus
    assert bus is not None
    for replica in bus.views:
        if replica.alive and replica.myself.primary is not None and replica.myself.primary.id == target.myself.id:
            tracking = SlotMigration(job.name, "IMPORT", job.ranges, now)
            tracking.finish("success", now)
            record_job(replica, tracking)


def move_slots(state: ServerState, source: ClusterView, target: ClusterView, ranges: Ranges) -> None:
    """The move itself, at once: every key restored on the target, the slots the target's
    (a new config epoch), the keys deleted on the source, then the claim announced."""
    slots = [s for a, b in ranges for s in range(a, b + 1)]
    moved: list[tuple[int, list[bytes]]] = []
    for db in state.dbs:
        index, index_of_slots = db.index, db.slot_index
        if index_of_slots is None:
            continue
        keys = [k for s in slots for k in index_of_slots.keys(s, index_of_slots.count(s))]
        keys = [k for k in keys if db.lookup(k) is not None]  # the expired ones go now
        if keys:
            restore_on(target.state, index, [restore_argv(state, db, key) for key in keys])
            moved.append((index, keys))
    bump_epoch(target)
    for slot in slots:
        target.claim(slot, target.myself)
    for index, keys in moved:
        run_internal(state, index, [b"DEL", *keys])
    redirect_blocked_clients(target)
    target.announce()


def restore_argv(state: ServerState, db: Any, key: bytes) -> list[bytes]:
    """RESTORE key deadline payload REPLACE ABSTTL: the key as it is, its deadline kept."""
    value = db.lookup(key)
    deadline = db.expires.get(key, 0)
    client = Client(state)
    return [b"RESTORE", key, b"%d" % deadline, dump_value(client, value), b"REPLACE", b"ABSTTL"]


def restore_on(target: ServerState, index: int, requests: list[list[bytes]]) -> None:
    target.now = target.clock.now_ms()
    for argv in requests:
        run_internal(target, index, argv)


def run_internal(state: ServerState, index: int, argv: list[bytes]) -> None:
    """`argv` run by the node's own client (the migration's link): no routing, no ACL, and
    recorded as any command, so the node's replicas follow it."""
    cmd = state.lookup(argv[0])
    assert cmd is not None
    client = Client(state)
    client.authenticated = True
    client.acl_unrestricted = True
    client.db = state.dbs[index]
    outer = state.current_client
    state.current_client = client
    try:
        reply = state.run_command(client, cmd, argv)
    finally:
        state.current_client = outer
    assert not isinstance(reply, ReplyError), reply


# --- GETSLOTMIGRATIONS, CANCELSLOTMIGRATIONS, SYNCSLOTS -------------------------------------------


def getslotmigrations(c: Client, argv: list[bytes]) -> Any:
    return [job.reply() for job in view_of(c).slot_migrations]


def cancelslotmigrations(c: Client, argv: list[bytes]) -> Any:
    """Every export in progress cancelled; here every job has ended within its command."""
    view = view_of(c)
    running = [j for j in view.slot_migrations if j.operation == "EXPORT" and not j.finished]
    if not running:
        raise ReplyError("ERR No migrations ongoing")
    for job in running:
        job.finish("cancelled", now_s(c.state))
    return OK


def syncslots(c: Client, argv: list[bytes]) -> Any:
    """The node-to-node messages of a migration, as a plain client meets them."""
    view = view_of(c)
    sub = argv[2].upper()
    if sub in LINK_ONLY:
        raise ReplyError(f"ERR CLUSTER SYNCSLOTS {sub.decode()} should only be used by slot migration clients")
    if sub == b"ESTABLISH":
        return establish(c, view, argv)
    if sub == b"FINISH":
        return finish(c, view, argv)
    raise SYNTAX


def establish(c: Client, view: ClusterView, argv: list[bytes]) -> Any:
    """ESTABLISH SOURCE id NAME name SLOTSRANGE start end ...: checked as the target checks
    it. A plain client is no source: the import it opens fails at once, as Valkey's does
    when that connection goes."""
    refusal = cannot_migrate(view)
    if refusal is not None:
        raise ReplyError("ERR " + refusal)
    source: ClusterNode | None = None
    name: bytes | None = None
    ranges: Ranges | None = None
    owner: ClusterNode | None = None
    at = 3
    while at < len(argv):
        word = argv[at].lower()
        if word in (b"source", b"name"):
            if at + 1 >= len(argv) or len(argv[at + 1]) != NAME_LEN or \
                    (source if word == b"source" else name) is not None:
                raise SYNTAX
            if word == b"name":
                name = argv[at + 1]
            else:
                source = view.node(argv[at + 1])
                if source is None:
                    raise ReplyError("ERR Target node does not know the source node")
                if source is view.myself:
                    raise ReplyError("ERR Source node is target node itself")
            at += 2
        elif word == b"slotsrange" and ranges is None:
            ranges, at, owner = parse_ranges(view, argv, at + 1)
        else:
            raise SYNTAX
    if name is None or ranges is None or source is None:
        raise SYNTAX
    if source is not owner:
        raise ReplyError("ERR Target node does not agree about current slot ownership")
    job = SlotMigration(name.decode("latin-1"), "IMPORT", ranges, now_s(c.state), view.myself.id, source.id)
    job.finish("failed", now_s(c.state), LOST_SOURCE)
    record_job(view, job)
    return OK


def finish(c: Client, view: ClusterView, argv: list[bytes]) -> Any:
    """FINISH NAME name STATE success|failed [MESSAGE text]: a job of this node ended."""
    fields: dict[bytes, bytes] = {}
    at = 3
    while at < len(argv):
        word = argv[at].lower()
        if word not in (b"state", b"name", b"message") or word in fields or at + 1 >= len(argv) \
                or (word == b"name" and len(argv[at + 1]) != NAME_LEN):
            raise SYNTAX
        fields[word] = argv[at + 1]
        at += 2
    if b"state" not in fields or b"name" not in fields:
        raise SYNTAX
    job = next((j for j in view.slot_migrations if j.name.encode() == fields[b"name"]), None)
    if job is None:
        raise ReplyError("ERR No such slot migration job")
    state = fields[b"state"].lower()
    if state not in (b"success", b"failed"):
        raise SYNTAX
    job.finish(state.decode(), now_s(c.state), fields.get(b"message", b"").decode("utf-8", "replace"))
    return OK


# --- CLUSTER FLUSHSLOT ---------------------------------------------------------------------------


def flushslot(c: Client, argv: list[bytes]) -> Any:
    """FLUSHSLOT slot [ASYNC|SYNC]: every key of the slot deleted, as DEL deletes it (a del
    event each, replicas follow); OK whoever serves the slot."""
    view_of(c)
    if len(argv) > 4:
        raise ReplyError(b"ERR unknown subcommand or wrong number of arguments for '" + c_text(argv[1])[:128]
                         + b"'. Try " + argv[0].upper() + b" HELP.")
    slot = parse_slot(argv[2])
    if len(argv) == 4 and argv[3].lower() not in (b"async", b"sync"):
        raise SYNTAX
    for db in c.state.dbs:
        index = db.slot_index
        if index is not None:
            for key in index.keys(slot, index.count(slot)):
                db.delete(key)
    return OK
