// `redlatch` for Node (shared/API.md, Node section): the shared facade (./facade/) over the
// native addon, which implements the facade's engine interface (facade/engine.mjs) with its
// `NativeClient`, `NativeLock` and `NativeHeld` classes (../src/). Lock logic, waiting,
// renewal and timeouts run in the Rust core: nothing here blocks the event loop, and no timer
// or socket keeps the process alive (README "Process exit").
//
// `require('redlatch')` loads this module too (index.cjs), so both forms share one instance.

import { AsyncLocalStorage } from 'node:async_hooks'
import { createRequire } from 'node:module'
import { Client as FacadeClient } from './facade/client.mjs'
import { INTERNAL } from './facade/engine.mjs'
import { toLockError } from './facade/errors.mjs'
import * as args from './facade/args.mjs'
import { useAsyncLocalStorage } from './facade/owner.mjs'

const native = createRequire(import.meta.url)('../index.js')
useAsyncLocalStorage(AsyncLocalStorage)

async function connect(urls, options) {
  const opts = args.clientOptions(options)
  try {
    return new Client(INTERNAL, await native.connect(urls, opts))
  } catch (err) {
    throw toLockError(err)
  }
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
} from './facade/index.mjs'
