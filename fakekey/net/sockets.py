"""A listening TCP socket as Valkey opens one (the clients' port, the cluster bus port)."""

from __future__ import annotations

import socket


def listen_on(host: str, port: int) -> socket.socket:
    """A non-blocking socket listening at host:port (an IPv6 one for that family only)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(511)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock
