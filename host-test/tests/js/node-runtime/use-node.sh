# Sourced by the scripts that run Node (host-test/tests/js/run.sh, packaging/mcpb/build.sh):
# `use_node <repo root> <major> <minor>` puts a Node >= major.minor first on PATH. The machine's
# node when it is new enough; else Node 24 from the npm registry's prebuilt package for this
# platform (package.json and package-lock.json beside this file), installed once under
# <repo root>/target/js/node. npm is only the installer (apt's when the machine has none).
# Returns non-zero, having said why, when no such Node can be had.

node_at_least() { # <node binary> <major> <minor>
  local v
  v="$("$1" --version 2>/dev/null)" || return 1
  v="${v#v}"
  local major="${v%%.*}" rest="${v#*.}"
  local minor="${rest%%.*}"
  [ "$major" -gt "$2" ] || { [ "$major" -eq "$2" ] && [ "$minor" -ge "$3" ]; }
}

use_node() { # <repo root> <major> <minor>
  local root="$1" major="$2" minor="$3"
  local pinned="$root/host-test/tests/js/node-runtime"
  if ! command -v npm >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq npm >/dev/null
  fi
  if command -v node >/dev/null 2>&1 && node_at_least "$(command -v node)" "$major" "$minor"; then
    echo "node $(node --version) (the machine's)"
    return 0
  fi
  local runtime="$root/target/js/node"
  if ! node_at_least "$runtime/node_modules/.bin/node" "$major" "$minor"; then
    echo "the machine's node is $(node --version 2>/dev/null || echo missing): installing Node 24 from the npm registry"
    rm -rf "$runtime"
    mkdir -p "$runtime"
    cp "$pinned/package.json" "$pinned/package-lock.json" "$runtime/"
    (cd "$runtime" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
  export PATH="$runtime/node_modules/.bin:$PATH"
  node_at_least "$(command -v node)" "$major" "$minor" ||
    { echo "no Node >= $major.$minor for this platform" >&2; return 1; }
  echo "node $(node --version) (from target/js/node)"
}
