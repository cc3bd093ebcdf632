"""Lua scripting as Valkey has it, for EVAL and FCALL.

- `runtime`: the Lua 5.1 state in Valkey's sandbox (`LuaSandbox`): read-only globals,
  the `redis`/`server` API, conversions of script results, the kill hook.
- `bridge`: the server side: `redis.call` through the command registry, reply <-> Lua
  conversions, run rules (read-only scripts, writes), the worker thread, BUSY and
  SCRIPT KILL (`ScriptRunner`, `ScriptRun`, `CommandBridge`).
- `libs`: the registry of library installers (cjson, cmsgpack, bit, struct).

EVAL and SCRIPT are in `fakekey.commands.scripting`.
"""

from fakekey.scripting.bridge import CommandBridge, ScriptRun, ScriptRunner, kill_running_script, runner_of
from fakekey.scripting.runtime import LibraryContext, LuaLibraryError, LuaSandbox

__all__ = [
    "CommandBridge",
    "LibraryContext",
    "LuaLibraryError",
    "LuaSandbox",
    "ScriptRun",
    "ScriptRunner",
    "kill_running_script",
    "runner_of",
]
