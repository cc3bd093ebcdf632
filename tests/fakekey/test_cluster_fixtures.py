"""The plugin's cluster fixtures: `fakekey_cluster` and `fakekey_cluster_client`."""

from __future__ import annotations

import pytest

from fakekey.net.cluster import Cluster
from fakekey.testing.servers import parse_targets


def test_a_cluster_and_its_client(fakekey_cluster, fakekey_cluster_client):
    assert isinstance(fakekey_cluster, Cluster)
    assert len(fakekey_cluster.primaries) == 3 and len(fakekey_cluster.replicas) == 3
    for i in range(30):
        fakekey_cluster_client.set(f"k{i}", i)
    assert fakekey_cluster_client.get("k29") == b"29"


@pytest.mark.fakekey_cluster(primaries=2, replicas=0, cluster_node_timeout=1000)
def test_the_marker_gives_the_shape_and_the_settings(fakekey_cluster):
    assert [n.role for n in fakekey_cluster.nodes] == ["primary", "primary"]
    assert fakekey_cluster.nodes[1].server.state.config["cluster-node-timeout"] == 1000


def test_each_test_gets_a_fresh_cluster(fakekey_cluster_client):
    assert fakekey_cluster_client.get("k29") is None


def test_valkey_cluster_is_a_target_name():
    assert parse_targets("valkey-cluster") == ["valkey"]
    assert parse_targets("fakekey,valkey-cluster") == ["fakekey", "valkey"]
