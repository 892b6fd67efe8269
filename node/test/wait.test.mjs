// Waiting, for both entries: timeouts, one-try waits, waiting forever, and prompt hand-off on
// release (native: pub/sub wakes the waiter; wasm: it polls, at most every pollIntervalMs).
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ENTRIES, key, sleep } from './helpers.mjs'

for (const entry of ENTRIES) {
  const { NotAcquiredError } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('waitMs 0 is one try', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 0 })
      const t0 = performance.now()
      await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      assert.ok(performance.now() - t0 < 500)
      await held.release()
    })

    test('the wait runs out after waitMs, not much later', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 10_000 }).acquire()
      for (const waitMs of [100, 400]) {
        const t0 = performance.now()
        await assert.rejects(client.lock(name).acquire({ waitMs }), NotAcquiredError)
        const took = performance.now() - t0
        assert.ok(took >= waitMs - 5 && took < waitMs + 300, `waitMs ${waitMs} took ${took.toFixed(1)} ms`)
      }
      // The lock-level default wait applies when acquire gives none.
      const t0 = performance.now()
      await assert.rejects(client.lock(name, { waitMs: 150 }).acquire(), NotAcquiredError)
      assert.ok(performance.now() - t0 < 500)
      await held.release()
    })

    test('waitMs Infinity (and absent) wait until the release, and hand off promptly', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 10_000 }).acquire()
      let releasedAt = 0
      const waiters = [
        client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: Infinity }),
        client.lock(name, { leaseMs: 5000 }).acquire(),
      ]
      await sleep(300)
      releasedAt = performance.now()
      await held.release()
      const first = await Promise.race(waiters)
      const handoff = performance.now() - releasedAt
      // Pub/sub wakes a native waiter at once; a wasm waiter polls (at most every 50 ms).
      assert.ok(handoff < (entry.pubsub ? 100 : 300), `hand-off took ${handoff.toFixed(1)} ms`)
      await first.release()
      const all = await Promise.all(waiters)
      for (const h of all) if (h !== first) await h.release()
    })

    test('a fixed lease of a dead holder bounds the wait', async () => {
      const name = key()
      // Acquired and never released: Redis drops it after 300 ms.
      const held = await client.lock(name, { leaseMs: 300 }).acquire()
      const t0 = performance.now()
      const next = await client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 3000 })
      const took = performance.now() - t0
      assert.ok(took < 1000, `took ${took.toFixed(1)} ms`)
      await next.release()
      void held
    })

    test('rlock waits and times out too', async () => {
      const name = key()
      const outer = client.rlock(name).using(() => sleep(300))
      await sleep(50)
      await assert.rejects(
        (async () => client.rlock(name).acquire({ waitMs: 100 }))(),
        NotAcquiredError,
      )
      await outer
    })
  })
}
