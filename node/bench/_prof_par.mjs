// Profiling loop for the 32-loop figure (README "Design"): LOOPS concurrent acquire + release
// loops on distinct keys for MS ms, through redlatch (LIB=redlatch, the default engine) or
// redlock (LIB=redlock); prints pairs/s and the process's CPU per pair (user + system, and
// the JavaScript thread's alone from /proc/self/task), and Redis' CPU per pair. Run it under
// `node --cpu-prof` or `perf record -g node --perf-basic-prof` for where the time goes.
//   REDLATCH_TEST_URL=redis://... LIB=redlatch [PKG=dir] node bench/_prof_par.mjs
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import { resolve } from 'node:path'
import Redis from 'ioredis'
import Redlock from 'redlock'
import { timeLoop } from './timing.mjs'

const url = process.env.REDLATCH_TEST_URL
const LIB = process.env.LIB ?? 'redlatch'
const MS = Number(process.env.MS ?? 5000)
const LOOPS = Number(process.env.LOOPS ?? 32)
const run = Math.random().toString(36).slice(2, 8)
const redis = new Redis(url)
let acquire
if (LIB === 'redlock') {
  const rl = new Redlock([redis], { retryCount: -1 })
  rl.on('error', () => {})
  acquire = async (name) => {
    const lock = await rl.acquire([name], 10000)
    return () => lock.release()
  }
} else {
  const pkg = process.env.PKG ?? new URL('..', import.meta.url).pathname
  const { Client } = await import(pathToFileURL(resolve(pkg, 'lib/index.mjs')).href)
  const client = await Client.connect(url)
  acquire = async (name) => {
    const held = await client.lock(name, { leaseMs: 10000 }).acquire()
    return () => held.release()
  }
}
const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))[1])
const ticks = (path) => {
  const f = readFileSync(path, 'utf8').split(') ')[1].split(' ')
  return (Number(f[11]) + Number(f[12])) * 1e4 // us (100 Hz)
}
const names = Array.from({ length: LOOPS }, (_, i) => `prof:${run}:${i}`)
for (let i = 0; i < 300; i++) await (await acquire(names[0]))()
await Promise.all(names.map((name) => timeLoop(500, async () => (await acquire(name))())))
const t = performance.now()
const cpu = process.cpuUsage()
const js = ticks(`/proc/self/task/${process.pid}/stat`)
const rc = ticks(`/proc/${redisPid}/stat`)
const counts = await Promise.all(names.map((name) => timeLoop(MS, async () => (await acquire(name))())))
const n = counts.reduce((a, b) => a + b, 0)
const used = process.cpuUsage(cpu)
const secs = (performance.now() - t) / 1000
const per = (us) => (us / n).toFixed(1)
console.log(
  `${LIB}: ${(n / secs).toFixed(0)} pairs/s; CPU per pair: process ${per(used.user + used.system)} us ` +
    `(user ${per(used.user)}, sys ${per(used.system)}), JS thread ${per(ticks(`/proc/self/task/${process.pid}/stat`) - js)} us, ` +
    `Redis ${per(ticks(`/proc/${redisPid}/stat`) - rc)} us`,
)
process.exit(0)
