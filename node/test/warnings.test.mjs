// Deployment warnings that need no special deployment, on both engines of the native entry: a
// user who may not SUBSCRIBE gets one DeploymentWarning (code REDLATCH_PUBSUB) per node and
// client, and its waiters still get the lock, by polling; a quorum node that does not confirm
// a release gets one DeploymentWarning (code REDLATCH_RELEASE) and the release resolves.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import net from 'node:net'
import { Client } from 'redlatch'
import { QUORUM_URLS, REDIS_URL, eventually, key, onEngine, redis } from './helpers.mjs'

const r = redis()
after(() => r.quit())

/** A user like the fleet's, but denied SUBSCRIBE; `null` when this connection may not make users. */
async function userWithoutSubscribe() {
  const name = `nosub-${randomUUID().slice(0, 8)}`
  const password = randomUUID()
  try {
    await r.call('ACL', 'SETUSER', name, 'on', `>${password}`, '+@all', '-subscribe', '-ssubscribe', '~*', '&*')
  } catch {
    return null // the suite runs as a restricted user itself
  }
  const url = new URL(REDIS_URL)
  url.username = name
  url.password = password
  return { url: url.toString(), drop: () => r.call('ACL', 'DELUSER', name) }
}

/** A `host:port` on 127.0.0.1 where nothing listens. */
async function deadNode() {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return `127.0.0.1:${port}`
}

for (const engine of ['tokio', 'local']) {
  test(`${engine} engine: a quorum release a node did not confirm resolves and warns once`, { skip: QUORUM_URLS.length < 2 }, async () => {
    const seen = []
    const onWarning = (w) => {
      if (w.name === 'DeploymentWarning' && w.code === 'REDLATCH_RELEASE') seen.push(w)
    }
    process.on('warning', onWarning)
    const dead = await deadNode()
    const urls = [...QUORUM_URLS.slice(0, 2), `redis://${dead}`]
    const client = await onEngine(engine, () => Client.quorum(urls, { networkTimeoutMs: 500 }))
    try {
      const name = key('qrelease')
      for (let i = 0; i < 2; i++) {
        const held = await client.lock(name, { leaseMs: 30_000 }).acquire()
        await held.release()
      }
      // A release resolves once a majority confirmed: the dead node's error may come later,
      // and process.emitWarning delivers on a later tick.
      await eventually(() => seen.length > 0)
      await new Promise((resolve) => setTimeout(resolve, 100))
      assert.equal(seen.length, 1, seen.map((w) => w.message).join('\n'))
      assert.ok(seen[0].message.startsWith(`${dead}:`), seen[0].message)
      assert.match(seen[0].message, /did not confirm a release/)
      for (const url of QUORUM_URLS.slice(0, 2)) {
        const node = redis(url)
        assert.equal(await node.exists(name), 0)
        await node.quit()
      }
    } finally {
      process.off('warning', onWarning)
      await client.close()
    }
  })

  test(`${engine} engine: a user denied SUBSCRIBE is warned once and its waiters poll`, async (t) => {
    const user = await userWithoutSubscribe()
    if (!user) return t.skip('ACL SETUSER not allowed to this suite')
    const seen = []
    const onWarning = (w) => {
      if (w.name === 'DeploymentWarning') seen.push(w)
    }
    process.on('warning', onWarning)
    const client = await onEngine(engine, () => Client.connect(user.url))
    try {
      const name = key('nosub')
      const held = await client.lock(name, { leaseMs: 30_000 }).acquire()
      const waiters = [1, 2].map(() => client.lock(name, { leaseMs: 30_000 }).acquire({ waitMs: 20_000 }))
      await new Promise((resolve) => setTimeout(resolve, 300))
      await held.release()
      // Each releases once it has the lock (they get it in either order).
      await Promise.all(waiters.map(async (waiter) => (await waiter).release()))
      // process.emitWarning delivers on a later tick.
      await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(seen.length, 1, seen.map((w) => w.message).join('\n'))
      assert.equal(seen[0].code, 'REDLATCH_PUBSUB')
      assert.match(seen[0].message, /NOPERM|permission/i)
      assert.doesNotMatch(seen[0].message, new RegExp(new URL(user.url).password))
    } finally {
      process.off('warning', onWarning)
      await client.close()
      await user.drop()
    }
  })
}
