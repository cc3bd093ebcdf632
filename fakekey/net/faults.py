"""Faults on demand, the connection's side (docs/faults.md): what each FAKEKEY.FAULT action
does to a request, NETWORK DOWN / UP on the Server's listeners, and `Server.faults`, the
same from Python. The rules and their matching are core/faults.py's.

`Connection.run` asks `take_request` about each request while `state.fault_watch` is set.
A held reply (DELAY, LATENCY) or request (HANG) is the client's `blocked` marker, as a
streamed reply is: the connection's later requests wait unparsed, so replies keep their
order, and every other connection is served meanwhile (timers on the loop, never a sleep).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fakekey.core.faults import MAX_MS, Faults, Rule, bounded_int, parse_rule
from fakekey.resp.replies import NO_REPLY, ReplyError

if TYPE_CHECKING:
    from fakekey.core.client import Client
    from fakekey.net.server import Connection, Server

log = logging.getLogger("fakekey.net.server")

# take_request's answers to Connection.run
NOT_TAKEN = 0  # run the request as usual
NEXT = 1  # answered (or silenced): go on with the next request
STOP = 2  # held, or the connection closes: parse nothing more now


def take_request(connection: Connection, client: Client, argv: list[bytes], out: list[bytes]) -> int:
    """Apply the fault that hits this request, if any. `out`: the batch's replies so far,
    which go out before this request's (or before the connection closes)."""
    faults = connection.state.faults
    hit = faults.hit(client, argv)
    if hit is None:
        return NOT_TAKEN
    action = hit.action
    if action == "DROP":  # what came before is answered, then the connection closes
        client.close_after_reply = True
        return STOP
    if action == "HANG":
        assert hit.rule is not None
        HungRequest(connection, client, argv).start(faults, hit.rule.name)
        return STOP
    if action == "ERROR":  # refused before it runs, as Valkey refuses (a MULTI is doomed)
        error = ReplyError(hit.value)
        reply = connection.state._reject(client, error, argv[0].lower() == b"exec")
    else:
        reply = connection.state.call(client, argv)
        if client.blocked is not None:  # it blocked (BLPOP...): its reply comes later, as usual
            return STOP
    data = _encoded(client, reply)
    if action in ("DROP-AFTER", "PARTIAL", "NOREPLY"):
        client.deferred_pushes = []  # what the command sent itself (SUBSCRIBE's) goes too
        if action == "NOREPLY":
            return NEXT
        if action == "PARTIAL":
            out.append(data[:hit.value])
        client.close_after_reply = True  # DROP-AFTER: it ran; the client never learns it
        return STOP
    if hit.delay_ms and not (client.close_after_reply or client.killed):  # QUIT: no delay
        DelayedReply(connection, client, data).start(hit.delay_ms)
        return STOP
    out.append(data)
    if client.deferred_pushes:
        connection.flush_deferred_pushes(client)
    return NEXT


def _encoded(client: Client, reply: Any) -> bytes:
    """The reply as the client would get it (nothing under CLIENT REPLY OFF / SKIP)."""
    if reply is NO_REPLY:
        return b""
    if client.reply_mode != "on":
        if client.reply_mode == "skip":
            client.reply_mode = "on"
        return b""
    return client.encoder.encode(reply)


class DelayedReply:
    """DELAY / LATENCY: the command ran; its reply waits `ms` on the wall clock (a delay is
    about the client's timeouts, not the server's clock). The `blocked` marker: nothing wakes
    it, CLIENT UNBLOCK does not end it, CLIENT LIST shows no `b`."""

    active = False
    holds_output = True  # the client's pub/sub messages wait behind the reply

    def __init__(self, connection: Connection, client: Client, data: bytes) -> None:
        self.connection = connection
        self.client = client
        self.data = data

    def start(self, ms: int) -> None:
        self.client.blocked = self
        self.connection.loop.call_later(ms / 1000, self.release)

    def release(self) -> None:
        connection, client = self.connection, self.client
        if connection.closing or client.blocked is not self:
            return  # the client went away meanwhile
        client.blocked = None
        if self.data:
            connection.write(self.data)
        connection.resume()  # what it pipelined meanwhile, after the reply
        if client.deferred_pushes and client.blocked is None:
            connection.flush_deferred_pushes(client)


