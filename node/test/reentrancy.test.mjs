// rlock reentrancy, for both entries: nested uses in one async call chain re-enter (Redis counts
// the holds), separate chains contend.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { ENTRIES, key, redis, sleep } from './helpers.mjs'

const r = redis()
after(() => r.quit())

/** The owner ids and hold counts of a Redisson RLock hash. */
async function holders(name) {
  return r.hgetall(name)
}

for (const entry of ENTRIES) {
  const { NotAcquiredError } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('a nested rlock in the same chain re-enters, through any handle', async () => {
      const name = key()
      await client.rlock(name).using(async () => {
        assert.equal(await client.rlock(name).holdCount(), 1)
        await client.rlock(name).using(async () => {
          // A different handle, deeper in the same chain.
          const h = await client.rlock(name, { waitMs: 0 }).acquire()
          assert.equal(await client.rlock(name).holdCount(), 3)
          const owners = Object.entries(await holders(name))
          assert.equal(owners.length, 1)
          assert.equal(owners[0][1], '3')
          assert.ok(owners[0][0].startsWith(client.id + ':'))
          await h.release()
        })
        assert.equal(await client.rlock(name).holdCount(), 1)
      })
      assert.equal(await r.exists(name), 0)
    })

    test('separate chains contend', async () => {
      const name = key()
      const order = []
      const a = client.rlock(name).using(async () => {
        order.push('a-in')
        await sleep(200)
        order.push('a-out')
      })
      await sleep(20)
      const b = client.rlock(name).using(async () => {
        order.push('b-in')
      })
      const c = client.rlock(name).using(async () => {}, { waitMs: 50 })
      await assert.rejects(c, NotAcquiredError)
      await Promise.all([a, b])
      assert.deepEqual(order, ['a-in', 'a-out', 'b-in'])
    })

    test('branches started together, each with acquire(), contend', async () => {
      // acquire() enters its owner into the caller's synchronous code too, so branch 2 starts
      // while branch 1's owner is current but not yet granted: it must not join it (found by a
      // trial: all four were inside at once).
      const name = key()
      let inside = 0
      let most = 0
      await Promise.all(
        [1, 2, 3, 4].map(async () => {
          const held = await client.rlock(name).acquire({ waitMs: 5000 })
          inside++
          most = Math.max(most, inside)
          await sleep(30)
          inside--
          await held.release()
        }),
      )
      assert.equal(most, 1)
      assert.equal(await r.exists(name), 0)
    })

    test('work started inside a hold inherits the owner', async () => {
      const name = key()
      await client.rlock(name).using(async () => {
        const children = await Promise.all(
          [1, 2, 3].map(async (i) => {
            await sleep(i * 5)
            return client.rlock(name).using(async () => client.rlock(name).holdCount(), { waitMs: 0 })
          }),
        )
        assert.ok(children.every((n) => n >= 2))
        await new Promise((resolve, reject) => {
          setTimeout(() => {
            client
              .rlock(name)
              .using(async () => {}, { waitMs: 0 })
              .then(resolve, reject)
          }, 5)
        })
      })
      assert.equal(await r.exists(name), 0)
    })

    test('acquire() makes the caller the owner until it releases', async () => {
      const name = key()
      const held = await client.rlock(name).acquire()
      // Later code in this chain re-enters...
      const again = await client.rlock(name).acquire({ waitMs: 0 })
      assert.deepEqual(Object.values(await holders(name)), ['2'])
      await again.release()
      await held.release()
      assert.equal(await r.exists(name), 0)
      // ...and after the release, this chain's later rlocks are fresh owners again, so two
      // concurrent tasks started from here contend instead of sharing a stale owner.
      const blocker = await client.rlock(name).acquire()
      const contender = (async () => client.rlock(name).acquire({ waitMs: 50 }))()
      // Still in the holding chain: a direct acquire here re-enters...
      const reenter = await client.rlock(name).acquire({ waitMs: 0 })
      await reenter.release()
      // ...but the task started before is also in this chain; it re-entered too.
      const c = await contender
      await c.release()
      await blocker.release()
      assert.equal(await r.exists(name), 0)

      // Released chain + two fresh tasks: they contend.
      const t1 = (async () => client.rlock(name).using(() => sleep(150)))()
      await sleep(20)
      const t2 = (async () => client.rlock(name).using(async () => {}, { waitMs: 30 }))()
      await assert.rejects(t2, NotAcquiredError)
      await t1
    })

    test('lease locks are never reentrant: a second acquire contends', async () => {
      const name = key()
      await client.lock(name, { leaseMs: 5000 }).using(async () => {
        await assert.rejects(client.lock(name).acquire({ waitMs: 50 }), NotAcquiredError)
      })
    })

    test('rlock hold counts decrement once per release', async () => {
      const name = key()
      const lock = client.rlock(name, { leaseMs: 5000 })
      await lock.using(async () => {
        const a = await lock.acquire()
        const b = await lock.acquire()
        assert.equal(await lock.holdCount(), 3)
        await b.release()
        await a.release()
        assert.equal(await lock.holdCount(), 1)
      })
      assert.equal(await lock.locked(), false)
    })
  })
}
