#!/usr/bin/env bash
# make bench: writes namespaces of 1,000, 10,000 and 50,000 Metal3Machines with
# bench/make_namespace.py (kept in target/bench/ until the script changes; v1beta1 objects too up
# to 10,000, for the v1beta1-only release line), then compares the policy with the baseline on all
# of them in one run (testhost bench-compare) and prints the tables.
# SIZES="1000 10000" picks other sizes; TESTHOST and POLICY pick the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTHOST=${TESTHOST:-target/testhost/testhost}
POLICY=${POLICY:-policy.wasm}
SIZES=${SIZES:-1000 10000 50000}

args=()
for n in $SIZES; do
  dir=target/bench/ns-$n
  flags=(--machines "$n")
  if [ "$n" -le 10000 ]; then flags+=(--v1beta1); fi
  if [ ! -f "$dir/objects-v1beta2.json" ] || [ bench/make_namespace.py -nt "$dir/objects-v1beta2.json" ]; then
    python3 bench/make_namespace.py "$dir" "${flags[@]}"
  fi
  args+=(--namespace "$dir")
done
echo "Measured on $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(date -u +%Y-%m-%d);" \
  "policy.wasm $(stat -c %s "$POLICY") bytes."
echo
RUST_BACKTRACE=0 "$TESTHOST" bench-compare "${args[@]}" "$POLICY"
