// Count-down latches (Redisson RCountDownLatch) and multi-locks (RedissonMultiLock), for both
// entries (issue #13 items 1, 4): latch waiters in several processes all wake, timeouts and
// aborts; multi-locks all or nothing, processes taking overlapping sets in opposite orders
// finish with exact counters, bad sets refused.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { FAMILY_ENTRIES as ENTRIES, key, redis } from './helpers.mjs'
import { workers } from './workers.mjs'

const r = redis()
after(() => r.quit())

for (const entry of ENTRIES) {
  const { NotAcquiredError, InvalidArgumentError, CountDownLatch, MultiLock, MultiHeld } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('latch: trySetCount, countDown, count, wait with timeout and abort', async () => {
      const name = key('latch')
      const latch = client.countDownLatch(name)
      assert.ok(latch instanceof CountDownLatch)
      assert.equal(await latch.wait({ timeoutMs: 0 }), true, 'no latch set: open')
      assert.equal(await latch.trySetCount(2), true)
      assert.equal(await latch.trySetCount(5), false)
      assert.equal(await latch.count(), 2)
      assert.equal(await latch.wait({ timeoutMs: 50 }), false, 'the timeout ran out')
      const ac = new AbortController()
      const aborted = latch.wait({ signal: ac.signal })
      ac.abort(new Error('no more'))
      await assert.rejects(aborted, /no more/)
      await assert.rejects(latch.trySetCount(0), InvalidArgumentError)
      await assert.rejects(latch.wait({ timeoutMs: -1 }), InvalidArgumentError)
      await latch.countDown()
      await latch.countDown()
      assert.equal(await latch.count(), 0)
      assert.equal(await r.exists(name), 0, 'an opened latch is deleted')
    })

    test('latch waiters in 3 processes all wake', async () => {
      const name = key('latch')
      const latch = client.countDownLatch(name)
      await latch.trySetCount(3)
      const ws = await workers(entry.name, 3)
      try {
        const woke = Promise.all(ws.map((w) => w.call('latchWait', { name, timeoutMs: 20_000 })))
        for (let i = 0; i < 3; i++) await latch.countDown()
        assert.deepEqual(await woke, [true, true, true])
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
      }
    })

    test('every latch waiter of one client wakes at zero by the open message', { skip: !entry.pubsub }, async () => {
      // A user trial of stop 46: on the local engine the latch's open message ('0') woke one
      // waiter per client, as a lock's release does; the others waited for their poll. With
      // a poll longer than the bound below, only the message can wake them in time.
      const name = key('latch')
      const { client: slow, close: closeSlow } = await entry.connect({ pollIntervalMs: 30_000 })
      try {
        const latch = slow.countDownLatch(name)
        assert.equal(await latch.trySetCount(1), true)
        const waiters = Array.from({ length: 5 }, () => latch.wait({ timeoutMs: 20_000 }))
        await new Promise((resolve) => setTimeout(resolve, 300))
        await client.countDownLatch(name).countDown()
        const bound = new Promise((resolve) => setTimeout(resolve, 5_000, 'poll'))
        const woken = await Promise.race([Promise.all(waiters), bound])
        assert.deepEqual(woken, [true, true, true, true, true], 'woken by the open message')
      } finally {
        await closeSlow()
      }
    })

    test('multi-lock: all or nothing, sorted, released together', async () => {
      const [a, b, c] = [key('ma'), key('mb'), key('mc')]
      const multi = client.multiLock([c, a, client.rlock(b)], { leaseMs: 5000 })
      assert.ok(multi instanceof MultiLock)
      assert.deepEqual(multi.names, [a, b, c].sort())
      const held = await multi.acquire()
      assert.ok(held instanceof MultiHeld)
      assert.deepEqual(held.names, [a, b, c].sort())
      assert.deepEqual(await Promise.all([a, b, c].map((k) => r.exists(k))), [1, 1, 1])
      // A set that overlaps in one member waits, and takes none of the others.
      const d = key('md')
      await assert.rejects(client.multiLock([d, c]).acquire({ waitMs: 50 }), NotAcquiredError)
      assert.equal(await r.exists(d), 0, 'nothing taken on a failure')
      await held.release()
      assert.deepEqual(await Promise.all([a, b, c].map((k) => r.exists(k))), [0, 0, 0])
      await client.multiLock([a, b]).using(async () => {
        assert.equal(await client.lock(a).locked(), true)
      })
      assert.equal(await client.lock(a).locked(), false)
    })

    test('multi-lock: bad sets are refused', () => {
      assert.throws(() => client.multiLock([]), InvalidArgumentError)
      assert.throws(() => client.multiLock('a'), InvalidArgumentError)
      assert.throws(() => client.multiLock([key(), '']), InvalidArgumentError)
      const n = key()
      assert.throws(() => client.multiLock([n, n]), InvalidArgumentError)
      assert.throws(() => client.multiLock([n, 42]), InvalidArgumentError)
    })

    test('3 processes taking overlapping sets in opposite orders finish with exact counters', async () => {
      const prefix = key('mcount')
      const [x, y, z] = [key('mx'), key('my'), key('mz')]
      const sets = [[x, y], [y, x], [z, y, x]]
      const ws = await workers(entry.name, 3)
      try {
        const rounds = await Promise.all(ws.map((w, i) => w.call('multiCount', { names: sets[i], prefix, rounds: 8 })))
        assert.deepEqual(rounds, [8, 8, 8])
        const counts = await Promise.all([x, y, z].map((n) => r.get(`${prefix}:${n}`)))
        assert.deepEqual(counts, ['24', '24', '8'])
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
        await r.del(...[x, y, z].map((n) => `${prefix}:${n}`))
      }
    })
  })
}
