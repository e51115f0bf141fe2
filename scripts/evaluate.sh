#!/usr/bin/env bash
# Runs policy.wasm on every request in test_data/requests/ with its settings
# (test_data/settings/) and host-call session (test_data/sessions/), and prints each verdict.
# Engine: $KWCTL if set (kwctl needs POLICY=annotated-policy.wasm), else the project's test host.
# `make evaluate` sets both when kwctl is on PATH, and builds the test host only when it is not.
set -euo pipefail
cd "$(dirname "$0")/.."
engine="${KWCTL:-target/testhost/testhost}"
policy="${POLICY:-policy.wasm}"
if ! command -v "$engine" >/dev/null 2>&1; then
  echo "$engine cannot be run: use make evaluate, which builds the test host where kwctl is missing." >&2
  exit 1
fi
for request in test_data/requests/*.json; do
  case_name="$(basename "$request" .json)"
  settings="$(cat "test_data/settings/$case_name.json")"
  if ! response="$(RUST_BACKTRACE=0 "$engine" run --request-path "$request" --settings-json "$settings" \
      --allow-context-aware --replay-host-capabilities-interactions "test_data/sessions/$case_name.yml" \
      "$policy" 2>/dev/null)"; then
    echo "$case_name: the engine failed; rerun: $engine run --request-path $request --settings-json '$settings' --allow-context-aware --replay-host-capabilities-interactions test_data/sessions/$case_name.yml $policy"
    continue
  fi
  printf '%s\n  %s\n' "$case_name" "$(jq -r '
    if .allowed then
      "ALLOWED"
      + (if .patch then " with patch " + (.patch | @base64d) else "" end)
      + (if .warnings then " | warning: " + (.warnings | join(" ")) else "" end)
    else
      "REJECTED (\(.status.code)): \(.status.message)"
    end' <<<"$response")"
done
