// Faults and edge cases (issue #10 items 2, 3, 6, 7, 8; #14 item 4) through host transports:
// a release whose outcome is unknown stays retryable (and a scope's is finished in the
// background), lost holds never block, every NotOwnedError says why, application data under
// a lock name, ACL refusals and the new error classes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { wasm, wasmClient, redis, key, sleep, aborted, eventually, REDIS_URL } from './helpers.mjs'

const {
  KeyConflictError,
  LockLostError,
  NoPermissionError,
  NotOwnedError,
  OutOfMemoryError,
  Owner,
  RedisConnectionError,
  STATUS,
} = wasm

/**
 * A transport over node-redis that can drop requests: while `down`, every call rejects as a
 * connection failure without reaching Redis (as a partition would).
 */
function faulty(conn) {
  const inner = wasm.fromNodeRedis(conn)
  const t = {
    down: false,
    calls: 0,
    label: 'faulty',
    eval(script, keys, args) {
      t.calls++
      if (t.down) return Promise.reject(new Error('socket closed (injected)'))
      return inner.eval(script, keys, args)
    },
  }
  return t
}

const r = await redis()
test.after(() => r.quit())

test('a release whose outcome is unknown can be called again', async () => {
  const conn = await redis()
  const transport = faulty(conn)
  const client = wasm.createClient(transport, { networkTimeoutMs: 300 })
  try {
    // The rlock's two holds re-enter through one explicit owner (a bare acquire is an owner of its own).
    const rlock = client.rlock(key('retry-r'), { leaseMs: 20000, owner: new Owner() })
    for (const lock of [client.lock(key('retry'), { leaseMs: 20000 }), rlock]) {
      const outer = lock.reentrant ? await lock.acquire() : null
      const held = await lock.acquire()
      transport.down = true
      await assert.rejects(held.release(), RedisConnectionError)
      transport.down = false
      assert.equal(await r.exists(lock.name), 1, 'the release never reached Redis')
      await held.release() // was NotOwnedError "this hold was already released"
      if (outer) {
        assert.equal(await lock.holdCount(), 1, 'decremented once')
        await outer.release()
      }
      assert.equal(await r.exists(lock.name), 0)
      const again = await held.release().then(
        () => null,
        (e) => e,
      )
      assert.ok(again instanceof NotOwnedError)
      assert.equal(again.reason, 'never_held')
    }
  } finally {
    await client.close()
    await conn.quit()
  }
})

test('a scope whose release failed finishes it in the background', async () => {
  const conn = await redis()
  const transport = faulty(conn)
  const client = wasm.createClient(transport, { networkTimeoutMs: 300 })
  const name = key('scope')
  try {
    const scope = client.lock(name, { leaseMs: 20000 }).using(async () => {
      transport.down = true
    })
    await assert.rejects(scope, RedisConnectionError)
    assert.equal(await r.exists(name), 1)
    transport.down = false
    // Was: the token thrown away, the key blocking everyone for the rest of its 20 s lease.
    assert.ok(await eventually(async () => (await r.exists(name)) === 0, 5000), 'retried in the background')
  } finally {
    await client.close()
    await conn.quit()
  }
})

test('every NotOwnedError says why, and the lost signal too', async () => {
  const { client, close } = await wasmClient(undefined, { watchdogTimeoutMs: 300 })
  try {
    const expired = await client.lock(key('exp'), { leaseMs: 200 }).acquire()
    await sleep(400)
    const lost = await expired.release().then(
      () => null,
      (e) => e,
    )
    assert.ok(lost instanceof LockLostError, String(lost))
    assert.equal(lost.reason, 'expired')

    const name = key('del')
    const deleted = await client.lock(name, { leaseMs: 10000 }).acquire()
    await r.del(name)
    const gone = await deleted.release().then(
      () => null,
      (e) => e,
    )
    assert.ok(gone instanceof NotOwnedError && !(gone instanceof LockLostError))
    assert.equal(gone.reason, 'deleted')

    const taken = key('taken')
    const mine = await client.lock(taken, { leaseMs: 10000 }).acquire()
    await r.set(taken, 'someone-else-0123456789', { PX: 10000 })
    const other = await mine.extend(10000).then(
      () => null,
      (e) => e,
    )
    assert.ok(other instanceof NotOwnedError)
    assert.equal(other.reason, 'taken')

    const watched = key('wd')
    const held = await client.lock(watched).acquire()
    await r.del(watched)
    const why = await aborted(held.signal)
    assert.ok(why instanceof LockLostError)
    assert.equal(why.reason, 'deleted')

    const scoped = key('scope')
    const err = await client
      .lock(scoped, { leaseMs: 10000 })
      .using(() => r.del(scoped))
      .then(
        () => null,
        (e) => e,
      )
    assert.ok(err instanceof LockLostError)
    assert.equal(err.reason, 'deleted')
  } finally {
    await close()
  }
})

