// `createClient` / `createQuorumClient` and the `Client` class of `redlatch/wasm`: the same
// API as the native entry's `Client` (shared/API.md, Node), over transports the host supplies
// instead of URLs. No connection is made here, so creating a client is synchronous.

import * as args from './args.mjs'
import { glue, INTERNAL, keep } from './binding.mjs'
import { fromWasm, InvalidArgumentError, RedisConnectionError } from './errors.mjs'
import { Lock } from './lock.mjs'

/** The rejection for any call on a closed client. */
export function closedError() {
  return new RedisConnectionError('the client is closed')
}

/**
 * What a client shares with its locks and holds: the closed flag, the acquires in flight
 * (to cancel them on close) and weak references to live holds (to release them on close
 * without keeping an unreleased, unreachable hold from being garbage-collected).
 */
class Hub {
  constructor() {
    this.closed = false
    /** @type {Set<(reason: unknown) => void>} */
    this.pending = new Set()
    /** @type {Set<{ deref(): object | undefined }>} */
    this.holds = new Set()
  }

  trackPending(cancel) {
    this.pending.add(cancel)
    return () => this.pending.delete(cancel)
  }

  /**
   * Tracks a live hold until its release; returns the function that stops tracking it. Weakly
   * where the host has WeakRef (so an unreleased, unreachable hold can still be collected and
   * released in the background); workerd has no WeakRef and never collects such holds anyway.
   */
  trackHold(held) {
    if (this.holds.size >= 256) {
      for (const ref of this.holds) if (ref.deref() === undefined) this.holds.delete(ref)
    }
    const ref = typeof WeakRef === 'function' ? new WeakRef(held) : { deref: () => held }
    this.holds.add(ref)
    return () => this.holds.delete(ref)
  }
}

/** Connection(s) to Redis through host transports, and the locks made from them. */
export class Client {
  #raw
  #hub = new Hub()

  /** @internal Use `createClient(transport)` or `createQuorumClient(transports)`. */
  constructor(token, raw) {
    if (token !== INTERNAL) {
      throw new InvalidArgumentError('use createClient(transport) or createQuorumClient(transports) to create a client')
    }
    this.#raw = raw
  }

  /** This client's id (a UUID; the first half of every reentrant owner id in Redis). */
  get id() {
    return this.#raw.id
  }

  /** Number of Redis nodes (1 = single node, more = quorum). */
  get nodeCount() {
    return this.#raw.nodeCount
  }

  /** `true` after `close()`. */
  get closed() {
    return this.#hub.closed
  }

  /** A lease lock (wire-compatible with node-redlock / redis-py). Throws InvalidArgumentError for bad options. */
  lock(name, options) {
    return this.#makeLock(false, name, options)
  }

  /** A reentrant lock (Redisson RLock layout): see README "Reentrancy" for who the owner is. */
  rlock(name, options) {
    return this.#makeLock(true, name, options)
  }

  #makeLock(reentrant, name, options) {
    args.name(name)
    const o = args.lockOptions(options)
    if (this.#hub.closed) throw closedError()
    let raw
    try {
      raw = this.#raw.lock(name, reentrant, o.leaseMs, o.waitMs === Infinity ? undefined : o.waitMs, o.fenced, o.fenceTtlMs)
    } catch (err) {
      throw fromWasm(err)
    }
    return new Lock(INTERNAL, this.#hub, raw, o.waitMs)
  }

  /**
   * `client.lock(name, { leaseMs, fenced }).using(fn, { waitMs, signal })` in one call.
   * @returns {Promise<any>} what `fn` returned
   */
  async withLock(name, fn, options) {
    const o = args.withLockOptions(options)
    return this.lock(name, o.lock).using(fn, o.acquire)
  }

  /** Admin: deletes lock `name` whatever its owner. Resolves true when a lock was deleted. */
  async forceUnlock(name) {
    args.name(name)
    if (this.#hub.closed) throw closedError()
    try {
      return await keep(() => this.#raw.forceUnlock(name))
    } catch (err) {
      throw fromWasm(err)
    }
  }

  /**
   * Closes the client: pending acquires reject with RedisConnectionError, holds still alive
   * are released, later calls reject. The transports are the host's and stay open.
   * Idempotent.
   */
  async close() {
    const hub = this.#hub
    if (hub.closed) return
    hub.closed = true
    const err = closedError()
    for (const cancel of hub.pending) cancel(err)
    hub.pending.clear()
    const live = [...hub.holds].map((ref) => ref.deref()).filter((h) => h !== undefined && h.active)
    hub.holds.clear()
    await Promise.allSettled(live.map((h) => h.closeByClient()))
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
    throw fromWasm(err)
  }
  return new Client(INTERNAL, raw)
}
