// `redlatch/wasm` for Cloudflare Workers (export condition `workerd`): workerd cannot fetch
// or compile wasm at run time, so the module is imported as a compiled `WebAssembly.Module`
// (wrangler's default rule for `.wasm` imports) and instantiated synchronously. `using`
// scopes of rlocks are followed into the code they run only where `globalThis.AsyncLocalStorage`
// exists; elsewhere rlocks re-enter only for an explicit `Owner`.
import wasmModule from './web/redlatch_wasm_bg.wasm'
import * as glue from './web/redlatch_wasm.js'
import { install } from './engine.mjs'

glue.initSync({ module: wasmModule })
install(glue, { AsyncLocalStorage: globalThis.AsyncLocalStorage })

export * from './api.mjs'
