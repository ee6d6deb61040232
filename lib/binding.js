'use strict';
// Loads the native addon: a local build first (napi build --platform), then the prebuilt
// platform package. Anything else is a clear error, never a crash.
const { existsSync } = require('node:fs');
const { join } = require('node:path');

function platformTriple() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    const glibc = report && report.header && report.header.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function load() {
  const triple = platformTriple();
  const local = join(__dirname, '..', `iterativeflow-mysql-native.${triple}.node`);
  const errors = [];
  if (existsSync(local)) {
    try {
      return require(local);
    } catch (e) {
      errors.push(`${local}: ${e.message}`);
    }
  }
  const pkg = `iterativeflow-mysql-native-${triple}`;
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
