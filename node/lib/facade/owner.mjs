// Who owns an `rlock` hold: the async call chain where AsyncLocalStorage exists, else the
// lock handle.
//
// The Redis owner of a reentrant lock is `<client id>:<owner number>`.
// - With AsyncLocalStorage (Node; any host exposing `globalThis.AsyncLocalStorage`): the
//   outermost `using` (or `acquire`) of an rlock picks a fresh owner number and makes it the
//   chain's; everything that chain awaits or starts inherits it, so a nested
//   `rlock(name).using(...)` re-enters while separate chains contend.
//   A frame is joined only while it has granted holds; once the last is released, the next
//   rlock in that chain starts a new frame. Why granted, not pending: `acquire()` can only
//   *enter* the caller's context (`enterWith`), which also enters it into the rest of the
//   caller's synchronous code. Branches the caller starts there (`Promise.all(items.map(async
//   () => { await lock.acquire() ... }))`) see the first branch's frame while its acquire is
//   still in flight; had they joined it, they would all have shared one hold.
// - Without it (browsers, workerd without node compatibility), async context cannot be
//   followed, so each `rlock` handle is one owner, as in the Rust API.
//
// The AsyncLocalStorage is created on first use: lease locks never touch it, so programs
// that use only `lock()` pay nothing for async context tracking.

let AsyncLocalStorageClass = null
/** @type {{ run: Function, getStore: Function, enterWith: Function } | null} */
let storage = null
let nextOwner = 1

/**
 * Sets the AsyncLocalStorage class to follow async chains with (each entry passes its host's;
 * once set, a later entry without one does not unset it: both entries share this module).
 */
export function useAsyncLocalStorage(cls) {
  if (typeof cls === 'function' && AsyncLocalStorageClass === null) AsyncLocalStorageClass = cls
}

/** `true` when reentrancy follows async call chains. */
export function followsChains() {
  return AsyncLocalStorageClass !== null
}

export class Frame {
  constructor() {
    /** The owner number (1 .. 2^53 - 1), unique in this module instance. */
    this.owner = nextOwner++
    /** Granted holds of this frame not yet released (acquires in flight do not count). */
    this.active = 0
  }
}

function als() {
  if (storage === null) storage = new AsyncLocalStorageClass()
  return storage
}

/** The current chain's frame if it has granted holds (chain mode). */
function current() {
  const frame = storage === null ? undefined : storage.getStore()
  return frame !== undefined && frame.active > 0 ? frame : null
}

/** The frame a new rlock handle owns itself (only where chains are not followed). */
export function forHandle() {
  return followsChains() ? null : new Frame()
}

/** The frame whose holds `holdCount` reports: the chain's, or the handle's. */
export function forQuery(handleFrame) {
  return followsChains() ? current() : handleFrame
}

/** The frame for a `using`: the chain's, a new one `run` will install, or the handle's. */
export function forUsing(handleFrame) {
  if (!followsChains()) return handleFrame
  return current() ?? new Frame()
}

/**
 * The frame for an `acquire()`: the chain's, or a new one entered into the caller's context
 * (synchronously, before the caller's first `await` on it); the handle's without chains.
 */
export function forAcquire(handleFrame) {
  if (!followsChains()) return handleFrame
  let frame = current()
  if (frame === null) {
    frame = new Frame()
    als().enterWith(frame)
  }
  return frame
}

/** Runs `fn(arg)` with `frame` as the chain's frame (chain mode), else just calls it. */
export function run(frame, fn, arg) {
  if (!followsChains()) return fn(arg)
  const store = als()
  if (store.getStore() === frame) return fn(arg)
  return store.run(frame, fn, arg)
}
