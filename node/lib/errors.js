'use strict'
// The error tree (shared/API.md, "Errors"). Every error is an `Error` subclass with a stable
// `name`, a stable string `code` (`ERR_<X>`, the C status `REDLATCH_<X>` without its prefix)
// and the numeric `status` shared with C (`redlatch_status`) and Python (`.code`).
// NotOwnedError / LockLostError carry `reason`, the core's word: 'expired', 'taken', 'deleted'
// or 'never_held' (null on other errors), the same as Python's `.reason` and C's
// `redlatch_last_error_reason()`.
//
// The native addon rejects with a JSON message built from the core's `ErrorKind`
// (node/src/error.rs); `fromNative` turns it into the right class here, so the mapping from
// kind to class is one table.

/** Stable codes: JS `code` -> numeric status (the core's `ErrorKind::code()`). */
const STATUS = Object.freeze({
  ERR_NOT_ACQUIRED: 1,
  ERR_NOT_OWNED: 2,
  ERR_LOCK_LOST: 3,
  ERR_QUORUM: 4,
  ERR_CONNECTION: 5,
  ERR_INVALID_ARGUMENT: 6,
  ERR_REDIS: 7,
  ERR_PANIC: 8,
  ERR_NO_PERMISSION: 9,
  ERR_OUT_OF_MEMORY: 10,
  ERR_KEY_CONFLICT: 11,
})

/** Base class of every redlatch error. Used as such for `ERR_REDIS` and `ERR_PANIC`. */
class LockError extends Error {
  /**
   * @param {string} message
   * @param {{ code?: string, cause?: unknown, reason?: string | null }} [options]
   */
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    const code = options.code ?? new.target.defaultCode
    /** Stable string code, e.g. `ERR_NOT_ACQUIRED`. */
    this.code = code
    /** Stable numeric code, equal to the C `redlatch_status` value. */
    this.status = STATUS[code] ?? STATUS.ERR_PANIC
    /** Why a hold is not ours ('expired', 'taken', 'deleted', 'never_held'); null otherwise. */
    this.reason = options.reason ?? null
  }
}
LockError.defaultCode = 'ERR_PANIC'

/** The wait ran out before the lock could be acquired. */
class NotAcquiredError extends LockError {}
NotAcquiredError.defaultCode = 'ERR_NOT_ACQUIRED'

/** Release or extend of a hold this owner does not have (never held, expired, taken, released). */
class NotOwnedError extends LockError {}
NotOwnedError.defaultCode = 'ERR_NOT_OWNED'

/** The hold was lost while held (watchdog or extend found it gone, or its lease ran out). */
class LockLostError extends NotOwnedError {}
LockLostError.defaultCode = 'ERR_LOCK_LOST'

/** Quorum (Redlock) mode: no majority of nodes granted the request. */
class QuorumError extends LockError {
  /**
   * @param {string} message
   * @param {{ code?: string, cause?: unknown, nodes?: Array<{ node: string, error: string | null }> }} [options]
   */
  constructor(message, options = {}) {
    super(message, options)
    /** Per-node outcomes when known: `error` is null for a node that granted the request. */
    this.nodes = options.nodes ?? []
  }
}
QuorumError.defaultCode = 'ERR_QUORUM'

/** Redis unreachable, the connection dropped, a network timeout, or the client is closed. */
class RedisConnectionError extends LockError {}
RedisConnectionError.defaultCode = 'ERR_CONNECTION'

/** Bad input (wrong type, empty name, negative / NaN / non-integer / huge duration, misuse). Nothing was sent to Redis. */
class InvalidArgumentError extends LockError {}
InvalidArgumentError.defaultCode = 'ERR_INVALID_ARGUMENT'

/** The ACL user may not run a command or use a key or channel (`NOPERM`). Nothing changed. */
class NoPermissionError extends LockError {}
NoPermissionError.defaultCode = 'ERR_NO_PERMISSION'

/** Redis is out of memory (`OOM`: `maxmemory` reached under `noeviction`). Rejected at once. */
class OutOfMemoryError extends LockError {}
OutOfMemoryError.defaultCode = 'ERR_OUT_OF_MEMORY'

/** The lock's name holds application data (another type, or a string / hash without TTL that is no lock). Rejected at once, whatever the wait. */
class KeyConflictError extends LockError {}
KeyConflictError.defaultCode = 'ERR_KEY_CONFLICT'

for (const cls of [
  LockError,
  NotAcquiredError,
  NotOwnedError,
  LockLostError,
  QuorumError,
  RedisConnectionError,
  InvalidArgumentError,
  NoPermissionError,
  OutOfMemoryError,
  KeyConflictError,
]) {
  Object.defineProperty(cls.prototype, 'name', { value: cls.name, writable: true, configurable: true })
}

const CLASS_BY_CODE = {
  ERR_NOT_ACQUIRED: NotAcquiredError,
  ERR_NOT_OWNED: NotOwnedError,
  ERR_LOCK_LOST: LockLostError,
  ERR_QUORUM: QuorumError,
  ERR_CONNECTION: RedisConnectionError,
  ERR_INVALID_ARGUMENT: InvalidArgumentError,
  ERR_NO_PERMISSION: NoPermissionError,
  ERR_OUT_OF_MEMORY: OutOfMemoryError,
  ERR_KEY_CONFLICT: KeyConflictError,
}

/**
 * The facade error for a rejection of the native addon.
 * @param {unknown} err
 * @returns {Error}
 */
function fromNative(err) {
  const message = err && typeof err === 'object' ? err.message : undefined
  if (typeof message === 'string' && message.startsWith('{"redlatch":')) {
    let data
    try {
      data = JSON.parse(message)
    } catch {
      data = undefined
    }
    if (data) {
      const cls = CLASS_BY_CODE[data.code] ?? LockError
      return new cls(data.message, { code: data.code, nodes: data.nodes, reason: data.reason })
    }
  }
  // napi-rs's own argument conversion errors (a value the facade let through).
  if (err && typeof err === 'object' && err.code === 'InvalidArg') {
    return new InvalidArgumentError(String(message), { cause: err })
  }
  return err instanceof Error ? err : new LockError(String(err))
}

module.exports = {
  STATUS,
  LockError,
  NotAcquiredError,
  NotOwnedError,
  LockLostError,
  QuorumError,
  RedisConnectionError,
  InvalidArgumentError,
  NoPermissionError,
  OutOfMemoryError,
  KeyConflictError,
  fromNative,
}
