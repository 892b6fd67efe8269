// The local engine's host side: the sockets its Redis connections run over and its one timer
// (../src/local/: the core asks for them in the records engine.mjs delivers). Every socket event
// goes back into the addon, and what that entry wrote is delivered at once.

import net from 'node:net'
import tls from 'node:tls'

/**
 * The sockets and the timer of the local engine: `native` is the addon, `out` the records
 * array its entries write into, `deliver(text)` hands what an entry wrote to engine.mjs.
 * Returns `connect(id, port, flags, target)`, `write(id, latin1)`, `destroy(id)` and
 * `setTimer(ms)`, the records' actions.
 */
/** The longest delay Node's `setTimeout` takes. */
const MAX_TIMER_MS = 2 ** 31 - 1

export function localSockets(native, out, deliver) {
  // The local engine's sockets (net.Socket | tls.TLSSocket), each in its Outbox: id -> Outbox.
  const outboxes = new Map()
  const TLS = 1
  const UNIX = 4

  // Every socket reads into this one buffer (`onread`: no Buffer and no stream event per read);
  // the addon takes what a read brought before the callback returns, so one buffer serves all.
  const readBuffer = Buffer.allocUnsafe(64 * 1024)

  // Node's certificate errors in the tokio engine's words (core/src/native/tls.rs), so a TLS
  // failure reads the same on both engines (a user trial of stop 38 met "self-signed
  // certificate in certificate chain" on this one only).
  const UNTRUSTED = new Set([
    'SELF_SIGNED_CERT_IN_CHAIN',
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'UNABLE_TO_GET_ISSUER_CERT',
    'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    'CERT_SIGNATURE_FAILURE',
  ])

  /** The message of socket error `e`, TLS certificate failures worded as the tokio engine words them. */
  function socketError(e) {
    if (UNTRUSTED.has(e.code)) {
      return `TLS: the server's certificate is not signed by a trusted CA (give the CA with the TLS CA option, or NODE_EXTRA_CA_CERTS; Node's own roots are used otherwise): ${e.message}`
    }
    if (e.code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
      return `TLS: the server's certificate is not valid for the name it was reached by (check the URL's host or the TLS server name option): ${e.message}`
    }
    if (e.code === 'CERT_HAS_EXPIRED') return `TLS: the server's certificate has expired: ${e.message}`
    return e.message
  }

  function connect(id, port, flags, target) {
    let socket
    const onread = { buffer: readBuffer, callback: (n, bytes) => deliver(native.localSocketData(id, bytes, n, out)) }
    try {
      if (flags & UNIX) socket = net.connect({ path: target, onread })
      else if (flags & TLS) {
        const servername = net.isIP(target) === 0 ? target : undefined
        socket = tls.connect({ host: target, port, servername, onread })
      } else socket = net.connect({ host: target, port, onread })
    } catch (err) {
      // Reported after this delivery (an entry now would overwrite the records being read).
      process.nextTick(() => deliver(native.localSocketEnd(id, err.message, out)))
      return
    }
    socket.setNoDelay(true)
    socket.unref()
    outboxes.set(id, new Outbox(socket))
    let error = null
    socket.once(flags & TLS ? 'secureConnect' : 'connect', () => deliver(native.localSocketOpen(id, out)))
    socket.on('error', (e) => (error = socketError(e)))
    // The server closed its side (CLIENT KILL, an idle timeout, a restart): no reply can come,
    // so the connection ends now, not at 'close', and the next command opens a new one.
    socket.once('end', () => deliver(native.localSocketEnd(id, null, out)))
    socket.once('close', () => {
      outboxes.delete(id)
      deliver(native.localSocketEnd(id, error, out))
    })
  }

  // The first write to a socket in a tick goes out at once (one round trip at a time pays no
  // buffering). Later ones are joined into one string, written every FLUSH_EVERY commands and
  // at the process.nextTick after the tick: 32 loops each sending a command make a few system
  // calls, not 32, and Redis starts on the first batch while this thread builds the next. (One
  // write per tick made the two take turns: with 32 loops the event loop sat idle about a fifth
  // of the time waiting for the whole batch's replies, README "Design".) A joined string, not
  // cork() and uncork(): the stream's buffering of each corked chunk and its writev cost more
  // than the commands' encoding (README "Writes joined into one string").
  const FLUSH_EVERY = 16
  /** The outboxes written to in this tick. */
  const dirty = []

  /** What this tick has for one socket beyond its first write. */
  class Outbox {
    constructor(socket) {
      this.socket = socket
      this.dirty = false
      this.text = ''
      this.queued = 0
    }

    flush() {
      if (this.queued > 0 && !this.socket.destroyed) this.socket.write(this.text, 'latin1')
      this.text = ''
      this.queued = 0
    }
  }

  function write(id, latin1) {
    const outbox = outboxes.get(id)
    if (outbox === undefined) return
    if (!outbox.dirty) {
      outbox.dirty = true
      if (dirty.push(outbox) === 1) process.nextTick(endTick)
      outbox.socket.write(latin1, 'latin1')
      return
    }
    outbox.text = outbox.queued === 0 ? latin1 : outbox.text + latin1
    if (++outbox.queued === FLUSH_EVERY) outbox.flush()
  }
  function endTick() {
    for (let i = 0; i < dirty.length; i++) {
      dirty[i].flush()
      dirty[i].dirty = false
    }
    dirty.length = 0
  }

  function destroy(id) {
    const outbox = outboxes.get(id)
    if (outbox === undefined) return
    outboxes.delete(id)
    outbox.socket.destroy()
  }

  let timer = null
  function setTimer(ms) {
    if (timer !== null) clearTimeout(timer)
    // Node's timers take at most 2^31 - 1 ms (longer ones fire after 1 ms, with a
    // TimeoutOverflowWarning: a networkTimeoutMs of 2^31 did, a Node family trial of stop 46);
    // a timer that fires early re-arms for the rest (../src/local/timer.rs `fire`).
    timer = setTimeout(fire, Math.min(ms, MAX_TIMER_MS))
    timer.unref()
  }
  function fire() {
    timer = null
    deliver(native.localTimer(out))
  }

  return { connect, write, destroy, setTimer }
}
