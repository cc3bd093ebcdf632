"""fakeredis-style clients: the real `redis` and `valkey` client classes, bound to an
in-process fakekey server.

    r = fakekey.FakeRedis()                    # a redis.Redis on its own new server
    a = fakekey.FakeRedis(host="cache", port=6379)   # clients made for one address
    b = fakekey.FakeRedis.from_url("redis://cache:6379/1")  # share one server (fakeredis's rule)
    server = fakekey.FakeServer()              # or share one server explicitly
    c = fakekey.FakeAsyncRedis(server=server, decode_responses=True)
    server.connected = False                   # clients now get ConnectionError

The client classes are built on first use, so `import fakekey` needs neither `redis` nor
`valkey`; `FakeValkey`, `FakeStrictValkey` and `FakeAsyncValkey` need the `valkey` package.
docs/fakeredis.md has the migration guide.
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from typing import Any

from fakekey.core import version_gate
from fakekey.core.version_gate import VersionGate
from fakekey.net.server import Server

SERVER_TYPES = version_gate.SERVER_TYPES
# redis.Redis's leading positional parameters (the rest are keyword-only in practice)
POSITIONAL = ("host", "port", "db", "password")
# the Lua libraries fakekey's Lua has built in (fakekey/scripting/libs), as Valkey's has
BUILTIN_LUA_MODULES = frozenset({"bit", "cjson", "cmsgpack", "struct"})
# what a client names when it names only part of an address (redis-py's defaults)
DEFAULT_HOST, DEFAULT_PORT = "localhost", 6379
# fakeredis's default version for server_type="redis" given alone, and TcpFakeServer's
DEFAULT_REDIS_VERSION = (8, 0)

# Servers shared by address, as fakeredis shares them: clients made for the same address
# (and the same version and server type) reach the same server for the life of the
# process. This is per process on purpose, it is fakeredis's rule; a server object itself
# shares nothing with other servers.
_shared_lock = threading.Lock()
_shared: dict[tuple[Any, ...], FakeServer] = {}
# every live FakeServer, to find the one a plain connection pool's address points at
_live: weakref.WeakSet[FakeServer] = weakref.WeakSet()


def gate_of(version: Any, server_type: str | None) -> VersionGate | None:
    """The older server fakeredis's `version=` and `server_type=` ask for, None for
    fakekey's own (Valkey 9.1.2, the default). A version alone is a Redis version, as
    fakeredis reads it; "redis" alone is Redis 8.0."""
    if server_type is not None and server_type not in SERVER_TYPES:
        raise ValueError(f"fakekey emulates valkey (server_type 'valkey' or 'redis'), not {server_type!r}")
    if version is None:
        if server_type != "redis":
            return None
        version = DEFAULT_REDIS_VERSION
    return VersionGate(server_type or "redis", version_gate.parse_version(version))


def check_lua_modules(lua_modules: Any) -> None:
    """fakeredis's `lua_modules=`: the modules to load into Lua. fakekey's Lua has
    Valkey's libraries built in and loads nothing else."""
    for module in lua_modules or ():
        name = os.path.splitext(os.path.basename(os.fspath(module)))[0]
        if name not in BUILTIN_LUA_MODULES:
            raise ValueError(f"lua_modules: fakekey cannot load the Lua module {str(module)!r}; its Lua "
                             f"has {', '.join(sorted(BUILTIN_LUA_MODULES))} built in and loads no other")


class FakeServer:
    """A fakekey server in a background thread, for Fake* clients to share (fakeredis's
    `FakeServer`). It stops when closed or when nothing refers to it any more.

    `version` and `server_type` as fakeredis takes them: the server then answers as that
    Redis or Valkey (what came later is unknown, INFO and HELLO report it); without them
    it is Valkey 9.1.2. `config` and keyword settings take valkey's setting names. The
    emulated Redis Stack modules (BF.*, JSON.*...) are on, as fakeredis has them."""

    def __init__(self, version: Any = None, server_type: str | None = None,
                 config: dict[Any, Any] | None = None, lua_modules: Any = None, **settings: Any) -> None:
        gate = gate_of(version, server_type)
        check_lua_modules(lua_modules)
        self.gate = gate
        self.version = gate.version if gate is not None else None
        self.server_type = gate.server_type if gate is not None else "valkey"
        settings.setdefault("enable_stack_modules", "yes")
        server = Server(config=_text_config(config), **settings)
        if gate is not None:
            version_gate.apply(server.state, gate)
        self.server = server.start(wait=False)  # its clients' first command waits for the start
        self._finalizer = weakref.finalize(self, self.server.stop)
        _live.add(self)

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
        with _shared_lock:
            for key in [k for k, s in _shared.items() if s is self]:
                del _shared[key]
        self._finalizer()


