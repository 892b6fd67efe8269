// The everyday API, for both entries (shared/API.md, Node): acquire/release, extend, fencing,
// inspection, force unlock, the error classes, close.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ENTRIES, key, redis, sleep } from './helpers.mjs'

for (const entry of ENTRIES) {
  const {
    Held,
    LockError,
    NotAcquiredError,
    NotOwnedError,
    LockLostError,
    QuorumError,
    RedisConnectionError,
    InvalidArgumentError,
    NoPermissionError,
    OutOfMemoryError,
    KeyConflictError,
    WouldDeadlockError,
    Owner,
    STATUS,
  } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(() => close())

    test('error classes have stable names, codes and statuses', () => {
      const cases = [
        [LockError, 'LockError', 'ERR_PANIC', 8],
        [NotAcquiredError, 'NotAcquiredError', 'ERR_NOT_ACQUIRED', 1],
        [NotOwnedError, 'NotOwnedError', 'ERR_NOT_OWNED', 2],
        [LockLostError, 'LockLostError', 'ERR_LOCK_LOST', 3],
        [QuorumError, 'QuorumError', 'ERR_QUORUM', 4],
        [RedisConnectionError, 'RedisConnectionError', 'ERR_CONNECTION', 5],
        [InvalidArgumentError, 'InvalidArgumentError', 'ERR_INVALID_ARGUMENT', 6],
        [NoPermissionError, 'NoPermissionError', 'ERR_NO_PERMISSION', 9],
        [OutOfMemoryError, 'OutOfMemoryError', 'ERR_OUT_OF_MEMORY', 10],
        [KeyConflictError, 'KeyConflictError', 'ERR_KEY_CONFLICT', 11],
        [WouldDeadlockError, 'WouldDeadlockError', 'ERR_WOULD_DEADLOCK', 12],
      ]
      for (const [cls, name, code, status] of cases) {
        const e = new cls('x')
        assert.ok(e instanceof Error && e instanceof LockError)
        assert.equal(e.name, name)
        assert.equal(e.code, code)
        assert.equal(e.status, status)
        assert.equal(STATUS[code], status)
        assert.equal(e.reason, null)
      }
      assert.ok(new LockLostError('x') instanceof NotOwnedError)
      assert.equal(new NotOwnedError('x', { reason: 'taken' }).reason, 'taken')
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
        assert.equal(held.lost, false)
        assert.equal(await held.owned(), true)
        assert.match(await r.get(name), /^[0-9a-f]{32}$/, 'a redis-py / node-redlock format token')
        assert.equal(String(held), `Held(${JSON.stringify(name)})`)
        assert.ok(!String(held).includes(await r.get(name)), 'no token in its string')
        const pttl = await r.pttl(name)
        assert.ok(pttl > 9000 && pttl <= 10_000, `pttl ${pttl}`)
        const err = await client.lock(name).acquire({ waitMs: 0 }).catch((e) => e)
        assert.ok(err instanceof NotAcquiredError, String(err))
        assert.equal(err.code, 'ERR_NOT_ACQUIRED')
        assert.equal(err.status, STATUS.ERR_NOT_ACQUIRED)
        assert.match(err.stack, /NotAcquiredError/)
        assert.equal(await client.lock(name).locked(), true)
        const ttl = await client.lock(name).ttl()
        assert.ok(ttl > 9000 && ttl <= 10_000)
        await held.release()
        assert.equal(await r.exists(name), 0)
        assert.equal(await client.lock(name).locked(), false)
        assert.equal(await client.lock(name).ttl(), null)
        assert.equal(held.signal.aborted, false, 'a release never aborts the signal')
        assert.equal(await held.owned(), false)
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
      const c = await entry.connect({ watchdogTimeoutMs: 300 })
      const r = redis()
      try {
        const name = key()
        const held = await c.client.lock(name).acquire()
        assert.equal(held.leaseMs, 300)
        for (let i = 0; i < 6; i++) {
          await sleep(150)
          const pttl = await r.pttl(name)
          assert.ok(pttl > 0 && pttl <= 300, `pttl ${pttl} after ${(i + 1) * 150} ms`)
        }
        assert.equal(held.lost, false)
        assert.equal(await held.owned(), true)
        await held.release()
        await sleep(400)
        assert.equal(await r.exists(name), 0, 'no renewal after the release')
      } finally {
        await c.close()
        r.quit()
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

    test('a re-entry keeps the outer fencing token; fenceTtlMs expires the counter', async () => {
      const name = key('fence')
      const r = redis()
      try {
        const lock = client.rlock(name, { leaseMs: 5000, fenced: true, fenceTtlMs: 3_600_000, owner: new Owner() })
        const outer = await lock.acquire()
        const inner = await lock.acquire()
        assert.equal(inner.fencingToken, outer.fencingToken)
        await inner.release()
        await outer.release()
        const ttl = await r.pttl(`redisson_lock_token:{${name}}`)
        assert.ok(ttl > 3_500_000 && ttl <= 3_600_000, `counter TTL ${ttl}`)
        assert.throws(() => client.lock(name, { fenced: true, fenceTtlMs: 0 }), InvalidArgumentError)
        assert.throws(() => client.lock(name, { fenced: true, fenceTtlMs: 1.5 }), InvalidArgumentError)
        // Without fenced a fenceTtlMs did nothing, silently (trials of stop 46).
        assert.throws(() => client.lock(name, { fenceTtlMs: 60000 }), /fenced locks only/)
      } finally {
        r.disconnect()
      }
    })

    test('NotOwnedError and the lost signal say why', async () => {
      const r = redis()
      try {
        const name = key('del')
        const deleted = await client.lock(name, { leaseMs: 10_000 }).acquire()
        await r.del(name)
        const gone = await deleted.release().then(() => null, (e) => e)
        assert.ok(gone instanceof NotOwnedError && !(gone instanceof LockLostError), String(gone))
        assert.equal(gone.reason, 'deleted')
        const again = await deleted.release().then(() => null, (e) => e)
        assert.ok(again instanceof NotOwnedError)
        assert.equal(again.reason, 'never_held')

        const taken = key('taken')
        const mine = await client.lock(taken, { leaseMs: 10_000 }).acquire()
        await r.set(taken, 'someone-else-0123456789', 'PX', 10_000)
        const other = await mine.extend(10_000).then(() => null, (e) => e)
        assert.ok(other instanceof NotOwnedError, String(other))
        assert.equal(other.reason, 'taken')

        const scoped = key('scope')
        const err = await client
          .lock(scoped, { leaseMs: 10_000 })
          .using(() => r.del(scoped))
          .then(() => null, (e) => e)
        assert.ok(err instanceof LockLostError, String(err))
        assert.equal(err.reason, 'deleted')
      } finally {
        r.disconnect()
      }
    })

    test('forceUnlock deletes whatever the owner', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 5000 }).acquire()
      assert.equal(await client.forceUnlock(name), true)
      assert.equal(await client.forceUnlock(name), false)
      await assert.rejects(held.release(), NotOwnedError)
    })

    test('using and withLock release after the function, and pass its result and errors', async () => {
      const name = key()
      const r = redis()
      try {
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
      } finally {
        r.quit()
      }
    })

    test('await using releases at the end of the block; a second dispose is a no-op', async () => {
      const name = key()
      const r = redis()
      try {
        const held = await client.lock(name, { leaseMs: 2000 }).acquire()
        await held[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]()
        assert.equal(await r.exists(name), 0)
        await held[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')]()
      } finally {
        r.quit()
      }
    })

    test('a using() whose lock close() released rejects with LockLostError', async () => {
      const c = await entry.connect()
      let started
      const inside = new Promise((resolve) => (started = resolve))
      const during = c.client.withLock(key(), async (signal) => {
        started()
        await sleep(150)
        return signal.aborted
      })
      try {
        await inside
        await c.client.close()
        await assert.rejects(
          during,
          (e) => e instanceof LockLostError && /client\.close\(\)/.test(e.message) && e.reason === 'deleted',
        )
      } finally {
        await c.close()
      }
    })

    test('close releases holds, rejects pending acquires and later calls', async () => {
      const c = await entry.connect()
      const name = key()
      const other = key()
      const r = redis()
      try {
        const held = await c.client.lock(name).acquire()
        const unwatched = await c.client.lock(key(), { leaseMs: 5000 }).acquire()
        const blocker = await client.lock(other, { leaseMs: 10_000 }).acquire()
        const pending = assert.rejects(c.client.lock(other).acquire(), RedisConnectionError)
        assert.equal(held.signal.aborted, false)
        await sleep(50)
        await c.client.close()
        await pending
        assert.equal(await r.exists(name), 0, 'close released the hold')
        assert.equal(await r.exists(unwatched.name), 0, 'and the one nobody watched')
        assert.equal(c.client.closed, true)
        // The holder's lock is gone: its signal says so (read before or after close), and
        // its calls say why.
        for (const h of [held, unwatched]) {
          assert.equal(h.signal.aborted, true)
          assert.ok(h.signal.reason instanceof LockLostError)
          assert.match(h.signal.reason.message, /client\.close\(\)/)
          assert.equal(h.lost, true)
          await assert.rejects(h.release(), RedisConnectionError)
          await assert.rejects(h.extend(1000), RedisConnectionError)
        }
        assert.throws(() => c.client.lock(key()), RedisConnectionError)
        await assert.rejects(c.client.forceUnlock(name), RedisConnectionError)
        await assert.rejects(c.client.withLock(key(), async () => {}), RedisConnectionError)
        await c.client.close() // idempotent
        await blocker.release()
        assert.equal(await r.get(other), null, 'the cancelled waiter left nothing behind')
      } finally {
        await c.close()
        r.quit()
      }
    })

    test('an AbortSignal cancels a pending acquire with its reason and leaves nothing behind', async () => {
      const name = key()
      const r = redis()
      try {
        const blocker = await client.lock(name, { leaseMs: 10_000 }).acquire()
        const token = await r.get(name)
        const ac = new AbortController()
        const pending = client.lock(name).acquire({ signal: ac.signal })
        await sleep(100)
        const reason = new Error('stop waiting')
        ac.abort(reason)
        await assert.rejects(pending, (e) => e === reason)
        assert.equal(await r.get(name), token, 'the holder is untouched')
        const already = AbortSignal.abort()
        await assert.rejects(client.lock(name).acquire({ signal: already }), (e) => e.name === 'AbortError')
        await assert.rejects(client.withLock(name, async () => assert.fail('ran'), { signal: already }), (e) => e.name === 'AbortError')
        const t0 = performance.now()
        await assert.rejects(client.lock(name).acquire({ signal: AbortSignal.timeout(150) }), (e) => e.name === 'TimeoutError')
        assert.ok(performance.now() - t0 < 1000)
        await blocker.release()
        await sleep(100)
        assert.equal(await r.exists(name), 0, 'the cancelled waiters did not take the lock afterwards')
      } finally {
        r.quit()
      }
    })
  })
}

test('both entries share one set of classes: an error of either is an instance of both', async () => {
  const [native, wasm] = ENTRIES
  for (const name of ['Client', 'Lock', 'Held', 'LockError', 'NotAcquiredError', 'LockLostError', 'STATUS']) {
    assert.equal(native.api[name] === wasm.api[name], name !== 'Client', name)
  }
  assert.equal(Object.getPrototypeOf(native.api.Client), wasm.api.Client, 'the native Client extends the shared one')
  const clients = await Promise.all(ENTRIES.map((e) => e.connect()))
  try {
    const name = key()
    const held = await clients[0].client.lock(name, { leaseMs: 5000 }).acquire()
    for (const { client } of clients) {
      const err = await client.lock(name).acquire({ waitMs: 0 }).catch((e) => e)
      assert.ok(err instanceof native.api.NotAcquiredError && err instanceof wasm.api.NotAcquiredError, String(err))
    }
    await clients[1].client.forceUnlock(name)
    const gone = await held.release().catch((e) => e)
    assert.ok(gone instanceof wasm.api.NotOwnedError, String(gone))
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
})
