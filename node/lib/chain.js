'use strict'
// Reentrancy along one async call chain, for `rlock` (shared/API.md, Node).
//
// The Redis owner of a reentrant lock is `<client id>:<owner number>`. The outermost `using`
// (or `acquire`) of an rlock picks a fresh owner number and makes it the chain's, through
// AsyncLocalStorage; everything that chain awaits or starts inherits it, so a nested
// `rlock(name).using(...)` re-enters (Redis counts the holds), while separate chains have
// separate numbers and contend.
//
// A frame stays the chain's while it has holds (or acquires in flight); once the last is
// released, the next rlock in that chain starts a new frame. That keeps `acquire()`, which
// can only *enter* the caller's context (`enterWith`), from leaking its owner into unrelated
// work the caller starts after releasing.
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
    /** Holds plus acquires in flight that belong to this frame. */
    this.active = 0
  }
}

function als() {
  if (storage === null) storage = new AsyncLocalStorage()
  return storage
}

/** The current chain's frame, if it still has holds or pending acquires. */
function current() {
  const frame = storage === null ? undefined : storage.getStore()
  return frame !== undefined && frame.active > 0 ? frame : null
}

/**
 * The frame for a `using` of an rlock: the chain's, or a new one that `run` will install.
 * The caller increments `active` for the acquire it is about to start.
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
