// A hold released through its handle stops being watched for garbage collection (lib/engine.mjs,
// src/held.rs): the registry's callbacks for released holds used to run all at once after a
// major collection, 16,000 of them stalling the event loop 19 ms. Counted here through the
// global FinalizationRegistry, replaced before the package loads: both engines of the native
// entry, and the wasm entry (wasm-bindgen watches each `WasmHeld`; a released one is freed).
// Later calls through a released handle still get the core's answers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'

/** Registrations still in force (registered, not unregistered, not yet collected) in the
 * registries that watch holds: the native engine's (its cleanup drops a hold: `dropHold`) and
 * wasm-bindgen's for `WasmHeld` (its cleanup frees one). */
let watched = 0
/** Registrations ever made in those registries. */
let registered = 0
const watchesHolds = (cleanup) => /dropHold|wasmheld_free/.test(String(cleanup))
globalThis.FinalizationRegistry = class extends FinalizationRegistry {
  #holds
  constructor(cleanup) {
    const holds = watchesHolds(cleanup)
    super((held) => {
      if (holds) watched--
      cleanup(held)
    })
    this.#holds = holds
  }
  register(target, held, token) {
    if (this.#holds) {
      watched++
      registered++
    }
    return super.register(target, held, token)
  }
  unregister(token) {
    const removed = super.unregister(token)
    if (removed && this.#holds) watched--
    return removed
  }
}
const { Client, NotOwnedError } = await import('redlatch')
const wasm = await import('redlatch/wasm')
const { default: Redis } = await import('ioredis')
const REDIS_URL = process.env.REDLATCH_TEST_URL

/** A client of `engine` and what closes it. */
async function connect(engine) {
  if (engine === 'wasm') {
    const conn = new Redis(REDIS_URL)
    const client = wasm.createClient(wasm.fromIoredis(conn))
    return { client, close: async () => (await client.close(), conn.disconnect()) }
  }
  if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
  const client = await Client.connect(REDIS_URL)
  delete process.env.REDLATCH_NODE_IO
  return { client, close: () => client.close() }
}

for (const engine of ['tokio', 'local', 'wasm']) {
  test(`released holds are not watched for collection (${engine} engine)`, async () => {
    const { client, close } = await connect(engine)
    try {
      const lock = client.lock(`node-test:${randomUUID()}:retire`, { leaseMs: 10_000 })
      const before = watched
      const registeredBefore = registered
      const kept = []
      for (let i = 0; i < 100; i++) {
        const held = await lock.acquire()
        await held.release()
        kept.push(held)
      }
      assert.equal(watched, before, 'a released hold is still watched')
      if (engine !== 'wasm') {
        // Holds released soon after their acquire never reach the registry (V8 keeps a
        // registry's targets through young-generation collections: lib/deferred-registry.mjs).
        assert.equal(registered, registeredBefore, 'short-lived holds were registered')
      }
      // An unreleased hold is watched (after DEFER_MS on the native entry): collected without a
      // release, it is released then.
      const open = await lock.acquire()
      await new Promise((resolve) => setTimeout(resolve, 700))
      assert.equal(watched, before + 1)
      await open.release()
      assert.equal(watched, before)
      // Young holds released out of order: the others are still registered later.
      const three = []
      for (let i = 0; i < 3; i++) three.push(await client.lock(`${lock.name}:${i}`, { leaseMs: 10_000 }).acquire())
      await three[0].release()
      await new Promise((resolve) => setTimeout(resolve, 700))
      assert.equal(watched, before + 2)
      await three[2].release()
      await three[1].release()
      assert.equal(watched, before)
      // Through a released handle: the core's answers.
      const again = await kept[0].release().then(
        () => null,
        (e) => e,
      )
      assert.ok(again instanceof NotOwnedError, String(again)) // one class for both entries
      assert.equal(again.reason, 'never_held')
      assert.match(again.message, /cannot release lock .*: not held by this owner \(this hold was already released\)/)
      await assert.rejects(kept[1].extend(1000), (e) => e instanceof NotOwnedError && e.reason === 'never_held')
      assert.equal(await kept[2].owned(), false)
      assert.equal(kept[3].lost, false)
    } finally {
      await close()
    }
  })
}
