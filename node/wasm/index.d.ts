// Placeholder for `redlatch/wasm` (see index.cjs): no exports yet.
export {}
