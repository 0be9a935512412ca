'use strict';
// embedis for Node.js: a Redis-compatible server started inside the Node process in
// milliseconds, with a clock and faults the test controls. The classes here shape the native
// addon (src/, napi-rs) into the API declared in index.d.ts; every server call goes to Rust.

const native = require('./embedis.node');

/** A server that could not start or answer, with the reason (Redis's text where Redis has one). */
class EmbedisError extends Error {
  constructor(message) {
    super(message);
    this.name = 'EmbedisError';
  }
}

/** The native addon's errors as JavaScript ones: a mistake in the call is a TypeError. */
function translate(error) {
  if (!(error instanceof Error) || error instanceof EmbedisError || error instanceof TypeError) {
    return error;
  }
  const translated =
    error.code === 'InvalidArg' ? new TypeError(error.message) : new EmbedisError(error.message);
  translated.stack = `${translated.name}: ${error.message}\n${(error.stack || '').split('\n').slice(1).join('\n')}`;
  return translated;
}

function call(fn) {
  try {
    return fn();
  } catch (error) {
    throw translate(error);
  }
}

async function wait(promise) {
  try {
    return await promise;
  } catch (error) {
    throw translate(error);
  }
}

/** A duration in milliseconds (a number, fractions allowed). */
function millis(value, what) {
  if (typeof value !== 'number' || !(value >= 0)) {
    throw new TypeError(`${what} is a number of milliseconds, not ${value}`);
  }
  return value;
}

/** An options object as the entries the addon reads; the clock object travels apart. */
function entries(options) {
  const list = [];
  let clock = null;
  for (const [name, value] of Object.entries(options || {})) {
    if (value === undefined) continue;
    if (value instanceof Clock) {
      if (name !== 'clock') throw new TypeError(`option ${name} cannot be a Clock`);
      clock = value._native;
    } else if (typeof value === 'boolean') {
      list.push({ name, flag: value });
    } else if (typeof value === 'number' && Number.isInteger(value)) {
      list.push({ name, int: value });
    } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      list.push({ name, pairs: Object.entries(value).map(([k, v]) => [k, String(v)]) });
    } else {
      list.push({ name, text: String(value) });
    }
  }
  return [list, clock];
}

function moved(done) {
  if (!done) {
    throw new EmbedisError(
      "the system clock cannot be moved: start the server with { clock: 'manual' }",
    );
  }
}

/** A server's clock. Servers started on the same Clock read the same time. */
class Clock {
  constructor(nativeClock) {
    this._native = nativeClock;
  }
  /** A clock frozen at the current real time: it moves only when told to. */
  static manual() {
    return new Clock(native.NativeClock.manual());
  }
  /** A clock that runs with real time until a test freezes, moves or skews it. */
  static controllable() {
    return new Clock(native.NativeClock.controllable());
  }
  nowMs() {
    return this._native.nowMs();
  }
  nowUs() {
    return this._native.nowUs();
  }
  get isControllable() {
    return this._native.isControllable();
  }
  advance(ms) {
    moved(this._native.advance(millis(ms, 'advance')));
  }
  freeze() {
    moved(this._native.freeze());
  }
  resume() {
    moved(this._native.resume());
  }
  get rate() {
    return this._native.rate();
  }
  set rate(rate) {
    moved(this._native.setRate(rate));
  }
  skew(ms, ahead = true) {
    moved(this._native.skew(millis(ms, 'skew'), ahead));
  }
  get offsetMs() {
    return this._native.offsetMs();
  }
  setOffset(offsetMs) {
    moved(this._native.setOffset(offsetMs));
  }
}

