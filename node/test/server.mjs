// A redis-server of a suite's own, for what must not touch the fleet's shared servers
// (CLIENT KILL of every client, CONFIG SET timeout, SIGSTOP, a restart, TLS, a password):
// the fleet harness's rules (tests/fleet): a free 127.0.0.1 port picked at run time, its own
// temporary directory, no persistence, and it is stopped by pid by the handle that started it.
import { spawn, execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

/** A port nothing listens on right now (the OS picks it). */
export async function freePort() {
  const server = net.createServer()
  await new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** `true` when `host:port` accepts a TCP connection. */
function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts redis-server with `args` (e.g. `['--requirepass', 'x']`); `tls` (from `tlsFiles`)
 * serves TLS only. Resolves to a handle: `port`, `url`, `pause()` (SIGSTOP), `resume()`,
 * `restart()` (same port and options), `stop()`.
 */
export async function startServer({ args = [], tls = null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'redlatch-node-redis-'))
  const port = await freePort()
  const portArgs = tls
    ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.cert, '--tls-key-file', tls.key,
       '--tls-ca-cert-file', tls.ca, '--tls-auth-clients', 'no']
    : ['--port', String(port)]
  const all = ['--bind', '127.0.0.1', ...portArgs, '--save', '', '--appendonly', 'no', '--dir', dir, ...args]
  let child = null
  const launch = async () => {
    child = spawn('redis-server', all, { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const deadline = Date.now() + 10_000
    while (!(await accepts(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        child.kill('SIGKILL')
        throw new Error(`redis-server did not start on port ${port}: ${stderr}`)
      }
      await sleep(20)
    }
  }
  const stop = async () => {
    if (child === null || child.exitCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGCONT')
    child.kill('SIGTERM')
    await exited
  }
  await launch()
  return {
    port,
    url: `${tls ? 'rediss' : 'redis'}://127.0.0.1:${port}`,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async restart() {
      await stop()
      await launch()
    },
    async stop() {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * A CA and a server certificate for `localhost` / 127.0.0.1 made with the openssl CLI, or
 * null when openssl is missing. Returns file paths `{ ca, cert, key, dir }`.
 */
export function tlsFiles() {
  const dir = mkdtempSync(join(tmpdir(), 'redlatch-node-tls-'))
  const openssl = (...a) => execFileSync('openssl', a, { cwd: dir, stdio: 'pipe' })
  try {
    openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=redlatch test CA')
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext')
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return null
  }
  return { ca: join(dir, 'ca.crt'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key'), dir }
}
