// client.close() with a held permit and a held multi-lock (issue #13): both go back in Redis
// at once (not when their watchdog-renewed leases would end), and none of the client's
// connections stays open, on both engines of the native entry. The client talks through a
// proxy that counts the connections it carries; checks go straight to Redis.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import net from 'node:net'
import { Client } from 'redlatch'
import { REDIS_URL, eventually, key, redis } from './helpers.mjs'

const r = redis()
after(() => r.quit())

/** A TCP proxy to `url`'s node that counts the connections open through it. */
async function countingProxy(url) {
  const { hostname, port } = new URL(url)
  const open = new Set()
  let accepted = 0
  const server = net.createServer((down) => {
    accepted++
    open.add(down)
    const up = net.connect({ host: hostname, port: Number(port) })
    down.pipe(up)
    up.pipe(down)
    const end = () => {
      open.delete(down)
      down.destroy()
      up.destroy()
    }
    down.on('error', end).on('close', end)
    up.on('error', end).on('close', end)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `redis://127.0.0.1:${server.address().port}`,
    open: () => open.size,
    accepted: () => accepted,
    stop: () => new Promise((resolve) => server.close(resolve)),
  }
}

for (const engine of ['tokio', 'local']) {
  test(`${engine} engine: close() gives back a held permit and multi-lock and closes every connection`, async () => {
    const proxy = await countingProxy(REDIS_URL)
    const saved = process.env.REDLATCH_NODE_IO
    // The engine is chosen at connect.
    if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
    else delete process.env.REDLATCH_NODE_IO
    let client
    try {
      client = await Client.connect(proxy.url, { watchdogTimeoutMs: 30_000 })
    } finally {
      if (saved === undefined) delete process.env.REDLATCH_NODE_IO
      else process.env.REDLATCH_NODE_IO = saved
    }
    const rival = await Client.connect(REDIS_URL)
    try {
      const name = key('close-permit')
      const [a, b, waited] = [key('close-a'), key('close-b'), key('close-waited')]
      const permit = await client.permitSemaphore(name, { permits: 1 }).acquire()
      const multi = await client.multiLock([a, b]).acquire()
      // A wait woken by the rival's release: the client's subscriber connection is open too.
      const theirs = await rival.lock(waited, { leaseMs: 10_000 }).acquire()
      const waiting = client.lock(waited, { leaseMs: 10_000 }).acquire()
      setTimeout(() => theirs.release(), 100)
      await (await waiting).release()
      assert.equal(await r.get(name), '0', 'the permit is taken')
      assert.deepEqual([await r.exists(a), await r.exists(b)], [1, 1])
      assert.ok(proxy.open() > 0, 'the client talks through the proxy')
      await client.close()
      assert.equal(await r.get(name), '1', 'close() gave the permit back')
      assert.deepEqual([await r.exists(a), await r.exists(b)], [0, 0], 'close() released the multi-lock')
      assert.ok(
        await eventually(() => proxy.open() === 0, 3000),
        `${proxy.open()} of the client's ${proxy.accepted()} connections are still open after close()`,
      )
      assert.ok(permit && multi)
    } finally {
      await client.close()
      await rival.close()
      await proxy.stop()
    }
  })
}

for (const engine of ['tokio', 'local']) {
  test(`${engine} engine: close() while Redis is paused past the network timeout still gives the permits back`, async () => {
    // Found by the re-trial of stop 35 (N5, both engines): close()'s releases timed out, the
    // connections closed with the client, and Redis threw the queued releases away: the
    // semaphore's permits were taken for good. The connections now linger until the replies
    // come (at most 30 s), so the releases apply when the pause ends.
    const saved = process.env.REDLATCH_NODE_IO
    if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
    else delete process.env.REDLATCH_NODE_IO
    let client
    try {
      client = await Client.connect(REDIS_URL, { networkTimeoutMs: 300 })
    } finally {
      if (saved === undefined) delete process.env.REDLATCH_NODE_IO
      else process.env.REDLATCH_NODE_IO = saved
    }
    const name = key('close-paused')
    const pool = client.semaphore(name, { permits: 3 })
    await pool.acquire(2)
    assert.equal(await r.get(name), '1')
    await r.call('CLIENT', 'PAUSE', '1000')
    await client.close()
    assert.ok(
      await eventually(async () => (await r.get(name)) === '3', 5000),
      `the permits given back at close did not apply after the pause: ${await r.get(name)} of 3`,
    )
  })
}
