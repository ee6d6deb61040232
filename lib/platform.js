'use strict';
// The platform triple napi-rs names binaries and platform packages after.

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

const triple = platformTriple();

module.exports = {
  triple,
  /** File name of a local build (`napi build --platform`). */
  localBinary: `iterativeflow-mysql-native.${triple}.node`,
  /** The prebuilt platform package for this machine. */
  platformPackage: `iterativeflow-mysql-native-${triple}`,
};
