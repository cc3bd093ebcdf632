"""extended-redis-compatibility yes: the server answers as Redis 7.2.4 where clients look
(HELLO's server and version, INFO's redis_mode line, LOLWUT's last words)."""

from __future__ import annotations

import pytest


@pytest.fixture
def compat(r2):
    r2.call("CONFIG", "SET", "extended-redis-compatibility", "yes")
    yield r2
    r2.call("CONFIG", "SET", "extended-redis-compatibility", "no")


def hello_fields(r2) -> dict[bytes, bytes]:
    items = r2.call("HELLO", "2")[1]
    return {items[i][1]: items[i + 1][1] for i in range(0, len(items), 2)}


def mode_lines(r2) -> list[str]:
    info = r2.call("INFO", "server")[1].decode()
    return [line for line in info.split("\r\n") if line.endswith("_mode:standalone")]


def test_on(compat):
    fields = hello_fields(compat)
    assert (fields[b"server"], fields[b"version"]) == (b"redis", b"7.2.4")
    assert mode_lines(compat) == ["redis_mode:standalone"]
    assert compat.call("LOLWUT")[1].endswith(b"Redis ver. 7.2.4\n")
    assert compat.call("LOLWUT", "VERSION", "7")[1] == b"Redis ver.7.2.4\n"


def test_off(r2):
    fields = hello_fields(r2)
    assert fields[b"server"] == b"valkey"
    assert mode_lines(r2) == ["server_mode:standalone"]
    assert r2.call("LOLWUT", "VERSION", "7")[1].startswith(b"Valkey ver.")
