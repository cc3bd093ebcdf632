"""The config-file directives that are no settings, taken as Valkey 9.1.2's config.c takes
them (loadServerConfigFromString): the deprecated names it ignores, `rename-command`,
`loadmodule`, module configurations (`name.with.dot value`) and `sentinel`. `include` is
the reader's (fakekey/config/file.py), `user` the ACL's (fakekey/core/users.py).

fakekey loads no shared library: a `loadmodule` line, or a module configuration, makes the
start fail as Valkey's fails on a module it cannot load (`startup_refusal`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

# Valkey's deprecated_configs: accepted with exactly one argument, and ignored
DEPRECATED = frozenset({
    "list-max-ziplist-entries", "list-max-ziplist-value", "lua-replicate-commands",
    "io-threads-do-reads", "dynamic-hz", "events-per-io-thread",
})
BAD_DIRECTIVE = "Bad directive or wrong number of arguments"
_ELF_MAGIC = b"\x7fELF"
_ELF_HEADER_SIZE = 64  # what dlopen reads first (a 64-bit ELF header)


class StartupRefused(Exception):
    """The server cannot start with these directives; `lines` are what valkey-server logs
    (as warnings) before it exits."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__(" ".join(lines))
        self.lines = lines


@dataclass
class Directives:
    """What a config file said besides the settings, in the order it said it."""

    renames: list[tuple[str, str]] = field(default_factory=list)  # rename-command OLD NEW
    modules: list[list[str]] = field(default_factory=list)  # loadmodule PATH ARGS...
    module_configs: dict[str, str] = field(default_factory=dict)  # module.setting value

    def take(self, name: str, words: list[str]) -> bool:
        """Record (or ignore) a directive of these kinds; False when `name` is none of
        them. A malformed one raises ValueError with Valkey's text."""
        if name in DEPRECATED and len(words) == 1:
            return True
        if name == "rename-command" and len(words) == 2:
            self.renames.append((words[0], words[1]))
            return True
        if name == "loadmodule" and words:
            self.modules.append(list(words))
            return True
        if "." in name:
            if not words:
                raise ValueError("Module config specified without value")
            self.module_configs[name] = " ".join(words)
            return True
        if name == "sentinel":
            if words:  # a lone `sentinel` is main()'s business: ignored here
                raise ValueError("sentinel directive while not in sentinel mode")
            return True
        return False


def is_directive(name: str) -> bool:
    """Whether Valkey takes `name VALUE` in a config file without being a setting."""
    return name in DEPRECATED or name in ("rename-command", "loadmodule", "user")


def startup_refusal(directives: Directives) -> list[str]:
    """What valkey-server logs as it loads the modules, then aborts: the first module it
    cannot load (fakekey loads none), else the module configurations no module took.
    Empty when there is nothing to load."""
    if directives.modules:
        path = directives.modules[0][0]
        return [f"Module {path} failed to load: {_load_failure(path)}",
                f"Can't load module from {path}: server aborting"]
    if directives.module_configs:
        return [*(f"Unused Module Configuration: {name}" for name in directives.module_configs),
                "Module Configuration detected without loadmodule directive or no ApplyConfig "
                "call: aborting"]
    return []


def _load_failure(path: str) -> str:
    """Why the module at `path` does not load: Valkey's own check (execute permission),
    then what dlopen would say of the file; a real shared library fakekey cannot load."""
    try:
        if os.path.exists(path) and not os.stat(path).st_mode & 0o111:
            return "It does not have execute permissions."
        if "/" not in path:  # dlopen looks for a bare name in the library path only
            raise FileNotFoundError(2, os.strerror(2))
        with open(path, "rb") as fh:
            header = fh.read(_ELF_HEADER_SIZE)
    except IsADirectoryError:
        return f"{path}: cannot read file data: Is a directory"
    except OSError as err:
        return f"{path}: cannot open shared object file: {err.strerror}"
    if len(header) < _ELF_HEADER_SIZE:
        return f"{path}: file too short"
    if not header.startswith(_ELF_MAGIC):
        return f"{path}: invalid ELF header"
    return f"{path}: fakekey loads no shared library"
