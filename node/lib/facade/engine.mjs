// The engine interface: what the facade (client.mjs, lock.mjs, held.mjs) needs from the code
// that runs the core. Two engines implement it: the native addon (node/src: NativeClient,
// NativeLock, NativeHeld) and the wasm module with its adapter (bindings/wasm/js/src/engine.mjs).
// It is deliberately small: the core decides everything about locks; the facade adds the
// JavaScript idioms (argument checks, error classes, owners, scopes, AbortSignal wiring).
//
// Durations are integer milliseconds, already checked by args.mjs (engines check again).
// Errors are thrown or rejected in one of the shapes `toLockError` (errors.mjs) understands.
//
// @typedef {object} EngineClient       one per facade Client
// @property {string} id                the client id (UUID; first half of every reentrant owner id)
// @property {number} nodeCount         1 = single node, more = quorum
// @property {boolean} closed           true once close() was called
// @property {(name: string, options: { kind: 'lease' | 'reentrant' | 'fair' | 'read' | 'write', leaseMs?: number, fenced?: boolean, fenceTtlMs?: number }) => EngineLock} lock
//           throws for bad names/options (a fair or read/write lock on a quorum client) and
//           on a closed client
// @property {(name: string, permits?: number) => EngineSemaphore} semaphore  permits: initial_permits; throws for a bad name / closed client
// @property {(name: string, permits?: number) => EnginePermitSemaphore} permitSemaphore
// @property {(name: string) => EngineLatch} countDownLatch
// @property {(members: EngineLock[], options: { leaseMs?: number }) => EngineMultiLock} multiLock
//           members: engine locks this client made; throws for an empty set, a name given
//           twice, a lock of another client
// @property {(name: string) => Promise<boolean>} forceUnlock
// @property {(ticket: number) => void} cancel
//           stops the pending acquire started with `ticket` (it rejects; the engine undoes
//           any grant in flight); a no-op once it settled
// @property {() => Promise<void>} close
//           rejects pending acquires, releases live holds (their watchers are told
//           'closed'), makes later calls reject with ERR_CONNECTION; idempotent
//
// @typedef {object} EngineLock
// @property {(waitMs: number | null, owner: number | null, ticket: number) => Promise<EngineHold>} acquire
//           waitMs null = until acquired, 0 = one try; owner: the reentrant owner number
//           (null for lease locks; read and write locks of one name and owner number are one
//           Redisson owner, `:write` appended by the core); ticket: a number unique among
//           this client's pending acquires
// @property {() => Promise<boolean>} locked
// @property {() => Promise<number | null>} ttl
// @property {(owner: number | null) => Promise<number>} holdCount
//
// @typedef {object} EngineHold          one acquisition
// @property {number | null} fencingToken
// @property {number} leaseMs
// @property {boolean} lost             lost, or released by client.close() (read locally)
// @property {boolean} closedByClient   released by client.close()
// @property {boolean} held             still held as far as the client knows (not released,
//                                      not lost): a release whose outcome was unknown
//                                      (ERR_CONNECTION, ...) leaves it held
// @property {'expired' | 'taken' | 'deleted' | null} lossReason   why it was lost, once known
// @property {(scopeEnd: boolean) => Promise<void>} release
//           at most once; rejects as the core's release (NotOwned / LockLost with a reason);
//           `scopeEnd`: nobody can call again (the end of `using` / `await using`), so a
//           hold still held after the attempt is left to the core's background release
// @property {(leaseMs: number) => Promise<void>} extend
// @property {() => Promise<boolean>} owned
// @property {(onEnd: (why: string) => void) => void} watch
//           calls `onEnd` once if the hold is lost (with its reason: 'expired', 'taken',
//           'deleted') or released by close() ('closed'), never after a release; asked for
//           only when a program reads `held.signal`, so holds nobody watches cost nothing
//
// The rest of the family (counts are integers 1 ..= 2^31 - 1, checked by args.mjs; every
// wait takes `waitMs` as EngineLock.acquire does and a ticket for `cancel`):
//
// @typedef {object} EngineSemaphore     one handle (it counts what it acquired)
// @property {number} held
// @property {(n: number) => Promise<boolean>} trySetPermits
// @property {(n: number, waitMs: number | null, ticket: number) => Promise<void>} acquire
// @property {(n: number) => Promise<boolean>} tryAcquire
// @property {(n: number, scopeEnd?: boolean) => Promise<void>} release
//           scopeEnd (the end of `using(fn)`): an unknown outcome is settled in the background
//           and the permits leave `held` (the core's `Semaphore::release_final`)
// @property {() => Promise<number>} available
//
// @typedef {object} EnginePermitSemaphore
// @property {(n: number) => Promise<boolean>} trySetPermits
// @property {(leaseMs: number | null, waitMs: number | null, ticket: number) => Promise<EnginePermit>} acquire
//           leaseMs null: renewed by the watchdog while the permit is not released
// @property {(leaseMs: number | null) => Promise<EnginePermit | null>} tryAcquire
// @property {(id: string) => Promise<void>} release
// @property {() => Promise<number>} available
//
// @typedef {object} EnginePermit
// @property {string} id                32 lower-case hex digits
// @property {number} leaseMs
// @property {boolean} renewed
// @property {boolean} lost             known no longer held (the core's Permit::is_lost)
// @property {boolean} closedByClient   released by client.close() while held
// @property {boolean} ended            released (or a release is under way)
// @property {(scopeEnd: boolean) => Promise<void>} release
//           `scopeEnd` as for EngineHold: an unknown outcome goes on in the core's background
//
// @typedef {object} EngineLatch
// @property {(n: number) => Promise<boolean>} trySetCount
// @property {() => Promise<void>} countDown
// @property {() => Promise<number>} count
// @property {(timeoutMs: number | null, ticket: number) => Promise<boolean>} wait
//
// @typedef {object} EngineMultiLock
// @property {(waitMs: number | null, owners: Array<number | null>, ticket: number) => Promise<EngineMultiHold>} acquire
//           owners: per member (in the order given), the owner number of reentrant kinds
//
// @typedef {object} EngineMultiHold
// @property {string[]} names
// @property {boolean} lost
// @property {boolean} closedByClient   a member released by client.close() while held
// @property {boolean} ended
// @property {(scopeEnd: boolean) => Promise<void>} release
//           `scopeEnd` as for EngineHold: a member whose outcome is unknown goes on being
//           released in the core's background

/** Token for constructors that programs must not call directly. */
export const INTERNAL = Symbol('redlatch internal')

let lastTicket = 0

/** A ticket for the next acquire (unique among the pending ones: it wraps at 2^32). */
export function nextTicket() {
  lastTicket = (lastTicket + 1) >>> 0
  return lastTicket
}
