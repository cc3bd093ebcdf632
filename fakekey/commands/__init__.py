"""Command families, one module each; importing a module registers its commands."""

import importlib

FAMILIES = (
    "connection",
    "client_cmds",
    "acl",
    "server_cmds",
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
    "fakekey_cmds",
    "observability",
    "modules",
    "emq.controls",
    "emq.jobs",
    "emq.scheduling",
    "emq.recovery",
    "emq.bus",
)

_loaded = False


def load_all() -> None:
    """Import every family once so the registry is complete."""
    global _loaded
    if _loaded:
        return
    for name in FAMILIES:
        importlib.import_module(f"fakekey.commands.{name}")
    from fakekey.commands import doc_data, registry

    doc_data.attach(registry.REGISTRY)  # COMMAND DOCS' argument trees, from fakekey/data
    _loaded = True
