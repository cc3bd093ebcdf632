"""Every setting fakekey has: its default, its parsing and validation, as CONFIG GET/SET
and the command line / config file see it. Texts follow Valkey's config.c."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fakekey.glob import glob_match

LLONG_MAX = 2**63 - 1


class ConfigError(Exception):
    """A value a setting refuses; the text follows Valkey's."""


_MEMORY_RE = re.compile(r"(\d+)(b|k|kb|m|mb|g|gb)?\Z", re.I)
_INT_RE = re.compile(r"(?:0|-?[1-9]\d*)\Z")
ULLONG_MAX = 2**64 - 1
_MEMORY_UNITS = {
    None: 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
    "g": 1000**3, "gb": 1024**3,
}


def parse_memory(text: str) -> int:
    m = _MEMORY_RE.match(text)
    if not m:
        raise ConfigError("argument must be a memory value")
    value = int(m.group(1)) * _MEMORY_UNITS[(m.group(2) or "").lower() or None]
    if value > ULLONG_MAX:
        raise ConfigError("argument must be a memory value")
    return value


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
    protected: bool = False  # refused by CONFIG SET while enable-protected-configs is no
    # how CONFIG GET shows the value (Valkey normalises some texts, e.g. the event classes)
    render: Callable[[Any], str] | None = None
    # CONFIG SET combines the new value with the old one (client-output-buffer-limit)
    merge: Callable[[Any, Any], Any] | None = None

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
                value = int(text) if _INT_RE.match(text) else None
                if value is None or not -(2**63) <= value <= LLONG_MAX:
                    raise ConfigError("argument couldn't be parsed into an integer")
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
        if self.render is not None:
            return self.render(value)
        if self.kind == "bool":
            return "yes" if value else "no"
        return str(value)


_EVENT_CLASSES = "Ag$lshzxeKEtmdn"


def _check_events(text: str) -> str:
    for ch in text:
        if ch not in _EVENT_CLASSES:
            raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return text


# notify-keyspace-events as Valkey shows it: "A" stands for g$lshzxetd, then K, E, m.
_ALL_EVENT_CLASSES = "g$lshzxetd"


def _show_events(text: str) -> str:
    classes = set(text.replace("A", _ALL_EVENT_CLASSES))
    if set(_ALL_EVENT_CLASSES) <= classes:
        out = "A"
    else:
        out = "".join(ch for ch in _ALL_EVENT_CLASSES + "n" if ch in classes)
    return out + "".join(ch for ch in "KEm" if ch in classes)


_OBUF_CLASSES = {"normal": "normal", "replica": "slave", "slave": "slave", "pubsub": "pubsub"}


def parse_obuf_limits(text: str) -> dict[str, tuple[int, int, int]]:
    """client-output-buffer-limit: groups of `class hard soft seconds`."""
    parts = text.split()
    if not parts or len(parts) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits: dict[str, tuple[int, int, int]] = {}
    for i in range(0, len(parts), 4):
        klass = _OBUF_CLASSES.get(parts[i].lower())
        if klass is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(parts[i + 1]), parse_memory(parts[i + 2])
            seconds = int(parts[i + 3]) if _INT_RE.match(parts[i + 3]) else -1
        except ConfigError:
            hard = soft = seconds = -1
        if seconds < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[klass] = (hard, soft, seconds)
    return limits


def _check_obuf_limits(text: str) -> dict[str, tuple[int, int, int]]:
    return parse_obuf_limits(text)


def _merge_obuf_limits(old: Any, new: dict[str, tuple[int, int, int]]) -> dict[str, tuple[int, int, int]]:
    merged = dict(parse_obuf_limits(old) if isinstance(old, str) else old)
    merged.update(new)
    return merged


def _show_obuf_limits(value: Any) -> str:
    limits = parse_obuf_limits(value) if isinstance(value, str) else value
    return " ".join(
        f"{klass} {hard} {soft} {seconds}"
        for klass in ("normal", "slave", "pubsub")
        for hard, soft, seconds in [limits.get(klass, (0, 0, 0))]
    )


