import Redis from 'ioredis'
import { Client } from 'redlatch'
const url = process.env.REDLATCH_TEST_URL
const redis = new Redis(url)
const client = await Client.connect(url)
const lock = client.lock('micro:' + Math.random(), { leaseMs: 10000 })
async function time(label, f, n = 20000) {
  for (let i = 0; i < 3000; i++) await f()
  const s = []
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < n; i++) { const t = performance.now(); await f(); s.push(performance.now() - t) }
  const wall = (performance.now() - t0) * 1000 / n
  const c = process.cpuUsage(c0)
  s.sort((a, b) => a - b)
  console.log(label.padEnd(12), 'p50', (s[n >> 1] * 1000).toFixed(1), 'us  wall', wall.toFixed(1), ' cpu user', (c.user / n).toFixed(1), 'sys', (c.system / n).toFixed(1))
}
for (let r = 0; r < 2; r++) {
  await time('ping', () => redis.ping())
  await time('ttl', () => lock.ttl())
  await time('acq+rel', async () => { const h = await lock.acquire(); await h.release() }, 10000)
}
await client.close(); redis.quit()
