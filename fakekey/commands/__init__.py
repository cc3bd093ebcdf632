"""Command families, one module each; importing a module registers its commands."""

import importlib

from fakekey.commands import doc_data
from fakekey.core.registry import REGISTRY, Registry

FAMILIES = (
    "connection",
    "clients",
    "acl",
    "admin",
    "config",
    "info",
    "replication",
    "memory_latency",
    "introspection",
    "keys",
    "strings",
    "bitmaps",
    "hyperloglog",
    "hashes",
    "sets",
    "zsets",
    "geo",
    "lists",
    "sort",
    "streams",
    "dump",
    "transactions",
    "pubsub",
    "scripting",
    "functions",
    "fakekey",
    "observability",
    "modules",
    "fakekey.modules.emq.controls",
    "fakekey.modules.emq.jobs",
    "fakekey.modules.emq.scheduling",
    "fakekey.modules.emq.recovery",
    "fakekey.modules.emq.publish",
)

def load_all() -> Registry:
    """Import every family once, so that the registry is complete; the registry. A server
    calls it before it makes its state (fakekey/net/server.py)."""
    if not REGISTRY.complete:
        for name in FAMILIES:
            importlib.import_module(name if "." in name else f"fakekey.commands.{name}")
        doc_data.attach(REGISTRY)  # COMMAND DOCS' argument trees, from fakekey/data
        REGISTRY.complete = True
    return REGISTRY
