"""Functions: FCALL, FCALL_RO and FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS/KILL/HELP.

The libraries live in `fakekey.scripting.libraries.Libraries` (`state.functions`, made on
first use); a function runs through the same runner as EVAL (`scripting/bridge.py`), so
a long one makes the server BUSY and FUNCTION KILL stops it.
"""

from __future__ import annotations

from typing import Any

from fakekey.codecs.glob import glob_match
from fakekey.commands.args import try_int
from fakekey.core.client import Client
from fakekey.core.registry import KeySpec, command, container
from fakekey.core.replicas import NOREPLICAS
from fakekey.resp.replies import OK, ReplyError, SetReply, Simple
from fakekey.scripting.bridge import BUSY_EVAL, kill_running_script
from fakekey.scripting.libraries import (
    ENGINE_NAME,
    FLAG_ORDER,
    Function,
    FunctionRun,
    Libraries,
    Library,
    LibraryError,
    libraries_of,
)

G = "scripting"

FUNCTION_NOT_FOUND = ReplyError("ERR Function not found")
BAD_NUMKEYS = ReplyError("ERR Bad number of keys provided")
TOO_MANY_KEYS = ReplyError("ERR Number of keys can't be greater than number of args")
NEGATIVE_KEYS = ReplyError("ERR Number of keys can't be negative")
WRITE_FLAG_ON_RO = ReplyError("ERR Can not execute a script with write flag using *_ro command.")
RESTORE_POLICIES = ("FLUSH", "APPEND", "REPLACE")


def library_error(err: LibraryError) -> ReplyError:
    return ReplyError(b"ERR " + err.message)


def syntax_error(argv: list[bytes]) -> ReplyError:
    """addReplySubcommandSyntaxError: the subcommand as sent, the command upper-cased."""
    return ReplyError(b"ERR unknown subcommand or wrong number of arguments for '" + argv[1][:128]
                      + b"'. Try " + argv[0].upper() + b" HELP.")


# --- FCALL ---------------------------------------------------------------------------------------

_NOTES = "We cannot tell how the keys will be used so we assume the worst, {}"
_FCALL_KEYS = KeySpec(3, 0, 1, ("RW", "access", "update"), numkeys_at=2, notes=_NOTES.format("RW and UPDATE"))
_FCALL_RO_KEYS = KeySpec(3, 0, 1, ("RO", "access"), numkeys_at=2, notes=_NOTES.format("RO and ACCESS"))
_FCALL_FLAGS = "noscript stale skip_monitor no_mandatory_keys movablekeys"
_DEPENDS = "Depends on the function that is executed."


@command("fcall", -3, _FCALL_FLAGS, keys=_FCALL_KEYS, acl="scripting", group=G, since="7.0.0",
         complexity=_DEPENDS, summary="Calls a function of a loaded library.")
def fcall(c: Client, argv: list[bytes]) -> Any:
    return run_function(c, argv, read_only=False)


@command("fcall_ro", -3, "readonly " + _FCALL_FLAGS, keys=_FCALL_RO_KEYS, acl="scripting", group=G,
         since="7.0.0", complexity=_DEPENDS, summary="Calls a function flagged no-writes.")
def fcall_ro(c: Client, argv: list[bytes]) -> Any:
    return run_function(c, argv, read_only=True)


def run_function(c: Client, argv: list[bytes], *, read_only: bool) -> Any:
    """FCALL/FCALL_RO <function> <numkeys> [key ...] [arg ...]: checked in Valkey's order."""
    # typed (state.functions is Any): compiled, the engine's attributes are read natively
    engine: Libraries | None = c.state.functions
    if engine is None:
        raise FUNCTION_NOT_FOUND
    function = engine.current.lookup(argv[1])
    if function is None:
        raise FUNCTION_NOT_FOUND
    numkeys = try_int(argv[2])  # native digits: cheaper than a lookup of the new string
    if numkeys is None:
        raise BAD_NUMKEYS
    if numkeys > len(argv) - 3:
        raise TOO_MANY_KEYS
    if numkeys < 0:
        raise NEGATIVE_KEYS
    if read_only and not function.no_writes:
        raise WRITE_FLAG_ON_RO
    if not function.no_writes and c.state.too_few_replicas:  # one that may write (in EXEC)
        raise NOREPLICAS
    return engine.runner.execute(FunctionRun.of(engine, c, function, argv, numkeys))


