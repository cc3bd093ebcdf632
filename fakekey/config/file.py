"""The one reader of valkey.conf-style text, as valkey-server reads it (config.c
loadServerConfig): one text made of the config file, the config text on standard input and
the command line's options, split into lines; `include` reads more files where it stands.

A line is split as Valkey splits it (sdssplitargs: quotes, \\xHH and the other escapes),
so `requirepass "a\\x41"` sets the password `aA`. Each directive keeps its line number and
text, for the report of a line the server refuses."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from typing import NamedTuple

from fakekey.config.settings import ConfigError
from fakekey.resp.splitargs import split_args

Directive = tuple[str, list[str]]  # (name, words): what Server(config=...) takes


class ConfigLine(NamedTuple):
    """One directive as read: its lower-case name, its words, and where it stands (the
    number counts the lines of the text it was read with: an included file counts its
    own, the command line's options follow the file's and stdin's)."""

    name: str
    words: list[str]
    number: int
    text: str  # the line, trimmed, as Valkey quotes it in its report

    @property
    def directive(self) -> Directive:
        return self.name, self.words


class LineError(ConfigError):
    """A line the server refuses, reported with its number and text."""

    def __init__(self, line: ConfigLine | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


class UnreadableFile(ConfigError):
    """A config file (or an included one) that cannot be opened: Valkey logs it and exits."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"Fatal error, can't open config file '{path}': {why}")


def read_file_text(path: str) -> str:
    """A config file's text; a directory reads as empty, as C's fgets finds it."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            return fh.read()
    except IsADirectoryError:
        return ""
    except OSError as err:
        raise UnreadableFile(path, err.strerror or str(err)) from None


def included_text(pattern: str) -> str:
    """`include PATH`: the file, or with a wildcard every file it matches in name order
    (none is no error, so an empty conf.d directory can be included)."""
    if not any(ch in pattern for ch in "*?["):
        return read_file_text(pattern)
    return "".join(read_file_text(path) for path in sorted(glob.glob(pattern)))


def config_lines(text: str) -> Iterator[ConfigLine]:
    """The directives of a text, in order, an `include` replaced by the included text's
    directives as it is reached (a file it cannot open stops the reading there)."""
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip(" \t\r\n")
        if not line or line.startswith("#"):
            continue
        words = split_args(line.encode("utf-8", "surrogateescape"))
        if words is None:
            raise LineError(ConfigLine("", [], number, line), "Unbalanced quotes in configuration line")
        if not words:
            continue
        name = words[0].lower().decode("utf-8", "surrogateescape")  # ASCII only, as sdstolower
        args = [word.decode("utf-8", "surrogateescape") for word in words[1:]]
        if name == "include" and len(args) == 1:
            yield from config_lines(included_text(args[0]))
        else:
            yield ConfigLine(name, args, number, line)
