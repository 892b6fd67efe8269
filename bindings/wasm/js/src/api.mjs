// The public names of `redlatch/wasm`, the same on every host (each entry point installs the
// wasm module first, then re-exports these): the shared surface of both entries
// (../lib/facade/), this entry's factories and the adapters for the usual Redis clients.

export * from '../lib/facade/index.mjs'
export { createClient, createQuorumClient } from './engine.mjs'
export { fromNodeRedis, fromIoredis } from './adapters.mjs'
export { followsChains as rlockFollowsAsyncChains } from '../lib/facade/owner.mjs'
