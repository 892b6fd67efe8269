// Argument checks that need JavaScript types, shared by both entries: engines check values
// again (integer ms, ranges, names), this module checks shapes and types, so every bad input
// becomes an InvalidArgumentError with a clear message before anything reaches Redis.
// Unknown option keys are refused: a misspelt `leaseMS` would otherwise silently mean
// "watchdog mode".

import { InvalidArgumentError } from './errors.mjs'
import { Owner } from './owner.mjs'

const MAX_MS = Number.MAX_SAFE_INTEGER // 2^53 - 1 (shared/API.md "Durations")

function typeOf(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/**
 * Checks that `options` is undefined or a plain object whose keys are all in `allowed`.
 * @returns {Record<string, unknown>}
 */
function optionsObject(what, options, allowed) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidArgumentError(`${what} must be an object, not ${typeOf(options)}`)
  }
  for (const key in options) {
    if (Object.hasOwn(options, key) && !allowed.includes(key)) {
      throw new InvalidArgumentError(
        `unknown option ${JSON.stringify(key)} in ${what} (expected one of: ${allowed.join(', ')})`,
      )
    }
  }
  return options
}

/** A duration in integer milliseconds, or undefined when absent. */
export function millis(what, value, allowZero = false, allowInfinity = false) {
  if (value === undefined) return undefined
  if (typeof value !== 'number') {
    throw new InvalidArgumentError(`${what} must be a number of milliseconds, not ${typeOf(value)}`)
  }
  if (Number.isInteger(value) && value > 0 && value <= MAX_MS) return value // the usual case
  if (allowInfinity && value === Infinity) return Infinity
  if (Number.isNaN(value)) throw new InvalidArgumentError(`${what} must be a number of milliseconds, not NaN`)
  if (value < 0) throw new InvalidArgumentError(`${what} must not be negative (got ${value})`)
  if (value === 0) {
    if (allowZero) return 0
    throw new InvalidArgumentError(`${what} must be greater than zero`)
  }
  if (value > MAX_MS) {
    throw new InvalidArgumentError(`${what} of ${value} ms exceeds the maximum of ${MAX_MS} ms (2^53 - 1)`)
  }
  throw new InvalidArgumentError(`${what} must be an integer number of milliseconds (got ${value})`)
}

/** A wait: `undefined`/`null` (absent), `Infinity` (forever) or integer ms >= 0. */
function wait(value) {
  if (value === null) return undefined
  return millis('waitMs', value, true, true)
}

// String.prototype.isWellFormed is missing from older browsers; this is its negation.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

export function name(value) {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`lock name must be a string, not ${typeOf(value)}`)
  }
  if (value.length === 0) throw new InvalidArgumentError('lock name must not be empty')
  // A lone surrogate has no UTF-8 form: converting it would map distinct names to one key.
  if (typeof value.isWellFormed === 'function' ? !value.isWellFormed() : LONE_SURROGATE.test(value)) {
    throw new InvalidArgumentError('lock name must be valid Unicode text (it contains a lone surrogate)')
  }
  return value
}

function boolean(what, value) {
  if (value === undefined) return undefined
  if (typeof value !== 'boolean') throw new InvalidArgumentError(`${what} must be a boolean, not ${typeOf(value)}`)
  return value
}

function signal(value) {
  if (value === undefined || value === null) return undefined
  if (typeof AbortSignal === 'undefined' || !(value instanceof AbortSignal)) {
    throw new InvalidArgumentError(`signal must be an AbortSignal, not ${typeOf(value)}`)
  }
  return value
}

export function fn(value) {
  if (typeof value !== 'function') throw new InvalidArgumentError(`fn must be a function, not ${typeOf(value)}`)
  return value
}

const CLIENT_OPTIONS = ['watchdogTimeoutMs', 'networkTimeoutMs', 'nodeTimeoutMs', 'pollIntervalMs']
const LOCK_OPTIONS = ['leaseMs', 'waitMs', 'fenced', 'fenceTtlMs', 'owner']
const ACQUIRE_OPTIONS = ['waitMs', 'signal']
const WITH_LOCK_OPTIONS = ['leaseMs', 'fenced', 'fenceTtlMs', 'waitMs', 'signal']

/**
 * Client options, checked: the durations every engine takes (integer ms). `entryKeys`: the
 * keys an entry takes on top (the native entry's deployment options), allowed here and
 * checked by that entry.
 */
export function clientOptions(options, entryKeys = []) {
  const o = optionsObject('client options', options, entryKeys.length ? [...CLIENT_OPTIONS, ...entryKeys] : CLIENT_OPTIONS)
  const out = {}
  for (const key of CLIENT_OPTIONS) {
    const v = millis(key, o[key])
    if (v !== undefined) out[key] = v
  }
  return out
}

function owner(value) {
  if (value === undefined || value instanceof Owner) return value
  throw new InvalidArgumentError(`owner must be an Owner (new Owner()), not ${typeOf(value)}`)
}

