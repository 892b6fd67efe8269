// `PermitSemaphore` and `Permit`: Redisson's RPermitExpirableSemaphore, over an engine permit
// semaphore (engine.mjs). Each acquire returns a Permit with an id (32 lower-case hex digits,
// Redisson's format, usable from Java too) and a lease: the permit comes back by itself when
// its lease ends, so a dead holder's permits return. Without `leaseMs` the core's watchdog
// renews the permit while its Permit object lives.

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { closedError } from './held.mjs'
import { cancellable, engineWait } from './wait.mjs'

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')
const PERMIT_ID = /^[0-9a-fA-F]{32}$/
const releaseScopeEnd = Symbol('releaseScopeEnd')

async function engineCall(call) {
  try {
    return await call()
  } catch (err) {
    throw toLockError(err)
  }
}

/** One permit held. Release it with `release()` or `await using`. */
export class Permit {
  #raw
  #name
  /** A release through this object ended it (a scope end then has nothing to do). */
  #released = false

  /** @internal Returned by `permitSemaphore.acquire()`. */
  constructor(token, raw, name) {
    if (token !== INTERNAL) throw new InvalidArgumentError('a Permit comes from permitSemaphore.acquire()')
    this.#raw = raw
    this.#name = name
  }

  /** The semaphore's name. */
  get name() {
    return this.#name
  }

  /** The permit id (32 lower-case hex digits; a credential: do not log it). */
  get id() {
    return this.#raw.id
  }

  /** The lease in ms (the watchdog timeout when renewed by the watchdog). */
  get leaseMs() {
    return this.#raw.leaseMs
  }

  /** `true` when the watchdog renews it (acquired without `leaseMs`). */
  get renewed() {
    return this.#raw.renewed
  }

  /**
   * `true` once it is known no longer held, before a release: its lease ran out (a fixed
   * lease, or renewals that failed for a whole watchdog timeout, e.g. refused while Redis is
   * out of memory: Redis gives it back then, to any client) or a renewal found it gone.
   * `release()` then rejects with LockLostError.
   */
  get lost() {
    return this.#raw.lost || this.#raw.closedByClient
  }

  /**
   * Gives the permit back, at most once. Rejects with NotOwnedError: reason 'never_held'
   * when already released through this object, 'deleted' when its entry is gone within its
   * lease (a restart without persistence, its id released elsewhere); with LockLostError (a
   * NotOwnedError), reason 'expired', when its fixed lease had ended (given back by Redis, or
   * now), as for a lock released late.
   */
  async release() {
    try {
      await engineCall(() => this.#raw.release(false))
      this.#released = true
    } catch (err) {
      // An unknown outcome leaves the permit held: release again (or let the scope end do it).
      if (this.#raw.ended) this.#released = true
      throw err
    }
  }

  /**
   * The release ending a scope: nobody can call again, so an unknown outcome goes on in the
   * core's background (retried for up to the lease) instead of waiting for this object to be
   * collected.
   */
  async [releaseScopeEnd]() {
    try {
      await engineCall(() => this.#raw.release(true))
    } catch (err) {
      // Released by client.close() while the block held it: a loss, as for a lock's scope.
      if (this.#raw.closedByClient) throw closedError(`permit of semaphore ${JSON.stringify(this.#name)}`)
      throw err
    } finally {
      this.#released = true
    }
  }

  /**
   * `await using permit = await sem.acquire()`: releases at the end of the block unless
   * released through this object; a permit lost meanwhile rejects with LockLostError, as
   * `release()` does (it resolved silently before stop 46, as for a multi-lock).
   */
  async [asyncDispose]() {
    if (this.#released) return
    await this[releaseScopeEnd]()
  }

  toString() {
    return `Permit(${JSON.stringify(this.#name)})`
  }
}

/** A permit-expirable semaphore (Redisson RPermitExpirableSemaphore). Made by `client.permitSemaphore(name, options)`. */
export class PermitSemaphore {
  #engine
  #raw
  #name
  #waitMs

  /** @internal Use `client.permitSemaphore(name, options)`. */
  constructor(token, engine, raw, name, options) {
    if (token !== INTERNAL) throw new InvalidArgumentError('use client.permitSemaphore(name) to create a permit semaphore')
    this.#engine = engine
    this.#raw = raw
    this.#name = name
    this.#waitMs = options.waitMs
  }

  /** The semaphore's name (its Redis key; the leases are in the zset `{name}:timeout`). */
  get name() {
    return this.#name
  }

  /** Sets the number of permits if none are set yet. Resolves `true` when it set them. */
  async trySetPermits(permits) {
    args.count('permits', permits)
    return engineCall(() => this.#raw.trySetPermits(permits))
  }

  /**
   * Acquires one permit with `leaseMs` (absent: renewed by the watchdog while the Permit
   * lives), waiting up to `waitMs` (default: the semaphore's, else forever; 0 = one try).
   * Rejects with NotAcquiredError when the wait runs out, `signal.reason` when aborted (a
   * permit taken in flight is given back).
   * @returns {Promise<Permit>}
   */
  async acquire(options) {
    const o = args.permitAcquireOptions(options)
    const wait = engineWait(o.waitMs === undefined ? this.#waitMs : o.waitMs)
    const lease = o.leaseMs ?? null
    const raw = await cancellable(o.signal, this.#engine, (ticket) => this.#raw.acquire(lease, wait, ticket))
    const permit = new Permit(INTERNAL, raw, this.#name)
    if (o.signal?.aborted) {
      await permit[releaseScopeEnd]().catch(() => {})
      throw o.signal.reason
    }
    return permit
  }

  /** One try, no waiting: a Permit, or `null` when none is available. */
  async tryAcquire(options) {
    const o = args.permitAcquireOptions(options)
    if (o.waitMs !== undefined || o.signal !== undefined) {
      throw new InvalidArgumentError('tryAcquire takes only leaseMs (it never waits)')
    }
    const raw = await engineCall(() => this.#raw.tryAcquire(o.leaseMs ?? null))
    return raw === null ? null : new Permit(INTERNAL, raw, this.#name)
  }

  /**
   * Releases the permit with id `id` (from this or any client, Java included). Rejects with
   * NotOwnedError: reason 'never_held' for an unknown id, 'expired' when its lease had ended.
   */
  async release(id) {
    if (typeof id !== 'string' || !PERMIT_ID.test(id)) {
      // Says what to pass, as Python's TypeError does (a re-trial of stop 47: release(permit)).
      throw new InvalidArgumentError(
        'release(id) takes a permit id, 32 hexadecimal digits (a string); a Permit is released with permit.release()',
      )
    }
    return engineCall(() => this.#raw.release(id))
  }

  /** Permits available now (asks Redis; expired ones come back first). */
  async available() {
    return engineCall(() => this.#raw.available())
  }

  /** Acquires a permit, runs `fn(permit)`, and releases it however `fn` ends. */
  async using(fn, options) {
    args.fn(fn)
    const permit = await this.acquire(options)
    let result
    try {
      result = await fn(permit)
    } catch (err) {
      await permit[releaseScopeEnd]().catch(() => {})
      throw err
    }
    await permit[releaseScopeEnd]()
    return result
  }

  toString() {
    return `PermitSemaphore(${JSON.stringify(this.#name)})`
  }
}
