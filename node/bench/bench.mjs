// redlatch vs redlock (v5, over ioredis), in one run, on the same Redis: prints figures.
//
//   make node-bench        (release addon, Redis from target/debug/redlatch-fleet)
//   REDLATCH_TEST_URL=redis://127.0.0.1:6379 node bench/bench.mjs [--seconds S]
//
// Scenarios (each lock library with a 10 s fixed lease, the raw round trip as the yardstick):
// - uncontended: acquire + release of a free lock, one at a time (latency-bound) and with 32
//   loops on distinct keys (throughput-bound);
// - contended: C contenders on one key, each acquire (wait until acquired) + release in a
//   loop; throughput and the wait of each acquire (p50 / p99 / p99.9);
// - hand-off: one holder, one waiter; time from the holder's release() call to the waiter's
//   acquire resolving.
// Yardsticks: ioredis PING; one addon call with one round trip; and the two commands of an
// acquire + release sent through ioredis with no lock library (the floor for any library doing
// its I/O on the JavaScript thread through ioredis).
// redlock waits by retrying every `retryDelay` ms (default 200, with jitter); it is measured
// with its defaults and with retryDelay 10 ms.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'
import Redis from 'ioredis'
import Redlock from 'redlock'
import { Client } from 'redlatch'

const require = createRequire(import.meta.url)
const url = process.env.REDLATCH_TEST_URL
if (!url) throw new Error('set REDLATCH_TEST_URL (or run through target/debug/redlatch-fleet)')
const argSeconds = process.argv.indexOf('--seconds')
const SECONDS = argSeconds > 0 ? Number(process.argv[argSeconds + 1]) : 3
const LEASE = 10_000
const CONTENDERS = 8

const redis = new Redis(url)
const client = await Client.connect(url)
const run = Math.random().toString(36).slice(2, 8)
let seq = 0
const key = (label) => `bench:${run}:${label}:${++seq}`

function pct(sorted, p) {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]
}
function summary(samples) {
  const s = Float64Array.from(samples).sort()
  return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), p999: pct(s, 99.9), max: s[s.length - 1] }
}
const ms = (v) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 3 : 1) : 'n/a')

// Adapters: acquire(name) -> release function.
const redlatch = {
  label: 'redlatch',
  async acquire(name) {
    const held = await client.lock(name, { leaseMs: LEASE }).acquire()
    return () => held.release()
  },
}
function redlockAdapter(label, settings) {
  const rl = new Redlock([redis], settings)
  rl.on('error', () => {}) // contention errors are expected while retrying
  return {
    label,
    async acquire(name) {
      const lock = await rl.acquire([name], LEASE)
      return () => lock.release()
    },
  }
}
const redlockDefault = redlockAdapter('redlock (retryDelay 200)', { retryCount: -1 })
const redlockFast = redlockAdapter('redlock (retryDelay 10)', { retryCount: -1, retryDelay: 10, retryJitter: 10 })

async function timeLoop(seconds, body) {
  const end = performance.now() + seconds * 1000
  let n = 0
  while (performance.now() < end) {
    await body()
    n++
  }
  return n
}

async function roundTrip() {
  for (let i = 0; i < 500; i++) await redis.ping()
  const samples = []
  const t = performance.now()
  const n = await timeLoop(1, async () => {
    const t0 = performance.now()
    await redis.ping()
    samples.push(performance.now() - t0)
  })
  return { ops: n / ((performance.now() - t) / 1000), ...summary(samples) }
}

async function uncontended(lib) {
  const name = key('u')
  for (let i = 0; i < 200; i++) await (await lib.acquire(name))()
  const samples = []
  const t = performance.now()
  const n = await timeLoop(SECONDS, async () => {
    const t0 = performance.now()
    const release = await lib.acquire(name)
    await release()
    samples.push(performance.now() - t0)
  })
  return { ops: n / ((performance.now() - t) / 1000), ...summary(samples) }
}

async function uncontendedParallel(lib, loops = 32) {
  const names = Array.from({ length: loops }, () => key('up'))
  const t = performance.now()
  const counts = await Promise.all(
    names.map((name) => timeLoop(SECONDS, async () => (await lib.acquire(name))())),
  )
  return { ops: counts.reduce((a, b) => a + b, 0) / ((performance.now() - t) / 1000) }
}

async function contended(lib, contenders = CONTENDERS) {
  const name = key('c')
  const waits = []
  const end = performance.now() + SECONDS * 1000
  const t = performance.now()
  let ops = 0
  await Promise.all(
    Array.from({ length: contenders }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now()
        const release = await lib.acquire(name)
        waits.push(performance.now() - t0)
        ops++
        await release()
      }
    }),
  )
  return { ops: ops / ((performance.now() - t) / 1000), ...summary(waits) }
}

async function handoff(lib, rounds) {
  const name = key('h')
  const samples = []
  for (let i = 0; i < rounds; i++) {
    const release = await lib.acquire(name)
    const waiter = lib.acquire(name)
    await sleep(lib === redlatch ? 2 : 5) // let the waiter start waiting (subscribe / first retry)
    const t0 = performance.now()
    const releasing = release()
    const next = await waiter
    samples.push(performance.now() - t0)
    await releasing
    await next()
  }
  return summary(samples)
}

