"""What FAKEKEY.CLUSTER asks of the fakekey.Cluster its node belongs to: the failures a
test stages from any client (docs/cluster.md, "Over the wire: FAKEKEY.CLUSTER").

fakekey.Cluster (fakekey/net/cluster.py) owns the nodes' servers, so it does the work;
it hands its bus an object of this shape (`Bus.controls`). The nodes are named by node
id, resolved here from the bus's views (a killed node's view stays on the bus)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from fakekey.core.cluster import Bus, ClusterView


class ClusterControls(Protocol):
    """The failures of Cluster.kill / restart / failover / partition / heal, by node id."""

    def kill(self, node_id: str) -> None: ...

    def restart(self, node_id: str) -> None: ...

    def failover(self, node_id: str) -> None: ...

    def partition(self, side_a: list[str], side_b: list[str]) -> None: ...

    def heal(self) -> None: ...


def find_view(bus: Bus, name: str) -> ClusterView | None:
    """The node of `bus` named `name`: its node id (as CLUSTER MYID answers it), or the
    host:port it listens on (dead or alive)."""
    for view in bus.views:
        if view.myself.id == name:
            return view
    host, _, port = name.rpartition(":")
    if not host or not port.isdigit():
        return None
    for view in bus.views:
        if view.myself.port == int(port) and view.myself.host in (host, ""):
            return view
    return None
