"""MODULE: the modules this server has. fakekey loads no module from a file; it lists the
Lua engine (as Valkey 9 does) and, unless `enable-emq-module no`, the emulated `trafikey`
module that serves the EMQ.* verbs."""

from __future__ import annotations

from typing import Any

from fakekey.commands.args import help_lines
from fakekey.core.client import Client
from fakekey.core.registry import command, container
from fakekey.resp.replies import ReplyError

G = "server"
LOADING = "admin noscript no_async_loading"

MODULE_HELP = [
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Print this help.",
]

container("module", group=G, since="4.0.0", summary="A container for module commands.")


@command("module|help", 2, "loading stale", since="5.0.0", complexity="O(1)",
         summary="Describes the MODULE subcommands.")
def module_help(c: Client, argv: list[bytes]) -> Any:
    return help_lines(MODULE_HELP)


@command("module|list", 2, "admin noscript", acl="dangerous", since="4.0.0",
         tips="nondeterministic_output_order",
         complexity="O(N) where N is the number of loaded modules.",
         summary="Lists the loaded modules: name, version, path and arguments.")
def module_list(c: Client, argv: list[bytes]) -> Any:
    return c.state.module_list()


LOADING_FAILED = ReplyError("ERR Error loading the extension. Please check the server logs.")
PROTECTED = "enable-module-command"  # what allows LOAD, LOADEX and UNLOAD (Valkey's PROTECTED)


@command("module|load", -3, LOADING, acl="dangerous", since="4.0.0", protected_by=PROTECTED,
         summary="Loads a module from a shared library (fakekey loads none).")
def module_load(c: Client, argv: list[bytes]) -> Any:
    raise LOADING_FAILED  # fakekey cannot load a shared library


@command("module|loadex", -3, LOADING, acl="dangerous", since="7.0.0", protected_by=PROTECTED,
         summary="Loads a module with configurations and arguments (fakekey loads none).")
def module_loadex(c: Client, argv: list[bytes]) -> Any:
    raise LOADING_FAILED


@command("module|unload", 3, LOADING, acl="dangerous", since="4.0.0", protected_by=PROTECTED,
         summary="Unloads a module (the emulated ones stay).")
def module_unload(c: Client, argv: list[bytes]) -> Any:
    loaded = {m[b"name"] for m in c.state.module_list()}
    if argv[2] not in loaded:
        raise ReplyError("ERR Error unloading module: no such module with that name")
    raise ReplyError("ERR Error unloading module: operation not possible.")
