// Typings of the surface both entries share (`redlatch` and `redlatch/wasm`; facade/*.mjs).
// Hand-written, because the facade is JavaScript; each entry's own typings (../index.d.ts,
// wasm/index.d.ts) re-export these and add how that entry makes a Client. Checked by the
// typings tests of both entries, which compile strict programs against them.

/** Options of a lease-lock handle (`client.lock(name, options)`). */
export interface LeaseLockOptions {
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

/** Options of a reentrant lock handle (`client.rlock`, `fairLock`, `rwLock`). */
export interface LockOptions extends LeaseLockOptions {
  /**
   * The owner its holds belong to, shared on purpose (reentrant kinds only: `client.lock`
   * refuses it). Holds of one `Owner`
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
  lock(name: string, options?: LeaseLockOptions): Lock
  /**
   * A reentrant lock (Redisson RLock layout). Its holds re-enter only for one owner: the
   * `owner` option, else the `using` scope of this lock (this name) the calling code runs
   * in; a bare `acquire()` outside one is an owner of its own.
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
   * options default to these (`fenced`, `fenceTtlMs`: the write side's only, as readers share
   * a hold; `.read({ fenced: true })` throws `InvalidArgumentError`). Many readers or one writer; an owner holding the write lock
   * may take the read lock; a write acquire by an owner holding a read hold rejects at once
   * with `WouldDeadlockError`. Not on quorum clients (`InvalidArgumentError` at acquire).
   */
  rwLock(name: string, options?: LockOptions): RwLock
  /**
   * A semaphore (Redisson RSemaphore). `permits`: set when the semaphore has none yet, before
   * the first call that needs them. Permits are not owned in Redis; this handle releases only
   * what it acquired. Not on quorum clients (`InvalidArgumentError` from the first call).
   */
  semaphore(name: string, options?: SemaphoreOptions): Semaphore
  /**
   * A permit-expirable semaphore (Redisson RPermitExpirableSemaphore): each acquire returns a
   * `Permit` (id, lease), released by id, back by itself when its lease ends. Not on quorum clients.
   */
  permitSemaphore(name: string, options?: SemaphoreOptions): PermitSemaphore
  /** A count-down latch (Redisson RCountDownLatch). Not on quorum clients. */
  countDownLatch(name: string): CountDownLatch
  /**
   * A multi-lock (Redisson RedissonMultiLock) over `members` (Locks of this client of any kind,
   * or names of lease locks): all or nothing, taken in one order (sorted by name), rolled back
   * on a failure part way. Throws `InvalidArgumentError` for an empty set or a name given twice.
   */
  multiLock(members: ReadonlyArray<Lock | string>, options?: MultiLockOptions): MultiLock
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
  /**
   * `true` when anyone holds the lock (asks Redis). The read side of a read/write lock answers
   * whether it is held in read mode, the write side whether in write mode (as Redisson's
   * `isLocked` of its read and write locks); `ttl()` likewise.
   */
  locked(): Promise<boolean>
  /** Remaining lease in ms of whoever holds the lock; `null` when free, or held without a TTL (a redis-py `Lock(timeout=None)`; `locked()` tells them apart). */
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
  /** The read lock (shared among readers); options over the rwLock's (no fencing: readers share a hold). */
  read(options?: Omit<LockOptions, 'fenced' | 'fenceTtlMs'>): Lock
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
  /** The lease in ms it was acquired with (the watchdog timeout in watchdog mode); `extend()` does not change it (the lock's `ttl()` asks Redis what is left). */
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
  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal, within a third of `leaseMs`, sets it back to the watchdog timeout. */
  extend(leaseMs: number): Promise<void>
  /** Asks Redis whether this hold is still ours. */
  owned(): Promise<boolean>
  /** E.g. `Held("orders")`: the lock's name, never its token. */
  toString(): string
  /** Releases the hold unless already released; an unknown outcome is retried in the background while the lease lasts. */
  [Symbol.asyncDispose](): Promise<void>
}

/** Options of `client.semaphore` / `client.permitSemaphore`. */
export interface SemaphoreOptions {
  /**
   * Permits to set when the semaphore has none yet (Redisson `trySetPermits`), 1 ..= 2^31 - 1:
   * set by the handle's first acquire, tryAcquire or available; an acquire retries the set
   * within its wait, as it retries its own request.
   */
  permits?: number
  /** Default wait of `acquire` in ms (0 = one try). Absent or `Infinity`: until acquired. */
  waitMs?: number
}

/** A counting semaphore (Redisson RSemaphore). Counts are integers 1 ..= 2^31 - 1. */
export declare class Semaphore {
  private constructor()
  /** Its Redis key (a string holding the permits available). */
  readonly name: string
  /** Permits this handle acquired and did not release (counted locally). */
  readonly held: number
  /** Sets the permits if none are set; `true` when it did. */
  trySetPermits(permits: number): Promise<boolean>
  /** Acquires `permits` (default 1). Rejects with `NotAcquiredError` when the wait runs out, `signal.reason` when aborted. */
  acquire(permits?: number, options?: AcquireOptions): Promise<void>
  /** One try: `true` when `permits` (default 1) were acquired. */
  tryAcquire(permits?: number): Promise<boolean>
  /**
   * Gives back `permits` (default 1) this handle holds; more than `held` is `NotOwnedError`
   * (reason `never_held`); a count that is gone (deleted, expired, a restart without
   * persistence) is `NotOwnedError` (reason `deleted`), nothing written, the permits leave
   * `held`, and `trySetPermits` sets the count again.
   */
  release(permits?: number): Promise<void>
  /** Permits available now (0 when none are set or the count is below zero, which Redisson's `reducePermits` can cause). */
  available(): Promise<number>
  /** Acquires `options.permits` (default 1), runs `fn`, releases them however it ends. */
  using<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions & { permits?: number }): Promise<Awaited<T>>
  toString(): string
}

