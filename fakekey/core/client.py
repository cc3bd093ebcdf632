"""One connection's state: protocol, database, user, name, MULTI queue, watches,
subscriptions and blocked state. The network side lives in fakekey/net/server.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fakekey.core.outbuf import COPY_AVOID_MIN, MESSAGES, bulk_wire
from fakekey.resp.encoder import ENCODERS, Encoder
from fakekey.resp.parser import RequestParser
from fakekey.resp.replies import Push

if TYPE_CHECKING:
    from fakekey.core.keyspace import Database
    from fakekey.core.registry import Command
    from fakekey.core.state import ServerState
    from fakekey.core.tracking import ClientTracking
    from fakekey.net.server import Connection


class Hold(Protocol):
    """Why a client's later requests wait unparsed (`Client.blocked`): a blocking command's
    Waiter (core/blocking.py), a command held by CLIENT PAUSE (core/pause.py), the caller
    of a BUSY script (scripting/bridge.py), a reply being streamed (resp/streaming.py), or
    output the client has not read (net/server.py)."""

    active: bool  # a blocking command's wait, which CLIENT UNBLOCK may end
    holds_output: bool  # its pub/sub messages wait too (a reply still going out)


class Client:
    """A client of the server; also the context a command handler receives."""

    def __init__(self, state: ServerState, connection: Connection | None = None, addr: str = "",
                 laddr: str = "") -> None:
        self.state = state
        self.connection = connection
        self.id = state.next_client_id()
        self.addr = addr
        self.laddr = laddr
        self.fd = 8 + self.id
        self.db: Database = state.dbs[0]
        self.protocol = 2
        self.encoder: Encoder = ENCODERS[2]
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.user = "default"
        self.authenticated = not state.users.auth_required()
        # the user may run everything: ServerState.call skips the ACL checks (fakekey/core/users.py)
        self.acl_unrestricted = state.users.default.unrestricted
        self.parser = RequestParser(state.config["proto-max-bulk-len"])
        self.parser.authenticated = self.authenticated
        self.created_ms = state.clock.now_ms()
        self.last_interaction_ms = self.created_ms
        self.cmd: Command | None = None  # the command running or last run (CLIENT LIST cmd=)
        self.total_commands = 0
        self.net_in = 0
        self.net_out = 0
        self.reply_mode = "on"  # on | off | skip
        self.no_evict = False
        self.no_touch = False
        self.close_after_reply = False
        self.killed = False
        self.monitor = False  # in MONITOR mode (core/monitor.py)
        self.tracking: ClientTracking | None = None  # CLIENT TRACKING on (fakekey/core/tracking.py)
        # MULTI / WATCH
        self.in_multi = False
        # cluster mode: READONLY (reads served by a replica) and ASKING (the next command
        # may use a slot being imported)
        self.cluster_readonly = False
        self.asking = False
        self.multi_queue: list[tuple[Command, list[bytes]]] = []
        self.multi_error = False
        self.has_multi_state = False  # MULTI or WATCH ran once (Valkey's mstate exists)
        # (db, key) -> the key was already expired when watched
        self.watching: dict[tuple[Database, bytes], bool] = {}
        self.watch_dirty = False
        # pub/sub
        self.channels: set[bytes] = set()
        self.patterns: set[bytes] = set()
        self.shard_channels: set[bytes] = set()
        # blocking: the wait itself (requests sent meanwhile stay unparsed in the parser)
        self.blocked: Hold | None = None
        # declared here, not set on the fly: a compiled class has a fixed set of attributes
        self.rdb_only = False  # REPLCONF rdb-only
        self.capa = ""
        self.import_source = False
        self.unix_socket = False  # a client of the Unix socket (flag U; net/unix_listener.py)
        # DEBUG PROTECT-CLIENT: a close asked of it waits (Valkey frees a protected client
        # only once unprotected, which DEBUG never does): it stays in CLIENT LIST
        self.protected = False
        # pub/sub messages to this client while its own command runs go after its reply
        self.deferred_pushes: list[list[Any]] = []

    @property
    def last_command(self) -> str:
        return "NULL" if self.cmd is None else self.cmd.name

    @property
    def subscriptions(self) -> int:
        return len(self.channels) + len(self.patterns)

    # --- the MULTI queue, as Valkey's multiState --------------------------------------------

    def doom_transaction(self) -> None:
        """A queueing error: EXEC will abort, and the queue is freed at once
        (Valkey's flagTransaction)."""
        self.multi_error = True
        self.multi_queue = []

    def queued_commands(self) -> list[tuple[Any, list[bytes]]]:
        """The commands EXEC would run: none once a watched key changed (Valkey frees
        the queue of a transaction that can only fail)."""
        return [] if self.watch_dirty else self.multi_queue

    def multi_memory(self) -> int:
        """CLIENT LIST multi-mem: each queued command's argument bytes plus a pointer per
        argument (Valkey's argv_len_sums)."""
        return sum(sum(map(len, argv)) + 8 * len(argv) for _, argv in self.queued_commands())

    def set_protocol(self, protocol: int) -> None:
        self.protocol = protocol
        self.encoder = ENCODERS[protocol]

    def select(self, index: int) -> None:
        self.db = self.state.dbs[index]

    def flags(self) -> str:
        """CLIENT LIST's flags, in Valkey's order (O P x b ... d c ... e T)."""
        out = "O" if self.monitor else ""
        if self.subscriptions or self.shard_channels:
            out += "P"
        if self.in_multi:
            out += "x"
        if self.blocked is not None and not self.blocked.holds_output:
            out += "b"
        if self.tracking is not None:
            out += self.tracking.list_flags()
        if self.watch_dirty and self.watching:
            out += "d"
        if self.close_after_reply:
            out += "c"
        if self.unix_socket:
            out += "U"
        if self.cluster_readonly:
            out += "r"
        if self.no_evict:
            out += "e"
        if self.no_touch:
            out += "T"
        if self.import_source:
            out += "I"
        return out or "N"

    def push(self, items: list[Any], encoded: dict[int, bytes] | None = None) -> None:
        """A pub/sub message: a push frame in RESP3, an array in RESP2 (`encoded` caches
        the frame per protocol when one message goes to many). A subscriber whose unread
        output passes the pubsub limits is disconnected (Connection.check_output)."""
        state = self.state
        if state.current_client is self or (self.blocked is not None and self.blocked.holds_output):
            self.deferred_pushes.append(items)  # after the reply of the running command
            return
        connection = self.connection
        if connection is None:  # pushes go whatever CLIENT REPLY says, as in Valkey
            return
        if encoded is None:
            frame = self.encoder.encode(Push(items))
        else:
            cached = encoded.get(self.protocol)
            if cached is None:
                cached = encoded[self.protocol] = self.encoder.encode(Push(items))
            frame = cached
        payload = items[-1]
        if type(payload) is bytes and len(payload) >= COPY_AVOID_MIN and items[0] in MESSAGES:
            # Valkey sends a big message by reference (fakekey/core/outbuf.py)
            wire = bulk_wire(len(payload))
            connection.write(frame, [(len(frame) - wire, wire)])
            return
        connection.write(frame)  # the output limits are checked there

    def send(self, reply: Any) -> None:
        """Write a reply outside the request cycle (a woken client, a pub/sub message)."""
        if self.connection is not None and self.reply_mode == "on":
            self.connection.write(self.encoder.encode(reply))
