// Redlock over 3 independent nodes, each reached through its own node-redis transport: the
// lock works with one node stopped (SIGSTOP: its replies never come, so the per-node timeout
// decides), and reports QuorumError when a majority is stopped.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { REDIS_URL, QUORUM_URLS, wasm, wasmClient, redis, key, eventually } from './helpers.mjs'
import { race } from './fixtures/race.mjs'

const { NotAcquiredError, QuorumError } = wasm
const skip = QUORUM_URLS.length < 3 ? 'needs 3 quorum nodes (redlatch-fleet --quorum 3)' : false
const NATIVE = process.env.REDLATCH_NATIVE_ADDON || ''
const haveNative = NATIVE !== '' && existsSync(NATIVE)

/** The pid of the redis-server at `url`, to stop and continue it. */
async function serverPid(url) {
  const r = await redis(url)
  const info = await r.info('server')
  await r.quit()
  return Number(/process_id:(\d+)/.exec(info)[1])
}

/** Runs `fn` with the nodes at `urls` stopped (SIGSTOP), continuing them afterwards. */
async function withStopped(urls, fn) {
  const pids = await Promise.all(urls.map(serverPid))
  for (const pid of pids) process.kill(pid, 'SIGSTOP')
  try {
    return await fn()
  } finally {
    for (const pid of pids) process.kill(pid, 'SIGCONT')
  }
}

const OPTIONS = { nodeTimeoutMs: 100, networkTimeoutMs: 500 }

test('quorum: the key is on every node, another client is excluded, release clears all', { skip }, async () => {
  const a = await wasmClient(QUORUM_URLS, OPTIONS)
  const b = await wasmClient(QUORUM_URLS, OPTIONS)
  try {
    assert.equal(a.client.nodeCount, 3)
    const name = key()
    const held = await a.client.lock(name, { leaseMs: 5000 }).acquire()
    // acquire returns once a majority granted; the last node's grant may land just after.
    const onAll = async () => {
      const tokens = await Promise.all(a.conns.map((c) => c.get(name)))
      return tokens.every((t) => t !== null && t === tokens[0]) && tokens
    }
    assert.ok(await eventually(onAll, 1000), 'the same token on every node')
    await assert.rejects(b.client.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
    await held.release()
    const gone = async () => (await Promise.all(a.conns.map((c) => c.exists(name)))).every((n) => n === 0)
    assert.ok(await eventually(gone, 1000), 'released on every node')
  } finally {
    await a.close()
    await b.close()
  }
})

test('quorum with one node stopped: locks still exclude, within bounded time (exact count)', { skip }, async () => {
  const clients = [await wasmClient(QUORUM_URLS, OPTIONS), await wasmClient(QUORUM_URLS, OPTIONS)]
  const r = await redis(REDIS_URL)
  const counter = key('counter')
  const name = key('lock')
  let slowest = 0
  try {
    await withStopped([QUORUM_URLS[2]], async () => {
      const step = async () => {
        const v = Number((await r.get(counter)) ?? 0)
        await new Promise((res) => setTimeout(res, 1))
        await r.set(counter, String(v + 1))
      }
      await Promise.all(
        clients.map(async ({ client }) => {
          for (let i = 0; i < 5; i++) {
            const t0 = performance.now()
            const held = await client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 10_000 })
            slowest = Math.max(slowest, performance.now() - t0)
            await step()
            await held.release()
          }
        }),
      )
    })
    assert.equal(Number(await r.get(counter)), 10)
    assert.ok(slowest < 5000, `slowest acquire ${slowest.toFixed(0)} ms`)
  } finally {
    await r.del(counter)
    await r.quit()
    await Promise.all(clients.map((c) => c.close()))
  }
})

test('quorum with a majority stopped: QuorumError with per-node outcomes, within bounded time', { skip }, async () => {
  const { client, close } = await wasmClient(QUORUM_URLS, OPTIONS)
  try {
    await withStopped(QUORUM_URLS.slice(1), async () => {
      const t0 = performance.now()
      const err = await client.lock(key(), { leaseMs: 5000 }).acquire({ waitMs: 0 }).catch((e) => e)
      const took = performance.now() - t0
      assert.ok(err instanceof QuorumError, String(err))
      assert.equal(err.code, 'ERR_QUORUM')
      assert.equal(err.nodes.length, 3)
      assert.equal(err.nodes[0].error, null)
      assert.match(err.nodes[1].error, /no reply/)
      assert.ok(took < 2000, `took ${took.toFixed(0)} ms`)
    })
  } finally {
    await close()
  }
})

test(`quorum: 2 wasm + 2 ${haveNative ? 'native' : 'more wasm'} processes on the same nodes, exact count`, { skip }, async () => {
  const r = await redis(REDIS_URL)
  try {
    const impls = haveNative ? ['wasm', 'wasm', 'native', 'native'] : ['wasm', 'wasm', 'wasm', 'wasm']
    const base = {
      kind: 'lock',
      lockUrls: QUORUM_URLS,
      counterUrl: REDIS_URL,
      counter: key('counter'),
      lockName: key('lock'),
      iterations: 15,
      nativeAddon: NATIVE,
    }
    const { value, expected } = await race(r, { impls, base })
    assert.equal(value, expected)
  } finally {
    await r.quit()
  }
})

test('quorum: one server reached under two labels votes once (INFO run_id)', async () => {
  // A user trial: adapters over `127.0.0.1:P` and `localhost:P` were two nodes, so with the
  // third node down that one server granted the lock as a majority.
  const alias = REDIS_URL.replace('127.0.0.1', 'localhost')
  assert.notEqual(alias, REDIS_URL)
  const conns = await Promise.all([redis(REDIS_URL), redis(alias)])
  const down = { eval: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')), label: '127.0.0.1:1' }
  const client = wasm.createQuorumClient([wasm.fromNodeRedis(conns[0]), wasm.fromNodeRedis(conns[1]), down], OPTIONS)
  try {
    const name = key('alias')
    const err = await client.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 0 }).then(
      (held) => held.release().then(() => null),
      (e) => e,
    )
    assert.ok(err !== null, 'one live server is not a majority of three')
    const r = await redis()
    try {
      assert.equal(await r.exists(name), 0, 'nothing left behind')
    } finally {
      await r.quit()
    }
  } finally {
    await client.close()
    await Promise.all(conns.map((c) => c.quit().catch(() => {})))
  }
})
