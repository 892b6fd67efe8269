// `Lock` and `Held` of `redlatch/wasm`: the native entry's API (node/lib/index.js) over the
// wasm module's `WasmLock` / `WasmHeld`. Lock logic, waiting, renewal and timeouts all run in
// the core (compiled to wasm); this file adds the JavaScript idioms: AbortSignal in and out,
// `using`, `Symbol.asyncDispose`, rlock owners (chain.mjs) and the error classes.

import * as args from './args.mjs'
import { INTERNAL, keep } from './binding.mjs'
import * as chain from './chain.mjs'
import { fromWasm, InvalidArgumentError, LockLostError, NotOwnedError, RedisConnectionError } from './errors.mjs'

// The TypeScript polyfill key where the well-known symbol is missing.
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')

/** Calls the wasm module and maps its errors (thrown or rejected) to the facade's classes. */
async function call(start) {
  try {
    return await keep(start)
  } catch (err) {
    throw fromWasm(err)
  }
}

function closedError() {
  return new RedisConnectionError('the client is closed')
}

/**
 * A named lock with its options. Each `acquire()` returns its own `Held`; the hold belongs
 * to that handle, never to the lock object (for `rlock`, see chain.mjs for the owner).
 */
export class Lock {
  #hub
  #raw
  #waitMs
  /** The handle's own owner (rlock without async-chain tracking). */
  #frame

  /** @internal Use `client.lock(name)` or `client.rlock(name)`. */
  constructor(token, hub, raw, waitMs) {
    if (token !== INTERNAL) {
      throw new InvalidArgumentError('use client.lock(name) or client.rlock(name) to create a lock')
    }
    this.#hub = hub
    this.#raw = raw
    this.#waitMs = waitMs
    this.#frame = raw.reentrant && !chain.followsChains() ? new chain.Frame() : null
  }

  /** The lock's name (its Redis key). */
  get name() {
    return this.#raw.name
  }

