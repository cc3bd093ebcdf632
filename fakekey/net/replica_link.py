"""The replica's link to a real primary (REPLICAOF host port), as Valkey's replica makes
it (replication.c): connect; the handshake (PING, AUTH with masteruser/masterauth,
REPLCONF listening-port, capa eof capa psync2, version, then PSYNC with the replication id
and offset known, or `PSYNC ? -1`); a full resync's RDB file (`$len` bulk, or diskless
`$EOF:<40-byte mark>` ... mark), or `+CONTINUE` after a short disconnection; then the
command stream, run as the primary's client (no replies, its own SELECT, MULTI/EXEC),
the offset counting the bytes of the commands processed, `REPLCONF ACK <offset>` every
second and when the primary asks (GETACK). A lost link is tried again every second.

Nothing half-done reaches the data: the RDB file is received whole and parsed before the
databases are flushed and filled; a cut transfer, a bad file or garbage in the stream
drops the link (to be tried again) and leaves the data as it was. Memory is bounded: a
transfer may not claim more than the machine's memory, a line or a bulk in the stream
no more than the protocol's limits (proto-max-bulk-len)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from fakekey.core.client import Client
from fakekey.core.transactions import end_transaction
from fakekey.core.upstream import CONNECT, CONNECTED, CONNECTING, HANDSHAKE, SYNC, Upstream
from fakekey.persistence import load
from fakekey.persistence.failover import failover_of
from fakekey.persistence.snapshot import LoadError
from fakekey.resp.parser import ProtocolError, RequestParser
from fakekey.resp.replies import ReplyError
from fakekey.scripting.libraries import LibraryError, LibrarySet, libraries_of

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

RETRY_EVERY = 1.0  # s between two tries to reach the primary (Valkey's replicationCron)
ACK_EVERY = 1.0  # s between two REPLCONF ACKs
LINE_LIMIT = 64 * 1024  # the longest reply line of the handshake
CHUNK = 1 << 16
EOF_MARK_LEN = 40  # RDB_EOF_MARK_SIZE


def largest_transfer() -> int:
    """The most bytes an RDB transfer may announce: the machine's memory."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return 1 << 34


class LinkError(Exception):
    """The primary answered something a replica cannot go on with: drop, try again."""


