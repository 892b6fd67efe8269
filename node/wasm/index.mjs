// Placeholder for `redlatch/wasm` (see index.cjs): loading it fails with a clear message.
const err = new Error('redlatch/wasm is not part of this build yet: use the native `redlatch` entry point')
err.code = 'ERR_WASM_NOT_BUILT'
throw err
