// Transports for the Redis clients programs already use. A transport is just an object with
// `eval(script, keys, args)` (and optionally `evalsha`) returning a Promise of the reply, so
// any other client (an HTTP Redis API, a custom RESP client) needs a few lines, not an adapter.
//
// Both adapters send EVALSHA first and EVAL after a NOSCRIPT (the wasm module does that), and
// pass the clients' own errors through: node-redis `ErrorReply` / ioredis `ReplyError` are
// Redis error replies, everything else is treated as a connection failure and retried.

import { InvalidArgumentError } from '../lib/facade/errors.mjs'

/** `host:port` of a Redis URL, without credentials (for messages). */
function urlLabel(url) {
  try {
    const u = new URL(url)
    return u.host || undefined
  } catch {
    return undefined
  }
}

function checkLabel(label) {
  if (label !== undefined && (typeof label !== 'string' || label.length === 0)) {
    throw new InvalidArgumentError('label must be a non-empty string')
  }
  return label
}

/**
 * A transport over a node-redis (`redis` package, v4 or v5) client for one node, made with
 * `createClient({ url })`. For quorum clients consider `disableOfflineQueue: true` on each
 * node-redis client, so commands to a node that is down fail at once instead of being
 * queued until it comes back.
 * @param {{ sendCommand(args: string[]): Promise<unknown> }} client
 * @param {{ label?: string }} [options] the node's name in error messages (default: host:port)
 */
export function fromNodeRedis(client, options = {}) {
  if (client === null || typeof client !== 'object' || typeof client.sendCommand !== 'function') {
    throw new InvalidArgumentError('fromNodeRedis(client) needs a node-redis client (createClient from "redis")')
  }
  const label = checkLabel(options.label) ?? urlLabel(client.options?.url) ?? 'node-redis'
  return {
    label,
    eval: (script, keys, args) => client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args]),
    evalsha: (sha1, keys, args) => client.sendCommand(['EVALSHA', sha1, String(keys.length), ...keys, ...args]),
  }
}

/**
 * A transport over an ioredis client for one node (`new Redis(url)`).
 * @param {{ eval: Function, evalsha: Function }} client
 * @param {{ label?: string }} [options] the node's name in error messages (default: host:port)
 */
export function fromIoredis(client, options = {}) {
  if (
    client === null ||
    typeof client !== 'object' ||
    typeof client.eval !== 'function' ||
    typeof client.evalsha !== 'function'
  ) {
    throw new InvalidArgumentError('fromIoredis(client) needs an ioredis client (new Redis(url))')
  }
  const o = client.options ?? {}
  const hostLabel = o.host !== undefined && o.port !== undefined ? `${o.host}:${o.port}` : undefined
  const label = checkLabel(options.label) ?? hostLabel ?? 'ioredis'
  return {
    label,
    eval: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args),
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
  }
}
