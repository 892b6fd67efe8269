// The shipped transports over real clients: node-redis (`redis` v5) and ioredis, including
// the EVALSHA -> NOSCRIPT -> EVAL path after SCRIPT FLUSH, labels, and how each client's
// failures surface (error replies vs connection failures).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import Redis from 'ioredis'
import { REDIS_URL, wasm, redis, key } from './helpers.mjs'

const { createClient, fromNodeRedis, fromIoredis, KeyConflictError, NotAcquiredError, RedisConnectionError } = wasm

test('node-redis: locks work, survive SCRIPT FLUSH, and the label is host:port', async () => {
  const conn = await redis()
  try {
    const t = fromNodeRedis(conn)
    assert.equal(t.label, new URL(REDIS_URL).host)
    assert.equal(fromNodeRedis(conn, { label: 'primary' }).label, 'primary')
    const client = createClient(t)
    const name = key()
    const held = await client.lock(name, { leaseMs: 5000 }).acquire()
    await conn.sendCommand(['SCRIPT', 'FLUSH'])
    await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
    await held.release()
    assert.equal(await conn.exists(name), 0)
    // node-redis v5 rejects error replies with SimpleError (v4: ErrorReply): recognised as an
    // error reply and classified by its text (WRONGTYPE: a key conflict), not a connection error.
    const other = key()
    await conn.hSet(other, 'someone', '1')
    const err = await client.lock(other).acquire({ waitMs: 0 }).catch((e) => e)
    assert.ok(err instanceof KeyConflictError, `a hash under a lease lock's name is application data: ${err}`)
    const broken = createClient({ eval: (script, keys, args) => t.eval('syntax error (', keys, args) })
    const wrong = await broken.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
    assert.equal(wrong.code, 'ERR_REDIS', String(wrong))
    assert.match(wrong.message, /ERR/)
    await conn.del(other)
    await client.close()
  } finally {
    await conn.quit()
  }
})

test('ioredis: locks work, survive SCRIPT FLUSH, and the label is host:port', async () => {
  const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 })
  try {
    const t = fromIoredis(conn)
    assert.equal(t.label, new URL(REDIS_URL).host)
    const client = createClient(t)
    const name = key()
    const held = await client.lock(name, { leaseMs: 5000, fenced: true }).acquire()
    assert.equal(typeof held.fencingToken, 'number')
    await conn.script('FLUSH')
    await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
    const rl = client.rlock(key())
    await rl.using(async () => assert.equal(await rl.holdCount(), 1))
    await held.release()
    assert.equal(await conn.exists(name), 0)
    await client.close()
  } finally {
    conn.disconnect()
  }
})

test('a closed node-redis client is a RedisConnectionError, not a hang', async () => {
  const conn = await redis()
  await conn.quit()
  const client = createClient(fromNodeRedis(conn), { networkTimeoutMs: 300 })
  const t0 = performance.now()
  const err = await client.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(err instanceof RedisConnectionError, String(err))
  assert.ok(performance.now() - t0 < 2000)
})

test('a disconnected ioredis client is a RedisConnectionError, not a hang', async () => {
  const conn = new Redis(REDIS_URL, { maxRetriesPerRequest: 0, lazyConnect: true, enableOfflineQueue: false })
  const client = createClient(fromIoredis(conn), { networkTimeoutMs: 300 })
  const err = await client.lock(key()).acquire({ waitMs: 0 }).catch((e) => e)
  assert.ok(err instanceof RedisConnectionError, String(err))
  conn.disconnect()
})

test('a hand-written transport works (the interface is small enough to need no adapter)', async () => {
  const conn = await redis()
  try {
    const calls = []
    const transport = {
      eval(script, keys, args) {
        calls.push(keys[0])
        return conn.eval(script, { keys, arguments: args })
      },
    }
    const client = createClient(transport)
    const name = key()
    await client.withLock(name, async () => assert.equal(await conn.exists(name), 1), { leaseMs: 1000 })
    assert.ok(calls.includes(name))
    await client.close()
  } finally {
    await conn.quit()
  }
})
