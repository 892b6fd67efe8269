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
  for (const f of ['index.js', 'index.d.ts', 'lib/index.js', 'lib/index.mjs', 'lib/index.d.ts', 'README.md', 'LICENSE']) {
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
  assert.equal(esm.Client, cjs.Client)
  assert.equal(esm.default, cjs)
  const nativeBinding = require(join(root, 'index.js'))
  assert.equal(typeof nativeBinding.connect, 'function')
  assert.equal(typeof nativeBinding.NativeClient, 'function')
})

test('redlatch/wasm is the WebAssembly build, from import and require', async () => {
  assert.ok(pkg.exports['./wasm'].workerd && pkg.exports['./wasm'].browser, 'edge and browser conditions')
  const esm = await import('redlatch/wasm')
  assert.equal(typeof esm.createClient, 'function')
  assert.equal(typeof esm.createQuorumClient, 'function')
  assert.equal(typeof esm.fromNodeRedis, 'function')
  assert.ok(readdirSync(join(root, 'wasm'), { recursive: true }).some((f) => String(f).endsWith('.wasm')), 'the .wasm ships')
})

test('internals are not reachable through the exports map', async () => {
  await assert.rejects(import('redlatch/lib/chain.js'), (e) => e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED')
})
