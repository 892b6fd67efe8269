// The shipped typings (index.d.ts) compile a usage file resolved through the same `exports`
// map as node/package.json, with TypeScript's Node16/NodeNext resolution.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PKG_DIR } from './helpers.mjs'

const TSC = fileURLToPath(new URL('../node_modules/typescript/bin/tsc', import.meta.url))
const EXPORTS = JSON.parse(readFileSync(new URL('./fixtures/exports.json', import.meta.url), 'utf8'))

test('index.d.ts types the whole API and rejects misuse', (t) => {
  // Inside js/, so the real clients' typings (js/node_modules) resolve too.
  const dir = mkdtempSync(fileURLToPath(new URL('../.typings-', import.meta.url)))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const root = join(dir, 'node_modules', 'redlatch')
  mkdirSync(root, { recursive: true })
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'redlatch', type: 'commonjs', exports: EXPORTS }))
  symlinkSync(PKG_DIR, join(root, 'wasm'), 'dir')
  copyFileSync(fileURLToPath(new URL('./fixtures/usage.mts', import.meta.url)), join(dir, 'usage.mts'))
  const compilerOptions = {
    noEmit: true,
    strict: true,
    // A user trial of stop 44: fromIoredis(new Redis(url)) did not compile with it.
    exactOptionalPropertyTypes: true,
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2022', 'dom', 'esnext.disposable'],
    types: ['node'],
    skipLibCheck: true,
  }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['usage.mts'] }))
  const args = [TSC, '-p', dir]
  const out = spawnSync(process.execPath, args, { cwd: dir, encoding: 'utf8' })
  assert.equal(out.status, 0, out.stdout + out.stderr)
})
