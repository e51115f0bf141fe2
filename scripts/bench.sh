#!/usr/bin/env bash
# make bench: times the policy (testhost bench) on namespaces of 1,000, 10,000 and 50,000
# Metal3Machines built from the simulation's objects and served by the simulation's API server,
# the DELETE also against its exact floor (bench-floor's module making the same host calls), and
# prints the table docs/performance.md quotes.
# SIZES="1000 10000" picks other sizes; TESTHOST, POLICY and FLOOR pick the binaries (FLOOR=
# leaves the floor out).
set -euo pipefail
cd "$(dirname "$0")/.."
TESTHOST=${TESTHOST:-target/testhost/testhost}
POLICY=${POLICY:-policy.wasm}
FLOOR=${FLOOR-target/wasm32-wasip1/release/bench_floor.wasm}
SIZES=${SIZES:-1000 10000 50000}

args=()
if [[ -n $FLOOR ]]; then
  args+=(--floor "$FLOOR")
fi
for n in $SIZES; do
  args+=(--machines "$n")
done
echo "Measured on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(date -u +%Y-%m-%d);" \
  "policy.wasm $(stat -c %s "$POLICY") bytes."
echo
RUST_BACKTRACE=0 "$TESTHOST" bench "${args[@]}" "$POLICY"
