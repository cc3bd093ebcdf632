"""EMQ's client side: the Lua scripts (`scripts/*.lua`) and `Queue`, which drives a queue
either with those scripts (wire 4) or with the module's verbs (wire 6). The worker loop
(`fakekey.emq.consumer.Consumer`) and the topic streams (`fakekey.emq.bus.Bus`) need the
`redis` package, so they are imported from their modules."""

from fakekey.emq.queue import ClaimedJob, LaneJob, Queue, SweepResult, WireError
from fakekey.emq.scripts import SCRIPTS, Script, run_script

__all__ = [
    "SCRIPTS", "ClaimedJob", "LaneJob", "Queue", "Script", "SweepResult", "WireError", "run_script",
]
