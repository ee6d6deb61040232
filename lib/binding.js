'use strict';
// Loads the native addon: a local build first (napi build --platform), then the prebuilt
// platform package. Anything else is a clear error, never a crash.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const { triple, localBinary, platformPackage } = require('./platform');

function load() {
  const local = join(__dirname, '..', localBinary);
  const errors = [];
  if (existsSync(local)) {
    try {
      return require(local);
    } catch (e) {
      errors.push(`${local}: ${e.message}`);
    }
  }
  const pkg = platformPackage;
  try {
    return require(pkg);
  } catch (e) {
    errors.push(`${pkg}: ${e.message}`);
  }
  throw new Error(
    `iterativeflow-mysql-native: no native binary for ${triple}. ` +
      `Install the optional dependency ${pkg}, or build from source with a Rust toolchain ` +
      `(npm run build). Tried:\n  ${errors.join('\n  ')}`,
  );
}

module.exports = load();
