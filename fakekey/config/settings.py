"""Every setting fakekey has: the whole list `CONFIG GET *` shows on Valkey 9.1.2 (plus
fakekey's own), each with its default, type, range, mutability and aliases, parsed and
validated as Valkey's config.c does it, error texts included.

The settings are declared in one table (`_TABLE`); the few with their own syntax
(save, bind, client-output-buffer-limit, ...) get a parser from `_SPECIAL`. Settings
fakekey has no behaviour for are still accepted, validated and shown, as Valkey does."""

from __future__ import annotations

import difflib
import ipaddress
import locale
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fakekey.codecs.glob import glob_match
from fakekey.config.directives import BAD_DIRECTIVE, Directives
from fakekey.config.limits import maxclients_applier
from fakekey.types.zset import ZLimits

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
UINT_MAX = 2**32 - 1
LLONG_MIN, LLONG_MAX = -(2**63), 2**63 - 1
ULLONG_MAX = 2**64 - 1
_BOUNDS = {"INT_MIN": INT_MIN, "INT_MAX": INT_MAX, "UINT_MAX": UINT_MAX,
           "LLONG_MAX": LLONG_MAX, "ULLONG_MAX": ULLONG_MAX}
CONFIG_MIN_HZ, CONFIG_MAX_HZ = 1, 500
LOADBUF_SIZE = 256  # Valkey copies enum errors into a buffer of this size


class ConfigError(Exception):
    """A value a setting refuses; the text follows Valkey's."""


# --- C number parsing, as Valkey's util.c ------------------------------------------------

_MEMORY_RE = re.compile(r"(\d*)(b|k|kb|m|mb|g|gb)?\Z", re.I)
_MEMORY_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2,
                 "g": 1000**3, "gb": 1024**3}
_LL_RE = re.compile(r"(?:0|-?[1-9]\d{0,19})\Z")  # longer is out of range anyway
_STRTOLL_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)(\d*)\Z")


def parse_memory(text: str) -> int:
    """memtoull: digits then an optional unit; the product wraps at 2**64 as in C."""
    m = _MEMORY_RE.match(text)
    if not m or len(m.group(1)) >= 128 or (m.group(1) and int(m.group(1)) > ULLONG_MAX):
        raise ConfigError("argument must be a memory value")
    digits = int(m.group(1) or "0")
    return digits * _MEMORY_UNITS[(m.group(2) or "").lower()] % 2**64


def string2ll(text: str) -> int | None:
    """Valkey's strict integer: no sign on zero, no leading zeros or spaces."""
    if not _LL_RE.match(text):
        return None
    value = int(text)
    return value if LLONG_MIN <= value <= LLONG_MAX else None


def strtoll_whole(text: str) -> int | None:
    """C strtoll(text, &end, 10) that must consume the whole text (an empty text is 0)."""
    m = _STRTOLL_RE.match(text)
    if not m or (m.group(1) and not m.group(2)):
        return None
    digits = (m.group(2) or "0").lstrip("0")[:25] or "0"  # strtoll saturates; int() would refuse 4300+ digits
    value = int(m.group(1) + digits)
    return max(LLONG_MIN, min(LLONG_MAX, value))


def _signed64(value: int) -> int:
    value %= 2**64
    return value - 2**64 if value > LLONG_MAX else value


def _octal(text: str) -> int | None:
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?)([0-7]+)", text)
    if not m or len(m.group(2).lstrip("0")) > 22:  # past 64 bits (and past what int() takes)
        return None
    value = int(m.group(1) + m.group(2), 8)
    return value if LLONG_MIN <= value <= LLONG_MAX else None


# --- one setting ---------------------------------------------------------------------------


