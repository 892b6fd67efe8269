// Deployments (issue #14): TLS, Cluster, Sentinel with syncReplicas, eviction warnings, and
// no token or password in error messages. The servers come from `redlatch-fleet
// --deployments` (make node-test); without its variables these tests are skipped.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { inspect, promisify } from 'node:util'
import { execFile } from 'node:child_process'
import { Client, InvalidArgumentError, LockError, RedisConnectionError, NotAcquiredError } from 'redlatch'
import { key, onEngine } from './helpers.mjs'

const env = process.env
const run = promisify(execFile)
const deployments = env.REDLATCH_TEST_TLS_URL ? {} : { skip: 'run under redlatch-fleet --deployments' }

const tls = () => ({ caFile: env.REDLATCH_TEST_TLS_CA, certFile: env.REDLATCH_TEST_TLS_CERT, keyFile: env.REDLATCH_TEST_TLS_KEY })

test('mutual TLS with a CA file, and with PEM text from Buffers', deployments, async () => {
  const client = await Client.connect(env.REDLATCH_TEST_TLS_URL, { tls: tls() })
  try {
    const held = await client.lock(key('tls'), { leaseMs: 5000 }).acquire({ waitMs: 0 })
    assert.equal(await held.owned(), true)
    await held.release()
  } finally {
    await client.close()
  }
  const pem = await Client.connect(env.REDLATCH_TEST_TLS_URL, {
    tls: {
      ca: readFileSync(env.REDLATCH_TEST_TLS_CA),
      cert: readFileSync(env.REDLATCH_TEST_TLS_CERT, 'utf8'),
      key: readFileSync(env.REDLATCH_TEST_TLS_KEY),
    },
  })
  await pem.close()
})

test('TLS failures fail closed and say which', deployments, async () => {
  const url = env.REDLATCH_TEST_TLS_URL
  await assert.rejects(
    Client.connect(url, { tls: { ...tls(), caFile: env.REDLATCH_TEST_TLS_OTHER_CA } }),
    (e) => e instanceof RedisConnectionError && /not signed by a trusted CA/.test(e.message),
  )
  await assert.rejects(
    Client.connect(url, { tls: { ...tls(), serverName: 'elsewhere.test' } }),
    (e) => e instanceof RedisConnectionError && /not valid for the name/.test(e.message),
  )
  await assert.rejects(
    Client.connect(url, { tls: { caFile: env.REDLATCH_TEST_TLS_CA } }),
    (e) => e instanceof RedisConnectionError && /client certificate/.test(e.message),
  )
  // A rediss:// URL without TLS options (the local engine, on Node's sockets, and the tokio
  // engine): the fleet's CA is in neither's roots, and both say so in the same words.
  for (const engine of ['local', 'tokio']) {
    await assert.rejects(
      onEngine(engine, () => Client.connect(url)),
      (e) => e instanceof RedisConnectionError && /not signed by a trusted CA/.test(e.message),
      engine,
    )
  }
  // Bad settings are refused before any connection.
  await assert.rejects(Client.connect(url, { tls: { caFile: '/nonexistent/ca.pem' } }), InvalidArgumentError)
  await assert.rejects(
    Client.connect(url, { tls: { certFile: env.REDLATCH_TEST_TLS_CERT } }),
    (e) => e instanceof InvalidArgumentError && /needs its key/.test(e.message),
  )
  await assert.rejects(Client.connect(url, { tls: { insecure: 'yes' } }), InvalidArgumentError)
  await assert.rejects(Client.connect(url, { tls: { caFiles: 'x' } }), /unknown option "caFiles"/)
})

