// The shared surface of both entries (`redlatch` and `redlatch/wasm`): each entry re-exports
// these names and adds its own way of making a Client. Typed by index.d.ts next to this file.

export { Client } from './client.mjs'
export { Lock } from './lock.mjs'
export { RwLock } from './rwlock.mjs'
export { Semaphore } from './semaphore.mjs'
export { PermitSemaphore, Permit } from './permits.mjs'
export { CountDownLatch } from './latch.mjs'
export { MultiLock, MultiHeld } from './multilock.mjs'
export { Held } from './held.mjs'
export { Owner } from './owner.mjs'
export {
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
  WouldDeadlockError,
} from './errors.mjs'
