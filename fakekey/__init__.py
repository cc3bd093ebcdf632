"""fakekey: an in-memory server that speaks Valkey's protocol, for tests and local work.

    from fakekey import Server
    with Server() as srv:          # a background thread, a free port
        srv.url                    # redis://127.0.0.1:PORT
        srv.freeze(); srv.advance(1000)
"""

__version__ = "0.1.0"
VALKEY_VERSION = "9.1.2"
REDIS_VERSION = "7.2.4"

from fakekey.server import Server  # noqa: E402

__all__ = ["Server", "__version__", "VALKEY_VERSION", "REDIS_VERSION"]
