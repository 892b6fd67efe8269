// `Lock`: a named lock with its options, over an engine lock (engine.mjs). Each `acquire()`
// returns its own `Held`; the hold belongs to that handle, never to the lock object (for
// `rlock`, owner.mjs says who the owner is: an explicit Owner, the enclosing scope, or the
// acquisition itself).

import * as args from './args.mjs'
import { INTERNAL, nextTicket } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { giveBack, Held, releaseAtScopeEnd } from './held.mjs'
import * as owners from './owner.mjs'

/**
 * A named lock. Acquisitions through one lock object contend like separate clients (for
 * `rlock`: unless they have the same owner: the lock's explicit `Owner`, or the `using`
 * scope they run in).
 */
export class Lock {
  #engine
  #raw
  #name
  #reentrant
  #waitMs
  /** The explicit owner's frame (`rlock(name, { owner })`), else null. */
  #frame

  /** @internal Use `client.lock(name)` or `client.rlock(name)`. */
  constructor(token, engine, raw, name, reentrant, waitMs, owner) {
    if (token !== INTERNAL) {
      throw new InvalidArgumentError('use client.lock(name) or client.rlock(name) to create a lock')
    }
    this.#engine = engine
    this.#raw = raw
    this.#name = name
    this.#reentrant = reentrant
    this.#waitMs = waitMs
    this.#frame = owner === undefined ? null : owners.frameOf(owner)
  }

  /** The lock's name (its Redis key). */
  get name() {
    return this.#name
  }

  /** `true` for reentrant locks (`client.rlock`). */
  get reentrant() {
    return this.#reentrant
  }

  /**
   * Acquires the lock, waiting up to `waitMs` (default: the lock's `waitMs`, else forever;
   * 0 = one try). Rejects with NotAcquiredError when the wait runs out and with
   * `signal.reason` when `signal` aborts (nothing is left behind in Redis).
   * @returns {Promise<Held>}
   */
  async acquire(options) {
    const o = args.acquireOptions(options)
    // The explicit owner or the enclosing scope's; else (null) an owner of its own.
    const frame = this.#reentrant ? owners.forAcquire(this.#frame) : null
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
    const frame = this.#reentrant ? owners.forUsing(this.#frame) : null
    const held = await this.#acquire(o, frame)
    let result
    try {
      result = await (frame ? owners.run(frame, fn, held.signal) : fn(held.signal))
    } catch (err) {
      await giveBack(held)
      throw err
    }
    await releaseAtScopeEnd(held)
    return result
  }

  async #acquire({ waitMs, signal }, frame) {
    if (signal?.aborted) throw signal.reason
    const wait = waitMs === undefined ? this.#waitMs : waitMs
    const engineWait = wait === undefined || wait === Infinity ? null : wait
    const ticket = nextTicket()
    const unwatch = signal === undefined ? undefined : watchSignal(signal, this.#engine, ticket)
    let raw
    try {
      raw = await this.#raw.acquire(engineWait, this.#ownerNumber(frame), ticket)
    } catch (err) {
      if (signal?.aborted) throw signal.reason
      throw toLockError(err)
    } finally {
      unwatch?.()
    }
    // Counted once granted: a frame with acquires only in flight is not joinable (owner.mjs).
    if (frame !== null) frame.active++
    const held = new Held(INTERNAL, raw, this.#name, frame)
    if (signal?.aborted) {
      // Aborted just as the acquire succeeded: give it back.
      await giveBack(held)
      throw signal.reason
    }
    return held
  }

  /** The Redis owner number of an acquisition with `frame` (rlock), or null (lease lock). */
  #ownerNumber(frame) {
    if (frame !== null) return frame.owner
    return this.#reentrant ? owners.freshOwner() : null
  }

  /** `true` when anyone holds the lock (asks Redis). */
  async locked() {
    try {
      return await this.#raw.locked()
    } catch (err) {
      throw toLockError(err)
    }
  }

  /** Remaining lease in ms of whoever holds the lock; `null` when free (asks Redis). */
  async ttl() {
    try {
      return await this.#raw.ttl()
    } catch (err) {
      throw toLockError(err)
    }
  }

  /**
   * `rlock`: how many holds the current owner has (asks Redis): the lock's explicit owner's,
   * else the enclosing `using` scope's; 0 outside both (a bare `acquire()` is an owner only
   * its own Held knows). Lease locks: 0.
   */
  async holdCount() {
    if (!this.#reentrant) return 0
    const frame = owners.forQuery(this.#frame)
    if (frame === null) return 0
    try {
      return await this.#raw.holdCount(frame.owner)
    } catch (err) {
      throw toLockError(err)
    }
  }
}

// One 'abort' listener per signal, however many acquires share it (100 waiters on one
// signal would otherwise add 100 listeners and trip Node's leak warning).
const watched = new WeakMap()

function watchSignal(signal, engine, ticket) {
  let pending = watched.get(signal)
  if (pending === undefined) {
    pending = new Map()
    watched.set(signal, pending)
    signal.addEventListener(
      'abort',
      () => {
        watched.delete(signal)
        for (const [t, e] of pending) e.cancel(t)
      },
      { once: true },
    )
  }
  pending.set(ticket, engine)
  return () => pending.delete(ticket)
}
