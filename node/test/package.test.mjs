// The package as installed from its tarball: entry points, files, and what is left out.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

const require = createRequire(import.meta.url)
const root = dirname(require.resolve('redlatch/package.json'))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

test('the package has its loader, native binary, facade, typings, README and license', () => {
  const files = ['index.js', 'index.d.ts', 'lib/index.cjs', 'lib/index.mjs', 'lib/index.d.ts', 'README.md', 'LICENSE']
  for (const f of ['index.mjs', 'index.d.ts', 'client.mjs', 'lock.mjs', 'held.mjs', 'errors.mjs']) files.push(`lib/facade/${f}`)
  for (const f of files) {
    assert.ok(existsSync(join(root, f)), `${f} is in the package`)
  }
  assert.ok(readdirSync(root).some((f) => f.endsWith('.node')), 'a native binary is in the package')
  for (const f of ['src', 'Cargo.toml', 'build.rs', 'test', 'bench', 'node_modules', 'package-lock.json']) {
    assert.ok(!existsSync(join(root, f)), `${f} is not in the package`)
  }
  assert.equal(pkg.name, 'redlatch')
  assert.deepEqual(Object.keys(pkg.dependencies ?? {}), [], 'no runtime dependencies')
})

test('require and import load the same module; the native binding is the generated loader', async () => {
  const cjs = require('redlatch')
  const esm = await import('redlatch')
  assert.equal(esm, cjs)
  assert.ok(pkg.engines.node.includes('20.19'), 'require(esm) needs Node >= 20.19')
  const nativeBinding = require(join(root, 'index.js'))
  assert.equal(typeof nativeBinding.installLocal, 'function')
  assert.equal(typeof nativeBinding.NativeClient, 'function')
})

test('redlatch/wasm is the WebAssembly build, from import and require, over the same facade', async () => {
  assert.ok(pkg.exports['./wasm'].workerd && pkg.exports['./wasm'].browser, 'edge and browser conditions')
  const esm = await import('redlatch/wasm')
  assert.equal(require('redlatch/wasm'), esm)
  assert.equal(esm.LockLostError, (await import('redlatch')).LockLostError, 'one set of error classes')
  assert.ok(!existsSync(join(root, 'wasm', 'lib')), 'the wasm entry ships no copy of the facade')
  assert.equal(typeof esm.createClient, 'function')
  assert.equal(typeof esm.createQuorumClient, 'function')
  assert.equal(typeof esm.fromNodeRedis, 'function')
  assert.ok(readdirSync(join(root, 'wasm'), { recursive: true }).some((f) => String(f).endsWith('.wasm')), 'the .wasm ships')
})

test('internals are not reachable through the exports map', async () => {
  for (const path of ['redlatch/lib/facade/owner.mjs', 'redlatch/lib/index.mjs', 'redlatch/wasm/engine.mjs']) {
    await assert.rejects(import(path), (e) => e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED', path)
  }
})
