// Who owns an `rlock` hold (shared/API.md, Node: "mutual exclusion over convenience").
//
// The Redis owner of a reentrant lock is `<client id>:<owner number>`, and holds of one owner
// re-enter. The owner of an rlock acquisition is, in this order:
// 1. the lock's explicit `Owner` (`client.rlock(name, { owner })`): holds made with one Owner
//    object share it deliberately, wherever they run;
// 2. else, inside a `using(fn)` scope of an rlock of the same name, that scope's owner: code
//    `fn` awaits or starts re-enters that lock, through whatever handle of it it uses
//    (AsyncLocalStorage); scopes nest, each with the name it holds;
// 3. else, a fresh owner of its own: a bare `acquire()` never lets unrelated code re-enter.
// `using(fn)` runs `fn` with its owner as the scope's (1 or 2, else a fresh one).
//
// A scope re-enters only the lock it holds: inside `rlock(A).using(fn)`, two branches of `fn`
// that each acquire `rlock(B)` contend (a user trial of stop 45 saw both granted, since every
// name used the scope's owner); a `rlock(B).using` nested in it is B's scope, inside which
// both A and B re-enter.
//
// A scope's owner is joined only while the scope runs (its `using` has not returned) and holds
// a granted hold: tasks it started that ask later, after its end, get owners of their own,
// even while a hold one of them took inside the scope is still held (a user trial found such
// a task's hold letting a timer that fired after the scope's end re-enter). Nothing is entered into the caller's
// context from a bare `acquire()` (AsyncLocalStorage `enterWith` would also enter the code the
// caller runs next, which is how unrelated tasks used to re-enter a hold: issue #10 item 4).
//
// Without AsyncLocalStorage (browsers, workerd without node compatibility) scopes cannot be
// followed: re-entry needs an explicit Owner. The AsyncLocalStorage is created on first use,
// so programs that use only lease locks pay nothing for async context tracking.
//
// Owner numbers are the core's (`redlatch::new_owner`: one process-wide space, 1 ..= 2^53 - 1,
// the one the core's own rlock handles and the other bindings' threads and tasks draw from),
// so an owner the facade picks never collides with one the core picked. Each entry installs
// its core's allocator (`useOwnerNumbers`: the addon's or the wasm module's `newOwner`); a
// frame draws its number when an acquire first needs it, by which time an entry has loaded
// its core. With both entries in one program, the first installed serves both: numbers stay
// distinct, and neither core holds a hold of an owner it numbered itself (the facade names
// the owner of every reentrant acquire).

let AsyncLocalStorageClass = null
/** @type {{ run: Function, getStore: Function } | null} */
let storage = null
/** @type {(() => number) | null} the core's owner allocator (`useOwnerNumbers`) */
let ownerNumbers = null

/**
 * Sets the AsyncLocalStorage class to follow scopes with (each entry passes its host's; once
 * set, a later entry without one does not unset it: both entries share this module).
 */
export function useAsyncLocalStorage(cls) {
  if (typeof cls === 'function' && AsyncLocalStorageClass === null) AsyncLocalStorageClass = cls
}

/** `true` when rlock `using` scopes are followed into the code they run. */
export function followsChains() {
  return AsyncLocalStorageClass !== null
}

/**
 * Sets the core's owner allocator (each entry passes its core's `newOwner`; the first one set
 * stays, as for `useAsyncLocalStorage`).
 */
export function useOwnerNumbers(newOwner) {
  if (typeof newOwner === 'function' && ownerNumbers === null) ownerNumbers = newOwner
}

/** A fresh owner number (1 .. 2^53 - 1) from the core's one owner space. */
export function freshOwner() {
  if (ownerNumbers === null) throw new Error('redlatch: no core is loaded to number owners')
  return ownerNumbers()
}

/** The owner of a scope or an explicit `Owner`: its number and its granted holds. */
export class Frame {
  #owner = 0
  /** Granted holds of this owner not yet released (acquires in flight do not count). */
  active = 0
  /** `using` calls running with this frame as their scope (`runScope`). */
  scopes = 0
  /** The lock name the scope holds; null for an explicit `Owner` (every name). */
  name
  /** The scope this one was made inside, if any (its names re-enter here too). */
  parent

  constructor(name = null, parent = null) {
    this.name = name
    this.parent = parent
  }

  /** Its owner number, drawn from the core on first use (an `Owner` may be made first). */
  get owner() {
    if (this.#owner === 0) this.#owner = freshOwner()
    return this.#owner
  }
}

/** @type {(owner: Owner) => Frame} */
export let frameOf

/**
 * An rlock owner shared on purpose: `client.rlock(name, { owner })`. Every hold made through
 * rlock handles with the same Owner (of one client) is one owner's, so they re-enter; holds
 * of other owners contend. Give each task (request, job) that must re-enter its own Owner.
 */
export class Owner {
  #frame = new Frame()

  static {
    frameOf = (owner) => owner.#frame
  }
}

function als() {
  if (storage === null) storage = new AsyncLocalStorageClass()
  return storage
}

/** The scope the caller runs in, innermost, if any. */
function innermost() {
  return storage === null ? null : (storage.getStore() ?? null)
}

/**
 * The frame of the current scope, or of one it runs inside, that holds lock `name` (or is an
 * explicit Owner's), while that scope runs and has granted holds.
 */
function current(name) {
  for (let frame = innermost(); frame !== null; frame = frame.parent) {
    if (frame.scopes > 0 && frame.active > 0 && (frame.name === null || frame.name === name)) return frame
  }
  return null
}

/**
 * The frame of an `acquire()` of rlock `name`: the explicit owner's, else that of the scope
 * holding `name`; null means a fresh owner of its own.
 */
export function forAcquire(explicit, name) {
  return explicit ?? current(name)
}

/**
 * The frame of a `using` of rlock `name`: the explicit owner's, that of the scope holding
 * `name`, or a new one inside the current scope.
 */
export function forUsing(explicit, name) {
  return explicit ?? current(name) ?? new Frame(name, innermost())
}

/** The frame whose holds `holdCount` of rlock `name` reports (null: none). */
export function forQuery(explicit, name) {
  return explicit ?? current(name)
}

/**
 * Runs the body `fn(arg)` of a `using` scope with `frame` as its owner: joinable by the code it
 * runs until `fn` settles.
 */
export async function runScope(frame, fn, arg) {
  frame.scopes++
  try {
    return await run(frame, fn, arg)
  } finally {
    frame.scopes--
  }
}

/** Runs `fn(arg)` with `frame` as the scope's owner where scopes are followed, else calls it. */
export function run(frame, fn, arg) {
  if (!followsChains()) return fn(arg)
  const store = als()
  if (store.getStore() === frame) return fn(arg)
  return store.run(frame, fn, arg)
}
