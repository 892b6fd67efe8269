// `Client`: connection(s) to Redis and the locks made from them, over an engine client
// (engine.mjs). Each entry makes clients its own way (`Client.connect(url)` in `redlatch`,
// `createClient(transport)` in `redlatch/wasm`); everything else is this class.

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { Lock } from './lock.mjs'
import { RwLock } from './rwlock.mjs'
import { Semaphore } from './semaphore.mjs'
import { PermitSemaphore } from './permits.mjs'
import { CountDownLatch } from './latch.mjs'
import { MultiLock, memberLocks, rawOf } from './multilock.mjs'

/** Connection(s) to Redis and the locks made from them. */
export class Client {
  #engine

  /** @internal Made by each entry's factories (`Client.connect`, `createClient`). */
  constructor(token, engine) {
    if (token !== INTERNAL) {
      throw new InvalidArgumentError(
        'use Client.connect(url) / Client.quorum(urls), or createClient(transport) in redlatch/wasm, to create a client',
      )
    }
    this.#engine = engine
  }

  /** This client's id (a UUID; the first half of every reentrant owner id in Redis). */
  get id() {
    return this.#engine.id
  }

  /** Number of Redis nodes (1 = single node, more = quorum). */
  get nodeCount() {
    return this.#engine.nodeCount
  }

  /** `true` after `close()`. */
  get closed() {
    return this.#engine.closed
  }

  /** A lease lock (wire-compatible with node-redlock / redis-py). Throws InvalidArgumentError for bad options. */
  lock(name, options) {
    return this.#makeLock('lease', name, options)
  }

  /**
   * A reentrant lock (Redisson RLock layout). Its holds re-enter only for one owner: an
   * explicit `owner` option (an `Owner`), else the `using` scope of a reentrant lock that
   * the calling code runs in; a bare `acquire()` outside one is an owner of its own
   * (owner.mjs; README "Reentrancy").
   */
  rlock(name, options) {
    return this.#makeLock('reentrant', name, options)
  }

  /**
   * A fair lock (Redisson RFairLock: its queue list, timeout zset and per-waiter channel):
   * reentrant with the owners of `rlock`, and granted strictly in the order waiters queued,
   * across processes and languages. A waiter that gives up, is aborted or closes leaves the
   * queue at once; one that dies is dropped once its slot passes (its `waitMs`, or 5 minutes
   * when it waits forever: Redisson's `fairLockWaitTimeout`). `waitMs: 0` never queues.
   * Throws InvalidArgumentError for bad options.
   */
  fairLock(name, options) {
    return this.#makeLock('fair', name, options)
  }

  /**
   * A read/write lock (Redisson RReadWriteLock): `.read(options)` and `.write(options)` are
   * locks (many readers or one writer), with this call's options as their defaults
   * (`fenced`, `fenceTtlMs`: the write side's only; readers share a hold). Both are
   * reentrant with the owners of `rlock`; an owner holding the write lock may take the read
   * lock, and a write acquire by an owner holding a read hold is refused at once with
   * WouldDeadlockError. Not on quorum clients.
   */
  rwLock(name, options) {
    args.name(name)
    const o = args.lockOptions(options)
    // Made once here, as the other factories make theirs, so that what the engine refuses
    // (a name too long, a closed client) throws from this call, not from `.read()` later.
    this.#makeLock('write', name, o)
    return new RwLock(INTERNAL, name, o, (kind, opts) => this.#makeLock(kind, name, opts))
  }

  /**
   * A semaphore (Redisson RSemaphore). `permits`: set when the semaphore has none yet
   * (`trySetPermits`) by the handle's first acquire, tryAcquire or available, an acquire
   * retrying it within its wait as it does its own request; `waitMs`: the default wait of
   * `acquire`. Permits are not owned in Redis; this handle releases only what it acquired.
   * Not on quorum clients (InvalidArgumentError from the first call).
   */
  semaphore(name, options) {
    args.name(name)
    const o = args.semaphoreOptions(options)
    return new Semaphore(INTERNAL, this.#engine, this.#call(() => this.#engine.semaphore(name, o.permits)), name, o)
  }

  /**
   * A permit-expirable semaphore (Redisson RPermitExpirableSemaphore): each acquire returns a
   * Permit with an id and a lease, released by id, and back by itself when its lease ends.
   * Options as for `semaphore`. Not on quorum clients.
   */
  permitSemaphore(name, options) {
    args.name(name)
    const o = args.semaphoreOptions(options)
    return new PermitSemaphore(INTERNAL, this.#engine, this.#call(() => this.#engine.permitSemaphore(name, o.permits)), name, o)
  }

  /**
   * A count-down latch (Redisson RCountDownLatch). Not on quorum clients. Takes only a name
   * (the count is set by `trySetCount`): a second argument is an InvalidArgumentError.
   */
  countDownLatch(name, ...rest) {
    args.name(name)
    if (rest.length > 0) {
      throw new InvalidArgumentError('countDownLatch takes only a name (set the count with trySetCount)')
    }
    return new CountDownLatch(INTERNAL, this.#engine, this.#call(() => this.#engine.countDownLatch(name)), name)
  }

  /**
   * A multi-lock over `members` (Locks of this client of any kind, or names of lease locks):
   * all or nothing, taken in one order (sorted by name), rolled back on a failure part way.
   * `leaseMs` applies to every member (default: each member's own, else watchdog mode),
   * `waitMs` to the whole set. Throws InvalidArgumentError for an empty set, a name given
   * twice or a lock of another client.
   */
  multiLock(members, options) {
    const o = args.multiOptions(options)
    const locks = memberLocks(members, (name) => this.lock(name))
    const raw = this.#call(() => this.#engine.multiLock(locks.map(rawOf), { leaseMs: o.leaseMs }))
    return new MultiLock(INTERNAL, this.#engine, raw, locks, o.waitMs)
  }

  #call(make) {
    try {
      return make()
    } catch (err) {
      throw toLockError(err)
    }
  }

  #makeLock(kind, name, options) {
    args.name(name)
    const o = args.lockOptions(options)
    if (o.owner !== undefined && kind === 'lease') {
      throw new InvalidArgumentError('owner applies to reentrant locks (client.rlock, fairLock, rwLock) only')
    }
    let raw
    try {
      raw = this.#engine.lock(name, { kind, leaseMs: o.leaseMs, fenced: o.fenced, fenceTtlMs: o.fenceTtlMs })
    } catch (err) {
      throw toLockError(err)
    }
    return new Lock(INTERNAL, this.#engine, raw, name, kind, o.waitMs, o.owner)
  }

  /**
   * `client.lock(name, { leaseMs, fenced, fenceTtlMs }).using(fn, { waitMs, signal })` in one call.
   * @returns {Promise<any>} what `fn` returned
   */
  async withLock(name, fn, options) {
    const o = args.withLockOptions(options)
    return this.lock(name, o.lock).using(fn, o.acquire)
  }

  /** Admin: deletes lock `name` whatever its owner, waking its waiters. Resolves true when a lock was deleted. */
  async forceUnlock(name) {
    args.name(name)
    try {
      return await this.#engine.forceUnlock(name)
    } catch (err) {
      throw toLockError(err)
    }
  }

  /**
   * Closes the client: pending acquires reject with RedisConnectionError, holds still alive are
   * released (their `signal` aborts with a LockLostError), later calls reject. Idempotent.
   */
  async close() {
    try {
      await this.#engine.close()
    } catch (err) {
      throw toLockError(err)
    }
  }
}
