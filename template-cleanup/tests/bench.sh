#!/usr/bin/env bash
# The clean-up's memory at scale (`make bench-cleanup`): template-cleanup's peak resident memory in
# one dry-run pass over all namespaces with --helm-releases, against `testhost apiserver` serving
# N labelled KubeadmConfigTemplates of about 48 KiB (default 10,000), 5,000 Helm release Secrets,
# and three hostile Helm releases (a YAML alias bomb, a gzipped flow list of 15,000,000 items, a
# 1 GiB gzip bomb), as template-cleanup/examples/bench_state.rs writes them. The target is under
# 64 MiB (the Job's limit is 128 MiB). Prints the figures and TAP lines.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${N:-10000}
TESTHOST=${TESTHOST:-target/testhost/testhost}
CLEANUP=${CLEANUP:-target/debug/template-cleanup}
STATE=${STATE:-target/debug/examples/bench_state}
POLICY=${POLICY:-policy.wasm}
JQ=${JQ:-target/tools/bin/jq}
T=$(mktemp -d)
api=
trap '[ -n "$api" ] && kill "$api" 2>/dev/null; rm -rf "$T"' EXIT
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy

# template-cleanup's guard as kustomize builds it: the main guard with the clean-up's patch
# (YAML to JSON with kubectl's local patch, which changes nothing: jq reads no YAML), active, and
# its ValidatingWebhookConfiguration, as testhost/kubewarden.jq writes them for every e2e script
kubectl kustomize examples/cleanup/guard | kubectl patch --local -f - --type merge -p '{}' -o json |
  "$JQ" -c "$(cat testhost/kubewarden.jq)"'
    select(.kind == "ClusterAdmissionPolicy") | active_policy | [., webhook_configuration]' >"$T/guard.json"
start=$(date +%s)
"$STATE" "$T/guard.json" "$N" "$T/state.json"
echo "# state: $N templates, 5,000 Helm Secrets, 3 hostile releases: $(( $(stat -c %s "$T/state.json") / 1048576 )) MiB of JSON, written in $(( $(date +%s) - start )) s"

"$TESTHOST" apiserver --state "$T/state.json" --policy "$POLICY" --kubeconfig "$T/kc.yaml" \
  --webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission 2>"$T/api.log" &
api=$!
for _ in $(seq 3000); do [ -s "$T/kc.yaml" ] && break; sleep 0.1; done
[ -s "$T/kc.yaml" ] || { echo "Bail out! testhost apiserver did not start:"; tail -5 "$T/api.log"; exit 1; }
export KUBECONFIG="$T/kc.yaml"

start=$(date +%s)
"$CLEANUP" -A --dry-run --helm-releases --min-age=10m >"$T/out.txt" 2>"$T/err.txt" &
pid=$! hwm=0
# VmHWM only grows: the last reading before the process exits is its peak (to within 20 ms).
while h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null) && [ -n "$h" ]; do
  hwm=$h; sleep 0.02
done
set +e; wait "$pid"; code=$?; set -e
echo "# template-cleanup: exit $code after $(( $(date +%s) - start )) s, peak resident memory $((hwm / 1024)) MiB ($hwm kB)"
awk '$1 == "would" || $1 == "kept" || $1 == "left" {print "#   " $1 (($1 == "would") ? " " $2 : "")}' "$T/out.txt" | sort | uniq -c
tail -n 1 "$T/out.txt" | sed 's/^/# /'

n=0 failed=0
check() { n=$((n + 1)); if "${@:2}"; then echo "ok $n - $1"; else echo "not ok $n - $1"; failed=$((failed + 1)); fi; }
check "the pass exits 0" test "$code" -eq 0
check "the peak was read" test "$hwm" -gt 0
check "peak resident memory under 64 MiB" test "$hwm" -lt 65536
# The flow list and the gzip bomb cannot be read within the bounds: their namespace's templates
# count as declared. The alias bomb is read within them (aliases are not expanded) and declares
# nothing, as a release that declares no template.
for ns in flow gzip; do
  check "the hostile $ns release leaves its namespace's template" grep -q "^left .* hostile-$ns/free " "$T/out.txt"
done
check "the alias bomb is read within its bounds and declares nothing" grep -q "^would delete .* hostile-alias/free" "$T/out.txt"
check "a template a current release declares is left" grep -q "^left .* edge/tmpl-00001 " "$T/out.txt"
check "a free template would be deleted" grep -q "^would delete .* edge/tmpl-09999 " "$T/out.txt"
echo "1..$n"
[ "$failed" -eq 0 ] || { sed 's/^/# stderr: /' "$T/err.txt" | head -20; exit 1; }
