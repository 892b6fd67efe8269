'use strict'
// The public API of `redlatch` for Node (shared/API.md, Node section): Client, Lock, Held.
//
// A thin facade over the generated napi loader (`../index.js`): it adds what JavaScript
// expresses better than Rust - Error subclasses, AbortSignal wiring, AsyncLocalStorage
// reentrancy for `rlock`, `using`/`withLock` and `Symbol.asyncDispose`. Lock logic, waiting,
// renewal and timeouts all run in the Rust core on napi's tokio threads: nothing here blocks
// the event loop, and no timer or socket keeps the process alive (see README "Process exit").

const native = require('../index.js')
const args = require('./args')
const chain = require('./chain')
const errors = require('./errors')
const { emitWarning } = require('./deployment')

const { fromNative, LockLostError, NotOwnedError, InvalidArgumentError } = errors

// Older runtimes lack the well-known symbol; Node 20 ships it (`Symbol(nodejs.asyncDispose)`).
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')

let nextTicket = 0

/** Connection(s) to Redis and the locks made from them. Create with `Client.connect` / `Client.quorum`. */
class Client {
  #native

  /** @internal Use `Client.connect(url)` or `Client.quorum(urls)`. */
  constructor(nativeClient) {
    if (!(nativeClient instanceof native.NativeClient)) {
      throw new InvalidArgumentError('use Client.connect(url) or Client.quorum(urls) to create a client')
    }
    this.#native = nativeClient
  }

  /**
   * Connects to the deployment `url` names: one node (`redis://[[user]:password@]host:port[/db]`,
   * `rediss://` with `options.tls`), a Cluster (`redis+cluster://h1:7000,h2:7001`) or the
   * master a Sentinel deployment names (`redis+sentinel://h1:26379,h2:26379/mymaster`); it
   * must answer PING. See docs/deployments.md.
   */
  static async connect(url, options) {
    const urls = [args.url(url)]
    const opts = args.clientOptions(options)
    return new Client(await call(() => native.connect(urls, opts, false, emitWarning)))
  }

  /** Connects to N independent Redis nodes (Redlock); a majority must answer. */
  static async quorum(urls, options) {
    const list = args.urls(urls)
    const opts = args.clientOptions(options)
    return new Client(await call(() => native.connect(list, opts, false, emitWarning)))
  }

  /**
   * Connects to a Redis Cluster through any of its nodes (`redis://` or `rediss://` seed
   * URLs); slot moves and failovers are followed (MOVED/ASK).
   */
  static async cluster(urls, options) {
    const list = args.urls(urls)
    const opts = args.clientOptions(options)
    return new Client(await call(() => native.connect(list, opts, true, emitWarning)))
  }

  /** This client's id (a UUID; the first half of every reentrant owner id in Redis). */
  get id() {
    return this.#native.id
  }

  /** Number of Redis transports: 1 for a single node, a Cluster or Sentinel; N for a quorum. */
  get nodeCount() {
    return this.#native.nodeCount
  }

  /** `true` after `close()`. */
  get closed() {
    return this.#native.closed
  }

  /** A lease lock (wire-compatible with node-redlock / redis-py). Throws InvalidArgumentError for bad options. */
  lock(name, options) {
    return makeLock(this, false, name, options)
  }

  /** A reentrant lock (Redisson RLock layout), re-entered along one async call chain. */
  rlock(name, options) {
    return makeLock(this, true, name, options)
  }

  /**
   * `client.lock(name, { leaseMs, fenced }).using(fn, { waitMs, signal })` in one call.
   * @returns {Promise<any>} what `fn` returned
   */
  async withLock(name, fn, options) {
    const o = args.withLockOptions(options)
    return this.lock(name, o.lock).using(fn, o.acquire)
  }