# --- FUNCTION ------------------------------------------------------------------------------------

container("function", group=G, since="7.0.0", summary="Manages the server's function libraries.")

_ALL_SHARDS = "request_policy:all_shards response_policy:all_succeeded"

_FUNCTION_HELP = """FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:
LOAD [REPLACE] <FUNCTION CODE>
    Create a new library with the given library name and code.
DELETE <LIBRARY NAME>
    Delete the given library.
LIST [LIBRARYNAME PATTERN] [WITHCODE]
    Return general information on all the libraries:
    * Library name
    * The engine used to run the Library
    * Functions list
    * Library code (if WITHCODE is given)
    It also possible to get only function that matches a pattern using LIBRARYNAME argument.
STATS
    Return information about the current function running:
    * Function name
    * Command used to run the function
    * Duration in MS that the function is running
    If no function is running, return nil
    In addition, returns a list of available engines.
KILL
    Kill the current running function.
FLUSH [ASYNC|SYNC]
    Delete all the libraries.
    When called without the optional mode argument, the behavior is determined by the
    lazyfree-lazy-user-flush configuration directive. Valid modes are:
    * ASYNC: Asynchronously flush the libraries.
    * SYNC: Synchronously flush the libraries.
DUMP
    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command
RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]
    Restore the libraries represented by the given payload, it is possible to give a restore policy to
    control how to handle existing libraries (default APPEND):
    * FLUSH: delete all existing libraries.
    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.
    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old
      libraries with the new libraries (notice that even on this option there is a chance of failure
      in case of functions name collision with another library).
HELP
    Print this help.""".splitlines()


@command("function|load", -3, "write denyoom noscript", acl="scripting", since="7.0.0", tips=_ALL_SHARDS,
         complexity="O(1) (considering compilation time is redundant)",
         summary="Loads a library of functions from its code.")
def function_load(c: Client, argv: list[bytes]) -> Any:
    replace = False
    for option in argv[2:-1]:
        if option.lower() != b"replace":
            raise ReplyError(b"ERR Unknown option given: " + option)
        replace = True
    try:
        name = libraries_of(c.state).create(argv[-1], replace=replace)
    except LibraryError as err:
        raise library_error(err) from None
    c.state.dirty += 1
    return name


@command("function|delete", 3, "write noscript", acl="scripting", since="7.0.0", tips=_ALL_SHARDS,
         summary="Deletes a library and its functions.")
def function_delete(c: Client, argv: list[bytes]) -> Any:
    engine = c.state.functions
    if engine is None or not engine.delete(argv[2]):
        raise ReplyError("ERR Library not found")
    c.state.dirty += 1
    return OK


@command("function|flush", -2, "write noscript", acl="scripting", since="7.0.0", tips=_ALL_SHARDS,
         complexity="O(N) where N is the number of functions deleted",
         summary="Deletes every library.")
