// The native addon as the facade's engine (facade/engine.mjs). Each addon call that talks to
// Redis takes a call id, and this module keeps the Promise of the call under it (../src/calls.rs).
// With the local engine (../src/local/: the core on this thread) every call into the addon
// returns records to deliver (`deliver`): results, and what the engine asks of its host: the
// Node sockets its Redis connections run over and its one timer. The tokio engine settles
// through `settle(id, error, value)` instead; `kick` polls local tasks woken from another thread.
//
// Process lifetime: sockets and timers are unref'd, so an idle client or a held lock never
// keeps Node running; while a call is pending, one ref'd timer does (as a pending read would).

import net from 'node:net'
import tls from 'node:tls'
import { createRequire } from 'node:module'
import { toLockError } from './facade/errors.mjs'

const native = createRequire(import.meta.url)('../index.js')

/** Pending calls: id -> [resolve, reject, wrap]. */
const calls = new Map()
let lastId = 0
/** Ref'd while calls are pending (an interval that never fires in practice). */
const keeper = setInterval(() => {}, 1 << 30)
keeper.unref()

/** Starts `start(id)` and resolves to what the addon settles call `id` with (`wrap`ped). */
function call(start, wrap) {
  return new Promise((resolve, reject) => {
    const id = (lastId = (lastId + 1) >>> 0 || 1)
    calls.set(id, [resolve, reject, wrap])
    if (calls.size === 1) keeper.ref()
    let out
    try {
      out = start(id)
    } catch (err) {
      forget(id)
      reject(toLockError(err))
      return
    }
    delivered(out)
  })
}

function forget(id) {
  calls.delete(id)
  if (calls.size === 0) keeper.unref()
}

function settle(id, error, value) {
  const pending = calls.get(id)
  if (pending === undefined) return
  forget(id)
  if (error !== null) pending[1](toLockError(new Error(error)))
  else pending[0](pending[2] === undefined ? value : pending[2](value))
}

/**
 * Does what an addon call of the local engine returned (../src/local/host.rs): a flat array
 * of records, each a kind and its fields.
 */
function deliver(out) {
  for (let i = 0; i < out.length; ) {
    switch (out[i]) {
      case 0:
        settle(out[i + 1], out[i + 2], out[i + 3])
        i += 4
        break
      case 1:
        connect(out[i + 1], out[i + 2])
        i += 3
        break
      case 2:
        write(out[i + 1], out[i + 2])
        i += 3
        break
      case 3:
        destroy(out[i + 1])
        i += 2
        break
      case 4:
        setTimer(out[i + 1])
        i += 2
        break
      default:
        throw new Error(`redlatch: unknown record ${out[i]} from the addon`)
    }
  }
}

/** Delivers what an entry of the local engine returned, if anything. */
function delivered(out) {
  if (out != null) deliver(out)
}

// The local engine's sockets: id -> net.Socket | tls.TLSSocket.
const sockets = new Map()

function connect(id, spec) {
  let socket
  if (spec.path != null) socket = net.connect({ path: spec.path })
  else if (spec.tls) {
    const servername = net.isIP(spec.host) === 0 ? spec.host : undefined
    socket = tls.connect({ host: spec.host, port: spec.port, servername, rejectUnauthorized: !spec.insecure })
  } else socket = net.connect({ host: spec.host, port: spec.port })
  socket.setNoDelay(true)
  socket.unref()
  sockets.set(id, socket)
  let error = null
  socket.once(spec.tls ? 'secureConnect' : 'connect', () => delivered(native.localSocketOpen(id)))
  socket.on('data', (bytes) => delivered(native.localSocketData(id, bytes)))
  socket.on('error', (e) => (error = e.message))
  socket.once('close', () => {
    sockets.delete(id)
    delivered(native.localSocketEnd(id, error))
  })
}

// Writes of one tick go out in one writev: a socket written to is corked until the
// process.nextTick after it, so 32 loops each sending a command make one system call.
const corked = []
function write(id, latin1) {
  const socket = sockets.get(id)
  if (socket === undefined) return
  if (!socket.writableCorked) {
    socket.cork()
    if (corked.push(socket) === 1) process.nextTick(uncork)
  }
  socket.write(latin1, 'latin1')
}
function uncork() {
  for (const socket of corked.splice(0)) socket.uncork()
}

function destroy(id) {
  const socket = sockets.get(id)
  if (socket === undefined) return
  sockets.delete(id)
  socket.destroy()
}

let timer = null
function setTimer(ms) {
  if (timer !== null) clearTimeout(timer)
  timer = setTimeout(fire, ms)
  timer.unref()
}
function fire() {
  timer = null
  delivered(native.localTimer())
}

native.installLocal(settle, () => delivered(native.localDrain()))

/**
 * Connects: resolves to an engine client over `urls` (one = single node, more = quorum).
 * `local`: the core runs on this thread over Node sockets; else on the addon's tokio thread
 * over redis-rs connections.
 */
export function connectEngine(urls, options, local) {
  return call((id) => native.connect(urls, options, local, id), (raw) => new NativeEngine(raw))
}

/** A `NativeClient` as the facade's engine client. */
class NativeEngine {
  #raw

  constructor(raw) {
    this.#raw = raw
  }

  get id() {
    return this.#raw.id
  }

  get nodeCount() {
    return this.#raw.nodeCount
  }

  get closed() {
    return this.#raw.closed
  }

  lock(name, options) {
    return new NativeEngineLock(this.#raw.lock(name, options))
  }

  forceUnlock(name) {
    return call((id) => this.#raw.forceUnlock(name, id))
  }

  cancel(ticket) {
    this.#raw.cancel(ticket)
  }

  close() {
    return call((id) => this.#raw.close(id))
  }
}

const asHold = (raw) => new NativeEngineHold(raw)

class NativeEngineLock {
  #raw

  constructor(raw) {
    this.#raw = raw
  }

  acquire(waitMs, owner, ticket) {
    return call((id) => this.#raw.acquire(waitMs, owner, ticket, id), asHold)
  }

  locked() {
    return call((id) => this.#raw.locked(id))
  }

  ttl() {
    return call((id) => this.#raw.ttl(id))
  }

  holdCount(owner) {
    return call((id) => this.#raw.holdCount(owner, id))
  }
}

class NativeEngineHold {
  #raw

  constructor(raw) {
    this.#raw = raw
  }

  get fencingToken() {
    return this.#raw.fencingToken
  }

  get leaseMs() {
    return this.#raw.leaseMs
  }

  get lost() {
    return this.#raw.lost
  }

  get closedByClient() {
    return this.#raw.closedByClient
  }

  watch(onEnd) {
    this.#raw.watch(onEnd)
  }

  release() {
    return call((id) => this.#raw.release(id), discard)
  }

  extend(leaseMs) {
    return call((id) => this.#raw.extend(leaseMs, id), discard)
  }

  owned() {
    return call((id) => this.#raw.owned(id))
  }
}

function discard() {
  return undefined
}
