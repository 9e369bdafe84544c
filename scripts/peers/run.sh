#!/usr/bin/env bash
# The peer comparison of issue 24 (never run in CI): sets up a scratch folder with the Python
# `mcp` 2.3.0 client in a venv and the two peer MCP servers from package-lock.json, then runs
# compare.py. Nothing is installed in the repository.
#
#   bash scripts/peers/run.sh [path to crm-host] [compare.py options, e.g. --rounds 5 --calls 200]
#
# The scratch folder is $PEERS_SCRATCH (default /tmp/peers). The peers run on the machine's
# Node when it is 20 or later (what they need); otherwise Node 24 comes from the npm registry's
# prebuilt package, as host-test/tests/js/run.sh does.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
crm_host="$(realpath -m "${1:-$root/target/release/crm-host}")"
shift || true
scratch="${PEERS_SCRATCH:-/tmp/peers}"
mkdir -p "$scratch"
[ -x "$crm_host" ] || { echo "no crm-host at $crm_host (cargo build -p crm-host --release)" >&2; exit 1; }

# Python client, pinned: its output-schema validation is part of what is measured.
if ! "$scratch/venv/bin/python" -c 'import importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
  python3 -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install -q 'mcp==2.3.0'
fi

# Node for the peers.
node_major() { "$1" --version 2>/dev/null | sed 's/^v\([0-9]*\).*/\1/'; }
if [ "$(node_major node || echo 0)" -lt 20 ]; then
  runtime="$scratch/node"
  if [ "$(node_major "$runtime/node_modules/.bin/node" || echo 0)" -lt 20 ]; then
    mkdir -p "$runtime"
    cp "$root/host-test/tests/js/node-runtime/package.json" \
       "$root/host-test/tests/js/node-runtime/package-lock.json" "$runtime/"
    (cd "$runtime" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
  export PATH="$runtime/node_modules/.bin:$PATH"
fi

# The peers, exactly as locked; reinstalled only when the lock changes.
if ! cmp -s "$here/package-lock.json" "$scratch/npm/installed-lock.json"; then
  mkdir -p "$scratch/npm"
  cp "$here/package.json" "$here/package-lock.json" "$scratch/npm/"
  (cd "$scratch/npm" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$scratch/npm/installed-lock.json"
fi

exec "$scratch/venv/bin/python" "$here/compare.py" --ours "$crm_host" --scratch "$scratch" \
  --node "$(command -v node)" "$@"
