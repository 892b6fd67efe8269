// The rest of the family as the facade's engine (facade/engine.mjs), over the native addon:
// semaphores (NativeSemaphore, NativePermitSemaphore: ../src/family.rs), the latch and
// multi-locks (NativeClient methods: ../src/family.rs, ../src/multi.rs). Calls settle as the
// lock calls do (engine.mjs `call`, passed in as `run(start, wrap)` with `start(id, out)`).
// Permits and multi-lock acquisitions are numbers in the client's tables, dropped by a
// FinalizationRegistry when their object is collected (a live one is then released in the
// background by the core).

export class NativeEngineSemaphore {
  #raw
  #run

  constructor(raw, run) {
    this.#raw = raw
    this.#run = run
  }

  get held() {
    return this.#raw.held
  }

  trySetPermits(n) {
    return this.#run((id, out) => this.#raw.trySetPermits(n, id, out))
  }

  acquire(n, waitMs, ticket) {
    return this.#run((id, out) => this.#raw.acquire(n, waitMs, ticket, id, out))
  }

  tryAcquire(n) {
    return this.#run((id, out) => this.#raw.tryAcquire(n, id, out))
  }

  release(n, scopeEnd = false) {
    return this.#run((id, out) => this.#raw.release(n, scopeEnd, id, out))
  }

  available() {
    return this.#run((id, out) => this.#raw.available(id, out))
  }
}

export class NativeEnginePermitSemaphore {
  #client
  #raw
  #run
  #permits

  constructor(client, raw, run, permits) {
    this.#client = client
    this.#raw = raw
    this.#run = run
    this.#permits = permits
  }

  trySetPermits(n) {
    return this.#run((id, out) => this.#raw.trySetPermits(n, id, out))
  }

  acquire(leaseMs, waitMs, ticket) {
    return this.#run(
      (id, out) => this.#raw.acquire(leaseMs, waitMs, ticket, id, out),
      (slot, _token, lease) => this.#permit(slot, lease),
    )
  }

  tryAcquire(leaseMs) {
    return this.#run(
      (id, out) => this.#raw.tryAcquire(leaseMs, id, out),
      (slot, _token, lease) => (slot === null ? null : this.#permit(slot, lease)),
    )
  }

  release(permitId) {
    return this.#run((id, out) => this.#raw.release(permitId, id, out))
  }

  available() {
    return this.#run((id, out) => this.#raw.available(id, out))
  }

  #permit(slot, leaseMs) {
    const permit = new NativeEnginePermit(this.#client, slot, leaseMs, this.#run)
    this.#permits.register(permit, slot)
    return permit
  }
}

class NativeEnginePermit {
  #client
  #slot
  #run

  constructor(client, slot, leaseMs, run) {
    this.#client = client
    this.#slot = slot
    this.#run = run
    this.leaseMs = leaseMs
    const [permitId, renewed] = client.permitState(slot).split(':')
    this.id = permitId
    this.renewed = renewed === '1'
  }

  get ended() {
    return this.#client.permitState(this.#slot).split(':')[2] === '1'
  }

  get lost() {
    return this.#client.permitState(this.#slot).split(':')[3] === '1'
  }

  get closedByClient() {
    return this.#client.permitState(this.#slot).split(':')[4] === '1'
  }

  release(scopeEnd) {
    return this.#run((id, out) => this.#client.permitRelease(this.#slot, scopeEnd, id, out), discard)
  }
}

export class NativeEngineLatch {
  #client
  #name
  #run

  constructor(client, name, run) {
    this.#client = client
    this.#name = name
    this.#run = run
  }

  trySetCount(n) {
    return this.#run((id, out) => this.#client.latchTrySetCount(this.#name, n, id, out))
  }

  countDown() {
    return this.#run((id, out) => this.#client.latchCountDown(this.#name, id, out), discard)
  }

  count() {
    return this.#run((id, out) => this.#client.latchCount(this.#name, id, out))
  }

  wait(timeoutMs, ticket) {
    return this.#run((id, out) => this.#client.latchWait(this.#name, timeoutMs, ticket, id, out))
  }
}

export class NativeEngineMultiLock {
  #client
  #members
  #leaseMs
  #run
  #multis

  constructor(client, members, leaseMs, run, multis) {
    this.#client = client
    this.#members = members
    this.#leaseMs = leaseMs
    this.#run = run
    this.#multis = multis
    client.checkMulti(members, leaseMs)
  }

  acquire(waitMs, owners, ticket) {
    return this.#run(
      (id, out) => this.#client.multiAcquire(this.#members, owners, this.#leaseMs, waitMs, ticket, id, out),
      (slot) => {
        const held = new NativeEngineMultiHold(this.#client, slot, this.#run)
        this.#multis.register(held, slot)
        return held
      },
    )
  }
}

class NativeEngineMultiHold {
  #client
  #slot
  #run

  constructor(client, slot, run) {
    this.#client = client
    this.#slot = slot
    this.#run = run
    this.names = client.multiNames(slot)
  }

  get lost() {
    return (this.#client.multiState(this.#slot) & 1) !== 0
  }

  get ended() {
    return (this.#client.multiState(this.#slot) & 2) !== 0
  }

  get closedByClient() {
    return (this.#client.multiState(this.#slot) & 4) !== 0
  }

  release(scopeEnd) {
    return this.#run((id, out) => this.#client.multiRelease(this.#slot, scopeEnd, id, out), discard)
  }
}

function discard() {
  return undefined
}
