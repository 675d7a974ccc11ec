#!/usr/bin/env bash
# Prints the path of a Node.js 22 binary (scripts/node-major.sh 22; TOOLRUNNER_NODE22_PREFIX still names its
# prefix). For the tests that need Node 22: the MCP conformance suite and the newest AI SDK and OpenAI Agents SDK.
set -euo pipefail
TOOLRUNNER_NODE_PREFIX="${TOOLRUNNER_NODE22_PREFIX:-}" exec "$(dirname "$0")/node-major.sh" 22
