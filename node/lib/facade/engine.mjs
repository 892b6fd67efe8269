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
// @property {(name: string, options: { reentrant: boolean, leaseMs?: number, fenced?: boolean, fenceTtlMs?: number }) => EngineLock} lock
//           throws for bad names/options and on a closed client
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
//           (null for lease locks); ticket: a number unique among this client's pending acquires
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

/** Token for constructors that programs must not call directly. */
export const INTERNAL = Symbol('redlatch internal')

let lastTicket = 0

/** A ticket for the next acquire (unique among the pending ones: it wraps at 2^32). */
export function nextTicket() {
  lastTicket = (lastTicket + 1) >>> 0
  return lastTicket
}
