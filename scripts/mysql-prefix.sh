#!/usr/bin/env bash
# Puts Oracle MySQL (Debian's `mysql-server-core`, suite sid) into a private prefix for the tests,
# never installing anything system-wide: the package conflicts with mariadb-server and needs a
# newer libc than Debian 12 has, so it runs through the prefix's own loader and libraries
# (__test__/helpers/mysql.mjs). apt-get runs with its own sources, lists, status and archive
# directories, downloads the server and every library it needs (libc included), and each .deb is
# unpacked with dpkg-deb -x. Needs apt-get and dpkg-deb (any Debian or Ubuntu), not root.
#
#   scripts/mysql-prefix.sh             # prints the prefix; fetches it first when missing
#   scripts/mysql-prefix.sh --refresh   # fetches again (the suite moves: a newer server)
#   scripts/mysql-prefix.sh --where     # prints where the prefix is (or would be), fetches nothing
#
# IFW_MYSQL_PREFIX  where (default: ~/.cache/iterativeflow-mysql-native/mysql)
# IFW_MYSQL_SUITE   Debian suite to take the package from (default: sid)
# IFW_MYSQL_MIRROR  Debian mirror (default: http://deb.debian.org/debian)
set -euo pipefail

prefix="${IFW_MYSQL_PREFIX:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/iterativeflow-mysql-native/mysql}"
suite="${IFW_MYSQL_SUITE:-sid}"
mirror="${IFW_MYSQL_MIRROR:-http://deb.debian.org/debian}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

case "${1:-}" in
  --where) echo "$prefix"; exit 0 ;;
  --refresh | "") ;;
  *) echo "usage: $0 [--refresh | --where]" >&2; exit 2 ;;
esac

if [ "${1:-}" != "--refresh" ] && [ -f "$prefix/.version" ]; then
  echo "$prefix"
  exit 0
fi

for tool in apt-get dpkg-deb dpkg; do
  command -v "$tool" >/dev/null 2>&1 || { echo "mysql-prefix: '$tool' is needed (a Debian or Ubuntu system)" >&2; exit 1; }
done
[ -r "$keyring" ] || { echo "mysql-prefix: $keyring is missing (apt-get install debian-archive-keyring)" >&2; exit 1; }

arch=$(dpkg --print-architecture)
case "$arch" in
  amd64) triplet=x86_64-linux-gnu; loader=ld-linux-x86-64.so.2 ;;
  arm64) triplet=aarch64-linux-gnu; loader=ld-linux-aarch64.so.1 ;;
  *) echo "mysql-prefix: no recipe for architecture $arch" >&2; exit 1 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work" "$prefix.new"' EXIT
mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/cache"
: >"$work/status"
echo "deb [signed-by=$keyring arch=$arch] $mirror $suite main" >"$work/sources.list"
apt_opts=(
  -o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$work/lists" -o "Dir::State::status=$work/status"
  -o "Dir::Cache=$work/cache" -o "Dir::Cache::archives=$work/archives"
  -o "Debug::NoLocking=1" -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
  -o "Acquire::Languages=none" -o "APT::Sandbox::User=$(id -un)"
)
echo "mysql-prefix: fetching mysql-server-core from $mirror $suite ($arch)" >&2
apt-get "${apt_opts[@]}" -qq update >&2
apt-get "${apt_opts[@]}" -qq -y --no-install-recommends --download-only install mysql-server-core >&2

rm -rf "$prefix.new"
mkdir -p "$prefix.new"
n=0
for deb in "$work"/archives/*.deb; do
  dpkg-deb -x "$deb" "$prefix.new"
  n=$((n + 1))
done

libs="$prefix.new/usr/lib/$triplet:$prefix.new/usr/lib"
version=$("$prefix.new/usr/lib/$triplet/$loader" --library-path "$libs" "$prefix.new/usr/sbin/mysqld" --version | sed 's#^.*/mysqld #mysqld #') || {
  echo "mysql-prefix: the unpacked mysqld does not run" >&2
  exit 1
}
# What __test__/helpers/mysql.mjs reads: how to start the server, and which one it is.
cat >"$prefix.new/.launch" <<EOF
loader=usr/lib/$triplet/$loader
libs=usr/lib/$triplet:usr/lib
EOF
echo "$version" >"$prefix.new/.version"
rm -rf "$prefix"
mkdir -p "$(dirname "$prefix")"
mv "$prefix.new" "$prefix"
echo "mysql-prefix: $n packages unpacked; $version" >&2
echo "$prefix"