/** Lock options, checked: `{ leaseMs, waitMs, fenced, fenceTtlMs, owner }` (waitMs: undefined = forever). */
export function lockOptions(options) {
  const o = optionsObject('lock options', options, LOCK_OPTIONS)
  return {
    leaseMs: millis('leaseMs', o.leaseMs),
    waitMs: wait(o.waitMs),
    fenced: boolean('fenced', o.fenced),
    fenceTtlMs: millis('fenceTtlMs', o.fenceTtlMs),
    owner: owner(o.owner),
  }
}

const NO_ACQUIRE_OPTIONS = Object.freeze({ waitMs: undefined, signal: undefined })

/** Acquire options, checked: `{ waitMs, signal }` (waitMs: undefined = the lock's). */
export function acquireOptions(options) {
  if (options === undefined) return NO_ACQUIRE_OPTIONS
  const o = optionsObject('acquire options', options, ACQUIRE_OPTIONS)
  return { waitMs: wait(o.waitMs), signal: signal(o.signal) }
}

/** `withLock` options: lock and acquire options in one object. */
export function withLockOptions(options) {
  const o = optionsObject('withLock options', options, WITH_LOCK_OPTIONS)
  return {
    lock: { leaseMs: o.leaseMs, fenced: o.fenced, fenceTtlMs: o.fenceTtlMs },
    acquire: { waitMs: o.waitMs, signal: o.signal },
  }
}

const MAX_COUNT = 2 ** 31 - 1 // Redisson counts permits in Java ints (docs/family-protocol.md)

/** A count of permits (or a latch count): an integer in 1 ..= 2^31 - 1. */
export function count(what, value) {
  if (typeof value !== 'number') throw new InvalidArgumentError(`${what} must be a number, not ${typeOf(value)}`)
  if (!Number.isInteger(value) || value < 1 || value > MAX_COUNT) {
    throw new InvalidArgumentError(`${what} must be an integer from 1 to ${MAX_COUNT} (got ${value})`)
  }
  return value
}

const SEMAPHORE_OPTIONS = ['permits', 'waitMs']
const PERMIT_ACQUIRE_OPTIONS = ['leaseMs', 'waitMs', 'signal']
const LATCH_WAIT_OPTIONS = ['timeoutMs', 'signal']
const MULTI_OPTIONS = ['leaseMs', 'waitMs']
const SEMAPHORE_USING_OPTIONS = ['permits', 'waitMs', 'signal']

/** Semaphore options: `{ permits, waitMs }` (permits: set when the semaphore does not exist yet). */
export function semaphoreOptions(options) {
  const o = optionsObject('semaphore options', options, SEMAPHORE_OPTIONS)
  return {
    permits: o.permits === undefined ? undefined : count('permits', o.permits),
    waitMs: wait(o.waitMs),
  }
}

/** `semaphore.using` options: `{ permits, waitMs, signal }` (permits: how many, default 1). */
export function semaphoreUsingOptions(options) {
  const o = optionsObject('semaphore using options', options, SEMAPHORE_USING_OPTIONS)
  return {
    permits: o.permits === undefined ? 1 : count('permits', o.permits),
    waitMs: wait(o.waitMs),
    signal: signal(o.signal),
  }
}

/** Permit acquire options: `{ leaseMs, waitMs, signal }` (leaseMs absent: renewed by the watchdog). */
export function permitAcquireOptions(options) {
  const o = optionsObject('permit acquire options', options, PERMIT_ACQUIRE_OPTIONS)
  return { leaseMs: millis('leaseMs', o.leaseMs), waitMs: wait(o.waitMs), signal: signal(o.signal) }
}

/** Latch wait options: `{ timeoutMs, signal }` (timeoutMs absent or Infinity: no limit; 0: one look). */
export function latchWaitOptions(options) {
  const o = optionsObject('latch wait options', options, LATCH_WAIT_OPTIONS)
  const timeoutMs = o.timeoutMs === null ? undefined : millis('timeoutMs', o.timeoutMs, true, true)
  return { timeoutMs, signal: signal(o.signal) }
}

/** Multi-lock options: `{ leaseMs, waitMs }`. */
export function multiOptions(options) {
  const o = optionsObject('multi-lock options', options, MULTI_OPTIONS)
  return { leaseMs: millis('leaseMs', o.leaseMs), waitMs: wait(o.waitMs) }
}

/** A Redis URL (native entry; the addon parses it). */
export function url(value) {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`a Redis URL must be a non-empty string, not ${typeOf(value)}`)
  }
  if (value.length === 0) throw new InvalidArgumentError('a Redis URL must be a non-empty string, not an empty one')
  return value
}

/** A non-empty array of Redis URLs (native entry, quorum form). */
export function urls(value) {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError('urls must be a non-empty array of Redis URLs')
  }
  return value.map(url)
}

/** One transport object (wasm entry; its methods are checked by the wasm module). */
export function transport(value) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    throw new InvalidArgumentError(
      `a transport must be an object with an eval(script, keys, args) method, not ${typeOf(value)}`,
    )
  }
  return value
}

/** A non-empty array of transports (wasm entry, quorum form). */
export function transports(value) {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError('transports must be a non-empty array of transport objects')
  }
  return value.map(transport)
}
