// ioredis's Cluster on a cluster given as argv[2] (JSON [{host, port}, ...]): keys routed to
// every shard, a pipeline and a transaction on one slot, and MOVED after a slot is moved
// under the client's feet. Prints one JSON line of what it saw (test_cluster_ioredis.py).
const { Cluster } = require('ioredis');
const calculateSlot = require('cluster-key-slot');

const startupNodes = JSON.parse(process.argv[2]);
const entries = (replies) => replies.map(([err, value]) => (err ? `error: ${err.message}` : value));

async function moveSlot(cluster, key) {
  // the reshard valkey-cli does: IMPORTING, MIGRATING, MIGRATE the keys, then NODE everywhere
  const slot = calculateSlot(key);
  const masters = cluster.nodes('master');
  const ids = await Promise.all(masters.map((node) => node.cluster('MYID')));
  const from = masters.findIndex((node) => `${node.options.host}:${node.options.port}` === cluster.slots[slot][0]);
  const to = (from + 1) % masters.length;
  const [source, target] = [masters[from], masters[to]];
  await target.cluster('SETSLOT', slot, 'IMPORTING', ids[from]);
  await source.cluster('SETSLOT', slot, 'MIGRATING', ids[to]);
  await source.migrate(target.options.host, target.options.port, '', 0, 5000, 'KEYS', key);
  for (const node of masters) await node.cluster('SETSLOT', slot, 'NODE', ids[to]);
  return { slot, from: source.options.port, to: target.options.port };
}

(async () => {
  const out = {};
  const cluster = new Cluster(startupNodes, { redisOptions: { maxRetriesPerRequest: 3 } });
  cluster.on('error', () => {});
  const keys = Array.from({ length: 60 }, (_, i) => `user:${i}`);
  for (const [i, key] of keys.entries()) await cluster.set(key, String(i));
  out.values = await Promise.all(keys.map((key) => cluster.get(key)));
  out.pipeline = entries(await cluster.pipeline().set('{cart}:a', '1').incr('{cart}:a')
    .incrby('{cart}:a', 40).get('{cart}:a').exec());
  out.multi = entries(await cluster.multi().incr('{cart}:n').incr('{cart}:n').exec());
  out.crossslot = await cluster.mget('user:1', 'user:2').then(() => 'ok', (err) => err.message);

  await cluster.set('{reshard}k', 'before');
  out.move = await moveSlot(cluster, '{reshard}k');
  out.afterMove = await cluster.get('{reshard}k');  // to the old owner: MOVED, then the new one
  out.seenOwner = cluster.slots[out.move.slot][0];
  out.afterSet = await cluster.set('{reshard}k', 'after');
  console.log(JSON.stringify(out));
  cluster.disconnect();
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