def command_bytes(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def start_link(state: ServerState, host: str, port: int, cached: bool) -> Upstream:
    """Make `state` a replica of host:port: the record the core reads, and the link's
    task on the server's loop. `cached`: the server's replication id and offset are worth
    a partial resync (it was a primary, or followed one)."""
    upstream = Upstream(host, port, cached)
    upstream.read_offset = state.repl_offset  # a cached primary's: all it read was processed
    link = ReplicaLink(state, upstream)
    upstream.stop, upstream.link = link.stop, link
    link.start()
    return upstream


class ReplicaLink:
    """One REPLICAOF: tries, handshakes and syncs until stopped."""

    def __init__(self, state: ServerState, upstream: Upstream) -> None:
        self.state = state
        self.upstream = upstream
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.stopped = False
        # the primary's client: kept across a short disconnection (its database, its
        # offset), as Valkey caches its primary; made anew by a full resync
        self.primary: Client | None = None
        self.fed = 0  # stream bytes given to the primary client's parser since the sync
        self.base = 0  # the offset where `fed` starts

    def start(self) -> None:
        loop = self.state.loop or asyncio.get_running_loop()
        self.task = loop.create_task(self.run())

    def stop(self) -> None:
        """REPLICAOF NO ONE, another primary, or the server stops."""
        self.stopped = True
        if self.task is not None:
            self.task.cancel()
        self._close()

    def _close(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:
            writer.close()

    # --- the tries ---------------------------------------------------------------------------

    async def run(self) -> None:
        while not self.stopped:
            try:
                await self.session()
            except asyncio.CancelledError:
                raise
            except (OSError, EOFError, LinkError, ProtocolError, LoadError, TimeoutError) as err:
                if not self.stopped:
                    log.warning("Replication with PRIMARY %s:%d: %s", self.upstream.host,
                                self.upstream.port, err or type(err).__name__)
            except Exception:  # noqa: BLE001 - a defect: logged, and the link tried again
                log.exception("Replication with PRIMARY failed")
            finally:
                self._lost()
            if self.stopped:  # a cancellation asyncio.wait_for swallowed (Python 3.11)
                return
            await asyncio.sleep(RETRY_EVERY)

    def _lost(self) -> None:
        """The connection ended: a synchronized primary is cached for a partial resync
        (its unprocessed bytes and a half-received transaction dropped, as Valkey's)."""
        self._close()
        up = self.upstream
        if up.status == CONNECTED:
            log.info("Connection with primary lost.")
            up.down_since = wall_ms() // 1000
        up.status = CONNECT
        up.client = None
        primary = self.primary
        if primary is not None:
            if primary.in_multi:
                end_transaction(primary)
            primary.parser = RequestParser(self.state.config["proto-max-bulk-len"])  # authenticated
            self.base, self.fed = self.state.repl_offset, 0
            up.read_offset = self.state.repl_offset

    async def session(self) -> None:
        up = self.upstream
        timeout = self.state.config["repl-timeout"]
        up.status = CONNECTING
        log.info("Connecting to PRIMARY %s:%d", up.host, up.port)
        connection = await self.connect(timeout)
        if connection is None:  # logged: tried again after RETRY_EVERY, as Valkey's cron does
            return
        reader, self.writer = connection
        up.status = HANDSHAKE
        await self.handshake(reader, timeout)
        reply = await self.psync(reader, timeout)
        if reply.startswith(b"+FULLRESYNC"):
            await self.full_sync(reader, reply, timeout)
        else:
            self.partial_sync(reply)
        await self.follow(reader, timeout)

    async def connect(self, timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """Valkey's connectWithPrimary: the primary's name resolved, then the connection
        made; None, with Valkey's line in the log, when either fails."""
        up = self.upstream
        try:
            address = await asyncio.wait_for(resolve(up.host, up.port), timeout)
        except socket.gaierror as err:
            log.warning("Unable to connect to PRIMARY: %s", err.strerror)
            return None
        except TimeoutError:
            log.warning("Timeout connecting to the PRIMARY...")
            return None
        log.info("PRIMARY <-> REPLICA sync started")
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(address, up.port, limit=LINE_LIMIT), timeout)
        except TimeoutError:  # before OSError: a subclass of it
            log.warning("Timeout connecting to the PRIMARY...")
        except OSError as err:
            log.warning("Error condition on socket for SYNC: %s", err.strerror or err)
        return None

    # --- the handshake -----------------------------------------------------------------------

    def send(self, data: bytes) -> None:
        writer = self.writer
        if writer is None:
            raise LinkError("the link is closed")
        writer.write(data)

    async def reply_line(self, reader: asyncio.StreamReader, timeout: float) -> bytes:
        """The primary's next reply line; the newlines it sends to keep the link alive
        while it prepares are skipped."""
        while True:
            try:
                line = await asyncio.wait_for(reader.readuntil(b"\n"), timeout)
            except asyncio.LimitOverrunError:
                raise LinkError("a reply line from the primary is too long") from None
            except asyncio.IncompleteReadError:
                raise EOFError("the primary closed the connection") from None
            line = line.rstrip(b"\r\n")
            if line:
                return line

    async def handshake(self, reader: asyncio.StreamReader, timeout: float) -> None:
        config = self.state.config
        self.send(command_bytes(b"PING"))
        pong = await self.reply_line(reader, timeout)
        # an error that only asks for authentication lets the handshake go on to AUTH
        if pong.startswith(b"-") and not pong.startswith(
                (b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise LinkError(f"Error reply to PING from primary: '{pong.decode('utf-8', 'replace')}'")
        log.info("Primary replied to PING, replication can continue...")
        password = config["primaryauth"]
        if password:
            user = config["primaryuser"]
            args = [b"AUTH", user.encode(), password.encode()] if user else [b"AUTH", password.encode()]
            self.send(command_bytes(*args))
            answer = await self.reply_line(reader, timeout)
            if answer.startswith(b"-"):
                raise LinkError(f"Unable to AUTH to PRIMARY: {answer.decode('utf-8', 'replace')}")
        port = config["replica-announce-port"] or self.state.tcp_port
        requests = [command_bytes(b"REPLCONF", b"listening-port", b"%d" % port)]
        if config["replica-announce-ip"]:
            requests.append(command_bytes(b"REPLCONF", b"ip-address", config["replica-announce-ip"].encode()))
        requests.append(command_bytes(b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"))
        requests.append(command_bytes(b"REPLCONF", b"version", self.state.valkey_version.encode()))
        self.send(b"".join(requests))
        for _ in requests:  # an old primary may refuse any of them: not critical (as Valkey)
            answer = await self.reply_line(reader, timeout)
            if answer.startswith(b"-"):
                log.info("(Non critical) Primary does not understand REPLCONF: %s",
                         answer.decode("utf-8", "replace"))

    async def psync(self, reader: asyncio.StreamReader, timeout: float) -> bytes:
        state, up = self.state, self.upstream
        failover = failover_of(state)
        if failover is not None and not failover.in_progress:
            failover = None
        # a FAILOVER hands over to this primary: PSYNC asks it to take over too
        extra = (b"FAILOVER",) if failover is not None else ()
        if up.cached:
            offset = b"%d" % (state.repl_offset + 1)
            log.info("Trying a partial resynchronization (request %s:%s).", state.replid, offset.decode())
            self.send(command_bytes(b"PSYNC", state.replid.encode(), offset, *extra))
        else:
            log.info("Partial resynchronization not possible (no cached primary)")
            self.send(command_bytes(b"PSYNC", b"?", b"-1", *extra))
        reply = await self.reply_line(reader, timeout)
        accepted = reply.startswith((b"+FULLRESYNC", b"+CONTINUE"))
        if failover is not None and accepted:
            failover.accepted()
        elif failover is not None:  # back to a primary: after this turn, outside the link
            asyncio.get_running_loop().call_soon(failover.rejected)
        if not accepted:
            raise LinkError(f"Unexpected reply to PSYNC from primary: {reply[:128].decode('utf-8', 'replace')}")
        return reply

    # --- full and partial resync -------------------------------------------------------------

    async def full_sync(self, reader: asyncio.StreamReader, reply: bytes, timeout: float) -> None:
        words = reply.split()
        if len(words) != 3 or len(words[1]) != 40 or not words[2].lstrip(b"-").isdigit():
            raise LinkError(f"Bad FULLRESYNC reply from primary: {reply[:128].decode('utf-8', 'replace')}")
        replid, offset = words[1].decode("latin-1"), int(words[2])
        log.info("Full resync from primary: %s:%d", replid, offset)
        up = self.upstream
        up.status = SYNC
        data, rest = await self.receive_rdb(reader, timeout)
        # parsed on a worker thread (it touches no server state): the loop goes on
        # serving the old data meanwhile; only the install below holds it
        name = f"the RDB from PRIMARY {up.host}:{up.port}"
        parsed = await asyncio.get_running_loop().run_in_executor(
            None, partial(load.parse_file, self.state, name, data, announce_old_format=False))
        del data
        self.install(parsed)
        state = self.state
        state.replid, state.repl_offset = replid, offset
        state.replid2, state.second_repl_offset = "0" * 40, -1
        self.primary = self._new_primary_client()
        self.base, self.fed = offset, 0
        up.read_offset = offset
        up.cached = True
        self._linked()
        log.info("PRIMARY <-> REPLICA sync: Finished with success")
        self.send_ack()  # a diskless primary starts the stream once the replica acknowledges
        if rest:
            self.apply(rest)

    def partial_sync(self, reply: bytes) -> None:
        """+CONTINUE [new replid]: the data stays; a new id keeps the old as the second."""
        state = self.state
        words = reply.split()
        log.info("Successful partial resynchronization with primary.")
        if len(words) > 1 and words[1].decode("latin-1") != state.replid:
            new = words[1].decode("latin-1")
            if len(new) != 40:
                raise LinkError("Bad CONTINUE reply from primary")
            state.replid2, state.second_repl_offset = state.replid, state.repl_offset + 1
            state.replid = new
            log.info("Primary replication ID changed to %s", new)
        if self.primary is None:  # this server was a primary: it follows as one's client
            self.primary = self._new_primary_client()
            self.base, self.fed = state.repl_offset, 0
            self.upstream.read_offset = state.repl_offset
        self._linked()

    def _linked(self) -> None:
        up = self.upstream
        up.client = self.primary
        up.status = CONNECTED
        up.last_io_ms = wall_ms()

    def _new_primary_client(self) -> Client:
        client = Client(self.state, addr=f"{self.upstream.host}:{self.upstream.port}")
        client.authenticated = client.parser.authenticated = True
        client.acl_unrestricted = True  # Valkey's primary client runs anything
        return client

    async def receive_rdb(self, reader: asyncio.StreamReader, timeout: float) -> tuple[bytes, bytes]:
        """The RDB file (bulk or EOF-marked) and any stream bytes read past its end."""
        header = await self.reply_line(reader, timeout)
        if header.startswith(b"-"):
            raise LinkError(f"PRIMARY aborted replication with an error: {header[:128].decode('utf-8', 'replace')}")
        if not header.startswith(b"$"):
            raise LinkError("Bad protocol from PRIMARY, the first byte is not '$' (we received "
                            f"'{header[:128].decode('utf-8', 'replace')}'), are you sure the host and port are right?")
        if header.startswith(b"$EOF:"):
            mark = header[5:]
            if len(mark) != EOF_MARK_LEN:
                raise LinkError("Bad EOF mark from PRIMARY")
            return await self._receive_until_mark(reader, mark, timeout)
        body = header[1:]
        if not body.isdigit() or len(body) > 19:
            raise LinkError(f"Bad bulk length from PRIMARY: {body[:32].decode('utf-8', 'replace')}")
        size = int(body)
        if size > largest_transfer():
            raise LinkError(f"the primary announces an RDB of {size} bytes: more than this "
                            "machine's memory, refused")
        return await self._receive_sized(reader, size, timeout), b""

    async def _receive_sized(self, reader: asyncio.StreamReader, size: int, timeout: float) -> bytes:
        up = self.upstream
        up.transfer_size, up.transfer_read = size, 0
        log.info("PRIMARY <-> REPLICA sync: receiving %d bytes from primary", size)
        data = bytearray()
        while len(data) < size:
            chunk = await asyncio.wait_for(reader.read(min(CHUNK, size - len(data))), timeout)
            if not chunk:
                raise EOFError("the primary closed the connection during the transfer")
            data += chunk
            up.transfer_read = len(data)
            up.transfer_last_io_ms = wall_ms()
        return bytes(data)

    async def _receive_until_mark(self, reader: asyncio.StreamReader, mark: bytes,
                                  timeout: float) -> tuple[bytes, bytes]:
        up = self.upstream
        up.transfer_size, up.transfer_read = 0, 0
        log.info("PRIMARY <-> REPLICA sync: receiving streamed RDB from primary with EOF")
        limit = largest_transfer()
        data = bytearray()
        while True:
            chunk = await asyncio.wait_for(reader.read(CHUNK), timeout)
            if not chunk:
                raise EOFError("the primary closed the connection during the transfer")
            start = max(0, len(data) - EOF_MARK_LEN)
            data += chunk
            up.transfer_read = len(data)
            up.transfer_last_io_ms = wall_ms()
            at = data.find(mark, start)
            if at >= 0:
                return bytes(data[:at]), bytes(data[at + EOF_MARK_LEN:])
            if len(data) > limit:
                raise LinkError("the primary's RDB transfer is larger than this machine's memory")

    def install(self, parsed: load.Parsed) -> None:
        """The received file, read whole and checked (a bad one raised LoadError), its
        functions compiled aside (a bad one raises LoadError and changes nothing); then
        the old data and functions go and the file's take their place (Valkey's
        emptyData, then the load)."""
        state = self.state
        functions = compile_functions(state, parsed.libraries())
        lazy = bool(state.config["replica-lazy-flush"])
        for db in state.dbs:
            db.flush(lazy)
        if functions is not None:
            libraries_of(state).current = functions
        elif state.functions is not None:
            state.functions.flush()
        if parsed.rdb is not None:  # in place already
            parsed.rdb.libraries = []
        elif parsed.former is not None:
            parsed.former.libraries = []
        counts = load.install(state, parsed, drop_expired=False)
        log.info("PRIMARY <-> REPLICA sync: Loading DB in memory: %d keys", counts.loaded)

    # --- the command stream ------------------------------------------------------------------

    async def follow(self, reader: asyncio.StreamReader, timeout: float) -> None:
        """Apply the stream until the link ends; acknowledge every second."""
        acks = asyncio.get_running_loop().create_task(self._ack_every_second())
        try:
            while True:
                try:
                    data = await asyncio.wait_for(reader.read(CHUNK), timeout)
                except TimeoutError:
                    raise LinkError("PRIMARY timeout: no data nor PING received...") from None
                if not data:
                    raise EOFError("the primary closed the connection")
                self.apply(data)
        finally:
            acks.cancel()

    async def _ack_every_second(self) -> None:
        while True:
            await asyncio.sleep(ACK_EVERY)
            if self.upstream.status == CONNECTED and self.writer is not None:
                self.send_ack()

    def send_ack(self) -> None:
        """REPLCONF ACK <offset processed>; with the append-only log on, FACK <offset in
        the log> too (what the primary's WAITAOF counts)."""
        offset = b"%d" % self.state.repl_offset
        if self.state.aof is None:
            self.send(command_bytes(b"REPLCONF", b"ACK", offset))
        else:  # the log is written as each command ends: all processed is in it
            self.send(command_bytes(b"REPLCONF", b"ACK", offset, b"FACK", offset))

    def apply(self, data: bytes) -> None:
        """Run each whole command of `data` as the primary's client; the offset moves by
        each command's bytes (a transaction's at its EXEC, as Valkey's reploff)."""
        primary = self.primary
        assert primary is not None
        up, state = self.upstream, self.state
        up.last_io_ms = wall_ms()
        up.read_offset += len(data)
        parser = primary.parser
        parser.feed(data)
        self.fed += len(data)
        while not self.stopped:
            argv = parser.next_request()  # ProtocolError: garbage, the link drops
            if argv is None:
                return
            self.execute(primary, argv)
            if not primary.in_multi:
                state.repl_offset = self.base + self.fed - parser.buffered()

    def execute(self, primary: Client, argv: list[bytes]) -> None:
        state = self.state
        if argv[0].lower() == b"replconf":  # handled here, not as a client's REPLCONF
            if len(argv) > 1 and argv[1].lower() == b"getack":
                self.send_ack()  # the offset before the GETACK itself, as Valkey's reploff
            return
        state.deny_blocking = True  # the primary's commands never block (Valkey's CLIENT_PRIMARY)
        try:
            reply = state.call(primary, argv)  # no reply goes back to the primary
        finally:
            state.deny_blocking = False
        if isinstance(reply, ReplyError):  # the data may now differ from the primary's
            log.warning("== CRITICAL == This replica is sending an error to its primary: '%s' "
                        "after processing the command '%s'",
                        reply.message[:128].decode("utf-8", "replace"),
                        argv[0][:128].decode("utf-8", "replace"))


async def resolve(host: str, port: int) -> str:
    """The address of `host` (the first getaddrinfo gives, as Valkey's anetResolve). The
    lookup runs in a worker thread and may outlive its link (REPLICAOF changed meanwhile):
    its outcome is then collected here, not reported by asyncio as never retrieved."""
    loop = asyncio.get_running_loop()
    lookup = loop.run_in_executor(None, socket.getaddrinfo, host, port, 0, socket.SOCK_STREAM)
    lookup.add_done_callback(_collect)
    infos = await lookup
    return str(infos[0][4][0])


def _collect(lookup: asyncio.Future[Any]) -> None:
    if not lookup.cancelled():
        lookup.exception()


def compile_functions(state: ServerState, codes: list[bytes]) -> LibrarySet | None:
    """The file's function libraries, compiled into a set of their own (None: none)."""
    if not codes:
        return None
    engine = libraries_of(state)
    loaded = LibrarySet()
    for code in codes:
        try:
            engine.create(code, replace=False, into=loaded, timeout=0)
        except LibraryError as err:
            raise LoadError(f"the primary's RDB: Failed loading library, "
                            f"{err.message.decode(errors='replace')}") from None
    return loaded


async def stop_link(state: ServerState) -> None:
    """The server stops: its link ends too, before the loop does."""
    upstream = state.upstream
    link = upstream.link if upstream is not None else None
    if not isinstance(link, ReplicaLink):
        return
    link.stop()
    if link.task is not None:
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(link.task, 2)


__all__ = ["start_link", "stop_link", "ReplicaLink", "LinkError", "largest_transfer"]
