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

# shellcheck source=node-runtime/use-node.sh
source "$here/node-runtime/use-node.sh"
use_node "$root" 22 19

(cd "$here" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
trap - ERR

cd "$here"
exec timeout --kill-after=10 600 node main.mjs "$crm_host"
