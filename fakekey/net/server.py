"""The network side: one asyncio Protocol per connection (read -> parse -> execute ->
write), and `Server`, the object tests and the CLI start and stop."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import errno
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from functools import partial
from typing import Any, Final

from fakekey.commands.replication import follow
from fakekey.config.directives import StartupRefused, startup_refusal
from fakekey.config.limits import adjust_open_files_limit, owned_maxclients_applier
from fakekey.config.settings import Config, ConfigError, setting_error
from fakekey.core.client import Client
from fakekey.core.clock import REAL_TIME
from fakekey.core.cluster import ClusterView, enable_cluster
from fakekey.core.commandlog import LARGE_REPLY, LARGE_REQUEST
from fakekey.core.monitor import log_command, request_size
from fakekey.core.outbuf import (
    COPY_AVOID_MIN,
    PEAK_RESET_MS,
    PEAK_SLOTS,
    REFERENCING,
    STATIC_BUFFER,
    Ledger,
    bulk_wire,
    dropped_for_output,
    past_output_limit,
    resized_buffer,
)
from fakekey.core.state import UNREAD_OUTPUT_PAUSE, ServerState
from fakekey.core.wakes import WakeReport
from fakekey.modules.emq.timers import rearm_after_load
from fakekey.net.beats import Beat, beat_of
from fakekey.net.client_eviction import client_memory_cron
from fakekey.net.cluster_bus import ClusterBus, bind_bus
from fakekey.net.direct import DirectAccess
from fakekey.net.faults import NEXT, NOT_TAKEN, ServerFaults, take_request
from fakekey.net.loop_thread import gone_from, neighbour, serving_on, shared_loop_thread
from fakekey.net.loop_thread import new_event_loop as new_event_loop  # the CLI's and Cluster's
from fakekey.net.registry import server_commands
from fakekey.net.replica_link import start_link, stop_link
from fakekey.net.sockets import UnixSocketFailure, listen_on
from fakekey.net.starting import BackgroundStart, Latch
from fakekey.net.unix_listener import UnixListener, unix_client
from fakekey.persistence.manager import Persistence
from fakekey.resp.encoder import BULK_HEADS, CRLF, INT_WIRES
from fakekey.resp.parser import ProtocolError
from fakekey.resp.replies import NO_REPLY, OK, QUEUED, ReplyError

# held as constants: compiled code compares a reply with them without a dict lookup
_NO_REPLY: Final = NO_REPLY
_OK: Final = OK
OK_WIRE: Final = b"+OK\r\n"


def _is_blocked(client: Client) -> bool:
    # a function, not an inline test: inside run's loop the type checker takes `blocked` for
    # None (the loop's condition), and a compiled module would trust it; check_output may set it
    return client.blocked is not None


# A connection's requests run for this long at most before the others get their turn
# (Valkey reads 16 KB a client per event-loop turn); the clock is read every few requests.
_perf_counter_ns: Final = time.perf_counter_ns
_get_ident: Final = threading.get_ident  # a constant: compiled code skips two lookups per call
TURN_NS: Final = 2_000_000
TURN_CHECK_EVERY: Final = 32  # a power of two: tested with a mask
_TIME_ATTRS: Final = vars(time)  # time.time, as a patch (mock, freezegun) leaves it (core/clock.py)
BUS_PORT_TRIES = 50  # free ports tried for one whose cluster bus port (+10000) is free too
FAST_EXPIRY_EVERY = 0.002  # s between two fast expiry cycles (2x their 1 ms budget, as Valkey)
PERSISTENCE_CRON_EVERY = 0.1  # s between two turns of persistence's cron (Persistence.cron)
MAX_CLIENTS_ERROR = b"-ERR max number of clients reached\r\n"
PROTECTED_MODE_DENIED = (
    b"-DENIED Running in protected mode because protected mode is enabled and no password is set "
    b"for the default user. In this mode connections are only accepted from the loopback interface. "
    b"If you want to connect from external computers, you may adopt one of the following solutions: "
    b"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the "
    b"loopback interface by connecting from the same host the server is running, however MAKE SURE "
    b"it's not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change "
    b"permanent. 2) Alternatively you can just disable the protected mode by editing the configuration "
    b"file, and setting the protected mode option to 'no', and then restarting the server. 3) If you "
    b"started the server manually just for testing, restart it with the '--protected-mode no' option. "
    b"4) Set up an authentication password for the default user. NOTE: You only need to do one of the "
    b"above things in order for the server to start accepting connections from the outside.\r\n"
)
log = logging.getLogger("fakekey.net.server")


class Connection(asyncio.Protocol):
    """One client connection. All requests of one read are answered in one write, at
    the end of the loop iteration (see `write`)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        # the transport's methods each reply calls, bound once: a call by name looks the
        # method up in its type every time
        self.send: Any = None
        self.unsent: Any = None
        self.transport_closing: Any = None
        self.client: Client | None = None
        self.closing = False
        self.out: list[bytes] | None = None  # the replies of the running batch
        self.corked: list[bytes] = []  # bytes written outside a batch, sent at loop's turn
        self.corked_bytes = 0
        self._queued: tuple[int, int, Any] = (0, 0, None)  # see _queued_bytes
        # COMMANDLOG large-request: once net_in passes this, a request may be large enough
        # to measure (the bytes consumed at the last measure, plus the threshold)
        self.request_mark = 0
        self.soft_since = 0  # when the output passed its soft limit (s on the server clock), or 0
        # Valkey's view of the output (fakekey/core/outbuf.py): the static buffer's size and
        # peak (CLIENT LIST rbs, rbp), and while output is pending, the ledger of its buffers
        self.buf_size = STATIC_BUFFER
        self.buf_peak = STATIC_BUFFER
        self.peak_reset_ms = 0  # Valkey stamps a new client in seconds: the first reset is at once
        self.ledger: Ledger | None = None
        self.absorbed = 0  # bytes at the start of `corked` the ledger holds already
        # a turn given way (`_give_way`) wrote its replies: Valkey writes once all the
        # requests of a read ran, so the ledger's write waits for the last turn
        self.write_owed = False
        # the strings Valkey would send by reference: in `corked` (offset, length), and in
        # the running batch's replies (index in `out`, offset in it, length)
        self.corked_refs: list[tuple[int, int]] | None = None
        self.out_refs: list[tuple[int, int, int]] | None = None
        # run() gave way to the other connections with requests left: reading is paused
        # until the next loop turn runs them (`_next_turn`); `eof`: the client has sent its last
        self.turn_pending = False
        self.eof = False
        self.unchecked = 0  # reply bytes run() added since it last looked at the output limits
        # the settings every read looks at, as of config.epoch limits_epoch (`_read_limits`):
        # a dict lookup each is read again only after a CONFIG SET
        self.limits_epoch = -1
        self.open_parse = False  # no requirepass: an unauthenticated client parses as one
        self.max_bulk = 0
        self.query_limit = 0

    # --- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.send = transport.write
        self.unsent = transport.get_write_buffer_size
        self.transport_closing = transport.is_closing
        self.loop = asyncio.get_running_loop()
        state = self.state
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        if isinstance(sock, str):  # the Unix socket's (a TCP address is a tuple)
            client = unix_client(state, self)
        else:
            client = Client(state, self, _addr(peer), _addr(sock))
        self.client = client
        if len(state.clients) >= state.config["maxclients"]:
            state.stats["rejected_connections"] += 1
            transport.write(MAX_CLIENTS_ERROR)
            self.close()
            return
        if protected_mode_refuses(state, peer):
            transport.write(PROTECTED_MODE_DENIED)
            self.close()
            return
        sockobj = transport.get_extra_info("socket")
        if sockobj is not None and sockobj.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sockobj.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        state.add_client(client)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        if self.client is not None:
            self.state.remove_client(self.client)
        # the client, the transport and this protocol hold each other: let go, so no
        # full collection has to find them (fakekey-server lets none run by itself:
        # memory/collector.py)
        self.client = None
        self.transport = None
        self.send = self.unsent = self.transport_closing = None

    def eof_received(self) -> bool:
        """The client has sent its last bytes: answer what it sent (the replies wait for
        the end of the loop iteration), then close; with requests still to run (a turn
        given way), once they have run."""
        if self.turn_pending:
            self.eof = True
            return True  # half-closed: the replies still go out
        self.uncork()
        return False

    def data_received(self, data: bytes) -> None:
        client = self.client
        if self.closing or client is None:
            return
        client.net_in += len(data)
        parser = client.parser
        parser.feed(data)
        buffered = parser.buffered() + (self._queued_bytes(client) if client.multi_queue else 0)
        config = self.state.config
        if self.limits_epoch != config.epoch:
            self._read_limits(config)
        if buffered > self.query_limit:
            # Valkey frees the client at once, without a reply (even while it is blocked)
            self.state.stats["client_query_buffer_limit_disconnections"] += 1
            self.close()
            return
        if client.blocked is None:
            self.run()

    def _read_limits(self, config: Config) -> None:
        """The settings each read and batch look at (by their own names: no alias)."""
        values = config.values
        self.limits_epoch = config.epoch
        self.open_parse = not values["requirepass"]
        self.max_bulk = values["proto-max-bulk-len"]
        self.query_limit = values["client-query-buffer-limit"]

    def _queued_bytes(self, client: Client) -> int:
        """The arguments waiting in a MULTI queue count against the query buffer limit,
        as in Valkey (argument bytes plus a pointer per argument). Summed incrementally:
        `_queued` remembers (entries counted, their bytes, the arguments of the last one
        counted: a list, whose identity compiled code keeps, where a tuple's it does not)."""
        queue = client.multi_queue
        if not queue or client.watch_dirty:  # a dirty transaction's queue is freed
            return 0
        counted, total, last = self._queued
        if counted > len(queue) or (counted and queue[counted - 1][1] is not last):
            counted, total = 0, 0  # a different queue since the last count
        for at in range(counted, len(queue)):
            argv = queue[at][1]
            for arg in argv:
                total += len(arg)
            total += 8 * len(argv)
        self._queued = (len(queue), total, queue[-1][1])
        return total

    # --- the request cycle -----------------------------------------------------------------

    def run(self) -> None:
        """Parse and execute the buffered requests one at a time, as Valkey does, so a
        request can change how the next is parsed (AUTH, CONFIG SET). Stops when the
        client blocks (the rest stays unparsed until `resume`) or must close. Replies,
        and anything sent to this client meanwhile (its own pub/sub messages), go out in
        order in one write at the end of the loop iteration."""
        client = self.client
        assert client is not None
        state = self.state
        parser = client.parser
        config = state.config
        out: list[bytes] = []
        self.out = out
        error: ProtocolError | None = None
        limits_auth, limits_epoch = None, -1  # what the parse limits were last read for
        pending = self.unchecked  # reply bytes since the last look at the output limits
        turn_ends = 0  # set at the first look at the clock: a short batch never reads it
        ran = 0
        state.carried_ns = 0  # the first request reads the clock
        while client.blocked is None and not (client.close_after_reply or client.killed):
            ran += 1
            if not ran & (TURN_CHECK_EVERY - 1):
                now = _perf_counter_ns()
                if not turn_ends:
                    turn_ends = now + TURN_NS
                elif now > turn_ends:
                    self._give_way()  # the others' turn: the rest runs on the next loop turn
                    break
            # the request before may have changed the parse limits (AUTH, CONFIG SET)
            if limits_auth is not client.authenticated or limits_epoch != config.epoch:
                limits_auth, limits_epoch = client.authenticated, config.epoch
                if self.limits_epoch != limits_epoch:
                    self._read_limits(config)
                parser.authenticated = client.authenticated or self.open_parse
                parser.max_bulk = self.max_bulk
                self.request_mark = client.net_in - parser.buffered() + state.large_request_at
            try:
                argv = parser.next_request()  # a direct call in compiled code (a bound method's is not)
            except ProtocolError as err:
                error = err
                break
            if argv is None:
                break
            if state.fault_watch is not None:  # FAKEKEY.FAULT: a rule may take it (net/faults.py)
                taken = take_request(self, client, argv, out)
                if taken == NEXT:
                    continue
                if taken != NOT_TAKEN:
                    break  # held, or closing
            if ran == 2:  # a batch: the requests after this one skip call's look at time.time
                state.time_unpatched = _TIME_ATTRS["time"] is REAL_TIME[0]
            processed = state.commands_processed
            reply = state.call(client, argv)
            # the next request starts when this one's command ended: one clock read a
            # command (ServerState.call); none if nothing ran (refused, queued)
            state.carried_ns = state.ended_ns if state.commands_processed != processed else 0
            if client.net_in > self.request_mark:  # enough bytes came: measure the request
                self._log_large_request(client, argv, reply)
            if client.reply_mode == "on":
                if type(reply) is bytes:  # a bulk string, the commonest reply: no dispatch
                    size = len(reply)
                    if size < 1024:  # a ready-made header, the string and CRLF: joined once, at the end
                        out.append(BULK_HEADS[size])
                        out.append(reply)
                        out.append(CRLF)
                    else:  # one piece: _note_references marks it whole
                        out.append(b"$%d\r\n%s\r\n" % (size, reply))
                    pending += size
                    if size > state.large_reply_at:
                        self._log_large_reply(client, argv, bulk_wire(size))
                    if size >= COPY_AVOID_MIN:
                        self._note_references(client, out, reply)
                elif reply is not _NO_REPLY:
                    # +OK and integers read the same in RESP2 and RESP3: framed here
                    if reply is _OK:
                        data = OK_WIRE
                    elif type(reply) is int:
                        data = INT_WIRES[reply] if 0 <= reply < 1024 else b":%d\r\n" % reply
                    else:
                        data = client.encoder.encode(reply)
                    out.append(data)
                    pending += len(data)
                    if len(data) > state.large_reply_at:
                        self._log_large_reply(client, argv, len(data))
                    if len(data) >= COPY_AVOID_MIN and type(reply) is list:
                        self._note_references(client, out, reply)
                if pending > state.obuf_check_at:  # as Valkey, after each reply is added
                    pending = 0
                    out = self._flush_batch(out)
                    if not self.check_output() or _is_blocked(client):
                        break  # dropped, or paused until it reads
            elif reply is not _NO_REPLY and client.reply_mode == "skip":
                client.reply_mode = "on"
            if client.deferred_pushes:
                self.flush_deferred_pushes(client)
        self.out = None
        state.time_unpatched = False  # outside a batch, time.time may be patched at any moment
        state.carried_ns = 0  # nor is the last end a later request's start
        self.unchecked = pending  # a turn given way goes on counting
        client.last_interaction_ms = state.now
        if error is not None:
            out.append(b"-ERR Protocol error: " + error.message + b"\r\n")
            state.stats["total_error_replies"] += 1
            state.error_stats["ERR"] += 1
            client.close_after_reply = True
        if out and not self.closing:
            refs = None if self.out_refs is None else self._batch_references(out)
            self.write(out[0] if len(out) == 1 else b"".join(out), refs)
        if client.close_after_reply or client.killed:
            self.uncork()  # its replies go out before the connection closes
            self.close()

    def _give_way(self) -> None:
        """This connection had its share of the loop turn: stop reading it (its unread
        requests wait in the socket, not in memory) and go on at the next turn."""
        if self.turn_pending or self.transport is None:
            return
        self.turn_pending = True
        self.transport.pause_reading()
        self.loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self.turn_pending = False
        client = self.client
        if self.closing or client is None or self.transport is None:
            return
        if client.blocked is None:
            self.run()
        if self.turn_pending or self.closing:
            return
        if self.eof:  # everything it sent has run: its replies go, then the connection
            self.uncork()
            self.close()
        elif not isinstance(client.blocked, UnreadOutputPause):  # that pause reads on its own
            self.transport.resume_reading()

    def _log_large_request(self, client: Client, argv: list[bytes], reply: Any) -> None:
        """COMMANDLOG large-request: a command that ran (not one queued in MULTI) whose
        request passed commandlog-request-larger-than."""
        state = self.state
        self.request_mark = client.net_in - client.parser.buffered() + state.large_request_at
        cmd = client.cmd
        if reply is QUEUED or cmd is None or "skip_commandlog" in cmd.flags:
            return
        size = request_size(argv)
        if size > state.large_request_at:
            log_command(state, client, argv, size, LARGE_REQUEST)

    def _log_large_reply(self, client: Client, argv: list[bytes], size: int) -> None:
        """COMMANDLOG large-reply: a command's reply passed commandlog-reply-larger-than
        (EXEC logs its commands instead: fakekey/commands/transactions.py)."""
        cmd = client.cmd
        if cmd is not None and "skip_commandlog" not in cmd.flags:
            log_command(self.state, client, argv, size, LARGE_REPLY)

    def _flush_batch(self, out: list[bytes]) -> list[bytes]:
        """Move the batch's replies so far to the output (in order: after what was
        gathered before); the batch goes on in a fresh list."""
        self.out = None
        refs = None if self.out_refs is None else self._batch_references(out)
        self.write(b"".join(out), refs)
        self.out = out = []
        return out

    # --- the output as Valkey buffers it (fakekey/core/outbuf.py) --------------------------

    def _note_references(self, client: Client, out: list[bytes], reply: Any) -> None:
        """The last reply of the batch holds strings Valkey sends by reference: a bulk
        string, or MGET's elements, of COPY_AVOID_MIN bytes or more."""
        cmd = client.cmd
        if cmd is None or cmd.name not in REFERENCING:
            return
        index = len(out) - 1
        marks = self.out_refs if self.out_refs is not None else []
        if type(reply) is bytes:
            marks.append((index, 0, len(out[index])))
        else:
            offset = len(b"*%d\r\n" % len(reply))
            null = len(client.encoder.encode(None))
            for element in reply:
                if type(element) is not bytes:
                    offset += null
                    continue
                wire = bulk_wire(len(element))
                if len(element) >= COPY_AVOID_MIN:
                    marks.append((index, offset, wire))
                offset += wire
        self.out_refs = marks or None

    def _batch_references(self, out: list[bytes]) -> list[tuple[int, int]]:
        """The marked references as offsets in the joined batch."""
        marks, self.out_refs = self.out_refs or [], None
        starts = [0]
        for data in out[:marks[-1][0]]:
            starts.append(starts[-1] + len(data))
        return [(starts[index] + offset, length) for index, offset, length in marks]

    def output_ledger(self) -> Ledger | None:
        """Valkey's buffers for what the client has not taken (sent or still corked);
        None when nothing is pending."""
        transport = self.transport
        if transport is None or self.closing:
            return None
        backlog = transport.get_write_buffer_size()
        if self.ledger is None and not backlog and not self.corked_bytes:
            return None
        ledger = self._ledger_at(backlog)
        self._absorb(ledger, self.corked_bytes, self.corked_refs)
        if not ledger.wire:
            self.ledger, self.absorbed, self.write_owed = None, 0, False
            return None
        return ledger

    def output_figures(self) -> tuple[int, int, int]:
        """CLIENT LIST's obl, oll and omem. For the client whose command runs, the
        replies its batch gathered so far count too: Valkey has them in its buffers."""
        ledger = self.output_ledger()
        if ledger is None and self.out:
            ledger = Ledger(self.buf_size)
            ledger.add(sum(map(len, self.out)), None)
        return (0, 0, 0) if ledger is None else (ledger.obl(), ledger.oll(), ledger.omem())

    def _ledger_at(self, backlog: int, settle: bool = True) -> Ledger:
        """The ledger, made or brought up to the transport's `backlog`: what the client
        read since the last look was written (`settle`: and a write owed since the last
        turn ran, is made)."""
        ledger = self.ledger
        if ledger is None:
            ledger = self.ledger = Ledger(self.buf_size)
            self.absorbed = 0
        elif not self.write_owed:
            drained = ledger.wire - self.absorbed - backlog
            if drained > 0:
                ledger.drained(drained)
        elif settle and not self.turn_pending and not self.corked:  # the read's last turn ran
            self.write_owed = False
            ledger.written(ledger.wire - self.absorbed - backlog)
        return ledger

    def _absorb(self, ledger: Ledger, size: int, refs: list[tuple[int, int]] | None) -> None:
        """Add to the ledger the corked bytes up to `size` it does not hold yet."""
        start = self.absorbed
        if size <= start:
            return
        if refs:
            refs = [(offset - start, length) for offset, length in refs if offset >= start]
        ledger.add(size - start, refs)
        self.absorbed = size
        if ledger.buf.used > self.buf_peak:
            self.buf_peak = ledger.buf.used

    def _write_through_ledger(self, transport: Any, data: bytes, refs: list[tuple[int, int]] | None) -> int:
        """uncork with output pending, or references in it: the ledger follows the
        write. The bytes left pending."""
        backlog = transport.get_write_buffer_size()
        ledger = self._ledger_at(backlog, settle=False)
        self._absorb(ledger, len(data), refs)
        self.absorbed = 0
        transport.write(data)
        pending: int = transport.get_write_buffer_size()
        if self.write_owed or not backlog:  # Valkey writes (it had nothing pending)
            if self.turn_pending:  # once the rest of the read's requests have run
                self.write_owed = True
            else:
                self.write_owed = False
                ledger.written(ledger.wire - pending)
        if not pending and not self.write_owed:
            self.ledger = None
        return pending

    # --- client-output-buffer-limit ----------------------------------------------------

    def check_output(self) -> bool:
        """Valkey's checkClientOutputBufferLimits on the output memory it would count
        (omem: fakekey/core/outbuf.py): past the hard limit, or past the soft one for
        longer than its seconds, the client is dropped (its unsent output with it). With
        no normal-class limit, a client with more than UNREAD_OUTPUT_PAUSE unread stops
        being read until it catches up. False when the client was dropped."""
        client = self.client
        if client is None or self.closing:
            return False
        state = self.state
        ledger = self.output_ledger()
        used = 0 if ledger is None else ledger.omem()
        subscribed = client.channels or client.patterns or client.shard_channels
        limits = state.obuf_limits.get("pubsub" if subscribed else "normal", (0, 0, 0))
        hard, soft, _seconds = limits
        over, self.soft_since = past_output_limit(used, limits, self.soft_since,
                                                  state.clock.now_ms() // 1000)
        if over:
            dropped_for_output(state, client)
            self.abort()
            return False
        if (not (hard or soft or subscribed) and client.blocked is None
                and self.output_backlog() > UNREAD_OUTPUT_PAUSE):
            UnreadOutputPause(self).start()
        return True

    def cron_visit(self, now_ms: int, slot: int) -> None:
        """The cron's visit: the static buffer resized, the output noted for INFO's
        client_recent_max_output_buffer, and the output limits applied (so a soft
        limit's seconds run out with no new output, as in Valkey)."""
        ledger = self.output_ledger()
        if ledger is not None:
            peaks = self.state.output_peaks
            if ledger.omem() > peaks[slot]:
                peaks[slot] = ledger.omem()
            if not ledger.buf.encoded:  # Valkey leaves an encoded buffer as it is
                self._resize_buffer(now_ms, ledger)
            self.check_output()
        else:
            self._resize_buffer(now_ms, None)

    def _resize_buffer(self, now_ms: int, ledger: Ledger | None) -> None:
        """clientsCronResizeOutputBuffer: the new size follows the peak; then, every
        PEAK_RESET_MS, the peak starts again from what the buffer holds."""
        used = 0 if ledger is None else ledger.buf.used
        size = resized_buffer(self.buf_size, self.buf_peak)
        if now_ms - self.peak_reset_ms >= PEAK_RESET_MS:
            self.buf_peak, self.peak_reset_ms = used, now_ms
        if size >= used and size:
            self.buf_size = size
            if ledger is not None:
                ledger.buf.size = size

    def resume(self) -> None:
        """The client was unblocked: run what it sent meanwhile."""
        if self.client is not None and not self.closing and self.client.blocked is None:
            self.run()

    def flush_deferred_pushes(self, client: Client) -> None:
        """Messages the client's own command published to it, after that command's reply."""
        pushes, client.deferred_pushes = client.deferred_pushes, []
        for items in pushes:
            client.push(items)

    def output_backlog(self) -> int:
        """Bytes written but not yet taken by the client's socket."""
        if self.transport is None:
            return 0
        return self.transport.get_write_buffer_size() + self.corked_bytes

    def write(self, data: bytes, refs: list[tuple[int, int]] | None = None) -> None:
        """Send bytes to the client. Inside run() they join the batch's replies, in order.
        Otherwise (a batch's replies, messages to subscribers, woken clients) they are
        gathered and sent at the end of this loop iteration, with every other
        connection's, as Valkey writes its replies before it sleeps: a burst of messages
        costs one send, and the clients are woken once per burst, not once per reply.
        `refs`: the (offset, length) in `data` of strings Valkey would send by reference."""
        if self.out is not None:
            self.out.append(data)
            if refs:
                self._mark_in_batch(refs)
        elif self.transport is not None and not self.closing:
            if not self.corked:
                self._schedule_uncork()
            if refs:
                self._mark_corked(refs)
            self.corked.append(data)
            self.corked_bytes += len(data)
            if self.corked_bytes > self.state.obuf_check_at:
                self.check_output()

    def _schedule_uncork(self) -> None:
        state = self.state
        queue = state.uncork_queue
        if queue and _get_ident() == state.loop_ident:  # on the loop, whose flush is due already
            queue.append(self)
            return
        loop = state.running_loop()
        if loop is None:  # no running loop here (a server driven by hand, in tests)
            self.loop.call_soon_threadsafe(self.uncork)
            return
        if not queue:
            loop.call_soon(_uncork_all, queue)
        queue.append(self)

    def _mark_in_batch(self, refs: list[tuple[int, int]]) -> None:
        assert self.out is not None
        index = len(self.out) - 1
        marks = self.out_refs if self.out_refs is not None else []
        marks.extend((index, offset, length) for offset, length in refs)
        self.out_refs = marks

    def _mark_corked(self, refs: list[tuple[int, int]]) -> None:
        marks = self.corked_refs if self.corked_refs is not None else []
        marks.extend((self.corked_bytes + offset, length) for offset, length in refs)
        self.corked_refs = marks

    def uncork(self) -> None:
        corked = self.corked
        data = corked[0] if len(corked) == 1 else b"".join(corked)
        corked.clear()  # kept, not made anew: one list a connection
        self.corked_bytes = 0
        refs, self.corked_refs = self.corked_refs, None
        transport = self.transport
        # the event loop may have closed the transport itself (a reset connection) before
        # connection_lost reaches us: what the client can no longer read is dropped
        if data and transport is not None and not self.closing and not self.transport_closing():
            if self.client is not None:
                self.client.net_out += len(data)
                self.client.last_interaction_ms = self.state.now  # a write is an interaction
            if self.state.aof is not None:  # what a reply acknowledges is in the log first
                self.state.aof.before_reply()
            if self.ledger is None and refs is None:  # nothing was pending: the usual case
                size = len(data)
                if size > self.buf_peak:  # Valkey's static buffer took that much of it
                    self.buf_peak = size if size < self.buf_size else self.buf_size
                self.send(data)
                pending = self.unsent()
                if pending:  # the client did not take it all: Valkey's buffers hold the rest
                    ledger = self.ledger = Ledger(self.buf_size)
                    ledger.add(size, None)
                    if self.turn_pending:
                        self.write_owed = True
                    else:
                        ledger.written(size - pending)
            else:
                pending = self._write_through_ledger(transport, data, refs)
            if self.soft_since or pending > self.state.obuf_check_at:
                self.check_output()

    def close(self) -> None:
        if not self.closing and self.transport is not None:
            self.closing = True
            self.transport.close()
            if self.client is not None:
                self.state.remove_client(self.client)

    def abort(self) -> None:
        """Close at once, dropping what the client did not read (close() would wait for
        a client that never reads)."""
        if not self.closing and self.transport is not None:
            self.corked, self.corked_bytes, self.corked_refs = [], 0, None
            self.ledger, self.absorbed, self.write_owed = None, 0, False
            self.closing = True
            self.transport.abort()
            if self.client is not None:
                self.state.remove_client(self.client)


class UnreadOutputPause:
    """The `blocked` marker of a client that stopped being read: it has more than
    UNREAD_OUTPUT_PAUSE of output unread and no normal-class limit to drop it. Its
    requests stay unread (and unparsed) until the backlog falls to half, as a client
    behind a long streamed reply (fakekey/resp/streaming.py): nothing wakes or times it out."""

    active = False
    holds_output = True
    WAIT = 0.005  # seconds between two looks at the backlog

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def start(self) -> None:
        connection = self.connection
        assert connection.client is not None and connection.transport is not None
        connection.client.blocked = self
        connection.transport.pause_reading()
        connection.loop.call_later(self.WAIT, self._look)

    def _look(self) -> None:
        connection = self.connection
        client = connection.client
        if connection.closing or client is None or client.blocked is not self:
            return
        if connection.output_backlog() > UNREAD_OUTPUT_PAUSE // 2:
            connection.loop.call_later(self.WAIT, self._look)
            return
        client.blocked = None
        assert connection.transport is not None
        connection.transport.resume_reading()
        connection.resume()  # what it sent before the pause first
        if client.deferred_pushes and client.blocked is None:
            connection.flush_deferred_pushes(client)


def _uncork_all(queue: list[Connection]) -> None:
    """Send what every queued connection gathered; one that fails does not hold back
    the others' replies, nor the flushes of later loop iterations."""
    pending = queue[:]
    queue.clear()
    for connection in pending:
        try:
            connection.uncork()
        except Exception:  # noqa: BLE001 - reported, and that connection is closed
            log.exception("sending to a client failed")
            connection.close()


def clients_cron(state: ServerState, queue: deque[int]) -> None:
    """Valkey's clientsCron, for the output buffers: each tick visits a share of the
    clients (all when at most 5, else one `hz`-th, 5 at least), newest first."""
    clients = state.clients
    iterations = len(clients) // state.config["hz"]
    if iterations < 5:
        iterations = min(len(clients), 5)
    now_ms = state.clock.now_ms()
    slot = now_ms // 1000 % PEAK_SLOTS
    state.output_peaks[(slot + 1) % PEAK_SLOTS] = 0  # the oldest second is forgotten
    for _ in range(iterations):
        if not queue:
            queue.extend(reversed(clients))
        client = clients.get(queue.popleft())
        if client is not None and client.connection is not None:
            client.connection.cron_visit(now_ms, slot)


def close_idle_clients(state: ServerState) -> None:
    """`timeout`: close the clients idle for more than that many seconds, as Valkey's
    clientsCronHandleTimeout: not the blocked (nor those behind a long reply), the
    subscribed or the MONITOR ones. Seconds are whole, as Valkey's unixtime."""
    if state.busy_script is not None:
        return
    limit = state.config["timeout"]
    now = state.clock.now_ms() // 1000
    for client in list(state.clients.values()):
        if (client.blocked is None and not client.monitor and client.connection is not None
                and not (client.channels or client.patterns or client.shard_channels)
                and now - client.last_interaction_ms // 1000 > limit):
            client.connection.close()


def protected_mode_refuses(state: ServerState, peer: Any) -> bool:
    """protected-mode with no password: only loopback (and unix socket) clients are taken."""
    config = state.config
    if not config["protected-mode"] or config["requirepass"]:
        return False
    if not isinstance(peer, tuple):  # a unix socket
        return False
    host = peer[0].removeprefix("::ffff:")
    return not (host.startswith("127.") or host == "::1")


def _addr(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        host = info[0]
        return f"[{host}]:{info[1]}" if ":" in host else f"{host}:{info[1]}"
    return str(info or "")


class Listeners:
    """The listening sockets, one per bind address, as Valkey's listener: started
    once, and re-bound when CONFIG SET changes port or bind. A socket already bound to
    an address and port that stays wanted is kept as it is."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.open: dict[tuple[str, int], tuple[socket.socket, Any]] = {}  # -> (socket, server)

    def bind(self, bind: str, port: int) -> list[socket.socket]:
        """Bind every address of `bind` (a leading "-" marks an optional one) on `port`
        (0: a free port, then the same one for each address). Raises OSError; nothing
        changes then. Returns the new sockets, for `serve` to start."""
        new: dict[tuple[str, int], socket.socket] = {}
        try:
            for address in bind.split():
                host = _WILDCARDS.get(address.lstrip("-"), address.lstrip("-"))
                if (host, port) in self.open:
                    continue
                try:
                    sock = listen_on(host, port)
                except OSError as err:
                    if address.startswith("-") and err.errno in _UNAVAILABLE:
                        continue  # an optional address the machine lacks: skipped, as Valkey
                    log.warning("Warning: Could not create server TCP listening socket %s:%d: bind: %s",
                                address.lstrip("-"), port, err.strerror)
                    raise
                port = port or sock.getsockname()[1]
                new[(host, port)] = sock
        except OSError:
            for sock in new.values():
                sock.close()
            raise
        wanted = {(_WILDCARDS.get(a.lstrip("-"), a.lstrip("-")), port) for a in bind.split()}
        for key in [key for key in self.open if key not in wanted]:
            self._close(key)
        for key, sock in new.items():
            self.open[key] = (sock, None)
        return list(new.values())

    def serve(self, loop: asyncio.AbstractEventLoop, sockets: list[socket.socket]) -> list[Any]:
        """Accept connections on these (already listening) sockets: the coroutines that
        start serving (awaited at start-up; run as tasks after a CONFIG SET)."""
        state = self.state
        starts = []
        for key, (sock, _) in self.open.items():
            if sock in sockets:
                start = loop.create_server(lambda: Connection(state), sock=sock, backlog=511)
                starts.append(self._remember(key, start))
        return starts

    async def _remember(self, key: tuple[str, int], start: Any) -> None:
        server = await start
        if key in self.open:
            self.open[key] = (self.open[key][0], server)
        else:  # closed while starting
            server.close()

    def port(self) -> int:
        return next(iter(self.open))[1] if self.open else 0

    def _close(self, key: tuple[str, int]) -> None:
        sock, server = self.open.pop(key)
        if server is not None:
            server.close()
        else:
            sock.close()

    def close_all(self) -> list[Any]:
        servers = [server for _, server in self.open.values() if server is not None]
        for key in list(self.open):
            self._close(key)
        return servers


_WILDCARDS = {"*": "0.0.0.0", "::*": "::"}
_UNAVAILABLE = {errno.ENOPROTOOPT, errno.EPROTONOSUPPORT, errno.ESOCKTNOSUPPORT, errno.EPFNOSUPPORT,
                errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL}


def new_state(config: Config | None = None) -> ServerState:
    """A server's logical state with every command family loaded: what a Server runs,
    and what tests and benchmarks drive without a network."""
    config = config or Config()
    return ServerState(server_commands(config), config)


class Server(DirectAccess):  # srv.set(), srv.snapshot()...: net/direct.py
    """A fakekey server: on the background loop thread all of a process's servers share
    (`start()`, net/loop_thread.py) or in the running loop (`await start_async()`). Also a
    context manager.

    >>> with Server() as srv:
    ...     redis.Redis.from_url(srv.url).ping()
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        config: dict[str, str] | list[tuple[str, Any]] | None = None,
        **settings: Any,
    ) -> None:
        directives = list(config.items() if isinstance(config, dict) else config or [])
        directives += [(name.replace("_", "-"), _config_text(value)) for name, value in settings.items()]
        if not any(name.lower() == "bind" for name, _ in directives):
            directives.insert(0, ("bind", host))
        else:  # the bind directive names the addresses; the URL uses the first
            bind = dict(directives)["bind"]
            host = _url_host(bind if isinstance(bind, str) else " ".join(bind))
        directives.append(("port", str(port or 0)))
        self.host = host
        self.state = new_state(_config_of(directives, settings))
        self._requested_port = port or 0  # 0: a free one
        self.port = port or 0
        # port 0 given with a Unix socket: that socket only, no TCP, as Valkey (no port
        # given, or 0 without a socket: a free port, fakekey's own meaning of 0)
        self.tcp_wanted = port != 0 or not self.state.config["unixsocket"]
        self.unix_listener = UnixListener()  # the clients' Unix socket (net/unix_listener.py)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: threading.Thread | None = None
        self.listeners = Listeners(self.state)
        self._tasks: list[asyncio.Task[Any]] = []
        # the beats (net/beats.py) the cron and persistence's cron run on: loop timers that
        # the loop's servers share, not tasks that sleep (a timer costs less, and
        # asyncio.sleep is what a test may patch and count)
        self._cron_beat: Beat | None = None
        self._persistence_beat: Beat | None = None
        self._fast_expiry_due = False  # a fast expiry cycle is scheduled
        self._cron_clients: deque[int] = deque()  # the client ids clients_cron visits next
        self._stopped = Latch()  # set once a server started by start() has stopped
        self._stopped.clear()
        # start(wait=False): the sockets bound in the caller's thread, and the start the
        # loop thread has yet to finish (what waits for the server waits for it first)
        self._prebound: list[socket.socket] | None = None
        self._starting: BackgroundStart | None = None
        self._stopping: asyncio.Task[None] | None = None
        # fakekey-server's own process (cli.py): only then is the descriptor limit the
        # server's to raise, as Valkey's (config/limits.py); an embedded server leaves it
        self.owns_process = False
        self.faults = ServerFaults(self)  # FAKEKEY.FAULT from Python (net/faults.py, docs/faults.md)
        self.cluster_bus_wanted = True  # False for the nodes of a fakekey.Cluster (in-process bus)
        self.cluster_bus: ClusterBus | None = None  # cluster mode's bus to other processes

    # --- addresses ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """redis://HOST:PORT, or unix://PATH for a server on its Unix socket only."""
        if not self.port and self.unix_socket_path:
            return f"unix://{self.unix_socket_path}"
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address, bracketed
        return f"redis://{host}:{self.port}"

    @property
    def unix_socket_path(self) -> str | None:
        """The `unixsocket` the server listens on (redis-py's `unix_socket_path=`), or None."""
        return self.state.config["unixsocket"] or None

    # --- the clock, from Python -------------------------------------------------------

    def _on_loop(self, fn: Any, *args: Any) -> Any:
        """Run fn on the server's loop (from any thread) and return its result."""
        if self._starting is not None:
            self._wait_for_start()
        loop = self._loop
        if loop is None or not loop.is_running():
            return fn(*args)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            return fn(*args)
        done: Any = asyncio.run_coroutine_threadsafe(_as_coro(fn, *args), loop)
        return done.result(10)

    def time_ms(self) -> int:
        return self.state.clock.now_ms()

    def freeze(self, ms: int | None = None, *, at: datetime.datetime | int | None = None) -> None:
        """Freeze the clock at `ms` or `at` (a datetime, or unix ms; default: now)."""
        when = ms if at is None else _unix_ms(at)
        self._on_loop(self.state.set_clock, self.time_ms() if when is None else when)

    def advance(self, ms: int = 0, *, seconds: float = 0) -> None:
        """Move the clock forward by `ms` plus `seconds`: keys expire and blocked clients
        time out at once. A running clock is frozen at the new time."""
        self._on_loop(self.state.advance_clock, ms + round(seconds * 1000))

    def real_time(self) -> None:
        self._on_loop(self.state.real_clock)

    # --- the lost-wake detector (EMQ queues, docs/emq.md), from Python ---------------------

    def wakes(self) -> WakeReport:
        """The lost-wake detector's counts (`lost`, `wasted`) and its most recent lost
        wakes (`records`, oldest first), as FAKEKEY.WAKES GET answers them."""
        report: WakeReport = self._on_loop(self.state.wakes.report)
        return report

    def reset_wakes(self) -> None:
        """Clear the detector's counts and records (FAKEKEY.WAKES RESET)."""
        self._on_loop(self.state.wakes.reset)

    @contextlib.contextmanager
    def frozen(self, at: datetime.datetime | int | None = None) -> Iterator[Server]:
        """`with srv.frozen(at=...):` the clock stands still inside, then runs on the wall clock."""
        self.freeze(at=at)
        try:
            yield self
        finally:
            self.real_time()

    # --- lifecycle ------------------------------------------------------------------------

    async def start_async(self) -> Server:
        """Start serving in the running event loop (a `loadmodule` refuses to start, as
        Valkey's start fails on a module it cannot load: StartupRefused)."""
        refusal = startup_refusal(self.state.config.directives)
        if refusal:
            raise StartupRefused(refusal)
        self._loop = asyncio.get_running_loop()
        state = self.state
        state.loop, state.loop_ident = self._loop, threading.get_ident()
        config = state.config
        if self.owns_process:  # as Valkey at start-up: maxclients fits the descriptor limit (may log, lower it)
            config.values["maxclients"] = adjust_open_files_limit(config["maxclients"])
            config.appliers["maxclients"] = owned_maxclients_applier
        if state.persistence is None:  # the data on disk first, as Valkey (LoadError refuses)
            state.persistence = Persistence(state)
            state.persistence.load()
            rearm_after_load(state)  # queue timers whose settings the data holds (EMQ 7.4)
        sockets = self._prebound if self._prebound is not None else self._bind_tcp()
        self._prebound = None
        if config["unixsocket"]:
            self._open_unix_socket()
        bus_sockets: list[socket.socket] = []
        if config["cluster-enabled"] and self.cluster_bus_wanted and state.cluster is None:
            sockets, bus_sockets = self._bind_cluster_bus(sockets)
        for start in self.listeners.serve(self._loop, sockets):
            await start
        await self.unix_listener.serve(self._loop, lambda: Connection(state))
        self._listening_on(self.listeners.port() or self._requested_port if self.tcp_wanted else 0)
        if config["cluster-enabled"] and state.cluster is None:
            # a lone node knows no address of its own until a MEET tells it (Valkey's too)
            enable_cluster(state, "", self.port)
        if bus_sockets and state.cluster is not None:
            await self._start_cluster_bus(state.cluster, bus_sockets)
        config.appliers["port"] = self._apply_port
        config.appliers["bind"] = self._apply_bind
        state.connect_upstream = partial(start_link, state)  # REPLICAOF host port
        # MIGRATE to a server on this same loop goes to its state, not through a socket
        if self.port:  # (a server on its Unix socket only has no port to be reached at)
            serving_on(self._loop, self.port, state)
        state.local_peer = partial(neighbour, self._loop, self.host)
        if config["replicaof"]:  # a replica from the start (net/replica_link.py)
            host, port = config["replicaof"].rsplit(" ", 1)
            follow(state, host, int(port), at_startup=True)
        self._cron_beat = beat_of(self._loop, 1 / config["hz"])
        self._cron_beat.join(self._cron)
        self._persistence_beat = beat_of(self._loop, PERSISTENCE_CRON_EVERY)
        self._persistence_beat.join(self._persistence_cron)
        return self

    def _bind_tcp(self) -> list[socket.socket]:
        """The TCP listeners' sockets (none for a server on its Unix socket only)."""
        if not self.tcp_wanted:
            return []
        return self.listeners.bind(self.state.config["bind"], self._requested_port)

    def _open_unix_socket(self) -> None:
        """Listen on `unixsocket` too; when it cannot, the start fails (UnixSocketFailure,
        logged) and the TCP sockets bound for it are closed."""
        config = self.state.config
        try:
            self.unix_listener.open(config["unixsocket"], config["unixsocketperm"], config["unixsocketgroup"],
                                    config["dir"])
        except UnixSocketFailure:
            self.listeners.close_all()
            raise

    # --- CONFIG SET port / bind ---------------------------------------------------------

    def _listening_on(self, port: int) -> None:
        self.port = port
        self.state.tcp_port = port
        self.state.config.values["port"] = port  # CONFIG GET port: the port in use

    def _apply_port(self, new: int, old: int) -> str | None:
        """Listen on the new port (0: stop listening on TCP, as Valkey does)."""
        if not self._rebind(self.state.config["bind"] if new else "", new):
            return "Unable to listen on this port. Check server logs."
        self._listening_on(new)
        return None

    def _apply_bind(self, new: str, old: str) -> str | None:
        if not self._rebind(new, self.state.config["port"]):
            return "Failed to bind to specified addresses."
        return None

    def _rebind(self, bind: str, port: int) -> bool:
        """Re-bind the listeners; the old ones stay when the new ones cannot be bound."""
        try:
            sockets = self.listeners.bind(bind, port)
        except OSError:
            return False
        loop = self._loop
        assert loop is not None
        for start in self.listeners.serve(loop, sockets):
            self._tasks.append(loop.create_task(start))
        return True

    def _cron(self) -> None:
        """Active expiry and blocking timeouts, `hz` times a second: on the loop's beat of
        period 1/hz, which every server of that hz on the loop shares (net/beats.py)."""
        state = self.state
        try:
            state.active_expire_cycle()
            if state.tracking is not None:  # tracking-table-max-keys (core/tracking.py)
                state.tracking.evict_to_limit()
            if state.expiry.wants_fast_cycle():
                self._expire_fast_soon()
            state.blocking.expire_timeouts()
            state.timers.run_due()  # the queue timers (core/timers.py), should a loop timer miss
            if state.config["timeout"]:
                close_idle_clients(state)
            clients_cron(state, self._cron_clients)
            client_memory_cron(state)  # maxmemory's share of clients, client eviction
            if state.cluster is not None:  # node timeouts, failover, unanswered MEETs
                state.cluster.drop_stale_handshakes(state.clock.now_ms())
                state.cluster.refresh()
                if state.cluster.bus is not None:
                    state.cluster.bus.tick(state.clock.now_ms())
        except Exception:  # noqa: BLE001 - the cron must never die
            import traceback

            traceback.print_exc()
        beat, loop = self._cron_beat, self._loop
        if beat is not None and loop is not None and beat.period != 1 / state.config["hz"]:
            beat.leave(self._cron)  # CONFIG SET hz: on to the beat of the new period
            self._cron_beat = beat_of(loop, 1 / state.config["hz"])
            self._cron_beat.join(self._cron)

    def _persistence_cron(self) -> None:
        """Persistence's own cron (the log's fsync, scheduled saves and rewrites), every
        PERSISTENCE_CRON_EVERY seconds whatever `hz` is."""
        persistence = self.state.persistence
        try:
            if persistence is not None:
                persistence.cron()
        except Exception:  # noqa: BLE001 - the cron must never die
            log.exception("persistence cron")

    def _stop_crons(self) -> None:
        if self._cron_beat is not None:
            self._cron_beat.leave(self._cron)
        if self._persistence_beat is not None:
            self._persistence_beat.leave(self._persistence_cron)
        self._cron_beat = self._persistence_beat = None

    def _expire_fast_soon(self) -> None:
        """Valkey's fast expiry cycles: while the last cycle ran out of time, a 1 ms one
        every 2 ms, between the loop's other work, until the backlog is gone."""
        loop = self._loop
        if loop is not None and not self._fast_expiry_due:
            self._fast_expiry_due = True
            loop.call_later(FAST_EXPIRY_EVERY, self._expire_fast)

    def _expire_fast(self) -> None:
        self._fast_expiry_due = False
        state = self.state
        try:
            state.active_expire_cycle(fast=True)
        except Exception:  # noqa: BLE001 - as the cron's own work
            import traceback

            traceback.print_exc()
            return
        if state.expiry.wants_fast_cycle():
            self._expire_fast_soon()

    # --- cluster mode's bus (net/cluster_bus.py) ----------------------------------------------

    def _bind_cluster_bus(self, sockets: list[socket.socket]) -> tuple[list[socket.socket], list[socket.socket]]:
        """The bus's sockets, on cluster-port or the port + 10000 (Valkey's), on the same
        addresses; with port 0, a free port whose bus port is free too (the client
        listeners bound again on another until one is)."""
        config = self.state.config
        for _ in range(BUS_PORT_TRIES):
            port = self.listeners.port() or self._requested_port
            try:
                return sockets, bind_bus(config["bind"], config["cluster-port"] or port + 10000)
            except OSError as err:
                if self._requested_port or config["cluster-port"]:
                    log.warning("Could not bind the cluster bus port: %s", err)
                    self.listeners.close_all()
                    raise
            self.listeners.close_all()
            sockets = self.listeners.bind(config["bind"], 0)
        self.listeners.close_all()
        raise OSError(errno.EADDRINUSE, "no free port with a free cluster bus port")

    async def _start_cluster_bus(self, view: ClusterView, sockets: list[socket.socket]) -> None:
        view.myself.bus_port = sockets[0].getsockname()[1]
        self.cluster_bus = ClusterBus(self.state, view, sockets)
        await self.cluster_bus.start()

    async def stop_async(self) -> None:
        if self._loop is not None:
            gone_from(self._loop, self.port, self.state)
        if self.cluster_bus is not None:
            await self.cluster_bus.stop()
            self.cluster_bus = None
        await stop_link(self.state)  # a replica's link to its primary ends first
        if self.state.script_runner is not None:
            self.state.script_runner.abandon()  # a BUSY script ends with the server
        self._stop_crons()
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        if self.state.persistence is not None:
            self.state.persistence.close()  # background saves end, the log is flushed
        servers = self.listeners.close_all()
        unix_server = self.unix_listener.close()  # its file removed, as Valkey at shutdown
        if unix_server is not None:
            servers.append(unix_server)
        for client in list(self.state.clients.values()):
            if client.connection is not None:
                client.connection.close()
        for server in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def serve_forever(self) -> None:
        await self.start_async()
        self.state.shutdown_requested = asyncio.get_running_loop().create_future()
        await self.state.shutdown_requested
        await self.stop_async()

    def start(self, wait: bool = True) -> Server:
        """Start on the background loop every in-process server of the process shares
        (net/loop_thread.py); returns when listening, or raises why it could not start.

        wait=False (FakeServer's): a server whose start nothing can refuse once its port
        is bound binds in the caller's thread and returns, listening, without waiting for
        the loop thread: the connections wait in the socket's backlog until the loop has
        run the rest of the start, and the server's own calls (`_on_loop`, `stop`) wait
        for it first. Any other server starts as with wait=True."""
        shared = shared_loop_thread()
        if shared.is_current():
            raise RuntimeError("Server.start() on the servers' own loop: await start_async()")
        self._stopped.clear()
        if not wait and self._bind_before_start():
            # a callback, not run_coroutine_threadsafe: less for both threads to do
            self._starting = starting = BackgroundStart()
            shared.loop.call_soon_threadsafe(self._start_unattended, starting)
            self.loop_thread = shared.thread
        else:
            starting_now = asyncio.run_coroutine_threadsafe(self._start_in_background(), shared.loop)
            self.loop_thread = shared.thread
            starting_now.result()
        return self

    def _start_unattended(self, starting: BackgroundStart) -> None:
        """On the loop: the rest of a start(wait=False), which `starting` reports."""
        starting.task = asyncio.get_running_loop().create_task(self._finish_start(starting))

    async def _finish_start(self, starting: BackgroundStart) -> None:
        try:
            await self._start_in_background()
        except BaseException as err:  # noqa: BLE001 - reported to whoever waits for the start
            starting.finish(err)
        else:
            starting.finish(None)

    def _bind_before_start(self) -> bool:
        """Bind now, in the caller's thread, when nothing after the bind can refuse the
        start: no start-up refusal, no data to load (Persistence.load's test), no cluster
        bus, no primary to follow, not fakekey-server's own process. False: not bound."""
        config = self.state.config
        if (self.owns_process or self.state.persistence is not None or config["cluster-enabled"]
                or config["replicaof"] or config["appendonly"] or config["save"].split()
                or config["dir"] != "." or config["unixsocket"] or startup_refusal(config.directives)):
            return False
        self._prebound = self.listeners.bind(config["bind"], self._requested_port)
        self._listening_on(self.listeners.port() or self._requested_port)
        return True

    def _wait_for_start(self) -> None:
        """Wait for a start(wait=False) to finish; raises why it failed, if it did."""
        starting = self._starting
        if starting is not None:
            starting.result()
            self._starting = None

    async def _start_in_background(self) -> None:
        unattended = self._prebound is not None  # start(wait=False): no caller waits to hear why it failed
        try:
            await self.start_async()
        except BaseException as err:
            if unattended:
                log.error("fakekey: the server on port %d could not start: %r", self.port, err)
            self._stop_crons()  # nothing of a server that did not start stays on the loop
            for task in self._tasks:
                task.cancel()
            self._tasks.clear()
            self.listeners.close_all()
            self.unix_listener.close()
            raise
        shutdown = self.state.shutdown_requested = asyncio.get_running_loop().create_future()
        shutdown.add_done_callback(self._shutdown_requested)

    def _shutdown_requested(self, _: object) -> None:
        """SHUTDOWN, or stop(): this server stops; the loop goes on for the others."""
        loop = self._loop
        assert loop is not None
        self._stopping = loop.create_task(self._stop_in_background())  # held: the loop holds tasks weakly

    async def _stop_in_background(self) -> None:
        try:
            await self.stop_async()
        finally:
            self._stopped.set()

    def stop(self) -> None:
        """Stop serving; returns once stopped. On the loop's own thread (a finalizer the
        collector ran there) it only asks: waiting there would hold the loop."""
        if self._starting is not None and not self._started_for_stop():
            return
        loop, thread = self._loop, self.loop_thread
        if loop is None or thread is None:
            return
        self.loop_thread = None
        if not thread.is_alive():  # a forked child's copy: the loop runs in the parent only
            return
        loop.call_soon_threadsafe(self._ask_shutdown)
        if threading.get_ident() != thread.ident:
            self._stopped.wait(10)

    def _started_for_stop(self) -> bool:
        """Let a start(wait=False) finish before stopping: True once it has, False when
        there is nothing to stop (it failed, or this is a forked child's copy) or when it
        is the loop's own thread asking (the stop then follows the start)."""
        starting, thread = self._starting, self.loop_thread
        assert starting is not None
        if not starting.done():
            if thread is None or not thread.is_alive():
                return False
            if thread.ident == threading.get_ident():
                starting.then(self.stop)
                return False
            starting.wait()
        self._starting = None
        if starting.error is not None:
            self.loop_thread = None
            return False
        return True

    def _ask_shutdown(self) -> None:
        future = self.state.shutdown_requested
        if future is not None and not future.done():
            future.set_result(None)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Server:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()


def _url_host(bind: str) -> str:
    """The address clients reach the first bind address on (loopback for a wildcard)."""
    first = (bind.split() or ["127.0.0.1"])[0].lstrip("-")
    return {"*": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::*": "::1", "::": "::1"}.get(first, first)


async def _as_coro(fn: Any, *args: Any) -> Any:
    return fn(*args)


def _unix_ms(at: datetime.datetime | int) -> int:
    """A clock time in unix ms: a datetime (naive ones are local time, as `.timestamp()`)
    or ms already."""
    if isinstance(at, datetime.datetime):
        return round(at.timestamp() * 1000)
    return int(at)


def _config_of(directives: list[tuple[str, Any]], keywords: dict[str, Any]) -> Config:
    """The configuration of these directives; one it refuses raises ConfigError naming
    the setting and the value, as given (a keyword argument by its keyword)."""
    config = Config()
    spelled = {name.replace("_", "-"): name for name in keywords}
    for name, value in directives:
        try:
            config.set_at_startup(name, value)
        except ConfigError as err:
            raise setting_error(spelled.get(name, name), value, err, keyword=name in spelled) from None
    return config


def _config_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


__all__ = ["Server", "Connection", "ReplyError"]

