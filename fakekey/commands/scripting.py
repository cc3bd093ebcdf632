"""Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT.

The script cache (sha1 -> script) and the EVAL Lua state live in `EvalScripts`
(`state.scripts`, made on first use); running a script is `fakekey.scripting.bridge`'s
job, shared with FCALL.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from fakekey.commands.args import parse_int
from fakekey.core.client import Client
from fakekey.core.registry import KeySpec, command, container
from fakekey.core.replicas import NOREPLICAS
from fakekey.resp.replies import OK, ReplyError, Simple
from fakekey.scripting.bridge import ScriptRun, kill_running_script
from fakekey.scripting.scripts import EvalScripts, Script, scripts_of

if TYPE_CHECKING:
    pass

G = "scripting"

NOSCRIPT = ReplyError("NOSCRIPT No matching script.")
TOO_MANY_KEYS = ReplyError("ERR Number of keys can't be greater than number of args")
NEGATIVE_KEYS = ReplyError("ERR Number of keys can't be negative")
WRITE_FLAG_ON_RO = ReplyError("ERR Can not execute a script with write flag using *_ro command.")



# --- EVAL family -------------------------------------------------------------------------------

_EVAL_KEYS = KeySpec(3, 0, 1, ("RW", "access", "update"), numkeys_at=2,
                     notes="We cannot tell how the keys will be used so we assume the worst, RW and UPDATE")
_EVAL_RO_KEYS = dataclasses.replace(
    _EVAL_KEYS, flags=("RO", "access"),
    notes="We cannot tell how the keys will be used so we assume the worst, RO and ACCESS")
_EVALSHA_KEYS = dataclasses.replace(_EVAL_KEYS, notes="")
_EVALSHA_RO_KEYS = dataclasses.replace(_EVAL_RO_KEYS, notes="")
_EVAL_FLAGS = "noscript stale skip_monitor no_mandatory_keys movablekeys"
_DEPENDS = "Depends on the script that is executed."


@command("eval", -3, _EVAL_FLAGS, keys=_EVAL_KEYS, acl="scripting", group=G, since="2.6.0",
         complexity=_DEPENDS, summary="Runs a Lua script on the server.")
def eval_(c: Client, argv: list[bytes]) -> Any:
    return run_eval(c, argv, by_sha=False, read_only=False)


@command("evalsha", -3, _EVAL_FLAGS, keys=_EVALSHA_KEYS, acl="scripting", group=G,
         since="2.6.0", complexity=_DEPENDS, summary="Runs a cached Lua script, named by its SHA1.")
def evalsha(c: Client, argv: list[bytes]) -> Any:
    return run_eval(c, argv, by_sha=True, read_only=False)


@command("eval_ro", -3, "readonly " + _EVAL_FLAGS, keys=_EVAL_RO_KEYS, acl="scripting", group=G,
         since="7.0.0", complexity=_DEPENDS, summary="Runs a Lua script that may not write.")
def eval_ro(c: Client, argv: list[bytes]) -> Any:
    return run_eval(c, argv, by_sha=False, read_only=True)


@command("evalsha_ro", -3, "readonly " + _EVAL_FLAGS, keys=_EVALSHA_RO_KEYS, acl="scripting",
         group=G, since="7.0.0", complexity=_DEPENDS,
         summary="Runs a cached Lua script that may not write, named by its SHA1.")
def evalsha_ro(c: Client, argv: list[bytes]) -> Any:
    return run_eval(c, argv, by_sha=True, read_only=True)


def run_eval(c: Client, argv: list[bytes], *, by_sha: bool, read_only: bool) -> Any:
    if by_sha and len(argv[1]) != 40:
        raise NOSCRIPT
    numkeys = parse_int(argv[2])  # native digits: cheaper than a lookup of the new string
    if numkeys > len(argv) - 3:
        raise TOO_MANY_KEYS
    if numkeys < 0:
        raise NEGATIVE_KEYS
    # typed (state.scripts is Any): compiled, their attributes are read natively
    scripts: EvalScripts = c.state.scripts or scripts_of(c.state)
    script: Script | None
    if by_sha:
        sha = argv[1]
        script = scripts.cache.get(sha)
        if script is None:
            sha = sha.lower()
            script = scripts.cache.get(sha)
            if script is None:
                raise NOSCRIPT
    else:
        sha, script = scripts.load(argv[1], from_eval=True)
    if read_only and script.refused_read_only:
        raise WRITE_FLAG_ON_RO
    if script.refused_read_only and c.state.too_few_replicas:  # one that may write (in EXEC)
        raise NOREPLICAS
    run = ScriptRun(scripts.bridge, c, script.fn, numkeys, argv[3:], read_only or script.no_writes)
    if script.allow_oom:
        run.allow_oom = True
    if script.straight:
        run.straight = True
    reply = scripts.runner.execute(run)
    if scripts.lru:  # only EVAL adds scripts there
        scripts.used(sha)
    return reply


# --- SCRIPT ------------------------------------------------------------------------------------

container("script", group=G, since="2.6.0", summary="Manages the server's Lua script cache.")

_SCRIPT_HELP = """SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:
DEBUG (YES|SYNC|NO) [<engine_name>]
    Set the debug mode for subsequent scripts executed of the specified engine.
    Default engine name: 'lua'
