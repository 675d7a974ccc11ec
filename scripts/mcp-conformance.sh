#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance) with the given arguments, e.g.
#   scripts/mcp-conformance.sh server --url http://127.0.0.1:3000/mcp --scenario server-initialize
# installing it first if needed: a pinned version in a prefix of its own (never a dependency of the project),
# run by the Node 22 that scripts/node22.sh provides (the suite needs Node 22; npm scripts keep the machine's Node).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=0.2.0-alpha.12
prefix="${TOOLRUNNER_MCP_CONFORMANCE_PREFIX:-$root/node_modules/.cache/mcp-conformance}"
package="$prefix/node_modules/@modelcontextprotocol/conformance"
installed=$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$package/package.json" 2>/dev/null | head -1 || true)
if [ "$installed" != "$version" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$version" >&2
fi
node22="$("$root/scripts/node22.sh")"
exec "$node22" "$package/dist/index.js" "$@"
