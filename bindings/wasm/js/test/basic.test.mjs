// The API of redlatch/wasm against a real Redis through a node-redis transport: acquire,
// release, waiting, options, fencing, extend, inspection, errors, cancellation and close.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { wasm, wasmClient, redis, key, sleep } from './helpers.mjs'

const {
  NotAcquiredError,
  NotOwnedError,
  LockLostError,
  LockError,
  InvalidArgumentError,
  RedisConnectionError,
  STATUS,
} = wasm

const { client, close } = await wasmClient()
const r = await redis()
test.after(async () => {
  await close()
  await r.quit()
})

test('acquire writes a redis-py format token with the lease; release deletes it', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  assert.match(await r.get(name), /^[0-9a-f]{32}$/)
  const pttl = await r.pTTL(name)
  assert.ok(pttl > 4000 && pttl <= 5000, `pttl ${pttl}`)
  assert.equal(held.name, name)
  assert.equal(held.leaseMs, 5000)
  assert.equal(held.fencingToken, null)
  assert.equal(held.lost, false)
  assert.equal(await held.owned(), true)
  await held.release()
  assert.equal(await r.exists(name), 0)
  await assert.rejects(held.release(), NotOwnedError)
})

test('a busy lock: one try and a timed wait reject with NotAcquiredError', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  const err = await client.lock(name).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(err instanceof NotAcquiredError)
  assert.ok(err instanceof LockError)
  assert.ok(err instanceof Error)
  assert.equal(err.name, 'NotAcquiredError')
  assert.equal(err.code, 'ERR_NOT_ACQUIRED')
  assert.equal(err.status, STATUS.ERR_NOT_ACQUIRED)
  assert.match(err.stack, /NotAcquiredError/)
  const t0 = performance.now()
  await assert.rejects(client.lock(name, { waitMs: 150 }).acquire(), NotAcquiredError)
  const took = performance.now() - t0
  assert.ok(took >= 140 && took < 1500, `took ${took.toFixed(0)} ms`)
  await held.release()
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

test('fenced locks return increasing tokens', async () => {
  const lock = client.lock(key(), { leaseMs: 2000, fenced: true })
  const a = await lock.acquire()
  await a.release()
  const b = await lock.acquire()
  await b.release()
  assert.equal(typeof a.fencingToken, 'number')
  assert.ok(b.fencingToken > a.fencingToken)
})

test('extend replaces the TTL; locked, ttl and forceUnlock ask Redis', async () => {
  const name = key()
  const lock = client.lock(name, { leaseMs: 1000 })
  assert.equal(await lock.locked(), false)
  assert.equal(await lock.ttl(), null)
  const held = await lock.acquire()
  await held.extend(8000)
  const ttl = await lock.ttl()
  assert.ok(ttl > 7000 && ttl <= 8000, `ttl ${ttl}`)
  assert.equal(await lock.locked(), true)
  assert.equal(await client.forceUnlock(name), true)
  assert.equal(await client.forceUnlock(name), false)
  await assert.rejects(held.extend(1000), NotOwnedError)
  assert.equal(await r.exists(name), 0, 'extend never re-creates a lost lock')
  await assert.rejects(held.release(), LockLostError)
})

test('rlock re-enters along one async chain and counts holds', async () => {
  const name = key()
  const outer = client.rlock(name, { leaseMs: 5000 })
  assert.equal(wasm.rlockFollowsAsyncChains(), true)
  await outer.using(async () => {
    await client.rlock(name).using(async () => {
      assert.equal(await outer.holdCount(), 2)
      const owners = Object.entries(await r.hGetAll(name))
      assert.deepEqual(owners.map(([, n]) => n), ['2'])
      assert.ok(owners[0][0].startsWith(`${client.id}:`))
    })
    assert.equal(await outer.holdCount(), 1)
  })
  assert.equal(await r.exists(name), 0)
})

test('rlock: separate async chains contend', async () => {
  const name = key()
  const order = []
  const a = client.rlock(name).using(async () => {
    order.push('a-in')
    await sleep(150)
    order.push('a-out')
  })
  await sleep(20)
  const b = client.rlock(name).using(async () => order.push('b-in'))
  await assert.rejects(client.rlock(name).using(async () => {}, { waitMs: 50 }), NotAcquiredError)
  await Promise.all([a, b])
  assert.deepEqual(order, ['a-in', 'a-out', 'b-in'])
})

test('using and withLock release after the function, and pass its result and errors', async () => {
  const name = key()
  assert.equal(await client.withLock(name, async () => (await r.exists(name)) + 41, { leaseMs: 2000 }), 42)
  assert.equal(await r.exists(name), 0)
  const mine = new Error('mine')
  await assert.rejects(
    client.lock(name).using(() => {
      throw mine
    }),
    (e) => e === mine,
  )
  assert.equal(await r.exists(name), 0)
})

test('await using releases at the end of the block', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 2000 }).acquire()
  await held[Symbol.asyncDispose]()
  assert.equal(await r.exists(name), 0)
  await held[Symbol.asyncDispose]() // a second dispose is a no-op
})

