// The web build in a real browser: Debian's headless Chromium loads a page that imports
// `wasm/web.mjs` (the `browser` export condition; it imports the shared `lib/facade/`), takes and releases a lock through a transport
// whose eval is a fetch() to a local HTTP bridge this test starts (fixtures/bridge.mjs).
// Skipped when Chromium is not installed or REDLATCH_BROWSER_TEST=0.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PKG_ROOT, redis, key } from './helpers.mjs'
import { startBridge } from './fixtures/bridge.mjs'

function findChromium() {
  for (const bin of [process.env.CHROMIUM, 'chromium', 'chromium-browser', 'google-chrome'].filter(Boolean)) {
    if (spawnSync(bin, ['--version'], { stdio: 'ignore' }).status === 0) return bin
  }
  return null
}

const chromium = process.env.REDLATCH_BROWSER_TEST === '0' ? null : findChromium()
const skip = chromium === null ? 'no headless Chromium (apt-get install chromium), or REDLATCH_BROWSER_TEST=0' : false

function page(name) {
  return `<!doctype html><meta charset="utf-8"><title>redlatch/wasm</title>
<script type="module">
const report = (r) => fetch('/result', { method: 'POST', body: JSON.stringify(r) })
try {
  const rl = await import('/pkg/wasm/web.mjs')
  const transport = {
    label: 'bridge',
    async eval(script, keys, args) {
      const res = await fetch('/redis', { method: 'POST', body: JSON.stringify({ script, keys, args }) })
      const body = await res.json()
      if (body.error) throw Object.assign(new Error(body.error.message), { name: body.error.name })
      return body.ok
    },
  }
  const get = async (k) => (await fetch('/get?key=' + encodeURIComponent(k))).json()
  const name = ${JSON.stringify(name)}
  const client = rl.createClient(transport)
  const held = await client.lock(name, { leaseMs: 5000, fenced: true }).acquire()
  const during = await get(name)
  let busy = null
  try { await client.lock(name).acquire({ waitMs: 100 }) }
  catch (e) { busy = { name: e.name, code: e.code, isClass: e instanceof rl.NotAcquiredError } }
  const fencingToken = held.fencingToken
  await held.release()
  const after = await get(name)
  await report({ ok: true, during, after, busy, fencingToken, chains: rl.rlockFollowsAsyncChains(), ua: navigator.userAgent })
} catch (e) {
  await report({ ok: false, error: String((e && e.stack) || e) })
}
</script>`
}

test('headless Chromium loads the web build and takes and releases a lock through an HTTP bridge', { skip, timeout: 90_000 }, async (t) => {
  const conn = await redis()
  const name = key('browser')
  const bridge = await startBridge({ pkgDir: PKG_ROOT, redis: conn, page: page(name) })
  const profile = mkdtempSync(join(tmpdir(), 'redlatch-chromium-'))
  const browser = spawn(
    chromium,
    [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--no-first-run',
      '--no-default-browser-check',
      `--user-data-dir=${profile}`,
      bridge.url,
    ],
    { stdio: 'ignore', detached: true },
  )
  t.after(async () => {
    // The browser and its helpers are one process group, started by this test.
    try {
      process.kill(-browser.pid, 'SIGKILL')
    } catch {}
    await bridge.close()
    await conn.quit()
    rmSync(profile, { recursive: true, force: true })
  })
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no result from the page in 60 s')), 60_000)
  })
  const result = await Promise.race([bridge.result, timeout]).finally(() => clearTimeout(timer))
  assert.equal(result.ok, true, result.error)
  assert.match(result.during, /^[0-9a-f]{32}$/, 'the lock was in Redis while held')
  assert.equal(result.after, null, 'and gone after the release')
  assert.deepEqual(result.busy, { name: 'NotAcquiredError', code: 'ERR_NOT_ACQUIRED', isClass: true })
  assert.equal(typeof result.fencingToken, 'number')
  assert.equal(result.chains, false, 'no AsyncLocalStorage in a page: rlock owners are handles')
  assert.match(result.ua, /Chrome/)
})
