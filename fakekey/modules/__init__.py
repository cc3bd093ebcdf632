"""The emulated modules: EMQ's verbs. Importing a family registers its verbs
(fakekey/net/registry.py loads them all, after the built-in commands)."""

FAMILIES = (
    "fakekey.modules.emq.controls",
    "fakekey.modules.emq.jobs",
    "fakekey.modules.emq.scheduling",
    "fakekey.modules.emq.recovery",
    "fakekey.modules.emq.publish",
    "fakekey.modules.emq.lanes",
    "fakekey.modules.emq.lane_controls",
    "fakekey.modules.emq.waiting",
    "fakekey.modules.emq.timers",
    "fakekey.modules.stack.bloom",
    "fakekey.modules.stack.cuckoo",
    "fakekey.modules.stack.cms",
    "fakekey.modules.stack.topk",
    "fakekey.modules.stack.tdigest",
    "fakekey.modules.stack.json_commands",
    "fakekey.modules.stack.json_writes",
    "fakekey.modules.stack.json_arrays",
    "fakekey.modules.stack.json_scalars",
)
