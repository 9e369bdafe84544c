#!/usr/bin/env bash
# Drives crm-host with real JavaScript MCP clients: the TypeScript SDK v1 and v2 (stdio and
# Streamable HTTP, both protocol eras), the MCP Inspector CLI, and the official conformance
# suite; then checks the tools' schemas (schemas.mjs): the Gemini CLI and @google/genai declare
# every tool and parameter (against a loopback stand-in for the Gemini API: no key, no network),
# Ajv strict compiles every schema, every input schema fits Gemini's Schema, and a count of the
# tools OpenAI's strict mode would take. Usage: bash host-test/tests/js/run.sh <path to crm-host>
#
# Needs Node >= 22.19 (the Inspector's floor): when the machine's node is older, or missing,
# Node 24 comes from the npm registry's prebuilt package for this platform (node-runtime/,
# locked), installed under target/js/node. The clients come from package-lock.json by
# `npm ci`. Exits non-zero on the first failure; the last line is `N passed, M failed`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
crm_host="${1:?usage: run.sh <path to crm-host>}"
crm_host="$(realpath -m "$crm_host")"

setup_failed() {
  echo "JavaScript clients: setup failed (see above)"
  echo "0 passed, 1 failed"
}
trap setup_failed ERR

[ -x "$crm_host" ] || { echo "no crm-host at $crm_host" >&2; false; }

node_ok() { # node >= 22.19
  local v
  v="$("$1" --version 2>/dev/null)" || return 1
  v="${v#v}"
  local major="${v%%.*}" rest="${v#*.}"
  local minor="${rest%%.*}"
  [ "$major" -gt 22 ] || { [ "$major" -eq 22 ] && [ "$minor" -ge 19 ]; }
}

if ! command -v npm >/dev/null 2>&1; then
  # npm is only the installer here; the Node that runs the tests is checked below.
  apt-get update -qq && apt-get install -y -qq npm >/dev/null
fi

if command -v node >/dev/null 2>&1 && node_ok "$(command -v node)"; then
  echo "node $(node --version) (the machine's)"
else
  runtime="$root/target/js/node"
  if ! node_ok "$runtime/node_modules/.bin/node"; then
    echo "the machine's node is $(node --version 2>/dev/null || echo missing): installing Node 24 from the npm registry"
    rm -rf "$runtime"
    mkdir -p "$runtime"
    cp "$here/node-runtime/package.json" "$here/node-runtime/package-lock.json" "$runtime/"
    (cd "$runtime" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
  export PATH="$runtime/node_modules/.bin:$PATH"
  node_ok "$(command -v node)" || { echo "no Node >= 22.19 for this platform" >&2; false; }
  echo "node $(node --version) (from target/js/node)"
fi

(cd "$here" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
trap - ERR

cd "$here"
exec timeout --kill-after=10 600 node main.mjs "$crm_host"
