// The error tree (shared/API.md, "Errors"), one set of classes for both entries (`redlatch`
// and `redlatch/wasm` import this one module, so `err instanceof LockLostError` holds
// whichever entry threw). Every error is an `Error` subclass with a stable `name`, a stable
// string `code` (`ERR_<X>`, the C status `REDLATCH_<X>` without its prefix) and the numeric
// `status` shared with C (`redlatch_status`) and Python (`.code`). NotOwnedError /
// LockLostError carry `reason`, the core's word: 'expired', 'taken', 'deleted' or
// 'never_held' (null on other errors), the same as Python's `.reason` and C's
// `redlatch_last_error_reason()`.

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
  ERR_WOULD_DEADLOCK: 12,
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

/** Redis unreachable, the connection or transport failed, a network timeout, or the client is closed. */
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

/**
 * The acquire could only wait forever, so it was refused at once and nothing changed in
 * Redis: a write lock asked for by an owner that holds a read hold of the same rw lock
 * (Redisson would wait forever there). Release the read holds first.
 */
export class WouldDeadlockError extends LockError {}
WouldDeadlockError.defaultCode = 'ERR_WOULD_DEADLOCK'

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
  WouldDeadlockError,
]
for (const cls of CLASSES) {
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
  ERR_WOULD_DEADLOCK: WouldDeadlockError,
}

// Fields of the native addon's JSON that are not copied onto the error as they are.
const JSON_FIELDS = new Set(['redlatch', 'code', 'status', 'message', 'reason'])

/**
 * The facade error for an error an engine threw or rejected with. Engines report errors in
 * one of two shapes (see engine.mjs):
 * - an `Error` whose `code` is an `ERR_*` string (the wasm module): the same object is kept,
 *   with its prototype set to the class of that code, so its stack stays as made;
 * - an `Error` whose message is the JSON `{"redlatch":1,"code":...,"message":...}` (the
 *   native addon: napi-rs gives async rejections a fixed `code`, so the kind travels in the
 *   message): a new error of the class of that code, with the JSON's other fields
 *   (`nodes`, ...) as properties.
 * napi-rs's own argument conversion errors become InvalidArgumentError, a RuntimeError of
 * the wasm module (a Rust panic: a bug) is ERR_PANIC; anything else passes through.
 * @param {unknown} err
 * @returns {unknown}
 */
export function toLockError(err) {
  if (err instanceof LockError || err === null || typeof err !== 'object') return err
  const { message, code } = /** @type {{ message?: unknown, code?: unknown }} */ (err)
  if (typeof message === 'string' && message.startsWith('{"redlatch":')) {
    const data = parseJson(message)
    if (data !== undefined) return fromJson(data)
  }
  if (err instanceof Error && typeof code === 'string' && code.startsWith('ERR_')) {
    const cls = CLASS_BY_CODE[code] ?? LockError
    Object.setPrototypeOf(err, cls.prototype)
    // The prototype now supplies `name`; drop an own copy so both agree.
    if (Object.hasOwn(err, 'name')) delete err.name
    if (cls === QuorumError && !Array.isArray(err.nodes)) err.nodes = []
    if (err.reason === undefined) err.reason = null
    return err
  }
  if (code === 'InvalidArg') return new InvalidArgumentError(String(message), { cause: err })
  if (typeof WebAssembly === 'object' && err instanceof WebAssembly.RuntimeError) {
    return new LockError(`internal error in redlatch/wasm: ${err.message}`, { code: 'ERR_PANIC', cause: err })
  }
  return err
}

function parseJson(text) {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function fromJson(data) {
  const cls = CLASS_BY_CODE[data.code] ?? LockError
  const err = new cls(String(data.message), { code: data.code, nodes: data.nodes, reason: data.reason })
  for (const [key, value] of Object.entries(data)) {
    if (!JSON_FIELDS.has(key) && !(key === 'nodes' && cls === QuorumError)) err[key] = value
  }
  return err
}

/** The rejection of any call on a closed client. */
export function closedError() {
  return new RedisConnectionError('the client is closed')
}
