"""Every setting fakekey has: its default, its parsing and validation, as CONFIG GET/SET
and the command line / config file see it. Texts follow Valkey's config.c."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LLONG_MAX = 2**63 - 1


class ConfigError(Exception):
    """A value a setting refuses; the text follows Valkey's."""


_MEMORY_RE = re.compile(r"(-?\d+)(b|k|kb|m|mb|g|gb)?\Z", re.I)
_MEMORY_UNITS = {
    None: 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
    "g": 1000**3, "gb": 1024**3,
}


def parse_memory(text: str) -> int:
    m = _MEMORY_RE.match(text)
    if not m:
        raise ConfigError("argument must be a memory value")
    return int(m.group(1)) * _MEMORY_UNITS[(m.group(2) or "").lower() or None]


@dataclass
class Setting:
    name: str
    kind: str  # int, memory, bool, str, enum, special
    default: Any
    low: int = 0
    high: int = LLONG_MAX
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    immutable: bool = False
    validate: Callable[[Any], Any] | None = None

    def parse(self, text: str) -> Any:
        if self.kind == "bool":
            low = text.lower()
            if low not in ("yes", "no"):
                raise ConfigError("argument must be 'yes' or 'no'")
            return low == "yes"
        if self.kind in ("int", "memory"):
            if self.kind == "memory":
                value = parse_memory(text)
            else:
                try:
                    if not re.fullmatch(r"-?\d+", text):
                        raise ValueError
                    value = int(text)
                except ValueError:
                    raise ConfigError("argument couldn't be parsed into an integer") from None
            if not self.low <= value <= self.high:
                raise ConfigError(f"argument must be between {self.low} and {self.high} inclusive")
            return value
        if self.kind == "enum":
            low = text.lower()
            if low not in self.choices:
                raise ConfigError("argument(s) must be one of the following: " + ", ".join(self.choices))
            return low
        return text

    def show(self, value: Any) -> str:
        if self.kind == "bool":
            return "yes" if value else "no"
        return str(value)


_EVENT_CLASSES = "Ag$lshzxeKEtmdn"


def _check_events(text: str) -> str:
    for ch in text:
        if ch not in _EVENT_CLASSES:
            raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return text


def _check_save(text: str) -> str:
    parts = text.split()
    if len(parts) % 2 or any(not p.isdigit() for p in parts):
        raise ConfigError("Invalid save parameters")
    return " ".join(parts)


def _bounded_hz(value: int) -> int:
    return max(1, min(500, value))


