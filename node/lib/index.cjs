'use strict'
// `require('redlatch')`: the ES module entry (index.mjs) loaded through require(esm), so both
// forms share one module instance (one set of classes). require(esm) is built into
// Node >= 20.19 and >= 22.12 (package.json `engines`).
try {
  module.exports = require('./index.mjs')
} catch (err) {
  if (err && (err.code === 'ERR_REQUIRE_ESM' || err.code === 'ERR_REQUIRE_ASYNC_MODULE')) {
    const e = new Error(
      "require('redlatch') needs Node >= 20.19 or >= 22.12 (require of ES modules); use import instead",
      { cause: err },
    )
    e.code = err.code
    throw e
  }
  throw err
}
