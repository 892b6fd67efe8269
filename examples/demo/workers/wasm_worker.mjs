#!/usr/bin/env node
// The redlatch/wasm worker of the stock-oversell demo (examples/demo/README.md, "Worker
// protocol"): the lock logic runs as WebAssembly over an ioredis transport, as it would over
// the host's Redis client in an edge worker, against the same keys as the other workers.
//
//     node examples/demo/workers/wasm_worker.mjs <url> <unlocked|locked> <worker-id>
//
// Needs `make wasm-build` (bindings/wasm/pkg/wasm) and ioredis from node/node_modules (`make
// node-setup`, which the Node worker needs too); REDLATCH_WASM_ENTRY may point at another
// build of the entry point (e.g. node/wasm/index.mjs).
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'

const STOCK_KEY = 'demo:stock'
const SOLD_KEY = 'demo:sold'
const READY_KEY = 'demo:ready'
const GO_KEY = 'demo:go'
const LOCK_NAME = 'demo:stock-lock'
const LEASE_MS = 5000 // far longer than a critical section (about 1 ms)
const RACE_WINDOW_MS = 1 // between reading and writing the stock

const entry = process.env.REDLATCH_WASM_ENTRY
  ? pathToFileURL(process.env.REDLATCH_WASM_ENTRY)
  : new URL('../../../bindings/wasm/pkg/wasm/index.mjs', import.meta.url)
const Redis = createRequire(new URL('../../../node/package.json', import.meta.url))('ioredis')

async function connect(url) {
  const c = new Redis(url, { lazyConnect: true })
  c.on('error', (e) => process.stderr.write(`wasm_worker: redis: ${e.message}\n`))
  await c.connect()
  return c
}

/** One critical section: { sold, t0, t1 }, times in CLOCK_MONOTONIC nanoseconds. */
async function sellOne(r) {
  const t0 = process.hrtime.bigint()
  const stock = Number((await r.get(STOCK_KEY)) ?? 0)
  if (stock <= 0) return { sold: false, t0, t1: process.hrtime.bigint() }
  await sleep(RACE_WINDOW_MS)
  await r.set(STOCK_KEY, String(stock - 1))
  await r.incr(SOLD_KEY)
  return { sold: true, t0, t1: process.hrtime.bigint() }
}

async function main(argv) {
  if (argv.length !== 3 || !['unlocked', 'locked'].includes(argv[1])) {
    process.stderr.write('usage: wasm_worker.mjs <url> <unlocked|locked> <worker-id>\n')
    return 2
  }
  const [url, mode, worker] = argv
  const r = await connect(url)
  let section = (fn) => fn()
  let close = async () => {}
  if (mode === 'locked') {
    const wasm = await import(entry)
    const lockConn = await connect(url)
    const client = wasm.createClient(wasm.fromIoredis(lockConn))
    const lock = client.lock(LOCK_NAME, { leaseMs: LEASE_MS })
    section = (fn) => lock.using(fn)
    close = async () => {
      await client.close()
      await lockConn.quit()
    }
  }

  await r.incr(READY_KEY)
  await r.blpop(GO_KEY, 0)

  const lines = []
  let sold = 0
  for (let n = 1; ; n++) {
    const s = await section(() => sellOne(r))
    lines.push(`interval ${s.t0} ${s.t1} w${worker}#${n}\n`)
    if (!s.sold) break
    sold++
  }
  lines.push(`done ${worker} ${sold}\n`)
  process.stdout.write(lines.join(''))
  await close()
  await r.quit()
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (e) => {
    process.stderr.write(`wasm_worker ${process.argv[4] ?? '?'}: ${e?.stack ?? e}\n`)
    process.exitCode = 1
  },
)