test('a lost hold never blocks the next acquire', async () => {
  const { client, close } = await wasmClient(undefined, { watchdogTimeoutMs: 300 })
  try {
    const lock = client.lock(key('relost'))
    const held = await lock.acquire()
    await r.del(lock.name)
    await aborted(held.signal)
    const again = await lock.acquire({ waitMs: 2000 })
    assert.equal(await again.owned(), true)
    await again.release()
  } finally {
    await close()
  }
})

test('application data under a lock name is a KeyConflictError at once', async () => {
  const { client, close } = await wasmClient()
  const name = key('data')
  await r.set(name, 'x')
  const list = key('list')
  await r.rPush(list, 'x')
  try {
    for (const n of [name, list]) {
      for (const lock of [client.lock(n, { leaseMs: 1000 }), client.rlock(n, { leaseMs: 1000 })]) {
        const started = Date.now()
        await assert.rejects(lock.acquire(), KeyConflictError) // waits forever by default: used to hang
        await assert.rejects(lock.acquire({ waitMs: 0 }), (e) => e instanceof KeyConflictError && e.status === 11)
        assert.ok(Date.now() - started < 2000)
      }
    }
    assert.equal(await r.get(name), 'x')
  } finally {
    await r.del([name, list])
    await close()
  }
})

test('an ACL user without publish gets NoPermissionError and keeps the hold', async () => {
  const name = key('acl')
  const user = `rl_wasm_${Date.now()}`
  await r.sendCommand(['ACL', 'SETUSER', user, 'reset', 'on', '>pw', `~${name}*`, '~redisson_*', '~redlatch_*',
    '&redisson_lock__channel:*', '+ping', '+eval', '+evalsha', '+get', '+set', '+del', '+exists', '+pttl',
    '+pexpire', '+hget', '+hexists', '+hincrby'])
  const host = REDIS_URL.split('://')[1]
  const { client, close } = await wasmClient([`redis://${user}:pw@${host}`])
  try {
    const held = await client.lock(name, { leaseMs: 10000 }).acquire()
    const err = await held.release().then(
      () => null,
      (e) => e,
    )
    assert.ok(err instanceof NoPermissionError, String(err)) // used to reject after the key was deleted
    assert.equal(err.status, 9)
    assert.equal(await r.exists(name), 1, 'a refused release leaves the key untouched')
    await r.sendCommand(['ACL', 'SETUSER', user, '+publish'])
    await held.release() // still held: released now
    assert.equal(await r.exists(name), 0)
  } finally {
    await close()
    await r.sendCommand(['ACL', 'DELUSER', user])
  }
})

test('an ACL user without evalsha runs every call by source', async () => {
  // A deployments trial of stop 45: every call through a host client with evalsha was
  // NoPermission for such a user (the native transports passed the first call of each script).
  const name = key('acl-evalsha')
  const user = `rl_wasm_sha_${Date.now()}`
  await r.sendCommand(['ACL', 'SETUSER', user, 'reset', 'on', '>pw', `~${name}*`, '~redisson_*', '~redlatch_*',
    '&redisson_lock__channel:*', '+ping', '+eval', '+get', '+set', '+del', '+exists', '+pttl',
    '+pexpire', '+hget', '+hexists', '+hincrby', '+publish'])
  const host = REDIS_URL.split('://')[1]
  const { client, close } = await wasmClient([`redis://${user}:pw@${host}`])
  try {
    for (let i = 0; i < 3; i++) {
      const held = await client.rlock(name).acquire()
      await held.release()
    }
    assert.equal(await r.exists(name), 0)
  } finally {
    await close()
    await r.sendCommand(['ACL', 'DELUSER', user])
  }
})

test('a re-entry keeps the outer fencing token; fenceTtlMs expires the counter', async () => {
  const { client, close } = await wasmClient()
  const name = key('fence')
  try {
    const lock = client.rlock(name, { leaseMs: 5000, fenced: true, fenceTtlMs: 3_600_000 })
    await lock.using(async () => {
      const outer = await lock.acquire() // re-enters the scope's hold
      const inner = await lock.acquire()
      assert.equal(inner.fencingToken, outer.fencingToken) // was outer + 1
      await inner.release()
      await outer.release()
    })
    const ttl = await r.pTTL(`redisson_lock_token:{${name}}`)
    assert.ok(ttl > 3_500_000 && ttl <= 3_600_000, `counter TTL ${ttl}`)
  } finally {
    await close()
  }
})

test('the new error classes have their stable codes', () => {
  assert.equal(STATUS.ERR_NO_PERMISSION, 9)
  assert.equal(STATUS.ERR_OUT_OF_MEMORY, 10)
  assert.equal(STATUS.ERR_KEY_CONFLICT, 11)
  assert.equal(new NoPermissionError('x').code, 'ERR_NO_PERMISSION')
  assert.equal(new OutOfMemoryError('x').status, 10)
  assert.equal(new KeyConflictError('x').reason, null)
})
