"""Command families, one module each; importing a module registers its commands."""

import importlib

FAMILIES = (
    "connection",
    "clients",
    "acl",
    "admin",
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

_loaded = False


def load_all() -> None:
    """Import every family once so the registry is complete."""
    global _loaded
    if _loaded:
        return
    for name in FAMILIES:
        importlib.import_module(name if "." in name else f"fakekey.commands.{name}")
    from fakekey.commands import doc_data
    from fakekey.core import registry

    doc_data.attach(registry.REGISTRY)  # COMMAND DOCS' argument trees, from fakekey/data
    _loaded = True
