'use strict';
// The five lock-failure stories of docs/testing.md, in Node: node-redlock (npm `redlock`,
// over ioredis) against embedis servers whose clocks and faults the test controls. No sleeps:
// time passes when the test moves the servers' clocks. Run from the installed package.

const test = require('node:test');
const assert = require('node:assert/strict');
const Redlock = require('redlock');
const { Server, Nodes } = require('embedis');

/** A Redlock over `servers` that tries once (a non-blocking acquire). */
function redlock(servers) {
  const clients = servers.map((server) => server.client());
  const lock = new Redlock(clients, { retryCount: 0 });
  lock.close = () => clients.forEach((client) => client.disconnect());
  return lock;
}

test('1. a holder past its lease loses the lock and its late release spares the new owner', async () => {
  const server = await Server.start({ clock: 'manual' });
  const [first, second] = [redlock([server]), redlock([server])];
  try {
    const lock1 = await first.lock('lock:order', 10000);
    server.clock.advance(10001);
    const lock2 = await second.lock('lock:order', 10000);
    await assert.rejects(lock1.unlock(), Redlock.LockError, 'not its lock any more');
    assert.equal(server.command('GET', 'lock:order'), lock2.value, 'the new owner keeps it');
  } finally {
    first.close();
    second.close();
    await server.shutdown();
  }
});

test('2. a watchdog keeps the lock for many leases; it ends one lease after renewals stop', async () => {
  const server = await Server.start({ clock: 'manual' });
  const [holder, other] = [redlock([server]), redlock([server])];
  try {
    let lock = await holder.lock('lock:job', 9000);
    for (let i = 0; i < 30; i++) {
      server.clock.advance(3000); // ten leases, renewed every third of one
      lock = await lock.extend(9000);
    }
    await assert.rejects(other.lock('lock:job', 9000), Redlock.LockError);
    server.clock.advance(9001);
    const taken = await other.lock('lock:job', 9000);
    assert.equal(server.command('GET', 'lock:job'), taken.value);
  } finally {
    holder.close();
    other.close();
    await server.shutdown();
  }
});

test('3. Redlock needs a majority of five nodes', async () => {
  const nodes = await Nodes.start(5);
  const locks = [];
  try {
    for (const node of nodes.servers.slice(0, 2)) {
      node.faults.error('set', 'redlock:*', 'ERR injected', 1);
    }
    locks.push(redlock(nodes.servers));
    const lock = await locks[0].lock('redlock:resource', 10000);
    assert.deepEqual(nodes.servers.map((n) => n.command('EXISTS', 'redlock:resource')), [0, 0, 1, 1, 1]);
    await lock.unlock();
    for (const node of nodes.servers.slice(0, 3)) {
      node.faults.error('set', 'redlock:*', 'ERR injected', 1);
    }
    locks.push(redlock(nodes.servers));
    await assert.rejects(locks[1].lock('redlock:resource', 10000), Redlock.LockError);
    assert.deepEqual(
      nodes.servers.map((n) => n.command('EXISTS', 'redlock:resource')),
      [0, 0, 0, 0, 0],
      'two of five are not a majority, and the client released what it got',
    );
  } finally {
    locks.forEach((l) => l.close());
    await nodes.shutdown();
  }
});

/** Resolves once `count` clients are held by the paused server (CLIENT LIST, asked in
 * process: it answers during the pause). */
async function heldClients(server, count) {
  for (let i = 0; i < 10000; i++) {
    const listing = server.command('CLIENT', 'LIST');
    const held = listing.split('\n').filter((line) => line.includes(' flags=b '));
    if (held.length >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`fewer than ${count} clients held`);
}

test('4. after a pause past the lease, the late release spares the new owner', async () => {
  const server = await Server.start({ clock: 'manual' });
  const [first, second] = [redlock([server]), redlock([server])];
  try {
    const lock1 = await first.lock('lock:pay', 10000);
    await second.servers[0].ping(); // connected before the pause
    server.faults.pause(12000); // a 12 s stop-the-world, on the server's clock
    const acquiring = second.lock('lock:pay', 10000);
    await heldClients(server, 1);
    const releasing = lock1.unlock().then(
      () => 'released',
      () => 'not owned',
    );
    await heldClients(server, 2);
    server.clock.advance(12000); // the pause ends; the held requests run in arrival order
    const lock2 = await acquiring;
    assert.equal(await releasing, 'not owned');
    assert.equal(server.command('GET', 'lock:pay'), lock2.value);
  } finally {
    first.close();
    second.close();
    await server.shutdown();
  }
});

test('5. a node clock running fast lets two clients hold a Redlock majority', async () => {
  const nodes = await Nodes.start(5, { clock: 'manual' });
  const [a, b, c, d, e] = nodes.servers;
  const [client1, client2] = [redlock(nodes.servers), redlock(nodes.servers)];
  try {
    c.clock.rate = 1.05; // C's clock runs 5% fast
    for (const node of [d, e]) node.faults.error('set', 'redlock:*', 'ERR injected', 1);
    await client1.lock('redlock:resource', 10000); // on A, B and C
    nodes.advance(9600); // 9.6 s for A, B, D, E; 10.08 s for C: its copy is gone
    assert.equal(c.command('EXISTS', 'redlock:resource'), 0);
    await client2.lock('redlock:resource', 10000); // C, D and E: a second majority
    assert.equal(a.command('EXISTS', 'redlock:resource'), 1, 'client 1 still holds A');
    assert.equal(b.command('EXISTS', 'redlock:resource'), 1, 'and B');
  } finally {
    client1.close();
    client2.close();
    await nodes.shutdown();
  }
});
