// Waits that an AbortSignal can cancel, shared by every kind (locks, multi-locks, semaphores,
// the latch): the engine call gets a ticket, and the signal's 'abort' cancels that ticket in
// the engine (which drops the core's wait, undoing anything in flight). A call rejected
// because its signal aborted rejects with `signal.reason`, as `fetch` and timers do.

import { nextTicket } from './engine.mjs'
import { toLockError } from './errors.mjs'

/** The engine's wait for a `waitMs` option: `null` = forever (absent or `Infinity`), else ms. */
export function engineWait(waitMs) {
  return waitMs === undefined || waitMs === Infinity ? null : waitMs
}

/**
 * Runs `start(ticket)` (an engine call that waits) so that `signal` cancels it. Rejects with
 * `signal.reason` when the signal aborted (before or during the call), else with the facade
 * error of the engine's rejection.
 * @template T
 * @param {AbortSignal | undefined} signal
 * @param {{ cancel(ticket: number): void }} engine
 * @param {(ticket: number) => Promise<T>} start
 * @returns {Promise<T>}
 */
export async function cancellable(signal, engine, start) {
  if (signal?.aborted) throw signal.reason
  const ticket = nextTicket()
  const unwatch = signal === undefined ? undefined : watchSignal(signal, engine, ticket)
  try {
    return await start(ticket)
  } catch (err) {
    if (signal?.aborted) throw signal.reason
    throw toLockError(err)
  } finally {
    unwatch?.()
  }
}

// One 'abort' listener per signal, however many waits share it (100 waiters on one signal
// would otherwise add 100 listeners and trip Node's leak warning).
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
