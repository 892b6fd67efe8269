// The built package (bindings/wasm/pkg, shipped as node/wasm/): its files, the export
// conditions that make `redlatch/wasm` resolve on each host (fixtures/exports.json is the
// `exports` entry node/package.json carries), require and import sharing one instance, and
// the refusal to run without a secure random source.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { PKG_DIR, wasm } from './helpers.mjs'

const require = createRequire(import.meta.url)
const EXPORTS = JSON.parse(readFileSync(new URL('./fixtures/exports.json', import.meta.url), 'utf8'))

test('the package has every entry point, both wasm-bindgen builds and the facade', () => {
  const files = [
    'index.mjs',
    'index.cjs',
    'web.mjs',
    'workerd.mjs',
    'index.d.ts',
    'api.mjs',
    'engine.mjs',
    'family.mjs',
    'adapters.mjs',
    '../lib/facade/index.mjs',
    '../lib/facade/index.d.ts',
    'nodejs/redlatch_wasm.js',
    'nodejs/redlatch_wasm_bg.wasm',
    'nodejs/package.json',
    'web/redlatch_wasm.js',
    'web/redlatch_wasm_bg.wasm',
    'web/package.json',
  ]
  for (const f of files) assert.ok(existsSync(join(PKG_DIR, f)), `${f} is in the package`)
  assert.equal(JSON.parse(readFileSync(join(PKG_DIR, 'web/package.json'))).type, 'module')
  assert.equal(JSON.parse(readFileSync(join(PKG_DIR, 'nodejs/package.json'))).type, 'commonjs')
})

test('require and import load one module instance (one set of error classes)', () => {
  const cjs = require(join(PKG_DIR, 'index.cjs'))
  assert.equal(cjs.createClient, wasm.createClient)
  assert.equal(cjs.NotAcquiredError, wasm.NotAcquiredError)
})

test('the public names are those of the native entry, plus the wasm factories and adapters', () => {
  const names = Object.keys(wasm).sort()
  assert.deepEqual(names, [
    'Client',
    'CountDownLatch',
    'Held',
    'InvalidArgumentError',
    'KeyConflictError',
    'Lock',
    'LockError',
    'LockLostError',
    'MultiHeld',
    'MultiLock',
    'NoPermissionError',
    'NotAcquiredError',
    'NotOwnedError',
    'OutOfMemoryError',
    'Owner',
    'Permit',
    'PermitSemaphore',
    'QuorumError',
    'RedisConnectionError',
    'RwLock',
    'STATUS',
    'Semaphore',
    'WouldDeadlockError',
    'createClient',
    'createQuorumClient',
    'fromIoredis',
    'fromNodeRedis',
    'rlockFollowsAsyncChains',
  ])
})

test('redlatch/wasm resolves per export condition (node import/require, browser, workerd)', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'redlatch-wasm-exports-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const root = join(dir, 'node_modules', 'redlatch')
  mkdirSync(root, { recursive: true })
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'redlatch', type: 'commonjs', exports: EXPORTS }))
  symlinkSync(PKG_DIR, join(root, 'wasm'), 'dir')
  const resolve = (flags, expr) =>
    basename(execFileSync(process.execPath, [...flags, '--input-type=module', '-e', expr], { cwd: dir, encoding: 'utf8' }).trim())
  const esm = "console.log(import.meta.resolve('redlatch/wasm'))"
  const cjs = "import { createRequire } from 'node:module'; console.log(createRequire(process.cwd() + '/').resolve('redlatch/wasm'))"
  assert.equal(resolve([], esm), 'index.mjs')
  assert.equal(resolve([], cjs), 'index.cjs')
  assert.equal(resolve(['-C', 'browser'], esm), 'web.mjs')
  assert.equal(resolve(['-C', 'workerd'], esm), 'workerd.mjs')
  // And it loads and works through the map.
  const out = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const w = await import('redlatch/wasm'); const c = w.createClient({ eval: async () => [1, 0] }); const h = await c.lock('x', { leaseMs: 1000 }).acquire(); console.log(h.name, typeof c.id)",
    ],
    { cwd: dir, encoding: 'utf8' },
  )
  assert.equal(out.trim(), 'x string')
})

test('without a secure random source, creating a client fails (no fallback)', () => {
  const code = `
    delete globalThis.crypto
    const w = await import(${JSON.stringify(join(PKG_DIR, 'index.mjs'))})
    try { w.createClient({ eval() {} }); console.log('created') }
    catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, base: e instanceof w.LockError, message: e.message })) }
  `
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' })
  const got = JSON.parse(child.stdout)
  assert.equal(got.code, 'ERR_PANIC')
  assert.equal(got.name, 'LockError')
  assert.ok(got.base)
  assert.match(got.message, /no secure random source/)
})
