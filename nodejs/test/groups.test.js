'use strict';
// Groups from the installed package: Nodes, a ReplicaSet with failover, a Cluster with
// ioredis's cluster client, failover and a killed primary.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Nodes, ReplicaSet, Cluster, slotOf } = require('embedis');

test('Nodes are independent servers with their own clocks', async () => {
  const nodes = await Nodes.start(3, { clock: 'manual' });
  try {
    assert.equal(nodes.length, 3);
    assert.equal(new Set(nodes.urls).size, 3);
    nodes.at(0).command('SET', 'k', 'v', 'PX', 1000);
    nodes.at(-1).clock.rate = 2;
    // Each manual clock starts at the real time of its own start: compare how far they moved.
    const before = nodes.servers.map((node) => node.clock.nowMs());
    nodes.advance(600);
    const moved = nodes.servers.map((node, i) => node.clock.nowMs() - before[i]);
    assert.deepEqual(moved, [600, 600, 1200], 'the last node runs at twice the rate');
    assert.equal(nodes.at(0).command('GET', 'k'), 'v');
    assert.equal(nodes.at(1).command('GET', 'k'), null, 'each node has its own data');
    assert.throws(() => nodes.at(3), RangeError);
    assert.equal([...nodes].length, 3);
  } finally {
    await nodes.shutdown();
  }
});

test('a ReplicaSet replicates and fails over to a replica', async () => {
  const set = await ReplicaSet.start(2);
  try {
    set.primary.command('SET', 'k', 'v');
    assert.equal(await set.waitForReplicas(), true);
    assert.equal(set.replica(1).command('GET', 'k'), 'v');
    assert.equal(set.replicas.length, 2);
    assert.ok(set.replicas.every((r) => r.linkUp));
    const promoted = set.replica(0).port;
    await set.failOver(0);
    assert.equal(set.primary.port, promoted);
    set.primary.command('SET', 'after', '1');
    assert.equal(await set.waitForReplicas(), true);
    assert.equal(set.replica(0).command('GET', 'after'), '1');
  } finally {
    await set.shutdown();
  }
});

test('a Cluster serves ioredis Cluster and fails over a shard', async () => {
  const cluster = await Cluster.start(3, 1);
  try {
    assert.equal(cluster.nodes.length, 6);
    assert.equal(cluster.primaries.length, 3);
    assert.equal(Cluster.slotOf('foo'), 12182);
    assert.equal(slotOf(Buffer.from('foo')), 12182);
    const client = cluster.client();
    for (let i = 0; i < 20; i++) await client.set(`key:${i}`, String(i));
    assert.equal(await client.get('key:7'), '7');
    const shard = cluster.ownerOf(Cluster.slotOf('key:7'));
    const promoted = await cluster.failOver(shard);
    assert.notEqual(promoted, shard);
    await cluster.waitForOwner(Cluster.slotOf('key:7'), promoted);
    assert.equal(cluster.node(promoted).command('GET', 'key:7'), '7');
    assert.match(cluster.nodeId(promoted), /^[0-9a-f]{40}$/);
    client.disconnect();
  } finally {
    await cluster.shutdown();
  }
});

test('an ioredis Cluster client carries on across an automatic failover', async () => {
  const options = { clock: 'manual', config: { 'cluster-node-timeout': '5000' } };
  const cluster = await Cluster.start(3, 1, options);
  try {
    const client = cluster.client();
    await client.set('order:{42}', 'paid');
    const slot = slotOf('order:{42}');
    const owner = cluster.ownerOf(slot);
    const primary = cluster.node(owner).client();
    assert.equal(await primary.call('WAIT', 1, 5000), 1, 'the replica has it');
    primary.disconnect();
    await cluster.kill(owner);
    assert.throws(() => cluster.node(owner).port, /killed/);
    await cluster.advanceClock(8000);
    await cluster.waitForOwner(slot, owner + 3);
    assert.equal(await client.get('order:{42}'), 'paid');
    client.disconnect();
  } finally {
    await cluster.shutdown();
  }
});