  /** `true` for reentrant locks (`client.rlock`). */
  get reentrant() {
    return this.#raw.reentrant
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
    const frame = this.#raw.reentrant ? chain.forAcquire(this.#frame) : null
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
    const frame = this.#raw.reentrant ? chain.forUsing(this.#frame) : null
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
    const hub = this.#hub
    if (hub.closed) throw closedError()
    if (signal?.aborted) throw signal.reason
    const wait = waitMs === undefined ? this.#waitMs : waitMs
    // Settles with the reason when `signal` aborts or the client closes: the wasm side then
    // drops its acquire (undoing any grant in flight) and rejects with that reason.
    let cancelWith
    const cancel = new Promise((resolve) => (cancelWith = resolve))
    const unwatch = signal ? watchSignal(signal, cancelWith) : undefined
    const untrack = hub.trackPending(cancelWith)
    let raw
    try {
      raw = await call(() => this.#raw.acquire(wait ?? Infinity, frame ? frame.owner : undefined, cancel))
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      throw err
    } finally {
      unwatch?.()
      untrack()
    }
    // Counted once granted: a frame with acquires only in flight is not joinable (chain).
    if (frame) frame.active++
    const held = new Held(INTERNAL, raw, frame, hub)
    if (hub.closed || signal?.aborted) {
      // Closed or aborted just as the acquire succeeded: give it back.
      await held[RELEASE_AT_SCOPE_END]().catch(() => {})
      throw hub.closed ? closedError() : signal.reason
    }
    return held
  }

  /** `true` when anyone holds the lock (asks Redis). */
  async locked() {
    if (this.#hub.closed) throw closedError()
    return call(() => this.#raw.locked())
  }

  /** Remaining lease in ms of whoever holds the lock; `null` when free (asks Redis). */
  async ttl() {
    if (this.#hub.closed) throw closedError()
    return call(() => this.#raw.ttl())
  }

  /**
   * `rlock`: how many holds the current owner has (asks Redis): the current async chain's,
   * or this handle's where chains are not followed. Lease locks: 0.
   */
  async holdCount() {
    if (!this.#raw.reentrant) return 0
    if (this.#hub.closed) throw closedError()
    const frame = chain.forQuery(this.#frame)
    if (frame === null) return 0
    return call(() => this.#raw.holdCount(frame.owner))
  }
}

// The release of a scope's end (module-private: not part of Held's API).
const RELEASE_AT_SCOPE_END = Symbol('releaseAtScopeEnd')

/**
 * One acquisition. Release it with `release()`, or let `await using` / `lock.using(fn)` do it.
 * A Held that is garbage-collected without a release is released in the background.
 */
export class Held {
  #raw
  #controller = new AbortController()
  #frame
  #untrack
  #done = false
  #closedByClient = false

  /** @internal Returned by `lock.acquire()`. */
  constructor(token, raw, frame, hub) {
    if (token !== INTERNAL) throw new InvalidArgumentError('a Held comes from lock.acquire()')
    this.#raw = raw
    this.#frame = frame
    this.#untrack = hub.trackHold(this)
    // Captures only the controller and the name, so an unreleased Held can still be
    // garbage-collected (and its hold released in the background).
    const controller = this.#controller
    const name = raw.name
    raw.loss().then(
      (reason) => {
        if (reason !== null) {
          controller.abort(new LockLostError(`lock ${JSON.stringify(name)} was lost while held (${reason})`, { reason }))
        }
      },
      () => {},
    )
  }

  /** The lock's name. */
  get name() {
    return this.#raw.name
  }

  /** The fencing token of this acquisition (locks made with `fenced: true`), else `null`. */
  get fencingToken() {
    return this.#raw.fencingToken ?? null
  }

  /** The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode). */
  get leaseMs() {
    return this.#raw.leaseMs
  }

  /** Aborts, with a LockLostError as its reason, when the hold is lost. Never after a release. */
  get signal() {
    return this.#controller.signal
  }

  /** `true` once the hold is known lost. */
  get lost() {
    return this.#controller.signal.aborted || this.#raw.lost
  }

  /** @internal `true` until the hold is settled (released, found not ours, or given up at a scope's end). */
  get active() {
    return !this.#done
  }

  /** @internal `client.close()`: the holder's lock is gone, so its signal aborts; then releases. */
  async closeByClient() {
    this.#closedByClient = true
    // Its key is deleted by this client's close() while the holder holds it.
    const why = `lock ${JSON.stringify(this.name)} was released by client.close()`
    this.#controller.abort(new LockLostError(why, { reason: 'deleted' }))
    await this[RELEASE_AT_SCOPE_END]()
  }

  /**
   * Releases the hold, at most once. Rejects with LockLostError (the loss was known before)
   * or NotOwnedError (found deleted or taken, or already released): see `reason`. After
   * RedisConnectionError / QuorumError (outcome unknown) or NoPermissionError /
   * OutOfMemoryError (nothing changed) the hold is kept and `release()` may be called again.
   * RedisConnectionError too when `client.close()` released it.
   */
  async release() {
    if (this.#closedByClient && this.#done) throw new RedisConnectionError('the client is closed')
    try {
      await call(() => this.#raw.release(false))
    } finally {
      // An unknown outcome leaves the hold held: release again.
      if (!this.#raw.held) this.#end()
    }
  }

  /** @internal The release ending a scope: an unknown outcome is retried in the background. */
  async [RELEASE_AT_SCOPE_END]() {
    try {
      await call(() => this.#raw.release(true))
    } finally {
      this.#end()
    }
  }

  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal sets it back to the watchdog timeout. */
  async extend(leaseMs) {
    args.millis('leaseMs', leaseMs)
    if (leaseMs === undefined) throw new InvalidArgumentError('extend(leaseMs) needs a lease in milliseconds')
    if (this.#closedByClient) throw new RedisConnectionError('the client is closed')
    await call(() => this.#raw.extend(leaseMs))
  }

  /** Asks Redis whether this hold is still ours. */
  async owned() {
    return call(() => this.#raw.owned())
  }

  /** `await using held = await lock.acquire()`: releases at the end of the block (no-op if already released). */
  async [asyncDispose]() {
    if (this.#done) return
    await releaseAtScopeEnd(this)
  }

  #end() {
    if (this.#done) return
    this.#done = true
    this.#untrack()
    if (this.#frame) this.#frame.active--
  }
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

// One 'abort' listener per signal, however many acquires share it (100 waiters on one
// signal would otherwise add 100 listeners and trip Node's leak warning).
const watched = new WeakMap()

function watchSignal(signal, cancelWith) {
  let pending = watched.get(signal)
  if (pending === undefined) {
    pending = new Set()
    watched.set(signal, pending)
    signal.addEventListener(
      'abort',
      () => {
        watched.delete(signal)
        for (const cancel of pending) cancel(signal.reason)
      },
      { once: true },
    )
  }
  pending.add(cancelWith)
  return () => pending.delete(cancelWith)
}
