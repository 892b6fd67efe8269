// Typings of `redlatch/wasm` (every entry: index.mjs, index.cjs, web.mjs, workerd.mjs). The
// facade is hand-written JavaScript (lib/), so these are too; js/test/typings.test.mjs
// compiles a usage file against them. The API is the native entry's (`redlatch`), with
// transports in place of URLs.

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
  /** Lease of locks acquired without `leaseMs` (watchdog mode), renewed every third of it. Default 30000. */
  watchdogTimeoutMs?: number
  /** Timeout of one call to Redis; also how long errors are retried while waiting. Default 3000. */
  networkTimeoutMs?: number
  /** Quorum mode: per-node timeout. Default `min(lease / 20, 250)`. */
  nodeTimeoutMs?: number
  /** Longest pause between attempts while waiting (there is no pub/sub: waiters poll, bounded by the holder's TTL). Default 50. */
  pollIntervalMs?: number
}

/** Options of a lock handle (`client.lock(name, options)`). */
export interface LockOptions {
  /** Fixed lease in ms: Redis drops the lock after it unless released or extended; no renewal. Absent: watchdog mode. */
  leaseMs?: number
  /** Default wait of `acquire` / `using` in ms (0 = one try). Absent or `Infinity`: wait until acquired. */
  waitMs?: number
  /** Fenced lock: every acquire returns a fencing token (single node only); a re-entry gets the outer hold's token. */
  fenced?: boolean
  /**
   * Fenced locks: the counter key `redisson_lock_token:{name}` expires this many ms after the
   * last fenced acquire (absent: it persists). Hazard: tokens then restart at 1 (see README).
   */
  fenceTtlMs?: number
}

/** Options of one acquisition. */
export interface AcquireOptions {
  /** How long to wait in ms (0 = one try, `Infinity` = until acquired). Default: the lock's `waitMs`, else forever. */
  waitMs?: number
  /** Cancels a pending acquire: it rejects with `signal.reason` and leaves nothing behind in Redis. */
  signal?: AbortSignal
}

/** `withLock` options: the lock's and the acquisition's in one object. */
export interface WithLockOptions extends AcquireOptions {
  /** Fixed lease in ms (absent: watchdog mode, renewed while `fn` runs). */
  leaseMs?: number
  /** Fenced lock (single node only). */
  fenced?: boolean
  /** Fenced locks: the counter key's TTL in ms after the last fenced acquire (absent: it persists). */
  fenceTtlMs?: number
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
    eval(...args: Array<string | number>): Promise<unknown>
    evalsha(...args: Array<string | number>): Promise<unknown>
    options?: { host?: string; port?: number }
  },
  options?: { label?: string },
): RedisTransport

/** `true` when `rlock` reentrancy follows async call chains on this host (AsyncLocalStorage); else each rlock handle is one owner. */
export declare function rlockFollowsAsyncChains(): boolean

/** Locks over host transports. Create with `createClient` / `createQuorumClient`. */
export declare class Client {
  private constructor()
  /** This client's id (a UUID; the first half of every reentrant owner id). */
  readonly id: string
  /** Number of Redis nodes (1 = single node, more = quorum). */
  readonly nodeCount: number
  /** `true` after `close()`. */
  readonly closed: boolean
  /** A lease lock, wire-compatible with node-redlock and redis-py. Throws `InvalidArgumentError` for bad options. */
  lock(name: string, options?: LockOptions): Lock
  /** A reentrant lock (Redisson RLock layout). */
  rlock(name: string, options?: LockOptions): Lock
  /** `client.lock(name, { leaseMs, fenced }).using(fn, { waitMs, signal })`. */
  withLock<T>(name: string, fn: (signal: AbortSignal) => T | PromiseLike<T>, options?: WithLockOptions): Promise<Awaited<T>>
  /** Admin: deletes lock `name` whatever its owner. Resolves `true` when a lock was deleted; rejects with `QuorumError` when fewer than a majority of nodes answer. */
  forceUnlock(name: string): Promise<boolean>
  /** Rejects pending acquires and releases live holds; the transports stay open. Idempotent. */
  close(): Promise<void>
}

