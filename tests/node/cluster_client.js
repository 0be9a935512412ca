// ioredis's Cluster against a cluster of embedis nodes (driven by tests/it/cluster.rs).
//
// Arguments: the nodes' ports. The script asks the test to change the cluster by printing
// MIGRATE-BEGIN <slot> <from-port> <to-port>, MIGRATE-KEY <key> and MIGRATE-FINISH, each
// answered by a line on stdin once done.
"use strict";

const Redis = require("ioredis");
const calculateSlot = require("cluster-key-slot");
const readline = require("readline");

const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

async function ask(line) {
  console.log(line);
  await lines.next();
}

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const RELEASE = `
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
else
    return 0
end`;

async function main() {
  const ports = process.argv.slice(2).map(Number);
  const cluster = new Redis.Cluster(ports.map((port) => ({ host: "127.0.0.1", port })));
  await new Promise((resolve, reject) => {
    cluster.once("ready", resolve);
    cluster.once("error", reject);
  });
  check(cluster.nodes("master").length === 3, "three primaries");

  for (let i = 0; i < 200; i++) await cluster.set(`key:${i}`, `value:${i}`);
  for (let i = 0; i < 200; i++) check((await cluster.get(`key:${i}`)) === `value:${i}`, `key:${i}`);
  console.log("reads and writes on every shard");

  // ioredis pipelines must stay in one slot: a hash tag keeps them together.
  const pipe = cluster.pipeline();
  for (let i = 0; i < 50; i++) pipe.incr(`{p}counter:${i}`);
  const results = await pipe.exec();
  check(results.every(([err, n]) => err === null && n === 1), "pipeline INCRs");
  console.log("pipeline in one slot");

  const lock = "lock:{orders}";
  const token = `${process.pid}-${Date.now()}`;
  check((await cluster.set(lock, token, "PX", 10000, "NX")) === "OK", "lock taken");
  check((await cluster.set(lock, "other", "PX", 10000, "NX")) === null, "lock refused");
  check((await cluster.eval(RELEASE, 1, lock, "not-mine")) === 0, "stranger's release refused");
  check((await cluster.eval(RELEASE, 1, lock, token)) === 1, "owner's release");
  console.log("SET NX PX lock with a Lua release");

  const key = "mig:{7}";
  await cluster.set(key, "before");
  await cluster.set("mig2:{7}", "stays");
  const slot = calculateSlot(key);
  const slots = await cluster.cluster("SLOTS");
  const range = slots.find(([first, last]) => first <= slot && slot <= last);
  const source = range[2][1];
  const target = ports.find((p) => p !== source);
  await ask(`MIGRATE-BEGIN ${slot} ${source} ${target}`);
  await ask(`MIGRATE-KEY ${key}`);
  check((await cluster.get(key)) === "before", "read after ASK");
  check((await cluster.get("mig2:{7}")) === "stays", "key still on the source");
  check((await cluster.set("new:{7}", "created")) === "OK", "write after ASK");
  console.log("followed ASK during a migration");
  await ask("MIGRATE-FINISH");
  check((await cluster.get(key)) === "before", "read after MOVED");
  check((await cluster.get("new:{7}")) === "created", "key created during the migration");
  console.log("followed MOVED after resharding");

  await cluster.quit();
  input.close();
  console.log("all cluster-client checks passed");
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
