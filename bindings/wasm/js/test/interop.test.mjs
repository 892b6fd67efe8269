// Lease locks from redlatch/wasm and redis-py `Lock` (the format node-redlock shares) exclude
// each other on the same key, and neither side's release or extend touches the other's hold.
// Also: wasm and native-addon clients exclude each other directly.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { REDIS_URL, wasm, wasmClient, redis, key, sleep } from './helpers.mjs'
import { redisPyHolder } from './fixtures/redis-py.mjs'

const { NotAcquiredError, NotOwnedError } = wasm
const { client, close } = await wasmClient()
const r = await redis()
const py = await redisPyHolder(REDIS_URL)
test.after(async () => {
  await close()
  await r.quit()
  await py.close()
})

test(`wasm holds: ${py.kind} cannot acquire, then can after the release`, async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  assert.equal(await py.acquire(name, 5000), 'busy')
  await held.release()
  assert.equal(await py.acquire(name, 5000), 'ok')
  assert.equal(await py.release(name), 'ok')
})

test(`${py.kind} holds: wasm waits and gets it soon after the release (which publishes nothing)`, async () => {
  const name = key()
  assert.equal(await py.acquire(name, 5000), 'ok')
  await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
  await assert.rejects(client.lock(name).acquire({ waitMs: 100 }), NotAcquiredError)
  const waiting = client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 5000 })
  await sleep(100)
  const t0 = performance.now()
  assert.equal(await py.release(name), 'ok')
  const held = await waiting
  const took = performance.now() - t0
  assert.ok(took < 300, `took ${took.toFixed(0)} ms`)
  await held.release()
})

test("wasm's release and extend refuse a redis-py hold", async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  await client.forceUnlock(name)
  assert.equal(await py.acquire(name, 5000), 'ok')
  const theirs = await r.get(name)
  await assert.rejects(held.extend(5000), NotOwnedError)
  await assert.rejects(held.release(), NotOwnedError)
  assert.equal(await r.get(name), theirs, 'their hold is untouched')
  assert.equal(await py.release(name), 'ok')
})

test("redis-py's release and extend refuse a wasm hold taken after its lease ran out", async () => {
  const name = key()
  assert.equal(await py.acquire(name, 100), 'ok')
  const held = await client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 2000 })
  assert.equal(await py.extend(name, 5000), 'notowned')
  assert.equal(await py.release(name), 'notowned')
  assert.equal(await held.owned(), true)
  await held.release()
})

const NATIVE = process.env.REDLATCH_NATIVE_ADDON || ''
test('wasm and native-addon clients exclude each other', { skip: existsSync(NATIVE) ? false : 'REDLATCH_NATIVE_ADDON not set' }, async () => {
  const { Client, NotAcquiredError: NativeNotAcquired } = createRequire(import.meta.url)(NATIVE)
  const native = await Client.connect(REDIS_URL)
  try {
    const name = key()
    const mine = await client.lock(name, { leaseMs: 5000 }).acquire()
    await assert.rejects(native.lock(name).acquire({ waitMs: 0 }), NativeNotAcquired)
    await mine.release()
    const theirs = await native.lock(name, { leaseMs: 5000 }).acquire()
    await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
    const waiting = client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 3000 })
    await sleep(50)
    await theirs.release()
    await (await waiting).release()
    const rname = key()
    const rl = await native.rlock(rname).acquire()
    await assert.rejects(client.rlock(rname).acquire({ waitMs: 0 }), NotAcquiredError)
    await rl.release()
  } finally {
    await native.close()
  }
})