test('rlock: branches started together, each with acquire(), contend', async () => {
  const name = key()
  let inside = 0
  let most = 0
  await Promise.all(
    [1, 2, 3, 4].map(async () => {
      const held = await client.rlock(name).acquire({ waitMs: 5000 })
      inside++
      most = Math.max(most, inside)
      await sleep(30)
      inside--
      await held.release()
    }),
  )
  assert.equal(most, 1)
  assert.equal(await r.exists(name), 0)
})

test('an AbortSignal cancels a pending acquire with its reason and leaves nothing behind', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  const controller = new AbortController()
  const pending = client.lock(name).acquire({ signal: controller.signal })
  setTimeout(() => controller.abort(new Error('stop')), 100)
  await assert.rejects(pending, /stop/)
  const already = AbortSignal.abort(new Error('early'))
  await assert.rejects(client.lock(name).acquire({ signal: already }), /early/)
  const value = await r.get(name)
  await held.release()
  assert.notEqual(value, null)
  assert.equal(await r.exists(name), 0)
})

test('bad arguments are InvalidArgumentError and touch nothing', async () => {
  const bad = [
    () => client.lock(''),
    () => client.lock(42),
    () => client.lock('\ud800'), // a lone surrogate has no UTF-8 form
    () => client.lock('a\udfffb'),
    () => client.lock('x', { leaseMs: 0 }),
    () => client.lock('x', { leaseMs: -1 }),
    () => client.lock('x', { leaseMs: 1.5 }),
    () => client.lock('x', { leaseMs: NaN }),
    () => client.lock('x', { leaseMs: 2 ** 53 }),
    () => client.lock('x', { leaseMS: 10 }),
    () => client.lock('x', { fenced: 'yes' }),
    () => wasm.createClient(null),
    () => wasm.createClient({}),
    () => wasm.createClient({ eval: 1 }),
    () => wasm.createQuorumClient([]),
    () => wasm.createClient({ eval() {} }, { watchdogTimeoutMs: 0 }),
    () => wasm.createClient({ eval() {} }, { watchdogTimeoutMs: 2 }), // renewed every third: >= 3 ms
    () => client.lock('x'.repeat(4097)), // over 4096 bytes, refused at lock() as natively
    () => wasm.fromNodeRedis({}),
    () => wasm.fromIoredis(null),
  ]
  for (const f of bad) {
    assert.throws(f, (e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARGUMENT', String(f))
  }
  const lock = client.lock(key())
  await assert.rejects(lock.acquire({ waitMs: -5 }), InvalidArgumentError)
  await assert.rejects(lock.acquire({ signal: 'no' }), InvalidArgumentError)
  const held = await client.lock(key(), { leaseMs: 1000 }).acquire()
  await assert.rejects(held.extend(0), InvalidArgumentError)
  await assert.rejects(held.extend(), InvalidArgumentError)
  await held.release()
  const quorum = wasm.createQuorumClient([{ eval() {} }, { eval() {} }, { eval() {} }])
  // Checked when the lock is made, as in the native entry.
  assert.throws(() => quorum.lock('x', { fenced: true }), InvalidArgumentError)
})

test('a using() whose lock close() released rejects with LockLostError', async () => {
  const other = await wasmClient()
  const during = other.client.withLock(key(), async (signal) => {
    await sleep(150)
    return signal.aborted
  })
  await sleep(50)
  await other.client.close()
  await assert.rejects(during, (e) => e instanceof LockLostError && /client\.close\(\)/.test(e.message))
  await other.close()
})

test('close rejects pending acquires, releases live holds and refuses later calls', async () => {
  const other = await wasmClient()
  const name = key()
  const held = await other.client.lock(name, { leaseMs: 5000 }).acquire()
  const blocker = await client.lock(key('blocker'), { leaseMs: 5000 }).acquire()
  const pending = other.client.lock(blocker.name).acquire().catch((e) => e)
  await sleep(50)
  await other.client.close()
  assert.ok((await pending) instanceof RedisConnectionError)
  assert.equal(await r.exists(name), 0, 'the live hold was released')
  // The holder's lock is gone: its signal says so, and its calls say why.
  assert.equal(held.lost, true)
  assert.ok(held.signal.reason instanceof LockLostError)
  assert.match(held.signal.reason.message, /client\.close\(\)/)
  await assert.rejects(held.release(), RedisConnectionError)
  await assert.rejects(held.extend(1000), RedisConnectionError)
  assert.throws(() => other.client.lock('x'), RedisConnectionError)
  await assert.rejects(other.client.forceUnlock('x'), RedisConnectionError)
  assert.equal(other.client.closed, true)
  await other.close()
  await blocker.release()
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