def _show_dir(value: str) -> str:
    return os.path.abspath(value)


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
    Setting("maxclients", "int", 10000, 1, 2**32 - 1),
    Setting("databases", "int", 16, 1, 2**31 - 1, immutable=True),
    Setting("proto-max-bulk-len", "memory", 512 * 1024 * 1024, 1024 * 1024, LLONG_MAX),
    Setting("client-query-buffer-limit", "memory", 1024**3, 1024 * 1024, LLONG_MAX),
    Setting("notify-keyspace-events", "special", "", validate=_check_events, render=_show_events),
    Setting("busy-reply-threshold", "int", 5000, 0, LLONG_MAX, aliases=("lua-time-limit",)),
    Setting("enable-debug-command", "enum", "no", choices=("no", "yes", "local"), immutable=True),
    Setting("enable-fakekey-commands", "bool", True, immutable=True),
    Setting("dir", "str", ".", protected=True, render=_show_dir),
    Setting("dbfilename", "str", "dump.rdb", protected=True),
    Setting("appendonly", "bool", False),
    Setting("appendfilename", "str", "appendonly.aof", immutable=True),
    Setting("appendfsync", "enum", "everysec", choices=("everysec", "always", "no")),
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
    Setting(
        "client-output-buffer-limit", "special",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        validate=_check_obuf_limits, merge=_merge_obuf_limits, render=_show_obuf_limits,
    ),
    Setting("lfu-log-factor", "int", 10, 0, 2**31 - 1),
    Setting("lfu-decay-time", "int", 1, 0, 2**31 - 1),
    Setting("maxmemory-samples", "int", 5, 1, 64),
    Setting("cluster-enabled", "bool", False, immutable=True),
    Setting("daemonize", "bool", False, immutable=True),
    Setting("unixsocket", "str", "", immutable=True),
    Setting("pidfile", "str", "", immutable=True),
    Setting("enable-protected-configs", "enum", "no", choices=("no", "yes", "local"), immutable=True),
    Setting("enable-module-command", "enum", "no", choices=("no", "yes", "local"), immutable=True),
    Setting("replica-read-only", "bool", True, aliases=("slave-read-only",)),
    Setting("lazyfree-lazy-user-flush", "bool", False),
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
        self.epoch = 0
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
        if setting.merge is not None:
            value = setting.merge(self.values[setting.name], value)
        return value

    def get(self, patterns: list[str]) -> dict[str, str]:
        """CONFIG GET: every setting (and alias) matching any pattern, once each, sorted
        by name. A pattern without glob characters answers under the name as asked."""
        found: dict[str, str] = {}
        for pattern in patterns:
            if not any(c in pattern for c in "*?["):
                setting = BY_NAME.get(pattern.lower())
                if setting is not None and pattern.lower() not in found:
                    found.setdefault(pattern, setting.show(self.values[setting.name]))
                continue
            for name, setting in BY_NAME.items():
                if name not in found and glob_nocase(pattern, name):
                    found[name] = setting.show(self.values[setting.name])
        return dict(sorted(found.items()))

    def set_many(self, pairs: list[tuple[str, str]]) -> None:
        """CONFIG SET: the names are checked first (unknown, immutable, protected,
        duplicate), then every value; nothing changes unless all are valid."""
        settings: list[Setting] = []
        for name, _text in pairs:
            setting = BY_NAME.get(name.lower())
            if setting is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if setting.immutable:
                raise _set_failed(name, "can't set immutable config")
            if setting.protected and self.values["enable-protected-configs"] == "no":
                raise _set_failed(name, "can't set protected config")
            if setting in settings:
                raise _set_failed(name, "duplicate parameter")
            settings.append(setting)
        parsed: list[tuple[Setting, Any]] = []
        for setting, (name, text) in zip(settings, pairs, strict=True):
            try:
                parsed.append((setting, self._parse(setting, text)))
            except ConfigError as err:
                raise _set_failed(name, str(err)) from None
        self.epoch += 1  # readers that cache a value re-read it when this moves
        for setting, value in parsed:
            self.values[setting.name] = value
            for listener in self.listeners:
                listener(setting.name, value)


def _set_failed(name: str, why: str) -> ConfigError:
    return ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - {why}")


def glob_nocase(pattern: str, name: str) -> bool:
    """Valkey's case-insensitive glob (stringmatchlen nocase) for setting and command names."""
    return glob_match(pattern.encode(), name.encode(), nocase=True)
