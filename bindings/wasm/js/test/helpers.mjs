// Shared by the suites: the built entry (../../pkg/wasm, next to the facade in ../../pkg/lib),
// Redis URLs from the fleet harness
// (target/debug/redlatch-fleet), node-redis transports, unique key names per run (suites run
// in parallel on one Redis) and small waiting helpers.
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClient as createRedisClient } from 'redis'

/** The package root as built (laid out as in the npm package: wasm/ and lib/facade/). */
export const PKG_ROOT = fileURLToPath(new URL('../../pkg/', import.meta.url))
/** The `redlatch/wasm` entry (node/wasm/ once staged). */
export const PKG_DIR = `${PKG_ROOT}wasm/`
export const REPO_DIR = fileURLToPath(new URL('../../../../', import.meta.url))

if (!existsSync(`${PKG_DIR}index.mjs`)) {
  throw new Error(`${PKG_DIR} is not built: run make wasm-build (or make wasm-test)`)
}

export const REDIS_URL = process.env.REDLATCH_TEST_URL
export const QUORUM_URLS = (process.env.REDLATCH_TEST_QUORUM_URLS ?? '').split(',').filter(Boolean)

if (!REDIS_URL) {
  throw new Error('REDLATCH_TEST_URL is not set: run the suites through target/debug/redlatch-fleet (make wasm-test)')
}

/** The package, loaded as Node loads `redlatch/wasm` (the `node` + `import` condition). */
export const wasm = await import(`${PKG_DIR}index.mjs`)

const run = randomUUID().slice(0, 8)
let seq = 0
/** A lock name no other test uses. */
export function key(label = 'k') {
  return `wasm-test:${run}:${label}:${++seq}`
}

/** A connected node-redis client; `quit()` it when done. */
export async function redis(url = REDIS_URL, options = {}) {
  const client = createRedisClient({ url, ...options })
  client.on('error', () => {}) // reconnects are expected in the fault tests
  return client.connect()
}

/**
 * A redlatch/wasm client over node-redis connections to `urls` (one = single node, more =
 * quorum), and a function that closes both.
 */
export async function wasmClient(urls = [REDIS_URL], options = {}, redisOptions = {}) {
  const conns = await Promise.all(urls.map((u) => redis(u, redisOptions)))
  const transports = conns.map((c) => wasm.fromNodeRedis(c))
  const client =
    urls.length === 1 ? wasm.createClient(transports[0], options) : wasm.createQuorumClient(transports, options)
  const close = async () => {
    await client.close()
    await Promise.all(conns.map((c) => c.quit().catch(() => {})))
  }
  return { client, conns, close }
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
 * loop alive meanwhile: a held lock alone never does (by design).
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
