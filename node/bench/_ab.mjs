// A/B of the local engine between builds, in one process, taking turns with redlock (the
// per-call work of issue #15 item 1: README "Design"). Each argument is a package folder
// (its lib/index.mjs and the addon beside it; default: this package): e.g. a copy of the
// package at main with its release addon, then this one.
//   REDLATCH_TEST_URL=redis://... node --expose-gc bench/_ab.mjs [DIR ...] [--rounds R] [--ms M]
// Prints, per library: sequential acquire + release (ops/s, p50, vs redlock, the process's
// CPU time per acquire + release, garbage collection included) and 32 loops on
// distinct keys (ops/s, vs redlock), over R rounds of M ms turns, with the load averages.
import { loadavg } from 'node:os'
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Redis from 'ioredis'
import Redlock from 'redlock'
import { timeLoop } from './timing.mjs'

const url = process.env.REDLATCH_TEST_URL
if (!url) throw new Error('set REDLATCH_TEST_URL (or run through target/debug/redlatch-fleet)')
const argv = process.argv.slice(2)
const opt = (name, fallback) => {
  const i = argv.indexOf(name)
  if (i < 0) return fallback
  const v = Number(argv[i + 1])
  argv.splice(i, 2)
  return v
}
const ROUNDS = opt('--rounds', 4)
const TURN = opt('--ms', 1000)
const ENGINE = process.env.AB_ENGINE ?? 'local'
const dirs = argv.length > 0 ? argv : [new URL('..', import.meta.url).pathname]
const LEASE = 10_000
const LOOPS = 32
const run = Math.random().toString(36).slice(2, 8)
let seq = 0
const key = (label) => `ab:${run}:${label}:${++seq}`
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ')

const libs = []
for (const [i, dir] of dirs.entries()) {
  const { Client } = await import(pathToFileURL(resolve(dir, 'lib/index.mjs')).href)
  if (ENGINE === 'local') process.env.REDLATCH_NODE_IO = 'local'
  const client = await Client.connect(url)
  delete process.env.REDLATCH_NODE_IO
  libs.push({
    label: `${String.fromCharCode(65 + i)} ${dir}`,
    async acquire(name) {
      const held = await client.lock(name, { leaseMs: LEASE }).acquire()
      return () => held.release()
    },
    close: () => client.close(),
  })
}
const redis = new Redis(url)
const redlock = new Redlock([redis], { retryCount: -1 })
redlock.on('error', () => {})
libs.push({
  label: 'redlock',
  async acquire(name) {
    const lock = await redlock.acquire([name], LEASE)
    return () => lock.release()
  },
  close: async () => {},
})

async function collect() {
  if (typeof globalThis.gc !== 'function') return
  globalThis.gc()
  await sleep(1)
}
const state = libs.map((lib) => ({
  lib,
  name: key('s'),
  names: Array.from({ length: LOOPS }, () => key('p')),
  seq: { n: 0, s: 0, cpu: 0, samples: [] },
  par: { n: 0, s: 0, cpu: 0, redis: 0 },
}))
// Redis' own CPU time (us), from its /proc entry (the server runs on this machine).
const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))[1])
const HZ = 100
function redisCpu() {
  const fields = readFileSync(`/proc/${redisPid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / HZ
}
const startLoad = load()
for (const s of state) for (let i = 0; i < 500; i++) await (await s.lib.acquire(s.name))()
for (let r = 0; r < ROUNDS; r++) {
  for (const s of state) {
    const t = performance.now()
    const cpu = process.cpuUsage()
    s.seq.n += await timeLoop(TURN, async () => {
      const t0 = performance.now()
      await (await s.lib.acquire(s.name))()
      s.seq.samples.push(performance.now() - t0)
    })
    await collect()
    const used = process.cpuUsage(cpu)
    s.seq.cpu += used.user + used.system
    s.seq.s += (performance.now() - t) / 1000
  }
  for (const s of state) {
    const t = performance.now()
    const cpu = process.cpuUsage()
    const rcpu = redisCpu()
    const counts = await Promise.all(s.names.map((name) => timeLoop(TURN, async () => (await s.lib.acquire(name))())))
    await collect()
    const used = process.cpuUsage(cpu)
    s.par.cpu += used.user + used.system
    s.par.redis += redisCpu() - rcpu
    s.par.n += counts.reduce((a, b) => a + b, 0)
    s.par.s += (performance.now() - t) / 1000
  }
}
const theirs = state[state.length - 1]
const seqBase = theirs.seq.n / theirs.seq.s
const parBase = theirs.par.n / theirs.par.s
console.log(`engine ${ENGINE}, ${ROUNDS} rounds of ${TURN} ms turns; load ${startLoad} -> ${load()}`)
for (const s of state) {
  const sorted = Float64Array.from(s.seq.samples).sort()
  const p50 = sorted[sorted.length >> 1] * 1000
  const seqOps = s.seq.n / s.seq.s
  const parOps = s.par.n / s.par.s
  console.log(
    `  ${s.lib.label.padEnd(40)} seq ${seqOps.toFixed(0).padStart(6)} ops/s p50 ${p50.toFixed(0).padStart(4)} us ` +
      `${(seqOps / seqBase).toFixed(2)}x cpu ${(s.seq.cpu / s.seq.n).toFixed(0).padStart(3)} us/op   32 loops ${parOps.toFixed(0).padStart(6)} ops/s ${(parOps / parBase).toFixed(2)}x cpu ${(s.par.cpu / s.par.n).toFixed(1)} us/op redis ${(s.par.redis / s.par.n).toFixed(1)} us/op`,
  )
}
for (const s of state) await s.lib.close()
redis.quit()