def shared_server(address: tuple[Any, ...], version: Any = None, server_type: str | None = None,
                  lua_modules: Any = None) -> FakeServer:
    """The server of everything made for `address` with this version and type, made by
    the first that asks."""
    gate = gate_of(version, server_type)
    check_lua_modules(lua_modules)
    key = (address, gate)
    with _shared_lock:
        server = _shared.get(key)
        if server is None:
            server = _shared[key] = FakeServer(version=version, server_type=server_type)
        return server


def address_of(options: dict[str, Any]) -> tuple[Any, ...] | None:
    """The address a client's or connection's options name, None when they name none."""
    path = options.get("unix_socket_path") or options.get("path")
    if path:
        return ("unix", path)
    host, port = options.get("host"), options.get("port")
    if host is None and port is None:
        return None
    return ("tcp", host or DEFAULT_HOST, int(port or DEFAULT_PORT))


def _server_listening_at(host: Any, port: Any) -> FakeServer | None:
    """The live FakeServer a plain connection to host:port reaches, if one does."""
    for server in list(_live):
        if server.port == port and host in (server.host, "localhost", "127.0.0.1"):
            return server
    return None


def _text_config(config: dict[Any, Any] | None) -> dict[str, str] | None:
    """fakeredis passes config as {bytes: bytes}; fakekey's Server takes text."""
    if config is None:
        return None
    return {_text(name): _text(value) for name, value in config.items()}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


_FAKE_OPTIONS = ("server", "version", "server_type", "lua_modules")


class FakeConnectionMixin:
    """A redis-py connection to a fake server, for `connection_class=` (django-redis,
    Celery, rq, a ConnectionPool): the pool's host and port (or `server=`) pick the fake
    server as a client's would, then it connects there."""

    fake_server: FakeServer

    def __init__(self, *args: Any, server: FakeServer | None = None, version: Any = None,
                 server_type: str | None = None, lua_modules: Any = None, **kwargs: Any) -> None:
        if server is None:
            address = address_of(kwargs) or ("tcp", DEFAULT_HOST, DEFAULT_PORT)
            server = shared_server(address, version, server_type, lua_modules)
        self.fake_server = server
        kwargs.pop("path", None)
        kwargs.update(host=server.host, port=server.port)
        super().__init__(*args, **kwargs)


class FakeClientMixin:
    """The constructor of every Fake* client: fakeredis's options (`server`, `version`,
    `server_type`, `connected`, `lua_modules`), then the real client's own. The server:
    `server=`; else the one of the pool's connections (`connection_pool=`); else the one
    shared by every client made for the same address (host and port, or a URL); else,
    naming no address, a private new one."""

    fake_server: FakeServer | None
    _no_retry: Any = None  # a Retry that never retries, per client library
    _no_maint: Any = None  # redis-py's maintenance notifications config, off (None: no such thing)
    _parse_url: Any = None
    # the library's plain connection class, and its fake one (which takes `server=`)
    _plain_connection: Any = None
    _fake_connection: Any = None

    def __init__(self, *args: Any, server: FakeServer | None = None, version: Any = None,
                 server_type: str | None = None, connected: bool = True, lua_modules: Any = None,
                 **kwargs: Any) -> None:
        if len(args) > len(POSITIONAL):
            raise TypeError(f"{type(self).__name__} takes at most {len(POSITIONAL)} positional "
                            f"arguments ({', '.join(POSITIONAL)})")
        kwargs.update(zip(POSITIONAL, args))
        pool = kwargs.get("connection_pool")
        if pool is not None:
            check_lua_modules(lua_modules)
            self.fake_server = server or _pool_server(pool)
            super().__init__(**kwargs)  # type: ignore[call-arg]
        else:
            self.fake_server = server = server or _client_server(kwargs, version, server_type, lua_modules)
            for unused in ("host", "port", "unix_socket_path", "path"):
                kwargs.pop(unused, None)
            # the server is in-process: a connection error is one the test asked for, so
            # it surfaces at once instead of after the client's reconnect back-off
            kwargs.setdefault("retry", self._no_retry())
            if self._no_maint is not None:  # nothing to be told of: no handshake for it either
                kwargs.setdefault("maint_notifications_config", self._no_maint())
            super().__init__(host=server.host, port=server.port, **kwargs)  # type: ignore[call-arg]
            self._name_server_in_pool(server)
        if not connected and self.fake_server is not None:
            self.fake_server.connected = False

    def _name_server_in_pool(self, server: FakeServer) -> None:
        """fakeredis code reaches a client's server as `connection_pool.connection_kwargs
        ["server"]`: the pool this client made names it, and makes its connections with
        the library's fake connection class, which takes it (an SSL pool is left as is)."""
        pool = self.connection_pool  # type: ignore[attr-defined]
        if self._fake_connection is not None and pool.connection_class is self._plain_connection:
            pool.connection_class = self._fake_connection
            pool.connection_kwargs["server"] = server

    @classmethod
    def from_url(cls, url: str, **kwargs: Any) -> Any:
        """The URL's address picks the shared server; its options (db, password,
        decode_responses, ...) are the client's."""
        options = dict(cls._parse_url(url))
        options.pop("connection_class", None)  # rediss:// and unix:// name their own
        return cls(**{**options, **kwargs})


