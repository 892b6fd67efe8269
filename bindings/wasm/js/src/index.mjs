// `redlatch/wasm` for Node (export condition `node`, `import`): the wasm-bindgen `nodejs`
// build, loaded synchronously from ./nodejs/. `using` scopes of rlocks are followed into the
// code they run (AsyncLocalStorage), as in the native entry, and a pending call the program
// awaits keeps the event loop alive (the module's own timers never do).
import { AsyncLocalStorage } from 'node:async_hooks'
import glue from './nodejs/redlatch_wasm.js'
import { install } from './engine.mjs'

install(glue, { AsyncLocalStorage, keepAlive: true })

export * from './api.mjs'
