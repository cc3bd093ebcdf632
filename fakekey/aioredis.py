"""fakeredis's `aioredis` names: `fakekey.aioredis.FakeRedis` is `fakekey.FakeAsyncRedis`
(a `redis.asyncio.Redis`) and `FakeConnection` is `fakekey.FakeAsyncConnection`."""

from __future__ import annotations

_NAMES = {"FakeRedis": "FakeAsyncRedis", "FakeConnection": "FakeAsyncConnection", "FakeServer": "FakeServer"}


def __getattr__(name: str) -> object:
    if name not in _NAMES:
        raise AttributeError(f"module 'fakekey.aioredis' has no attribute {name!r}")
    from fakekey.compat import fakeredis

    return getattr(fakeredis, _NAMES[name])


__all__ = list(_NAMES)
