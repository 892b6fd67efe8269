// `Semaphore`: Redisson's RSemaphore, over an engine semaphore (engine.mjs). Permits are not
// owned in Redis: any client may release any number. This handle counts what it acquired
// (`held`, the core's count) and refuses to release more than that (NotOwnedError, reason
// 'never_held'), so one part of a program cannot give back permits another part holds.
// Permits still counted when the handle is dropped stay taken in Redis: release them, or use
// `using(fn)`, or the permit-expirable semaphore (permits.mjs), whose permits come back.

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { cancellable, engineWait } from './wait.mjs'

/** Runs `call()` and turns its rejection into the facade's error. */
async function engineCall(call) {
  try {
    return await call()
  } catch (err) {
    throw toLockError(err)
  }
}

/** A counting semaphore (Redisson RSemaphore). Made by `client.semaphore(name, options)`. */
export class Semaphore {
  #engine
  #raw
  #name
  #waitMs

  /** @internal Use `client.semaphore(name, options)`. */
  constructor(token, engine, raw, name, options) {
    if (token !== INTERNAL) throw new InvalidArgumentError('use client.semaphore(name) to create a semaphore')
    this.#engine = engine
    this.#raw = raw
    this.#name = name
    this.#waitMs = options.waitMs
  }

  /** The semaphore's name (its Redis key, a string holding the permits available). */
  get name() {
    return this.#name
  }

  /** Permits this handle acquired and did not release yet (counted locally). */
  get held() {
    return this.#raw.held
  }

  /** Sets the number of permits if none are set yet. Resolves `true` when it set them. */
  async trySetPermits(permits) {
    args.count('permits', permits)
    return engineCall(() => this.#raw.trySetPermits(permits))
  }

  /**
   * Acquires `permits` (default 1), waiting up to `waitMs` (default: the semaphore's, else
   * forever; 0 = one try). Rejects with NotAcquiredError when the wait runs out, with
   * `signal.reason` when `signal` aborts (a grant in flight is given back).
   */
  async acquire(permits = 1, options) {
    args.count('permits', permits)
    const o = args.acquireOptions(options)
    const wait = engineWait(o.waitMs === undefined ? this.#waitMs : o.waitMs)
    await cancellable(o.signal, this.#engine, (ticket) => this.#raw.acquire(permits, wait, ticket))
  }

  /** One try, no waiting: resolves `true` when `permits` (default 1) were acquired. */
  async tryAcquire(permits = 1) {
    args.count('permits', permits)
    return engineCall(() => this.#raw.tryAcquire(permits))
  }

  /**
   * Gives back `permits` (default 1) of those this handle holds, waking waiters. Rejects with
   * NotOwnedError (reason 'never_held') for more than `held`, nothing sent; (reason 'deleted')
   * when the semaphore's count is gone (deleted, expired, a restart without persistence):
   * nothing written, the permits leave `held`, and `trySetPermits` sets the count again.
   */
  async release(permits = 1) {
    args.count('permits', permits)
    return engineCall(() => this.#raw.release(permits))
  }

  /**
   * Permits available now (asks Redis; 0 when none are set, and 0 when the count is below
   * zero: Redisson's `reducePermits` can take it there, and its `availablePermits` then
   * returns the negative count).
   */
  async available() {
    return engineCall(() => this.#raw.available())
  }

  /**
   * Acquires `options.permits` (default 1), runs `fn()`, and releases them however `fn` ends.
   * Resolves to what `fn` returned; rejects with `fn`'s error, or as `acquire`.
   */
  async using(fn, options) {
    args.fn(fn)
    const o = args.semaphoreUsingOptions(options)
    await this.acquire(o.permits, { waitMs: o.waitMs, signal: o.signal })
    // The scope's end gives the permits up for good: an unknown outcome is settled in the
    // background (kept counted, a later release() gave them back a second time).
    const releaseAtEnd = () => engineCall(() => this.#raw.release(o.permits, true))
    let result
    try {
      result = await fn()
    } catch (err) {
      await releaseAtEnd().catch(() => {})
      throw err
    }
    await releaseAtEnd()
    return result
  }

  toString() {
    return `Semaphore(${JSON.stringify(this.#name)})`
  }
}
