// Read/write locks (Redisson RReadWriteLock), for both entries (issue #12 item 2): readers
// overlap, a writer overlaps nothing (an interval log from several processes, checked), a
// dead reader's hold expires on its own while other readers keep theirs, the writer may take
// the read lock, and a read-to-write upgrade is refused at once with WouldDeadlockError.
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { FAMILY_ENTRIES as ENTRIES, key, redis, eventually } from './helpers.mjs'
import { workers } from './workers.mjs'

const r = redis()
after(() => r.quit())

/** The per-hold timeout keys of the read holds of `name` (Redisson's layout). */
async function readHoldKeys(name) {
  const found = []
  let cursor = '0'
  do {
    const [next, keys] = await r.scan(cursor, 'MATCH', `{${name}}:*:rwlock_timeout:*`, 'COUNT', 1000)
    cursor = next
    found.push(...keys)
  } while (cursor !== '0')
  return found
}

/** Pairs of logged `[start, end, mode, pid]` intervals that break "many readers or one writer". */
function violations(intervals) {
  const bad = []
  const sorted = [...intervals].sort((a, b) => a[0] - b[0])
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && sorted[j][0] < sorted[i][1]; j++) {
      if (sorted[i][2] === 'write' || sorted[j][2] === 'write') bad.push([sorted[i], sorted[j]])
    }
  }
  return bad
}

test('the interval checker finds a writer overlapping a reader, and accepts readers together', () => {
  assert.equal(violations([[0, 10, 'read'], [5, 15, 'read'], [20, 30, 'write']]).length, 0)
  assert.equal(violations([[0, 10, 'read'], [5, 15, 'write']]).length, 1)
  assert.equal(violations([[0, 10, 'write'], [10, 15, 'write']]).length, 0)
})

