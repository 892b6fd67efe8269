// A worker thread that ends while it holds locks (the local engine, the default): its locks
// expire with their lease, the watchdog timeout, as a process's do when it ends. Found by the
// user trial of stop 37: the renewer of the worker's client, on the addon's tokio thread,
// kept renewing them for as long as the process lived, so nobody could take them.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'
import { Client } from 'redlatch'
import { REDIS_URL, key } from './helpers.mjs'

const script = fileURLToPath(new URL('./fixtures/hold-worker.mjs', import.meta.url))
const WATCHDOG_MS = 1000
const client = await Client.connect(REDIS_URL)
after(() => client.close())

/** Runs a worker that takes `name` and ends (`end`: exit or terminate); resolves once it ended. */
async function holderThatEnds(name, kind, end) {
  const w = new Worker(script, { workerData: { url: REDIS_URL, name, kind, end, watchdogTimeoutMs: WATCHDOG_MS } })
  const exited = new Promise((resolve, reject) => {
    w.once('error', reject)
    w.once('exit', resolve)
  })
  await new Promise((resolve, reject) => {
    w.once('message', resolve)
    w.once('error', reject)
  })
  if (end === 'terminate') await w.terminate()
  await exited
}

for (const [kind, end] of [
  ['lock', 'exit'],
  ['lock', 'terminate'],
  ['rlock', 'exit'],
  ['fairLock', 'terminate'],
]) {
  test(`${kind}: a worker that ends (${end}) while holding it lets it expire with its watchdog timeout`, async () => {
    const name = key(`worker-${end}`)
    await holderThatEnds(name, kind, end)
    assert.equal(await client[kind](name).locked(), true, 'still held just after the worker ended')
    // Generous: the hold expires at most one watchdog timeout after its last renewal.
    const held = await client[kind](name).acquire({ waitMs: WATCHDOG_MS * 6 })
    await held.release()
  })
}
