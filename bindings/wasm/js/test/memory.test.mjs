// Memory: many acquires and releases leave the JavaScript heap where it was. Each wait races
// a cancel promise on the wasm side (a js-sys `JsFuture`), whose two callbacks and state live
// until that promise settles; the adapter left it pending once the call was over, which kept
// about 0.8 KB per acquire for the client's lifetime (src/engine.mjs `WasmEngine.wait`).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { key, wasmClient } from './helpers.mjs'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc')

/** Heap in use after full collections, and after the finalizers they queue have run. */
async function heapUsed() {
  for (let i = 0; i < 3; i++) {
    gc()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return process.memoryUsage().heapUsed
}

/** Heap growth over `n` rounds of `body` (after a warm-up of the same). */
async function growth(n, body) {
  for (let i = 0; i < 300; i++) await body(i)
  const before = await heapUsed()
  // 8 loops at a time, as a service's handlers would run.
  let next = 0
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < n) await body(next++)
  }))
  return (await heapUsed()) - before
}

const ROUNDS = 6000
// A leak of 0.8 KB per round is ~4.8 MB here; collections leave a few hundred KB of noise.
const BOUND = 1.5e6

test('lock acquire + release: the heap does not grow with the number of calls', async (t) => {
  const { client, close } = await wasmClient()
  try {
    const names = Array.from({ length: 8 }, () => key('mem'))
    const grew = await growth(ROUNDS, async (i) => (await client.lock(names[i % 8], { leaseMs: 5000 }).acquire()).release())
    t.diagnostic(`heap growth ${(grew / 1e6).toFixed(2)} MB`)
    assert.ok(grew < BOUND, `heap grew ${(grew / 1e6).toFixed(2)} MB over ${ROUNDS} acquires`)
  } finally {
    await close()
  }
})

test('semaphore acquire + release (the family\'s waits): the heap does not grow', async (t) => {
  const { client, close } = await wasmClient()
  try {
    const semaphore = client.semaphore(key('mem-sem'), { permits: 8 })
    const grew = await growth(ROUNDS, async () => {
      await semaphore.acquire()
      await semaphore.release()
    })
    t.diagnostic(`heap growth ${(grew / 1e6).toFixed(2)} MB`)
    assert.ok(grew < BOUND, `heap grew ${(grew / 1e6).toFixed(2)} MB over ${ROUNDS} acquires`)
  } finally {
    await close()
  }
})