test('a TLS and plain-text mismatch says which, on both engines', deployments, async () => {
  // A user trial of stop 41: the local engine said "read ECONNRESET", "the connection was
  // closed" or "no connection within 3000 ms" where the tokio engine named the cause.
  const tlsPort = env.REDLATCH_TEST_TLS_URL.replace('rediss://', '')
  const plainPort = env.REDLATCH_TEST_URL.replace(/^redis:\/\/(.*@)?/, '')
  const cases = [
    [`rediss://${tlsPort}`, /TLS: .*client certificate/],
    [`redis://${tlsPort}`, /closed the connection as it was made .*is this a TLS port/],
    [`rediss://${plainPort}`, /TLS: .*is this a plain-text port/],
  ]
  // The fleet's CA is in neither engine's roots: a child process trusts it through
  // NODE_EXTRA_CA_CERTS (read at start), so the local engine gets past the certificate check
  // to the server's client-certificate demand.
  const script = `import { Client } from 'redlatch'
const failures = []
for (const engine of ['local', 'tokio']) {
  if (engine === 'tokio') process.env.REDLATCH_NODE_IO = 'tokio'
  for (const url of ${JSON.stringify(cases.map(([url]) => url))}) {
    try {
      await (await Client.connect(url, { networkTimeoutMs: 500, tls: engine === 'tokio' && url.startsWith('rediss') ? { caFile: process.env.REDLATCH_TEST_TLS_CA } : undefined })).close()
      failures.push([engine, url, 'connected'])
    } catch (e) {
      failures.push([engine, url, e.name + ': ' + e.message])
    }
  }
}
console.log(JSON.stringify(failures))
`
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: env.REDLATCH_TEST_TLS_CA },
  })
  const failures = JSON.parse(stdout)
  assert.equal(failures.length, 2 * cases.length)
  for (const [engine, url, said] of failures) {
    const expected = cases.find(([u]) => u === url)[1]
    assert.ok(said.startsWith('RedisConnectionError: ') && expected.test(said), `${engine} ${url}: ${said}`)
  }
})

test('a client certificate without a CA option trusts what Node trusts (NODE_EXTRA_CA_CERTS)', deployments, async () => {
  // Before stop 43 the addon's redis-rs connections verified against the system's roots only,
  // so a CA Node trusted through NODE_EXTRA_CA_CERTS was refused ("not signed by a trusted CA").
  const script = `import { Client } from 'redlatch'
const c = await Client.connect(process.env.REDLATCH_TEST_TLS_URL, {
  tls: { certFile: process.env.REDLATCH_TEST_TLS_CERT, keyFile: process.env.REDLATCH_TEST_TLS_KEY },
})
await (await c.lock('extra-ca', { leaseMs: 5000 }).acquire({ waitMs: 0 })).release()
await c.close()
let other
try {
  // A CA option of the client's own wins over Node's roots.
  await Client.connect(process.env.REDLATCH_TEST_TLS_URL, { tls: { caFile: process.env.REDLATCH_TEST_TLS_OTHER_CA, certFile: process.env.REDLATCH_TEST_TLS_CERT, keyFile: process.env.REDLATCH_TEST_TLS_KEY } })
} catch (e) {
  other = e.name
}
console.log(JSON.stringify({ ok: true, other }))
`
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: env.REDLATCH_TEST_TLS_CA },
  })
  assert.deepEqual(JSON.parse(stdout.trim().split('\n').pop()), { ok: true, other: 'RedisConnectionError' })
})

test('a plain client of one Cluster node is refused at once for a key of another node, on both engines', deployments, async () => {
  // A user trial of stop 41: the local engine read the MOVED answer as a connection error and
  // retried it until the wait ran out (for ever without one: a network timeout each try).
  const seed = env.REDLATCH_TEST_CLUSTER_URLS.split(',')[0]
  for (const engine of ['local', 'tokio']) {
    const client = await onEngine(engine, () => Client.connect(seed))
    try {
      let moved = 0
      for (let i = 0; i < 12; i++) {
        const started = performance.now()
        try {
          const held = await client.lock(key(`moved-${i}`), { leaseMs: 5000 }).acquire({ waitMs: 5000 })
          await held.release() // this node's own slot
        } catch (e) {
          assert.ok(e instanceof InvalidArgumentError && /Cluster node/.test(e.message), `${engine}: ${e}`)
          assert.ok(performance.now() - started < 2000, `${engine}: refused after ${performance.now() - started} ms`)
          moved++
        }
      }
      assert.ok(moved > 0, `${engine}: no key of another node in 12`)
    } finally {
      await client.close()
    }
  }
})

