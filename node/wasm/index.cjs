'use strict'
// Placeholder for `redlatch/wasm`: the WebAssembly build (bindings/wasm, its own issue)
// replaces this directory with the wasm-bindgen output and its `createClient({ eval })`
// entry points. Until then, loading it fails with a clear message.
const err = new Error('redlatch/wasm is not part of this build yet: use the native `redlatch` entry point')
err.code = 'ERR_WASM_NOT_BUILT'
throw err
