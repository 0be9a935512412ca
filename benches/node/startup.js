'use strict';
// Time from "give me a server" to its first PONG, from Node, side by side in one run:
//
// - embedis: `Server.start()` in this process (the installed package), then an ioredis PING;
// - redis-memory-server: `RedisMemoryServer.create()` starting a redis-server 8.2 binary
//   (REDISMS_SYSTEM_BINARY, so nothing compiles), then an ioredis PING;
// - the same with a valkey-server 9.1 binary.
//
// Each round runs them in turn (A B C A B C …); medians, min, max and ratios are printed.
// Usage: node benches/node/startup.js <rounds> <redis-server 8.2> <valkey-server 9.1>
// Needs: embedis (the packed package), ioredis and redis-memory-server installed where it runs.

const { Server } = require('embedis');
const { RedisMemoryServer } = require('redis-memory-server');
const Redis = require('ioredis');

async function firstPong(port) {
  const client = new Redis(port, '127.0.0.1', { lazyConnect: true });
  await client.connect();
  if ((await client.ping()) !== 'PONG') throw new Error('no PONG');
  client.disconnect();
}

async function embedis() {
  const t = process.hrtime.bigint();
  const server = await Server.start();
  await firstPong(server.port);
  const took = Number(process.hrtime.bigint() - t) / 1e6;
  await server.shutdown();
  return took;
}

function memoryServer(binary) {
  return async () => {
    process.env.REDISMS_SYSTEM_BINARY = binary;
    const t = process.hrtime.bigint();
    const server = await RedisMemoryServer.create();
    await firstPong(await server.getPort());
    const took = Number(process.hrtime.bigint() - t) / 1e6;
    await server.stop();
    return took;
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main() {
  const [rounds = '20', redis8, valkey] = process.argv.slice(2);
  const contenders = [
    ['embedis', embedis],
    ['redis-memory-server + redis-server 8.2', memoryServer(redis8)],
    ['redis-memory-server + valkey-server 9.1', memoryServer(valkey)],
  ];
  const times = contenders.map(() => []);
  for (let round = 0; round < Number(rounds); round++) {
    for (const [i, [, start]] of contenders.entries()) times[i].push(await start());
  }
  const base = median(times[0]);
  console.log('| server | median ms | min ms | max ms | × embedis |\n|---|---|---|---|---|');
  for (const [i, [name]] of contenders.entries()) {
    const m = median(times[i]);
    const row = [m, Math.min(...times[i]), Math.max(...times[i])].map((x) => x.toFixed(2));
    console.log(`| ${name} | ${row.join(' | ')} | ${(m / base).toFixed(1)} |`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
