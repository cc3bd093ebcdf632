"""fakekey: an in-memory server that speaks Valkey's protocol, for tests and local work.

    from fakekey import Server
    with Server() as srv:          # a background thread, a free port
        srv.url                    # redis://127.0.0.1:PORT
        srv.freeze(); srv.advance(1000)

    r = fakekey.FakeRedis()        # fakeredis-style: a redis.Redis on its own fake server
"""

__version__ = "0.1.0"
VALKEY_VERSION = "9.1.2"
REDIS_VERSION = "7.2.4"

from fakekey import compiled as _compiled  # noqa: E402

# True when the hot modules run compiled (mypyc), False when fakekey runs as pure Python
COMPILED = _compiled.choose()

from fakekey.net.server import Server  # noqa: E402

# fakeredis-style clients (fakekey.compat.fakeredis), imported on first use: they need redis or valkey
_DROPIN = ("FakeServer", "FakeRedis", "FakeStrictRedis", "FakeAsyncRedis", "FakeValkey", "FakeAsyncValkey")


def __getattr__(name: str) -> object:
    if name in _DROPIN:
        from fakekey.compat import fakeredis as dropin
        return getattr(dropin, name)
    raise AttributeError(f"module 'fakekey' has no attribute {name!r}")


# the drop-in names stay out of __all__: `from fakekey import *` must not need redis
__all__ = ["Server", "__version__", "VALKEY_VERSION", "REDIS_VERSION", "COMPILED"]
