// The `web` wasm-bindgen build (what browsers, Deno and workerd load), run in Node through
// `initSync` on the .wasm bytes, installed without AsyncLocalStorage as on a host that has
// none: locks work, and rlocks re-enter only for an explicit Owner. (Its own process: node --test runs
// each file separately, so this install does not affect the other suites. It does not import
// helpers.mjs, whose Node entry would install Node's AsyncLocalStorage first.)
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createClient as createRedisClient } from 'redis'

const PKG_DIR = fileURLToPath(new URL('../../pkg/wasm/', import.meta.url))
const run = randomUUID().slice(0, 8)
let seq = 0
const key = () => `wasm-web-test:${run}:${++seq}`

const glue = await import(`${PKG_DIR}web/redlatch_wasm.js`)
glue.initSync({ module: readFileSync(`${PKG_DIR}web/redlatch_wasm_bg.wasm`) })
const { install } = await import(`${PKG_DIR}engine.mjs`)
install(glue, {})
const api = await import(`${PKG_DIR}api.mjs`)

const conn = await createRedisClient({ url: process.env.REDLATCH_TEST_URL }).connect()
const client = api.createClient(api.fromNodeRedis(conn))
test.after(async () => {
  await client.close()
  await conn.quit()
})

test('the web build takes, excludes and releases a lease lock', async () => {
  const name = key()
  const held = await client.lock(name, { leaseMs: 2000 }).acquire()
  await assert.rejects(client.lock(name).acquire({ waitMs: 0 }), api.NotAcquiredError)
  assert.match(await conn.get(name), /^[0-9a-f]{32}$/)
  await held.release()
  assert.equal(await conn.exists(name), 0)
})

test('without AsyncLocalStorage a bare acquire is its own owner, and an Owner re-enters', async () => {
  assert.equal(api.rlockFollowsAsyncChains(), false)
  const name = key()
  const mine = client.rlock(name, { leaseMs: 5000 })
  const a = await mine.acquire()
  // Not even the same handle re-enters: it may be shared by unrelated tasks.
  await assert.rejects(mine.acquire({ waitMs: 0 }), api.NotAcquiredError)
  await a.release()
  const owner = new api.Owner()
  const b = await client.rlock(name, { owner }).acquire()
  const c = await client.rlock(name, { owner, waitMs: 0 }).acquire()
  assert.equal(await client.rlock(name, { owner }).holdCount(), 2)
  await assert.rejects(client.rlock(name).acquire({ waitMs: 0 }), api.NotAcquiredError)
  await c.release()
  await b.release()
  assert.equal(await conn.exists(name), 0)
})
