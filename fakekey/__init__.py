"""fakekey: an in-memory server that speaks Valkey's protocol, for tests and local work.

    from fakekey import Server
    with Server() as srv:          # a background thread, a free port
        srv.url                    # redis://127.0.0.1:PORT
        srv.freeze(); srv.advance(1000)

    r = fakekey.FakeRedis()        # fakeredis-style: a redis.Redis on its own fake server

The names below are loaded on first use, so that importing one of fakekey's low modules
(`fakekey.codecs.glob`, say) does not load the server.
"""

from typing import TYPE_CHECKING

from fakekey import compiled as _compiled
from fakekey._version import REDIS_VERSION, VALKEY_VERSION, __version__

# True when the hot modules run compiled (mypyc), False when fakekey runs as pure Python.
# Decided before any compiled module is imported.
COMPILED = _compiled.choose()

if TYPE_CHECKING:
    from fakekey.net.cluster import Cluster
    from fakekey.net.server import Server

# fakeredis-style clients (fakekey.compat.fakeredis): they need redis or valkey
# (fakeredis 2.41's public names; fakekey.aioredis has its FakeRedis and FakeConnection)
_DROPIN = ("FakeServer", "TcpFakeServer", "FakeRedis", "FakeStrictRedis", "FakeAsyncRedis", "FakeValkey",
           "FakeStrictValkey", "FakeAsyncValkey", "FakeConnection", "FakeAsyncConnection")


def __getattr__(name: str) -> object:
    if name == "Server":
        from fakekey.net.server import Server

        return Server
    if name == "Cluster":
        from fakekey.net.cluster import Cluster

        return Cluster
    if name in _DROPIN:
        from fakekey.compat import fakeredis

        return getattr(fakeredis, name)
    raise AttributeError(f"module 'fakekey' has no attribute {name!r}")


# the drop-in names stay out of __all__: `from fakekey import *` must not need redis
__all__ = ["Server", "Cluster", "__version__", "VALKEY_VERSION", "REDIS_VERSION", "COMPILED"]
