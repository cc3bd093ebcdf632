"""The whole command table a server runs: the built-in families, then the emulated
modules' verbs, then COMMAND DOCS' data. Loaded once per process; each server then keeps
what it counts and caches on its own state."""

from __future__ import annotations

import importlib

from fakekey import commands, modules
from fakekey.commands import doc_data
from fakekey.core.registry import REGISTRY, Registry


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
