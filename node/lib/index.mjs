// ES module entry: the same objects as the CommonJS entry (one instance, so `instanceof`
// works whichever way a program loads redlatch).
import redlatch from './index.js'

export const {
  Client,
  Lock,
  Held,
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
  STATUS,
} = redlatch

export default redlatch
