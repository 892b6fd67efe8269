// Bad arguments, for both entries: each is an InvalidArgumentError (code ERR_INVALID_ARGUMENT)
// and touches nothing in Redis (shared/API.md "Durations", "Errors").
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { ENTRIES, key, redis } from './helpers.mjs'

const BAD_MS = [-1, -0.5, NaN, 1.5, 0.1, 2 ** 53, Number.MAX_VALUE, Infinity, -Infinity, '100', 10n, null, {}, true]

for (const entry of ENTRIES) {
  const { InvalidArgumentError, LockError } = entry.api

  function isInvalid(e) {
    assert.ok(e instanceof InvalidArgumentError, `expected InvalidArgumentError, got ${e && e.name}: ${e && e.message}`)
    assert.ok(e instanceof LockError)
    assert.equal(e.code, 'ERR_INVALID_ARGUMENT')
    assert.equal(e.status, 6)
    assert.ok(e.message.length > 0)
    return true
  }

  describe(`${entry.name} entry`, () => {
    let client, close
    const r = redis()
    before(async () => ({ client, close } = await entry.connect()))
    after(async () => {
      await close()
      r.quit()
    })

    test('bad lease durations', async () => {
      for (const leaseMs of [0, ...BAD_MS]) {
        const name = key('lease')
        assert.throws(() => client.lock(name, { leaseMs }), isInvalid, `leaseMs ${String(leaseMs)}`)
        await assert.rejects(client.withLock(name, async () => {}, { leaseMs }), isInvalid)
        assert.equal(await r.exists(name), 0)
      }
      // The largest valid value is accepted.
      client.lock(key(), { leaseMs: 2 ** 53 - 1 })
    })

    test('bad wait durations', async () => {
      for (const waitMs of BAD_MS) {
        if (waitMs === Infinity || waitMs === null) continue // forever / absent
        const name = key('wait')
        await assert.rejects(client.lock(name).acquire({ waitMs }), isInvalid, `waitMs ${String(waitMs)}`)
        await assert.rejects(client.lock(name).using(async () => {}, { waitMs }), isInvalid)
        await assert.rejects(client.withLock(name, async () => {}, { waitMs }), isInvalid)
        assert.throws(() => client.lock(name, { waitMs }), isInvalid)
        assert.equal(await r.exists(name), 0)
      }
    })

    test('bad extend leases', async () => {
      const held = await client.lock(key(), { leaseMs: 5000 }).acquire()
      for (const ms of [0, undefined, ...BAD_MS]) {
        await assert.rejects(held.extend(ms), isInvalid, `extend ${String(ms)}`)
      }
      await held.release()
    })

    test('bad names', async () => {
      // Lone surrogates have no UTF-8 form ('\ud800' and '\udfff' would both become U+FFFD).
      for (const name of ['', undefined, null, 42, {}, ['a'], Symbol('x'), 'x'.repeat(4097), '\ud800', 'a\udfffb']) {
        assert.throws(() => client.lock(name), isInvalid)
        assert.throws(() => client.rlock(name), isInvalid)
        // At the factory, as the others (a user trial of stop 44: rwLock threw at read()).
        assert.throws(() => client.rwLock(name), isInvalid)
        await assert.rejects(client.withLock(name, async () => {}), isInvalid)
        await assert.rejects(client.forceUnlock(name), isInvalid)
      }
    })

    test('bad options, functions and signals', async () => {
      const name = key()
      assert.throws(() => client.lock(name, 5), isInvalid)
      assert.throws(() => client.lock(name, null), isInvalid)
      assert.throws(() => client.lock(name, { leaseMS: 100 }), isInvalid, 'unknown option (typo)')
      assert.throws(() => client.lock(name, { fenced: 'yes' }), isInvalid)
      await assert.rejects(client.lock(name).acquire({ signal: {} }), isInvalid)
      await assert.rejects(client.lock(name).acquire({ signal: 'no' }), isInvalid)
      await assert.rejects(client.lock(name).acquire({ leaseMs: 5 }), isInvalid)
      await assert.rejects(client.lock(name).using('not a function'), isInvalid)
      await assert.rejects(client.withLock(name), isInvalid)
      await assert.rejects(client.withLock(name, async () => {}, { bogus: 1 }), isInvalid)
      // The latch takes only a name; its count was once silently ignored (a user trial).
      assert.throws(() => client.countDownLatch(name, { count: 3 }), isInvalid)
      assert.equal(await r.exists(name), 0)
    })
  })
}

// The core checks client options for both entries, so the words are the same too (a user trial
// found "watchdogTimeoutMs must be at least 3 ms" from the native entry and "watchdog timeout
// must be at least 3 ms" from the wasm one).
test('both entries refuse a client option with the same message', async () => {
  const messages = []
  for (const entry of ENTRIES) {
    const error = await entry.connect({ watchdogTimeoutMs: 2 }).then(
      ({ close }) => close().then(() => null),
      (e) => e,
    )
    assert.ok(error instanceof entry.api.InvalidArgumentError, `${entry.name}: ${error}`)
    messages.push(error.message)
  }
  assert.equal(new Set(messages).size, 1, messages.join(' / '))
})

// A Node family trial of stop 46: the local engine's one timer asked Node for more than
// 2^31 - 1 ms, which Node answers with a TimeoutOverflowWarning and a 1 ms timer. In a process
// of its own: here other clients' earlier timers would keep the long one from being armed.
test('a network timeout beyond 2^31 - 1 ms arms no overflowing timer', () => {
  const script = `
    const { Client } = await import(${JSON.stringify(import.meta.resolve('redlatch'))})
    const client = await Client.connect(process.env.REDLATCH_TEST_URL, { networkTimeoutMs: 2 ** 31 })
    const held = await client.fairLock(${JSON.stringify(key('big-timeout'))}).acquire()
    await held.release()
    await new Promise((resolve) => setTimeout(resolve, 50))
    await client.close()
  `
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(run.status, 0, run.stderr)
  assert.doesNotMatch(run.stderr, /TimeoutOverflowWarning/)
})