def _client_server(options: dict[str, Any], version: Any, server_type: str | None,
                   lua_modules: Any) -> FakeServer:
    address = address_of(options)
    if address is None:
        return FakeServer(version=version, server_type=server_type, lua_modules=lua_modules)
    return shared_server(address, version, server_type, lua_modules)


def _pool_server(pool: Any) -> FakeServer | None:
    """The fake server a connection pool's connections reach: FakeConnections' own, or
    the FakeServer listening at a plain pool's address (None: not a fake one)."""
    options = dict(pool.connection_kwargs)
    if isinstance(pool.connection_class, type) and issubclass(pool.connection_class, FakeConnectionMixin):
        fake = {name: options.pop(name, None) for name in _FAKE_OPTIONS}
        if fake["server"] is not None:
            return fake["server"]  # type: ignore[no-any-return]
        address = address_of(options) or ("tcp", DEFAULT_HOST, DEFAULT_PORT)
        return shared_server(address, fake["version"], fake["server_type"], fake["lua_modules"])
    return _server_listening_at(options.get("host", DEFAULT_HOST), options.get("port", DEFAULT_PORT))


class TcpFakeServer:
    """fakeredis's `TcpFakeServer`: a fake server on a TCP address any client can reach.

    fakekey's servers always listen, so this one serves from the moment it is made;
    `serve_forever()` only waits for `shutdown()` (so fakeredis's thread pattern works),
    and `server_close()` stops the server. Fake* clients made for its address reach it."""

    def __init__(self, server_address: tuple[str, int], server_type: str = "redis",
                 server_version: Any = DEFAULT_REDIS_VERSION, RequestHandlerClass: Any = None,  # noqa: N803 - socketserver's name
                 bind_and_activate: bool = True, **settings: Any) -> None:
        host, port = server_address
        self.fake_server = FakeServer(version=server_version, server_type=server_type,
                                      host=host, port=port, **settings)
        self.server_address = (host, self.fake_server.port)
        self._shutdown = threading.Event()
        gate = self.fake_server.gate
        with _shared_lock:
            _shared.setdefault((("tcp", host, self.fake_server.port), gate), self.fake_server)

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Wait until `shutdown()` (the server serves meanwhile, as it did before)."""
        self._shutdown.wait()

    def shutdown(self) -> None:
        self._shutdown.set()

    def server_close(self) -> None:
        self._shutdown.set()
        self.fake_server.close()

    def __enter__(self) -> TcpFakeServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server_close()


def _redis_classes() -> dict[str, type]:
    import redis
    import redis.asyncio
    import redis.asyncio.connection
    import redis.connection
    from redis.asyncio.retry import Retry as AsyncRetry
    from redis.backoff import NoBackoff
    from redis.connection import parse_url
    from redis.retry import Retry

    connection = _connection_class("FakeConnection", redis.connection.Connection)
    async_connection = _connection_class("FakeAsyncConnection", redis.asyncio.connection.Connection)
    no_maint = _no_maint_maker()
    return {
        "FakeRedis": _client_class("FakeRedis", redis.Redis, _no_retry_maker(Retry, NoBackoff), parse_url,
                                   connection, no_maint),
        "FakeAsyncRedis": _client_class("FakeAsyncRedis", redis.asyncio.Redis,
                                        _no_retry_maker(AsyncRetry, NoBackoff), parse_url, async_connection,
                                        no_maint),
        "FakeConnection": connection,
        "FakeAsyncConnection": async_connection,
    }


def _valkey_classes() -> dict[str, type]:
    try:
        import valkey
        import valkey.asyncio
        import valkey.asyncio.connection
        import valkey.connection
        from valkey.asyncio.retry import Retry as AsyncRetry
        from valkey.backoff import NoBackoff
        from valkey.connection import parse_url
        from valkey.retry import Retry
    except ImportError as err:
        raise ImportError("FakeValkey, FakeStrictValkey and FakeAsyncValkey need the valkey package "
                          "(pip install valkey)") from err
    return {
        "FakeValkey": _client_class("FakeValkey", valkey.Valkey, _no_retry_maker(Retry, NoBackoff), parse_url,
                                    _connection_class("FakeValkeyConnection", valkey.connection.Connection)),
        "FakeAsyncValkey": _client_class("FakeAsyncValkey", valkey.asyncio.Valkey,
                                         _no_retry_maker(AsyncRetry, NoBackoff), parse_url,
                                         _connection_class("FakeAsyncValkeyConnection",
                                                           valkey.asyncio.connection.Connection)),
    }


def _no_retry_maker(retry: type, no_backoff: type) -> Any:
    """What makes the client library's Retry of no retry and no back-off, of a subclass
    whose deep copy is a shallow one: the library deep-copies a client's retry, and
    again each connection's (~19 µs each, pure Python, as much as the rest of making the
    client), and this one holds nothing a copy must not share (a stateless back-off, a
    count, a tuple of error types)."""
    cheap = type(retry.__name__, (retry,), {"__module__": __name__, "__deepcopy__": _shallow_copy})
    return lambda: cheap(no_backoff(), 0)


def _shallow_copy(self: Any, memo: Any) -> Any:
    return copy.copy(self)


def _no_maint_maker() -> Any:
    """What makes redis-py's maintenance notifications config of a client with them off
    (None: a redis-py without them). An in-process server is never moved for maintenance,
    and their handshake, a CLIENT MAINT_NOTIFICATIONS that Valkey refuses as fakekey does,
    would cost each new connection a command and an error reply (about a sixth of its
    first command, both sides: bench/instances.py)."""
    try:
        from redis.maint_notifications import MaintNotificationsConfig
    except ImportError:  # pragma: no cover - a redis-py before them
        return None
    return lambda: MaintNotificationsConfig(enabled=False)


def _client_class(name: str, base: type, no_retry: Any, parse_url: Any, fake_connection: type,
                  no_maint: Any = None) -> type:
    namespace = {
        "__module__": __name__,
        "__doc__": f"A `{base.__module__}.{base.__qualname__}` bound to a fake server "
                   f"(`server=`, the pool's, the one of its address, or a new one).",
        "_no_retry": staticmethod(no_retry),
        "_no_maint": None if no_maint is None else staticmethod(no_maint),
        "_parse_url": staticmethod(parse_url),
        "_plain_connection": fake_connection.__mro__[2],  # (fake, mixin, the library's)
        "_fake_connection": fake_connection,
    }
    return type(name, (FakeClientMixin, base), namespace)


def _connection_class(name: str, base: type) -> type:
    namespace = {
        "__module__": __name__,
        "__doc__": f"A `{base.__module__}.{base.__qualname__}` to a fake server, for `connection_class=`.",
    }
    return type(name, (FakeConnectionMixin, base), namespace)


_BUILDERS = {"FakeRedis": _redis_classes, "FakeAsyncRedis": _redis_classes,
             "FakeConnection": _redis_classes, "FakeAsyncConnection": _redis_classes,
             "FakeValkey": _valkey_classes, "FakeAsyncValkey": _valkey_classes}
_ALIASES = {"FakeStrictRedis": "FakeRedis", "FakeStrictValkey": "FakeValkey"}


def __getattr__(name: str) -> type:
    """Build the client classes of one library on first use."""
    name = _ALIASES.get(name, name)
    if name in globals():  # an alias of a class already built
        return globals()[name]  # type: ignore[no-any-return]
    builder = _BUILDERS.get(name)
    if builder is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _shared_lock:  # two threads' first use builds the classes once
        if name not in globals():
            globals().update(builder())
    return globals()[name]  # type: ignore[no-any-return]


CLIENT_NAMES = ("FakeRedis", "FakeStrictRedis", "FakeAsyncRedis", "FakeValkey", "FakeStrictValkey",
                "FakeAsyncValkey", "FakeConnection", "FakeAsyncConnection")
__all__ = ["FakeServer", "TcpFakeServer", *CLIENT_NAMES]
