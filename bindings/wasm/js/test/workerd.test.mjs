// The `workerd` entry in workerd itself (the Cloudflare Workers runtime, from the `workerd`
// npm package): the .wasm is imported as a compiled module and instantiated synchronously;
// the worker (fixtures/worker.mjs) takes and releases a lock through an HTTP bridge this test
// starts. Skipped when the workerd binary is not installed.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PKG_ROOT, redis, key, sleep } from './helpers.mjs'
import { startBridge } from './fixtures/bridge.mjs'

const WORKERD = fileURLToPath(new URL('../node_modules/.bin/workerd', import.meta.url))
const WORKER = fileURLToPath(new URL('./fixtures/worker.mjs', import.meta.url))
const skip = existsSync(WORKERD) ? false : 'workerd is not installed (npm ci in bindings/wasm/js)'

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/**
 * Copies the worker and the package files it needs into `dir` (workerd embeds files by paths
 * relative to its config) and returns workerd's config: every file is a module named by its
 * path, so the package's relative imports resolve as they do in a bundle.
 */
function prepare(dir, port) {
  // The workerd entry and what it imports: this entry's modules and the shared facade.
  const files = ['workerd.mjs', 'engine.mjs', 'family.mjs', 'api.mjs', 'adapters.mjs', 'web/redlatch_wasm.js', 'web/redlatch_wasm_bg.wasm']
    .map((f) => `wasm/${f}`)
  for (const f of readdirSync(join(PKG_ROOT, 'lib', 'facade'))) if (f.endsWith('.mjs')) files.push(`lib/facade/${f}`)
  copyFileSync(WORKER, join(dir, 'worker.mjs'))
  const modules = ['(name = "worker.mjs", esModule = embed "worker.mjs")']
  for (const rel of files) {
    const name = `redlatch/${rel}`
    mkdirSync(dirname(join(dir, name)), { recursive: true })
    copyFileSync(join(PKG_ROOT, rel), join(dir, name))
    const kind = rel.endsWith('.wasm') ? 'wasm' : 'esModule'
    modules.push(`(name = ${JSON.stringify(name)}, ${kind} = embed ${JSON.stringify(name)})`)
  }
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = .worker),
    (name = "internet", network = (allow = ["public", "private", "local"])),
  ],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")],
);
const worker :Workerd.Worker = (
  modules = [
    ${modules.join(',\n    ')}
  ],
  compatibilityDate = "2024-09-23",
);
`
}

test('workerd loads the workerd entry and takes and releases a lock through an HTTP bridge', { skip, timeout: 60_000 }, async (t) => {
  const conn = await redis()
  const bridge = await startBridge({ pkgDir: PKG_ROOT, redis: conn, page: '' })
  const dir = mkdtempSync(join(tmpdir(), 'redlatch-workerd-'))
  const port = await freePort()
  writeFileSync(join(dir, 'config.capnp'), prepare(dir, port))
  let stderr = ''
  const workerd = spawn(WORKERD, ['serve', join(dir, 'config.capnp')], { stdio: ['ignore', 'ignore', 'pipe'] })
  workerd.stderr.on('data', (d) => (stderr += d))
  t.after(async () => {
    workerd.kill('SIGKILL')
    await bridge.close()
    await conn.quit()
    rmSync(dir, { recursive: true, force: true })
  })
  const name = key('workerd')
  const url = `http://127.0.0.1:${port}/?bridge=${encodeURIComponent(bridge.url)}&name=${encodeURIComponent(name)}`
  let result
  for (let i = 0; i < 200 && result === undefined; i++) {
    if (workerd.exitCode !== null) break
    result = await fetch(url)
      .then((r) => r.json())
      .catch(() => undefined)
    if (result === undefined) await sleep(100)
  }
  assert.ok(result !== undefined, `no answer from workerd: ${stderr}`)
  assert.equal(result.ok, true, result.error)
  assert.match(result.during, /^[0-9a-f]{32}$/, 'the lock was in Redis while held')
  assert.equal(result.after, null, 'and gone after the release')
  assert.deepEqual(result.busy, { name: 'NotAcquiredError', code: 'ERR_NOT_ACQUIRED', isClass: true })
  assert.equal(typeof result.fencingToken, 'number')
  assert.equal(result.chains, false, 'no AsyncLocalStorage global in workerd: rlock owners are handles')
})
