// The native addon as the facade's engine (facade/engine.mjs).
//
// Each addon call that talks to Redis takes a call id, and this module keeps the Promise of
// the call under it (../src/calls.rs). With the local engine (../src/local/: the core on this
// thread, its I/O on Node sockets) every call into the addon hands back records to deliver:
// numbers in `out`, text as its return value (../src/local/host.rs): results, and what the
// engine asks of its host (open, write to and close the sockets its Redis connections run
// over, and set its one timer: local-sockets.mjs). The tokio engine settles through `settle`
// instead. `kick` polls local tasks woken from another thread. Holds are numbers in the
// client's table; a FinalizationRegistry (deferred-registry.mjs for holds) drops the entry of
// a hold whose object is collected.
//
// Process lifetime: sockets and timers are unref'd, so an idle client or a held lock never
// keeps Node running; while a call is pending, one ref'd timer does (as a pending read would).

import { createRequire } from 'node:module'
import { InvalidArgumentError, toLockError } from './facade/errors.mjs'
import { useOwnerNumbers } from './facade/owner.mjs'
import { emitWarning } from './deployment.mjs'
import { DeferredRegistry } from './deferred-registry.mjs'
import { localSockets } from './local-sockets.mjs'
import {
  NativeEngineLatch,
  NativeEngineMultiLock,
  NativeEnginePermitSemaphore,
  NativeEngineSemaphore,
} from './family-engine.mjs'

const native = createRequire(import.meta.url)('../index.js')
// Reentrant owners are numbered by the core (facade/owner.mjs).
useOwnerNumbers(native.newOwner)

/** The records an entry of the local engine writes (out[0] = slots used after it). */
const out = new Float64Array(4096)

/**
 * Pending calls: `calls[id]` = [resolve, reject, wrap], ids reused once settled (`free`).
 * Not a Map: a Map whose keys keep changing is rebuilt every few dozen calls, and each
 * rebuilt table links to the next; once one of them had been promoted to the old generation,
 * every later table, with the calls in it (their promises, closures and holds), was kept
 * through each young-generation collection until the next full one: 2.5 MB promoted per
 * scavenge, scavenges of 4-6 ms instead of 0.3 ms, in about half of the 32-loop runs (README
 * "Fewer promises per call").
 */
const calls = [undefined]
/** Ids of settled calls, for reuse. */
const free = []
let pendingCount = 0
/** Ref'd while calls are pending (an interval that never fires in practice). */
const keeper = setInterval(() => {}, 1 << 30)
keeper.unref()

/** Starts `start(id)` and resolves to what call `id` settles with (`wrap(a, b, c)`ped). */
function call(start, wrap) {
  return new Promise((resolve, reject) => {
    const id = free.length > 0 ? free.pop() : calls.length
    calls[id] = [resolve, reject, wrap]
    if (++pendingCount === 1) keeper.ref()
    let text
    try {
      text = start(id)
    } catch (err) {
      forget(id)
      reject(toLockError(err))
      return
    }
    deliver(text)
  })
}

function forget(id) {
  calls[id] = undefined
  free.push(id)
  if (--pendingCount === 0) keeper.unref()
}

// Kinds of a settle record (../src/calls.rs `kind`).
const UNDEFINED = 0
const FALSE = 1
const TRUE = 2
const NUMBER = 3
const HOLD = 5
const ERROR = 6

/** Settles call `id`: `kind` and its numbers, or for ERROR the error's JSON `text`. */
function settle(id, kind, a, b, c, text) {
  const pending = calls[id]
  if (pending === undefined) return
  forget(id)
  if (kind === ERROR) {
    pending[1](toLockError(new Error(text)))
    return
  }
  const value =
    kind === UNDEFINED ? undefined : kind === FALSE ? false : kind === TRUE ? true : kind === NUMBER || kind === HOLD ? a : null
  pending[0](pending[2] === undefined ? value : pending[2](value, b, c))
}

