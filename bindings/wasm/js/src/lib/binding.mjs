// The loaded wasm-bindgen module and host settings, installed once by the entry point of each
// runtime (index.mjs for Node, web.mjs for browsers and other ES hosts, workerd.mjs for
// Cloudflare Workers). Everything else in lib/ is the same code on every host.

import { useAsyncLocalStorage } from './chain.mjs'

/** Token for constructors that programs must not call directly. */
export const INTERNAL = Symbol('redlatch/wasm internal')

/** The wasm-bindgen glue: `WasmClient`, `WasmLock`, `WasmHeld`. */
export let glue = null

let keepAliveEnabled = false
let pendingCalls = 0
let keepAliveTimer = null

/**
 * Installs the glue module.
 * @param {object} module wasm-bindgen output (nodejs or web target), already initialised
 * @param {{ AsyncLocalStorage?: Function, keepAlive?: boolean }} [options]
 *   `AsyncLocalStorage`: follow async call chains for `rlock` reentrancy.
 *   `keepAlive`: keep a Node event loop alive while a call the program awaits is pending
 *   (the module's own timers are unref'd, so background work never keeps a process alive).
 */
export function install(module, options = {}) {
  glue = module
  useAsyncLocalStorage(options.AsyncLocalStorage ?? null)
  keepAliveEnabled = options.keepAlive === true
}

/**
 * `promise`, keeping the event loop alive until it settles (when keep-alive is enabled).
 * @template T
 * @param {() => Promise<T>} start
 * @returns {Promise<T>}
 */
export async function keep(start) {
  if (!keepAliveEnabled) return start()
  if (pendingCalls++ === 0) keepAliveTimer = setInterval(() => {}, 1 << 30)
  try {
    return await start()
  } finally {
    if (--pendingCalls === 0) {
      clearInterval(keepAliveTimer)
      keepAliveTimer = null
    }
  }
}
