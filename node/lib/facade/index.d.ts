// Typings of the surface both entries share (`redlatch` and `redlatch/wasm`; facade/*.mjs).
// Hand-written, because the facade is JavaScript; each entry's own typings (../index.d.ts,
// wasm/index.d.ts) re-export these and add how that entry makes a Client. Checked by the
// typings tests of both entries, which compile strict programs against them.

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
  /**
   * Reentrant kinds (`rlock`, `fairLock`, `rwLock`) only: the owner its holds belong to, shared on purpose. Holds of one `Owner`
   * re-enter, wherever they are acquired; without one, an rlock re-enters only inside a
   * `using` scope of its owner (a bare `acquire()` is an owner of its own).
   */
  owner?: Owner
}

/**
 * An rlock owner to share on purpose: `client.rlock(name, { owner })`. Holds made through
 * rlock handles with the same Owner (of one client) re-enter; everyone else contends.
 */
export declare class Owner {
  private readonly brand
  constructor()
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

/** Connection(s) to Redis and the locks made from them. Made by each entry's factories. */
export declare class Client {
  protected constructor()
  /** This client's id (a UUID; the first half of every reentrant owner id). */
  readonly id: string
  /** Number of Redis nodes (1 = single node, more = quorum). */
  readonly nodeCount: number
  /** `true` after `close()`. */
  readonly closed: boolean
  /** A lease lock, wire-compatible with node-redlock and redis-py. Throws `InvalidArgumentError` for bad options. */
  lock(name: string, options?: LockOptions): Lock
  /**
   * A reentrant lock (Redisson RLock layout). Its holds re-enter only for one owner: the
   * `owner` option, else the rlock `using` scope the calling code runs in; a bare
   * `acquire()` outside one is an owner of its own.
   */
  rlock(name: string, options?: LockOptions): Lock
  /**
   * A fair lock (Redisson RFairLock): reentrant with the owners of `rlock`, granted strictly in
   * the order waiters queued, across processes and languages. A waiter that gives up or is
   * aborted leaves the queue at once; one that dies is dropped once its slot passes (its
   * `waitMs`, or 5 minutes when it waits forever, Redisson's `fairLockWaitTimeout`).
   * `waitMs: 0` never queues. Not on quorum clients (`InvalidArgumentError` at acquire).
   */
  fairLock(name: string, options?: LockOptions): Lock
  /**
   * A read/write lock (Redisson RReadWriteLock): `.read()` / `.write()` are locks whose
   * options default to these. Many readers or one writer; an owner holding the write lock
   * may take the read lock; a write acquire by an owner holding a read hold rejects at once
   * with `WouldDeadlockError`. Not on quorum clients (`InvalidArgumentError` at acquire).
   */
  rwLock(name: string, options?: LockOptions): RwLock
  /** `client.lock(name, { leaseMs, fenced, fenceTtlMs }).using(fn, { waitMs, signal })`. */
  withLock<T>(name: string, fn: (signal: AbortSignal) => T | PromiseLike<T>, options?: WithLockOptions): Promise<Awaited<T>>
  /** Admin: deletes lock `name` whatever its owner. Resolves `true` when a lock was deleted; rejects with `QuorumError` when fewer than a majority of nodes answer. */
  forceUnlock(name: string): Promise<boolean>
  /** Rejects pending acquires and releases live holds (their `signal` aborts); later calls reject with `RedisConnectionError`. Idempotent. */
  close(): Promise<void>
}

/** The kind of a lock (the core's `LockKind`). */
export type LockKind = 'lease' | 'reentrant' | 'fair' | 'read' | 'write'

/** A named lock. Each `acquire()` returns its own `Held`. */
export declare class Lock {
  private constructor()
  /** The lock's name (its Redis key). */
  readonly name: string
  /** `true` for the reentrant kinds (`rlock`, `fairLock`, `rwLock(...).read()` / `.write()`). */
  readonly reentrant: boolean
  /** The lock's kind. */
  readonly kind: LockKind
  /** E.g. `Lock(fair "orders")`. */
  toString(): string
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
  /** `rlock`: how many holds the current owner has: the `owner` option's, else the enclosing scope's (0 without one, and for lease locks). */
  holdCount(): Promise<number>
}

/**
 * The two locks of a Redisson RReadWriteLock name. Owners are those of `rlock`: inside a
 * `write().using()` scope (or with one `owner`), `read()` acquires are the writer's and are
 * granted; bare acquires are owners of their own and contend.
 */
export declare class RwLock {
  private constructor()
  /** The lock's name (its Redis hash). */
  readonly name: string
  /** The read lock (shared among readers); options over the rwLock's. */
  read(options?: LockOptions): Lock
  /** The write lock (exclusive); rejects with `WouldDeadlockError` when its owner holds a read hold. */
  write(options?: LockOptions): Lock
  toString(): string
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
  /** Aborts with a `LockLostError` as its reason when the hold is lost (or released by `client.close()`); never after a release. */
  readonly signal: AbortSignal
  /** `true` once the hold is known lost (or released by `client.close()`). */
  readonly lost: boolean
  /**
   * Releases the hold, at most once. Rejects with `LockLostError` / `NotOwnedError` (see
   * `reason`) when it is no longer ours; after `RedisConnectionError` / `QuorumError`
   * (outcome unknown) or `NoPermissionError` / `OutOfMemoryError` (nothing changed) the hold
   * is kept and `release()` may be called again.
   */
  release(): Promise<void>
  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal sets it back to the watchdog timeout. */
  extend(leaseMs: number): Promise<void>
  /** Asks Redis whether this hold is still ours. */
  owned(): Promise<boolean>
  /** Releases the hold unless already released; an unknown outcome is retried in the background while the lease lasts. */
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
  | 'ERR_WOULD_DEADLOCK'

/** Why a hold is not ours, the same word in every redlatch language. */
export type Reason = 'expired' | 'taken' | 'deleted' | 'never_held'

/** `code` -> numeric status (equal to the C `redlatch_status` value). */
export declare const STATUS: Readonly<Record<ErrorCode, number>>

/** Base class of every redlatch error (as such for `ERR_REDIS` and `ERR_PANIC`). The same classes in both entries. */
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
/** Redis unreachable, the transport failed, a network timeout, or the client is closed (`ERR_CONNECTION`). */
export declare class RedisConnectionError extends LockError {}
/** Bad input; nothing was sent to Redis (`ERR_INVALID_ARGUMENT`). */
export declare class InvalidArgumentError extends LockError {}
/** The ACL user may not run a command or use a key or channel (`ERR_NO_PERMISSION`); nothing changed. */
export declare class NoPermissionError extends LockError {}
/** Redis is out of memory (`ERR_OUT_OF_MEMORY`). */
export declare class OutOfMemoryError extends LockError {}
/** The lock's name holds application data (`ERR_KEY_CONFLICT`); rejected at once. */
export declare class KeyConflictError extends LockError {}
/**
 * Refused at once because it could only wait forever (`ERR_WOULD_DEADLOCK`, status 12): a
 * write acquire by an owner holding a read hold of the same rw lock. Nothing changed in Redis.
 */
export declare class WouldDeadlockError extends LockError {}
