// `Held`: one acquisition, over an engine hold (engine.mjs). Its `signal` is made on first
// read: a hold nobody watches costs no AbortController and no loss watcher in the engine.

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, LockLostError, NotOwnedError, toLockError } from './errors.mjs'

// Where the well-known symbol is missing: Node's own name for it, which TypeScript's
// downlevel `await using` also looks up.
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')
// The module's own method keys (not part of the public API): what a scope ending now
// reports, and the release that ends a scope.
const lossAtScopeEnd = Symbol('lossAtScopeEnd')
const releaseScopeEnd = Symbol('releaseScopeEnd')

/**
 * One acquisition. Release it with `release()`, or let `await using` / `lock.using(fn)` do it.
 * A Held that is garbage-collected without a release is released in the background.
 */
export class Held {
  #raw
  #name
  #frame
  #controller = null
  #done = false

  /** @internal Returned by `lock.acquire()`. */
  constructor(token, raw, name, frame) {
    if (token !== INTERNAL) throw new InvalidArgumentError('a Held comes from lock.acquire()')
    this.#raw = raw
    this.#name = name
    this.#frame = frame
  }

  /** The lock's name. */
  get name() {
    return this.#name
  }

  /** The fencing token of this acquisition (locks made with `fenced: true`), else `null`. */
  get fencingToken() {
    return this.#raw.fencingToken ?? null
  }

  /** The lease in ms this hold was acquired with (the watchdog timeout in watchdog mode); `extend()` does not change it. */
  get leaseMs() {
    return this.#raw.leaseMs
  }

  /** Aborts, with a LockLostError as its reason, when the hold is lost. Never after a release. */
  get signal() {
    this.#controller ??= this.#watch()
    const controller = this.#controller
    // The engine's loss callback may still be on its way (the tokio engine delivers it on a
    // later tick, possibly after close() resolved): what is already known aborts it now.
    if (!controller.signal.aborted && !this.#done && this.#raw.lost) {
      controller.abort(lossError(this.#name, this.#raw.closedByClient ? 'closed' : this.#raw.lossReason))
    }
    return controller.signal
  }

  /** `true` once the hold is known lost (or released by `client.close()`). */
  get lost() {
    return this.#controller?.signal.aborted === true || this.#raw.lost
  }

  /** E.g. `Held("orders")`: the lock's name, never its token. */
  toString() {
    return `Held(${JSON.stringify(this.#name)})`
  }

  /**
   * Releases the hold, at most once. Rejects with LockLostError (the loss was known before)
   * or NotOwnedError (found deleted or taken, or already released): see `reason`. After
   * RedisConnectionError / QuorumError (outcome unknown) or NoPermissionError /
   * OutOfMemoryError (nothing changed) the hold is kept and `release()` may be called again.
   * RedisConnectionError too when `client.close()` released it.
   */
  release() {
    // Not an `async` method: one promise and fewer microtask turns per release (README
    // "Fewer promises per call").
    let releasing
    try {
      releasing = this.#raw.release(false)
    } catch (err) {
      releasing = Promise.reject(err)
    }
    return releasing.then(
      () => this.#end(),
      (err) => {
        // An unknown outcome leaves the hold held: release again. (A release that resolved
        // released it: no need to ask the engine, one addon call less per release.)
        if (!this.#raw.held) this.#end()
        throw toLockError(err)
      },
    )
  }

  /** The release ending a scope: an unknown outcome is retried in the background by the core. */
  async [releaseScopeEnd]() {
    try {
      await this.#raw.release(true)
    } catch (err) {
      throw toLockError(err)
    } finally {
      this.#end()
    }
  }

  /** Resets the remaining lease to `leaseMs` (replace, never add); never re-creates a lost lock. In watchdog mode the next renewal, within a third of `leaseMs`, sets it back to the watchdog timeout. */
  async extend(leaseMs) {
    if (leaseMs === undefined) throw new InvalidArgumentError('extend(leaseMs) needs a lease in milliseconds')
    args.millis('leaseMs', leaseMs)
    try {
      await this.#raw.extend(leaseMs)
    } catch (err) {
      throw toLockError(err)
    }
  }

  /** Asks Redis whether this hold is still ours. */
  async owned() {
    try {
      return await this.#raw.owned()
    } catch (err) {
      throw toLockError(err)
    }
  }

  /** `await using held = await lock.acquire()`: releases at the end of the block (no-op if already released). */
  async [asyncDispose]() {
    if (this.#done) return
    await releaseAtScopeEnd(this)
  }

  /** The LockLostError a scope ending now reports, or null while the hold is not known lost. */
  [lossAtScopeEnd]() {
    if (this.#controller?.signal.aborted) return this.#controller.signal.reason
    const raw = this.#raw
    return raw.lost ? lossError(this.#name, raw.closedByClient ? 'closed' : raw.lossReason) : null
  }

  #watch() {
    const controller = new AbortController()
    const raw = this.#raw
    if (raw.lost) {
      controller.abort(lossError(this.#name, raw.closedByClient ? 'closed' : raw.lossReason))
    } else if (!this.#done) {
      // Captures only the controller and the name, so an unreleased Held can still be
      // garbage-collected (and its hold released in the background).
      const name = this.#name
      raw.watch((why) => controller.abort(lossError(name, why)))
    }
    return controller
  }

  #end() {
    if (this.#done) return
    this.#done = true
    if (this.#frame !== null) this.#frame.active--
  }
}

/** The LockLostError of a hold lost for `why` ('expired', 'taken', 'deleted'), or 'closed'. */
function lossError(name, why) {
  if (why === 'closed') return closedError(`lock ${JSON.stringify(name)}`)
  const reason = why ?? 'expired'
  return new LockLostError(`lock ${JSON.stringify(name)} was lost while held (${reason})`, { reason })
}

/**
 * The loss of `what` (e.g. `lock "a"`) that this client's close() released while its holder
 * held it: its key was deleted (reason 'deleted'), for locks, permits and multi-locks alike.
 */
export function closedError(what) {
  return new LockLostError(`${what} was released by client.close()`, { reason: 'deleted' })
}

/** Gives a hold back whatever happens (an acquire aborted or closed as it succeeded, a block that threw). */
export async function giveBack(held) {
  await held[releaseScopeEnd]().catch(() => {})
}

/**
 * The release that ends a scope (`using`, `await using`). The block ran believing it held the
 * lock, so a hold found gone at its end (NotOwnedError: deleted, expired or taken) is a loss,
 * reported as LockLostError with the release's error as its cause (shared/API.md "a scoped
 * block ends after a loss").
 */
export async function releaseAtScopeEnd(held) {
  try {
    await held[releaseScopeEnd]()
  } catch (err) {
    // Lost (or released by client.close()) while the block ran: that is what ended it.
    const lost = held[lossAtScopeEnd]()
    if (lost !== null) throw lost
    if (err instanceof NotOwnedError && !(err instanceof LockLostError)) {
      throw new LockLostError(`lock ${JSON.stringify(held.name)} was lost while the block held it: ${err.message}`, {
        cause: err,
        reason: err.reason,
      })
    }
    throw err
  }
}
