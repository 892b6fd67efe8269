// Mutual exclusion, checked: worker threads and child processes increment one counter with
// a non-atomic read-modify-write under the lock; any overlap loses an update, so the final
// value must be exact.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Worker } from 'node:worker_threads'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { REDIS_URL, QUORUM_URLS, key, redis } from './helpers.mjs'

const script = fileURLToPath(new URL('./fixtures/counter-worker.mjs', import.meta.url))

function inThread(cfg) {
  return new Promise((resolve, reject) => {
    const w = new Worker(script, { workerData: cfg })
    w.once('message', resolve)
    w.once('error', reject)
    w.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exited with ${code}`))))
  })
}

function inProcess(cfg) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(cfg)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 && out.includes('done') ? resolve() : reject(new Error(`child exited with ${code}`))))
  })
}

async function race({ lockUrls, kind, threads, processes, iterations }) {
  const counter = key('counter')
  const cfg = { url: REDIS_URL, lockUrls, counter, lockName: key('lock'), iterations, kind }
  const runs = []
  for (let i = 0; i < threads; i++) runs.push(inThread(cfg))
  for (let i = 0; i < processes; i++) runs.push(inProcess(cfg))
  await Promise.all(runs)
  const r = redis()
  const value = Number(await r.get(counter))
  await r.del(counter)
  r.quit()
  return { value, expected: (threads + processes) * iterations }
}

test('lease lock: 3 worker threads + 3 processes, exact count', async () => {
  const { value, expected } = await race({ lockUrls: [REDIS_URL], kind: 'lock', threads: 3, processes: 3, iterations: 25 })
  assert.equal(value, expected)
})

test('rlock: 2 worker threads + 2 processes, exact count', async () => {
  const { value, expected } = await race({ lockUrls: [REDIS_URL], kind: 'rlock', threads: 2, processes: 2, iterations: 20 })
  assert.equal(value, expected)
})

test('quorum lock: 2 worker threads + 2 processes, exact count', { skip: QUORUM_URLS.length < 3 }, async () => {
  const { value, expected } = await race({ lockUrls: QUORUM_URLS, kind: 'lock', threads: 2, processes: 2, iterations: 20 })
  assert.equal(value, expected)
})
