"""ioredis's Cluster (Node) on fakekey's cluster and on a real Valkey cluster (3 primaries,
a replica each): keys routed to every shard, a pipeline and a transaction on one slot,
CROSSSLOT, and a MOVED followed after a slot moves under the client. Skipped without
`node`, or without ioredis in examples/node/node_modules (`cd examples/node && npm install`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fakekey.core.cluster import key_slot
from fakekey.testing.clusters import cluster_for_tests, cluster_targets
from fakekey.testing.raw import RawClient

TARGETS = cluster_targets()
NODE_MODULES = Path(__file__).resolve().parents[2] / "examples" / "node" / "node_modules"
SCRIPT = Path(__file__).resolve().parent / "data" / "ioredis_cluster.cjs"


@pytest.fixture(scope="module")
def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    if not (NODE_MODULES / "ioredis").is_dir():
        pytest.skip("ioredis is not installed (cd examples/node && npm install)")
    return found


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest, node: str) -> Iterator[Any]:
    with cluster_for_tests(request.param) as started:
        yield started


def run_ioredis(node: str, cluster: Any) -> dict[str, Any]:
    nodes = [{"host": host, "port": port} for host, port in cluster.startup_nodes]
    done = subprocess.run([node, str(SCRIPT), json.dumps(nodes)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NODE_PATH": str(NODE_MODULES)})
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_ioredis_cluster(node, cluster):
    out = run_ioredis(node, cluster)
    assert out["values"] == [str(i) for i in range(60)]
    assert out["pipeline"] == ["OK", 2, 42, "42"]
    assert out["multi"] == [1, 2]
    assert out["crossslot"] == "CROSSSLOT Keys in request don't hash to the same slot"
    move = out["move"]
    assert move["slot"] == key_slot(b"{reshard}k") and move["from"] != move["to"]
    assert (out["afterMove"], out["afterSet"]) == ("before", "OK")
    assert out["seenOwner"].endswith(f":{move['to']}")  # ioredis learned the new owner
    shards = {node.port: 0 for node in cluster.primaries}
    for i in range(60):  # each key is on the primary serving its slot: all three got some
        owner = cluster.node_for_slot(key_slot(b"user:%d" % i))
        with RawClient(owner.host, owner.port) as client:
            assert client.call("GET", f"user:{i}") == ("$", str(i).encode())
        shards[owner.port] += 1
    assert all(shards.values()), shards
    with RawClient(cluster.primaries[0].host, move["to"]) as client:
        assert client.call("GET", "{reshard}k") == ("$", b"after")
