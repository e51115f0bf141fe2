#!/usr/bin/env bash
# End to end, with no cluster: template-cleanup against `testhost apiserver` (testhost/README.md),
# whose DELETEs of templates go through its validating webhook, i.e. are judged by the compiled
# policy.wasm the way kube-apiserver sends them to the policy server. The guard is
# examples/cluster-admission-policy-guard.yaml with the status Kubewarden gives an active policy.
# Prints TAP lines. Run from the repository root through `make cleanup-e2e`.
#
# A case: `start EDIT [apiserver flags]` (the state below, edited by EDIT), `run ARGS` (the
# clean-up, setting OUT, ERR and CODE), `check "what" is|has ...`, then `stop`.
set -euo pipefail
cd "$(dirname "$0")/../.."
TESTHOST=${TESTHOST:-target/testhost/testhost}
CLEANUP=${CLEANUP:-target/debug/template-cleanup}
POLICY=${POLICY:-policy.wasm}
JQ=${JQ:-target/tools/bin/jq}
T=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$T"' EXIT
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy

"$JQ" --from yaml -c . examples/cluster-admission-policy-guard.yaml >"$T/guard.json"

# state EDIT: writes state.json: the guard and its ValidatingWebhookConfiguration as
# kubewarden-controller v1.36.0-beta.1 writes it (internal/controller/policy_subreconciler_webhook.go:
# the controller's namespace, here `kubewarden`, left out by its namespaceSelector), edited by EDIT
# (a jq filter on {guard, hook}; a deleted one is not in the state), then a Cluster, a
# MachineDeployment using template in-use, and three labelled templates: in-use and free (created
# in 2020), young (created now).
state() {
  "$JQ" -n --slurpfile guard "$T/guard.json" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" '
    ($guard[0] | .status = {mode: "protect", policyStatus: "active"}) as $guard
    | ("clusterwide-" + $guard.metadata.name) as $name
    | {guard: $guard,
       hook: {apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
              metadata: {name: $name},
              webhooks: [{name: ($name + ".kubewarden.admission"), rules: $guard.spec.rules,
                          failurePolicy: "Fail", sideEffects: "None", admissionReviewVersions: ["v1"],
                          namespaceSelector: {matchExpressions: [{key: "kubernetes.io/metadata.name",
                                                                  operator: "NotIn", values: ["kubewarden"]}]}}]}}
    | '"$1"'
    | [.guard, .hook | select(. != null)]
    + [{apiVersion: "cluster.x-k8s.io/v1beta1", kind: "Cluster",
        metadata: {name: "edge-a", namespace: "edge"}, spec: {}},
       {apiVersion: "cluster.x-k8s.io/v1beta1", kind: "MachineDeployment",
        metadata: {name: "edge-a-md", namespace: "edge"},
        spec: {clusterName: "edge-a", template: {spec: {clusterName: "edge-a",
          infrastructureRef: {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
                              kind: "Metal3MachineTemplate", name: "in-use"}}}}}]
    + [["in-use", "2020-01-01T00:00:00Z"], ["free", "2020-01-01T00:00:00Z"], ["young", $now]
       | {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3MachineTemplate",
          metadata: {name: .[0], namespace: "edge", creationTimestamp: .[1],
                     labels: {"capi-template-guard.kubewarden.io/cleanup": "true"}},
          spec: {template: {spec: {}}}}]' >"$T/state.json"
}

# start EDIT [FLAGS...]: the API server on the state edited by EDIT, its webhook running the
# policy; FLAGS go to `testhost apiserver`. Sets KUBECONFIG and API.
start() {
  state "$1"
  rm -f "$T/kc.yaml"
  # its stderr: one line per request (method, URL, status, what was done), then the policy's log
  "$TESTHOST" apiserver --state "$T/state.json" --policy "$POLICY" --kubeconfig "$T/kc.yaml" \
    "${@:2}" 2>"$T/api.log" &
  pids+=($!)
  for _ in $(seq 300); do [ -s "$T/kc.yaml" ] && break; sleep 0.1; done
  [ -s "$T/kc.yaml" ] || { echo "Bail out! testhost apiserver did not start:"; cat "$T/api.log"; exit 1; }
  API=$(sed -n 's#.*server: http://##p' "$T/kc.yaml")
  export KUBECONFIG="$T/kc.yaml"
}

