// The lost-lock signal, for both entries: `held.signal` aborts with a LockLostError when the
// hold is lost, and `using` / `withLock` report the loss without hiding the function's own
// error.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ENTRIES, key, redis, sleep, aborted, eventually } from './helpers.mjs'
import v8 from 'node:v8'
import vm from 'node:vm'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')

// A short watchdog (lease 300 ms, renewed every 100 ms) notices a loss quickly.
for (const entry of ENTRIES) {
  const { LockLostError, NotOwnedError } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect({ watchdogTimeoutMs: 300 })))
    after(async () => {
      await close()
    })

    test('a Held or MultiHeld with a fixed lease that is garbage-collected stays held until its lease ends', async () => {
      // A user trial of stop 45: it was released at its collection, seconds into its 60 s
      // lease, while its holder still worked.
      const name = key()
      const members = [key(), key()]
      const r = redis()
      try {
        await (async () => {
          await client.lock(name, { leaseMs: 60_000 }).acquire()
          await client.multiLock(members, { leaseMs: 60_000 }).acquire() // a MultiHeld alike
        })()
        // Past lib/deferred-registry.mjs' 500 ms, when collected holds are finalized.
        for (let i = 0; i < 8; i++) {
          gc()
          await sleep(100)
        }
        assert.equal(await r.exists(name), 1, 'still held')
        assert.ok((await r.pttl(name)) > 50_000)
        assert.equal(await r.exists(...members), 2, 'the multi-lock members still held')
        await assert.rejects(client.lock(name, { waitMs: 0 }).acquire(), entry.api.NotAcquiredError)
      } finally {
        await r.del(name, ...members)
        await r.quit()
      }
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

    test('a signal first read after the loss is already aborted', async () => {
      // Signals are made when first read; the loss must still show.
      const name = key()
      const held = await client.lock(name).acquire()
      await client.forceUnlock(name)
      assert.ok(await eventually(() => held.lost, 3000), 'the watchdog saw the loss')
      assert.equal(held.signal.aborted, true)
      assert.ok(held.signal.reason instanceof LockLostError)
      assert.match(held.signal.reason.message, /was lost while held/)
    })

    test('a hold overwritten by someone else is lost too', async () => {
      const name = key()
      const r = redis()
      try {
        const held = await client.lock(name).acquire()
        await r.set(name, 'someone-else', 'PX', 10_000)
        await aborted(held.signal)
        assert.ok(held.signal.reason instanceof LockLostError)
        await assert.rejects(held.release(), LockLostError)
        assert.equal(await r.get(name), 'someone-else', 'the other owner keeps it')
      } finally {
        await r.del(name)
        r.quit()
      }
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
      const r = redis()
      try {
        const err = await client
          .withLock(name, async () => {
            await r.del(name)
            return 'done'
          }, { leaseMs: 5000 })
          .then(() => null, (e) => e)
        assert.ok(err instanceof LockLostError, `got ${err && err.name}: ${err && err.message}`)
        assert.ok(err.cause instanceof NotOwnedError)
        assert.equal(err.code, 'ERR_LOCK_LOST')
        // `await using` ends a scope the same way (Symbol.asyncDispose, as TypeScript calls it).
        const held = await client.lock(name, { leaseMs: 5000 }).acquire()
        await r.del(name)
        await assert.rejects(held[Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')](), LockLostError)
        // A plain release() reports what Redis said.
        const again = await client.lock(name, { leaseMs: 5000 }).acquire()
        await r.del(name)
        await assert.rejects(again.release(), (e) => e instanceof NotOwnedError && !(e instanceof LockLostError))
      } finally {
        r.quit()
      }
    })

    test("using rejects with the function's own error when it threw, and still releases", async () => {
      const name = key()
      const r = redis()
      try {
        const mine = new Error('mine')
        await assert.rejects(
          client.withLock(name, async () => {
            throw mine
          }),
          (e) => e === mine,
        )
        assert.equal(await r.exists(name), 0, 'released')
        // Lost and threw: the function's error wins.
        await assert.rejects(
          client.withLock(name, async (signal) => {
            await client.forceUnlock(name)
            await aborted(signal)
            throw mine
          }),
          (e) => e === mine,
        )
        // A synchronous throw counts too.
        await assert.rejects(
          client.withLock(name, () => {
            throw mine
          }),
          (e) => e === mine,
        )
        assert.equal(await r.exists(name), 0)
      } finally {
        r.quit()
      }
    })

    test('using resolves to the function result and the signal is usable for I/O', async () => {
      const name = key()
      const result = await client.withLock(
        name,
        async (signal) => {
          assert.ok(signal instanceof AbortSignal)
          assert.equal(signal.aborted, false)
          await sleep(20, undefined, { signal })
          return { ok: 1 }
        },
        { leaseMs: 5000, waitMs: 1000 },
      )
      assert.deepEqual(result, { ok: 1 })
    })

    test('the signal of a released hold never aborts', async () => {
      const held = await client.lock(key(), { leaseMs: 200 }).acquire()
      await held.release()
      await sleep(500)
      assert.equal(held.signal.aborted, false)
    })
  })
}
