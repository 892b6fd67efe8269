// `redlatch/wasm` for browsers, Deno and other ES-module hosts (export conditions `browser`
// and `default`): the wasm-bindgen `web` build. The .wasm file is fetched next to this module
// (`new URL('./web/redlatch_wasm_bg.wasm', import.meta.url)`, which bundlers understand)
// before the module finishes loading. `using` scopes of rlocks are followed into the code
// they run only where the host provides `globalThis.AsyncLocalStorage`; elsewhere rlocks
// re-enter only for an explicit `Owner`.
import init, * as glue from './web/redlatch_wasm.js'
import { install } from './engine.mjs'

await init({ module_or_path: new URL('./web/redlatch_wasm_bg.wasm', import.meta.url) })
install(glue, { AsyncLocalStorage: globalThis.AsyncLocalStorage })

export * from './api.mjs'
