// The rest of the family as the facade's engine (../lib/facade/engine.mjs): the wasm classes
// of src/family.rs and src/multi.rs, with the closed state, cancellation by ticket and the
// keep-alive of their client's engine (engine.mjs `run` / `wait`). Permits and multi-lock
// holds still held at `client.close()` are released by the core's `Client::close`.

export class WasmEngineSemaphore {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  get held() {
    return this.#raw.held
  }

  trySetPermits(n) {
    return this.#engine.run(() => this.#raw.trySetPermits(n))
  }

  acquire(n, waitMs, ticket) {
    return this.#engine.wait(ticket, (cancel) => this.#raw.acquire(n, waitMs ?? Infinity, cancel))
  }

  tryAcquire(n) {
    return this.#engine.run(() => this.#raw.tryAcquire(n))
  }

  release(n, scopeEnd = false) {
    return this.#engine.run(() => this.#raw.release(n, scopeEnd))
  }

  available() {
    return this.#engine.run(() => this.#raw.available())
  }
}

export class WasmEnginePermitSemaphore {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  trySetPermits(n) {
    return this.#engine.run(() => this.#raw.trySetPermits(n))
  }

  async acquire(leaseMs, waitMs, ticket) {
    const raw = await this.#engine.wait(ticket, (cancel) => this.#raw.acquire(leaseMs ?? undefined, waitMs ?? Infinity, cancel))
    return new WasmEnginePermit(this.#engine, raw)
  }

  async tryAcquire(leaseMs) {
    const raw = await this.#engine.run(() => this.#raw.tryAcquire(leaseMs ?? undefined))
    return raw === null || raw === undefined ? null : new WasmEnginePermit(this.#engine, raw)
  }

  release(id) {
    return this.#engine.run(() => this.#raw.release(id))
  }

  available() {
    return this.#engine.run(() => this.#raw.available())
  }
}

class WasmEnginePermit {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  get id() {
    return this.#raw.id
  }

  get leaseMs() {
    return this.#raw.leaseMs
  }

  get renewed() {
    return this.#raw.renewed
  }

  get lost() {
    return this.#raw.lost
  }

  get closedByClient() {
    return this.#raw.closedByClient
  }

  get ended() {
    return this.#raw.ended
  }

  release(scopeEnd) {
    return this.#engine.run(() => this.#raw.release(scopeEnd))
  }
}

export class WasmEngineLatch {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  trySetCount(n) {
    return this.#engine.run(() => this.#raw.trySetCount(n))
  }

  countDown() {
    return this.#engine.run(() => this.#raw.countDown())
  }

  count() {
    return this.#engine.run(() => this.#raw.count())
  }

  wait(timeoutMs, ticket) {
    return this.#engine.wait(ticket, (cancel) => this.#raw.wait(timeoutMs ?? Infinity, cancel))
  }
}

export class WasmEngineMultiLock {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  async acquire(waitMs, owners, ticket) {
    const raw = await this.#engine.wait(ticket, (cancel) => this.#raw.acquire(waitMs ?? Infinity, owners, cancel))
    return new WasmEngineMultiHold(this.#engine, raw)
  }
}

class WasmEngineMultiHold {
  #engine
  #raw

  constructor(engine, raw) {
    this.#engine = engine
    this.#raw = raw
  }

  get names() {
    return this.#raw.names
  }

  get lost() {
    return this.#raw.lost
  }

  get closedByClient() {
    return this.#raw.closedByClient
  }

  get ended() {
    return this.#raw.ended
  }

  release(scopeEnd) {
    return this.#engine.run(() => this.#raw.release(scopeEnd))
  }
}
