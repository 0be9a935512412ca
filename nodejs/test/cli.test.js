'use strict';
// The `embedis-server` command: the server as a process of its own, for the stories where
// the process is the point (SIGKILL), with redis-server's command line.

const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const Redis = require('ioredis');

const bin = path.join(path.dirname(require.resolve('embedis')), 'bin', 'embedis-server.js');

test('embedis-server serves until killed', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedis-cli-'));
  const server = spawn(process.execPath, [bin, '--port', 'auto', '--dir', dir, '--save', ''], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    // The log goes to standard output, as redis-server's does; the port has its own line.
    let port = null;
    for await (const line of readline.createInterface({ input: server.stdout })) {
      if (line.startsWith('port=')) {
        port = Number(line.slice('port='.length));
        break;
      }
    }
    assert.ok(port, 'the server printed its port');
    const client = new Redis(port);
    assert.equal(await client.ping(), 'PONG');
    assert.match(await client.info('server'), /redis_version:7\.4\.1/);
    client.disconnect();
  } finally {
    const ended = new Promise((resolve) => server.on('exit', (code, signal) => resolve(signal)));
    server.kill('SIGKILL');
    assert.equal(await ended, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('embedis-server refuses unknown options as Redis does', () => {
  const done = spawnSync(process.execPath, [bin, '--no-such-option', '1'], { encoding: 'utf8' });
  assert.equal(done.status, 1);
  assert.match(done.stderr, /no-such-option/);
});
