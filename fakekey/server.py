"""The network side: one asyncio Protocol per connection (read -> parse -> execute ->
write), and `Server`, the object tests and the CLI start and stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from typing import Any

from fakekey.client import Client
from fakekey.config import Config
from fakekey.resp.parser import ProtocolError
from fakekey.resp.replies import NO_REPLY, ReplyError
from fakekey.state import ServerState

try:  # uvloop where installed
    import uvloop

    new_event_loop = uvloop.new_event_loop
except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
    new_event_loop = asyncio.new_event_loop

MAX_CLIENTS_ERROR = b"-ERR max number of clients reached\r\n"
log = logging.getLogger("fakekey.server")


class Connection(asyncio.Protocol):
    """One client connection. All requests of one read are answered in one write, at
    the end of the loop iteration (see `write`)."""

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        self.client: Client | None = None
        self.closing = False
        self.out: list[bytes] | None = None  # the replies of the running batch
        self.corked: list[bytes] = []  # bytes written outside a batch, sent at loop's turn
        self.corked_bytes = 0
        self._queued: tuple[int, int, Any] = (0, 0, None)  # see _queued_bytes

    # --- asyncio callbacks --------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.loop = asyncio.get_running_loop()
        state = self.state
        peer = transport.get_extra_info("peername")
        sock = transport.get_extra_info("sockname")
        client = Client(state, self, _addr(peer), _addr(sock))
        self.client = client
        if len(state.clients) >= state.config["maxclients"]:
            state.stats["rejected_connections"] += 1
            transport.write(MAX_CLIENTS_ERROR)
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

    def eof_received(self) -> bool:
        """The client has sent its last bytes: answer what it sent (the replies wait for
        the end of the loop iteration), then close."""
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
        if buffered > self.state.config.values["client-query-buffer-limit"]:
            # Valkey frees the client at once, without a reply (even while it is blocked)
            self.state.stats["client_query_buffer_limit_disconnections"] += 1
            self.close()
            return
        if client.blocked is None:
            self.run()

    def _queued_bytes(self, client: Client) -> int:
        """The arguments waiting in a MULTI queue count against the query buffer limit,
        as in Valkey (argument bytes plus a pointer per argument). Summed incrementally:
        `_queued` remembers (entries counted, their bytes, the last entry counted)."""
        queue = client.multi_queue
        if not queue:
            return 0
        counted, total, last = self._queued
        if counted > len(queue) or (counted and queue[counted - 1] is not last):
            counted, total = 0, 0  # a different queue since the last count
        for _, argv in queue[counted:]:
            total += sum(map(len, argv)) + 8 * len(argv)
        self._queued = (len(queue), total, queue[-1])
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
        next_request = parser.next_request
        limits_auth, limits_epoch = None, -1  # what the parse limits were last read for
        while client.blocked is None and not (client.close_after_reply or client.killed):
            # the request before may have changed the parse limits (AUTH, CONFIG SET)
            if limits_auth is not client.authenticated or limits_epoch != config.epoch:
                limits_auth, limits_epoch = client.authenticated, config.epoch
                parser.authenticated = client.authenticated or not config["requirepass"]
                parser.max_bulk = config["proto-max-bulk-len"]
            try:
                argv = next_request()
            except ProtocolError as err:
                error = err
                break
            if argv is None:
                break
            reply = state.call(client, argv)
            client.total_commands += 1
            if client.reply_mode == "on":
                if type(reply) is bytes:  # a bulk string, the commonest reply: no dispatch
                    out.append(b"$%d\r\n%s\r\n" % (len(reply), reply))
                elif reply is not NO_REPLY:
                    out.append(client.encoder.encode(reply))
            elif reply is not NO_REPLY and client.reply_mode == "skip":
                client.reply_mode = "on"
            if client.deferred_pushes:
                self.flush_deferred_pushes(client)
        self.out = None
        client.last_interaction_ms = state.now
        if error is not None:
            out.append(b"-ERR Protocol error: " + error.message + b"\r\n")
            state.stats["total_error_replies"] += 1
            state.error_stats["ERR"] += 1
            client.close_after_reply = True
        if out:
            self.write(out[0] if len(out) == 1 else b"".join(out))
        if client.close_after_reply or client.killed:
            self.uncork()  # its replies go out before the connection closes
            self.close()

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

    def write(self, data: bytes) -> None:
        """Send bytes to the client. Inside run() they join the batch's replies, in order.
        Otherwise (a batch's replies, messages to subscribers, woken clients) they are
        gathered and sent at the end of this loop iteration, with every other
        connection's, as Valkey writes its replies before it sleeps: a burst of messages
        costs one send, and the clients are woken once per burst, not once per reply."""
        if self.out is not None:
            self.out.append(data)
        elif self.transport is not None and not self.closing:
            if not self.corked:
                self._schedule_uncork()
            self.corked.append(data)
            self.corked_bytes += len(data)

    def _schedule_uncork(self) -> None:
        queue = self.state.uncork_queue
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # the script thread, while the loop thread waits on it
            self.loop.call_soon_threadsafe(self.uncork)
            return
        if not queue:
            loop.call_soon(_uncork_all, queue)
        queue.append(self)

    def uncork(self) -> None:
        data, self.corked, self.corked_bytes = b"".join(self.corked), [], 0
        transport = self.transport
        # the event loop may have closed the transport itself (a reset connection) before
        # connection_lost reaches us: what the client can no longer read is dropped
        if data and transport is not None and not self.closing and not transport.is_closing():
            if self.client is not None:
                self.client.net_out += len(data)
            self.transport.write(data)

    def close(self) -> None:
        if not self.closing and self.transport is not None:
            self.closing = True
            self.transport.close()
            if self.client is not None:
                self.state.remove_client(self.client)


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


def _addr(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        host = info[0]
        return f"[{host}]:{info[1]}" if ":" in host else f"{host}:{info[1]}"
    return str(info or "")


class Server:
    """A fakekey server: in a background thread (`start()`) or in the running loop
    (`await start_async()`). Also a context manager.

    >>> with Server() as srv:
    ...     redis.Redis.from_url(srv.url).ping()
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        config: dict[str, str] | None = None,
        **settings: Any,
    ) -> None:
        overrides = dict(config or {})
        for name, value in settings.items():
            overrides[name.replace("_", "-")] = _config_text(value)
        overrides.setdefault("bind", host)
        overrides["port"] = str(port)
        self.host = host
        self.state = ServerState(Config(overrides))
        self._requested_port = port
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stopped = threading.Event()

    # --- addresses ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}"

    # --- the clock, from Python -------------------------------------------------------

    def _on_loop(self, fn: Any, *args: Any) -> Any:
        """Run fn on the server's loop (from any thread) and return its result."""
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

    def freeze(self, ms: int | None = None) -> None:
        """Freeze the clock at `ms` (default: now)."""
        from fakekey.commands.fakekey_cmds import clock_set

        self._on_loop(clock_set, self.state, self.time_ms() if ms is None else ms)

    def advance(self, ms: int) -> None:
        """Move the clock forward: keys expire and blocked clients time out at once."""
        from fakekey.commands.fakekey_cmds import clock_advance

        self._on_loop(clock_advance, self.state, ms)

    def real_time(self) -> None:
        from fakekey.commands.fakekey_cmds import clock_real

        self._on_loop(clock_real, self.state)

    # --- lifecycle ------------------------------------------------------------------------

    async def start_async(self) -> Server:
        """Start serving in the running event loop."""
        self._loop = asyncio.get_running_loop()
        state = self.state
        self._server = await self._loop.create_server(
            lambda: Connection(state), self.host, self._requested_port, reuse_address=True, backlog=511
        )
        self.port = self._server.sockets[0].getsockname()[1]
        state.tcp_port = self.port
        self._tasks.append(self._loop.create_task(self._cron()))
        return self

    async def _cron(self) -> None:
        """Active expiry and blocking timeouts, `hz` times a second."""
        state = self.state
        while True:
            await asyncio.sleep(1 / state.config["hz"])
            try:
                state.active_expire_cycle()
                state.blocking.expire_timeouts()
            except Exception:  # noqa: BLE001 - the cron must never die
                import traceback

                traceback.print_exc()

    async def stop_async(self) -> None:
        for task in self._tasks:
            task.cancel()
        self._tasks.clear()
        if self._server is not None:
            self._server.close()
            for client in list(self.state.clients.values()):
                if client.connection is not None:
                    client.connection.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)
            self._server = None

    async def serve_forever(self) -> None:
        await self.start_async()
        self.state.shutdown_requested = asyncio.get_running_loop().create_future()
        await self.state.shutdown_requested
        await self.stop_async()

    def start(self) -> Server:
        """Start in a background thread with its own event loop; returns when listening."""
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            try:
                loop.run_until_complete(self.start_async())
            except BaseException as err:  # noqa: BLE001 - reported to the caller
                failure.append(err)
                started.set()
                return
            self.state.shutdown_requested = loop.create_future()
            started.set()
            loop.run_until_complete(self.state.shutdown_requested)
            loop.run_until_complete(self.stop_async())
            loop.close()
            self._stopped.set()

        self._thread = threading.Thread(target=run, name=f"fakekey-{id(self)}", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        loop = self._loop
        if self._thread is not None and loop is not None:
            def finish() -> None:
                fut = self.state.shutdown_requested
                if fut is not None and not fut.done():
                    fut.set_result(None)

            if not loop.is_closed():
                loop.call_soon_threadsafe(finish)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Server:
        return await self.start_async()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_async()


async def _as_coro(fn: Any, *args: Any) -> Any:
    return fn(*args)


def _config_text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


__all__ = ["Server", "Connection", "ReplyError"]
