// `redlatch` for Node (shared/API.md, Node section): the shared facade (./facade/) over the
// native addon (../src/), which engine.mjs presents as the facade's engine. Lock logic,
// waiting, renewal and timeouts run in the Rust core: nothing here blocks the event loop,
// and no timer or socket keeps the process alive (README "Process exit").
//
// `require('redlatch')` loads this module too (index.cjs), so both forms share one instance.

import { AsyncLocalStorage } from 'node:async_hooks'
import { Client as FacadeClient } from './facade/client.mjs'
import { INTERNAL } from './facade/engine.mjs'
import * as args from './facade/args.mjs'
import { useAsyncLocalStorage } from './facade/owner.mjs'
import { connectEngine } from './engine.mjs'

useAsyncLocalStorage(AsyncLocalStorage)

// Where the core runs: on the addon's tokio thread over redis-rs connections (the default),
// or, with REDLATCH_NODE_IO=local (read at each connect), on this thread over Node sockets
// of its own (README "Design": measured, not faster enough to be the default).
const localEngine = () => globalThis.process?.env?.REDLATCH_NODE_IO === 'local'

async function connect(urls, options) {
  const opts = args.clientOptions(options)
  return new Client(INTERNAL, await connectEngine(urls, opts, localEngine()))
}

/** Connection(s) to Redis and the locks made from them. Create with `Client.connect` / `Client.quorum`. */
export class Client extends FacadeClient {
  /** Connects to one Redis node (`redis://[:password@]host:port[/db]`); it must answer PING. */
  static async connect(redisUrl, options) {
    return connect([args.url(redisUrl)], options)
  }

  /** Connects to N independent Redis nodes (Redlock); a majority must answer. */
  static async quorum(urls, options) {
    return connect(args.urls(urls), options)
  }
}

export {
  Lock,
  Held,
  Owner,
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
} from './facade/index.mjs'
