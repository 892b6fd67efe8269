// Interop with the `redlock` npm package (v5, over ioredis) on the same keys, both ways and for
// both entries: redlatch lease locks use the same wire format (shared/WIRE.md), so each
// excludes the other.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import Redlock from 'redlock'
import { ENTRIES, QUORUM_URLS, key, redis, sleep } from './helpers.mjs'

const r = redis()
const redlock = new Redlock([r], { retryCount: 0 })
after(() => r.quit())

for (const entry of ENTRIES) {
  const { NotAcquiredError } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('redlatch holds: redlock cannot acquire, then can after the release', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 5000 }).acquire()
      await assert.rejects(redlock.acquire([name], 5000))
      await held.release()
      const theirs = await redlock.acquire([name], 5000)
      await theirs.release()
    })

    test('redlock holds: redlatch waits, and gets it soon after redlock releases', async () => {
      const name = key()
      const theirs = await redlock.acquire([name], 5000)
      await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      await assert.rejects(client.lock(name).acquire({ waitMs: 100 }), NotAcquiredError)
      const waiting = client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 5000 })
      await sleep(100)
      const t0 = performance.now()
      await theirs.release() // redlock does not publish: the waiter's poll notices
      const held = await waiting
      const took = performance.now() - t0
      assert.ok(took < 500, `took ${took.toFixed(0)} ms`)
      // redlatch's value is a token in the same format redlock compares against.
      assert.match(await r.get(name), /^[0-9a-f]{32,}$/)
      await held.release()
    })

    test('redlatch can extend and release only its own value; redlock likewise', async () => {
      const name = key()
      const held = await client.lock(name, { leaseMs: 5000 }).acquire()
      const fake = { resources: [name], value: 'not-the-token', attempts: [], expiration: Date.now() + 1000 }
      await assert.rejects(redlock.release(fake, { retryCount: 0 }))
      assert.equal(await r.exists(name), 1)
      await held.release()
      const theirs = await redlock.acquire([name], 5000)
      await client.forceUnlock(name)
      await assert.rejects(theirs.extend(5000))
    })

    test('mixed contenders keep a counter exact', async () => {
      const name = key()
      const counter = key('counter')
      const patient = new Redlock([r], { retryCount: -1, retryDelay: 5, retryJitter: 5 })
      const step = async () => {
        const v = Number((await r.get(counter)) ?? 0)
        await sleep(1)
        await r.set(counter, String(v + 1))
      }
      const ours = async () => {
        for (let i = 0; i < 15; i++) await client.withLock(name, step, { leaseMs: 5000 })
      }
      const theirs = async () => {
        for (let i = 0; i < 15; i++) await patient.using([name], 5000, step)
      }
      await Promise.all([ours(), ours(), theirs(), theirs()])
      assert.equal(Number(await r.get(counter)), 60)
      await r.del(counter)
    })

    test('quorum: redlock over the same nodes and redlatch exclude each other', { skip: QUORUM_URLS.length < 3 }, async () => {
      const nodes = QUORUM_URLS.map((u) => redis(u))
      const { client: q, close: closeQuorum } = await entry.quorum(QUORUM_URLS)
      try {
        const rl = new Redlock(nodes, { retryCount: 0 })
        const name = key()
        const held = await q.lock(name, { leaseMs: 5000 }).acquire()
        await assert.rejects(rl.acquire([name], 5000))
        await held.release()
        const theirs = await rl.acquire([name], 5000)
        await assert.rejects(q.lock(name).acquire({ waitMs: 100 }), NotAcquiredError)
        await theirs.release()
        const again = await q.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 2000 })
        await again.release()
      } finally {
        await closeQuorum()
        for (const n of nodes) n.quit()
      }
    })
  })
}
