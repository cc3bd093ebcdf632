"""The one reader of valkey.conf-style text: the config file, and the config text given on
standard input."""

from __future__ import annotations

from collections.abc import Iterable

from fakekey.config.settings import ConfigError
from fakekey.resp.splitargs import split_args

Directive = tuple[str, list[str]]


def config_lines(lines: Iterable[str]) -> list[Directive]:
    """Directives of valkey.conf-style text: `name value...` per line, # comments. Each
    line is split as Valkey splits it (sdssplitargs: quotes, \\xHH and the other escapes),
    so `requirepass "a\\x41"` sets the password `aA`."""
    directives: list[Directive] = []
    for line in lines:
        line = line.strip(" \t\r\n")
        if not line or line.startswith("#"):
            continue
        words = split_args(line.encode("utf-8", "surrogateescape"))
        if words is None:
            raise ConfigError("Unbalanced quotes in configuration line")
        if not words:
            continue
        text = [word.decode("utf-8", "surrogateescape") for word in words]
        directives.append((text[0].lower(), text[1:]))
    return directives


def read_config_file(path: str) -> list[Directive]:
    with open(path, encoding="utf-8", errors="surrogateescape") as fh:
        return config_lines(fh)
