// Mutual exclusion, checked: contenders in separate processes increment one counter with a
// non-atomic read-modify-write under one lock; any overlap loses an update, so the final
// value must be exact. redlatch/wasm and the native addon run the same core and scripts, so
// they contend on the same keys. The native addon is used when REDLATCH_NATIVE_ADDON points
// at node/lib/index.cjs (make wasm-test sets it once node/ is built); without it every
// contender is a wasm client.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { REDIS_URL, redis, key, wasmClient } from './helpers.mjs'
import { race } from './fixtures/race.mjs'

const NATIVE = process.env.REDLATCH_NATIVE_ADDON || ''
const haveNative = NATIVE !== '' && existsSync(NATIVE)
const mixed = (n) => (haveNative ? ['wasm', 'native'] : ['wasm', 'wasm']).flatMap((x) => Array(n).fill(x))

const r = await redis()
test.after(() => r.quit())

function base(kind, iterations) {
  return {
    kind,
    lockUrls: [REDIS_URL],
    counterUrl: REDIS_URL,
    counter: key('counter'),
    lockName: key('lock'),
    iterations,
    nativeAddon: NATIVE,
  }
}

test(`lease lock: 3 wasm + 3 ${haveNative ? 'native' : 'more wasm'} processes, exact count`, async () => {
  const { value, expected } = await race(r, { impls: mixed(3), base: base('lock', 25) })
  assert.equal(value, expected)
})

test(`rlock: 2 wasm + 2 ${haveNative ? 'native' : 'more wasm'} processes, exact count`, async () => {
  const { value, expected } = await race(r, { impls: mixed(2), base: base('rlock', 20) })
  assert.equal(value, expected)
})

test('several wasm clients in one process, exact count', async () => {
  const counter = key('counter')
  const name = key('lock')
  const clients = await Promise.all([wasmClient(), wasmClient(), wasmClient()])
  const step = async () => {
    const v = Number((await r.get(counter)) ?? 0)
    await new Promise((res) => setTimeout(res, 1))
    await r.set(counter, String(v + 1))
  }
  await Promise.all(
    clients.flatMap(({ client }) =>
      [0, 1].map(async () => {
        for (let i = 0; i < 15; i++) await client.withLock(name, step, { leaseMs: 5000 })
      }),
    ),
  )
  assert.equal(Number(await r.get(counter)), 90)
  await r.del(counter)
  await Promise.all(clients.map((c) => c.close()))
})

test('the native addon is exercised when it is built', { skip: haveNative ? false : 'REDLATCH_NATIVE_ADDON not set' }, () => {
  assert.ok(haveNative)
})
