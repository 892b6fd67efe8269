// A FinalizationRegistry that registers its targets in batches, DEFER_MS after the first of
// a batch was watched: a target released before that never reaches the registry.
//
// Why: V8 keeps a FinalizationRegistry's targets (and their cells) through young-generation
// collections, so registering every hold for the moment between its acquire and its release
// promoted each one to the old generation, to die there at the next major collection. With
// 32 loops of acquire + release the heap grew 2.6 MB per scavenge, each scavenge took 3-4 ms
// instead of 0.2-0.4 ms, and the collector took about a tenth of the thread (README "The
// local engine as the default", measured 2026-12-05). Most holds are released within
// milliseconds: nearly all of them now never reach the registry. A target dropped without
// `unregister` is kept alive by the young list until its registration, so it is collected
// (and `cleanup` called) at most DEFER_MS later than with a plain registry.

/** How long a target lives before it is registered (ms). */
export const DEFER_MS = 500

/** What a target's `#young` index is once it is in the registry. */
const REGISTERED = -1
/** A target that is not watched (never, or no longer). */
const UNWATCHED = -2

const INDEX = Symbol('redlatch.deferredRegistryIndex')

export class DeferredRegistry {
  #registry
  /** Targets younger than DEFER_MS, with their held values (strongly held, unregistered). */
  #young = []
  #held = []
  #timer = null

  /** `cleanup(held)` runs after a registered target was collected (FinalizationRegistry). */
  constructor(cleanup) {
    this.#registry = new FinalizationRegistry(cleanup)
  }

  /** Watches `target` (an object of this package): `cleanup(held)` once it is collected. */
  register(target, held) {
    target[INDEX] = this.#young.length
    this.#young.push(target)
    this.#held.push(held)
    if (this.#timer === null) {
      this.#timer = setTimeout(() => this.#promote(), DEFER_MS)
      this.#timer.unref() // a young target never keeps the process alive
    }
  }

  /** Stops watching `target` (released through its handle). */
  unregister(target) {
    const index = target[INDEX]
    if (index === REGISTERED) this.#registry.unregister(target)
    else if (index >= 0) {
      // Swap-remove: the last young target takes the freed place.
      const last = this.#young.pop()
      const lastHeld = this.#held.pop()
      if (last !== target) {
        this.#young[index] = last
        this.#held[index] = lastHeld
        last[INDEX] = index
      }
    }
    target[INDEX] = UNWATCHED
  }

  /** Registers the targets that are still young after DEFER_MS. */
  #promote() {
    this.#timer = null
    const young = this.#young
    const held = this.#held
    this.#young = []
    this.#held = []
    for (let i = 0; i < young.length; i++) {
      this.#registry.register(young[i], held[i], young[i])
      young[i][INDEX] = REGISTERED
    }
  }
}
