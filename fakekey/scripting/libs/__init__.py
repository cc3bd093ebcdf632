"""The Lua libraries Valkey preloads (cjson, cmsgpack, bit, struct): one installer each.

`INSTALLERS` is the registry the sandbox reads. Every time a Lua state is built (at the
first script, and again after SCRIPT FLUSH resets it), `LuaSandbox` calls each installer
in list order with a `LibraryContext`, *before* the globals are locked read-only; the
lock then protects what the installer added like every other table of the sandbox.

An installer adds one library:

    def install_bit(ctx: LibraryContext) -> None:
        ctx.set_global("bit", ctx.execute(BIT_LUA_SOURCE))   # a table built in Lua

    INSTALLERS.append(install_bit)

Rules for installers (they keep Python out of the scripts' reach):
- put only Lua values in the globals: tables and functions built in Lua
  (`ctx.execute(source)` runs trusted Lua code with the full standard library and
  returns its results), strings (bytes), numbers, booleans;
- a library written in Python goes through `ctx.wrap(fn)`: the script gets a Lua closure
  holding `fn` as an upvalue it cannot reach; `fn` receives Lua values (bytes, int,
  float, bool, None, lupa tables), returns a value or a tuple of values that Lua can
  hold, and raises `LuaLibraryError(message)` to raise a Lua error in the script
  (the message gets the script's position, like a C library's luaL_error);
- never return Python objects (str, list, dict, ...) to Lua: bytes, not str.

The four libraries are pure Lua chunks (`*.lua` beside this file, read by `sources`),
each returning its table; pure Lua keeps every Python object out of the scripts' reach.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fakekey.scripting.libs.sources import LIBRARIES, library_source

if TYPE_CHECKING:
    from fakekey.scripting.runtime import LibraryContext

Installer = Callable[["LibraryContext"], None]

INSTALLERS: list[Installer] = []


def _lua_library(name: str) -> Installer:
    """An installer that runs `<name>.lua` and makes its table the global `name`."""

    def install(ctx: LibraryContext) -> None:
        ctx.set_global(name, ctx.execute(library_source(name)))

    install.__name__ = f"install_{name}"
    return install


INSTALLERS.extend(_lua_library(name) for name in LIBRARIES)

__all__ = ["INSTALLERS", "Installer"]