// The floor of any library doing its I/O through ioredis on the JavaScript thread: the two
// commands of an uncontended acquire + release, with no lock library around them.
async function ioredisPair() {
  const sha = await redis.script('load', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end")
  const name = key('floor')
  const pair = async (i) => {
    await redis.set(name, `t${i}`, 'PX', LEASE, 'NX')
    await redis.evalsha(sha, 1, name, `t${i}`)
  }
  for (let i = 0; i < 300; i++) await pair(i)
  const t = performance.now()
  const n = await timeLoop(SECONDS, () => pair(seq++))
  return { ops: n / ((performance.now() - t) / 1000) }
}

// One call into the addon that makes one Redis round trip (the lock's PTTL): its excess over
// the ioredis PING is the cost of handing the call to the addon's tokio thread and back.
async function nativeCall() {
  const lock = client.lock(key('call'), { leaseMs: LEASE })
  for (let i = 0; i < 300; i++) await lock.ttl()
  const samples = []
  const t = performance.now()
  const n = await timeLoop(1, async () => {
    const t0 = performance.now()
    await lock.ttl()
    samples.push(performance.now() - t0)
  })
  return { ops: n / ((performance.now() - t) / 1000), ...summary(samples) }
}

const loop = monitorEventLoopDelay({ resolution: 1 })
const results = {}
console.log(`redlatch ${require('redlatch/package.json').version} vs redlock 5 (ioredis ${require('ioredis/package.json').version}), Redis ${url}, ${SECONDS} s per scenario, node ${process.version}`)
const rtt = await roundTrip()
console.log(`raw round trip (ioredis PING): ${rtt.ops.toFixed(0)} ops/s, p50 ${ms(rtt.p50)} ms, p99 ${ms(rtt.p99)} ms`)
const call = await nativeCall()
console.log(`one redlatch call with one round trip (lock.ttl()): ${call.ops.toFixed(0)} ops/s, p50 ${ms(call.p50)} ms, p99 ${ms(call.p99)} ms`)
const floor = await ioredisPair()

for (const lib of [redlatch, redlockDefault]) {
  results[lib.label] = { uncontended: await uncontended(lib) }
}
for (const lib of [redlatch, redlockDefault]) {
  results[lib.label].parallel = await uncontendedParallel(lib)
}
loop.enable()
results[redlatch.label].contended = await contended(redlatch)
loop.disable()
const loopDuringContention = { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }
for (const lib of [redlockDefault, redlockFast]) {
  results[lib.label] ??= {}
  results[lib.label].contended = await contended(lib)
}
results[redlatch.label].handoff = await handoff(redlatch, 300)
results[redlockDefault.label].handoff = await handoff(redlockDefault, 15)
results[redlockFast.label].handoff = await handoff(redlockFast, 100)

console.log('\nuncontended acquire+release, one at a time')
for (const [label, r] of Object.entries(results)) {
  if (!r.uncontended) continue
  const u = r.uncontended
  console.log(`  ${label.padEnd(26)} ${u.ops.toFixed(0).padStart(7)} ops/s   p50 ${ms(u.p50)} ms   p99 ${ms(u.p99)} ms`)
}
console.log(`  ${'ioredis SET NX + EVALSHA'.padEnd(26)} ${floor.ops.toFixed(0).padStart(7)} ops/s   (no lock library: ${(floor.ops / results[redlockDefault.label].uncontended.ops).toFixed(2)}x redlock)`)
console.log('uncontended acquire+release, 32 loops on distinct keys')
for (const [label, r] of Object.entries(results)) {
  if (r.parallel) console.log(`  ${label.padEnd(26)} ${r.parallel.ops.toFixed(0).padStart(7)} ops/s`)
}
console.log(`contended: ${CONTENDERS} contenders on one key (acquire, release, repeat)`)
for (const [label, r] of Object.entries(results)) {
  const c = r.contended
  if (c) {
    console.log(
      `  ${label.padEnd(26)} ${c.ops.toFixed(0).padStart(7)} ops/s   wait p50 ${ms(c.p50)} ms   p99 ${ms(c.p99)} ms   p99.9 ${ms(c.p999)} ms   max ${ms(c.max)} ms`,
    )
  }
}
console.log('hand-off: release() call -> waiter acquired')
for (const [label, r] of Object.entries(results)) {
  const h = r.handoff
  if (h) console.log(`  ${label.padEnd(26)} n=${String(h.n).padEnd(4)} p50 ${ms(h.p50)} ms   p99 ${ms(h.p99)} ms   max ${ms(h.max)} ms`)
}
console.log(`event-loop delay during the redlatch contended run: p99 ${ms(loopDuringContention.p99)} ms, max ${ms(loopDuringContention.max)} ms`)

const ours = results[redlatch.label]
const theirs = results[redlockDefault.label]
const speedup = ours.uncontended.ops / theirs.uncontended.ops
const checks = [
  [`uncontended >= 1.5x redlock (${speedup.toFixed(2)}x)`, speedup >= 1.5],
  [`hand-off p50 <= 1 ms (${ms(ours.handoff.p50)} ms)`, ours.handoff.p50 <= 1],
  [`contended wait p99.9 <= 50 ms (${ms(ours.contended.p999)} ms)`, ours.contended.p999 <= 50],
]
console.log('\ntargets')
for (const [what, ok] of checks) console.log(`  ${ok ? 'met ' : 'MISS'}  ${what}`)

await client.close()
redis.quit()
