// The native addon as the facade's engine (facade/engine.mjs). The addon's calls settle
// through one function, `settle(id, error, value)` (../src/calls.rs), so this module keeps
// the Promise of each call under its id; it also serves the addon's local engine
// (../src/local/): the Node sockets its Redis connections run over, its one timer, and the
// `kick` that polls tasks woken from another thread.
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
    try {
      start(id)
    } catch (err) {
      forget(id)
      reject(toLockError(err))
    }
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
  socket.once(spec.tls ? 'secureConnect' : 'connect', () => native.localSocketOpen(id))
  socket.on('data', (bytes) => native.localSocketData(id, bytes))
  socket.on('error', (e) => (error = e.message))
  socket.once('close', () => {
    sockets.delete(id)
    native.localSocketEnd(id, error)
  })
}

function write(id, bytes) {
  sockets.get(id)?.write(bytes)
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
  native.localTimer()
}

native.installLocal(settle, connect, write, destroy, setTimer, () => native.localDrain())

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
