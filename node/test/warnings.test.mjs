// Deployment warnings that need no special deployment, on both engines of the native entry: a
// user who may not SUBSCRIBE gets one DeploymentWarning (code REDLATCH_PUBSUB) per node and
// client, and its waiters still get the lock, by polling.
import { after, test } from 'node:test'
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { Client } from 'redlatch'
import { REDIS_URL, key, redis } from './helpers.mjs'

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

for (const engine of ['tokio', 'local']) {
  test(`${engine} engine: a user denied SUBSCRIBE is warned once and its waiters poll`, async (t) => {
    const user = await userWithoutSubscribe()
    if (!user) return t.skip('ACL SETUSER not allowed to this suite')
    const seen = []
    const onWarning = (w) => {
      if (w.name === 'DeploymentWarning') seen.push(w)
    }
    process.on('warning', onWarning)
    const saved = process.env.REDLATCH_NODE_IO
    // The engine is chosen at connect.
    if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
    else delete process.env.REDLATCH_NODE_IO
    let client
    try {
      client = await Client.connect(user.url)
    } finally {
      if (saved === undefined) delete process.env.REDLATCH_NODE_IO
      else process.env.REDLATCH_NODE_IO = saved
    }
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
