#!/usr/bin/env bash
# The suite on a loaded machine: a clean clone of HEAD, two processes that each keep a core busy
# beside it, and `npm test` run N times in a row (3 by default). Stops at the first failing run
# and names its log. Timing bounds in the tests must hold with the machine's CPU taken by others.
#
#   scripts/loaded-check.sh [runs] [hogs]
set -euo pipefail

runs=${1:-3}
hogs=${2:-2}
src=$(git rev-parse --show-toplevel)
dir=$(mktemp -d /tmp/ifw-loaded.XXXXXX)
git clone -q "$src" "$dir/clone"
# The baseline packages the interop tests read sit beside the clone, as beside the source.
if [ -d "$src/../shared" ]; then ln -s "$(cd "$src/../shared" && pwd)" "$dir/shared"; fi
cd "$dir/clone"
echo "loaded-check: $(git log -1 --format='%h %s' | cut -c1-80) in $dir/clone"
npm ci >"$dir/npm-ci.log" 2>&1 || { echo "loaded-check: npm ci failed, see $dir/npm-ci.log" >&2; exit 1; }

pids=()
for _ in $(seq 1 "$hogs"); do
  node -e 'for (;;);' &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT

for i in $(seq 1 "$runs"); do
  started=$(date +%s)
  if npm test >"$dir/run-$i.log" 2>&1; then
    echo "loaded-check: run $i of $runs passed in $(($(date +%s) - started)) s ($hogs hogs)"
  else
    echo "loaded-check: run $i of $runs FAILED after $(($(date +%s) - started)) s: $dir/run-$i.log" >&2
    grep -E '✖|not ok' "$dir/run-$i.log" | head -20 >&2 || true
    exit 1
  fi
done
echo "loaded-check: $runs of $runs runs passed"
