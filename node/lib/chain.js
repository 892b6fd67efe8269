'use strict'
// Reentrancy along one async call chain, for `rlock` (shared/API.md, Node).
//
// The Redis owner of a reentrant lock is `<client id>:<owner number>`. The outermost `using`
// (or `acquire`) of an rlock picks a fresh owner number and makes it the chain's, through
// AsyncLocalStorage; everything that chain awaits or starts inherits it, so a nested
// `rlock(name).using(...)` re-enters (Redis counts the holds), while separate chains have
// separate numbers and contend.
//
// A frame is joined only while it has granted holds; once the last is released, the next
// rlock in that chain starts a new frame. Why granted, not pending: `acquire()` can only
// *enter* the caller's context (`enterWith`), which also enters it into the rest of the
// caller's synchronous code. Branches the caller starts there (`Promise.all(items.map(async
// () => { await lock.acquire() ... }))`) see the first branch's frame while its acquire is
// still in flight; had they joined it, they would all have shared one hold. A nested rlock
// of the acquiring chain only ever runs after its acquire was granted.
//
// The AsyncLocalStorage is created on first use: lease locks never touch it, so programs
// that use only `lock()` pay nothing for async context tracking.

const { AsyncLocalStorage } = require('node:async_hooks')

/** @type {AsyncLocalStorage<Frame> | null} */
let storage = null
let nextOwner = 1

class Frame {
  constructor() {
    /** The owner number (1 .. 2^53 - 1), unique in this process. */
    this.owner = nextOwner++
    /** Granted holds of this frame not yet released (acquires in flight do not count). */
    this.active = 0
  }
}

function als() {
  if (storage === null) storage = new AsyncLocalStorage()
  return storage
}

/** The current chain's frame, if it has granted holds (see the top of this file). */
function current() {
  const frame = storage === null ? undefined : storage.getStore()
  return frame !== undefined && frame.active > 0 ? frame : null
}

/**
 * The frame for a `using` of an rlock: the chain's, or a new one that `run` will install.
 * The caller increments `active` once the acquire is granted.
 */
function forUsing() {
  return current() ?? new Frame()
}

/**
 * The frame for an `acquire()` of an rlock: the chain's, or a new one entered into the
 * caller's context (synchronously, before the caller's first `await` on it).
 */
function forAcquire() {
  let frame = current()
  if (frame === null) {
    frame = new Frame()
    als().enterWith(frame)
  }
  return frame
}

/** Runs `fn(arg)` with `frame` as the chain's frame. */
function run(frame, fn, arg) {
  const store = als()
  if (store.getStore() === frame) return fn(arg)
  return store.run(frame, fn, arg)
}

module.exports = { current, forUsing, forAcquire, run }
