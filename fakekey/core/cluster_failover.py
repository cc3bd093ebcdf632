"""Failover between processes, as Valkey's cluster_legacy.c does it: a replica's election
(clusterHandleReplicaFailover), a primary's vote (clusterSendFailoverAuthIfNeeded), the
manual failover's handshake (CLUSTER FAILOVER: MFSTART, the primary's pause, the replica
catching up on its offset) and the replica taking its primary's place
(clusterFailoverReplaceYourPrimary). Decisions only: the messages are sent by the wire
(net/cluster_bus.py) and the replication link changed by it.

The data age check (cluster-replica-validity-factor) is kept in a simple form: a replica
whose link to its primary has been down longer than node-timeout times the factor, plus
repl-ping-replica-period, does not start an automatic election (0: it always may)."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from fakekey.core.cluster import SLOTS, bump_epoch, redirect_blocked_clients
from fakekey.core.pause import end_pause, start_pause

if TYPE_CHECKING:
    from fakekey.core.cluster import ClusterNode, ClusterView

MF_TIMEOUT = 5000  # ms a manual failover may take (CLUSTER_MF_TIMEOUT)
MF_PAUSE_MULT = 2  # the primary pauses its writers this many times as long
AUTH_TIMEOUT_MIN = 2000  # ms: an election lasts max(node-timeout * 2, this)


class Failover:
    """One node's side of failovers: its election as a replica, its votes as a primary,
    the manual failover in progress (Valkey's failover_auth_* and mf_* fields)."""

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self.auth_time = 0  # ms: when the election starts (or started); 0 none planned
        self.auth_sent = False
        self.auth_epoch = 0
        self.auth_count = 0
        self.auth_rank = 0
        self.voted_time: dict[str, int] = {}  # primary id -> when a replica of it got a vote
        self.mf_end = 0  # ms: a manual failover in progress ends then (0: none)
        self.mf_can_start = False  # the replica caught up (or FORCE): the election may start
        self.mf_primary_offset = -1  # the paused primary's offset the replica must reach
        self.mf_replica: ClusterNode | None = None  # on the primary: the replica it waits for

    def now(self) -> int:
        return self.view.state.clock.now_ms()

    def node_timeout(self) -> int:
        return int(self.view.state.config["cluster-node-timeout"])

    def quorum(self) -> int:
        """A majority of the primaries that serve slots (the cluster's size)."""
        size = len({id(owner) for owner in self.view.owners if owner is not None})
        return size // 2 + 1

    # --- manual failover ---------------------------------------------------------------------

    def start_manual(self, force: bool) -> None:
        """CLUSTER FAILOVER [FORCE] on a replica: the election waits for the primary's
        paused offset (none to wait for with FORCE)."""
        self.reset_manual()
        self.mf_end = self.now() + MF_TIMEOUT
        self.mf_can_start = force
        self.auth_time = 0  # an election planned before is planned anew, at once

    def primary_asked(self, replica: ClusterNode) -> bool:
        """MFSTART from a replica of this primary: its writers are paused, and its pings
        to that replica carry its offset. False when the sender is no replica of this one."""
        view = self.view
        if replica.primary is not view.myself:
            return False
        self.reset_manual()
        self.mf_end = self.now() + MF_TIMEOUT
        self.mf_replica = replica
        start_pause(view.state, MF_TIMEOUT * MF_PAUSE_MULT, everything=False)
        return True

    def pausing_for(self, node: ClusterNode) -> bool:
        """This primary is paused for `node`'s manual failover (its pings say so)."""
        return self.mf_end != 0 and self.mf_replica is node and self.view.myself.is_primary

    def primary_paused(self, sender: ClusterNode, offset: int) -> None:
        """A ping from this replica's primary saying it is paused at `offset`."""
        myself = self.view.myself
        if self.mf_end and myself.primary is sender and self.mf_primary_offset == -1:
            self.mf_primary_offset = offset

    def reset_manual(self) -> None:
        """resetManualFailover: a primary that paused for one unpauses."""
        if self.mf_replica is not None and self.view.state.paused is not None:
            end_pause(self.view.state)
        self.mf_end = 0
        self.mf_can_start = False
        self.mf_primary_offset = -1
        self.mf_replica = None

    def manual_tick(self, my_offset: int) -> None:
        """clusterHandleManualFailover, and the manual failover's timeout."""
        if self.mf_end == 0:
            return
        if self.now() > self.mf_end:
            self.reset_manual()
            return
        if self.mf_primary_offset >= 0 and my_offset >= self.mf_primary_offset:
            self.mf_can_start = True

    # --- the replica's election --------------------------------------------------------------

    def auth_timeout(self) -> int:
        return max(self.node_timeout() * 2, AUTH_TIMEOUT_MIN)

    def election_tick(self, my_offset: int, link_down_ms: int) -> str:
        """One step of clusterHandleReplicaFailover. Returns "request" when the election
        starts now (FAILOVER_AUTH_REQUEST to every primary), "won" when enough primaries
        voted, "" otherwise."""
        view = self.view
        myself = view.myself
        primary = myself.primary
        manual = self.mf_end != 0 and self.mf_can_start
        if myself.is_primary or primary is None or (not primary.failing and not manual) \
                or (view.state.config["cluster-replica-no-failover"] and not manual) \
                or primary not in view.owners:
            self.auth_time = 0  # nothing to elect: a later failure plans anew
            return ""
        now = self.now()
        if not manual and self._data_too_old(link_down_ms):
            return ""
        timeout = self.auth_timeout()
        if self.auth_time == 0 or now - self.auth_time > timeout * 2:  # plan a (new) election
            self.auth_time = now + 500 + random.randrange(500)
            self.auth_sent = False
            self.auth_count = 0
            self.auth_rank = self._rank(my_offset)
            self.auth_time += self.auth_rank * 1000
            if manual:  # at once, first in line
                self.auth_time, self.auth_rank = now, 0
            return ""
        if not self.auth_sent and not manual:
            rank = self._rank(my_offset)
            if rank > self.auth_rank:
                self.auth_time += (rank - self.auth_rank) * 1000
                self.auth_rank = rank
        if now < self.auth_time or now - self.auth_time > timeout:
            return ""
        if not self.auth_sent:
            view.current_epoch += 1
            self.auth_epoch = view.current_epoch
            self.auth_sent = True
            return "request"
        if self.auth_count >= self.quorum():
            return "won"
        return ""

    def _data_too_old(self, link_down_ms: int) -> bool:
        config = self.view.state.config
        factor = config["cluster-replica-validity-factor"]
        if not factor:
            return False
        age = link_down_ms - self.node_timeout()
        return age > config["repl-ping-replica-period"] * 1000 + self.node_timeout() * factor

    def _rank(self, my_offset: int) -> int:
        """clusterGetReplicaRank: the replicas of the same primary with a greater offset."""
        view = self.view
        primary = view.myself.primary
        return sum(1 for n in view.nodes.values()
                   if n is not view.myself and n.primary is primary and not n.nofailover
                   and n.repl_offset > my_offset)

    def acked(self, sender: ClusterNode, sender_epoch: int) -> None:
        """FAILOVER_AUTH_ACK: a vote counts from a primary with slots, for this election."""
        if sender.is_primary and sender in self.view.owners and sender_epoch >= self.auth_epoch \
                and self.auth_sent:
            self.auth_count += 1

    def replace_primary(self) -> None:
        """clusterFailoverReplaceYourPrimary: this replica is its shard's primary, with the
        election's epoch (or a new one, TAKEOVER), and the old primary's slots."""
        view = self.view
        myself = view.myself
        old = myself.primary
        if old is None:
            return
        if myself.config_epoch < self.auth_epoch:
            myself.config_epoch = self.auth_epoch
        myself.primary = None
        for slot in range(SLOTS):
            if view.owners[slot] is old:
                view.owners[slot] = myself
        self.auth_time = 0
        self.auth_sent = False
        self.reset_manual()
        redirect_blocked_clients(view)

    def take_over(self) -> None:
        """CLUSTER FAILOVER TAKEOVER: a new config epoch without votes, then the slots."""
        bump_epoch(self.view)
        self.replace_primary()

    # --- the primary's vote ------------------------------------------------------------------

    def should_vote(self, requester: ClusterNode, request_epoch: int, request_config_epoch: int,
                    claimed: list[tuple[int, int]], force_ack: bool) -> bool:
        """clusterSendFailoverAuthIfNeeded: True when this primary votes for `requester`
        (its vote for this epoch is then spent)."""
        view = self.view
        myself = view.myself
        if not myself.is_primary or myself not in view.owners:
            return False
        if request_epoch < view.current_epoch or view.last_vote_epoch == view.current_epoch:
            return False
        primary = requester.primary
        if requester.is_primary or primary is None or (not primary.failing and not force_ack):
            return False
        now = self.now()
        if now - self.voted_time.get(primary.id, -(1 << 62)) < self.node_timeout() * 2:
            return False
        for first, last in claimed:
            for owner in view.owners[first:last + 1]:
                if owner is not None and owner.config_epoch > request_config_epoch:
                    return False
        view.last_vote_epoch = view.current_epoch
        self.voted_time[primary.id] = now
        return True


def should_follow(view: ClusterView, sender: ClusterNode, had_slots: bool) -> bool:
    """A replica whose primary (`had_slots` before `sender`'s claims) lost every slot to
    `sender` (a failover in its shard it did not win) follows `sender`, as Valkey's
    clusterUpdateSlotsConfigWith."""
    myself = view.myself
    primary = myself.primary
    return not (primary is None or primary is sender or not had_slots or primary in view.owners
                or sender not in view.owners or not sender.is_primary)
