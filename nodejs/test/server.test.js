'use strict';
// One in-process server from the installed package: start, options, commands, the manual
// clock, faults, restart, shutdown.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Server, Clock, EmbedisError } = require('embedis');

test('a server answers ioredis at its url and stops on shutdown', async () => {
  const server = await Server.start();
  assert.match(server.url, /^redis:\/\/127\.0\.0\.1:\d+\/$/);
  const client = server.client();
  assert.equal(await client.ping(), 'PONG');
  assert.equal((await client.info('server')).match(/redis_version:(\S+)/)[1], '7.4.1');
  client.disconnect();
  await server.shutdown();
  assert.throws(() => server.url, EmbedisError);
});

test('options reach the server and bad ones get Redis errors', async () => {
  const users = { app: 'on >app-secret ~app:* +@all' };
  const server = await Server.start({ password: 's3cret', users, config: { maxmemory: '10mb' } });
  try {
    const admin = server.client({ password: 's3cret' });
    assert.deepEqual(await admin.config('GET', 'maxmemory'), ['maxmemory', '10485760']);
    const app = server.client({ username: 'app', password: 'app-secret' });
    assert.equal(await app.set('app:1', 'x'), 'OK');
    await assert.rejects(app.set('other', 'x'), /NOPERM/);
    admin.disconnect();
    app.disconnect();
  } finally {
    await server.shutdown();
  }
  await assert.rejects(Server.start({ config: { 'maxmemory-policy': 'sometimes' } }), (e) => {
    return e instanceof EmbedisError && /must be one of/.test(e.message);
  });
  await assert.rejects(Server.start({ maxmemory: '1mb' }), TypeError);
});

test('command runs in process and throws Redis errors', async () => {
  const server = await Server.start();
  try {
    assert.equal(server.command('SET', 'k', 'v'), 'OK');
    assert.equal(server.command('GET', 'k'), 'v');
    assert.equal(server.command('INCRBY', 'n', 5), 5);
    assert.equal(server.command('GET', 'missing'), null);
    assert.deepEqual(server.command('MGET', 'k', 'missing'), ['v', null]);
    assert.equal(server.commandIn(1, 'GET', 'k'), null, 'database 1 is another');
    assert.throws(() => server.command('INCR'), (e) => {
      return e instanceof EmbedisError && /wrong number of arguments/.test(e.message);
    });
  } finally {
    await server.shutdown();
  }
});

test('a manual clock moves only when the test moves it', async () => {
  const server = await Server.start({ clock: 'manual' });
  try {
    const client = server.client();
    await client.set('lease', 'me', 'PX', 10000);
    server.clock.advance(10000);
    assert.equal(await client.get('lease'), 'me', 'still there at exactly its expiry');
    server.clock.advance(1);
    assert.equal(await client.get('lease'), null);
    const before = server.clock.nowMs();
    server.clock.skew(60000);
    assert.equal(server.clock.offsetMs, 60000);
    assert.equal(server.clock.nowMs(), before + 60000);
    server.clock.setOffset(0);
    server.clock.rate = 2;
    server.clock.advance(1000);
    assert.equal(server.clock.nowMs(), before + 1000, 'an advance moves by exactly that');
    client.disconnect();
  } finally {
    await server.shutdown();
  }
  const system = await Server.start();
  try {
    assert.equal(system.clock.isControllable, false);
    assert.throws(() => system.clock.advance(1000), EmbedisError);
  } finally {
    await system.shutdown();
  }
});

test('two servers on one Clock read the same time', async () => {
  const clock = Clock.manual();
  const [a, b] = await Promise.all([Server.start({ clock }), Server.start({ clock })]);
  try {
    clock.advance(5000);
    assert.equal(a.clock.nowMs(), b.clock.nowMs());
    assert.equal(a.clock.nowMs(), clock.nowMs());
  } finally {
    await Promise.all([a.shutdown(), b.shutdown()]);
  }
});

test('faults: errors, closed connections, a pause and dropped connections', async () => {
  const server = await Server.start({ clock: 'manual' });
  try {
    const client = server.client({ maxRetriesPerRequest: 0, retryStrategy: () => null });
    server.faults.error('set', 'lock:*', 'ERR injected', 1);
    assert.equal(server.faults.list().length, 1);
    await assert.rejects(client.set('lock:a', 'me', 'NX'), /ERR injected/);
    assert.equal(await client.set('lock:a', 'me', 'NX'), 'OK', 'spent after one');
    server.faults.pause(5000);
    assert.equal(server.faults.pausedUntil, server.clock.nowMs() + 5000);
    const held = client.get('lock:a');
    server.clock.advance(5000);
    assert.equal(await held, 'me', 'answered once the pause ended');
    server.faults.close('get', '*');
    await assert.rejects(client.get('lock:a'));
    server.faults.clear();
    const other = server.client();
    assert.equal(await other.ping(), 'PONG');
    assert.ok(server.faults.dropConnections() >= 1);
    client.disconnect();
    other.disconnect();
  } finally {
    await server.shutdown();
  }
});

test('a full disk refuses writes until it has room', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedis-disk-'));
  const server = await Server.start({ dir, appendonly: true });
  try {
    const client = server.client();
    server.faults.diskWriteError(os.constants.errno.ENOSPC);
    // Acknowledged: the write waits in the AOF's buffer, as on Redis.
    assert.equal(await client.set('a', '1'), 'OK');
    await assert.rejects(
      client.set('b', '1'),
      /MISCONF Errors writing to the AOF file: No space left on device/,
    );
    server.faults.clear();
    // The server retries on its tick; once the disk takes the bytes, writes resume.
    for (let tries = 0; ; tries++) {
      try {
        assert.equal(await client.set('b', '1'), 'OK');
        break;
      } catch (error) {
        if (tries > 250) throw error;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    client.disconnect();
  } finally {
    await server.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('restart keeps the data and the port', async () => {
  const server = await Server.start();
  try {
    const port = server.port;
    server.command('SET', 'kept', 'yes');
    await server.restart();
    assert.equal(server.port, port);
    assert.equal(server.command('GET', 'kept'), 'yes');
  } finally {
    await server.shutdown();
  }
});

test('await using stops the server where Symbol.asyncDispose exists', async (t) => {
  if (!Symbol.asyncDispose) {
    t.skip('this Node has no Symbol.asyncDispose');
    return;
  }
  const server = await Server.start();
  await server[Symbol.asyncDispose]();
  assert.throws(() => server.port, EmbedisError);
});
