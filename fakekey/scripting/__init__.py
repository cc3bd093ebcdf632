"""Lua scripting as Valkey has it, for EVAL and FCALL.

- `runtime`: the Lua 5.1 state in Valkey's sandbox (`LuaSandbox`): read-only globals,
  the `redis`/`server` API, conversions of script results, the kill hook.
- `bridge`: the server side: `redis.call` through the command registry, reply <-> Lua
  conversions, run rules (read-only scripts, writes), the worker greenlet, BUSY and
  SCRIPT KILL (`ScriptRunner`, `ScriptRun`, `CommandBridge`).
- `scripts`: EVAL's engine (its script cache); `libraries`: FUNCTION's.
- `libs`: the registry of library installers (cjson, cmsgpack, bit, struct).

EVAL, SCRIPT, FUNCTION and FCALL are in `fakekey.commands`. The package imports none of
its modules: a compiled module that names one of them loads this package first.
"""
