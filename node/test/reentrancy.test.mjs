// rlock owners, for both entries (shared/API.md, Node: mutual exclusion over convenience):
// holds re-enter only for one owner: an explicit Owner, or the rlock using() scope the
// code runs in (Redis counts the holds); a bare acquire() is an owner of its own, and
// separate scopes contend.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import path from 'node:path'
import { ENTRIES, key, redis, sleep } from './helpers.mjs'

/** The entries' cores, as the entries loaded them (same module instances): their `newOwner`. */
const require = createRequire(import.meta.url)
const packageDir = path.dirname(require.resolve('redlatch/package.json'))
const cores = {
  native: () => require(path.join(packageDir, 'index.js')),
  wasm: () => require(path.join(packageDir, 'wasm', 'nodejs', 'redlatch_wasm.js')),
}

const r = redis()
after(() => r.quit())

/** The owner ids and hold counts of a Redisson RLock hash. */
async function holders(name) {
  return r.hgetall(name)
}

for (const entry of ENTRIES) {
  const { NotAcquiredError, Owner } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('a nested rlock in a using() scope re-enters, through any handle', async () => {
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

    test("a scope re-enters only its own lock: its branches contend for another; a nested scope of that one re-enters both", async () => {
      // A user trial of stop 45: inside rlock(A).using(), two branches that each acquired
      // rlock(B) were both granted (every name used the scope's owner).
      const [a, b] = [key(), key()]
      let inside = 0
      let most = 0
      await client.rlock(a).using(async () => {
        await Promise.all(
          [1, 2].map(async () => {
            const held = await client.rlock(b).acquire({ waitMs: 5000 })
            inside++
            most = Math.max(most, inside)
            await sleep(50)
            inside--
            await held.release()
          }),
        )
        await client.rlock(b).using(async () => {
          const again = await client.rlock(b, { waitMs: 0 }).acquire()
          assert.equal(await client.rlock(b).holdCount(), 2)
          const outer = await client.rlock(a, { waitMs: 0 }).acquire()
          assert.equal(await client.rlock(a).holdCount(), 2)
          await outer.release()
          await again.release()
        })
      })
      assert.equal(most, 1, 'one branch at a time in B')
      assert.deepEqual([await r.exists(a), await r.exists(b)], [0, 0])
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

    test("work a scope awaits or starts, while it holds, is the scope's owner", async () => {
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

    test('a bare acquire() is its own owner: a task started later by the same caller waits (issue #10 item 4)', async () => {
      // The reproduction: X holds through a bare acquire(); the caller that started
      // X asks for the same rlock while X holds it. It must not re-enter X's hold.
      const name = key()
      const l = client.rlock(name)
      const X = (async () => {
        const h = await l.acquire()
        await sleep(60)
        await h.release()
      })()
      await sleep(10)
      const err = await client.rlock(name).acquire({ waitMs: 0 }).then(
        (h) => h.release().then(() => null),
        (e) => e,
      )
      assert.ok(err instanceof NotAcquiredError, `two tasks held the lock at once (${err})`)
      await X
      assert.equal(await r.exists(name), 0)
    })

    test('a bare acquire() never re-enters, not even for the code that made it', async () => {
      const name = key()
      const lock = client.rlock(name)
      const held = await lock.acquire()
      await assert.rejects(lock.acquire({ waitMs: 0 }), NotAcquiredError)
      await assert.rejects(client.rlock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      assert.equal(await lock.holdCount(), 0, 'no scope, no explicit owner: nobody to count for')
      assert.deepEqual(Object.values(await holders(name)), ['1'])
      await held.release()
      assert.equal(await r.exists(name), 0)
      // Two pending acquires of one caller contend too.
      const both = await Promise.allSettled([lock.acquire({ waitMs: 200 }), lock.acquire({ waitMs: 200 })])
      assert.deepEqual(both.map((b) => b.status).sort(), ['fulfilled', 'rejected'])
      await both.find((b) => b.status === 'fulfilled').value.release()
    })

    test('an explicit Owner shares holds deliberately; other owners contend', async () => {
      const name = key()
      const owner = new Owner()
      const a = await client.rlock(name, { owner }).acquire()
      // From an unrelated task, through another handle with the same Owner: re-enters.
      const b = await (async () => client.rlock(name, { owner, waitMs: 0 }).acquire())()
      const owners = Object.entries(await holders(name))
      assert.deepEqual(owners.map(([, n]) => n), ['2'])
      assert.ok(owners[0][0].startsWith(`${client.id}:`))
      assert.equal(await client.rlock(name, { owner }).holdCount(), 2)
      await assert.rejects(client.rlock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      await assert.rejects(client.rlock(name, { owner: new Owner() }).acquire({ waitMs: 0 }), NotAcquiredError)
      // A scope of that owner is that owner too: code it runs re-enters through any handle.
      await client.rlock(name, { owner }).using(async () => {
        assert.equal(await client.rlock(name).holdCount(), 3)
        const c = await client.rlock(name, { waitMs: 0 }).acquire()
        assert.equal(await client.rlock(name, { owner }).holdCount(), 4)
        await c.release()
      })
      await b.release()
      await a.release()
      assert.equal(await r.exists(name), 0)
    })

    test('owner is for rlocks only, and must be an Owner', () => {
      const { InvalidArgumentError } = entry.api
      assert.throws(() => client.lock(key(), { owner: new Owner() }), InvalidArgumentError)
      for (const owner of [{}, 1, 'me', null]) {
        assert.throws(() => client.rlock(key(), { owner }), InvalidArgumentError, String(owner))
      }
    })

    test('a scope is joined only while it holds: tasks it started that ask later get owners of their own', async () => {
      const name = key()
      let late
      await client.rlock(name).using(async () => {
        late = (async () => {
          await sleep(80)
          // The scope ended meanwhile, and someone else holds the lock now.
          return client.rlock(name).acquire({ waitMs: 0 }).then(
            (h) => h.release().then(() => 'joined a finished scope'),
            (e) => e,
          )
        })()
      })
      const other = await client.rlock(name).acquire()
      const outcome = await late
      assert.ok(outcome instanceof NotAcquiredError, String(outcome))
      await other.release()
    })

    test('a scope that ended is not joined even while a hold taken inside it is still held', async () => {
      // A user trial: a task started in the scope re-entered and kept its hold past the
      // scope's end; a timer the scope had set then re-entered too, after the end.
      const name = key()
      let background, late
      await client.rlock(name).using(async () => {
        background = (async () => {
          const h = await client.rlock(name).acquire({ waitMs: 0 }) // inside the scope: re-enters
          await sleep(300)
          await h.release()
        })()
        late = new Promise((resolve) => {
          setTimeout(() => {
            client
              .rlock(name)
              .acquire({ waitMs: 50 })
              .then(
                (h) => h.release().then(() => resolve('re-entered after the scope ended')),
                resolve,
              )
          }, 100)
        })
        await sleep(10)
      })
      const outcome = await late
      assert.ok(outcome instanceof NotAcquiredError, String(outcome))
      await background
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

    test("owner numbers are the core's: drawn from its one owner space", async () => {
      // With both entries loaded (as here), the facade draws from the core installed first.
      const spaces = Object.values(cores).map((core) => core())
      const name = key()
      const first = spaces.map((core) => core.newOwner())
      const held = await client.rlock(name).acquire()
      const next = spaces.map((core) => core.newOwner())
      const [field] = Object.keys(await holders(name))
      const owner = Number(field.slice(field.lastIndexOf(':') + 1))
      assert.ok(
        spaces.some((_, i) => first[i] < owner && owner < next[i]),
        `owner ${owner} drawn between ${first} and ${next}`,
      )
      await held.release()
    })
  })
}
