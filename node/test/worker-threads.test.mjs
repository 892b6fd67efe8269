// REDLATCH_WORKER_THREADS outside 1..16 (or not a number) makes every native client's
// construction throw ERR_INVALID_ARGUMENT naming it: the addon reads it when it loads, which
// cannot throw (before stop 38 it was clamped or ignored in silence; the rule is the core's,
// shared with Python and the blocking API).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { REDIS_URL } from './helpers.mjs'

function run(script, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: fileURLToPath(new URL('.', import.meta.url)),
    })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('exit', (code) => resolve({ code, out }))
  })
}

const script = `import { Client, InvalidArgumentError } from 'redlatch'
try {
  const c = await Client.connect(${JSON.stringify(REDIS_URL)})
  console.log('connected')
  await c.close()
} catch (e) {
  console.log(e instanceof InvalidArgumentError, e.code, e.message)
}`

for (const value of ['two', '0', '17']) {
  test(`REDLATCH_WORKER_THREADS=${value} is refused at connect`, async () => {
    const { code, out } = await run(script, { REDLATCH_WORKER_THREADS: value })
    assert.equal(code, 0, out)
    assert.match(out, /^true ERR_INVALID_ARGUMENT REDLATCH_WORKER_THREADS must be a whole number from 1 to 16/, out)
    assert.ok(out.includes(`"${value}"`), out)
  })
}

test('REDLATCH_WORKER_THREADS=2 is taken', async () => {
  const { code, out } = await run(script, { REDLATCH_WORKER_THREADS: '2' })
  assert.equal(code, 0, out)
  assert.equal(out.trim(), 'connected')
})
