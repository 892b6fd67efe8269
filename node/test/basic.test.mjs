// The everyday API: connect, acquire/release, extend, fencing, inspection, force unlock,
// errors, close, and loading through both `import` and `require`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import {
  Client,
  Held,
  LockError,
  NotAcquiredError,
  NotOwnedError,
  LockLostError,
  QuorumError,
  RedisConnectionError,
  InvalidArgumentError,
  STATUS,
} from 'redlatch'
import { REDIS_URL, QUORUM_URLS, key, redis, sleep } from './helpers.mjs'

const client = await Client.connect(REDIS_URL)
test.after(() => client.close())

test('import and require give the same objects', () => {
  const require = createRequire(import.meta.url)
  const cjs = require('redlatch')
  assert.equal(cjs.Client, Client)
  assert.equal(cjs.NotAcquiredError, NotAcquiredError)
  assert.equal(typeof cjs.Client.connect, 'function')
})

test('error classes have stable names, codes and statuses', () => {
  const cases = [
    [LockError, 'LockError', 'ERR_PANIC', 8],
    [NotAcquiredError, 'NotAcquiredError', 'ERR_NOT_ACQUIRED', 1],
    [NotOwnedError, 'NotOwnedError', 'ERR_NOT_OWNED', 2],
    [LockLostError, 'LockLostError', 'ERR_LOCK_LOST', 3],
    [QuorumError, 'QuorumError', 'ERR_QUORUM', 4],
    [RedisConnectionError, 'RedisConnectionError', 'ERR_CONNECTION', 5],
    [InvalidArgumentError, 'InvalidArgumentError', 'ERR_INVALID_ARGUMENT', 6],
  ]
  for (const [cls, name, code, status] of cases) {
    const e = new cls('x')
    assert.ok(e instanceof Error && e instanceof LockError)
    assert.equal(e.name, name)
    assert.equal(e.code, code)
    assert.equal(e.status, status)
    assert.equal(STATUS[code], status)
  }
  assert.ok(new LockLostError('x') instanceof NotOwnedError)
})

test('acquire, contend, release', async () => {
  const name = key()
  const r = redis()
  try {
    const held = await client.lock(name, { leaseMs: 10_000 }).acquire()
    assert.ok(held instanceof Held)
    assert.equal(held.name, name)
    assert.equal(held.fencingToken, null)
    assert.equal(held.leaseMs, 10_000)
    assert.equal(held.signal.aborted, false)
    assert.equal(held.lost, false)
    assert.equal(await held.owned(), true)
    const pttl = await r.pttl(name)
    assert.ok(pttl > 9000 && pttl <= 10_000, `pttl ${pttl}`)
    await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), (e) => {
      assert.ok(e instanceof NotAcquiredError)
      assert.equal(e.code, 'ERR_NOT_ACQUIRED')
      return true
    })
    assert.equal(await client.lock(name).locked(), true)
    const ttl = await client.lock(name).ttl()
    assert.ok(ttl > 9000 && ttl <= 10_000)
    await held.release()
    assert.equal(await r.exists(name), 0)
    assert.equal(await client.lock(name).locked(), false)
    assert.equal(await client.lock(name).ttl(), null)
    assert.equal(held.signal.aborted, false, 'a release never aborts the signal')
    await assert.rejects(held.release(), NotOwnedError)
  } finally {
    r.quit()
  }
})

test('each acquire through one lock object is its own hold', async () => {
  const lock = client.lock(key(), { leaseMs: 5000 })
  const a = await lock.acquire()
  await assert.rejects(lock.acquire({ waitMs: 50 }), NotAcquiredError)
  const b = lock.acquire({ waitMs: 2000 })
  await sleep(30)
  await a.release()
  const held = await b
  await held.release()
})

test('watchdog mode renews past the watchdog timeout', async () => {
  const c = await Client.connect(REDIS_URL, { watchdogTimeoutMs: 300 })
  try {
    const held = await c.lock(key()).acquire()
    assert.equal(held.leaseMs, 300)
    await sleep(800)
    assert.equal(held.lost, false)
    assert.equal(await held.owned(), true)
    await held.release()
  } finally {
    await c.close()
  }
})

