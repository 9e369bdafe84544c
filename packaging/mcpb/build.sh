#!/usr/bin/env bash
# Builds crm-host's MCP Bundle (.mcpb, Claude Desktop's one-click install format) and checks it,
# then writes and validates the MCP Registry's server.json for it.
#
#   bash packaging/mcpb/build.sh <crm-host binary> <component.wasm> <out dir>
#
# 1. Stages <out>/bundle: manifest.json (compatibility.platforms set to this machine's),
#    server/crm-host, server/crm_plugin.wasm and README.md.
# 2. `mcpb validate` and `mcpb pack` (the official CLI, @anthropic-ai/mcpb from
#    package-lock.json by `npm ci`) into <out>/crm-plugin-<version>-<os>-<arch>.mcpb.
# 3. check.mjs unpacks that file with mcpb's own unpacker, as a client installs it, checks the
#    manifest and both binaries came back byte for byte (crm-host still executable), then runs
#    the command the manifest gives, with mcpb's own variable substitution and sample settings,
#    as a real MCP client over stdio: initialize, tools/list (every tool the manifest lists, no
#    other) and a call that needs no CRM. No broker is reached: nothing listens at the sample
#    broker URL and neither request sends anything to it.
# 4. server-json.mjs validates packaging/server.json against the registry's schema (vendored in
#    packaging/registry/) and writes <out>/server.json for this bundle (its URL and SHA-256),
#    validated too: the file to publish with the release.
#
# Needs Node >= 20: when the machine's node is older or missing, the Node the JavaScript client
# tests install (target/js/node, from host-test/tests/js/node-runtime) is used, or installed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
usage="usage: build.sh <crm-host binary> <component.wasm> <out dir>"
crm_host="$(realpath -m "${1:?$usage}")"
component="$(realpath -m "${2:?$usage}")"
out="$(realpath -m "${3:?$usage}")"

[ -x "$crm_host" ] || { echo "no crm-host at $crm_host" >&2; exit 1; }
[ -f "$component" ] || { echo "no component at $component" >&2; exit 1; }

# shellcheck source=../../host-test/tests/js/node-runtime/use-node.sh
source "$root/host-test/tests/js/node-runtime/use-node.sh"
use_node "$root" 20 0

(cd "$here" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
mcpb="$here/node_modules/.bin/mcpb"

case "$(uname -s)" in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "no bundle for $(uname -s): the manifest lists linux and darwin" >&2; exit 1 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch="$(uname -m)" ;;
esac

# 1. Stage.
stage="$out/bundle"
rm -rf "$stage"
mkdir -p "$stage/server"
node -e '
  const fs = require("fs");
  const [from, to, os] = process.argv.slice(1);
  const manifest = JSON.parse(fs.readFileSync(from, "utf8"));
  if (!manifest.compatibility.platforms.includes(os)) {
    throw new Error(`manifest.json does not list ${os} in compatibility.platforms`);
  }
  manifest.compatibility.platforms = [os];
  fs.writeFileSync(to, JSON.stringify(manifest, null, 2) + "\n");
' "$here/manifest.json" "$stage/manifest.json" "$os"
cp "$crm_host" "$stage/server/crm-host"
chmod 0755 "$stage/server/crm-host"
cp "$component" "$stage/server/crm_plugin.wasm"
chmod 0644 "$stage/server/crm_plugin.wasm"
cp "$here/README.md" "$stage/README.md"

# 2. Validate and pack with the official CLI.
version="$(node -p 'require(process.argv[1]).version' "$stage/manifest.json")"
bundle="$out/crm-plugin-$version-$os-$arch.mcpb"
rm -f "$out"/*.mcpb
"$mcpb" validate "$stage"
# From inside the staged directory: the CLI lists the archive's files relative to the current one.
(cd "$stage" && "$mcpb" pack . "$bundle" </dev/null)
[ -s "$bundle" ] || { echo "mcpb pack wrote no $bundle" >&2; exit 1; }

# 3. Install it as a client would, and start it as the manifest says.
timeout --kill-after=10 300 node "$here/check.mjs" "$bundle" "$stage" "$out/check"

# 4. The registry's server.json: the checked-in one, and the one for this bundle.
node "$here/server-json.mjs" --bundle "$bundle" --out "$out/server.json"
echo "bundle: $bundle ($(du -h "$bundle" | cut -f1))"
