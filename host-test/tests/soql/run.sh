#!/usr/bin/env bash
# The SOQL differential: our validator (the soql_verdicts example) against Salesforce's own ANTLR
# SOQL grammar (@salesforce/soql-common from the npm registry, pinned in package-lock.json) on a
# fixed-seed corpus of generated queries and mutations (generate.mjs). Disagreements that
# exceptions.json does not explain fail the run. The last line is `N passed, M failed`.
#
# Usage: bash host-test/tests/soql/run.sh <path to soql_verdicts>
#   (CI: cargo build --example soql_verdicts && bash host-test/tests/soql/run.sh target/debug/examples/soql_verdicts)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
verdicts="${1:?usage: run.sh <path to soql_verdicts>}"
verdicts="$(cd "$(dirname "$verdicts")" && pwd)/$(basename "$verdicts")"
if [ ! -x "$verdicts" ]; then
  echo "run.sh: $verdicts is not an executable (build it with: cargo build --example soql_verdicts)" >&2
  echo "0 passed, 1 failed"
  exit 2
fi
cd "$here"
# Quietly; the lock file pins soql-common 0.2.2 and antlr4ts 0.5.0-alpha.4 (no install scripts run).
npm_log="$(mktemp)"
trap 'rm -f "$npm_log"' EXIT
if ! timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$npm_log" 2>&1; then
  cat "$npm_log" >&2
  echo "run.sh: npm ci failed" >&2
  echo "0 passed, 1 failed"
  exit 2
fi
timeout 120 node differential.mjs "$verdicts"
