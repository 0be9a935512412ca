// ioredis's Cluster across an automatic failover of an embedis cluster (driven by
// tests/it/cluster.rs): it writes a key, asks the driver to kill the key's primary and move
// the cluster's clock past the node timeout, then keeps using the cluster — the client finds
// the promoted replica by itself (a connection error, then MOVED or a refreshed slot map) and
// reads the replicated key.
//
// Arguments: the nodes' ports. Prints "KILL <port>"; the driver answers "done" on stdin.
"use strict";

const Redis = require("ioredis");
const readline = require("readline");

const input = readline.createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

function check(condition, what) {
  if (!condition) throw new Error(what);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function portOf(cluster, key) {
  const slot = require("cluster-key-slot")(key);
  const [primary] = cluster.slots[slot];
  return Number(primary.split(":")[1]);
}

async function main() {
  const ports = process.argv.slice(2).map(Number);
  const cluster = new Redis.Cluster(ports.map((port) => ({ host: "127.0.0.1", port })));
  await new Promise((resolve, reject) => {
    cluster.once("ready", resolve);
    cluster.once("error", reject);
  });
  // A failed connection is part of the failover: reported, not fatal.
  cluster.on("error", () => {});
  await cluster.set("order:{42}", "paid");
  const port = portOf(cluster, "order:{42}");
  // Replicated before the primary dies: the replica elected in its place has it.
  const primary = cluster.nodes("master").find((n) => n.options.port === port);
  check((await primary.wait(1, 5000)) >= 1, "the write reached the replica");
  console.log(`KILL ${port}`);
  check((await lines.next()).value.trim() === "done", "the driver's answer");
  const deadline = Date.now() + 20000;
  let value;
  for (;;) {
    try {
      value = await cluster.get("order:{42}");
      await cluster.set("order:{43}", "new");
      break;
    } catch (e) {
      if (Date.now() > deadline) throw e;
      console.log(`retrying after ${e.name}: ${e.message}`);
      await sleep(200);
    }
  }
  check(value === "paid", `read ${value}`);
  await new Promise((resolve) => cluster.refreshSlotsCache(resolve));
  const newPort = portOf(cluster, "order:{42}");
  check(newPort !== port, `still ${port}`);
  console.log("followed the failover");
  cluster.disconnect();
  input.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
