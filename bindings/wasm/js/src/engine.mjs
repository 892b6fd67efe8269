// The wasm module as the facade's engine (../lib/facade/engine.mjs): `WasmClient`, `WasmLock`
// and `WasmHeld` (src/*.rs) run the core; this adapter adds what the engine interface asks
// for and the module leaves to JavaScript: cancellation by ticket, `close()` (pending
// acquires, live holds, the closed state) and keeping a Node event loop alive while a call
// the program awaits is pending. Everything else is the shared facade.

import * as args from '../lib/facade/args.mjs'
import { Client } from '../lib/facade/client.mjs'
import { INTERNAL } from '../lib/facade/engine.mjs'
import { closedError, InvalidArgumentError, NotAcquiredError, toLockError } from '../lib/facade/errors.mjs'
import { useAsyncLocalStorage } from '../lib/facade/owner.mjs'
import { WasmEngineLatch, WasmEngineMultiLock, WasmEnginePermitSemaphore, WasmEngineSemaphore } from './family.mjs'

/** The wasm-bindgen glue: `WasmClient`, `WasmLock`, `WasmHeld`. */
let glue = null
let keepAliveEnabled = false
let pendingCalls = 0
let keepAliveTimer = null

/**
 * Installs the glue module; each entry point (index.mjs for Node, web.mjs for browsers and
 * other ES hosts, workerd.mjs for Cloudflare Workers) calls it once.
 * @param {object} module wasm-bindgen output (nodejs or web target), already initialised
 * @param {{ AsyncLocalStorage?: Function, keepAlive?: boolean }} [options]
 *   `AsyncLocalStorage`: follow async call chains for `rlock` owners.
 *   `keepAlive`: keep a Node event loop alive while a call the program awaits is pending
 *   (the module's own timers are unref'd, so background work never keeps a process alive).
 */
export function install(module, options = {}) {
  glue = module
  useAsyncLocalStorage(options.AsyncLocalStorage ?? null)
  keepAliveEnabled = options.keepAlive === true
}

/**
 * `start()`'s promise, keeping the event loop alive until it settles (when keep-alive is on).
 * @template T
 * @param {() => Promise<T>} start
 * @returns {Promise<T>}
 */
async function keep(start) {
  if (!keepAliveEnabled) return start()
  if (pendingCalls++ === 0) keepAliveTimer = setInterval(() => {}, 1 << 30)
  try {
    return await start()
  } finally {
    if (--pendingCalls === 0) {
      clearInterval(keepAliveTimer)
      keepAliveTimer = null
    }
  }
}

/** Lock kinds as the wasm module numbers them (../src/lock.rs `Kind`). */
const KIND = { lease: 0, reentrant: 1, fair: 2, read: 3, write: 4 }

/** One client's engine: the `WasmClient`, its pending acquires and (weakly) its live holds. */
class WasmEngine {
  #raw
  closed = false
  /** @type {Map<number, (reason: unknown) => void>} ticket -> settles that acquire's cancel promise */
  pending = new Map()
  /** @type {Set<{ deref(): WasmEngineHold | undefined }>} */
  holds = new Set()

  constructor(raw) {
    this.#raw = raw
  }

  get id() {
    return this.#raw.id
  }

  get nodeCount() {
    return this.#raw.nodeCount
  }

