// `MultiLock` and `MultiHeld`: several locks taken all or nothing (Redisson
// RedissonMultiLock), over an engine multi-lock (engine.mjs). The core takes the members in
// one order (bytewise by name) whatever order they were given in, so two programs locking
// overlapping sets in opposite orders never deadlock, and rolls back what it took when a
// member fails part way.
//
// Owners of reentrant members: the member's explicit `Owner`, else an owner of the
// acquisition's own (a multi-lock acquisition never joins a `using` scope, and never lets
// other code re-enter its members).

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { closedError } from './held.mjs'
import { engineLock, Lock, memberOwner } from './lock.mjs'
import { freshOwner } from './owner.mjs'
import { cancellable, engineWait } from './wait.mjs'

const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')
const releaseScopeEnd = Symbol('releaseScopeEnd')

/** The locks of one multi-lock acquisition, released together. */
export class MultiHeld {
  #raw
  /** A release through this object ended it (a scope end then has nothing to do). */
  #released = false

  /** @internal Returned by `multiLock.acquire()`. */
  constructor(token, raw) {
    if (token !== INTERNAL) throw new InvalidArgumentError('a MultiHeld comes from multiLock.acquire()')
    this.#raw = raw
  }

  /** The members' names, in the order they were taken (sorted). */
  get names() {
    return this.#raw.names
  }

  /** `true` once any member is known lost (or released by `client.close()`). */
  get lost() {
    return this.#raw.lost || this.#raw.closedByClient
  }

  /**
   * Releases every member, at most once. Rejects with the first member's error when one could
   * not be released (NotOwnedError / LockLostError with a `reason`, RedisConnectionError);
   * the others are released all the same.
   */
  async release() {
    try {
      await this.#raw.release(false)
      this.#released = true
    } catch (err) {
      // An unknown outcome leaves members held: release again (or let the scope end do it).
      if (this.#raw.ended) this.#released = true
      throw toLockError(err)
    }
  }

  /**
   * The release ending a scope: nobody can call again, so a member whose outcome is unknown
   * goes on being released in the core's background instead of waiting for this object to be
   * collected.
   */
  async [releaseScopeEnd]() {
    try {
      await this.#raw.release(true)
    } catch (err) {
      // Released by client.close() while the block held it: a loss, as for a lock's scope.
      if (this.#raw.closedByClient) throw closedError(`multi-lock ${JSON.stringify(this.names)}`)
      throw toLockError(err)
    } finally {
      this.#released = true
    }
  }

  /**
   * `await using held = await multi.acquire()`: releases unless already released through this
   * object; a member lost meanwhile rejects with LockLostError, as `release()` does. (Before
   * stop 46 a lost multi-lock's scope end resolved silently: the engine's `ended` also means
   * "nothing held any more", which a loss is too.)
   */
  async [asyncDispose]() {
    if (this.#released) return
    await this[releaseScopeEnd]()
  }
}

/** Several locks taken together. Made by `client.multiLock([locks or names], options)`. */
export class MultiLock {
  #engine
  #raw
  #members
  #waitMs

  /** @internal Use `client.multiLock(members, options)`. */
  constructor(token, engine, raw, members, waitMs) {
    if (token !== INTERNAL) throw new InvalidArgumentError('use client.multiLock(members) to create a multi-lock')
    this.#engine = engine
    this.#raw = raw
    this.#members = members
    this.#waitMs = waitMs
  }

  /** The members' names, sorted (the order they are taken in). */
  get names() {
    return this.#members.map((m) => m.name).sort(compareBytes)
  }

  /**
   * Acquires every member or none, waiting up to `waitMs` for the whole set (default: the
   * multi-lock's, else forever; 0 = one try). Rejects with NotAcquiredError when the wait
   * runs out, with `signal.reason` when `signal` aborts (what was taken is given back).
   * @returns {Promise<MultiHeld>}
   */
  async acquire(options) {
    const o = args.acquireOptions(options)
    const wait = engineWait(o.waitMs === undefined ? this.#waitMs : o.waitMs)
    const owners = this.#members.map((m) => (m.reentrant ? (memberOwner(m) ?? freshOwner()) : null))
    const raw = await cancellable(o.signal, this.#engine, (ticket) => this.#raw.acquire(wait, owners, ticket))
    const held = new MultiHeld(INTERNAL, raw)
    if (o.signal?.aborted) {
      await held[releaseScopeEnd]().catch(() => {})
      throw o.signal.reason
    }
    return held
  }

  /** Acquires every member, runs `fn()`, and releases them however `fn` ends. */
  async using(fn, options) {
    args.fn(fn)
    const held = await this.acquire(options)
    let result
    try {
      result = await fn()
    } catch (err) {
      await held[releaseScopeEnd]().catch(() => {})
      throw err
    }
    await held[releaseScopeEnd]()
    return result
  }

  toString() {
    return `MultiLock(${this.names.map((n) => JSON.stringify(n)).join(', ')})`
  }
}

/** The engine locks of `members` (Locks, or names of lease locks made with `makeLease`). */
export function memberLocks(members, makeLease) {
  if (!Array.isArray(members) || members.length === 0) {
    throw new InvalidArgumentError('a multi-lock needs a non-empty array of locks or lock names')
  }
  return members.map((m) => {
    if (typeof m === 'string') return makeLease(m)
    if (m instanceof Lock) return m
    throw new InvalidArgumentError('multi-lock members are Locks (client.lock(name), ...) or lock names')
  })
}

/** The raw engine lock of a member. */
export function rawOf(lock) {
  return lock[engineLock]
}

function compareBytes(a, b) {
  const x = new TextEncoder().encode(a)
  const y = new TextEncoder().encode(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i]
  return x.length - y.length
}
