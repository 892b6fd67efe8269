// `Lock`: a named lock with its options, over an engine lock (engine.mjs). Each `acquire()`
// returns its own `Held`; the hold belongs to that handle, never to the lock object (for the
// reentrant kinds - rlock, fair lock, read and write locks - owner.mjs says who the owner is:
// an explicit Owner, the enclosing scope, or the acquisition itself).

import * as args from './args.mjs'
import { INTERNAL, nextTicket } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { giveBack, Held, releaseAtScopeEnd } from './held.mjs'
import { cancellable, engineWait } from './wait.mjs'
import * as owners from './owner.mjs'

/** Key of a Lock's engine lock, for the facade's own modules (multi-lock). */
export const engineLock = Symbol('engineLock')
const ownerFrame = Symbol('ownerFrame')

/** The kinds of lock (`lock.kind`), as the core's `LockKind`. */
export const KINDS = Object.freeze(['lease', 'reentrant', 'fair', 'read', 'write'])

/**
 * A named lock. Acquisitions through one lock object contend like separate clients (for the
 * reentrant kinds: unless they have the same owner: the lock's explicit `Owner`, or the
 * `using` scope they run in).
 */
export class Lock {
  #engine
  #raw
  #name
  #kind
  #reentrant
  #waitMs
  /** The explicit owner's frame (`rlock(name, { owner })`), else null. */
  #frame

  /** @internal Use `client.lock(name)`, `client.rlock(name)`, `client.fairLock(name)` or `client.rwLock(name).read()` / `.write()`. */
  constructor(token, engine, raw, name, kind, waitMs, owner) {
    if (token !== INTERNAL) {
      throw new InvalidArgumentError(
        'use client.lock(name), client.rlock(name), client.fairLock(name) or client.rwLock(name) to create a lock',
      )
    }
    this.#engine = engine
    this.#raw = raw
    this.#name = name
    this.#kind = kind
    this.#reentrant = kind !== 'lease'
    this.#waitMs = waitMs
    this.#frame = owner === undefined ? null : owners.frameOf(owner)
  }

  /** The lock's name (its Redis key). */
  get name() {
    return this.#name
  }

  /** `true` for the reentrant kinds (`rlock`, `fairLock`, `rwLock(...).read()` / `.write()`). */
  get reentrant() {
    return this.#reentrant
  }

  /** The kind: `'lease'`, `'reentrant'` (rlock), `'fair'`, `'read'` or `'write'` (core `LockKind`). */
  get kind() {
    return this.#kind
  }

  /** @internal The engine lock (multi-lock members). */
  get [engineLock]() {
    return this.#raw
  }

  /** @internal The explicit owner's frame, or null (multi-lock members). */
  get [ownerFrame]() {
    return this.#frame
  }

  /** E.g. `Lock(fair "orders")`. */
  toString() {
    return `Lock(${this.#kind} ${JSON.stringify(this.#name)})`
  }

  /**
   * Acquires the lock, waiting up to `waitMs` (default: the lock's `waitMs`, else forever;
   * 0 = one try). Rejects with NotAcquiredError when the wait runs out and with
   * `signal.reason` when `signal` aborts (nothing is left behind in Redis).
   * @returns {Promise<Held>}
   */
  acquire(options) {
    // Not an `async` method: it returns #acquire's promise itself (an async wrapper would add
    // a promise and three microtask turns per acquire; README "Fewer promises per call").
    try {
      const o = args.acquireOptions(options)
      // The explicit owner or the enclosing scope's; else (null) an owner of its own.
      const frame = this.#reentrant ? owners.forAcquire(this.#frame, this.#name) : null
      return this.#acquire(o, frame)
    } catch (err) {
      return Promise.reject(err)
    }
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
    const frame = this.#reentrant ? owners.forUsing(this.#frame, this.#name) : null
    const held = await this.#acquire(o, frame)
    let result
    try {
      result = await (frame ? owners.runScope(frame, fn, held.signal) : fn(held.signal))
    } catch (err) {
      await giveBack(held)
      throw err
    }
    await releaseAtScopeEnd(held)
    return result
  }

  /** Resolves to the Held of an acquisition with `frame`'s owner (owner.mjs). */
  #acquire({ waitMs, signal }, frame) {
    const wait = engineWait(waitMs === undefined ? this.#waitMs : waitMs)
    const owner = this.#ownerNumber(frame)
    if (signal !== undefined) return this.#acquireWithSignal(wait, owner, signal, frame)
    // No signal to watch (most acquires): the engine's promise, then the Held, with no
    // `cancellable` around it (what it adds is the signal's wiring).
    return this.#raw.acquire(wait, owner, nextTicket()).then((raw) => this.#held(raw, frame), rejectAsLockError)
  }

  #held(raw, frame) {
    // Counted once granted: a frame with acquires only in flight is not joinable (owner.mjs).
    if (frame !== null) frame.active++
    return new Held(INTERNAL, raw, this.#name, frame)
  }

  async #acquireWithSignal(wait, owner, signal, frame) {
    const raw = await cancellable(signal, this.#engine, (ticket) => this.#raw.acquire(wait, owner, ticket))
    const held = this.#held(raw, frame)
    if (signal.aborted) {
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

  /**
   * `true` when anyone holds the lock (asks Redis). The read side of a read/write lock answers
   * whether it is held in read mode, the write side whether in write mode (as Redisson's
   * `isLocked` of its read and write locks); `ttl()` likewise.
   */
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
   * Reentrant kinds: how many holds the current owner has (asks Redis): the lock's explicit
   * owner's, else the enclosing `using` scope's; 0 outside both (a bare `acquire()` is an
   * owner only its own Held knows). Lease locks: 0.
   */
  async holdCount() {
    if (!this.#reentrant) return 0
    const frame = owners.forQuery(this.#frame, this.#name)
    if (frame === null) return 0
    try {
      return await this.#raw.holdCount(frame.owner)
    } catch (err) {
      throw toLockError(err)
    }
  }
}

function rejectAsLockError(err) {
  throw toLockError(err)
}

/** The explicit owner number of reentrant lock `lock` (its `owner` option), else null. */
export function memberOwner(lock) {
  return lock[ownerFrame]?.owner ?? null
}