for (const entry of ENTRIES) {
  const { NotAcquiredError, WouldDeadlockError, Lock, RwLock, Owner } = entry.api

  describe(`${entry.name} entry`, () => {
    let client, close
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
    })

    test('read and write are Locks of their kind, with the rwLock options as defaults', async () => {
      const name = key('rw')
      const rw = client.rwLock(name, { leaseMs: 4000 })
      assert.ok(rw instanceof RwLock)
      assert.equal(rw.name, name)
      const read = rw.read()
      const write = rw.write({ waitMs: 0 })
      assert.ok(read instanceof Lock && write instanceof Lock)
      assert.deepEqual([read.kind, write.kind, read.reentrant], ['read', 'write', true])
      const held = await read.acquire()
      assert.equal(held.leaseMs, 4000, 'the rwLock lease is the default')
      assert.equal(await r.hget(name, 'mode'), 'read')
      await assert.rejects(write.acquire(), NotAcquiredError, 'a writer of another owner waits for the reader')
      await held.release()
      assert.equal(await r.exists(name), 0)
    })

    test('fenced given to the rwLock fences the write side only; fenced on the read side is refused', async () => {
      // A user trial of stop 39: the rwLock's `fenced` default reached the read side, whose
      // acquire then rejected, where Python fences the write side only.
      const name = key('rw')
      const rw = client.rwLock(name, { fenced: true })
      const read = await rw.read().acquire({ waitMs: 0 })
      assert.equal(read.fencingToken, null)
      await read.release()
      const write = await rw.write().acquire({ waitMs: 0 })
      assert.equal(typeof write.fencingToken, 'number')
      await write.release()
      assert.throws(() => rw.read({ fenced: true }), entry.api.InvalidArgumentError)
      assert.equal(await r.exists(name), 0)
    })

    test('readers of separate owners share the lock; a writer excludes them', async () => {
      const name = key('rw')
      const a = await client.rwLock(name).read().acquire()
      const b = await client.rwLock(name).read().acquire({ waitMs: 0 })
      assert.equal((await readHoldKeys(name)).length, 2)
      await assert.rejects(client.rwLock(name).write().acquire({ waitMs: 100 }), NotAcquiredError)
      await a.release()
      await b.release()
      const w = await client.rwLock(name).write().acquire({ waitMs: 0 })
      assert.equal(await r.hget(name, 'mode'), 'write')
      await assert.rejects(client.rwLock(name).read().acquire({ waitMs: 100 }), NotAcquiredError)
      await w.release()
      assert.equal(await r.exists(name), 0)
    })

    test('the writer may take the read lock inside its scope', async () => {
      const name = key('rw')
      const rw = client.rwLock(name)
      await rw.write().using(async () => {
        const h = await rw.read().acquire({ waitMs: 0 })
        // One owner, both holds: the writer's field `<owner>:write` and its read field.
        const fields = await r.hgetall(name)
        assert.equal(fields.mode, 'write')
        const owners = Object.keys(fields).filter((f) => f !== 'mode')
        assert.equal(owners.length, 2)
        const writer = owners.find((f) => f.endsWith(':write'))
        assert.ok(writer && owners.includes(writer.slice(0, -':write'.length)), JSON.stringify(fields))
        assert.equal(await rw.read().holdCount(), 1, "the writer's read hold counts in write mode")
        assert.equal(await rw.write().holdCount(), 1)
        await h.release()
        assert.equal(await r.hget(name, 'mode'), 'write', 'the read release left the write hold')
      })
      assert.equal(await r.exists(name), 0)
    })

    test('a read-to-write upgrade is refused at once with WouldDeadlockError, nothing changed', async () => {
      const name = key('rw')
      const rw = client.rwLock(name)
      await rw.read().using(async () => {
        const before = await r.hgetall(name)
        const t0 = performance.now()
        // Waits forever by default: Redisson would deadlock here.
        const err = await rw.write().acquire().catch((e) => e)
        assert.ok(err instanceof WouldDeadlockError, String(err))
        assert.equal(err.code, 'ERR_WOULD_DEADLOCK')
        assert.equal(err.status, 12)
        assert.ok(performance.now() - t0 < 2000, 'refused at once')
        assert.deepEqual(await r.hgetall(name), before)
      })
      // The same with an explicit owner, outside any scope.
      const owner = new Owner()
      const held = await client.rwLock(name, { owner }).read().acquire()
      await assert.rejects(client.rwLock(name, { owner }).write().acquire(), WouldDeadlockError)
      await held.release()
      assert.equal(await r.exists(name), 0)
    })

    test('a crashed reader\'s hold expires while other readers keep theirs', async () => {
      const name = key('rw-crash')
      // The child's watchdog lease is 1500 ms: its read hold expires that long after it dies.
      const [w] = await workers(entry.name, 1, { watchdogTimeoutMs: 1500 })
      const mine = await client.rwLock(name).read().acquire()
      try {
        await w.call('hold', { kind: 'read', name, as: 'r' })
        assert.equal((await readHoldKeys(name)).length, 2)
        await w.kill()
        assert.ok(await eventually(async () => (await readHoldKeys(name)).length === 1, 6000), 'the dead reader expired')
        assert.equal(await mine.owned(), true, 'the live reader keeps its hold')
        assert.equal(await r.hget(name, 'mode'), 'read')
        await assert.rejects(client.rwLock(name).write().acquire({ waitMs: 0 }), NotAcquiredError)
      } finally {
        await mine.release()
        await w.stop()
      }
      const wr = await client.rwLock(name).write().acquire({ waitMs: 0 })
      await wr.release()
    })

    test('3 processes of readers and writers: readers overlap, writers overlap nothing', async () => {
      const name = key('rw-log')
      const log = key('rw-intervals')
      const ws = await workers(entry.name, 3)
      try {
        const modes = [['read', 'read', 'write'], ['read', 'write', 'read'], ['write', 'read', 'read']]
        const counts = await Promise.all(
          ws.map((w, i) => w.call('intervals', { name, log, rounds: 9, modes: modes[i], holdMs: 15, lock: { waitMs: 30_000 } })),
        )
        assert.deepEqual(counts, [9, 9, 9])
        const intervals = (await r.lrange(log, 0, -1)).map((x) => JSON.parse(x))
        assert.equal(intervals.length, 27)
        assert.deepEqual(violations(intervals), [])
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
        await r.del(log)
      }
      assert.equal(await r.exists(name), 0)
    })

    test('readers in several processes hold at the same time', async () => {
      const name = key('rw-share')
      const ws = await workers(entry.name, 3)
      try {
        // Each holds until told to release: all three are in at once.
        const at = await Promise.all(ws.map((w) => w.call('hold', { kind: 'read', name, as: 'r', acquire: { waitMs: 5000 } })))
        assert.equal(at.length, 3)
        assert.equal((await readHoldKeys(name)).length, 3)
        await Promise.all(ws.map((w) => w.call('release', { as: 'r' })))
      } finally {
        await Promise.all(ws.map((w) => w.stop()))
      }
      assert.equal(await r.exists(name), 0)
    })
  })
}