/** Delivers the records the last entry of the local engine wrote, with its `text`. */
function deliver(text) {
  const n = out[0]
  if (n === 0) return
  out[0] = 0
  for (let i = 1; i <= n; ) {
    switch (out[i]) {
      case 0: {
        const kind = out[i + 2]
        const error = kind === ERROR ? text.substring(out[i + 3], out[i + 3] + out[i + 4]) : null
        settle(out[i + 1], kind, out[i + 3], out[i + 4], out[i + 5], error)
        i += 6
        break
      }
      case 1:
        connect(out[i + 1], out[i + 2], out[i + 3], text.substring(out[i + 4], out[i + 4] + out[i + 5]))
        i += 6
        break
      case 2: {
        const at = out[i + 2]
        const len = out[i + 3]
        write(out[i + 1], at === 0 && len === text.length ? text : text.substring(at, at + len))
        i += 4
        break
      }
      case 3:
        destroy(out[i + 1])
        i += 2
        break
      case 4:
        setTimer(out[i + 1])
        i += 2
        break
      case 5:
        // A socket whose client is gone while replies are owed (the addon's conn.rs `Owner`).
        setTimeout(destroy, out[i + 2], out[i + 1]).unref()
        i += 3
        break
      default:
        throw new Error(`redlatch: unknown record ${out[i]} from the addon`)
    }
  }
}

const { connect, write, destroy, setTimer } = localSockets(native, out, deliver)

native.installLocal(settle, () => deliver(native.localDrain(out)))

/**
 * Connects: resolves to an engine client over `urls` (one = single node or the deployment
 * its URL names, more = quorum; `cluster`: seeds of a Redis Cluster). `local`: the core runs
 * on this thread over Node sockets; else on the addon's tokio thread over redis-rs
 * connections. Deployment warnings become Node warnings (deployment.mjs).
 */
export function connectEngine(urls, options, local, cluster) {
  let raw
  try {
    raw = new native.NativeClient(urls, options, local, cluster, emitWarning)
  } catch (err) {
    return Promise.reject(toLockError(err))
  }
  return call(
    (id) => raw.connect(id, out),
    () => new NativeEngine(raw),
  )
}

/** `call` for the family's engine classes: `start(id, out)` (family-engine.mjs). */
function run(start, wrap) {
  return call((id) => start(id, out), wrap)
}

/** A `NativeClient` as the facade's engine client. */
class NativeEngine {
  #raw
  /** Drops the table entry of a hold whose object was collected (released in the background if need be). */
  #holds
  /** The same for permits and multi-lock acquisitions. */
  #permits
  #multis

  /**
   * Lease settings `checkLock` accepted on this client, per lock kind (unfenced locks): a
   * later `lock()` with the same kind and lease and a name that cannot be too long needs no
   * addon call (the core checks everything again at each acquire). `client.lock(name)` per
   * acquire is a common pattern, and the check cost about 1 us of the 32-loop pair's ~20
   * (README "Fewer promises per call").
   */
  #checked = [new Set(), new Set(), new Set(), new Set(), new Set()]
  /** close() was called: every check goes to the addon again (it throws on a closed client). */
  #closing = false

