// Shared by bench.mjs and the profile scripts: runs `body` one call at a time for `ms`
// milliseconds and returns how many calls completed.
export async function timeLoop(ms, body) {
  const end = performance.now() + ms
  let n = 0
  while (performance.now() < end) {
    await body()
    n++
  }
  return n
}