  lock(name, { kind, leaseMs, fenced, fenceTtlMs }) {
    if (this.closed) throw closedError()
    return new WasmEngineLock(this, this.#raw.lock(name, KIND[kind], leaseMs, undefined, fenced, fenceTtlMs))
  }

  async forceUnlock(name) {
    if (this.closed) throw closedError()
    return keep(() => this.#raw.forceUnlock(name))
  }

  semaphore(name) {
    if (this.closed) throw closedError()
    return new WasmEngineSemaphore(this, this.#raw.semaphore(name))
  }

  permitSemaphore(name) {
    if (this.closed) throw closedError()
    return new WasmEnginePermitSemaphore(this, this.#raw.permitSemaphore(name))
  }

  countDownLatch(name) {
    if (this.closed) throw closedError()
    return new WasmEngineLatch(this, this.#raw.countDownLatch(name))
  }

  multiLock(members, { leaseMs }) {
    if (this.closed) throw closedError()
    const raws = members.map((m) => {
      if (!(m instanceof WasmEngineLock) || m.engine !== this) {
        throw new InvalidArgumentError('a multi-lock takes locks of one client only')
      }
      return m.member()
    })
    return new WasmEngineMultiLock(this, this.#raw.multiLock(raws, leaseMs))
  }

  /** Calls `this.#raw`-made `call()` unless closed, keeping the event loop alive meanwhile. */
  async run(call) {
    if (this.closed) throw closedError()
    return keep(call)
  }

  /**
   * `start(cancel)`'s promise, where `cancel` settles when the wait with `ticket` is
   * cancelled or the client closes (the wasm side then drops its wait and rejects).
   */
  async wait(ticket, start) {
    if (this.closed) throw closedError()
    let cancelWith
    const cancel = new Promise((resolve) => (cancelWith = resolve))
    this.pending.set(ticket, cancelWith)
    try {
      return await keep(() => start(cancel))
    } catch (err) {
      throw this.closed ? closedError() : err
    } finally {
      this.pending.delete(ticket)
    }
  }

  cancel(ticket) {
    // The facade rejects with the AbortSignal's reason instead (as the native addon's).
    this.pending.get(ticket)?.(new NotAcquiredError('aborted'))
  }

  /**
   * Tracks a live hold until its release. Weakly where the host has WeakRef (so an
   * unreleased, unreachable hold can still be collected and released in the background);
   * workerd has no WeakRef and never collects such holds anyway.
   */
  track(hold) {
    if (this.holds.size >= 256) {
      for (const ref of this.holds) if (ref.deref() === undefined) this.holds.delete(ref)
    }
    const ref = typeof WeakRef === 'function' ? new WeakRef(hold) : { deref: () => hold }
    this.holds.add(ref)
    return ref
  }

  async close() {
    if (this.closed) return
    this.closed = true
    for (const cancel of this.pending.values()) cancel(closedError())
    this.pending.clear()
    const live = [...this.holds].map((ref) => ref.deref()).filter((h) => h !== undefined && h.active)
    this.holds.clear()
    await Promise.allSettled(live.map((h) => h.closeByClient()))
    // The core's close: permits, multi-lock members and anything else still held.
    await keep(() => this.#raw.close())
  }
}

class WasmEngineLock {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  get engine() {
    return this.#engine
  }

  /** A copy of the wasm lock, for a multi-lock (which consumes it). */
  member() {
    return this.#raw.member()
  }

  async acquire(waitMs, owner, ticket) {
    const engine = this.#engine
    if (engine.closed) throw closedError()
    // Settles when the acquire is cancelled (its signal aborted) or the client closes: the
    // wasm side then drops its acquire, undoing any grant in flight, and rejects.
    let cancelWith
    const cancel = new Promise((resolve) => (cancelWith = resolve))
    engine.pending.set(ticket, cancelWith)
    let raw
    try {
      raw = await keep(() => this.#raw.acquire(waitMs ?? Infinity, owner ?? undefined, cancel))
    } catch (err) {
      throw engine.closed ? closedError() : err
    } finally {
      engine.pending.delete(ticket)
    }
    const hold = new WasmEngineHold(engine, raw)
    if (engine.closed) {
      // Closed just as the acquire succeeded: give it back.
      await hold.release(true).catch(() => {})
      throw closedError()
    }
    return hold
  }

  async locked() {
    if (this.#engine.closed) throw closedError()
    return keep(() => this.#raw.locked())
  }

  async ttl() {
    if (this.#engine.closed) throw closedError()
    return keep(() => this.#raw.ttl())
  }

  async holdCount(owner) {
    if (this.#engine.closed) throw closedError()
    return keep(() => this.#raw.holdCount(owner ?? undefined))
  }
}

class WasmEngineHold {
  #raw
  #engine
  #ref
  #onEnd = null
  active = true
  closedByClient = false

  constructor(engine, raw) {
    this.#raw = raw
    this.#engine = engine
    this.#ref = engine.track(this)
  }

  get fencingToken() {
    return this.#raw.fencingToken ?? null
  }

  get leaseMs() {
    return this.#raw.leaseMs
  }

  get lost() {
    return this.closedByClient || this.#raw.lost
  }

  get held() {
    return this.active && this.#raw.held
  }

  get lossReason() {
    return this.#raw.lostReason ?? null
  }

  watch(onEnd) {
    if (!this.active) return
    this.#onEnd = onEnd
    this.#raw.loss().then(
      (reason) => {
        if (reason !== null) onEnd(reason)
      },
      () => {},
    )
  }

  /** `client.close()`: the holder's lock is gone, so its watcher is told; then releases. */
  async closeByClient() {
    this.closedByClient = true
    this.#onEnd?.('closed')
    await this.release(true)
  }

  async release(scopeEnd) {
    if (this.closedByClient && !this.active) throw closedError()
    try {
      return await keep(() => this.#raw.release(scopeEnd))
    } finally {
      // Settled, or handed to the core's background release: no longer this client's to close.
      if (scopeEnd || !this.#raw.held) {
        this.active = false
        this.#engine.holds.delete(this.#ref)
      }
    }
  }

  async extend(leaseMs) {
    if (this.closedByClient) throw closedError()
    return keep(() => this.#raw.extend(leaseMs))
  }

  async owned() {
    return keep(() => this.#raw.owned())
  }
}

/**
 * A client for one Redis node reached through `transport`, an object with
 * `eval(script, keys, args)` returning a Promise of the reply (see `fromNodeRedis`,
 * `fromIoredis`). Options are integer ms: `watchdogTimeoutMs` (30000), `networkTimeoutMs`
 * (3000), `nodeTimeoutMs`, `pollIntervalMs` (50).
 * @returns {Client}
 */
export function createClient(transport, options) {
  return newClient([args.transport(transport)], options)
}

/** A Redlock client over several independent Redis nodes, one transport each. */
export function createQuorumClient(transports, options) {
  return newClient(args.transports(transports), options)
}

function newClient(list, options) {
  const opts = args.clientOptions(options)
  if (glue === null) throw new Error('redlatch/wasm: the wasm module is not loaded')
  let raw
  try {
    raw = new glue.WasmClient(list, opts)
  } catch (err) {
    throw toLockError(err)
  }
  return new Client(INTERNAL, new WasmEngine(raw))
}
