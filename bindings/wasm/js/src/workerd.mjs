// `redlatch/wasm` for Cloudflare Workers (export condition `workerd`): workerd cannot fetch
// or compile wasm at run time, so the module is imported as a compiled `WebAssembly.Module`
// (wrangler's default rule for `.wasm` imports) and instantiated synchronously. `rlock`
// owners follow async chains only where `globalThis.AsyncLocalStorage` exists; elsewhere
// each rlock handle is one owner.
import wasmModule from './web/redlatch_wasm_bg.wasm'
import * as glue from './web/redlatch_wasm.js'
import { install } from './engine.mjs'

glue.initSync({ module: wasmModule })
install(glue, { AsyncLocalStorage: globalThis.AsyncLocalStorage })

export * from './api.mjs'