test('extend replaces the TTL; extending a lost lock fails', async () => {
  const name = key()
  const r = redis()
  try {
    const held = await client.lock(name, { leaseMs: 1000 }).acquire()
    await held.extend(60_000)
    const pttl = await r.pttl(name)
    assert.ok(pttl > 59_000, `pttl ${pttl}`)
    await held.extend(2000)
    assert.ok((await r.pttl(name)) <= 2000, 'replace, never add')
    await client.forceUnlock(name)
    await assert.rejects(held.extend(1000), NotOwnedError)
    assert.equal(await r.exists(name), 0, 'extend never re-creates a lock')
    assert.equal(held.lost, true)
    await assert.rejects(held.release(), LockLostError)
  } finally {
    r.quit()
  }
})

test('fenced locks return increasing tokens', async () => {
  const lock = client.lock(key(), { fenced: true, leaseMs: 5000 })
  const a = await lock.acquire()
  await a.release()
  const b = await lock.acquire()
  await b.release()
  assert.equal(typeof a.fencingToken, 'number')
  assert.ok(b.fencingToken > a.fencingToken)
})

test('forceUnlock deletes whatever the owner', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 5000 }).acquire()
  assert.equal(await client.forceUnlock(name), true)
  assert.equal(await client.forceUnlock(name), false)
  await assert.rejects(held.release(), NotOwnedError)
})

test('quorum client acquires on a majority', { skip: QUORUM_URLS.length < 3 }, async () => {
  const q = await Client.quorum(QUORUM_URLS)
  try {
    assert.equal(q.nodeCount, QUORUM_URLS.length)
    const name = key()
    const held = await q.lock(name, { leaseMs: 5000 }).acquire()
    let count = 0
    for (const url of QUORUM_URLS) {
      const r = redis(url)
      count += await r.exists(name)
      r.quit()
    }
    assert.ok(count >= 2)
    await assert.rejects(q.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
    await held.release()
    assert.throws(() => q.lock(key(), { fenced: true }), InvalidArgumentError)
  } finally {
    await q.close()
  }
})

test('connection errors are RedisConnectionError / QuorumError', async () => {
  // Port 1 on loopback: nothing listens there.
  await assert.rejects(Client.connect('redis://127.0.0.1:1', { networkTimeoutMs: 500 }), RedisConnectionError)
  await assert.rejects(
    Client.quorum(['redis://127.0.0.1:1', 'redis://127.0.0.1:1', REDIS_URL], { networkTimeoutMs: 500 }),
    QuorumError,
  )
})

test('a using() whose lock close() released rejects with LockLostError', async () => {
  const c = await Client.connect(REDIS_URL)
  const during = c.withLock(key(), async (signal) => {
    await sleep(150)
    return signal.aborted
  })
  await sleep(50)
  await c.close()
  await assert.rejects(during, (e) => e instanceof LockLostError && /client\.close\(\)/.test(e.message))
})

test('close releases holds, rejects pending acquires and later calls', async () => {
  const c = await Client.connect(REDIS_URL)
  const name = key()
  const other = key()
  const r = redis()
  try {
    const held = await c.lock(name).acquire()
    const blocker = await client.lock(other, { leaseMs: 10_000 }).acquire()
    const pending = assert.rejects(c.lock(other).acquire(), RedisConnectionError)
    await sleep(50)
    await c.close()
    await pending
    assert.equal(await r.exists(name), 0, 'close released the hold')
    assert.equal(c.closed, true)
    // The holder's lock is gone: its signal says so, and its calls say why.
    assert.equal(held.signal.aborted, true)
    assert.ok(held.signal.reason instanceof LockLostError)
    assert.match(held.signal.reason.message, /client\.close\(\)/)
    assert.equal(held.lost, true)
    await assert.rejects(held.release(), RedisConnectionError)
    await assert.rejects(held.extend(1000), RedisConnectionError)
    assert.throws(() => c.lock(key()), RedisConnectionError)
    await assert.rejects(c.forceUnlock(name), RedisConnectionError)
    await assert.rejects(c.withLock(key(), async () => {}), RedisConnectionError)
    await c.close() // idempotent
    await blocker.release()
    assert.equal(await r.get(other), null, 'the cancelled waiter left nothing behind')
  } finally {
    r.quit()
  }
})