/** A named lock. Each `acquire()` returns its own `Held`. */
export declare class Lock {
  private constructor()
  /** The lock's name (its Redis key). */
  readonly name: string
  /** `true` for `client.rlock` locks. */
  readonly reentrant: boolean
  /** Acquires the lock. Rejects with `NotAcquiredError` when the wait runs out, `signal.reason` when aborted. */
  acquire(options?: AcquireOptions): Promise<Held>
  /**
   * Runs `fn(signal)` under the lock and releases it afterwards. Resolves to `fn`'s result;
   * rejects with `fn`'s own error if it threw, else with `LockLostError` if the hold was lost.
   */
  using<T>(fn: (signal: AbortSignal) => T | PromiseLike<T>, options?: AcquireOptions): Promise<Awaited<T>>
  /** `true` when anyone holds the lock (asks Redis). */
  locked(): Promise<boolean>
  /** Remaining lease in ms of whoever holds the lock; `null` when free. */
  ttl(): Promise<number | null>
  /** `rlock`: how many holds the current owner has (0 for lease locks). */
  holdCount(): Promise<number>
}

/** One acquisition; `await using held = await lock.acquire()` releases it at the end of the block. */
export declare class Held implements AsyncDisposable {
  private constructor()
  /** The lock's name. */
  readonly name: string
  /** Fencing token of this acquisition (`fenced: true` locks), else `null`. */
  readonly fencingToken: number | null
  /** The lease in ms (the watchdog timeout in watchdog mode). */
  readonly leaseMs: number
  /** Aborts with a `LockLostError` as its reason when the hold is lost; never after a release. */
  readonly signal: AbortSignal
  /** `true` once the hold is known lost. */
  readonly lost: boolean
  /**
   * Releases the hold, at most once. Rejects with `LockLostError` / `NotOwnedError` (see
   * `reason`) when it is no longer ours; after `RedisConnectionError` (outcome unknown) the
   * hold is kept and `release()` may be called again.
   */
  release(): Promise<void>
  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal sets it back to the watchdog timeout. */
  extend(leaseMs: number): Promise<void>
  /** Asks Redis whether this hold is still ours. */
  owned(): Promise<boolean>
  /** Releases the hold unless already released. */
  [Symbol.asyncDispose](): Promise<void>
}

/** Stable error codes (`ERR_<X>`, the C `REDLATCH_<X>`) and their numeric statuses. */
export type ErrorCode =
  | 'ERR_NOT_ACQUIRED'
  | 'ERR_NOT_OWNED'
  | 'ERR_LOCK_LOST'
  | 'ERR_QUORUM'
  | 'ERR_CONNECTION'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_REDIS'
  | 'ERR_PANIC'
  | 'ERR_NO_PERMISSION'
  | 'ERR_OUT_OF_MEMORY'
  | 'ERR_KEY_CONFLICT'

/** Why a hold is not ours, the same word in every redlatch language. */
export type Reason = 'expired' | 'taken' | 'deleted' | 'never_held'

/** `code` -> numeric status (equal to the C `redlatch_status` value). */
export declare const STATUS: Readonly<Record<ErrorCode, number>>

/** Base class of every redlatch error (as such for `ERR_REDIS` and `ERR_PANIC`). */
export declare class LockError extends Error {
  constructor(message?: string, options?: { code?: ErrorCode; cause?: unknown; reason?: Reason | null })
  readonly code: ErrorCode
  readonly status: number
  /** `NotOwnedError` / `LockLostError`: why the hold is not ours; `null` for other errors. */
  readonly reason: Reason | null
}
/** The wait ran out (`ERR_NOT_ACQUIRED`). */
export declare class NotAcquiredError extends LockError {}
/** Release or extend of a hold that is not ours (`ERR_NOT_OWNED`). */
export declare class NotOwnedError extends LockError {}
/** The hold was lost while held (`ERR_LOCK_LOST`). */
export declare class LockLostError extends NotOwnedError {}
/** Quorum mode: no majority (`ERR_QUORUM`); `nodes` has per-node outcomes when known. */
export declare class QuorumError extends LockError {
  readonly nodes: ReadonlyArray<{ node: string; error: string | null }>
}
/** The transport failed, a network timeout, or the client is closed (`ERR_CONNECTION`). */
export declare class RedisConnectionError extends LockError {}
/** Bad input; nothing was sent to Redis (`ERR_INVALID_ARGUMENT`). */
export declare class InvalidArgumentError extends LockError {}
/** The ACL user may not run a command or use a key or channel (`ERR_NO_PERMISSION`); nothing changed. */
export declare class NoPermissionError extends LockError {}
/** Redis is out of memory (`ERR_OUT_OF_MEMORY`). */
export declare class OutOfMemoryError extends LockError {}
/** The lock's name holds application data (`ERR_KEY_CONFLICT`); rejected at once. */
export declare class KeyConflictError extends LockError {}
