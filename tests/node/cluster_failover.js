// ioredis's Cluster across an automatic failover of an embedis cluster (driven by
// tests/it/cluster.rs): it writes a key, asks the driver to kill the key's primary and move
// the cluster's clock past the node timeout, then keeps using the cluster — the client finds
// the promoted replica by itself (a connection error, then MOVED or a refreshed slot map) and
// reads the replicated key; a Redisson reentrant lock taken before the failover is re-entered and
// released on the new primary.
//
// Arguments: the nodes' ports. Prints "KILL <port>"; the driver answers "done" on stdin.
"use strict";

const fs = require("fs");
const path = require("path");
const Redis = require("ioredis");
const readline = require("readline");

// Redisson's reentrant lock, as its clients send it (tests/fixtures/lock-scripts).
const script = (name) =>
  fs.readFileSync(path.join(__dirname, "..", "fixtures", "lock-scripts", name), "utf8");
const ACQUIRE = script("reentrant-acquire.lua");
const RELEASE = script("reentrant-release.lua");

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
  // A Redisson lock in the same slot, held across the failover by its owner.
  const lock = "lock:{42}";
  check((await cluster.eval(ACQUIRE, 1, lock, 60000, "owner:1")) === null, "lock taken");
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
  // The lock scripts run on the new primary, which got the lock before its primary died.
  check((await cluster.eval(ACQUIRE, 1, lock, 60000, "owner:1")) === null, "re-entered");
  check((await cluster.eval(ACQUIRE, 1, lock, 60000, "owner:2")) > 0, "held against another");
  const channel = "redisson_lock__channel:{42}";
  check((await cluster.eval(RELEASE, 2, lock, channel, 0, 60000, "owner:1", "publish")) === 0, "one hold left");
  check((await cluster.eval(RELEASE, 2, lock, channel, 0, 60000, "owner:1", "publish")) === 1, "released");
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
