// Yardstick for the per-call breakdown (README "Design"): one redlatch call with one round
// trip (`lock.ttl()`, an EVALSHA) next to ioredis PING and an ioredis EVALSHA of a one-key
// script, one at a time, with the process's CPU per call and Redis' own time per command
// (INFO commandstats usec_per_call).
//   REDLATCH_TEST_URL=redis://... [REDLATCH_NODE_IO=local] node bench/_prof_yardstick.mjs
import Redis from 'ioredis'
import { Client } from 'redlatch'
const url = process.env.REDLATCH_TEST_URL
const redis = new Redis(url)
const client = await Client.connect(url)
const name = 'yard:' + Math.random()
const lock = client.lock(name, { leaseMs: 10000 })
const sha = await redis.script('LOAD', "return redis.call('PTTL', KEYS[1])")
async function time(label, f, n = 20000) {
  for (let i = 0; i < 2000; i++) await f()
  await redis.config('RESETSTAT')
  const s = new Float64Array(n)
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) { const t = performance.now(); await f(); s[i] = performance.now() - t }
  const wall = ((performance.now() - t0) * 1000) / n
  const c = process.cpuUsage(c0)
  const stats = await redis.info('commandstats')
  const server = [...stats.matchAll(/cmdstat_(\w+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/g)]
    .filter((m) => Number(m[2]) >= n / 2).map((m) => `${m[1]} ${m[3]} us`).join(', ')
  s.sort()
  console.log(label.padEnd(22), 'p50', (s[n >> 1] * 1000).toFixed(1).padStart(6), 'us  mean', wall.toFixed(1).padStart(6),
    'us  cpu/op user', (c.user / n).toFixed(1), 'sys', (c.system / n).toFixed(1), ' redis:', server)
}
for (let r = 0; r < 2; r++) {
  await time('ioredis PING', () => redis.ping())
  await time('ioredis EVALSHA', () => redis.evalsha(sha, 1, name))
  await time('redlatch lock.ttl()', () => lock.ttl())
}
await client.close(); redis.quit()
