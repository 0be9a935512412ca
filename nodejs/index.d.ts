// Type declarations of the Node package `embedis` (index.js). Durations are milliseconds.

import type { Redis, Cluster as RedisCluster, RedisOptions, ClusterOptions } from 'ioredis';

/** A server that could not start or answer, with the reason (Redis's text where Redis has one). */
export class EmbedisError extends Error {}

/** The options of `Server.start`, `Nodes.start`, `ReplicaSet.start` and `Cluster.start`. */
export interface ServerOptions {
  /** A port on 127.0.0.1 (default: a free one). */
  port?: number;
  /** `requirepass`. */
  password?: string;
  /** ACL users: name → rules, e.g. `{ app: 'on >secret ~app:* +@all' }`. */
  users?: Record<string, string>;
  /** Any Redis configuration parameter, as CONFIG SET takes it. */
  config?: Record<string, string | number | boolean>;
  /** A Clock (shared by every server given it), or 'manual' (a manual clock of each server's
   * own; one for a whole cluster), 'controllable', 'system' (the default). */
  clock?: Clock | 'manual' | 'controllable' | 'system';
  /** Where to keep files (default: a temporary directory of the server's own). */
  dir?: string;
  appendonly?: boolean;
  databases?: number;
  /** Seeds the server's randomness (SPOP, RANDOMKEY, eviction). */
  seed?: number;
  /** Logs to standard output instead of staying silent. */
  verbose?: boolean;
}

/** A server's clock. Servers started on the same Clock read the same time. */
export class Clock {
  /** A clock frozen at the current real time: it moves only when told to. */
  static manual(): Clock;
  /** A clock that runs with real time until a test freezes, moves or skews it. */
  static controllable(): Clock;
  /** Milliseconds since the UNIX epoch, as the servers on this clock read them. */
  nowMs(): number;
  nowUs(): number;
  readonly isControllable: boolean;
  /** Moves the clock forward: TTLs, blocking timeouts and cluster timeouts fall due. */
  advance(ms: number): void;
  freeze(): void;
  resume(): void;
  /** How fast the clock runs against real time (1.0 normal): clock drift. */
  rate: number;
  /** Skews the clock ahead of (or behind) the time it would read; replaces any skew. */
  skew(ms: number, ahead?: boolean): void;
  readonly offsetMs: number;
  setOffset(offsetMs: number): void;
}

/** A server's fault injection: the failures that break locks. */
export class Faults {
  /** The next `times` commands `command` on a key matching `keyPattern` fail with `error`. */
  error(command: string, keyPattern: string, error: string, times?: number): void;
  /** Replies to matching commands are held back by `delayMs`. */
  latency(command: string, keyPattern: string, delayMs: number): void;
  /** Matching commands close their connection instead of answering. */
  close(command: string, keyPattern: string): void;
  /** The server accepts but answers nothing for `durationMs` (on its clock), as in a GC pause. */
  pause(durationMs: number): void;
  /** A replica stops applying its primary's stream while held (and catches up after). */
  holdReplication(held?: boolean): void;
  /** The end of the current pause, in UNIX ms on the server's clock, or null. */
  readonly pausedUntil: number | null;
  /** Closes every client connection now; returns how many. */
  dropConnections(): number;
  /**
   * The append-only file's next `times` writes (0 = all) fail with `errno`
   * (`os.constants.errno.ENOSPC`, `EIO`…), each after `short` of its bytes reached the file: a
   * full or failing disk. Writes then get `-MISCONF`, or under `appendfsync always` the server
   * stops without answering, as Redis does.
   */
  diskWriteError(errno: number, short?: number, times?: number): void;
  /** The append-only file's next `times` fsyncs (0 = all) fail with `errno`. */
  diskFsyncError(errno: number, times?: number): void;
  /** The rules in force, described. */
  list(): string[];
  clear(): void;
}

/** A server running on its own thread inside this process. */
export class Server {
  static start(options?: ServerOptions): Promise<Server>;
  /** `redis://127.0.0.1:<port>/` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly clock: Clock;
  readonly faults: Faults;
  /** On a primary the bytes of stream it produced, on a replica those it applied. */
  readonly replicationOffset: number;
  /** True on a replica whose link to its primary is up. */
  readonly linkUp: boolean;
  /** Runs one command as the embedding process (no connection, no AUTH) on database 0;
   * bulk strings come back as strings, an error reply throws EmbedisError. */
  command(...args: Array<string | number | Buffer>): any;
  commandIn(db: number, ...args: Array<string | number | Buffer>): any;
  /** An ioredis client connected to this server (ioredis must be installed). */
  client(options?: RedisOptions): Redis;
  /** Stops the server and starts it again on the same port with the data it keeps. */
  restart(): Promise<void>;
  /** Stops the server (its group's every server, for a member of one). */
  shutdown(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** `n` independent servers (five for a Redlock test). */
export class Nodes implements Iterable<Server> {
  static start(n?: number, options?: ServerOptions): Promise<Nodes>;
  readonly length: number;
  at(index: number): Server;
  readonly servers: Server[];
  [Symbol.iterator](): Iterator<Server>;
  readonly urls: string[];
  /** Moves every node's clock on by `ms` (each scaled by its clock's rate). */
  advance(ms: number): void;
  shutdown(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A primary and its replicas, linked when `start` resolves. */
export class ReplicaSet {
  static start(replicas?: number, options?: ServerOptions): Promise<ReplicaSet>;
  /** The current primary (after a failover too). */
  readonly primary: Server;
  readonly replicas: Server[];
  replica(i: number): Server;
  /** True once every replica applied all the primary wrote; false after the timeout. */
  waitForReplicas(timeoutMs?: number): Promise<boolean>;
  /** What Sentinel does when the primary fails: replica `to` is promoted, the others follow. */
  failOver(to: number): Promise<void>;
  shutdown(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A Redis Cluster of in-process nodes: the primaries first (index = shard), then replicas. */
export class Cluster {
  /** With `{ clock }` every node runs on one clock and `advanceClock` drives failure detection. */
  static start(shards?: number, replicas?: number, options?: ServerOptions): Promise<Cluster>;
  readonly nodes: Server[];
  readonly primaries: Server[];
  node(index: number): Server;
  nodeId(index: number): string;
  readonly startupNodes: Array<{ host: string; port: number }>;
  readonly urls: string[];
  static slotOf(key: string | Buffer): number;
  ownerOf(slot: number): number;
  /** A coordinated failover of `shard` to its replica; resolves to the new primary's index. */
  failOver(shard: number): Promise<number>;
  /** Stops node `index` at once, as SIGKILL would; the cluster finds out by itself. */
  kill(index: number): Promise<void>;
  /** Moves the cluster's clock on by `ms`, in 100 ms steps. */
  advanceClock(ms: number): Promise<void>;
  waitConsistent(): Promise<void>;
  waitForOwner(slot: number, index: number): Promise<void>;
  beginMigration(slot: number, source: number, target: number): void;
  migrateKey(key: string, source: number, target: number): void;
  finishMigration(slot: number, source: number, target: number): void;
  /** An ioredis Cluster client on this cluster (ioredis must be installed). */
  client(options?: ClusterOptions): RedisCluster;
  shutdown(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The key slot of `key` (CRC16 mod 16384), as cluster clients compute it. */
export function slotOf(key: string | Buffer): number;
/** Runs redis-server's command line in this process until the server shuts down. */
export function serve(args: string[]): number;
export const version: string;
