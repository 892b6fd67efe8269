// The public names of `redlatch/wasm`, the same on every host (each entry point installs the
// wasm module first, then re-exports these).

export { Client, createClient, createQuorumClient } from './client.mjs'
export { Lock, Held } from './lock.mjs'
export { fromNodeRedis, fromIoredis } from './adapters.mjs'
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
} from './errors.mjs'
export { followsChains as rlockFollowsAsyncChains } from './chain.mjs'
