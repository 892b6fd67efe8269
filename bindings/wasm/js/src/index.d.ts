// Typings of `redlatch/wasm` (every entry: index.mjs, index.cjs, web.mjs, workerd.mjs): the
// surface shared with `redlatch` (../lib/facade/index.d.ts) plus this entry's transports and
// factories. js/test/typings.test.mjs compiles a usage file against them.
import type { Client } from '../lib/facade/index.js'

export * from '../lib/facade/index.js'

/** What a transport's promise may resolve to: a Redis reply as JS clients represent it. */
export type RedisReply = null | undefined | number | bigint | boolean | string | Uint8Array | RedisReply[]

/**
 * One Redis node, reached through a client the host provides (node-redis, ioredis, an HTTP
 * Redis client). `eval` runs a Lua script: `EVAL script <keys.length> ...keys ...args`.
 * `evalsha`, when present, is tried first (`EVALSHA sha1 ...`), and `eval` after a `NOSCRIPT`
 * error. Reject with the client's error: Redis error replies (an error named `ReplyError` or
 * `ErrorReply`, or whose message starts with a Redis error code such as `ERR`) are reported as
 * such; anything else counts as a connection failure and is retried within the network timeout.
 */
export interface RedisTransport {
  eval(script: string, keys: string[], args: string[]): Promise<RedisReply> | RedisReply
  evalsha?(sha1: string, keys: string[], args: string[]): Promise<RedisReply> | RedisReply
  /** The node's name in error messages (no credentials), e.g. `10.0.0.5:6379`. */
  label?: string
}

/** Settings of a client. All durations are integer milliseconds. */
export interface ClientOptions {
  /** Lease of locks acquired without `leaseMs` (watchdog mode), renewed every third of it. Default 30000; at least 3. */
  watchdogTimeoutMs?: number
  /** Timeout of one call to Redis; also how long errors are retried by a wait without `waitMs` (one with `waitMs` retries them until it ends). Default 3000. */
  networkTimeoutMs?: number
  /** Quorum mode: per-node timeout. Default `min(lease / 20, 250)`. */
  nodeTimeoutMs?: number
  /** Longest pause between attempts while waiting (there is no pub/sub: waiters poll, bounded by the holder's TTL). Default 50. */
  pollIntervalMs?: number
}

/** A client for one Redis node reached through `transport`. Synchronous: nothing is sent until a lock is used. */
export declare function createClient(transport: RedisTransport, options?: ClientOptions): Client
/** A Redlock client over several independent Redis nodes, one transport each (a majority must grant). */
export declare function createQuorumClient(transports: readonly RedisTransport[], options?: ClientOptions): Client

/** A transport over a node-redis (`redis` v4/v5) client for one node. */
export declare function fromNodeRedis(
  client: { sendCommand(args: string[]): Promise<unknown>; options?: { url?: string } },
  options?: { label?: string },
): RedisTransport
/** A transport over an ioredis client for one node. */
export declare function fromIoredis(
  client: {
    eval(script: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>
    evalsha(sha1: string, numkeys: number, ...keysAndArgs: string[]): Promise<unknown>
    options?: { host?: string | undefined; port?: number | undefined }
  },
  options?: { label?: string },
): RedisTransport

/** `true` when `using` scopes of rlocks are followed into the code they run on this host (AsyncLocalStorage); else rlocks re-enter only for an explicit `Owner`. */
export declare function rlockFollowsAsyncChains(): boolean
