// The watchdog runs on the host's timers: it keeps a lock alive past its lease while held, and
// reports a loss at once through `held.signal` (an AbortSignal aborted with LockLostError).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { wasm, wasmClient, redis, key, sleep, aborted } from './helpers.mjs'

const { LockLostError, NotOwnedError } = wasm

// Short watchdog: lease 300 ms, renewed every 100 ms.
const { client, close } = await wasmClient(undefined, { watchdogTimeoutMs: 300 })
const r = await redis()
test.after(async () => {
  await close()
  await r.quit()
})

test('the watchdog keeps a held lock alive well past its lease', async () => {
  const name = key()
  const held = await client.lock(name).acquire()
  assert.equal(held.leaseMs, 300)
  for (let i = 0; i < 8; i++) {
    await sleep(150)
    const pttl = await r.pTTL(name)
    assert.ok(pttl > 0 && pttl <= 300, `pttl ${pttl} after ${(i + 1) * 150} ms`)
  }
  assert.equal(await held.owned(), true)
  assert.equal(held.lost, false)
  assert.equal(held.signal.aborted, false)
  await held.release()
  assert.equal(await r.exists(name), 0)
  await sleep(400)
  assert.equal(await r.exists(name), 0, 'no renewal after the release')
  assert.equal(held.signal.aborted, false, 'a released hold is never reported lost')
})

test('a watchdog hold taken away aborts its signal with a LockLostError', async () => {
  const name = key()
  const held = await client.lock(name).acquire()
  const lost = aborted(held.signal)
  const t0 = performance.now()
  await client.forceUnlock(name)
  await lost
  const took = performance.now() - t0
  assert.ok(took < 1000, `noticed after ${took.toFixed(0)} ms`)
  assert.ok(held.signal.reason instanceof LockLostError)
  assert.ok(held.signal.reason instanceof NotOwnedError)
  assert.equal(held.signal.reason.code, 'ERR_LOCK_LOST')
  assert.equal(held.lost, true)
  await assert.rejects(held.release(), LockLostError)
})

test('a hold overwritten by someone else is lost, and theirs is left alone', async () => {
  const name = key()
  const held = await client.lock(name).acquire()
  await r.set(name, 'someone-else', { PX: 10_000 })
  await aborted(held.signal)
  assert.ok(held.signal.reason instanceof LockLostError)
  await assert.rejects(held.release(), LockLostError)
  assert.equal(await r.get(name), 'someone-else')
  await r.del(name)
})

test('a fixed lease running out aborts the signal', async () => {
  const held = await client.lock(key(), { leaseMs: 200 }).acquire()
  const t0 = performance.now()
  await aborted(held.signal)
  const took = performance.now() - t0
  assert.ok(took < 600, `after ${took.toFixed(0)} ms`)
  assert.ok(held.signal.reason instanceof LockLostError)
})

test('using rejects with LockLostError when the function returned after a loss', async () => {
  const name = key()
  let sawAbort = false
  await assert.rejects(
    client.lock(name).using(async (signal) => {
      await client.forceUnlock(name)
      await aborted(signal)
      sawAbort = signal.reason instanceof LockLostError
      return 'done'
    }),
    LockLostError,
  )
  assert.ok(sawAbort)
})

test('a hold found gone only by the release at the end of a scope is a LockLostError', async () => {
  // Deleted under a fixed lease: nothing notices before the release, which finds the key gone.
  const name = key()
  const err = await client
    .withLock(name, async () => {
      await r.del(name)
      return 'done'
    }, { leaseMs: 5000 })
    .then(() => null, (e) => e)
  assert.ok(err instanceof LockLostError, `got ${err && err.name}: ${err && err.message}`)
  assert.ok(err.cause instanceof NotOwnedError)
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  await r.del(name)
  await assert.rejects(held[Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')](), LockLostError)
})

test('neither the watchdog nor a held lock keeps a process alive', async () => {
  const { spawn } = await import('node:child_process')
  const { PKG_DIR } = await import('./helpers.mjs')
  // A child that takes a watchdog lock through a fake transport and then has nothing to do.
  const code = `
    const w = await import(${JSON.stringify(`${PKG_DIR}index.mjs`)})
    const store = new Map()
    const c = w.createClient({ eval: async (s, k, a) => s.includes('SET') && !store.has(k[0]) ? (store.set(k[0], a[0]), [1, 0]) : 1 })
    await c.lock('x').acquire()
    console.log('held')
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.on('data', (d) => (out += d))
  const exited = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve(false)
    }, 5000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
  assert.equal(out.trim(), 'held')
  assert.ok(exited, 'the child exited on its own')
})