@dataclass
class Setting:
    """One setting. kind: bool, enum, flags (several enum words), int, str or special.
    An int has a style: "" (plain), mem (memory units), mempct (memory or N%), memint
    (memory or a plain, possibly negative, integer) or octal."""

    name: str
    kind: str
    default: str  # as Valkey's CONFIG GET prints it; parsed when a Config is made
    low: int = 0
    high: int = LLONG_MAX
    style: str = ""
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    immutable: bool = False
    protected: bool = False
    hidden: bool = False  # only an exact CONFIG GET shows it
    multi_arg: bool = False  # takes several words (split by spaces in CONFIG SET)
    own: bool = False  # fakekey's own, not a Valkey setting
    # str/special: text (or words) -> value; raises ConfigError with Valkey's text
    check: Callable[[Any], Any] | None = None
    render: Callable[[Any], str] | None = None
    # CONFIG SET combines the new value with the old one (client-output-buffer-limit)
    merge: Callable[[Any, Any], Any] | None = None
    # a value accepted by the parser is adjusted before it is stored (hz)
    adjust: Callable[[Any], Any] | None = None
    # ... and further when CONFIG SET stores it (repl-backlog-size)
    adjust_on_set: Callable[[Any], Any] | None = None
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.names = (self.name, *self.aliases)

    def parse(self, words: list[str]) -> Any:
        """The value for these words (one word unless multi_arg)."""
        if self.kind == "special":
            assert self.check is not None
            return self.check(words)
        if self.kind == "flags":
            return self._parse_flags(words)
        (text,) = words
        if self.kind == "bool":
            low = text.lower()
            if low not in ("yes", "no"):
                raise ConfigError("argument must be 'yes' or 'no'")
            return low == "yes"
        if self.kind == "enum":
            return self._choice(text)
        if self.kind == "int":
            return self._parse_number(text)
        return self.check(text) if self.check is not None else text

    def _choice(self, text: str) -> str:
        for choice in self.choices:
            if choice.lower() == text.lower():
                return choice
        message = "argument(s) must be one of the following: " + ", ".join(self.choices)
        raise ConfigError(message[: LOADBUF_SIZE - 1])

    def _parse_flags(self, words: list[str]) -> str:
        """Several enum words (shutdown-on-sigterm): shown in the table's order."""
        if not words:
            self._choice("")
        chosen = {self._choice(word) for word in words}
        if {"save", "nosave"} <= chosen:
            raise ConfigError("shutdown options SAVE and NOSAVE can't be used simultaneously")
        shown = [c for c in self.choices[1:] if c in chosen]
        return " ".join(shown) or self.choices[0]

    def _parse_number(self, text: str) -> int:
        value = self._number_from_text(text)
        if self.high > LLONG_MAX:  # an unsigned C type: compared and kept as unsigned
            return value % 2**64
        if "pct" in self.style and value < 0:
            if value < self.low:
                raise ConfigError(f"percentage argument must be less or equal to {-self.low}")
        elif not self.low <= value <= self.high:
            if self.style == "octal":
                raise ConfigError(f"argument must be between {self.low:o} and {self.high:o} inclusive")
            raise ConfigError(f"argument must be between {self.low} and {self.high} inclusive")
        return value

    def _number_from_text(self, text: str) -> int:
        """Valkey's numericParseString: memory, then percent, then octal, then plain."""
        style = self.style
        if style.startswith("mem"):
            try:
                return _signed64(parse_memory(text))
            except ConfigError:
                pass
        if style == "mempct" and len(text) > 1 and text.endswith("%"):
            percent = string2ll(text[:-1])
            if percent is not None and percent >= 0:
                return -percent  # a percentage is kept negative, as Valkey keeps it
        if style == "octal":
            value = _octal(text)
            if value is not None:
                return value
        if style in ("", "memint"):
            value = string2ll(text)
            if value is not None:
                return value
        raise ConfigError({
            "mempct": "argument must be a memory or percent value",
            "mem": "argument must be a memory value",
            "memint": "argument must be a memory value",
            "octal": "argument couldn't be parsed as an octal number",
        }.get(style, "argument couldn't be parsed into an integer"))

    def show(self, value: Any) -> str:
        if self.render is not None:
            return self.render(value)
        if self.kind == "bool":
            return "yes" if value else "no"
        if self.kind == "int":
            if "pct" in self.style and value < 0:
                return f"{-value}%"
            if self.style == "octal":
                return format(value, "o")
            if self.high > LLONG_MAX:
                return str(value % 2**64 if self.style.startswith("mem") else _signed64(value))
        return str(value)


# --- settings with their own syntax ---------------------------------------------------------

_EVENT_CLASSES = "Ag$lshzxeKEtmdn"
_ALL_EVENT_CLASSES = "g$lshzxetd"  # what "A" stands for


