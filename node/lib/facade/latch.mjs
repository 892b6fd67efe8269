// `CountDownLatch`: Redisson's RCountDownLatch, over an engine latch (engine.mjs). Waiters are
// woken by Redisson's latch channel (`redisson_countdownlatch__channel__{name}`), polling as
// the fallback; an opened latch (count 0) is deleted until a new `trySetCount`.

import * as args from './args.mjs'
import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError, toLockError } from './errors.mjs'
import { cancellable, engineWait } from './wait.mjs'

async function engineCall(call) {
  try {
    return await call()
  } catch (err) {
    throw toLockError(err)
  }
}

/** A count-down latch (Redisson RCountDownLatch). Made by `client.countDownLatch(name)`. */
export class CountDownLatch {
  #engine
  #raw
  #name

  /** @internal Use `client.countDownLatch(name)`. */
  constructor(token, engine, raw, name) {
    if (token !== INTERNAL) throw new InvalidArgumentError('use client.countDownLatch(name) to create a latch')
    this.#engine = engine
    this.#raw = raw
    this.#name = name
  }

  /** The latch's name (its Redis key, a string holding the count). */
  get name() {
    return this.#name
  }

  /** Sets the count if no latch is set. Resolves `true` when it set it. */
  async trySetCount(count) {
    args.count('count', count)
    return engineCall(() => this.#raw.trySetCount(count))
  }

  /**
   * Decrements the count; at zero the latch opens (every waiter wakes). A no-op when no latch
   * is set. Rejects with RedisConnectionError when Redis did not answer within the network
   * timeout: the outcome is unknown (a stalled Redis may still apply it when it runs again),
   * and calling again may count down twice.
   */
  async countDown() {
    return engineCall(() => this.#raw.countDown())
  }

  /** The count now (0 when open or not set). */
  async count() {
    return engineCall(() => this.#raw.count())
  }

  /**
   * Waits until the count reaches zero: resolves `true` then (at once when open or not set),
   * `false` when `timeoutMs` ran out first (absent or `Infinity`: no limit; 0: one look).
   * Rejects with `signal.reason` when `signal` aborts.
   */
  async wait(options) {
    const o = args.latchWaitOptions(options)
    const timeout = engineWait(o.timeoutMs)
    return cancellable(o.signal, this.#engine, (ticket) => this.#raw.wait(timeout, ticket))
  }

  toString() {
    return `CountDownLatch(${JSON.stringify(this.#name)})`
  }
}
