// Compiled (not run) by CI with `tsc --noEmit --strict`: the declarations in index.d.ts type
// a test written as the guide writes one.
import { Cluster, Clock, EmbedisError, Nodes, ReplicaSet, Server, slotOf } from 'embedis';
import type { Redis } from 'ioredis';

async function story(): Promise<void> {
  const server: Server = await Server.start({ clock: 'manual', config: { maxmemory: '10mb' } });
  const client: Redis = server.client();
  await client.set('lock', 'me', 'PX', 30000, 'NX');
  server.clock.advance(30001);
  server.clock.rate = 1.05;
  server.faults.error('set', 'lock:*', 'ERR injected', 2);
  const until: number | null = server.faults.pausedUntil;
  const reply: unknown = server.command('GET', 'lock');
  client.disconnect();
  await server.shutdown();

  const clock = Clock.manual();
  const nodes = await Nodes.start(5, { clock });
  for (const node of nodes) node.faults.latency('get', '*', 50);
  nodes.advance(1000);
  await nodes.shutdown();

  const set = await ReplicaSet.start(2);
  const caughtUp: boolean = await set.waitForReplicas(5000);
  await set.failOver(0);
  await set.shutdown();

  const cluster = await Cluster.start(3, 1, { clock: 'manual' });
  const owner: number = cluster.ownerOf(slotOf('order:{1}'));
  const promoted: number = await cluster.failOver(owner);
  await cluster.kill(promoted);
  await cluster.advanceClock(8000);
  await cluster.shutdown();
  void [until, reply, caughtUp, EmbedisError];
}

void story;