class HungRequest:
    """HANG: the request waits, unrun, until its rule is deleted (DEL, RESET; after TIMES
    used the rule up, DEL of its name still releases it), then runs as if just sent. A
    client that disconnects meanwhile takes it away unrun."""

    active = False
    holds_output = True

    def __init__(self, connection: Connection, client: Client, argv: list[bytes]) -> None:
        self.connection = connection
        self.client = client
        self.argv = argv

    def start(self, faults: Faults, rule: str) -> None:
        self.client.parser.put_back(self.argv)  # parsed again once released
        self.client.blocked = self
        faults.hold(rule, self)

    def release(self) -> None:
        """Called from a command (FAKEKEY.FAULT DEL): the request runs on the next loop turn,
        not inside that command."""
        if self.client.blocked is self and not self.connection.closing:
            self.client.blocked = None
            self.connection.loop.call_soon(self.connection.resume)


class ServerNetwork:
    """NETWORK DOWN / UP on a Server: its listeners closed (connections refused) and every
    connection dropped; up again on the same port, by UP or after the ms given."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.is_down = False
        self._up_later: asyncio.Task[None] | None = None

    def down(self, ms: int) -> None:
        """On the loop. The client whose command this is gets its reply, then is dropped."""
        server = self.server
        self._cancel()
        if not self.is_down:
            server._rebind("", 0)  # no address: every listener closes
            self.is_down = True
        current = server.state.current_client
        for client in list(server.state.clients.values()):
            connection = client.connection
            if connection is None:
                continue
            if client is current:
                client.close_after_reply = True
            else:
                connection.abort()
        loop = server._loop
        assert loop is not None
        # a connection accepted before the listeners closed is made (connection_made) at
        # the loop's next turn, too late for the sweep above: dropped then
        loop.call_soon(self._drop_made_since, set(server.state.clients))
        if ms:
            # a task of the server's: stopping the server cancels it
            self._up_later = loop.create_task(self._up_after(ms))
            server._tasks.append(self._up_later)

    def _drop_made_since(self, known: set[int]) -> None:
        if self.is_down:
            for client_id, client in list(self.server.state.clients.items()):
                if client_id not in known and client.connection is not None:
                    client.connection.abort()

    async def _up_after(self, ms: int) -> None:
        await asyncio.sleep(ms / 1000)
        self._up_later = None
        if not self.up():
            log.warning("fakekey: could not listen again on port %d after NETWORK DOWN", self.server.port)

    def up(self) -> bool:
        """Listen again on the same port; False when it cannot be bound (taken meanwhile)."""
        self._cancel()
        if not self.is_down:
            return True
        server = self.server
        if not server._rebind(server.state.config["bind"], server.port):
            return False
        self.is_down = False
        return True

    def _cancel(self) -> None:
        task, self._up_later = self._up_later, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(ValueError):
                self.server._tasks.remove(task)


# --- from Python: Server.faults ----------------------------------------------------------------


class Fault:
    """A rule added from Python: `fired` and `seen` counts, `remove()`; as a context manager,
    the rule is removed on the way out (and the requests it holds run)."""

    def __init__(self, faults: ServerFaults, rule: Rule) -> None:
        self._faults = faults
        self.rule = rule
        self.name = rule.name

    @property
    def fired(self) -> int:
        return self.rule.fired

    @property
    def seen(self) -> int:
        return self.rule.seen

    def remove(self) -> bool:
        return self._faults.delete(self.name)

    def __enter__(self) -> Fault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def __repr__(self) -> str:
        return f"<Fault {self.name} {self.rule.action} fired={self.fired}>"


class ServerFaults:
    """`server.faults`: FAKEKEY.FAULT from Python, run on the server's loop. Options are
    FAKEKEY.FAULT ADD's as keyword arguments (`client_name=` for NAME); bad ones raise
    ValueError with the server's message, and add nothing."""

    def __init__(self, server: Server) -> None:
        self._server = server
        self._table = server.state.faults
        self._table.network = self._network = ServerNetwork(server)
        self._count = 0  # for the names of rules added without one

    def add(self, action: str, value: Any = None, *, name: str | None = None, match: str | None = None,
            client: int | None = None, client_name: str | None = None, user: str | None = None,
            db: int | None = None, after: int | None = None, times: int | None = None,
            probability: float | None = None) -> Fault:
        """`add("error", "LOADING ...", match="get", times=2)`: a rule, as FAKEKEY.FAULT ADD."""
        if name is None:  # the next unused py-N
            while name is None or name in self._table.rules:
                self._count += 1
                name = f"py-{self._count}"
        args: list[Any] = [name, "ACTION", action] + ([] if value is None else [value])
        for option, given in (("MATCH", match), ("CLIENT", client), ("NAME", client_name),
                              ("USER", user), ("DB", db), ("AFTER", after), ("TIMES", times),
                              ("PROBABILITY", probability)):
            if given is not None:
                args += [option, given]
        rule: Rule = self._run(self._add, [_arg(a) for a in args])
        return Fault(self, rule)

    def _add(self, args: list[bytes]) -> Rule:
        rule = parse_rule(self._server.state, args)
        self._table.add(rule)
        return rule

    # one per action: the command glob first
    def error(self, match: str, text: str, **options: Any) -> Fault:
        return self.add("ERROR", text, match=match, **options)

    def delay(self, match: str, ms: int, **options: Any) -> Fault:
        return self.add("DELAY", ms, match=match, **options)

    def drop(self, match: str = "*", **options: Any) -> Fault:
        return self.add("DROP", match=match, **options)

    def drop_after(self, match: str = "*", **options: Any) -> Fault:
        return self.add("DROP-AFTER", match=match, **options)

    def partial(self, match: str, nbytes: int, **options: Any) -> Fault:
        return self.add("PARTIAL", nbytes, match=match, **options)

    def hang(self, match: str = "*", **options: Any) -> Fault:
        return self.add("HANG", match=match, **options)

    def noreply(self, match: str = "*", **options: Any) -> Fault:
        return self.add("NOREPLY", match=match, **options)

    def delete(self, name: str) -> bool:
        found: bool = self._run(self._table.delete, name)
        return found

    def reset(self) -> None:
        """Every rule gone (held requests run), LATENCY 0, the network up, the default seed."""
        self._run(self._table.reset)

    def seed(self, seed: int) -> None:
        self._run(self._table.set_seed, seed)

    def latency(self, ms: int) -> None:
        self._run(self._table.set_latency, self._ms(ms, "LATENCY", 0))

    def rules(self) -> list[dict[str, Any]]:
        """FAKEKEY.FAULT LIST, as dicts of str keys and values (or ints, or None)."""
        reports = self._run(lambda: [rule.report() for rule in self._table.rules.values()])
        return [{k.decode(): v.decode("utf-8", "replace") if isinstance(v, bytes) else v
                 for k, v in report.items()} for report in reports]

    def network_down(self, ms: int | None = None) -> None:
        """Close the listeners and drop every connection; up again after `ms` (wall clock)
        or at `network_up()`."""
        self._run(self._network.down, 0 if ms is None else self._ms(ms, "NETWORK DOWN", 1))

    def network_up(self) -> None:
        if not self._run(self._network.up):
            raise OSError(f"port {self._server.port} was taken while the network was down")

    @property
    def network_is_down(self) -> bool:
        return self._network.is_down

    @contextlib.contextmanager
    def network_outage(self, ms: int | None = None) -> Iterator[None]:
        """`with srv.faults.network_outage():` down inside, up after."""
        self.network_down(ms)
        try:
            yield
        finally:
            self.network_up()

    def _ms(self, ms: int, what: str, low: int) -> int:
        try:
            return bounded_int(_arg(ms), what, low, MAX_MS)
        except ReplyError as err:
            raise ValueError(err.message.decode()) from None

    def _run(self, fn: Any, *args: Any) -> Any:
        try:
            return self._server._on_loop(fn, *args)
        except ReplyError as err:
            raise ValueError(err.message.decode()) from None


def _arg(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


__all__ = ["DelayedReply", "Fault", "HungRequest", "ServerFaults", "ServerNetwork", "take_request"]
