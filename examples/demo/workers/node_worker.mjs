#!/usr/bin/env node
// The Node worker of the stock-oversell demo (examples/demo/README.md, "Worker protocol").
//
//   node examples/demo/workers/node_worker.mjs <url> <unlocked|locked> <worker-id>
//
// Sells items one at a time with a deliberately non-atomic read-modify-write of demo:stock
// (GET, sleep 1 ms, SET), under the redlatch lock demo:stock-lock (lease 5 s, waiting as long
// as it takes) in `locked` mode. Loads redlatch from node/ (build it with `make node-build`)
// and ioredis from node/node_modules (`make node-setup`). Times are CLOCK_MONOTONIC ns
// (`process.hrtime.bigint()`).
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'

const require = createRequire(new URL('../../../node/package.json', import.meta.url))
const Redis = require('ioredis')
const { Client } = require('./lib/index.cjs')

const STOCK_KEY = 'demo:stock'
const SOLD_KEY = 'demo:sold'
const READY_KEY = 'demo:ready'
const GO_KEY = 'demo:go'
const LOCK_NAME = 'demo:stock-lock'
const LEASE_MS = 5000 // far longer than a critical section (about 1 ms)
const RACE_WINDOW_MS = 1

const [url, mode, id] = process.argv.slice(2)
if (!url || !['locked', 'unlocked'].includes(mode) || !id) {
  console.error('usage: node_worker.mjs <url> <unlocked|locked> <worker-id>')
  process.exit(2)
}

/** One critical section: [sold?, t0, t1]. */
async function sellOne(redis) {
  const t0 = process.hrtime.bigint()
  const stock = Number((await redis.get(STOCK_KEY)) ?? 0)
  if (stock <= 0) return [false, t0, process.hrtime.bigint()]
  await sleep(RACE_WINDOW_MS)
  await redis.set(STOCK_KEY, String(stock - 1))
  await redis.incr(SOLD_KEY)
  return [true, t0, process.hrtime.bigint()]
}

const redis = new Redis(url)
const client = mode === 'locked' ? await Client.connect(url) : null
const lock = client?.lock(LOCK_NAME, { leaseMs: LEASE_MS })

await redis.incr(READY_KEY)
await redis.blpop(GO_KEY, 0)

const out = []
let sold = 0
for (let n = 1; ; n++) {
  // `using` releases when the section ends, and a failed section's own error wins.
  const [didSell, t0, t1] = lock ? await lock.using(() => sellOne(redis)) : await sellOne(redis)
  out.push(`interval ${t0} ${t1} w${id}#${n}`)
  if (!didSell) break
  sold++
}
out.push(`done ${id} ${sold}`)
process.stdout.write(out.join('\n') + '\n')
await client?.close()
redis.quit()
