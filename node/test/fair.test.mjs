// Fair locks (Redisson RFairLock), for both entries (issue #12 item 1): reentrant with the
// owners of rlock, granted in the order waiters queued across processes, and a waiter that
// gives up or dies never stalls the queue beyond its slot.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { FAMILY_ENTRIES as ENTRIES, QUORUM_URLS, key, redis, eventually } from './helpers.mjs'
import { workers } from './workers.mjs'

const r = redis()
after(() => r.quit())

/** Redisson's queue list of fair lock `name` (docs/family-protocol.md). */
const queueKey = (name) => `redisson_lock_queue:{${name}}`
const queued = (name) => r.llen(queueKey(name))

for (const entry of ENTRIES) {
  const { NotAcquiredError, InvalidArgumentError, Lock, Owner } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('a fair lock is a reentrant Lock of kind "fair", released by using and asyncDispose', async () => {
      const name = key('fair')
      const lock = client.fairLock(name, { leaseMs: 5000 })
      assert.ok(lock instanceof Lock)
      assert.equal(lock.kind, 'fair')
      assert.equal(lock.reentrant, true)
      assert.equal(String(lock), `Lock(fair ${JSON.stringify(name)})`)
      await lock.using(async () => {
        // Re-entry inside the scope, through another handle; Redis counts both holds.
        await client.fairLock(name).using(async () => {
          assert.equal(await client.fairLock(name).holdCount(), 2)
          const holds = Object.entries(await r.hgetall(name))
          assert.equal(holds.length, 1)
          assert.equal(holds[0][1], '2')
          assert.ok(holds[0][0].startsWith(`${client.id}:`))
        })
        // Another owner does not re-enter (it never queues either: waitMs 0).
        await assert.rejects(client.fairLock(name, { owner: new Owner() }).acquire({ waitMs: 0 }), NotAcquiredError)
      })
      assert.equal(await r.exists(name), 0)
      const held = await lock.acquire()
      assert.equal(await lock.locked(), true)
      await held[Symbol.asyncDispose]()
      assert.equal(await lock.locked(), false)
      assert.equal(await queued(name), 0)
    })

    test('waitMs: 0 never queues', async () => {
      const name = key('fair')
      const held = await client.fairLock(name).acquire()
      await assert.rejects(client.fairLock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      assert.equal(await queued(name), 0)
      await held.release()
    })

    test('20 waiters in 4 processes are granted in the order they queued', async () => {
      const name = key('fair-fifo')
      const log = key('fair-log')
      const ws = await workers(entry.name, 4)
      try {
        const holder = await client.fairLock(name).acquire()
        const labels = []
        for (let i = 0; i < 20; i++) {
          const label = `w${i}`
          labels.push(label)
          await ws[i % 4].call('queue', { kind: 'fair', name, log, label, holdMs: 2, acquire: { waitMs: 30_000 } })
          assert.ok(await eventually(async () => (await queued(name)) === i + 1, 5000), `${label} queued`)
        }
        await holder.release()
        assert.ok(await eventually(async () => (await r.llen(log)) === 20, 30_000), 'every waiter was granted')
        assert.deepEqual(await r.lrange(log, 0, -1), labels)
        assert.equal(await queued(name), 0)
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
        await r.del(log)
      }
    })

    test('a waiter killed in the queue stalls the next one at most its slot', async () => {
      const name = key('fair-dead')
      const [w] = await workers(entry.name, 1)
      try {
        const holder = await client.fairLock(name, { leaseMs: 2000 }).acquire()
        // The dead waiter's slot is its wait: 1500 ms after the holder's lease.
        await w.call('queue', { kind: 'fair', name, log: key('unused'), label: 'dead', acquire: { waitMs: 1500 } })
        assert.ok(await eventually(async () => (await queued(name)) === 1), 'the doomed waiter queued')
        const next = client.fairLock(name).acquire({ waitMs: 20_000 })
        assert.ok(await eventually(async () => (await queued(name)) === 2), 'the next waiter queued behind it')
        await w.kill()
        const t0 = performance.now()
        await holder.release()
        const held = await next
        const took = performance.now() - t0
        // Documented bound: the holder's lease left when the dead waiter joined + its slot.
        assert.ok(took < 2000 + 1500 + 2000, `the next waiter waited ${took.toFixed(0)} ms`)
        await held.release()
        assert.equal(await queued(name), 0)
      } finally {
        await w.stop()
      }
    })

    test('an aborted waiter leaves the queue at once, and the next one is granted on release', async () => {
      const name = key('fair-abort')
      const holder = await client.fairLock(name).acquire()
      const ac = new AbortController()
      const first = client.fairLock(name).acquire({ signal: ac.signal })
      assert.ok(await eventually(async () => (await queued(name)) === 1))
      const second = client.fairLock(name).acquire({ waitMs: 10_000 })
      assert.ok(await eventually(async () => (await queued(name)) === 2))
      ac.abort(new Error('gave up'))
      await assert.rejects(first, /gave up/)
      assert.ok(await eventually(async () => (await queued(name)) === 1), 'the aborted waiter left the queue')
      const t0 = performance.now()
      await holder.release()
      const held = await second
      assert.ok(performance.now() - t0 < 3000, 'granted without waiting for the aborted slot')
      await held.release()
      assert.equal(await queued(name), 0)
    })

    test('fair and read/write locks are refused on a quorum client', { skip: QUORUM_URLS.length < 3 }, async () => {
      const q = await entry.quorum(QUORUM_URLS)
      try {
        for (const lock of [q.client.fairLock(key()), q.client.rwLock(key()).read(), q.client.rwLock(key()).write()]) {
          await assert.rejects(lock.acquire({ waitMs: 0 }), (e) => e instanceof InvalidArgumentError && /single-node/.test(e.message))
        }
      } finally {
        await q.close()
      }
    })
  })
}
