"""The Lua sources of the libraries Valkey gives scripts: cjson, cmsgpack, bit, struct.

Each `<name>.lua` next to this module is a chunk of plain Lua 5.1 that returns the library
table and creates no global. Run it where the base library is visible (cjson reads
`newproxy` while it loads, or takes it as the chunk's first argument, to make
`cjson.null` a userdata); the returned table holds only Lua values.
"""

from __future__ import annotations

from importlib import resources

LIBRARIES = ("cjson", "cmsgpack", "bit", "struct")


def library_source(name: str) -> str:
    """The Lua source of library `name` (one of `LIBRARIES`)."""
    if name not in LIBRARIES:
        raise ValueError(f"unknown Lua library {name!r}")
    return resources.files(__package__).joinpath(f"{name}.lua").read_text(encoding="utf-8")
