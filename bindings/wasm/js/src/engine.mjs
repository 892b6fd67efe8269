// The wasm module as the facade's engine (../lib/facade/engine.mjs): `WasmClient`, `WasmLock`
// and `WasmHeld` (src/*.rs) run the core; this adapter adds what the engine interface asks
// for and the module leaves to JavaScript: cancellation by ticket (a promise the wasm side
// races) and keeping a Node event loop alive while a call the program awaits is pending.
// `close()` is the core's `Client::close` (it releases every hold still held and tells their
// watchers 'closed'); the adapter only rejects its own pending waits. Everything else is the
// shared facade.

import * as args from '../lib/facade/args.mjs'
import { Client } from '../lib/facade/client.mjs'
import { INTERNAL } from '../lib/facade/engine.mjs'
import { closedError, InvalidArgumentError, NotAcquiredError, toLockError } from '../lib/facade/errors.mjs'
import { useAsyncLocalStorage, useOwnerNumbers } from '../lib/facade/owner.mjs'
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
  // Reentrant owners are numbered by the core (../lib/facade/owner.mjs).
  useOwnerNumbers(module.newOwner)
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

/** One client's engine: the `WasmClient` and its pending acquires. */
class WasmEngine {
  #raw
  closed = false
  /** @type {Map<number, (reason: unknown) => void>} ticket -> settles that acquire's cancel promise */
  pending = new Map()

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

  semaphore(name, permits) {
    if (this.closed) throw closedError()
    return new WasmEngineSemaphore(this, this.#raw.semaphore(name, permits))
  }

  permitSemaphore(name, permits) {
    if (this.closed) throw closedError()
    return new WasmEnginePermitSemaphore(this, this.#raw.permitSemaphore(name, permits))
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
      // The wasm side raced `cancel` through a js-sys `JsFuture`, which cannot take its two
      // callbacks off a promise when dropped: they and its state live until the promise
      // settles. Left pending, that was ~0.8 KB of heap per acquire for the client's
      // lifetime (test/memory.test.mjs); the race is over, so the value is ignored.
      cancelWith(undefined)
    }
  }

  cancel(ticket) {
    // The facade rejects with the AbortSignal's reason instead (as the native addon's).
    this.pending.get(ticket)?.(new NotAcquiredError('aborted'))
  }

  async close() {
    if (this.closed) return
    this.closed = true
    for (const cancel of this.pending.values()) cancel(closedError())
    this.pending.clear()
    // The core's close: holds, permits and multi-lock members still held.
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
    // Cancelled (its signal aborted) or the client closed: the wasm side drops its acquire,
    // undoing any grant in flight, and rejects.
    const raw = await engine.wait(ticket, (cancel) => this.#raw.acquire(waitMs ?? Infinity, owner ?? undefined, cancel))
    const hold = new WasmEngineHold(raw)
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

// A hold released through its handle frees its `WasmHeld` at once: wasm-bindgen watches every
// such object with a FinalizationRegistry, whose callbacks for thousands of released holds ran
// in one burst after a major collection and stalled the event loop (as in the native entry:
// ../lib/engine.mjs). The hold's state after that is the released one; later calls through the
// handle get the core's answers ("already released", owned() false).
class WasmEngineHold {
  #raw
  /** The lock's name once `#raw` was freed (released), else null. */
  #retired = null

  constructor(raw) {
    this.#raw = raw
    // Read now: they stay readable after the release frees `raw`.
    this.fencingToken = raw.fencingToken ?? null
    this.leaseMs = raw.leaseMs
  }

  #retire() {
    this.#retired = this.#raw.name
    this.#raw.free()
    this.#raw = null
  }

  get lost() {
    return this.#raw !== null && (this.#raw.closedByClient || this.#raw.lost)
  }

  get closedByClient() {
    return this.#raw !== null && this.#raw.closedByClient
  }

  get held() {
    return this.#raw !== null && this.#raw.held
  }

  get lossReason() {
    return this.#raw === null ? null : (this.#raw.lostReason ?? null)
  }

  watch(onEnd) {
    if (this.#raw === null) return
    // Resolves with the loss reason, 'closed' (released by client.close()) or null (released).
    this.#raw.loss().then(
      (why) => {
        if (why !== null) onEnd(why)
      },
      () => {},
    )
  }

  async release(scopeEnd) {
    if (this.#raw === null) throw glue.holdRefusal('release', this.#retired)
    await keep(() => this.#raw.release(scopeEnd))
    // Released (a rejection keeps the hold as the core left it: held, lost or refused).
    if (this.#raw !== null) this.#retire()
  }

  async extend(leaseMs) {
    if (this.#raw === null) throw glue.holdRefusal('extend', this.#retired)
    return keep(() => this.#raw.extend(leaseMs))
  }

  async owned() {
    if (this.#raw === null) return false
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