def _check_events(words: list[str]) -> str:
    if len(words) != 1:
        raise ConfigError("wrong number of arguments")
    for ch in words[0]:
        if ch not in _EVENT_CLASSES:
            raise ConfigError("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    return words[0]


def _show_events(text: str) -> str:
    """notify-keyspace-events as Valkey shows it: "A" for g$lshzxetd, then K, E, m."""
    classes = set(text.replace("A", _ALL_EVENT_CLASSES))
    if set(_ALL_EVENT_CLASSES) <= classes:
        out = "A"
    else:
        out = "".join(ch for ch in _ALL_EVENT_CLASSES + "n" if ch in classes)
    return out + "".join(ch for ch in "KEm" if ch in classes)


_OBUF_CLASSES = {"normal": "normal", "replica": "slave", "slave": "slave", "pubsub": "pubsub",
                 "master": None, "primary": None}


def parse_obuf_limits(text: str | Sequence[str]) -> dict[str, tuple[int, int, int]]:
    """client-output-buffer-limit: groups of `class hard soft seconds`."""
    parts = text.split() if isinstance(text, str) else list(text)
    if len(parts) % 4:
        raise ConfigError("Wrong number of arguments in buffer limit configuration.")
    limits: dict[str, tuple[int, int, int]] = {}
    for i in range(0, len(parts), 4):
        klass = _OBUF_CLASSES.get(parts[i].lower())
        if klass is None:
            raise ConfigError("Invalid client class specified in buffer limit configuration.")
        try:
            hard, soft = parse_memory(parts[i + 1]), parse_memory(parts[i + 2])
        except ConfigError:
            hard = soft = -1
        seconds = strtoll_whole(parts[i + 3]) if parts[i + 3] else None
        if hard < 0 or seconds is None or seconds < 0:
            raise ConfigError("Error in hard, soft or soft_seconds setting in buffer limit configuration.")
        limits[klass] = (hard, soft, seconds)
    return limits


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


def _check_save(words: list[str]) -> str:
    """save: pairs of `seconds changes`, seconds >= 1, changes >= 0; "" is none."""
    if words == [""]:
        words = []
    numbers = [strtoll_whole(word) for word in words]
    if len(words) % 2 or any(
        n is None or n < (1 if i % 2 == 0 else 0) for i, n in enumerate(numbers)
    ):
        raise ConfigError("Invalid save parameters")
    return " ".join(str(n) for n in numbers)


def _merge_save_at_startup(old: str, new: str, first: bool) -> str:
    """In a config file, `save` lines add up (the first one replaces the default)."""
    return new if first or not old else f"{old} {new}".strip()


def _check_oom_values(words: list[str]) -> tuple[int, int, int]:
    if len(words) != 3:
        raise ConfigError("wrong number of arguments")
    values = [strtoll_whole(word) for word in words]
    if any(v is None or not -2000 <= v <= 2000 for v in values):
        raise ConfigError("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
    return tuple(values)  # type: ignore[return-value]


def _show_oom_values(values: tuple[int, int, int]) -> str:
    return " ".join(map(str, values))


def _check_bind(words: list[str]) -> str:
    if len(words) > 16:
        raise ConfigError("Too many bind addresses specified.")
    return "" if words == [""] else " ".join(words)


def _no_rdma(words: list[str]) -> str:
    raise ConfigError("No RDMA building support.")


def _check_replicaof(words: list[str]) -> str:
    if len(words) != 2:
        raise ConfigError("wrong number of arguments")
    if words[0].lower() == "no" and words[1].lower() == "one":
        return ""
    port = strtoll_whole(words[1])
    if port is None or not words[1] or not 0 <= port <= 65535:
        raise ConfigError("Invalid primary port")
    return f"{words[0]} {port}"  # the server follows it once started (net/replica_link.py)


_DOUBLE_RE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?)\Z", re.I)


def _check_percentiles(words: list[str]) -> tuple[float, ...]:
    if words == [""]:
        return ()
    values = []
    for word in words:
        if not _DOUBLE_RE.match(word):
            raise ConfigError("Invalid latency-tracking-info-percentiles parameters")
        value = float(word)
        if not 0.0 <= value <= 100.0:
            raise ConfigError("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
        values.append(value)
    return tuple(values)


def _show_percentiles(values: tuple[float, ...]) -> str:
    """%f with the trailing zeros (and dot) trimmed, as Valkey's trimDoubleString."""
    return " ".join(f"{v:f}".rstrip("0").rstrip(".") for v in values)


def _check_dir(words: list[str]) -> str:
    """dir: Valkey chdir()s; fakekey runs inside other processes, so it keeps the
    absolute path instead (and refuses what chdir would refuse)."""
    if len(words) != 1:
        raise ConfigError("wrong number of arguments")
    path = words[0]
    if not path:
        raise ConfigError("dir can't be empty")
    try:
        if not os.path.isdir(path):
            os.stat(path)  # the error chdir would give for a missing path
            raise ConfigError(os.strerror(20))  # ENOTDIR
        os.listdir(path)  # permission to enter it
    except OSError as err:
        raise ConfigError(err.strerror or str(err)) from None
    return os.path.abspath(path)


def _base_name(setting: str, what: str = "filename") -> Callable[[str], str]:
    def check(text: str) -> str:
        if not text:
            raise ConfigError(f"{setting} can't be empty")
        if "/" in text or "\\" in text:
            raise ConfigError(f"{setting} can't be a path, just a {what}")
        return text
    return check


def _not_empty(setting: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if not text:
            raise ConfigError(f"{setting} can't be empty")
        return text
    return check


# what the real server refuses in a node name or announced ip: controls, space and these
_AUX_INVALID = frozenset('!"#$%&\'()*+,;<=>?@[\\]^{|}~\x7f')


def _aux_string(message: str) -> Callable[[str], str]:
    def check(text: str) -> str:
        if any(ch in _AUX_INVALID or ch <= " " for ch in text):
            raise ConfigError(message)
        return text
    return check


def _check_hostname(text: str) -> str:
    if len(text) >= 256:
        raise ConfigError("Hostnames must be less than 256 characters")
    if not re.fullmatch(r"[A-Za-z0-9.-]*", text):
        raise ConfigError("Hostnames may only contain alphanumeric characters, hyphens or dots")
    return text


def _ip_of(version: int) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text:
            try:
                address = ipaddress.ip_address(text)
            except ValueError:
                address = None
            if address is None or address.version != version:
                raise ConfigError(f"Invalid IPv{version} address")
        return text
    return check


def _check_locale(text: str) -> str:
    """setlocale(LC_COLLATE, text) must succeed (the old locale is put back)."""
    old = locale.setlocale(locale.LC_COLLATE)
    try:
        locale.setlocale(locale.LC_COLLATE, text)
    except locale.Error:
        raise ConfigError("Invalid locale name") from None
    finally:
        locale.setlocale(locale.LC_COLLATE, old)
    return text


_TITLE_VARIABLES = {"title": "", "listen-addr": "*:6379", "server-mode": "", "port": "6379",
                    "tls-port": "0", "unixsocket": "", "config-file": ""}


def _check_title_template(text: str) -> str:
    """Valkey's sdstemplate: {{ is a brace, {name} a known variable; the expansion
    (with an empty title) must not be blank."""
    out, rest = [], text
    while rest:
        start = rest.find("{")
        if start < 0:
            out.append(rest)
            break
        out.append(rest[:start])
        rest = rest[start + 1:]
        if rest.startswith("{"):
            out.append("{")
            rest = rest[1:]
            continue
        end = rest.find("}")
        if not rest or end < 0 or rest[:end] not in _TITLE_VARIABLES:
            raise ConfigError("template format is invalid or contains unknown variables")
        out.append(_TITLE_VARIABLES[rest[:end]])
        rest = rest[end + 1:]
    if not "".join(out).strip(" "):
        raise ConfigError("template format is invalid or contains unknown variables")
    return text


def _clamp_hz(value: int) -> int:
    """hz is a hint: values out of 1..500 are accepted and capped."""
    return max(CONFIG_MIN_HZ, min(CONFIG_MAX_HZ, value))


# name -> (parser of the words, how CONFIG GET shows the value, merge with the old value)
_SPECIAL: dict[str, tuple[Callable[[list[str]], Any], Callable[[Any], str] | None,
                          Callable[[Any, Any], Any] | None]] = {
    "save": (_check_save, None, None),
    "client-output-buffer-limit": (parse_obuf_limits, _show_obuf_limits, _merge_obuf_limits),
    "oom-score-adj-values": (_check_oom_values, _show_oom_values, None),
    "notify-keyspace-events": (_check_events, _show_events, None),
    "bind": (_check_bind, None, None),
    "rdma-bind": (_no_rdma, None, None),
    "replicaof": (_check_replicaof, None, None),
    "latency-tracking-info-percentiles": (_check_percentiles, _show_percentiles, None),
    "dir": (_check_dir, os.path.abspath, None),
}
_STRING_CHECKS: dict[str, Callable[[str], str]] = {
    "dbfilename": _base_name("dbfilename"),
    "appendfilename": _base_name("appendfilename"),
    "appenddirname": _base_name("appenddirname", "dirname"),
    "cluster-config-file": _not_empty("cluster-config-file"),
    "cluster-announce-hostname": _check_hostname,
    "cluster-announce-human-nodename": _aux_string("Announced human node name contained invalid character"),
    "cluster-announce-ip": _aux_string("cluster-announce-ip contains invalid character"),
    "cluster-announce-client-ipv4": _ip_of(4),
    "cluster-announce-client-ipv6": _ip_of(6),
    "locale-collate": _check_locale,
    "proc-title-template": _check_title_template,
}

# --- the table ------------------------------------------------------------------------------
# name[,alias...] | type | default (as CONFIG GET prints it) | flags
# type: bool, enum:a,b (one word), flags:a,b (several words), str, special,
#       int:LOW..HIGH with a style prefix mem/mempct/memint/octal instead of int.
# flags: I immutable, P protected (CONFIG SET needs enable-protected-configs),
#        H hidden (exact CONFIG GET only), M several words, F fakekey's own.
# Facts from Valkey 9.1.2 (CONFIG GET/SET against the real server) and its config.c.
# Defaults that are fakekey's choice: save "" (persistence is off by default) and
# bind, which fakekey.Server sets to its loopback host.
_TABLE = """
acl-pubsub-default | enum:allchannels,resetchannels | resetchannels |
aclfile | str | | I
acllog-max-len | int:0..LLONG_MAX | 128 |
active-defrag-cycle-max | int:1..99 | 25 |
active-defrag-cycle-min | int:1..99 | 1 |
active-defrag-cycle-us | int:0..100000 | 500 |
active-defrag-ignore-bytes | mem:1..LLONG_MAX | 104857600 |
active-defrag-max-scan-fields | int:1..LLONG_MAX | 1000 |
active-defrag-threshold-lower | int:0..1000 | 10 |
active-defrag-threshold-upper | int:0..1000 | 100 |
active-expire-effort | int:1..10 | 1 |
activedefrag | bool | no |
activerehashing | bool | yes |
always-show-logo | bool | no | I
aof-disable-auto-gc | bool | no | H
aof-load-truncated | bool | yes |
aof-rewrite-cpulist,aof_rewrite_cpulist | str | | I
aof-rewrite-incremental-fsync | bool | yes |
aof-timestamp-enabled | bool | no |
aof-use-rdb-preamble | bool | yes |
appenddirname | str | appendonlydir | I
appendfilename | str | appendonly.aof | I
appendfsync | enum:everysec,always,no | everysec |
appendonly | bool | no |
auto-aof-rewrite-min-size | mem:0..LLONG_MAX | 67108864 |
auto-aof-rewrite-percentage | int:0..INT_MAX | 100 |
availability-zone | str | |
bgsave-cpulist,bgsave_cpulist | str | | I
bind | special | * -::* | M
bind-source-addr | str | |
bio-cpulist,bio_cpulist | str | | I
busy-reply-threshold,lua-time-limit | int:0..LLONG_MAX | 5000 |
client-output-buffer-limit | special | normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60 | M
client-query-buffer-limit | mem:1048576..LLONG_MAX | 1073741824 |
cluster-allow-pubsubshard-when-down | bool | yes |
cluster-allow-reads-when-down | bool | no |
cluster-allow-replica-migration | bool | yes |
cluster-announce-bus-port | int:0..65535 | 0 |
cluster-announce-client-ipv4 | str | |
cluster-announce-client-ipv6 | str | |
cluster-announce-client-port | int:0..65535 | 0 |
cluster-announce-client-tls-port | int:0..65535 | 0 |
cluster-announce-hostname | str | |
cluster-announce-human-nodename | str | |
cluster-announce-ip | str | |
cluster-announce-port | int:0..65535 | 0 |
cluster-announce-tls-port | int:0..65535 | 0 |
cluster-blacklist-ttl | int:0..ULLONG_MAX | 60 |
cluster-config-file | str | nodes.conf | I
cluster-config-save-behavior | enum:sync,best-effort | sync |
cluster-databases | int:1..INT_MAX | 1 | I
cluster-enabled | bool | no | I
cluster-link-sendbuf-limit | mem:0..ULLONG_MAX | 0 |
cluster-manual-failover-timeout | int:1..INT_MAX | 5000 |
cluster-migration-barrier | int:0..INT_MAX | 1 |
cluster-node-timeout | int:0..LLONG_MAX | 15000 |
cluster-ping-interval | int:0..LLONG_MAX | 0 | H
cluster-port | int:0..65535 | 0 | I
cluster-preferred-endpoint-type | enum:ip,hostname,unknown-endpoint | ip |
cluster-replica-no-failover,cluster-slave-no-failover | bool | no |
cluster-replica-validity-factor,cluster-slave-validity-factor | int:0..INT_MAX | 10 |
cluster-require-full-coverage | bool | yes |
cluster-slot-migration-log-max-len | int:0..LLONG_MAX | 1000 |
cluster-slot-stats-enabled | bool | no |
commandlog-execution-slower-than,slowlog-log-slower-than | int:-1..LLONG_MAX | 10000 |
commandlog-large-reply-max-len | int:0..LLONG_MAX | 128 |
commandlog-large-request-max-len | int:0..LLONG_MAX | 128 |
commandlog-reply-larger-than | int:-1..LLONG_MAX | 1048576 |
commandlog-request-larger-than | int:-1..LLONG_MAX | 1048576 |
commandlog-slow-execution-max-len,slowlog-max-len | int:0..LLONG_MAX | 128 |
crash-log-enabled | bool | yes |
crash-memcheck-enabled | bool | yes |
daemonize | bool | no | I
databases | int:1..INT_MAX | 16 | I
dbfilename | str | dump.rdb | P
debug-context | str | | H
dir | special | . | P
disable-thp | bool | yes | I
dual-channel-replication-enabled | bool | no |
enable-debug-assert | bool | no | IH
enable-debug-command | enum:no,yes,local | no | I
enable-module-command | enum:no,yes,local | no | I
enable-protected-configs | enum:no,yes,local | no | I
extended-redis-compatibility | bool | no |
hash-max-listpack-entries,hash-max-ziplist-entries | int:0..LLONG_MAX | 512 |
hash-max-listpack-value,hash-max-ziplist-value | mem:0..LLONG_MAX | 64 |
hash-seed | str | | I
hide-user-data-from-log | bool | yes |
hll-sparse-max-bytes | mem:0..LLONG_MAX | 3000 |
hz | int:0..INT_MAX | 10 |
ignore-warnings | str | |
import-mode | bool | no |
io-threads | int:1..256 | 1 |
jemalloc-bg-thread | bool | yes |
key-load-delay | int:INT_MIN..INT_MAX | 0 | H
latency-monitor-threshold | int:0..LLONG_MAX | 0 |
latency-tracking | bool | yes |
latency-tracking-info-percentiles | special | 50 99 99.9 | M
lazyfree-lazy-eviction | bool | yes |
lazyfree-lazy-expire | bool | yes |
lazyfree-lazy-server-del | bool | yes |
lazyfree-lazy-user-del | bool | yes |
lazyfree-lazy-user-flush | bool | yes |
lfu-decay-time | int:0..INT_MAX | 1 |
lfu-log-factor | int:0..INT_MAX | 10 |
list-compress-depth | int:0..INT_MAX | 0 |
list-max-listpack-size,list-max-ziplist-size | int:INT_MIN..INT_MAX | -2 |
loading-process-events-interval-bytes | int:1024..INT_MAX | 2097152 | H
locale-collate | str | |
log-format | enum:legacy,logfmt,json | legacy |
lua-enable-insecure-api | bool | no | PH
log-timestamp-format | enum:legacy,iso8601,milliseconds | legacy |
logfile | str | | I
loglevel | enum:debug,verbose,notice,warning,nothing | notice |
max-new-connections-per-cycle | int:1..1000 | 10 |
max-new-tls-connections-per-cycle | int:1..1000 | 1 |
maxclients | int:1..UINT_MAX | 10000 |
maxmemory | mem:0..ULLONG_MAX | 0 |
maxmemory-clients | mempct:-100..LLONG_MAX | 0 |
maxmemory-eviction-tenacity | int:0..100 | 10 |
maxmemory-policy | enum:volatile-lru,volatile-lfu,volatile-random,volatile-ttl,allkeys-lru,allkeys-lfu,allkeys-random,noeviction | noeviction |
maxmemory-samples | int:1..64 | 5 |
min-replicas-max-lag,min-slaves-max-lag | int:0..INT_MAX | 10 |
min-replicas-to-write,min-slaves-to-write | int:0..INT_MAX | 0 |
mptcp | bool | no | I
no-appendfsync-on-rewrite | bool | no |
notify-keyspace-events | special | |
oom-score-adj | enum:no,yes,relative,absolute | no |
oom-score-adj-values | special | 0 200 800 | M
pidfile | str | | I
port | int:0..65535 | 6379 |
prefetch-batch-max-size | int:0..128 | 16 |
primaryauth,masterauth | str | |
primaryuser,masteruser | str | |
proc-title-template | str | {title} {listen-addr} {server-mode} |
propagation-error-behavior | enum:ignore,panic,panic-on-replicas | ignore |
protected-mode | bool | yes |
proto-max-bulk-len | mem:1048576..LLONG_MAX | 536870912 |
rdb-del-sync-files | bool | no |
rdb-key-save-delay | int:INT_MIN..INT_MAX | 0 | H
rdb-save-incremental-fsync | bool | yes |
rdb-version-check | enum:strict,relaxed | strict |
rdbchecksum | bool | yes | I
rdbcompression | bool | yes |
rdma-bind | special | | M
rdma-completion-vector | int:-1..1024 | -1 | I
rdma-port | int:0..65535 | 0 |
rdma-rx-size | int:65536..16777216 | 1048576 | I
repl-backlog-size | mem:1..LLONG_MAX | 10485760 |
repl-backlog-ttl | int:0..LLONG_MAX | 3600 |
repl-disable-tcp-nodelay | bool | no |
repl-diskless-load | enum:disabled,on-empty-db,swapdb,flush-before-load | disabled |
repl-diskless-sync | bool | yes |
repl-diskless-sync-delay | int:0..INT_MAX | 5 |
repl-diskless-sync-max-replicas | int:0..INT_MAX | 0 |
repl-mptcp | bool | no | I
repl-ping-replica-period,repl-ping-slave-period | int:1..INT_MAX | 10 |
repl-timeout | int:1..INT_MAX | 60 |
replica-announce-ip,slave-announce-ip | str | |
replica-announce-port,slave-announce-port | int:0..65535 | 0 |
replica-announced | bool | yes |
replica-ignore-disk-write-errors | bool | no |
replica-ignore-maxmemory,slave-ignore-maxmemory | bool | yes |
replica-lazy-flush,slave-lazy-flush | bool | yes |
replica-priority,slave-priority | int:0..INT_MAX | 100 |
replica-read-only,slave-read-only | bool | yes |
replica-serve-stale-data,slave-serve-stale-data | bool | yes |
replicaof,slaveof | special | | IM
requirepass | str | |
save | special | | M
server-cpulist,server_cpulist | str | | I
set-max-intset-entries | int:0..LLONG_MAX | 512 |
set-max-listpack-entries | int:0..LLONG_MAX | 128 |
set-max-listpack-value | int:0..LLONG_MAX | 64 |
set-proc-title | bool | yes | I
shutdown-on-sigint | flags:default,save,nosave,now,force,safe,failover | default | M
shutdown-on-sigterm | flags:default,save,nosave,now,force,safe,failover | default | M
shutdown-timeout | int:0..INT_MAX | 10 |
slot-migration-max-failover-repl-bytes | memint:-1..LLONG_MAX | 0 |
socket-mark-id | int:0..UINT_MAX | 0 | I
stop-writes-on-bgsave-error | bool | yes |
stream-node-max-bytes | mem:0..LLONG_MAX | 4096 |
stream-node-max-entries | int:0..LLONG_MAX | 100 |
supervised | enum:upstart,systemd,auto,no | no | I
syslog-enabled | bool | no | I
syslog-facility | enum:user,local0,local1,local2,local3,local4,local5,local6,local7 | local0 | I
syslog-ident | str | valkey | I
tcp-backlog | int:0..INT_MAX | 511 | I
tcp-keepalive | int:0..INT_MAX | 300 |
timeout | int:0..INT_MAX | 0 |
tls-auth-clients | enum:no,yes,optional | yes |
tls-auth-clients-user | enum:CN,URI,off | off |
tls-auto-reload-interval | int:0..INT_MAX | 0 |
tls-ca-cert-dir | str | |
tls-ca-cert-file | str | |
tls-cert-file | str | |
tls-ciphers | str | |
tls-ciphersuites | str | |
tls-client-cert-file | str | |
tls-client-key-file | str | |
tls-client-key-file-pass | str | |
tls-cluster | bool | no |
tls-dh-params-file | str | |
tls-key-file | str | |
tls-key-file-pass | str | |
tls-port | int:0..65535 | 0 |
tls-prefer-server-ciphers | bool | no |
tls-protocols | str | |
tls-replication | bool | no |
tls-session-cache-size | int:0..INT_MAX | 20480 |
tls-session-cache-timeout | int:0..INT_MAX | 300 |
tls-session-caching | bool | yes |
tracking-table-max-keys | int:0..LLONG_MAX | 1000000 |
unixsocket | str | | I
unixsocketgroup | str | | I
unixsocketperm | octal:0..511 | 0 | I
use-exit-on-panic | bool | no | H
watchdog-period | int:0..INT_MAX | 0 | H
zset-max-listpack-entries,zset-max-ziplist-entries | int:0..LLONG_MAX | 128 |
zset-max-listpack-value,zset-max-ziplist-value | mem:0..LLONG_MAX | 64 |
enable-fakekey-commands | bool | yes | IF
enable-emq-module | bool | yes | IF
enable-stack-modules | bool | no | IF
"""
# enable-fakekey-commands: the FAKEKEY.* commands; enable-emq-module: the emulated
# trafikey module and its EMQ.* verbs (off: a plain Valkey); enable-stack-modules: the
# emulated Redis Stack modules' verbs (BF.*, CF.*, CMS.*, TOPK.*, TDIGEST.*, JSON.*), on in
# the fakeredis drop-in as fakeredis has them.


def _declare(line: str) -> Setting:
    names, kind, default, flags = (part.strip() for part in line.split("|"))
    name, *aliases = names.split(",")
    kind, _, spec = kind.partition(":")
    setting = Setting(
        name, kind, default, aliases=tuple(aliases), immutable="I" in flags,
        protected="P" in flags, hidden="H" in flags, multi_arg="M" in flags, own="F" in flags,
    )
    if kind in ("int", "mem", "mempct", "memint", "octal"):
        low, high = spec.split("..")
        setting.kind, setting.style = "int", "" if kind == "int" else kind
        setting.low, setting.high = (_BOUNDS[b] if b in _BOUNDS else int(b) for b in (low, high))
    elif kind in ("enum", "flags"):
        setting.choices = tuple(spec.split(","))
    elif kind == "special":
        setting.check, setting.render, setting.merge = _SPECIAL[name]
    elif kind == "str":
        setting.check = _STRING_CHECKS.get(name)
    return setting


def _default_of(setting: Setting) -> Any:
    """The default value, parsed from the table's text once."""
    if setting.kind == "special" and not setting.default:
        return ""  # nothing set (save, replicaof, rdma-bind, notify-keyspace-events)
    if setting.name == "dir":
        return "."  # shown as the absolute path of the working directory
    words = setting.default.split(" ") if setting.multi_arg and setting.default else [setting.default]
    value = setting.parse(words)
    return setting.adjust(value) if setting.adjust is not None else value


SETTINGS: list[Setting] = [_declare(line) for line in _TABLE.strip().splitlines()]
BY_NAME: dict[str, Setting] = {n: s for s in SETTINGS for n in s.names}
BY_NAME["hz"].adjust = _clamp_hz
# a run-time resize keeps the replication backlog at 16kb at least (not a start-up value)
BY_NAME["repl-backlog-size"].adjust_on_set = lambda size: max(16 * 1024, size)
DEFAULTS: dict[str, Any] = {s.name: _default_of(s) for s in SETTINGS}


# --- the live values ---------------------------------------------------------------------------

# A hook that puts a new value into effect (re-binding the port, ...): (new, old) -> an
# error text when it cannot, None when done.
Applier = Callable[[Any, Any], "str | None"]


class Config:
    """The live values, by canonical name."""

    def __init__(self, overrides: dict[str, str] | Iterable[tuple[str, Any]] | None = None) -> None:
        self.values: dict[str, Any] = dict(DEFAULTS)
        self.listeners: list[Callable[[str, Any], None]] = []
        # settings whose change needs an effect outside this object, which may fail
        self.appliers: dict[str, Applier] = dict(_BUILTIN_APPLIERS)
        self.epoch = 0
        # the hash and sorted-set listpack thresholds, read by every write to one: kept as
        # of epoch _limits_epoch (two lookups by name cost ~400 instructions a write)
        self._hash_limits: tuple[int, int] = (0, 0)
        self._zset_limits = ZLimits(0, 0)
        self._limits_epoch = -1
        self._saw_save = False
        self.user_directives: list[list[str]] = []  # `user <name> rules...` (fakekey/core/users.py)
        # rename-command, loadmodule and the other directives that are no settings
        self.directives = Directives()
        self.config_file = ""  # the file fakekey-server read, absolute (CONFIG REWRITE's)
        pairs = overrides.items() if isinstance(overrides, dict) else (overrides or ())
        for name, value in pairs:
            self.set_at_startup(name, value)

    def hash_limits(self) -> tuple[int, int]:
        """hash-max-listpack-entries and hash-max-listpack-value."""
        if self._limits_epoch != self.epoch:
            self._read_limits()
        return self._hash_limits

    def zset_limits(self) -> ZLimits:
        """zset-max-listpack-entries and zset-max-listpack-value (one object, shared until
        a setting changes)."""
        if self._limits_epoch != self.epoch:
            self._read_limits()
        return self._zset_limits

    def _read_limits(self) -> None:
        """Read the listpack thresholds again: a setting changed since they were read."""
        values = self.values
        self._hash_limits = (values["hash-max-listpack-entries"], values["hash-max-listpack-value"])
        self._zset_limits = ZLimits(values["zset-max-listpack-entries"], values["zset-max-listpack-value"])
        self._limits_epoch = self.epoch

    def __getitem__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:  # an alias
            return self.values[BY_NAME[name].name]

    def set_at_startup(self, name: str, value: str | Sequence[str]) -> None:
        """A command-line or config-file directive: `value` is its words (a str is one
        word). A multi-word setting given one non-empty word splits it at spaces."""
        words = [value] if isinstance(value, str) else list(value)
        setting = BY_NAME.get(name.lower())
        if setting is None:
            self._take_directive(name.lower(), words)
            return
        if setting.multi_arg and len(words) == 1 and words[0]:
            words = words[0].split()
        elif not setting.multi_arg and len(words) != 1:
            raise ConfigError("wrong number of arguments")
        parsed = self._parse(setting, words)
        if setting.name == "save":
            parsed = _merge_save_at_startup(self.values["save"], parsed, not self._saw_save)
            self._saw_save = True
        self.values[setting.name] = parsed
        self.epoch += 1

    def _take_directive(self, name: str, words: list[str]) -> None:
        """A directive that is no setting, in Valkey's order: the deprecated ones, then
        rename-command, user, loadmodule, module configurations, sentinel."""
        try:
            if self.directives.take(name, words):
                return
        except ValueError as err:
            raise ConfigError(str(err)) from None
        if name == "user" and words:  # an ACL user: the server's users check and load it
            self.user_directives.append(words)
            return
        raise ConfigError(BAD_DIRECTIVE)

    def _parse(self, setting: Setting, words: list[str]) -> Any:
        value = setting.parse(words)
        if setting.merge is not None:
            value = setting.merge(self.values[setting.name], value)
        if setting.adjust is not None:
            value = setting.adjust(value)
        return value

    def show(self, name: str) -> str:
        setting = BY_NAME[name]
        return setting.show(self.values[setting.name])

    def get(self, patterns: list[str]) -> dict[str, str]:
        """CONFIG GET: every setting (and alias) matching any pattern, once each, sorted
        by name. A pattern without glob characters answers under the name as asked
        (hidden settings answer only so)."""
        found: dict[str, str] = {}
        for pattern in patterns:
            if not any(c in pattern for c in "*?["):
                setting = BY_NAME.get(pattern.lower())
                if setting is not None and pattern.lower() not in found:
                    found.setdefault(pattern, setting.show(self.values[setting.name]))
                continue
            for name, setting in BY_NAME.items():
                if not setting.hidden and name not in found and glob_nocase(pattern, name):
                    found[name] = setting.show(self.values[setting.name])
        return dict(sorted(found.items()))

    def set_many(self, pairs: list[tuple[str, str]], protected_ok: bool | None = None) -> None:
        """CONFIG SET, all or nothing, in Valkey's phases: the names (unknown,
        immutable, protected, duplicate), then every value, then the effects (a
        failing one puts every old value back). `protected_ok`: this client may set
        protected settings (enable-protected-configs; by default only when "yes")."""
        if protected_ok is None:
            protected_ok = self.values["enable-protected-configs"] == "yes"
        settings = self._settings_to_set(pairs, protected_ok)
        parsed: list[tuple[Setting, Any]] = []
        for setting, (name, text) in zip(settings, pairs, strict=True):
            # a multi-word value splits at each single space ("" is no words at all)
            words = (text.split(" ") if text else []) if setting.multi_arg else [text]
            try:
                value = self._parse(setting, words)
            except ConfigError as err:
                raise _set_failed(name.lower(), str(err)) from None
            if setting.adjust_on_set is not None:
                value = setting.adjust_on_set(value)
            parsed.append((setting, value))
        old = {setting.name: self.values[setting.name] for setting, _ in parsed}
        for setting, value in parsed:
            self.values[setting.name] = value
        self._apply(parsed, old, pairs)
        self.epoch += 1  # readers that cache a value re-read it when this moves
        for setting, value in parsed:
            for listener in self.listeners:
                listener(setting.name, value)

    def _settings_to_set(self, pairs: list[tuple[str, str]], protected_ok: bool) -> list[Setting]:
        settings: list[Setting] = []
        for name, _text in pairs:
            setting = BY_NAME.get(name.lower())
            if setting is None:
                raise ConfigError(f"Unknown option or number of arguments for CONFIG SET - '{name}'")
            if setting.immutable:
                raise _set_failed(name, "can't set immutable config")
            if setting.protected and not protected_ok:
                raise _set_failed(name, "can't set protected config")
            if setting in settings:
                raise _set_failed(name, "duplicate parameter")
            settings.append(setting)
        return settings

    def _apply(self, parsed: list[tuple[Setting, Any]], old: dict[str, Any],
               pairs: list[tuple[str, str]]) -> None:
        """Run each changed setting's effect once; on a failure restore the old values
        (and their effects) and report it under the setting's name."""
        done: list[tuple[Applier, Setting]] = []
        for (setting, value), (name, _text) in zip(parsed, pairs, strict=True):
            applier = self.appliers.get(setting.name)
            if applier is None or value == old[setting.name]:
                continue
            error = applier(value, old[setting.name])
            if error is None:
                done.append((applier, setting))
                continue
            self.values.update(old)
            self.epoch += 1  # restored: what a reader kept meanwhile is read again
            for undo, undone in reversed(done):
                undo(old[undone.name], self.values[undone.name])
            raise _set_failed(name.lower(), error)


def setting_error(name: str, value: Any, err: ConfigError, keyword: bool = False) -> ConfigError:
    """A refused setting's error naming it and its value as given (`maxmemory_polcy='x'`
    for a keyword argument, `maxmemory-polcy 'x'` for a directive), with the nearest
    setting's name when there is no such setting."""
    shown = f"{name}={value!r}" if keyword else f"{name} {value!r}"
    nearest = nearest_setting(name) if str(err) == BAD_DIRECTIVE else None
    hint = "" if nearest is None else f" (did you mean {nearest.replace('-', '_') if keyword else nearest}?)"
    return ConfigError(f"{shown}: {err}{hint}")


def nearest_setting(name: str) -> str | None:
    """The setting whose name is nearest to `name` (one that is not a setting), if any."""
    dashed = name.replace("_", "-").lower()
    if dashed in BY_NAME:
        return None
    close = difflib.get_close_matches(dashed, [s.name for s in SETTINGS], n=1)
    return close[0] if close else None


def _set_failed(name: str, why: str) -> ConfigError:
    return ConfigError(f"CONFIG SET failed (possibly related to argument '{name}') - {why}")


def _tls_port(new: int, old: int) -> str | None:
    """fakekey has no TLS (Valkey without TLS support cannot listen on a TLS port)."""
    return "Unable to update TLS configuration. Check server logs." if new else None


def _rdma_port(new: int, old: int) -> str | None:
    return "No RDMA building support."


_BUILTIN_APPLIERS: dict[str, Applier] = {
    "tls-port": _tls_port, "rdma-port": _rdma_port, "maxclients": maxclients_applier,
}


def glob_nocase(pattern: str, name: str) -> bool:
    """Valkey's case-insensitive glob (stringmatchlen nocase) for setting and command names."""
    return glob_match(pattern.encode(), name.encode(), nocase=True)