/** Options of one permit acquisition. */
export interface PermitAcquireOptions extends AcquireOptions {
  /** Lease in ms: the permit comes back by itself after it. Absent: renewed by the watchdog while the permit is held. */
  leaseMs?: number
}

/** A permit-expirable semaphore (Redisson RPermitExpirableSemaphore). */
export declare class PermitSemaphore {
  private constructor()
  /** Its Redis key (the leases are in the zset `{name}:timeout`). */
  readonly name: string
  /** Sets the permits if none are set; `true` when it did. */
  trySetPermits(permits: number): Promise<boolean>
  /** Acquires one permit. Rejects with `NotAcquiredError` when the wait runs out, `signal.reason` when aborted. */
  acquire(options?: PermitAcquireOptions): Promise<Permit>
  /** One try: a `Permit`, or `null` when none is available. */
  tryAcquire(options?: { leaseMs?: number }): Promise<Permit | null>
  /** Releases the permit with this id (from any client, Java too); `NotOwnedError` for an unknown or expired id. */
  release(id: string): Promise<void>
  /** Permits available now (expired ones come back first). */
  available(): Promise<number>
  /** Acquires a permit, runs `fn(permit)`, releases it however it ends. */
  using<T>(fn: (permit: Permit) => T | PromiseLike<T>, options?: PermitAcquireOptions): Promise<Awaited<T>>
  toString(): string
}

/** One permit held; `await using permit = await sem.acquire()` releases it at the end of the block. */
export declare class Permit implements AsyncDisposable {
  private constructor()
  /** The semaphore's name. */
  readonly name: string
  /** The permit id: 32 lower-case hex digits (Redisson's format). A credential: do not log it. */
  readonly id: string
  /** The lease in ms (the watchdog timeout when renewed). */
  readonly leaseMs: number
  /** `true` when the watchdog renews it (acquired without `leaseMs`). */
  readonly renewed: boolean
  /**
   * `true` once it is known no longer held, before a release: its lease ran out (a fixed
   * lease, or watchdog renewals that failed for a whole watchdog timeout: Redis then gives it
   * back, to any client) or a renewal found it gone; `release()` then rejects with
   * LockLostError. Also once `client.close()` released it while held (a `using` scope still
   * running then rejects LockLostError, reason `deleted`, as for a lock).
   */
  readonly lost: boolean
  /** Gives it back, at most once; `NotOwnedError` (reason `never_held` or `deleted`) when no longer held, `LockLostError` (reason `expired`) when its fixed lease had ended. */
  release(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
  toString(): string
}

/** Options of `latch.wait`. */
export interface LatchWaitOptions {
  /** How long to wait in ms (0 = one look). Absent or `Infinity`: no limit. */
  timeoutMs?: number
  /** Cancels the wait: it rejects with `signal.reason`. */
  signal?: AbortSignal
}

/** A count-down latch (Redisson RCountDownLatch). */
export declare class CountDownLatch {
  private constructor()
  /** Its Redis key (a string holding the count). */
  readonly name: string
  /** Sets the count if no latch is set; `true` when it did. */
  trySetCount(count: number): Promise<boolean>
  /**
   * Decrements the count; at zero every waiter wakes. A no-op when no latch is set. Rejects
   * with RedisConnectionError when Redis did not answer: the outcome is unknown (it may still
   * apply), and calling again may count down twice.
   */
  countDown(): Promise<void>
  /** The count now (0 when open or not set). */
  count(): Promise<number>
  /** `true` when the count reached zero, `false` when `timeoutMs` ran out first. */
  wait(options?: LatchWaitOptions): Promise<boolean>
  toString(): string
}

/** Options of `client.multiLock`. */
export interface MultiLockOptions {
  /** Fixed lease in ms for every member (absent: each member's own, else watchdog mode). */
  leaseMs?: number
  /** Default wait of `acquire` for the whole set, in ms (0 = one try). Absent or `Infinity`: until acquired. */
  waitMs?: number
}

/** Several locks taken together, all or nothing. */
export declare class MultiLock {
  private constructor()
  /** The members' names, sorted (the order they are taken in). */
  readonly names: string[]
  /** Acquires every member or none. Rejects with `NotAcquiredError` when the wait runs out, `signal.reason` when aborted. */
  acquire(options?: AcquireOptions): Promise<MultiHeld>
  /** Acquires every member, runs `fn`, releases them however it ends. */
  using<T>(fn: () => T | PromiseLike<T>, options?: AcquireOptions): Promise<Awaited<T>>
  toString(): string
}

/** The members of one multi-lock acquisition; `await using` releases them. */
export declare class MultiHeld implements AsyncDisposable {
  private constructor()
  /** The members' names, in the order taken. */
  readonly names: string[]
  /** `true` once any member is known lost, or `client.close()` released them while held. */
  readonly lost: boolean
  /** Releases every member, at most once (the first member's error, the others released regardless). */
  release(): Promise<void>
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
