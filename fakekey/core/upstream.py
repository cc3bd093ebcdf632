"""A replica's side of replication (REPLICAOF host port): what the server knows of its
primary and of the link to it, and the refusals a replica gives its ordinary clients.

The link itself (the handshake, the RDB transfer, the command stream) lives in
fakekey/net/replica_link.py; it keeps this record up to date. The core reads it: the
READONLY and MASTERDOWN refusals of `ServerState.call`, the expiry guard of the keyspace
(a replica deletes no expired key of its primary's: it waits for the primary's DEL, and
meanwhile answers as if the key were gone; a writable replica's own keys with a deadline
are expired by its cron, `expire_own_keys`), INFO replication and ROLE."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from fakekey.core.replicas import is_write_command
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState

READONLY = ReplyError("READONLY You can't write against a read only replica.")
MASTERDOWN = ReplyError(
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")

# the time a cron step may spend expiring a writable replica's own keys (Valkey's 1 ms)
OWN_EXPIRY_BUDGET_S = 0.001

# the link's states as ROLE names them (Valkey's repl_state)
CONNECT = "connect"  # to connect (again) at the next try
CONNECTING = "connecting"  # the TCP connection is being made
HANDSHAKE = "handshake"  # PING, AUTH, REPLCONF, PSYNC
SYNC = "sync"  # receiving the RDB file
CONNECTED = "connected"  # following the command stream


class Upstream:
    """The primary this server replicates, and the state of the link to it."""

    def __init__(self, host: str, port: int, cached: bool) -> None:
        self.host = host
        self.port = port
        self.status = CONNECT
        # the primary's commands run as this client (made by the link; Valkey's master client)
        self.client: Client | None = None
        # the replication id and offset are known (a sync happened, or this server was a
        # primary): a reconnection asks for a partial resync (Valkey's cached primary)
        self.cached = cached
        self.read_offset = 0  # bytes of the stream received (slave_read_repl_offset)
        self.last_io_ms = 0  # the primary's last message, while the link is up
        self.down_since = 0  # unix seconds the link went down (0: never up since REPLICAOF)
        self.transfer_size = -1  # the RDB transfer's announced size (-1: unknown, EOF form)
        self.transfer_read = 0
        self.transfer_last_io_ms = 0
        self.stop: Any = None  # ends the link (set by the link)
        self.link: Any = None  # the link itself (net/replica_link.py)
        # a writable replica's own keys with a deadline (set by its clients, not by the
        # primary): key -> bitmap of their databases, as Valkey's replicaKeysWithExpire.
        # The cron expires them (`expire_own_keys`); INFO's slave_expires_tracked_keys
        self.own_volatile: dict[bytes, int] = {}

    @property
    def linked(self) -> bool:
        """A primary client exists: the link is up and synchronized."""
        return self.status == CONNECTED and self.client is not None

    def same_primary(self, host: str, port: int) -> bool:
        return self.host.lower() == host.lower() and self.port == port

    def refusal(self, state: ServerState, client: Client, cmd: Command,
                argv: list[bytes]) -> ReplyError | None:
        """Valkey's processCommand on a replica: writes from anyone but the primary are
        READONLY (replica-read-only yes); with the link down and replica-serve-stale-data
        no, only the commands flagged `stale` run."""
        if client is self.client:
            return None
        config = state.config
        if config["replica-read-only"] and is_write_command(client, cmd, argv):
            return READONLY
        if (self.status != CONNECTED and not config["replica-serve-stale-data"]
                and ("stale" not in cmd.flags or (cmd.name == "exec" and any(
                    "stale" not in queued.flags for queued, _ in client.queued_commands())))):
            return MASTERDOWN  # (an EXEC of commands the stale replica refuses: EXECABORT)
        return None

    def remember_own_expire(self, state: ServerState, db_index: int, key: bytes) -> None:
        """A deadline set by a client of this (writable) replica, not by the primary."""
        if state.current_client is not self.client:
            self.own_volatile[key] = self.own_volatile.get(key, 0) | (1 << db_index)

    def expire_own_keys(self, state: ServerState) -> None:
        """Valkey's expireReplicaKeys, at each cron (expire_tracked_keys)."""
        expire_tracked_keys(state, self.own_volatile)

    def hides_expired(self, state: ServerState) -> bool:
        """An expired key seen on a replica: gone for ordinary clients, still there for the
        primary's commands (it deletes the key itself, by DEL). Never deleted here."""
        return state.current_client is not self.client

    def info_lines(self, state: ServerState, now_ms: int) -> list[str]:
        """INFO replication's lines from role to replica_announced, as Valkey prints them."""
        config = state.config
        offset = state.repl_offset if self.linked or self.cached else 1
        read_offset = self.read_offset if self.linked or self.cached else 1
        last_io = (now_ms - self.last_io_ms) // 1000 if self.linked else -1
        lines = [
            "role:slave", f"master_host:{self.host}", f"master_port:{self.port}",
            f"master_link_status:{'up' if self.status == CONNECTED else 'down'}",
            f"master_last_io_seconds_ago:{last_io}",
            f"master_sync_in_progress:{int(self.status == SYNC)}",
            f"slave_read_repl_offset:{read_offset}", f"slave_repl_offset:{offset}",
            "replicas_repl_buffer_size:0", "replicas_repl_buffer_peak:0",
        ]
        if self.status == SYNC:
            size = max(self.transfer_size, 0)
            percent = self.transfer_read * 100 / size if size else 0.0
            lines += [
                f"master_sync_total_bytes:{self.transfer_size}",
                f"master_sync_read_bytes:{self.transfer_read}",
                f"master_sync_left_bytes:{self.transfer_size - self.transfer_read}",
                f"master_sync_perc:{percent:.2f}",
                f"master_sync_last_io_seconds_ago:{(now_ms - self.transfer_last_io_ms) // 1000}",
            ]
        if self.status != CONNECTED:
            down = now_ms // 1000 - self.down_since if self.down_since else -1
            lines.append(f"master_link_down_since_seconds:{down}")
        lines += [
            f"slave_priority:{config['replica-priority']}",
            f"slave_read_only:{int(config['replica-read-only'])}",
            f"replica_announced:{int(config['replica-announced'])}",
        ]
        return lines

    def role_reply(self, state: ServerState) -> list[Any]:
        """ROLE on a replica: slave, the primary's host and port, the link's state, the
        offset processed (-1 without a primary client)."""
        offset = state.repl_offset if self.linked else -1
        return [b"slave", self.host.encode(), self.port, self.status.encode(), offset]


def expire_tracked_keys(state: ServerState, tracked: dict[bytes, int]) -> None:
    """Valkey's expireReplicaKeys: a writable replica's own keys past their deadline
    are deleted as expired; a key gone or without a deadline is forgotten. At most about
    a millisecond a call, as Valkey's."""
    started = time.perf_counter()
    now = state.now
    for count, (key, dbs) in enumerate(list(tracked.items()), 1):
        left = 0
        for db in state.dbs:  # the databases made so far (a key lives in one of them)
            index = db.index
            if not dbs >> index & 1:
                continue
            when = db.expires.get(key)
            if when is None:
                continue
            if now > when:
                db.expire_now(key)
            else:
                left |= 1 << index
        if left:
            tracked[key] = left
        else:
            del tracked[key]
        if count % 64 == 0 and time.perf_counter() - started > OWN_EXPIRY_BUDGET_S:
            break
