"""A listening socket as Valkey opens one: TCP (the clients' port, the cluster bus port)
and the clients' Unix socket (`unixsocket`)."""

from __future__ import annotations

import contextlib
import grp
import os
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


class UnixSocketFailure(Exception):
    """The Unix socket could not be opened; the text is Valkey's (its neterr), which it
    logs after "Failed opening Unix socket: " before it exits."""


SUN_PATH_SIZE = 108  # sizeof(sockaddr_un.sun_path) on Linux, its last byte the NUL


def listen_on_unix(path: str, perm: int, group: str, backlog: int = 511) -> socket.socket:
    """A non-blocking socket listening at `path`, as Valkey's connUnixListen: whatever
    is at the path goes first (a regular file too), then bind; `perm` (when not 0) and
    `group` (when set) are applied to the file before listen. Raises UnixSocketFailure."""
    check_unix_path(path)
    with contextlib.suppress(OSError):
        os.unlink(path)  # a stale socket of an earlier run (Valkey does not care if this fails)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        _bind_unix(sock, path, perm, group)
        try:
            sock.listen(backlog)
        except OSError as err:
            raise UnixSocketFailure(f"listen: {err.strerror}") from None
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def check_unix_path(path: str) -> None:
    """Valkey's refusal of a path longer than a socket address holds (as written: a
    relative one is measured before it is resolved)."""
    size = len(os.fsencode(path))
    if size > SUN_PATH_SIZE - 1:
        raise UnixSocketFailure(f"unix socket path too long ({size}), must be under {SUN_PATH_SIZE}")


def _bind_unix(sock: socket.socket, path: str, perm: int, group: str) -> None:
    try:
        sock.bind(path)
    except OSError as err:
        raise UnixSocketFailure(f"bind: {err.strerror}") from None
    if perm:
        with contextlib.suppress(OSError):  # Valkey does not look at chmod's result
            os.chmod(path, perm)
    if group:
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:  # getgrnam found no such group: errno is 0, strerror "Success"
            raise UnixSocketFailure(f"getgrnam error for group '{group}': {os.strerror(0)}") from None
        try:
            os.chown(path, -1, gid)  # the owner stays
        except OSError as err:
            raise UnixSocketFailure(f"chown error for group '{group}': {err.strerror}") from None
