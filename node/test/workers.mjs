// Child processes for the multi-process tests of the lock family: each runs
// fixtures/kinds-worker.mjs with its own client (of the given entry) and is driven by
// commands (`worker.call(op, args)` resolves to the command's answer). Killed with SIGKILL
// to play a holder or waiter that dies; `stop()` ends them all.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { REDIS_URL } from './helpers.mjs'

const script = fileURLToPath(new URL('./fixtures/kinds-worker.mjs', import.meta.url))

export class Worker {
  #child
  #pending = new Map()
  #next = 1
  /** Resolves when the child is connected. */
  ready

  constructor(entry, options) {
    const cfg = { entry, url: REDIS_URL, options }
    this.#child = spawn(process.execPath, [script, JSON.stringify(cfg)], { stdio: ['pipe', 'pipe', 'inherit'] })
    this.ready = new Promise((resolve, reject) => this.#pending.set(0, { resolve, reject }))
    createInterface({ input: this.#child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line)
      const p = this.#pending.get(msg.id)
      if (p === undefined) return
      this.#pending.delete(msg.id)
      if (msg.ok) p.resolve(msg.value)
      else p.reject(Object.assign(new Error(msg.error.message), msg.error))
    })
    this.#child.once('exit', (code, signal) => {
      for (const p of this.#pending.values()) p.reject(new Error(`worker exited (${code ?? signal})`))
      this.#pending.clear()
    })
  }

  get pid() {
    return this.#child.pid
  }

  /** Sends command `op` with `args`; resolves to its answer. */
  call(op, args = {}) {
    const id = this.#next++
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject })
      this.#child.stdin.write(`${JSON.stringify({ id, op, ...args })}\n`)
    })
  }

  /** Kills the process at once (SIGKILL): its holds and queue places are left behind. */
  kill() {
    this.#child.kill('SIGKILL')
    return new Promise((resolve) => (this.#child.exitCode !== null || this.#child.signalCode !== null ? resolve() : this.#child.once('exit', resolve)))
  }

  /** Ends the process cleanly (its client closes). */
  stop() {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return Promise.resolve()
    const exited = new Promise((resolve) => this.#child.once('exit', resolve))
    this.#child.stdin.end()
    return exited
  }
}

/** `n` connected workers of `entry`. */
export async function workers(entry, n, options) {
  const list = Array.from({ length: n }, () => new Worker(entry, options))
  await Promise.all(list.map((w) => w.ready))
  return list
}
