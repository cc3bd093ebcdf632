"""The clients' Unix socket (`unixsocket`, `unixsocketperm`, `unixsocketgroup`), as
Valkey's unix listener: opened at start-up next to the TCP listeners (a failure stops the
start, logged as Valkey logs it), its file removed at shutdown. Its clients are local:
protected mode takes them, and they show Valkey's address and flag (`unix_client`)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from fakekey.core.client import Client
from fakekey.core.state import ServerState
from fakekey.net.sockets import UnixSocketFailure, check_unix_path, listen_on_unix

log = logging.getLogger("fakekey.net.server")


class UnixListener:
    """The one Unix socket of a server (none while `path` is empty)."""

    __slots__ = ("path", "sock", "server")

    def __init__(self) -> None:
        self.path = ""
        self.sock: Any = None  # the listening socket, until `serve` hands it to the loop
        self.server: asyncio.AbstractServer | None = None

    def open(self, path: str, perm: int, group: str, directory: str = ".") -> None:
        """Listen at `path` (a relative one in `directory`: Valkey's is in the `dir` it
        chdir()ed to, and fakekey does not chdir); raises UnixSocketFailure, logged with
        Valkey's line."""
        try:
            check_unix_path(path)
            path = os.path.join(directory, path)
            self.sock = listen_on_unix(path, perm, group)
        except UnixSocketFailure as err:
            log.warning("Failed opening Unix socket: %s", err)
            raise
        self.path = path

    async def serve(self, loop: asyncio.AbstractEventLoop, protocol: Callable[[], asyncio.Protocol]) -> None:
        if self.sock is not None and self.server is None:
            self.server = await loop.create_unix_server(protocol, sock=self.sock, backlog=511)

    def close(self) -> asyncio.AbstractServer | None:
        """Stop listening and remove the file, as Valkey at shutdown; returns the loop's
        server, for the caller to wait until it is closed."""
        server, sock, path = self.server, self.sock, self.path
        self.server = self.sock = None
        self.path = ""
        if server is not None:
            server.close()
        elif sock is not None:
            sock.close()
        if path:
            log.info("Removing the unix socket file.")
            try:
                os.unlink(path)
            except OSError as err:
                log.warning("Error removing the unix socket file: %s", err.strerror)
        return server


def unix_client(state: ServerState, connection: Any) -> Client:
    """A client of the Unix socket: Valkey names both its ends "PATH:0" with port 0,
    which its address format brackets for the colon ("[PATH:0]:0"), and flags it U."""
    address = f"[{state.config['unixsocket']}:0]:0"
    client = Client(state, connection, address, address)
    client.unix_socket = True
    return client


__all__ = ["UnixListener", "UnixSocketFailure", "unix_client"]
