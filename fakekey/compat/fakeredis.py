"""fakeredis-style clients: the real `redis` and `valkey` client classes, bound to a private
in-process fakekey server.

    r = fakekey.FakeRedis()                    # a redis.Redis on its own new server
    server = fakekey.FakeServer()              # or share one server between clients
    a = fakekey.FakeRedis(server=server)
    b = fakekey.FakeAsyncRedis(server=server, decode_responses=True)
    server.connected = False                   # clients now get ConnectionError

The client classes are built on first use, so `import fakekey` needs neither `redis` nor
`valkey`; `FakeValkey` and `FakeAsyncValkey` need the `valkey` package.
"""

from __future__ import annotations

import weakref
from typing import Any

from fakekey.net.server import Server

SERVER_TYPES = ("redis", "valkey")
# redis.Redis's leading positional parameters (the rest are keyword-only in practice)
POSITIONAL = ("host", "port", "db", "password")


class FakeServer:
    """A fakekey server in a background thread, for Fake* clients to share (fakeredis's
    `FakeServer`). It stops when closed or when nothing refers to it any more.

    `version` and `server_type` are accepted for fakeredis's signature; fakekey always
    answers as Valkey 9.1.2. `config` and keyword settings take valkey's setting names."""

    def __init__(self, version: Any = None, server_type: str = "valkey",
                 config: dict[Any, Any] | None = None, **settings: Any) -> None:
        if server_type not in SERVER_TYPES:
            raise ValueError(f"fakekey emulates valkey (server_type 'valkey' or 'redis'), not {server_type!r}")
        self.version = version
        self.server_type = server_type
        self.server = Server(config=_text_config(config), **settings).start()
        self._finalizer = weakref.finalize(self, self.server.stop)

    @property
    def host(self) -> str:
        return self.server.host

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def connected(self) -> bool:
        """False: the network goes down (`Server.faults.network_down()`: the server stops
        listening and drops its clients, so they get ConnectionError); True again: it
        listens on the same port."""
        return not self.server.faults.network_is_down

    @connected.setter
    def connected(self, value: bool) -> None:
        if value:
            self.server.faults.network_up()
        else:
            self.server.faults.network_down()

    def close(self) -> None:
        """Stop the server now (otherwise it stops when garbage-collected or at exit)."""
        self._finalizer()


def _text_config(config: dict[Any, Any] | None) -> dict[str, str] | None:
    """fakeredis passes config as {bytes: bytes}; fakekey's Server takes text."""
    if config is None:
        return None
    return {_text(name): _text(value) for name, value in config.items()}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class FakeClientMixin:
    """The constructor of every Fake* client: fakeredis's options (`server`, `version`,
    `server_type`, `connected`), then the real client's own, with host and port replaced
    by the fake server's."""

    fake_server: FakeServer
    _no_retry: Any = None  # a Retry that never retries, per client library
    _parse_url: Any = None

    def __init__(self, *args: Any, server: FakeServer | None = None, version: Any = None,
                 server_type: str = "valkey", connected: bool = True, **kwargs: Any) -> None:
        if len(args) > len(POSITIONAL):
            raise TypeError(f"{type(self).__name__} takes at most {len(POSITIONAL)} positional "
                            f"arguments ({', '.join(POSITIONAL)})")
        kwargs.update(zip(POSITIONAL, args))
        if kwargs.pop("connection_pool", None) is not None:
            raise TypeError(f"{type(self).__name__} makes its own connection pool to its fake server")
        for unused in ("host", "port", "unix_socket_path"):
            kwargs.pop(unused, None)
        self.fake_server = server or FakeServer(version=version, server_type=server_type)
        # the server is in-process: a connection error is one the test asked for, so
        # it surfaces at once instead of after the client's reconnect back-off
        kwargs.setdefault("retry", self._no_retry())
        super().__init__(host=self.fake_server.host, port=self.fake_server.port, **kwargs)  # type: ignore[call-arg]
        if not connected:
            self.fake_server.connected = False

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        """The URL's options (db, password, decode_responses, ...) on a fake server."""
        options = {k: v for k, v in cls._parse_url(url).items() if k not in ("host", "port")}
        return cls(**{**options, **kwargs})


def _redis_classes() -> dict[str, type]:
    import redis
    import redis.asyncio
    from redis.asyncio.retry import Retry as AsyncRetry
    from redis.backoff import NoBackoff
    from redis.connection import parse_url
    from redis.retry import Retry

    return {
        "FakeRedis": _client_class("FakeRedis", redis.Redis, lambda: Retry(NoBackoff(), 0), parse_url),
        "FakeAsyncRedis": _client_class("FakeAsyncRedis", redis.asyncio.Redis,
                                        lambda: AsyncRetry(NoBackoff(), 0), parse_url),
    }


def _valkey_classes() -> dict[str, type]:
    try:
        import valkey
        import valkey.asyncio
        from valkey.asyncio.retry import Retry as AsyncRetry
        from valkey.backoff import NoBackoff
        from valkey.connection import parse_url
        from valkey.retry import Retry
    except ImportError as err:
        raise ImportError("FakeValkey and FakeAsyncValkey need the valkey package (pip install valkey)") from err
    return {
        "FakeValkey": _client_class("FakeValkey", valkey.Valkey, lambda: Retry(NoBackoff(), 0), parse_url),
        "FakeAsyncValkey": _client_class("FakeAsyncValkey", valkey.asyncio.Valkey,
                                         lambda: AsyncRetry(NoBackoff(), 0), parse_url),
    }


def _client_class(name: str, base: type, no_retry: Any, parse_url: Any) -> type:
    namespace = {
        "__module__": __name__,
        "__doc__": f"A `{base.__module__}.{base.__qualname__}` bound to a fake server "
                   f"(a new one, or `server=`).",
        "_no_retry": staticmethod(no_retry),
        "_parse_url": staticmethod(parse_url),
    }
    return type(name, (FakeClientMixin, base), namespace)


_BUILDERS = {"FakeRedis": _redis_classes, "FakeAsyncRedis": _redis_classes,
             "FakeValkey": _valkey_classes, "FakeAsyncValkey": _valkey_classes}
_ALIASES = {"FakeStrictRedis": "FakeRedis"}


def __getattr__(name: str) -> type:
    """Build the client classes of one library on first use."""
    name = _ALIASES.get(name, name)
    if name in globals():  # an alias of a class already built
        return globals()[name]
    builder = _BUILDERS.get(name)
    if builder is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    classes = builder()
    globals().update(classes)
    return classes[name]


CLIENT_NAMES = ("FakeRedis", "FakeStrictRedis", "FakeAsyncRedis", "FakeValkey", "FakeAsyncValkey")
__all__ = ["FakeServer", *CLIENT_NAMES]
