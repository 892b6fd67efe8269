// `RwLock`: the two locks of one Redisson RReadWriteLock name. Each side is a `Lock` (kind
// 'read' or 'write'); the options given to `client.rwLock(name, options)` are the defaults
// of both, overridden key by key by `.read(options)` / `.write(options)`, except `fenced` and
// `fenceTtlMs`, which are the write side's only: readers share a hold, so the read side is
// never fenced (as the Python binding; `.read({ fenced: true })` throws InvalidArgumentError).
//
// Owners are those of every reentrant kind (owner.mjs): an explicit `Owner`, else the
// `using` scope the code runs in, else the acquisition itself. So inside a `write().using()`
// scope a `read()` acquire is the writer's and is granted (Redisson: the writer may take the
// read lock), while a bare `read().acquire()` next to a bare `write().acquire()` are two
// owners and contend.

import { INTERNAL } from './engine.mjs'
import { InvalidArgumentError } from './errors.mjs'
import * as args from './args.mjs'

/** The rwLock defaults that apply to the write side only. */
const WRITE_ONLY = ['fenced', 'fenceTtlMs']

/** The read and write locks of one name. Made by `client.rwLock(name, options)`. */
export class RwLock {
  #name
  #defaults
  #make

  /** @internal Use `client.rwLock(name, options)`. */
  constructor(token, name, defaults, make) {
    if (token !== INTERNAL) throw new InvalidArgumentError('use client.rwLock(name) to create a read/write lock')
    this.#name = name
    this.#defaults = defaults
    this.#make = make
  }

  /** The lock's name (its Redis hash). */
  get name() {
    return this.#name
  }

  /**
   * The read lock: shared with other readers, excluded by a writer of another owner.
   * `options` as for `client.rlock` (`leaseMs`, `waitMs`, `owner`), over the rwLock's.
   * @returns {import('./lock.mjs').Lock}
   */
  read(options) {
    return this.#make('read', this.#merge(options, WRITE_ONLY))
  }

  /**
   * The write lock: excludes readers and writers of other owners. Rejects with
   * WouldDeadlockError at once when its owner holds a read hold (release that first).
   * @returns {import('./lock.mjs').Lock}
   */
  write(options) {
    return this.#make('write', this.#merge(options, []))
  }

  toString() {
    return `RwLock(${JSON.stringify(this.#name)})`
  }

  #merge(options, skipped) {
    const o = args.lockOptions(options)
    const out = {}
    for (const [k, v] of Object.entries(this.#defaults)) {
      if (v !== undefined && !skipped.includes(k)) out[k] = v
    }
    for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
    return out
  }
}