  /** Admin: deletes lock `name` whatever its owner, waking its waiters. Resolves true when a lock was deleted. */
  async forceUnlock(name) {
    args.name(name)
    return call(() => this.#native.forceUnlock(name))
  }

  /**
   * Closes the client: pending acquires reject with RedisConnectionError, holds still alive are
   * released, later calls reject. Idempotent.
   */
  async close() {
    return call(() => this.#native.close())
  }

  /** @internal */
  static nativeOf(client) {
    return client.#native
  }
}

function makeLock(client, reentrant, name, options) {
  args.name(name)
  const o = args.lockOptions(options)
  let nativeLock
  try {
    nativeLock = Client.nativeOf(client).lock(name, {
      reentrant,
      leaseMs: o.leaseMs,
      waitMs: o.waitMs === Infinity ? undefined : o.waitMs,
      fenced: o.fenced,
      fenceTtlMs: o.fenceTtlMs,
    })
  } catch (err) {
    throw fromNative(err)
  }
  return new Lock(client, nativeLock, o.waitMs)
}

/**
 * A named lock with its options. Each `acquire()` returns its own `Held`; the hold belongs
 * to that handle, never to the lock object, so acquisitions through one lock contend like
 * separate clients (for `rlock`: unless they are in the same async call chain).
 */
class Lock {
  #client
  #native
  #waitMs

  /** @internal Use `client.lock(name)` or `client.rlock(name)`. */
  constructor(client, nativeLock, waitMs) {
    if (!(nativeLock instanceof native.NativeLock)) {
      throw new InvalidArgumentError('use client.lock(name) or client.rlock(name) to create a lock')
    }
    this.#client = client
    this.#native = nativeLock
    this.#waitMs = waitMs
  }

  /** The lock's name (its Redis key). */
  get name() {
    return this.#native.name
  }

  /** `true` for reentrant locks (`client.rlock`). */
  get reentrant() {
    return this.#native.reentrant
  }

  /**
   * Acquires the lock, waiting up to `waitMs` (default: the lock's `waitMs`, else forever;
   * 0 = one try). Rejects with NotAcquiredError when the wait runs out and with
   * `signal.reason` when `signal` aborts (nothing is left behind in Redis).
   * @returns {Promise<Held>}
   */
  async acquire(options) {
    const o = args.acquireOptions(options)
    // Before the first await, so the frame is entered into the caller's async context.
    const frame = this.#native.reentrant ? chain.forAcquire() : null
    return this.#acquire(o, frame)
  }

  /**
   * Runs `fn(signal)` under the lock and releases it when `fn` settles. `signal` aborts with
   * a LockLostError if the hold is lost meanwhile. Resolves to what `fn` returned; rejects with
   * `fn`'s own error when it threw (the release still happens), else with LockLostError when
   * the hold was lost, or found gone (expired, deleted or taken) by the release at the end.
   */
  async using(fn, options) {
    args.fn(fn)
    const o = args.acquireOptions(options)
    const frame = this.#native.reentrant ? chain.forUsing() : null
    const held = await this.#acquire(o, frame)
    let result
    try {
      result = await (frame ? chain.run(frame, fn, held.signal) : fn(held.signal))
    } catch (err) {
      await held[RELEASE_AT_SCOPE_END]().catch(() => {})
      throw err
    }
    await releaseAtScopeEnd(held)
    return result
  }

  async #acquire({ waitMs, signal }, frame) {
    if (signal?.aborted) throw signal.reason
    const wait = waitMs === undefined ? this.#waitMs : waitMs
    const nativeWait = wait === undefined || wait === Infinity ? null : wait
    const nativeClient = Client.nativeOf(this.#client)
    const ticket = (nextTicket = (nextTicket + 1) >>> 0)
    const controller = new AbortController()
    const name = this.#native.name
    // Captures only the controller and the name, so an unreleased Held can still be
    // garbage-collected (and its hold released in the background).
    const onLost = (why) => {
      const closed = why === 'closed'
      const what = closed ? 'was released by client.close()' : `was lost while held (${why})`
      // Released by close(): its key was deleted (by this client) while the holder held it.
      controller.abort(new LockLostError(`lock ${JSON.stringify(name)} ${what}`, { reason: closed ? 'deleted' : why }))
    }
    const unwatch = signal ? watchSignal(signal, nativeClient, ticket) : undefined
    let nativeHeld
    try {
      nativeHeld = await this.#native.acquire(nativeWait, frame ? frame.owner : null, ticket, onLost)
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      throw fromNative(err)
    } finally {
      unwatch?.()
    }
    // Counted once granted: a frame with acquires only in flight is not joinable (chain).
    if (frame) frame.active++
    const held = new Held(nativeHeld, controller, frame)
    if (signal?.aborted) {
      // Aborted just as the acquire succeeded: give it back.
      await held[RELEASE_AT_SCOPE_END]().catch(() => {})
      throw signal.reason
    }
    return held
  }

  /** `true` when anyone holds the lock (asks Redis). */
  async locked() {
    return call(() => this.#native.locked())
  }

  /** Remaining lease in ms of whoever holds the lock; `null` when free (asks Redis). */
  async ttl() {
    return call(() => this.#native.ttl())
  }

  /**
   * `rlock`: how many times the current async chain holds it (asks Redis; 0 outside a chain
   * that holds an rlock). Lease locks: 0.
   */
  async holdCount() {
    if (!this.#native.reentrant) return 0
    const frame = chain.current()
    if (frame === null) return 0
    return call(() => this.#native.holdCount(frame.owner))
  }
}

/**
 * One acquisition. Release it with `release()`, or let `await using` / `lock.using(fn)` do it.
 * A Held that is garbage-collected without a release is released in the background.
 */
// The release of a scope's end (module-private: not part of Held's API).
const RELEASE_AT_SCOPE_END = Symbol('releaseAtScopeEnd')

class Held {
  #native
  #controller
  #frame
  #done = false

  /** @internal Returned by `lock.acquire()`. */
  constructor(nativeHeld, controller, frame) {
    if (!(nativeHeld instanceof native.NativeHeld)) {
      throw new InvalidArgumentError('a Held comes from lock.acquire()')
    }
    this.#native = nativeHeld
    this.#controller = controller
    this.#frame = frame
  }

  /** The lock's name. */
  get name() {
    return this.#native.name
  }

  /** The fencing token of this acquisition (locks made with `fenced: true`), else `null`. */
  get fencingToken() {
    return this.#native.fencingToken
  }

  /** The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode). */
  get leaseMs() {
    return this.#native.leaseMs
  }

  /** Aborts, with a LockLostError as its reason, when the hold is lost. Never after a release. */
  get signal() {
    return this.#controller.signal
  }

  /** `true` once the hold is known lost. */
  get lost() {
    return this.#controller.signal.aborted || this.#native.lost
  }

  /**
   * Releases the hold. Rejects with LockLostError when it had been lost, NotOwnedError when it
   * expired, was taken or was already released, RedisConnectionError / QuorumError when Redis
   * could not confirm (the key then expires with its lease).
   */
  async release() {
    try {
      await this.#native.release(false)
    } catch (err) {
      throw fromNative(err)
    } finally {
      // An unknown outcome (RedisConnectionError, ...) leaves the hold held: release again.
      if (!this.#native.held) this.#end()
    }
  }

  /** @internal The release ending a scope: an unknown outcome is retried in the background. */
  async [RELEASE_AT_SCOPE_END]() {
    try {
      await this.#native.release(true)
    } catch (err) {
      throw fromNative(err)
    } finally {
      this.#end()
    }
  }

  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal sets it back to the watchdog timeout. */
  async extend(leaseMs) {
    args.millis('leaseMs', leaseMs)
    if (leaseMs === undefined) throw new InvalidArgumentError('extend(leaseMs) needs a lease in milliseconds')
    return call(() => this.#native.extend(leaseMs))
  }

  /** Asks Redis whether this hold is still ours. */
  async owned() {
    return call(() => this.#native.owned())
  }

  /** `await using held = await lock.acquire()`: releases at the end of the block (no-op if already released). */
  async [asyncDispose]() {
    if (this.#done) return
    await releaseAtScopeEnd(this)
  }

  #end() {
    if (this.#done) return
    this.#done = true
    if (this.#frame) this.#frame.active--
  }
}

// One 'abort' listener per signal, however many acquires share it (100 waiters on one
// signal would otherwise add 100 listeners and trip Node's leak warning).
const watched = new WeakMap()

function watchSignal(signal, nativeClient, ticket) {
  let pending = watched.get(signal)
  if (pending === undefined) {
    pending = new Map()
    watched.set(signal, pending)
    signal.addEventListener(
      'abort',
      () => {
        watched.delete(signal)
        for (const [t, c] of pending) c.cancel(t)
      },
      { once: true },
    )
  }
  pending.set(ticket, nativeClient)
  return () => pending.delete(ticket)
}

/**
 * The release that ends a scope (`using`, `await using`). The block ran believing it held the
 * lock, so a hold found gone at its end (NotOwnedError: deleted, expired or taken) is a loss,
 * reported as LockLostError with the release's error as its cause (shared/API.md "a scoped
 * block ends after a loss").
 */
async function releaseAtScopeEnd(held) {
  try {
    await held[RELEASE_AT_SCOPE_END]()
  } catch (err) {
    // Lost (or released by client.close()) while the block ran: that is what ended it.
    if (held.signal.reason instanceof LockLostError) throw held.signal.reason
    if (err instanceof NotOwnedError && !(err instanceof LockLostError)) {
      throw new LockLostError(`lock ${JSON.stringify(held.name)} was lost while the block held it: ${err.message}`, {
        cause: err,
        reason: err.reason,
      })
    }
    throw err
  }
}

/** Calls the addon and maps its errors (thrown or rejected) to the facade's classes. */
async function call(fn) {
  try {
    return await fn()
  } catch (err) {
    throw fromNative(err)
  }
}

module.exports = {
  Client,
  Lock,
  Held,
  LockError: errors.LockError,
  NotAcquiredError: errors.NotAcquiredError,
  NotOwnedError: errors.NotOwnedError,
  LockLostError: errors.LockLostError,
  QuorumError: errors.QuorumError,
  RedisConnectionError: errors.RedisConnectionError,
  InvalidArgumentError: errors.InvalidArgumentError,
  NoPermissionError: errors.NoPermissionError,
  OutOfMemoryError: errors.OutOfMemoryError,
  KeyConflictError: errors.KeyConflictError,
  STATUS: errors.STATUS,
}