SETTINGS: list[Setting] = [
    Setting("port", "int", 6379, 0, 65535, immutable=True),
    Setting("bind", "str", "127.0.0.1", immutable=True),
    Setting("requirepass", "str", ""),
    Setting("maxclients", "int", 10000, 1, LLONG_MAX),
    Setting("databases", "int", 16, 1, 2**31 - 1, immutable=True),
    Setting("proto-max-bulk-len", "memory", 512 * 1024 * 1024, 1024 * 1024, LLONG_MAX),
    Setting("client-query-buffer-limit", "memory", 1024**3, 1024 * 1024, LLONG_MAX),
    Setting("notify-keyspace-events", "special", "", validate=_check_events),
    Setting("busy-reply-threshold", "int", 5000, 0, LLONG_MAX, aliases=("lua-time-limit",)),
    Setting("enable-debug-command", "enum", "no", choices=("no", "yes", "local"), immutable=True),
    Setting("enable-fakekey-commands", "bool", True, immutable=True),
    Setting("dir", "str", ".", immutable=False),
    Setting("dbfilename", "str", "dump.rdb"),
    Setting("appendonly", "bool", False),
    Setting("appendfilename", "str", "appendonly.aof", immutable=True),
    Setting("appendfsync", "enum", "everysec", choices=("always", "everysec", "no")),
    Setting("save", "special", "", validate=_check_save),
    Setting("hz", "int", 10, -(2**31), 2**31 - 1, validate=_bounded_hz),
    Setting("timeout", "int", 0, 0, 2**31 - 1),
    Setting("tcp-keepalive", "int", 300, 0, 2**31 - 1),
    Setting("maxmemory", "memory", 0, 0, LLONG_MAX),
    Setting(
        "maxmemory-policy", "enum", "noeviction",
        choices=("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                 "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction"),
    ),
    Setting("loglevel", "enum", "notice", choices=("debug", "verbose", "notice", "warning", "nothing")),
    Setting("logfile", "str", "", immutable=True),
    Setting("protected-mode", "bool", True, immutable=True),
    Setting("slowlog-log-slower-than", "int", 10000, -1, LLONG_MAX),
    Setting("slowlog-max-len", "int", 128, 0, 2**63 - 1),
    Setting("latency-monitor-threshold", "int", 0, 0, LLONG_MAX),
    Setting("hash-max-listpack-entries", "int", 512, 0, LLONG_MAX, aliases=("hash-max-ziplist-entries",)),
    Setting("hash-max-listpack-value", "int", 64, 0, LLONG_MAX, aliases=("hash-max-ziplist-value",)),
    Setting("list-max-listpack-size", "int", -2, -(2**31), 2**31 - 1, aliases=("list-max-ziplist-size",)),
    Setting("set-max-intset-entries", "int", 512, 0, LLONG_MAX),
    Setting("set-max-listpack-entries", "int", 128, 0, LLONG_MAX),
    Setting("set-max-listpack-value", "int", 64, 0, LLONG_MAX),
    Setting("zset-max-listpack-entries", "int", 128, 0, LLONG_MAX, aliases=("zset-max-ziplist-entries",)),
    Setting("zset-max-listpack-value", "int", 64, 0, LLONG_MAX, aliases=("zset-max-ziplist-value",)),
    Setting("stream-node-max-entries", "int", 100, 0, LLONG_MAX),
    Setting("stream-node-max-bytes", "memory", 4096, 0, LLONG_MAX),
    Setting("client-output-buffer-limit", "special", "normal 0 0 0 replica 268435456 67108864 60 pubsub 33554432 8388608 60"),
    Setting("lfu-log-factor", "int", 10, 0, 2**31 - 1),
    Setting("lfu-decay-time", "int", 1, 0, 2**31 - 1),
]

BY_NAME: dict[str, Setting] = {}
for _s in SETTINGS:
    BY_NAME[_s.name] = _s
    for _a in _s.aliases:
        BY_NAME[_a] = _s


class Config:
    """The live values, by canonical name."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self.values: dict[str, Any] = {s.name: s.default for s in SETTINGS}
        self.listeners: list[Callable[[str, Any], None]] = []
        for name, text in (overrides or {}).items():
            self.set_at_startup(name, text)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def set_at_startup(self, name: str, text: str) -> None:
        setting = BY_NAME.get(name.lower())
        if setting is None:
            raise ConfigError(f"Bad directive or wrong number of arguments: '{name}'")
        self.values[setting.name] = self._parse(setting, text)

    def _parse(self, setting: Setting, text: str) -> Any:
        value = setting.parse(text)
        if setting.validate is not None:
            value = setting.validate(value)
        return value

    def get(self, patterns: list[str]) -> dict[str, str]:
        """CONFIG GET: every setting (and alias) matching any glob pattern, once each."""
        out: dict[str, str] = {}
        for pattern in patterns:
            low = pattern.lower()
            for name, setting in BY_NAME.items():
                if name in out:
                    continue
                if name == low or (any(c in low for c in "*?[") and fnmatch.fnmatchcase(name, low)):
                    out[name] = setting.show(self.values[setting.name])
        return out

    def set_many(self, pairs: list[tuple[str, str]]) -> None:
        """CONFIG SET: all or nothing, with Valkey's error texts."""
        parsed: list[tuple[Setting, Any]] = []
        seen: set[str] = set()
        for name, text in pairs:
            setting = BY_NAME.get(name.lower())
            if setting is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if setting.name in seen:
                raise ConfigError(f"Duplicate parameter - {name}")
            seen.add(setting.name)
            if setting.immutable:
                raise ConfigError(
                    f"CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
                )
            try:
                parsed.append((setting, self._parse(setting, text)))
            except ConfigError as err:
                raise ConfigError(
                    f"CONFIG SET failed (possibly related to argument '{name}') - {err}"
                ) from None
        for setting, value in parsed:
            self.values[setting.name] = value
            for listener in self.listeners:
                listener(setting.name, value)
