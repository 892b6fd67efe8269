// What only the native entry (`redlatch`) has: `Client.connect(url)` / `Client.quorum(urls)`,
// connection errors, and loading through both `import` and `require`.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import * as redlatch from 'redlatch'
import { REDIS_URL, QUORUM_URLS, key, redis } from './helpers.mjs'

const { Client, NotAcquiredError, QuorumError, RedisConnectionError, InvalidArgumentError, LockError } = redlatch

test('import and require give the same module', () => {
  const require = createRequire(import.meta.url)
  const cjs = require('redlatch')
  assert.equal(cjs, redlatch)
  assert.equal(cjs.Client, Client)
  assert.equal(typeof cjs.Client.connect, 'function')
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
    Client.quorum(['redis://127.0.0.1:1', 'redis://127.0.0.1:2', REDIS_URL], { networkTimeoutMs: 500 }),
    (e) => e instanceof QuorumError && e.nodes.length === 3 && e.nodes.filter((n) => n.error === null).length === 1,
  )
})

function isInvalid(e) {
  assert.ok(e instanceof InvalidArgumentError, `expected InvalidArgumentError, got ${e && e.name}: ${e && e.message}`)
  assert.ok(e instanceof LockError)
  assert.equal(e.code, 'ERR_INVALID_ARGUMENT')
  return true
}

test('bad client arguments', async () => {
  await assert.rejects(Client.connect(), isInvalid)
  await assert.rejects(Client.connect(''), isInvalid)
  await assert.rejects(Client.connect(42), isInvalid)
  await assert.rejects(Client.connect('http://example.invalid'), isInvalid)
  await assert.rejects(Client.quorum([]), isInvalid)
  await assert.rejects(Client.quorum(REDIS_URL), isInvalid)
  await assert.rejects(Client.quorum([REDIS_URL, 5]), isInvalid)
  // One server given twice would cast two votes: one live node would decide every lock.
  await assert.rejects(Client.quorum([REDIS_URL, REDIS_URL, 'redis://127.0.0.1:1']), isInvalid)
  await assert.rejects(Client.connect(REDIS_URL, { watchdogTimeoutMs: 2 }), isInvalid)
  await assert.rejects(Client.connect(REDIS_URL, { watchdogTimeoutMs: -5 }), isInvalid)
  await assert.rejects(Client.connect(REDIS_URL, { networkTimeoutMs: 1.5 }), isInvalid)
  await assert.rejects(Client.connect(REDIS_URL, { pollIntervalMs: NaN }), isInvalid)
  await assert.rejects(Client.connect(REDIS_URL, { nope: 1 }), isInvalid)
  assert.throws(() => new Client({}), isInvalid)
  assert.throws(() => new redlatch.Lock(), isInvalid)
  assert.throws(() => new redlatch.Held(), isInvalid)
})
