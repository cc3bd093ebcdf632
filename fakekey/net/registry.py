"""The whole command table a server runs: the built-in families, then the emulated
modules' verbs, then COMMAND DOCS' data. Loaded once per process; each server then keeps
its own table of them (`server_commands`) and what it counts and caches on its own state."""

from __future__ import annotations

import importlib

from fakekey import commands, modules
from fakekey.commands import doc_data
from fakekey.config.settings import Config, ConfigError
from fakekey.core.registry import FAKEKEY_PREFIX, REGISTRY, Command, Registry


def load_all() -> Registry:
    """Import every family once, so that the registry is complete; the registry."""
    if not REGISTRY.complete:
        for name in commands.FAMILIES:
            importlib.import_module(f"fakekey.commands.{name}")
        for name in modules.FAMILIES:
            importlib.import_module(name)
        doc_data.attach(REGISTRY)  # COMMAND DOCS' argument trees, from fakekey/data
        REGISTRY.complete = True
    return REGISTRY


def is_fakekey_command(cmd: Command) -> bool:
    return cmd.name.startswith(FAKEKEY_PREFIX)


# The tables of servers that rename nothing, by what they leave out (FAKEKEY.*, each
# module's verbs) and the declarations' size: read-only once made, as the declarations
# are, so every such server of the process shares one; made per server, the table cost
# more than the rest of a new server together (bench/instances.py).
_shared_tables: dict[tuple[int, bool, tuple[bool, ...]], Registry] = {}


def _shared_table(declared: Registry, config: Config) -> Registry:
    key = (declared.size, bool(config["enable-fakekey-commands"]),
           tuple(bool(config[switch]) for switch in declared.module_switches.values()))
    table = _shared_tables.get(key)
    if table is None:
        table = _shared_tables[key] = _filtered(declared, config)
    return table


def _filtered(declared: Registry, config: Config) -> Registry:
    """The declarations less FAKEKEY.* (enable-fakekey-commands no) and less the verbs of
    the modules `config` turns off."""
    table = declared.view()
    if not config["enable-fakekey-commands"]:
        table.remove(is_fakekey_command)
    if declared.modules_switched_off(config):
        table = table.with_modules(config)
    return table


def server_commands(config: Config) -> Registry:
    """The table of a server with this configuration (Valkey's server.commands): every
    declared command, less FAKEKEY.* with enable-fakekey-commands no and less the
    verbs of each emulated module its setting turns off (enable-emq-module no and
    enable-stack-modules no: a plain Valkey's table), renamed or removed by its rename-command lines in their order."""
    declared = load_all()
    modules_off = declared.modules_switched_off(config)
    if config["enable-fakekey-commands"] and not modules_off and not config.directives.renames:
        return declared  # every command as declared: no table of its own to make
    if not config.directives.renames:
        return _shared_table(declared, config)
    table = _filtered(declared, config)
    for old, new in config.directives.renames:
        try:
            table.rename(old, new)
        except ValueError as err:
            raise ConfigError(str(err)) from None
    return table
