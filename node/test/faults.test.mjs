// Faults and edge cases (issue #10 items 1, 2, 6, 8; #14 item 4): a connection Redis closed
// while idle, a release whose outcome is unknown (retryable), the reason of every
// NotOwnedError, application data under a lock name, the new error classes.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import {
  Client,
  KeyConflictError,
  LockLostError,
  NoPermissionError,
  NotOwnedError,
  OutOfMemoryError,
  RedisConnectionError,
  STATUS,
} from 'redlatch'
import { REDIS_URL, aborted, eventually, key, redis, sleep } from './helpers.mjs'

test('single-try calls after Redis closed the idle connection succeed', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL)
  await raw.config('SET', 'timeout', '1')
  try {
    const lock = client.lock(key('stale'), { leaseMs: 30000, waitMs: 0 })
    await (await lock.acquire()).release()
    await sleep(2300) // idle past the server's 1 s timeout
    const held = await lock.acquire() // was RedisConnectionError: broken pipe
    await sleep(2300)
    assert.equal(await lock.locked(), true)
    await held.release()
  } finally {
    await raw.config('SET', 'timeout', '0')
    await client.close()
    raw.disconnect()
  }
})

test('a release whose outcome is unknown can be called again', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL, { networkTimeoutMs: 300 })
  try {
    for (const lock of [client.lock(key('retry'), { leaseMs: 20000 }), client.rlock(key('retry-r'), { leaseMs: 20000 })]) {
      const held = await lock.acquire()
      await raw.client('PAUSE', '1000') // the release waits past the network timeout, then applies
      await assert.rejects(held.release(), RedisConnectionError)
      await sleep(900) // the pause is over: the first attempt applied, its latch lives 1 s
      await held.release() // was NotOwnedError "already released through this handle"
      assert.equal(await raw.exists(lock.name), 0)
      const again = await held.release().then(() => null, (e) => e)
      assert.ok(again instanceof NotOwnedError)
      assert.equal(again.reason, 'never_held')
    }
  } finally {
    await client.close()
    raw.disconnect()
  }
})

test('a scope whose release was lost finishes it in the background', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL, { networkTimeoutMs: 300 })
  const name = key('scope-lost')
  try {
    // The release at the scope's end waits behind CLIENT PAUSE WRITE past the network timeout;
    // then its connection is killed, so Redis never runs it.
    const scope = client.lock(name, { leaseMs: 20000 }).using(async () => {
      await raw.client('PAUSE', '3000', 'WRITE')
    })
    await assert.rejects(scope, RedisConnectionError)
    await raw.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    // Still paused for writes: whatever was sent since waits, and the key is intact.
    assert.equal(await raw.exists(name), 1, 'the release really was lost')
    await raw.client('UNPAUSE')
    // Was: the token thrown away, the key blocking everyone for the rest of its 20 s lease.
    assert.ok(await eventually(async () => (await raw.exists(name)) === 0, 5000), 'retried in the background')
  } finally {
    await raw.client('UNPAUSE')
    await client.close()
    raw.disconnect()
  }
})

test('a permit or multi-lock scope whose release was lost finishes it in the background', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL, { networkTimeoutMs: 300 })
  const name = key('scope-lost-family')
  const members = [`${name}:a`, `${name}:b`]
  const cases = [
    ['permit', client.permitSemaphore(name, { permits: 1 }), { leaseMs: 20000 }, async () => (await raw.zcard(`{${name}}:timeout`)) > 0],
    ['multi-lock', client.multiLock(members, { leaseMs: 20000 }), undefined, async () => (await raw.exists(...members)) > 0],
  ]
  try {
    for (const [what, made, options, taken] of cases) {
      // As for a lock's scope above: the release waits behind CLIENT PAUSE WRITE past the
      // network timeout, then its connection is killed, so Redis never runs it.
      const scope = made.using(async () => {
        await raw.client('PAUSE', '3000', 'WRITE')
      }, options)
      await assert.rejects(scope, RedisConnectionError)
      await raw.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
      assert.equal(await taken(), true, `${what}: the release really was lost`)
      await raw.client('UNPAUSE')
      // Was: released only once the Permit / MultiHeld object was garbage-collected.
      assert.ok(await eventually(async () => !(await taken()), 5000), `${what}: retried in the background`)
    }
  } finally {
    await raw.client('UNPAUSE')
    await client.close()
    raw.disconnect()
  }
})

