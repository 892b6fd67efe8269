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
import { DEPLOYMENT_OPTIONS, deploymentOptions, nodeTrustedCa } from './deployment.mjs'

useAsyncLocalStorage(AsyncLocalStorage)

// Where the core runs (README "Design"): single nodes and quorums of redis:// / rediss://
// URLs without deployment options run it on this thread over Node sockets of its own (the
// local engine: no thread hop per call), with its watchdog renewals on the addon's tokio
// thread (a blocked event loop does not let a hold expire); every other client runs it on
// the tokio thread over redis-rs connections (the tokio engine), as do all clients with
// REDLATCH_NODE_IO=tokio (read at each connect).
const tokioEngine = () => globalThis.process?.env?.REDLATCH_NODE_IO === 'tokio'
const plainUrl = (u) => u.startsWith('redis://') || u.startsWith('rediss://')

async function connect(urls, options, cluster) {
  const opts = args.clientOptions(options, DEPLOYMENT_OPTIONS)
  const deployed = deploymentOptions(options, opts)
  const local = !tokioEngine() && !cluster && !deployed && urls.every(plainUrl)
  const trusted = nodeTrustedCa(urls)
  if (trusted !== undefined) opts.nodeTrustedCa = trusted
  return new Client(INTERNAL, await connectEngine(urls, opts, local, cluster))
}

/** Connection(s) to Redis and the locks made from them. Create with `Client.connect` / `Client.quorum`. */
export class Client extends FacadeClient {
  /**
   * Connects to the deployment `url` names: one node (`redis://[[user]:password@]host:port[/db]`,
   * `rediss://` with `options.tls`), a Cluster (`redis+cluster://h1:7000,h2:7001`) or the
   * master a Sentinel deployment names (`redis+sentinel://h1:26379,h2:26379/mymaster`); it
   * must answer PING. See docs/deployments.md.
   */
  static async connect(redisUrl, options) {
    return connect([args.url(redisUrl)], options, false)
  }

  /** Connects to N independent Redis nodes (Redlock); a majority must answer. */
  static async quorum(urls, options) {
    return connect(args.urls(urls), options, false)
  }

  /**
   * Connects to a Redis Cluster through any of its nodes (`redis://` or `rediss://` seed
   * URLs); slot moves and failovers are followed (MOVED/ASK).
   */
  static async cluster(urls, options) {
    return connect(args.urls(urls), options, true)
  }
}

export {
  Lock,
  RwLock,
  Semaphore,
  PermitSemaphore,
  Permit,
  CountDownLatch,
  MultiLock,
  MultiHeld,
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
  WouldDeadlockError,
} from './facade/index.mjs'