  constructor(raw) {
    this.#raw = raw
    this.#holds = new DeferredRegistry((hold) => raw.dropHold(hold))
    this.#permits = new FinalizationRegistry((permit) => raw.dropPermit(permit))
    this.#multis = new FinalizationRegistry((multi) => raw.dropMulti(multi))
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
    const kind = KIND[options.kind]
    const leaseMs = options.leaseMs ?? null
    const fenced = options.fenced === true
    const fenceTtlMs = options.fenceTtlMs ?? null
    // The facade checked the name's type, emptiness and form (facade/args.mjs); the core's
    // remaining rule is at most 4,096 UTF-8 bytes, which 1,365 UTF-16 units never exceed.
    const plain = !fenced && fenceTtlMs === null
    const known = plain && !this.#closing && name.length <= 1365 && this.#checked[kind].has(leaseMs)
    if (!known) {
      this.#raw.checkLock(name, kind, leaseMs, null, fenced, fenceTtlMs)
      if (plain) this.#checked[kind].add(leaseMs)
    }
    return new NativeEngineLock(this.#raw, this.#holds, name, kind, leaseMs, fenced, fenceTtlMs)
  }

  forceUnlock(name) {
    return call((id) => this.#raw.forceUnlock(name, id, out))
  }

  semaphore(name, permits) {
    return new NativeEngineSemaphore(this.#raw.semaphore(name, permits), run)
  }

  permitSemaphore(name, permits) {
    return new NativeEnginePermitSemaphore(this.#raw, this.#raw.permitSemaphore(name, permits), run, this.#permits)
  }

  countDownLatch(name) {
    this.#raw.checkLock(name, KIND.lease, null, null, false, null) // the name, and not closed
    return new NativeEngineLatch(this.#raw, name, run)
  }

  multiLock(members, { leaseMs }) {
    const specs = members.map((m) => {
      if (!(m instanceof NativeEngineLock) || m.client !== this.#raw) {
        throw new InvalidArgumentError('a multi-lock takes locks of one client only')
      }
      return m.member
    })
    return new NativeEngineMultiLock(this.#raw, specs, leaseMs ?? null, run, this.#multis)
  }

  cancel(ticket) {
    this.#raw.cancel(ticket)
  }

  close() {
    this.#closing = true
    return call((id) => this.#raw.close(id, out))
  }
}

/** Lock kinds as the addon numbers them (../src/lock.rs `Kind`). */
const KIND = { lease: 0, reentrant: 1, fair: 2, read: 3, write: 4 }

class NativeEngineLock {
  #raw
  #holds
  #name
  #kind
  #leaseMs
  #fenced
  #fenceTtlMs

  constructor(raw, holds, name, kind, leaseMs, fenced, fenceTtlMs) {
    this.#raw = raw
    this.#holds = holds
    this.#name = name
    this.#kind = kind
    this.#leaseMs = leaseMs
    this.#fenced = fenced
    this.#fenceTtlMs = fenceTtlMs
  }

  get client() {
    return this.#raw
  }

  /** This lock as a multi-lock member (../src/multi.rs `MultiMember`). */
  get member() {
    // napi-rs objects take `undefined`, not `null`, for absent optional fields.
    const [leaseMs, fenceTtlMs] = [this.#leaseMs ?? undefined, this.#fenceTtlMs ?? undefined]
    return { name: this.#name, kind: this.#kind, leaseMs, fenced: this.#fenced, fenceTtlMs }
  }

  acquire(waitMs, owner, ticket) {
    const raw = this.#raw
    const holds = this.#holds
    return call(
      (id) =>
        raw.acquire(this.#name, this.#kind, this.#leaseMs, this.#fenced, this.#fenceTtlMs, waitMs, owner, ticket, id, out),
      (hold, token, leaseMs) => {
        const engineHold = new NativeEngineHold(raw, holds, hold, this.#name, Number.isNaN(token) ? null : token, leaseMs)
        holds.register(engineHold, hold)
        return engineHold
      },
    )
  }

  locked() {
    return call((id) => this.#raw.locked(this.#name, this.#kind, id, out))
  }

  ttl() {
    return call((id) => this.#raw.ttl(this.#name, this.#kind, id, out))
  }

  holdCount(owner) {
    return call((id) => this.#raw.holdCount(this.#name, this.#kind, owner, id, out))
  }
}

// Bits of `holdState` (../src/held.rs); the loss reason's code is in bits 8 and up.
const LOST = 1
const CLOSED_BY_CLIENT = 2
const HELD = 4
const REASONS = [null, 'expired', 'taken', 'deleted']

// A hold released through its handle leaves the client's table at once (../src/held.rs) and
// is no longer watched for collection: the registry's callbacks for many released holds ran
// in one burst after a major collection and stalled the event loop. Later calls through the
// handle get the core's answers: "already released" (`holdRefusal`), owned() false.
class NativeEngineHold {
  #raw
  #holds
  #hold
  #name
  #retired = false

  constructor(raw, holds, hold, name, fencingToken, leaseMs) {
    this.#raw = raw
    this.#holds = holds
    this.#hold = hold
    this.#name = name
    this.fencingToken = fencingToken
    this.leaseMs = leaseMs
  }

  #retire() {
    this.#retired = true
    this.#holds.unregister(this)
  }

  get lost() {
    return (this.#raw.holdState(this.#hold) & LOST) !== 0
  }

  get closedByClient() {
    return (this.#raw.holdState(this.#hold) & CLOSED_BY_CLIENT) !== 0
  }

  get held() {
    return (this.#raw.holdState(this.#hold) & HELD) !== 0
  }

  get lossReason() {
    return REASONS[this.#raw.holdState(this.#hold) >>> 8] ?? null
  }

  watch(onEnd) {
    if (!this.#retired) this.#raw.watch(this.#hold, onEnd)
  }

  release(scopeEnd) {
    if (this.#retired) return call(() => native.holdRefusal('release', this.#name))
    return call(
      (id) => this.#raw.release(this.#hold, scopeEnd, id, out),
      () => this.#retire(),
    )
  }

  extend(leaseMs) {
    if (this.#retired) return call(() => native.holdRefusal('extend', this.#name))
    return call((id) => this.#raw.extend(this.#hold, leaseMs, id, out), discard)
  }

  owned() {
    if (this.#retired) return Promise.resolve(false)
    return call((id) => this.#raw.owned(this.#hold, id, out))
  }
}

function discard() {
  return undefined
}
