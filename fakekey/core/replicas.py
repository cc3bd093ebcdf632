"""min-replicas-to-write as a lone primary answers it: fakekey has no replicas, so when
the setting asks for any (and min-replicas-max-lag is on, as Valkey's
checkGoodReplicasStatus wants), every write is refused with NOREPLICAS: a write command,
a script or function that does not declare `no-writes`, EXEC of a queue holding one
(`ServerState.call`), a write a script without a shebang runs (the script bridge), and a
script with a shebang that may write as it starts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fakekey.core.pause import writes
from fakekey.resp.replies import ReplyError

if TYPE_CHECKING:
    from fakekey.config.settings import Config
    from fakekey.core.client import Client
    from fakekey.core.registry import Command

NOREPLICAS = ReplyError("NOREPLICAS Not enough good replicas to write.")
SCRIPT_RUNNERS = frozenset({"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"})


def too_few_replicas(config: Config) -> bool:
    """Whether the settings refuse writes: min-replicas-to-write wants good replicas
    (there are none) and min-replicas-max-lag is not 0 (0 turns the check off)."""
    return bool(config["min-replicas-to-write"] > 0 and config["min-replicas-max-lag"] > 0)


def is_write_command(client: Client, cmd: Command, argv: list[bytes]) -> bool:
    """Valkey's is_write_command: the write flag, or a script's or function's declared
    flags in place of its command's, or EXEC of a queue holding a write."""
    return writes(client, cmd, argv, SCRIPT_RUNNERS)
