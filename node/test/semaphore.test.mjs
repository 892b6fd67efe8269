// Semaphores (Redisson RSemaphore) and permit-expirable semaphores (RPermitExpirableSemaphore),
// for both entries (issue #13 items 2, 3): at most `permits` holders at any moment across
// processes, a handle releases only what it holds, permits of killed holders come back
// (permit semaphore), abort gives a pending grant back, bad input is refused untouched.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { FAMILY_ENTRIES as ENTRIES, QUORUM_URLS, key, redis, eventually } from './helpers.mjs'
import { workers } from './workers.mjs'
import v8 from 'node:v8'
import vm from 'node:vm'

v8.setFlagsFromString('--expose-gc')
const gc = vm.runInNewContext('gc')

const r = redis()
after(() => r.quit())

/** The most intervals `[start, end]` open at one moment (a sweep over their ends). */
function mostAtOnce(intervals) {
  const events = intervals.flatMap(([s, e]) => [[s, 1], [e, -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let most = 0
  for (const [, d] of events) most = Math.max(most, (open += d))
  return most
}

test('the sweep counts overlapping intervals', () => {
  assert.equal(mostAtOnce([[0, 10], [5, 15], [6, 7]]), 3)
  assert.equal(mostAtOnce([[0, 10], [10, 20]]), 1)
})

for (const entry of ENTRIES) {
  const { NotAcquiredError, NotOwnedError, InvalidArgumentError, Semaphore, PermitSemaphore, Permit } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('close() during a permit or multi-lock scope is a loss, as for a lock', async () => {
      // A Node family trial of stop 46: their `using` rejected RedisConnectionError where a
      // lock's rejects LockLostError, and their `lost` stayed false after close().
      const { LockLostError } = entry.api
      const { client: closing, close } = await entry.connect()
      const slow = () => new Promise((resolve) => setTimeout(resolve, 300, 'done'))
      const scopes = Promise.allSettled([
        closing.permitSemaphore(key('close-p'), { permits: 1 }).using(slow),
        closing.multiLock([key('close-m1'), key('close-m2')]).using(slow),
        closing.lock(key('close-l')).using(slow),
      ])
      const permit = await closing.permitSemaphore(key('close-p2'), { permits: 1 }).acquire()
      const multi = await closing.multiLock([key('close-m3')]).acquire()
      await new Promise((resolve) => setTimeout(resolve, 100))
      await close()
      assert.deepEqual([permit.lost, multi.lost], [true, true])
      for (const scope of await scopes) {
        assert.equal(scope.status, 'rejected', String(scope.value))
        assert.ok(scope.reason instanceof LockLostError && scope.reason.reason === 'deleted', String(scope.reason))
      }
    })

    test('a scope ending on a lost permit or multi-lock rejects LockLostError, once', async () => {
      // A Node family trial of stop 46: `await using` on a multi-lock whose lease ran out
      // resolved silently (release() rejected), as for a permit.
      const { LockLostError } = entry.api
      const permits = client.permitSemaphore(key('lost-permit'), { permits: 1 })
      const multi = client.multiLock([key('lost-ma'), key('lost-mb')], { leaseMs: 100 })
      const held = [await permits.acquire({ leaseMs: 100 }), await multi.acquire()]
      await new Promise((resolve) => setTimeout(resolve, 300))
      for (const h of held) {
        assert.equal(h.lost, true)
        await assert.rejects(h[Symbol.asyncDispose](), LockLostError)
        await h[Symbol.asyncDispose]() // released (given back) already: nothing to do
      }
      const other = await multi.acquire({ waitMs: 0 })
      await other.release()
      await other[Symbol.asyncDispose]() // released through the object: nothing to do
    })

    test('acquire, tryAcquire, release and available; a handle releases only what it holds', async () => {
      const name = key('sem')
      const sem = client.semaphore(name, { permits: 3 })
      assert.ok(sem instanceof Semaphore)
      assert.equal(await sem.available(), 3, 'the permits option set the count')
      assert.equal(await sem.trySetPermits(10), false, 'already set')
      await sem.acquire(2)
      assert.equal(sem.held, 2)
      assert.equal(await r.get(name), '1')
      assert.equal(await sem.tryAcquire(2), false)
      await assert.rejects(sem.acquire(2, { waitMs: 50 }), NotAcquiredError)
      const other = client.semaphore(name)
      await assert.rejects(other.release(), (e) => e instanceof NotOwnedError && e.reason === 'never_held')
      await assert.rejects(sem.release(3), (e) => e instanceof NotOwnedError && e.reason === 'never_held')
      assert.equal(await r.get(name), '1', 'the refused releases changed nothing')
      const waiter = other.acquire(2, { waitMs: 5000 })
      await sem.release(2)
      await waiter
      assert.deepEqual([sem.held, other.held, await other.available()], [0, 2, 1])
      const result = await other.using(async () => 'inside', { permits: 1 })
      assert.equal(result, 'inside')
      await other.release(2)
      assert.equal(await sem.available(), 3)
    })

    test('an aborted acquire rejects with the reason and takes nothing', async () => {
      const name = key('sem')
      const sem = client.semaphore(name, { permits: 1 })
      await sem.acquire()
      const ac = new AbortController()
      const pending = client.semaphore(name).acquire(1, { signal: ac.signal })
      setTimeout(() => ac.abort(new Error('stop')), 50)
      await assert.rejects(pending, /stop/)
      await sem.release()
      assert.ok(await eventually(async () => (await sem.available()) === 1), 'the permit is back')
    })

    test('an acquire whose signal had aborted writes nothing, not even the permits option', async () => {
      // A user trial of stop 44: the lazy set of the `permits` option ran first, whatever
      // the signal said (and held up an abort for as long as Redis did).
      const name = key('sem-pre')
      const reason = new Error('stop')
      const ctl = new AbortController()
      ctl.abort(reason)
      await assert.rejects(client.semaphore(name, { permits: 2 }).acquire(1, { signal: ctl.signal }), (e) => e === reason)
      const permits = client.permitSemaphore(`${name}:p`, { permits: 2 })
      await assert.rejects(permits.acquire({ signal: ctl.signal }), (e) => e === reason)
      assert.deepEqual(await r.keys(`*${name}*`), [])
    })

    test('the permits option is set within the acquire\'s wait, through a pause longer than the network timeout', async () => {
      // A Node family trial of stop 46: the facade set `permits` by a call of its own before
      // the acquire, which a Redis paused past the network timeout rejected at once with
      // RedisConnectionError, although the acquire could wait 10 s. The core's acquire sets
      // them now, retrying within its wait as it retries its own request.
      const own = await entry.connect({ networkTimeoutMs: 300 })
      try {
        const name = key('sem-init-paused')
        const sem = own.client.semaphore(name, { permits: 2 })
        const permits = own.client.permitSemaphore(`${name}:p`, { permits: 2 })
        await r.call('CLIENT', 'PAUSE', '1200')
        const [, permit] = await Promise.all([sem.acquire(1, { waitMs: 10000 }), permits.acquire({ waitMs: 10000 })])
        assert.equal(sem.held, 1)
        await permit.release()
        await sem.release()
        assert.deepEqual([await r.get(name), await r.get(`${name}:p`)], ['2', '2'])
      } finally {
        await own.close()
      }
    })

    test('bad input is refused before anything reaches Redis', async () => {
      const name = key('sem-bad')
      const sem = client.semaphore(name)
      for (const n of [0, -1, 1.5, 2 ** 31, NaN, '1']) {
        await assert.rejects(sem.trySetPermits(n), InvalidArgumentError, String(n))
        await assert.rejects(sem.acquire(n), InvalidArgumentError, String(n))
        await assert.rejects(sem.release(n), InvalidArgumentError, String(n))
      }
      assert.throws(() => client.semaphore(''), InvalidArgumentError)
      assert.throws(() => client.semaphore(name, { permits: 0 }), InvalidArgumentError)
      assert.throws(() => client.semaphore(name, { permit: 1 }), InvalidArgumentError)
      const ps = client.permitSemaphore(name)
      await assert.rejects(ps.release('not-an-id'), InvalidArgumentError)
      await assert.rejects(ps.release(5), /a Permit is released with permit\.release\(\)/)
      await assert.rejects(ps.acquire({ leaseMs: 0 }), InvalidArgumentError)
      assert.equal(await r.exists(name), 0, 'nothing was written')
    })

    test('4 processes on 2 permits: never more than 2 holders at once', async () => {
      const name = key('sem-pool')
      const log = key('sem-log')
      const ws = await workers(entry.name, 4)
      try {
        const held = await Promise.all(ws.map((w) => w.call('semIntervals', { name, permits: 2, rounds: 8, holdMs: 10, log })))
        assert.deepEqual(held, [0, 0, 0, 0])
        const intervals = (await r.lrange(log, 0, -1)).map((x) => JSON.parse(x))
        assert.equal(intervals.length, 32)
        assert.ok(mostAtOnce(intervals) <= 2, `${mostAtOnce(intervals)} holders at once`)
        assert.equal(await client.semaphore(name).available(), 2)
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
        await r.del(log)
      }
    })

    test('permit semaphore: ids, release by id, leases; a dead holder\'s permit comes back', async () => {
      const name = key('permits')
      const ps = client.permitSemaphore(name, { permits: 2 })
      assert.ok(ps instanceof PermitSemaphore)
      const p = await ps.acquire({ leaseMs: 5000 })
      assert.ok(p instanceof Permit)
      assert.match(p.id, /^[0-9a-f]{32}$/)
      assert.deepEqual([p.leaseMs, p.renewed], [5000, false])
      assert.equal(await ps.available(), 1)
      await ps.release(p.id)
      // Released by id, not through this object: it finds its permit gone ('never_held' until
      // stop 35, which means released through it).
      await assert.rejects(p.release(), (e) => e instanceof NotOwnedError && e.reason === 'deleted')
      // Worded as the core words it in both entries (the native one said "this permit was
      // already released" without the name until stop 49).
      const already = (e) => e instanceof NotOwnedError && e.reason === 'never_held' &&
        e.message.includes(`permit of semaphore ${JSON.stringify(name)} was already released`)
      await assert.rejects(p.release(), already)
      await assert.rejects(p.release(), already)
      await assert.rejects(ps.release('0'.repeat(32)), (e) => e instanceof NotOwnedError)
      assert.equal(await ps.available(), 2)
      {
        const w = await ps.acquire()
        assert.equal(w.renewed, true, 'no lease: renewed by the watchdog')
        await w[Symbol.asyncDispose]()
      }
      assert.equal(await ps.available(), 2, 'asyncDispose released it')
      assert.equal(await ps.tryAcquire({ leaseMs: 1 }).then((x) => x !== null), true)
      assert.ok(await eventually(async () => (await ps.available()) === 2, 3000), 'a 1 ms lease came back by itself')

      // Two holders in other processes, in watchdog mode (1500 ms), killed.
      const ws = await workers(entry.name, 2, { watchdogTimeoutMs: 1500 })
      try {
        await Promise.all(ws.map((w) => w.call('permitHold', { name, as: 'p' })))
        assert.equal(await ps.available(), 0)
        assert.equal(await ps.tryAcquire(), null)
        await Promise.all(ws.map((w) => w.kill()))
        assert.ok(await eventually(async () => (await ps.available()) === 2, 6000), 'the dead holders\' permits came back')
        const both = await Promise.all([ps.acquire({ waitMs: 0 }), ps.acquire({ waitMs: 0 })])
        await Promise.all(both.map((x) => x.release()))
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
      }
    })

    test('a renewed permit taken away is reported lost, and its release rejects', async () => {
      // A user trial of stop 44: a Permit had no `lost`, so a holder whose permit was
      // given back (its renewals refused until its lease ran out) could not know.
      const { client: renewing, close: closeRenewing } = await entry.connect({ watchdogTimeoutMs: 300 })
      try {
        const name = key('ps-lost')
        const permit = await renewing.permitSemaphore(name, { permits: 1 }).acquire()
        assert.equal(permit.lost, false)
        await client.permitSemaphore(name).release(permit.id)
        assert.ok(await eventually(() => permit.lost, 3000), 'a renewal found it gone')
        await assert.rejects(permit.release(), NotOwnedError)
      } finally {
        await closeRenewing()
      }
    })

    test('a collected Permit with a lease stays taken until released by id', async () => {
      // A user trial of stop 38: keeping only the id (the Redisson way to hand a permit over)
      // and letting the Permit be collected gave the permit back; a second holder got in.
      const name = key('permit-gc')
      const ps = client.permitSemaphore(name, { permits: 1 })
      const id = (await ps.acquire({ leaseMs: 60_000 })).id
      // Past lib/deferred-registry.mjs' 500 ms, when collected holds are finalized.
      for (let i = 0; i < 8; i++) {
        gc()
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.equal(await ps.available(), 0)
      assert.equal(await ps.tryAcquire({ leaseMs: 5_000 }), null)
      await ps.release(id)
      assert.equal(await ps.available(), 1)
    })

    test('client.close() gives back held permits, a semaphore handle\'s and multi-lock members; later calls reject', async () => {
      const { RedisConnectionError } = entry.api
      const name = key('close-permits')
      const [a, b] = [key('close-a'), key('close-b')]
      const own = await entry.connect({ watchdogTimeoutMs: 30_000 })
      const ps = own.client.permitSemaphore(name, { permits: 1 })
      const permit = await ps.acquire()
      const multi = await own.client.multiLock([a, b]).acquire()
      const counted = own.client.semaphore(`${name}:sem`, { permits: 3 })
      await counted.acquire(2)
      assert.equal(await client.semaphore(`${name}:sem`).available(), 1)
      assert.equal(await client.permitSemaphore(name).available(), 0)
      assert.equal(await r.exists(a), 1)
      await own.close()
      // Released by close(), not left to their watchdog-renewed leases (30 s).
      assert.equal(await client.permitSemaphore(name).available(), 1)
      assert.deepEqual([await r.exists(a), await r.exists(b)], [0, 0])
      // A semaphore handle's count too (found by a user trial: left taken for good, the count
      // has no TTL, and the closed client could no longer release them).
      assert.equal(await client.semaphore(`${name}:sem`).available(), 3)
      assert.equal(counted.held, 0)
      await assert.rejects(counted.release(2), RedisConnectionError)
      await assert.rejects(permit.release(), RedisConnectionError)
      await assert.rejects(multi.release(), RedisConnectionError)
      await assert.rejects(ps.available(), RedisConnectionError)
    })

    test('client.close() gives back the permits of a semaphore handle collected while holding them', async () => {
      // A user trial of stop 44: a handle collected while it counted permits left them taken
      // even after close(), and no other handle could release them.
      const name = key('close-collected')
      const own = await entry.connect()
      await (async () => {
        const sem = own.client.semaphore(name, { permits: 3 })
        await sem.acquire(2)
      })()
      for (let i = 0; i < 8; i++) {
        gc()
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.equal(await client.semaphore(name).available(), 1, 'taken while the client lives')
      await own.close()
      assert.equal(await client.semaphore(name).available(), 3, 'given back at close')
    })

    test('semaphores are refused on a quorum client', { skip: QUORUM_URLS.length < 3 }, async () => {
      const q = await entry.quorum(QUORUM_URLS)
      try {
        await assert.rejects(q.client.semaphore(key()).available(), InvalidArgumentError)
        await assert.rejects(q.client.permitSemaphore(key()).available(), InvalidArgumentError)
        await assert.rejects(q.client.countDownLatch(key()).count(), InvalidArgumentError)
      } finally {
        await q.close()
      }
    })
  })
}
