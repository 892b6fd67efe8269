// The error tree of `redlatch/wasm` (shared/API.md, "Errors"): the same class names, `code`
// strings, numeric `status` and `reason` as the native `redlatch` entry. Errors are made in
// Rust (src/error.rs) as plain `Error` objects carrying `name`, `code`, `status`, `reason`
// (NotOwnedError / LockLostError: 'expired', 'taken', 'deleted' or 'never_held'; else null)
// and `nodes`;
// `fromWasm` only swaps the prototype to the class of that name, so the stack and every
// property stay as made.

/** Stable codes: JS `code` -> numeric status (the core's `ErrorKind::code()`). */
export const STATUS = Object.freeze({
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
export class LockError extends Error {
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
export class NotAcquiredError extends LockError {}
NotAcquiredError.defaultCode = 'ERR_NOT_ACQUIRED'

/** Release or extend of a hold this owner does not have (found deleted or taken, or never held here / already released): see `reason`. */
export class NotOwnedError extends LockError {}
NotOwnedError.defaultCode = 'ERR_NOT_OWNED'

/** The hold was lost while held (watchdog or extend found it gone, or its lease ran out): see `reason`. */
export class LockLostError extends NotOwnedError {}
LockLostError.defaultCode = 'ERR_LOCK_LOST'

/** Quorum (Redlock) mode: no majority of nodes granted the request. */
export class QuorumError extends LockError {
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

/** Redis unreachable, the transport failed, a network timeout, or the client is closed. */
export class RedisConnectionError extends LockError {}
RedisConnectionError.defaultCode = 'ERR_CONNECTION'

/** Bad input (wrong type, empty name, negative / NaN / non-integer / huge duration, misuse). Nothing was sent to Redis. */
export class InvalidArgumentError extends LockError {}
InvalidArgumentError.defaultCode = 'ERR_INVALID_ARGUMENT'

/** The ACL user may not run a command or use a key or channel (`NOPERM`). Nothing changed. */
export class NoPermissionError extends LockError {}
NoPermissionError.defaultCode = 'ERR_NO_PERMISSION'

/** Redis is out of memory (`OOM`: `maxmemory` reached under `noeviction`). Rejected at once. */
export class OutOfMemoryError extends LockError {}
OutOfMemoryError.defaultCode = 'ERR_OUT_OF_MEMORY'

/** The lock's name holds application data (another type, or a string / hash without TTL that is no lock). Rejected at once, whatever the wait. */
export class KeyConflictError extends LockError {}
KeyConflictError.defaultCode = 'ERR_KEY_CONFLICT'

const CLASSES = [
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
]
for (const cls of CLASSES) {
  Object.defineProperty(cls.prototype, 'name', { value: cls.name, writable: true, configurable: true })
}

const CLASS_BY_NAME = Object.fromEntries(CLASSES.map((cls) => [cls.name, cls]))

/**
 * The facade error for an error thrown or rejected by the wasm module: the same object,
 * with its prototype set to the class its `name` says. Anything else passes through.
 * @param {unknown} err
 * @returns {unknown}
 */
export function fromWasm(err) {
  if (err instanceof Error && typeof err.code === 'string' && err.code.startsWith('ERR_')) {
    const cls = CLASS_BY_NAME[err.name]
    if (cls !== undefined && !(err instanceof cls)) {
      Object.setPrototypeOf(err, cls.prototype)
      // The prototype now supplies `name`; drop the own copy so both agree.
      delete err.name
    }
    if (cls === QuorumError && !Array.isArray(err.nodes)) err.nodes = []
    if (err.reason === undefined) err.reason = null
    return err
  }
  // A RuntimeError from the wasm module (a Rust panic: a bug) is reported as ERR_PANIC.
  if (err instanceof WebAssembly.RuntimeError) {
    return new LockError(`internal error in redlatch/wasm: ${err.message}`, { code: 'ERR_PANIC', cause: err })
  }
  return err
}