test('a semaphore scope whose release timed out gives its permits back once', async () => {
  // Found by a user trial (stop 35): the release at the end of using(fn) waited behind
  // CLIENT PAUSE WRITE past the network timeout and applied later, while the handle kept
  // counting the permit; its next release() gave it back a second time (4 of 3, for good).
  const raw = redis()
  const client = await Client.connect(REDIS_URL, { networkTimeoutMs: 300 })
  const name = key('scope-sem')
  const sem = client.semaphore(name, { permits: 3 })
  try {
    await sem.using(async () => {}) // once, so that the release script is cached
    const scope = sem.using(async () => {
      await raw.client('PAUSE', '1000', 'WRITE')
    })
    await assert.rejects(scope, RedisConnectionError)
    assert.equal(sem.held, 0, 'the scope gave its permit up')
    assert.ok(await eventually(async () => Number(await raw.get(name)) === 3, 5000), 'given back')
    await assert.rejects(sem.release(), (e) => e instanceof NotOwnedError && e.reason === 'never_held')
    assert.equal(Number(await raw.get(name)), 3, 'given back once')
  } finally {
    await raw.client('UNPAUSE')
    await client.close()
    raw.disconnect()
  }
})

test('every NotOwnedError says why, and the lost signal too', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL, { watchdogTimeoutMs: 300 })
  try {
    const expired = await client.lock(key('exp'), { leaseMs: 200 }).acquire()
    await sleep(400)
    const lost = await expired.release().then(() => null, (e) => e)
    assert.ok(lost instanceof LockLostError)
    assert.equal(lost.reason, 'expired')

    const name = key('del')
    const deleted = await client.lock(name, { leaseMs: 10000 }).acquire()
    await raw.del(name)
    const gone = await deleted.release().then(() => null, (e) => e)
    assert.ok(gone instanceof NotOwnedError && !(gone instanceof LockLostError))
    assert.equal(gone.reason, 'deleted')

    const watched = key('wd')
    const held = await client.lock(watched).acquire()
    await raw.del(watched)
    const why = await aborted(held.signal)
    assert.ok(why instanceof LockLostError)
    assert.equal(why.reason, 'deleted')

    // A scope that ends after a loss: LockLostError with the reason of what ended it.
    const scoped = key('scope')
    const err = await client
      .lock(scoped, { leaseMs: 10000 })
      .using(() => raw.del(scoped))
      .then(() => null, (e) => e)
    assert.ok(err instanceof LockLostError)
    assert.equal(err.reason, 'deleted')
  } finally {
    await client.close()
    raw.disconnect()
  }
})

test('application data under a lock name is a KeyConflictError at once', async () => {
  const raw = redis()
  const client = await Client.connect(REDIS_URL)
  const name = key('data')
  await raw.set(name, 'x')
  try {
    for (const lock of [client.lock(name, { leaseMs: 1000 }), client.rlock(name, { leaseMs: 1000 })]) {
      const started = Date.now()
      await assert.rejects(lock.acquire(), KeyConflictError) // waits forever by default: used to hang
      await assert.rejects(lock.acquire({ waitMs: 0 }), (e) => e instanceof KeyConflictError && e.status === 11)
      assert.ok(Date.now() - started < 2000)
    }
    assert.equal(await raw.get(name), 'x')
  } finally {
    await client.close()
    raw.disconnect()
  }
})

test('application data under a family name is a KeyConflictError, and forceUnlock keeps it', async () => {
  // A user trial found a write lock granted inside an application hash, a fair lock waiting
  // out its whole wait on one, and forceUnlock deleting a hash or string without TTL.
  const raw = redis()
  const client = await Client.connect(REDIS_URL)
  const name = key('family-data')
  await raw.hset(name, 'theme', 'dark')
  try {
    const rw = client.rwLock(name, { leaseMs: 1000 })
    for (const lock of [rw.write(), rw.read(), client.fairLock(name, { leaseMs: 1000 })]) {
      const started = Date.now()
      await assert.rejects(lock.acquire(), KeyConflictError) // waits forever by default
      assert.ok(Date.now() - started < 2000)
    }
    await assert.rejects(client.forceUnlock(name), KeyConflictError)
    assert.deepEqual(await raw.hgetall(name), { theme: 'dark' })
    assert.equal(await raw.pttl(name), -1)
  } finally {
    await client.close()
    raw.disconnect()
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