EXISTS <sha1> [<sha1> ...]
    Return information about the existence of the scripts in the script cache.
FLUSH [ASYNC|SYNC]
    Flush the Lua scripts cache. Very dangerous on replicas.
    When called without the optional mode argument, the behavior is determined
     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:
    * ASYNC: Asynchronously flush the scripts cache.
    * SYNC: Synchronously flush the scripts cache.
KILL
    Kill the currently executing Lua script.
LOAD <script>
    Load a script into the scripts cache without executing it.
SHOW <sha1>
    Show a script from the scripts cache.
HELP
    Print this help.""".splitlines()


@command("script|debug", -3, "noscript", acl="scripting", since="3.2.0",
         summary="Sets the debug mode of later scripts; fakekey has no Lua debugger.")
def script_debug(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 4:
        raise ReplyError("ERR unknown subcommand or wrong number of arguments for 'DEBUG'. Try SCRIPT HELP.")
    if len(argv) == 4 and argv[3].lower() != b"lua":
        raise ReplyError(b"ERR No scripting engine found with name '" + argv[3] + b"' to enable debug")
    mode = argv[2].upper()
    if mode == b"NO":
        return OK
    if mode in (b"YES", b"SYNC"):
        # what Valkey answers for an engine without a debugger
        raise ReplyError("ERR The scripting engine 'LUA' does not support interactive script debugging")
    raise ReplyError("ERR Use SCRIPT DEBUG YES/SYNC/NO")


@command("script|exists", -3, "noscript stale", acl="scripting", since="2.6.0",
         complexity="O(N) with N being the number of scripts to check (so checking a single "
         "script is an O(1) operation).",
         tips="request_policy:all_shards response_policy:agg_logical_and",
         summary="Tells for each SHA1 whether its script is in the cache.")
def script_exists(c: Client, argv: list[bytes]) -> Any:
    scripts = c.state.scripts
    if scripts is None:
        return [0] * (len(argv) - 2)
    return [1 if scripts.lookup(sha) is not None else 0 for sha in argv[2:]]


@command("script|flush", -2, "noscript stale", acl="scripting", since="2.6.0",
         complexity="O(N) with N being the number of scripts in cache",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Empties the script cache and resets the Lua state.")
def script_flush(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 3 or (len(argv) == 3 and argv[2].upper() not in (b"SYNC", b"ASYNC")):
        raise ReplyError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    if c.state.scripts is not None:
        c.state.scripts.flush()
    return OK


@command("script|help", 2, "loading stale", acl="scripting", since="5.0.0",
         summary="Lists the SCRIPT subcommands.")
def script_help(c: Client, argv: list[bytes]) -> Any:
    return [Simple(line.encode()) for line in _SCRIPT_HELP]


@command("script|kill", 2, "noscript allow_busy", acl="scripting", since="2.6.0",
         tips="request_policy:all_shards response_policy:one_succeeded",
         summary="Stops the running script, unless it has written to the data.")
def script_kill(c: Client, argv: list[bytes]) -> Any:
    return kill_running_script(c.state, from_eval=True)


@command("script|load", 3, "noscript stale", acl="scripting", since="2.6.0",
         complexity="O(N) with N being the length in bytes of the script body.",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Compiles a script into the cache without running it; answers its SHA1.")
def script_load(c: Client, argv: list[bytes]) -> Any:
    sha, _ = scripts_of(c.state).load(argv[2], from_eval=False)
    return sha


@command("script|show", 3, "noscript stale", acl="scripting", since="8.0.0", complexity="O(1).",
         summary="Answers the body of a cached script.")
def script_show(c: Client, argv: list[bytes]) -> Any:
    scripts = c.state.scripts
    script = scripts.lookup(argv[2]) if scripts is not None and len(argv[2]) == 40 else None
    if script is None:
        raise NOSCRIPT
    return script.body
