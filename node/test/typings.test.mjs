// The typings ship and describe the API: a strict TypeScript program (fixtures/usage.mts)
// type-checks against the installed package, then runs - which also covers `await using`
// (TypeScript lowers it to `Symbol.asyncDispose` calls; Node 20 lacks the syntax).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createRequire } from 'node:module'
import ts from 'typescript'
import { REDIS_URL, key } from './helpers.mjs'

const here = fileURLToPath(new URL('.', import.meta.url))
const fixture = join(here, 'fixtures', 'usage.mts')

test('the typings compile a strict program, and await using releases', async () => {
  // Emit next to the fixture so that `redlatch` resolves from the same node_modules.
  const outDir = mkdtempSync(join(here, 'fixtures', '.out-'))
  try {
    const program = ts.createProgram([fixture], {
      strict: true,
      noEmitOnError: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts', 'lib.dom.d.ts'],
      types: [],
      skipLibCheck: false,
      outDir,
      rootDir: join(here, 'fixtures'),
    })
    const result = program.emit()
    const diagnostics = ts.getPreEmitDiagnostics(program).concat(result.diagnostics)
    const text = ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => here,
      getNewLine: () => '\n',
    })
    assert.equal(diagnostics.length, 0, text)
    // The package's typings were the ones used.
    const require = createRequire(import.meta.url)
    const typings = require.resolve('redlatch/package.json').replace(/package\.json$/, 'lib/index.d.ts')
    assert.ok(program.getSourceFile(typings), `compiled against ${typings}`)
    const emitted = join(outDir, 'usage.mjs')
    assert.match(readFileSync(emitted, 'utf8'), /Symbol\.asyncDispose|__addDisposableResource/)
    const { run } = await import(pathToFileURL(emitted).href)
    const log = await run(REDIS_URL, key('ts'))
    assert.deepEqual(log, [
      'in true null false',
      'after false',
      'threw boom false',
      'withLock 7',
      'sync result',
      'owner 2',
      'NotAcquiredError ERR_NOT_ACQUIRED true true',
      'lost-code true',
      'fair null',
      'ERR_WOULD_DEADLOCK true',
      'permit 32 2 0 false',
      'multi 2 true',
    ])
  } finally {
    rmSync(outDir, { recursive: true, force: true })
  }
})
