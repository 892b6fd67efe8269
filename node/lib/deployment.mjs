// The native entry's deployment options (TLS, Sentinel credentials, syncReplicas) checked
// for their JavaScript types, and the deployment warnings turned into Node warnings. The
// values themselves (a certificate without its key, a CA given twice, a bad syncReplicas) are
// checked by the core, with the same messages in every binding. The wasm entry has none of
// them: its host's client owns the connection.

import { Buffer } from 'node:buffer'
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import { millis } from './facade/args.mjs'
import { InvalidArgumentError } from './facade/errors.mjs'

const TLS_OPTIONS = ['ca', 'caFile', 'cert', 'certFile', 'key', 'keyFile', 'serverName', 'insecure']
const PEM_OPTIONS = ['ca', 'cert', 'key']
const TEXT_OPTIONS = ['caFile', 'certFile', 'keyFile', 'serverName']
/** Client option keys of this entry beyond the shared durations (facade/args.mjs). */
export const DEPLOYMENT_OPTIONS = ['tls', 'sentinelUsername', 'sentinelPassword', 'syncReplicas', 'syncReplicasTimeoutMs']

function typeOf(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

/** PEM text from a string, a Buffer or a Uint8Array (PEM is ASCII). */
function pem(what, value) {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('latin1')
  throw new InvalidArgumentError(`tls.${what} must be PEM text (a string or a Buffer), not ${typeOf(value)}`)
}

function tlsOptions(tls) {
  if (tls === undefined) return undefined
  if (tls === null || typeof tls !== 'object' || Array.isArray(tls)) {
    throw new InvalidArgumentError(`tls must be an object, not ${typeOf(tls)}`)
  }
  const out = {}
  for (const key of Object.keys(tls)) {
    if (!TLS_OPTIONS.includes(key)) {
      throw new InvalidArgumentError(
        `unknown option ${JSON.stringify(key)} in tls options (expected one of: ${TLS_OPTIONS.join(', ')})`,
      )
    }
    const value = tls[key]
    if (value === undefined) continue
    if (PEM_OPTIONS.includes(key)) out[key] = pem(key, value)
    else if (TEXT_OPTIONS.includes(key)) {
      if (typeof value !== 'string') throw new InvalidArgumentError(`tls.${key} must be a string, not ${typeOf(value)}`)
      out[key] = value
    } else {
      if (typeof value !== 'boolean') throw new InvalidArgumentError(`tls.insecure must be a boolean, not ${typeOf(value)}`)
      out[key] = value
    }
  }
  return out
}

/**
 * Copies the checked deployment options of `options` (already checked for unknown keys)
 * into `out` (the addon's shape). Returns whether any was given.
 */
export function deploymentOptions(options, out) {
  let any = false
  const tls = tlsOptions(options?.tls)
  if (tls !== undefined) {
    out.tls = tls
    any = true
  }
  for (const key of ['sentinelUsername', 'sentinelPassword']) {
    const value = options?.[key]
    if (value === undefined) continue
    if (typeof value !== 'string') throw new InvalidArgumentError(`${key} must be a string, not ${typeOf(value)}`)
    out[key] = value
    any = true
  }
  const n = options?.syncReplicas
  if (n !== undefined) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) {
      throw new InvalidArgumentError(`syncReplicas must be a non-negative integer, not ${typeof n === 'number' ? n : typeOf(n)}`)
    }
    out.syncReplicas = n
    any = true
  }
  const t = millis('syncReplicasTimeoutMs', options?.syncReplicasTimeoutMs)
  if (t !== undefined) {
    out.syncReplicasTimeoutMs = t
    any = true
  }
  return any
}

// Node reads NODE_EXTRA_CA_CERTS once, at start: so does this module.
const EXTRA_CA_FILE = globalThis.process?.env?.NODE_EXTRA_CA_CERTS
let nodeRoots

/**
 * The CA certificates this process's TLS trusts (Node's bundled roots and the file
 * NODE_EXTRA_CA_CERTS names) as PEM text, when NODE_EXTRA_CA_CERTS is set and every URL is a
 * TLS one; else undefined. The addon's redis-rs connections (the tokio engine, and the local
 * engine's renewals) then trust what Node's own do, where they would otherwise read the
 * system's roots, which do not hold that CA. A CA option of the client's own wins (the
 * addon's choice). An unreadable file is ignored, as Node ignores it (with its own warning).
 */
export function nodeTrustedCa(urls) {
  if (!EXTRA_CA_FILE || !urls.every((u) => u.startsWith('rediss'))) return undefined
  if (nodeRoots === undefined) {
    try {
      nodeRoots = [...rootCertificates, readFileSync(EXTRA_CA_FILE, 'latin1')].join('\n')
    } catch {
      nodeRoots = null
    }
  }
  return nodeRoots ?? undefined
}

/**
 * The addon's warning callback: a deployment warning (today: a `maxmemory-policy` that may
 * evict lock keys, or a user denied `SUBSCRIBE`) becomes `process.emitWarning` with type `DeploymentWarning` and code
 * `REDLATCH_<KIND>` (e.g. `REDLATCH_EVICTION`), once per node and client.
 */
export function emitWarning(warning) {
  process.emitWarning(warning.message, {
    type: 'DeploymentWarning',
    code: `REDLATCH_${String(warning.kind).toUpperCase()}`,
  })
}
