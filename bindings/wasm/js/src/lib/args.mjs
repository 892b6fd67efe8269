// Argument checks that need JavaScript types, with the same messages as the native entry
// (node/lib/args.js): the wasm module checks values again (integer ms, ranges, names), this
// module checks shapes and types, so every bad input becomes an InvalidArgumentError before
// anything reaches Redis. Unknown option keys are refused: a misspelt `leaseMS` would
// otherwise silently mean "watchdog mode".

import { InvalidArgumentError } from './errors.mjs'

const MAX_MS = Number.MAX_SAFE_INTEGER // 2^53 - 1 (shared/API.md "Durations")

function typeOf(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

function optionsObject(what, options, allowed) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidArgumentError(`${what} must be an object, not ${typeOf(options)}`)
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new InvalidArgumentError(
        `unknown option ${JSON.stringify(key)} in ${what} (expected one of: ${allowed.join(', ')})`,
      )
    }
  }
  return options
}

/** A duration in integer milliseconds, or undefined when absent. */
export function millis(what, value, { allowZero = false, allowInfinity = false } = {}) {
  if (value === undefined) return undefined
  if (typeof value !== 'number') {
    throw new InvalidArgumentError(`${what} must be a number of milliseconds, not ${typeOf(value)}`)
  }
  if (allowInfinity && value === Infinity) return Infinity
  if (Number.isNaN(value)) throw new InvalidArgumentError(`${what} must be a number of milliseconds, not NaN`)
  if (value < 0) throw new InvalidArgumentError(`${what} must not be negative (got ${value})`)
  if (value === 0 && !allowZero) throw new InvalidArgumentError(`${what} must be greater than zero`)
  if (value > MAX_MS) {
    throw new InvalidArgumentError(`${what} of ${value} ms exceeds the maximum of ${MAX_MS} ms (2^53 - 1)`)
  }
  if (!Number.isInteger(value)) {
    throw new InvalidArgumentError(`${what} must be an integer number of milliseconds (got ${value})`)
  }
  return value
}

/** A wait: `undefined`/`null` (absent), `Infinity` (forever) or integer ms >= 0. */
function wait(value) {
  if (value === null) return undefined
  return millis('waitMs', value, { allowZero: true, allowInfinity: true })
}

export function name(value) {
  if (typeof value !== 'string') {
    throw new InvalidArgumentError(`lock name must be a string, not ${typeOf(value)}`)
  }
  if (value.length === 0) throw new InvalidArgumentError('lock name must not be empty')
  // A lone surrogate has no UTF-8 form: converting it would map distinct names to one key.
  if (LONE_SURROGATE.test(value)) {
    throw new InvalidArgumentError('lock name must be valid Unicode text (it contains a lone surrogate)')
  }
  return value
}

// String.prototype.isWellFormed is missing from older browsers; this is its negation.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

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

/** One transport object (its methods are checked by the wasm module). */
export function transport(value) {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) {
    throw new InvalidArgumentError(
      `a transport must be an object with an eval(script, keys, args) method, not ${typeOf(value)}`,
    )
  }
  return value
}

/** A non-empty array of transports (quorum form). */
export function transports(value) {
  if (!Array.isArray(value) || value.length === 0) {
    throw new InvalidArgumentError('transports must be a non-empty array of transport objects')
  }
  return value.map(transport)
}

const CLIENT_OPTIONS = ['watchdogTimeoutMs', 'networkTimeoutMs', 'nodeTimeoutMs', 'pollIntervalMs']
const LOCK_OPTIONS = ['leaseMs', 'waitMs', 'fenced', 'fenceTtlMs']
const ACQUIRE_OPTIONS = ['waitMs', 'signal']
const WITH_LOCK_OPTIONS = ['leaseMs', 'fenced', 'fenceTtlMs', 'waitMs', 'signal']

export function clientOptions(options) {
  const o = optionsObject('client options', options, CLIENT_OPTIONS)
  const out = {}
  for (const key of CLIENT_OPTIONS) {
    const v = millis(key, o[key])
    if (v !== undefined) out[key] = v
  }
  return out
}

/** Lock options, checked: `{ leaseMs, waitMs, fenced, fenceTtlMs }` (waitMs: undefined = forever). */
export function lockOptions(options) {
  const o = optionsObject('lock options', options, LOCK_OPTIONS)
  return {
    leaseMs: millis('leaseMs', o.leaseMs),
    waitMs: wait(o.waitMs),
    fenced: boolean('fenced', o.fenced),
    fenceTtlMs: millis('fenceTtlMs', o.fenceTtlMs),
  }
}

/** Acquire options, checked: `{ waitMs, signal }` (waitMs: undefined = the lock's). */
export function acquireOptions(options) {
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
