// Interleaved micro-measurements: median CPU µs/op (process.cpuUsage) and wall µs/op over rounds.
import Redis from 'ioredis'
import Redlock from 'redlock'
import { Client } from 'redlatch'
import { connectEngine } from '../lib/engine.mjs'
const url = process.env.REDLATCH_TEST_URL
const redis = new Redis(url)
const client = await Client.connect(url)
const eng = await connectEngine([url], {}, true)
const rl = new Redlock([redis], { retryCount: -1 })
const name = 'micro:' + Math.random()
const lock = client.lock(name, { leaseMs: 10000 })
const elock = eng.lock(name + 'e', { reentrant: false, leaseMs: 10000 })
const sha = await redis.script('load', "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end")
let i = 0
const modes = {
  ping: () => redis.ping(),
  ttl: () => lock.ttl(),
  ettl: () => elock.ttl(),
  eacq: async () => { const h = await elock.acquire(null, null, ++i); await h.release() },
  acq: async () => { const h = await lock.acquire(); await h.release() },
  acqnew: async () => { const h = await client.lock(name + 'n', { leaseMs: 10000 }).acquire(); await h.release() },
  newlock: async () => { client.lock(name + 'n', { leaseMs: 10000 }) },
  redlock: async () => { const l = await rl.acquire([name + 'r'], 10000); await l.release() },
  pair: async () => { await redis.set(name + 'p', `t${++i}`, 'PX', 10000, 'NX'); await redis.evalsha(sha, 1, name + 'p', `t${i}`) },
}
const which = (process.argv[2] ?? 'ping,ttl,acq,acqnew,redlock,pair').split(',')
const ROUNDS = Number(process.env.ROUNDS ?? 7), N = Number(process.env.N ?? 3000)
const res = Object.fromEntries(which.map((w) => [w, { cpu: [], wall: [] }]))
for (const w of which) for (let k = 0; k < 1000; k++) await modes[w]()
for (let r = 0; r < ROUNDS; r++) {
  for (const w of which) {
    const f = modes[w]
    const c0 = process.cpuUsage(), t0 = performance.now()
    for (let k = 0; k < N; k++) await f()
    const c = process.cpuUsage(c0)
    res[w].cpu.push((c.user + c.system) / N); res[w].wall.push((performance.now() - t0) * 1000 / N)
  }
}
const med = (a) => a.sort((x, y) => x - y)[a.length >> 1]
for (const w of which) console.log(w.padEnd(8), 'cpu', med(res[w].cpu).toFixed(1).padStart(6), 'us/op  wall', med(res[w].wall).toFixed(1).padStart(6), 'us/op')
await client.close(); await eng.close(); redis.quit()