/** A server's fault injection: the failures that break locks. */
class Faults {
  constructor(group, index) {
    this._group = group;
    this._index = index;
  }
  error(command, keyPattern, error, times = 1) {
    call(() => this._group.faultError(this._index, command, keyPattern, error, times));
  }
  latency(command, keyPattern, delayMs) {
    const delay = millis(delayMs, 'latency');
    call(() => this._group.faultLatency(this._index, command, keyPattern, delay));
  }
  close(command, keyPattern) {
    call(() => this._group.faultClose(this._index, command, keyPattern));
  }
  pause(durationMs) {
    const duration = millis(durationMs, 'pause');
    call(() => this._group.faultPause(this._index, duration));
  }
  holdReplication(held = true) {
    call(() => this._group.faultHoldReplication(this._index, held));
  }
  get pausedUntil() {
    return call(() => this._group.faultPausedUntil(this._index)) ?? null;
  }
  dropConnections() {
    return call(() => this._group.faultDropConnections(this._index));
  }
  diskWriteError(errno, short = 0, times = 0) {
    call(() => this._group.faultDiskWriteError(this._index, errno, short, times));
  }
  diskFsyncError(errno, times = 0) {
    call(() => this._group.faultDiskFsyncError(this._index, errno, times));
  }
  list() {
    return call(() => this._group.faultList(this._index));
  }
  clear() {
    call(() => this._group.faultClear(this._index));
  }
}

/** Adds `shutdown()` as `Symbol.asyncDispose`, for `await using`. */
function disposable(cls) {
  if (Symbol.asyncDispose) {
    cls.prototype[Symbol.asyncDispose] = function dispose() {
      return this.shutdown();
    };
  }
}

/** A server running on its own thread inside this process. */
class Server {
  constructor(group, index) {
    this._group = group;
    this._index = index;
  }
  /** Starts a server; resolves once it accepts connections. */
  static async start(options = {}) {
    const [list, clock] = entries(options);
    return new Server(await wait(call(() => native.NativeGroup.startServer(list, clock))), 0);
  }
  get url() {
    return call(() => this._group.url(this._index));
  }
  get host() {
    return call(() => this._group.host(this._index));
  }
  get port() {
    return call(() => this._group.port(this._index));
  }
  get clock() {
    return new Clock(call(() => this._group.clock(this._index)));
  }
  get faults() {
    return new Faults(this._group, this._index);
  }
  get replicationOffset() {
    return call(() => this._group.replicationOffset(this._index));
  }
  get linkUp() {
    return call(() => this._group.linkUp(this._index));
  }
  /** Runs one command as the embedding process (no connection, no AUTH) on database 0. */
  command(...args) {
    return this.commandIn(0, ...args);
  }
  /** Runs one command on database `db`; an error reply throws EmbedisError. */
  commandIn(db, ...args) {
    const flat = args.flat().map((a) => (Buffer.isBuffer(a) ? a : String(a)));
    return call(() => this._group.command(this._index, db, flat));
  }
  /** An ioredis client connected to this server (ioredis must be installed). */
  client(options = {}) {
    const Redis = require('ioredis');
    return new Redis(this.port, this.host, options);
  }
  /** Stops the server and starts it again on the same port with the data it keeps. */
  restart() {
    return wait(this._group.restart());
  }
  /** Stops the server (its group's every server, for a member of one). */
  shutdown() {
    return wait(this._group.shutdown());
  }
}
disposable(Server);

/** Views of members `from..to` of a group. */
function views(group, from, to) {
  const list = [];
  for (let i = from; i < to; i++) list.push(new Server(group, i));
  return list;
}

/** `n` independent servers (five for a Redlock test). Iterable; `nodes.at(i)`. */
class Nodes {
  constructor(group) {
    this._group = group;
  }
  static async start(n = 5, options = {}) {
    const [list, clock] = entries(options);
    return new Nodes(await wait(call(() => native.NativeGroup.startNodes(n, list, clock))));
  }
  get length() {
    return call(() => this._group.size());
  }
  at(index) {
    const i = index < 0 ? index + this.length : index;
    if (!(i >= 0 && i < this.length)) throw new RangeError('node index out of range');
    return new Server(this._group, i);
  }
  get servers() {
    return views(this._group, 0, this.length);
  }
  [Symbol.iterator]() {
    return this.servers[Symbol.iterator]();
  }
  get urls() {
    return call(() => this._group.urls());
  }
  /** Moves every node's clock on by `ms` (each scaled by its clock's rate). */
  advance(ms) {
    const by = millis(ms, 'advance');
    call(() => this._group.advanceNodes(by));
  }
  shutdown() {
    return wait(this._group.shutdown());
  }
}
disposable(Nodes);

