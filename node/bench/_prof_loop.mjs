// Profiling loop for the per-call breakdown (README "Design"): MODE=ttl (lock.ttl()) or
// MODE=acq (acquire + release), 30,000 times, one at a time; run it under
// `node --cpu-prof` (JavaScript) or `perf record -g node --perf-basic-prof` (native side).
//   REDLATCH_TEST_URL=redis://... MODE=ttl [REDLATCH_NODE_IO=local] node bench/_prof_loop.mjs
import { Client } from 'redlatch'
const url = process.env.REDLATCH_TEST_URL
const client = await Client.connect(url)
const lock = client.lock('prof:' + Math.random(), { leaseMs: 10000 })
const mode = process.env.MODE
const n = 30000
const t0 = performance.now()
for (let i = 0; i < n; i++) {
  if (mode === 'ttl') await lock.ttl()
  else { const h = await lock.acquire(); await h.release() }
}
console.log(mode, process.env.REDLATCH_NODE_IO ?? 'tokio', ((performance.now() - t0) * 1000 / n).toFixed(1), 'us/iter')
await client.close()