# The HTTP status of a GET of template $1.
template_status() {
  curl -s -o /dev/null -w '%{http_code}' \
    "http://$API/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/edge/metal3machinetemplates/$1"
}

# How many DELETEs the API server received.
deletes() { grep -c '^DELETE ' "$T/api.log" || true; }

n=0 passed=0 failed=0
check() { # check "description" command...
  n=$((n + 1))
  if "${@:2}"; then echo "ok $n - $1"; passed=$((passed + 1)); else echo "not ok $n - $1"; failed=$((failed + 1)); fi
}
run() { # run ARGS...: sets OUT, ERR and CODE
  set +e
  OUT=$("$CLEANUP" -n edge "$@" 2>"$T/cleanup.err"); CODE=$?
  set -e
  ERR=$(cat "$T/cleanup.err")
}
has() { grep -qF -- "$2" <<<"$1" || { echo "# expected: $2" ; sed 's/^/#   /' <<<"$1"; return 1; }; }
is() { [ "$1" = "$2" ] || { echo "# expected $2, got $1"; return 1; }; }

start .
run --dry-run
check "a dry run exits 0" is "$CODE" 0
check "a dry run would delete the free template" has "$OUT" "would delete metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/free"
check "a dry run quotes the guard's refusal of the template in use" has "$OUT" "kept         metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use (age "
check "the refusal names the MachineDeployment" has "$(grep in-use <<<"$OUT")" "edge-a-md"
check "a young template is left alone" has "$(grep edge/young <<<"$OUT")" "younger than --min-age"
check "a dry run's closing line" has "$OUT" "deleted 1, kept 2, failed 0 (dry run)"
check "a dry run deletes nothing" is "$(template_status free)$(template_status in-use)" "200200"
run -o json
check "a pass exits 0" is "$CODE" 0
check "the JSON report says deleted" is "$("$JQ" -r '.templates[] | select(.name == "free") | .verdict' <<<"$OUT")" deleted
check "the JSON report keeps the template in use" is "$("$JQ" -r '.templates[] | select(.name == "in-use") | .verdict' <<<"$OUT")" kept
check "the free template is deleted" is "$(template_status free)" 404
check "the template in use is kept" is "$(template_status in-use)" 200
stop

# Kubewarden's controller running in `edge`: its webhook never sees the templates there, so the
# pass keeps them all, sends no DELETE, and says what to do.
start '.hook.webhooks[0].namespaceSelector.matchExpressions[0].values = ["edge"]'
run
check "templates the webhook never sees: exit 0" is "$CODE" 0
check "templates the webhook never sees are kept, with what to do" has "$(grep edge/free <<<"$OUT")" "Set spec.allowInsideAdmissionControllerNamespace: true on the ClusterAdmissionPolicy capi-template-guard"
check "templates the webhook never sees: no DELETE sent" is "$(deletes)" 0
check "templates the webhook never sees: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
stop

# Pre-flight refusals: "what|EDIT|the check named"
for case in "monitor|.guard.spec.mode = \"monitor\"|spec.mode is protect" \
            "failurePolicy Ignore|.guard.spec.failurePolicy = \"Ignore\"|failurePolicy is Fail" \
            "a missing guard|del(.guard)|guard exists" \
            "a scheduled guard|.guard.status.policyStatus = \"scheduled\"|status.policyStatus is active" \
            "no webhook|del(.hook)|the guard's webhook is installed" \
            "a webhook selecting by team|.hook.webhooks[0].namespaceSelector.matchExpressions += [{key: \"team\", operator: \"In\", values: [\"edge\"]}]|the guard sees every template"; do
  IFS='|' read -r what edit name <<<"$case"
  start "$edit"
  run
  check "$what: exit 2" is "$CODE" 2
  check "$what: the message names the check" has "$ERR" "pre-flight check \`$name\` failed"
  check "$what: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
  check "$what: no DELETE sent" is "$(deletes)" 0
  stop
done
echo "1..$n"
echo "cleanup e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