def function_flush(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 3:
        raise syntax_error(argv)
    if len(argv) == 3 and argv[2].upper() not in (b"SYNC", b"ASYNC"):
        raise ReplyError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    if c.state.functions is not None:
        c.state.functions.flush()
    c.state.dirty += 1
    return OK


@command("function|list", -2, "noscript", acl="scripting", since="7.0.0", tips="nondeterministic_output_order",
         complexity="O(N) where N is the number of functions",
         summary="Describes the libraries, their functions and optionally their code.")
def function_list(c: Client, argv: list[bytes]) -> Any:
    with_code = False
    pattern: bytes | None = None
    i = 2
    while i < len(argv):
        arg = argv[i]
        if not with_code and arg.lower() == b"withcode":
            with_code = True
        elif pattern is None and arg.lower() == b"libraryname":
            if i >= len(argv) - 1:
                raise ReplyError("ERR library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            raise ReplyError(b"ERR Unknown argument " + arg)
        i += 1
    engine = c.state.functions
    libraries = engine.current.libraries.values() if engine is not None else ()
    return [describe_library(lib, with_code) for lib in libraries
            if pattern is None or glob_match(pattern, lib.name, nocase=True)]


def describe_library(lib: Library, with_code: bool) -> dict[bytes, Any]:
    out: dict[bytes, Any] = {
        b"library_name": lib.name,
        b"engine": ENGINE_NAME,
        b"functions": [describe_function(fn) for fn in lib.functions.values()],
    }
    if with_code:
        out[b"library_code"] = lib.code
    return out


def describe_function(fn: Function) -> dict[bytes, Any]:
    return {
        b"name": fn.name,
        b"description": fn.description,
        b"flags": SetReply(Simple(flag.encode()) for flag in FLAG_ORDER if flag in fn.flags),
    }


@command("function|dump", 2, "noscript", acl="scripting", since="7.0.0",
         complexity="O(N) where N is the number of functions",
         summary="Serializes every library into a payload FUNCTION RESTORE reads.")
def function_dump(c: Client, argv: list[bytes]) -> Any:
    return libraries_of(c.state).dump()


@command("function|restore", -3, "write denyoom noscript", acl="scripting", since="7.0.0", tips=_ALL_SHARDS,
         complexity="O(N) where N is the number of functions on the payload",
         summary="Loads the libraries of a FUNCTION DUMP payload.")
def function_restore(c: Client, argv: list[bytes]) -> Any:
    if len(argv) > 4:
        raise syntax_error(argv)
    policy = "APPEND"
    if len(argv) == 4:
        policy = argv[3].decode("latin-1").upper()
        if policy not in RESTORE_POLICIES:
            raise ReplyError("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    try:
        libraries_of(c.state).restore(argv[2], policy)
    except LibraryError as err:
        raise library_error(err) from None
    c.state.dirty += 1
    return OK


@command("function|stats", 2, "noscript allow_busy", acl="scripting", since="7.0.0",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Tells which function is running, and how many libraries and functions exist.")
def function_stats(c: Client, argv: list[bytes]) -> Any:
    run = c.state.busy_script
    if run is not None and not run.as_function:
        raise BUSY_EVAL  # an EVAL keeps the server busy
    engine = c.state.functions
    libraries = engine.current if engine is not None else None
    counts = {
        b"libraries_count": len(libraries.libraries) if libraries is not None else 0,
        b"functions_count": libraries.functions_count if libraries is not None else 0,
    }
    return {
        b"running_script": running_function(run) if isinstance(run, FunctionRun) else None,
        b"engines": {ENGINE_NAME: counts},
    }


def running_function(run: FunctionRun) -> dict[bytes, Any]:
    return {b"name": run.funcname, b"command": list(run.argv), b"duration_ms": run.duration_ms()}


@command("function|kill", 2, "noscript allow_busy", acl="scripting", since="7.0.0",
         tips="request_policy:all_shards response_policy:one_succeeded",
         summary="Stops the running function, unless it has written to the data.")
def function_kill(c: Client, argv: list[bytes]) -> Any:
    return kill_running_script(c.state, from_eval=False)


@command("function|help", 2, "loading stale", acl="scripting", since="7.0.0",
         summary="Lists the FUNCTION subcommands.")
def function_help(c: Client, argv: list[bytes]) -> Any:
    return [Simple(line.encode()) for line in _FUNCTION_HELP]
