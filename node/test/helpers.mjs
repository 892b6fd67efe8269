// Shared by the suites: Redis URLs from the fleet harness (target/debug/redlatch-fleet), the
// two entries of the package under test, unique key names per run (suites run in parallel on
// one Redis), and a raw ioredis connection for looking at Redis directly.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import Redis from 'ioredis'
import * as native from 'redlatch'
import * as wasm from 'redlatch/wasm'

export const REDIS_URL = process.env.REDLATCH_TEST_URL
export const QUORUM_URLS = (process.env.REDLATCH_TEST_QUORUM_URLS ?? '').split(',').filter(Boolean)

if (!REDIS_URL) {
  throw new Error('REDLATCH_TEST_URL is not set: run the suites through target/debug/redlatch-fleet (make node-test)')
}

const run = randomUUID().slice(0, 8)
let seq = 0
/** A lock name no other test uses. */
export function key(label = 'k') {
  return `node-test:${run}:${label}:${++seq}`
}

/**
 * Runs `connect` (which makes a native client) on `engine`, `'local'` (the default) or
 * `'tokio'`: the engine is chosen at connect through REDLATCH_NODE_IO.
 */
export async function onEngine(engine, connect) {
  const saved = process.env.REDLATCH_NODE_IO
  if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
  else delete process.env.REDLATCH_NODE_IO
  try {
    return await connect()
  } finally {
    if (saved === undefined) delete process.env.REDLATCH_NODE_IO
    else process.env.REDLATCH_NODE_IO = saved
  }
}

/** A raw Redis connection (ioredis) to `url`; quit it when done. */
export function redis(url = REDIS_URL) {
  return new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 })
}

/**
 * The package's two entries, for the suites that test the surface they share (shared/API.md,
 * Node): `api` is the module, `connect(options)` makes a client on the fleet's node and
 * `quorum(urls, options)` one over several nodes; both resolve to `{ client, close }`
 * (`close` also closes what the entry's client runs over).
 * - native: `redlatch`, `Client.connect(url)`; waiters are woken by pub/sub.
 * - wasm: `redlatch/wasm` over an ioredis transport; waiters poll (no pub/sub).
 */
export const ENTRIES = [
  {
    name: 'native',
    api: native,
    pubsub: true,
    async connect(options) {
      const client = await native.Client.connect(REDIS_URL, options)
      return { client, close: () => client.close() }
    },
    async quorum(urls, options) {
      const client = await native.Client.quorum(urls, options)
      return { client, close: () => client.close() }
    },
  },
  {
    name: 'wasm',
    api: wasm,
    pubsub: false,
    async connect(options) {
      return this.quorum([REDIS_URL], options)
    },
    async quorum(urls, options) {
      const conns = urls.map((u) => redis(u))
      const transports = conns.map((c) => wasm.fromIoredis(c))
      let client
      try {
        client =
          urls.length === 1 ? wasm.createClient(transports[0], options) : wasm.createQuorumClient(transports, options)
      } catch (err) {
        for (const c of conns) c.disconnect()
        throw err
      }
      return {
        client,
        close: async () => {
          await client.close()
          for (const c of conns) c.disconnect()
        },
      }
    },
  },
]

/**
 * ENTRIES for the suites of the lock family: on the second run of the suites
 * (REDLATCH_NODE_IO=tokio, tools/test-packed.sh) only the native entry, the one that run
 * changes.
 */
export const FAMILY_ENTRIES =
  process.env.REDLATCH_NODE_IO === 'tokio' ? ENTRIES.filter((e) => e.name === 'native') : ENTRIES

/** Redisson's unlock channel of lock `name` (shared/WIRE.md), where waiters subscribe. */
export function channel(name) {
  return `redisson_lock__channel:{${name}}`
}

export { sleep }

/** Polls `cond` until it is true or `ms` pass; returns its last value. */
export async function eventually(cond, ms = 3000, step = 20) {
  const end = Date.now() + ms
  for (;;) {
    const v = await cond()
    if (v || Date.now() > end) return v
    await sleep(step)
  }
}

/**
 * Resolves when `signal` aborts; rejects after `ms`. The pending timer also keeps the event
 * loop alive meanwhile: a held lock alone never does (by design), so a test that only waits
 * for a loss would otherwise let the process exit.
 */
export function aborted(signal, ms = 5000) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason)
    const timer = setTimeout(() => reject(new Error(`signal not aborted within ${ms} ms`)), ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve(signal.reason)
      },
      { once: true },
    )
  })
}