test('Client.cluster and redis+cluster:// reach every shard', deployments, async () => {
  const urls = env.REDLATCH_TEST_CLUSTER_URLS.split(',')
  const client = await Client.cluster(urls)
  // redis+cluster://[user:password@]h1:p1,h2:p2 (the seeds may carry a login).
  const seeds = urls.map((u) => new URL(u))
  const login = seeds[0].username || seeds[0].password ? `${seeds[0].username}:${seeds[0].password}@` : ''
  const byUrl = await Client.connect(`redis+cluster://${login}${seeds.map((s) => s.host).join(',')}`)
  try {
    assert.equal(client.nodeCount, 1)
    for (let i = 0; i < 6; i++) {
      const name = key(`cluster-${i}`)
      const held = await client.lock(name, { leaseMs: 5000, fenced: true }).acquire({ waitMs: 0 })
      assert.equal(typeof held.fencingToken, 'number')
      await assert.rejects(byUrl.lock(name).acquire({ waitMs: 0 }), NotAcquiredError)
      await held.release()
    }
    // A waiter on one client is woken by a release on the other (sharded pub/sub).
    const name = key('cluster-wake')
    const held = await client.lock(name, { leaseMs: 30000 }).acquire()
    const waiter = byUrl.lock(name, { leaseMs: 5000 }).acquire({ waitMs: 10000 })
    setTimeout(() => held.release(), 100)
    await (await waiter).release()
  } finally {
    await client.close()
    await byUrl.close()
  }
})

test('Sentinel: sentinel password and syncReplicas', deployments, async () => {
  const url = env.REDLATCH_TEST_SENTINEL_URL
  const client = await Client.connect(url, { sentinelPassword: env.REDLATCH_TEST_SENTINEL_PASSWORD, syncReplicas: 1 })
  try {
    const held = await client.lock(key('sentinel'), { leaseMs: 5000 }).acquire({ waitMs: 0 })
    assert.equal(await held.owned(), true)
    for (const shown of [inspect(client), inspect(held), inspect(client, { showHidden: true })]) {
      assert.doesNotMatch(shown, /fleet-data-pw|fleet-sentinel-pw/)
    }
    await held.release()
  } finally {
    await client.close()
  }
  const err = await Client.connect(url, { sentinelPassword: 'not-it' }).then(
    () => assert.fail('connected with a wrong sentinel password'),
    (e) => e,
  )
  assert.ok(err instanceof RedisConnectionError, String(err))
  assert.doesNotMatch(err.message, /not-it|fleet-data-pw/)
  await assert.rejects(Client.connect(url, { sentinelUsername: 'someone' }), /sentinel password/)
  await assert.rejects(Client.connect(url, { syncReplicas: 1.5 }), InvalidArgumentError)
})

test('an evicting maxmemory-policy is a DeploymentWarning, once per node', deployments, async () => {
  const seen = []
  const onWarning = (w) => {
    if (w.name === 'DeploymentWarning') seen.push(w)
  }
  process.on('warning', onWarning)
  try {
    const client = await Client.connect(env.REDLATCH_TEST_EVICTING_URL)
    await (await client.lock(key('evict'), { leaseMs: 1000 }).acquire()).release()
    // process.emitWarning delivers on a later tick.
    await new Promise((resolve) => setTimeout(resolve, 50))
    assert.equal(seen.length, 1, seen.map((w) => w.message).join('\n'))
    assert.match(seen[0].message, /maxmemory-policy is allkeys-lru/)
    assert.equal(seen[0].code, 'REDLATCH_EVICTION')
    await client.close()
  } finally {
    process.off('warning', onWarning)
  }
})

test('no token or password in error messages or inspect output', deployments, async () => {
  // A plain client pointed at a sentinel: it answers "unknown command 'SET', with args
  // beginning with: ..." and would echo the token.
  const sentinel = env.REDLATCH_TEST_SENTINEL_URL.split('@')[1].split(',')[0]
  const client = await Client.connect(`redis://:${env.REDLATCH_TEST_SENTINEL_PASSWORD}@${sentinel}`)
  try {
    const err = await client.lock(key('secret'), { leaseMs: 1000 }).acquire({ waitMs: 0 }).then(
      () => assert.fail('a sentinel granted a lock'),
      (e) => e,
    )
    assert.ok(err instanceof LockError)
    assert.match(err.message, /unknown command/)
    assert.doesNotMatch(err.message, /[0-9a-f]{32}/)
    assert.doesNotMatch(inspect(err), /[0-9a-f]{32}/)
  } finally {
    await client.close()
  }
  const secret = 'pw-Zq81-secret'
  const err = await Client.connect(`redis://user:${secret}@127.0.0.1:1`, { networkTimeoutMs: 500 }).then(
    () => assert.fail('connected to port 1'),
    (e) => e,
  )
  assert.ok(err instanceof RedisConnectionError)
  assert.ok(!err.message.includes(secret) && !inspect(err).includes(secret), err.message)
  const bad = await Client.connect(`redis://user:${secret}@[bad`).catch((e) => e)
  assert.ok(bad instanceof InvalidArgumentError, String(bad))
  assert.ok(!bad.message.includes(secret), bad.message)
})
