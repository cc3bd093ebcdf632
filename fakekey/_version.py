"""The versions fakekey reports: its own, and the Valkey (and Redis) it emulates."""

__version__ = "0.1.0"
VALKEY_VERSION = "9.1.2"
REDIS_VERSION = "7.2.4"  # what Lua's redis.REDIS_VERSION and INFO's redis_version say