/** A primary and `replicas` replicas of it, linked when `start` resolves. */
class ReplicaSet {
  constructor(group) {
    this._group = group;
  }
  static async start(replicas = 2, options = {}) {
    const [list, clock] = entries(options);
    const group = await wait(call(() => native.NativeGroup.startReplicaSet(replicas, list, clock)));
    return new ReplicaSet(group);
  }
  /** The current primary. */
  get primary() {
    return new Server(this._group, 0);
  }
  /** The current replicas, in start order. */
  get replicas() {
    return views(this._group, 1, call(() => this._group.size()));
  }
  replica(i) {
    if (!(i >= 0 && i + 1 < call(() => this._group.size()))) throw new RangeError('no such replica');
    return new Server(this._group, i + 1);
  }
  /** Resolves true once every replica applied all the primary wrote; false after the timeout. */
  waitForReplicas(timeoutMs = 10000) {
    return wait(this._group.waitForReplicas(millis(timeoutMs, 'timeout')));
  }
  /** What Sentinel does when the primary fails: replica `to` is promoted, the others follow. */
  failOver(to) {
    return wait(this._group.failOverReplicaSet(to));
  }
  shutdown() {
    return wait(this._group.shutdown());
  }
}
disposable(ReplicaSet);

/** A Redis Cluster of in-process nodes: the primaries first (index = shard), then replicas. */
class Cluster {
  constructor(group) {
    this._group = group;
  }
  static async start(shards = 3, replicas = 0, options = {}) {
    const [list, clock] = entries(options);
    const start = () => native.NativeGroup.startCluster(shards, replicas, list, clock);
    return new Cluster(await wait(call(start)));
  }
  get nodes() {
    return views(this._group, 0, call(() => this._group.size()));
  }
  get primaries() {
    return views(this._group, 0, call(() => this._group.shards()));
  }
  node(index) {
    return new Server(this._group, index);
  }
  nodeId(index) {
    return call(() => this._group.nodeId(index));
  }
  /** `{ host, port }` of every node, for a cluster client's startup nodes. */
  get startupNodes() {
    return this.nodes.map((node) => ({ host: node.host, port: node.port }));
  }
  get urls() {
    return call(() => this._group.urls());
  }
  static slotOf(key) {
    return native.slotOf(key);
  }
  /** The index of the node serving `slot`. */
  ownerOf(slot) {
    return call(() => this._group.ownerOf(slot));
  }
  /** A coordinated failover of `shard` to its replica; resolves to the new primary's index. */
  failOver(shard) {
    return wait(this._group.failOverShard(shard));
  }
  /** Stops node `index` at once, as SIGKILL would; the cluster finds out by itself. */
  kill(index) {
    return wait(this._group.kill(index));
  }
  /** Moves the cluster's clock (`{ clock }` at start) on by `ms`, in 100 ms steps. */
  advanceClock(ms) {
    return wait(this._group.advanceClusterClock(millis(ms, 'advanceClock')));
  }
  waitConsistent() {
    return wait(this._group.waitConsistent());
  }
  waitForOwner(slot, index) {
    return wait(this._group.waitForOwner(slot, index));
  }
  beginMigration(slot, source, target) {
    call(() => this._group.beginMigration(slot, source, target));
  }
  migrateKey(key, source, target) {
    call(() => this._group.migrateKey(key, source, target));
  }
  finishMigration(slot, source, target) {
    call(() => this._group.finishMigration(slot, source, target));
  }
  /** An ioredis Cluster client on this cluster (ioredis must be installed). */
  client(options = {}) {
    const Redis = require('ioredis');
    return new Redis.Cluster(this.startupNodes, options);
  }
  shutdown() {
    return wait(this._group.shutdown());
  }
}
disposable(Cluster);

module.exports = {
  Clock,
  Cluster,
  EmbedisError,
  Faults,
  Nodes,
  ReplicaSet,
  Server,
  slotOf: (key) => native.slotOf(key),
  serve: (args) => native.serve(args),
  version: native.version(),
};
