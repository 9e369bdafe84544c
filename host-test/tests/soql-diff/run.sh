#!/usr/bin/env bash
# The SOQL differential: our validator's verdicts (the soql_verdicts example) against
# Salesforce's own SOQL grammar (@salesforce/soql-common's ANTLR parser, from the npm registry)
# on a fixed-seed corpus of generated queries and mutations. Any disagreement that
# exceptions.json does not explain fails the run; the last line is `N passed, M failed`.
# Usage: bash host-test/tests/soql-diff/run.sh <path to soql_verdicts>
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
verdicts="$(realpath -m "${1:?usage: run.sh <path to soql_verdicts>}")"
# The Node that host-test/tests/js/run.sh installed, when the machine has none of its own.
if ! command -v node >/dev/null 2>&1; then
  export PATH="$root/target/js/node/node_modules/.bin:$PATH"
fi
cd "$here"
timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
timeout 300 node differential.mjs "$verdicts"
