// What only redlatch/wasm does, against a real Redis through a node-redis transport: waiters
// poll (no pub/sub), transports and their failures, its factories' arguments, rlock owners
// following async chains under Node, and process lifetime with the module's own timers. The
// surface it shares with the native entry is tested for both entries by node/test/ (make
// node-test, on the packed package).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { PKG_DIR, wasm, wasmClient, redis, key, sleep } from './helpers.mjs'

const { NotAcquiredError, LockError, InvalidArgumentError, RedisConnectionError } = wasm

const { client, close } = await wasmClient()
const r = await redis()
test.after(async () => {
  await close()
  await r.quit()
})

test('a waiter gets the lock soon after the release (polling, no pub/sub)', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 10000 }).acquire()
  const waiting = client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 5000 })
  await sleep(100)
  const t0 = performance.now()
  await held.release()
  const next = await waiting
  const took = performance.now() - t0
  assert.ok(took < 300, `took ${took.toFixed(0)} ms`)
  await next.release()
})

test("a dead holder's lease bounds an unbounded wait", async () => {
  const name = key()
  await r.set(name, 'crashed-holder', { PX: 300 })
  const t0 = performance.now()
  const held = await client.lock(name, { leaseMs: 1000 }).acquire()
  const took = performance.now() - t0
  assert.ok(took >= 250 && took < 1500, `took ${took.toFixed(0)} ms`)
  await held.release()
})

test('rlock scopes are followed under Node', async () => {
  assert.equal(wasm.rlockFollowsAsyncChains(), true)
  const name = key()
  await client.rlock(name, { leaseMs: 5000 }).using(async () => {
    await client.rlock(name).using(async () => {
      assert.deepEqual(Object.values(await r.hGetAll(name)), ['2'])
    })
  })
  assert.equal(await r.exists(name), 0)
})

test("bad factory arguments are InvalidArgumentError; a quorum client's fenced lock is refused at lock()", () => {
  const bad = [
    () => wasm.createClient(null),
    () => wasm.createClient({}),
    () => wasm.createClient({ eval: 1 }),
    () => wasm.createClient({ eval() {}, evalsha: 2 }),
    () => wasm.createClient({ eval() {}, label: '' }),
    () => wasm.createQuorumClient([]),
    () => wasm.createQuorumClient({ eval() {} }),
    () => wasm.createClient({ eval() {} }, { watchdogTimeoutMs: 0 }),
    () => wasm.createClient({ eval() {} }, { watchdogTimeoutMs: 2 }), // renewed every third: >= 3 ms
    () => wasm.createClient({ eval() {} }, { watchdogTimeout: 100 }),
    () => wasm.fromNodeRedis({}),
    () => wasm.fromIoredis(null),
    () => new wasm.Client(),
  ]
  for (const f of bad) {
    assert.throws(f, (e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARGUMENT', String(f))
  }
  // One transport given twice would cast two votes for one server.
  const one = { eval() {} }
  assert.throws(() => wasm.createQuorumClient([one, one, { eval() {} }]), (e) => e instanceof InvalidArgumentError && /more than once/.test(e.message))
  // ...and so would two transports of one server under one label (a user trial: three
  // fromIoredis adapters over one ioredis client were accepted as three nodes).
  const twice = [{ eval() {}, label: '127.0.0.1:6390' }, { eval() {}, label: '127.0.0.1:6390' }, { eval() {} }]
  assert.throws(() => wasm.createQuorumClient(twice), (e) => e instanceof InvalidArgumentError && /127.0.0.1:6390 is given more than once/.test(e.message))
  const quorum = wasm.createQuorumClient([{ eval() {} }, { eval() {} }, { eval() {} }])
  assert.throws(() => quorum.lock('x', { fenced: true }), InvalidArgumentError)
})

test('transport failures are RedisConnectionError; error replies are classified by their code', async () => {
  const down = wasm.createClient(
    { eval: async () => Promise.reject(new Error('socket hang up')), label: 'down:1' },
    { networkTimeoutMs: 200 },
  )
  const err = await down.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(err instanceof RedisConnectionError, String(err))
  assert.equal(err.code, 'ERR_CONNECTION')
  assert.match(err.message, /down:1: socket hang up/)
  const denied = wasm.createClient({ eval: async () => Promise.reject(new Error('NOPERM no permissions')) })
  const e2 = await denied.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(e2 instanceof wasm.NoPermissionError, String(e2))
  assert.equal(e2.code, 'ERR_NO_PERMISSION')
  assert.equal(e2.name, 'NoPermissionError')
  const busy = wasm.createClient({ eval: async () => Promise.reject(new Error('BUSY Redis is busy running a script')) })
  const e3 = await busy.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(e3 instanceof LockError)
  assert.equal(e3.code, 'ERR_REDIS')
  assert.equal(e3.name, 'LockError')
})

test('a busy lock through a transport that never answers still ends with its wait', async () => {
  const silent = wasm.createClient({ eval: () => new Promise(() => {}) }, { networkTimeoutMs: 300 })
  const t0 = performance.now()
  const err = await silent.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  const took = performance.now() - t0
  assert.ok(err instanceof RedisConnectionError || err instanceof NotAcquiredError, String(err))
  assert.ok(took < 2000, `took ${took.toFixed(0)} ms`)
})

test('neither the watchdog nor a held lock keeps a process alive', async () => {
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
