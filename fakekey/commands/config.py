"""CONFIG GET, SET, RESETSTAT, REWRITE and HELP: the settings themselves, their defaults and
validation, are in fakekey/config/settings.py."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import SYNTAX, help_lines, option_allows
from fakekey.config.rewrite import rewrite
from fakekey.config.settings import ConfigError
from fakekey.core.client import Client
from fakekey.core.registry import command, container
from fakekey.resp.replies import OK, ReplyError

if TYPE_CHECKING:
    from fakekey.core.state import ServerState

log = logging.getLogger("fakekey.net.server")

G = "server"


# --- CONFIG -------------------------------------------------------------------------------

container("config", group=G, since="2.0.0", summary="Holds the server configuration commands.")

CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Print this help.",
]
CONFIG_ADMIN = "admin noscript loading stale"
ALL_NODES = "request_policy:all_nodes response_policy:all_succeeded"


@command("config|get", -3, CONFIG_ADMIN, acl="dangerous", since="2.0.0",
         complexity="O(N) when N is the number of configuration parameters provided",
         summary="Reads the settings matching one or more glob patterns.")
def config_get(c: Client, argv: list[bytes]) -> Any:
    patterns = [a.decode("utf-8", "replace") for a in argv[2:]]
    found = c.state.config.get(patterns)
    return {name.encode(): value.encode() for name, value in found.items()}


@command("config|set", -4, CONFIG_ADMIN, acl="dangerous", since="2.0.0", tips=ALL_NODES,
         complexity="O(N) when N is the number of configuration parameters provided",
         summary="Changes one or more settings, all of them or none.")
def config_set(c: Client, argv: list[bytes]) -> Any:
    if len(argv) % 2:
        raise SYNTAX
    pairs = [
        (argv[i].decode("utf-8", "replace"), argv[i + 1].decode("utf-8", "surrogateescape"))
        for i in range(2, len(argv), 2)
    ]
    try:
        c.state.config.set_many(pairs, option_allows(c, "enable-protected-configs"))
    except ConfigError as err:
        raise ReplyError(f"ERR {err}") from None
    return OK


@command("config|resetstat", 2, CONFIG_ADMIN, acl="dangerous", since="2.0.0", tips=ALL_NODES,
         summary="Zeroes the statistics INFO reports.")
def config_resetstat(c: Client, argv: list[bytes]) -> Any:
    reset_statistics(c.state)
    return OK


def reset_statistics(state: ServerState) -> None:
    """What CONFIG RESETSTAT zeroes: server counters, error counts, per-command stats."""
    state.stats.clear()
    state.error_stats.clear()
    state.commands_processed = 0
    state.keyspace_hits = state.keyspace_misses = 0
    state.expiry.reset_stats()
    state.loop_metrics.reset()
    state.eviction_exceeded_us = state.eviction_exceeded_at = 0
    for stats in state.command_stats:
        if stats is not None:  # a command's counters are made at its first count
            stats.reset()


@command("config|rewrite", 2, CONFIG_ADMIN, acl="dangerous", since="2.8.0", tips=ALL_NODES,
         summary="Writes the running settings back to the configuration file.")
def config_rewrite(c: Client, argv: list[bytes]) -> Any:
    config = c.state.config
    if not config.config_file:  # an in-process server, or fakekey-server without a file
        raise ReplyError("ERR The server is running without a config file")
    rewrite_config_file(c.state)
    return OK


def rewrite_config_file(state: ServerState, force_all: bool = False) -> None:
    """The running settings into the config file (fakekey/config/rewrite.py); the error
    reply as Valkey's when the file cannot be written."""
    try:
        rewrite(state.config, state.config.config_file, state.users.file_text().splitlines(),
                force_all)
    except OSError as err:
        log.warning("CONFIG REWRITE failed: %s", err.strerror)
        raise ReplyError(f"ERR Rewriting config file: {err.strerror}") from None
    log.info("CONFIG REWRITE executed with success.")


@command("config|help", 2, "loading stale", since="5.0.0",
         summary="Describes the CONFIG subcommands.")
def config_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(CONFIG_HELP)
