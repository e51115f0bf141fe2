#!/usr/bin/env bash
# End to end, with no cluster: template-cleanup against fakeapi (../shared/tools/fakeapi), whose
# DELETEs of templates go through `testhost webhook`, i.e. are judged by the compiled policy.wasm,
# the way kube-apiserver sends them to the policy server. The guard is
# examples/cluster-admission-policy-guard.yaml with the status Kubewarden gives an active policy.
# Prints TAP lines. Run from the repository root through `make cleanup-e2e`.
set -euo pipefail
cd "$(dirname "$0")/../.."
FAKEAPI=${FAKEAPI:-../shared/tools/fakeapi/fakeapi.py}
TESTHOST=${TESTHOST:-target/testhost/testhost}
CLEANUP=${CLEANUP:-target/debug/template-cleanup}
POLICY=${POLICY:-policy.wasm}
T=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$T"' EXIT
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy

# state.yaml: the guard (edited by $1, a Python statement on `guard` and `hook`, or "missing"), its
# ValidatingWebhookConfiguration as kubewarden-controller v1.36.0-beta.1 writes it
# (internal/controller/policy_subreconciler_webhook.go: the controller's namespace, here
# `kubewarden`, left out by its namespaceSelector; "del docs[1]" removes it), a Cluster, a
# MachineDeployment using template in-use, and three labelled templates: in-use and free (created
# in 2020), young (created now).
state() {
  python3 - "$1" >"$T/state.yaml" <<'PY'
import datetime, sys, yaml
edit = sys.argv[1]
docs = []
guard = yaml.safe_load(open("examples/cluster-admission-policy-guard.yaml"))
guard["status"] = {"mode": "protect", "policyStatus": "active"}
name = "clusterwide-" + guard["metadata"]["name"]
hook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": name + ".kubewarden.admission", "rules": guard["spec"]["rules"],
                      "failurePolicy": "Fail", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                                  "operator": "NotIn", "values": ["kubewarden"]}]}}]}
docs.append(guard)
docs.append(hook)
if edit == "missing":
    docs = [hook]
else:
    exec(edit)
docs.append({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
             "metadata": {"name": "edge-a", "namespace": "edge"}, "spec": {}})
docs.append({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineDeployment",
             "metadata": {"name": "edge-a-md", "namespace": "edge"},
             "spec": {"clusterName": "edge-a", "template": {"spec": {"clusterName": "edge-a",
                 "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                       "kind": "Metal3MachineTemplate", "name": "in-use"}}}}})
for name, created in [("in-use", "2020-01-01T00:00:00Z"), ("free", "2020-01-01T00:00:00Z"), ("young", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))]:
    meta = {"name": name, "namespace": "edge", "creationTimestamp": created,
            "labels": {"capi-template-guard.kubewarden.io/cleanup": "true"}}
    docs.append({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate",
                 "metadata": meta, "spec": {"template": {"spec": {}}}})
yaml.safe_dump_all(docs, sys.stdout)
PY
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Starts fakeapi on state.yaml and the webhook it calls; sets KUBECONFIG and API.
start() {
  local hook
  hook=$(free_port)
  rm -f "$T/kc.yaml" "$T/hook.port" "$T/api.log"
  python3 "$FAKEAPI" --objects "$T/state.yaml" --synthesize-crds --kubeconfig "$T/kc.yaml" \
    --log "$T/api.log" --delete-webhook "http://127.0.0.1:$hook/validate/clusterwide-capi-template-guard" \
    2>>"$T/api.err" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$T/kc.yaml" ] && break; sleep 0.1; done
  API=$(sed -n 's#.*server: http://##p' "$T/kc.yaml")
  "$TESTHOST" webhook --api "$API" --listen "127.0.0.1:$hook" --port-file "$T/hook.port" "$POLICY" 2>>"$T/hook.err" &
  pids+=($!)
  for _ in $(seq 300); do [ -s "$T/hook.port" ] && break; sleep 0.1; done
  export KUBECONFIG="$T/kc.yaml"
}

# The HTTP status of a GET of template $1.
template_status() {
  curl -s -o /dev/null -w '%{http_code}' \
    "http://$API/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/edge/metal3machinetemplates/$1"
}

n=0 passed=0 failed=0
check() { # check "description" command...
  n=$((n + 1))
  if "${@:2}"; then echo "ok $n - $1"; passed=$((passed + 1)); else echo "not ok $n - $1"; failed=$((failed + 1)); fi
}
run() { # run ARGS...: sets OUT and CODE
  set +e
  OUT=$("$CLEANUP" -n edge "$@" 2>"$T/cleanup.err"); CODE=$?
  set -e
  ERR=$(cat "$T/cleanup.err")
}
has() { grep -qF -- "$2" <<<"$1" || { echo "# expected: $2" ; sed 's/^/#   /' <<<"$1"; return 1; }; }
is() { [ "$1" = "$2" ] || { echo "# expected $2, got $1"; return 1; }; }

state "pass"
start
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
check "the JSON report says deleted" is "$(jq -r '.templates[] | select(.name == "free") | .verdict' <<<"$OUT")" deleted
check "the JSON report keeps the template in use" is "$(jq -r '.templates[] | select(.name == "in-use") | .verdict' <<<"$OUT")" kept
check "the free template is deleted" is "$(template_status free)" 404
check "the template in use is kept" is "$(template_status in-use)" 200
stop

# Kubewarden's controller running in `edge`: its webhook never sees the templates there, so the
# pass keeps them all, sends no DELETE, and says what to do.
state "hook['webhooks'][0]['namespaceSelector']['matchExpressions'][0]['values'] = ['edge']"
start
run
check "templates the webhook never sees: exit 0" is "$CODE" 0
check "templates the webhook never sees are kept, with what to do" has "$(grep edge/free <<<"$OUT")" "Set spec.allowInsideAdmissionControllerNamespace: true on the ClusterAdmissionPolicy capi-template-guard"
check "templates the webhook never sees: no DELETE sent" is "$(grep -c ' DELETE ' "$T/api.log" || true)" 0
check "templates the webhook never sees: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
stop

for case in "monitor|guard['spec']['mode'] = 'monitor'|spec.mode is protect" \
            "failurePolicy Ignore|guard['spec']['failurePolicy'] = 'Ignore'|failurePolicy is Fail" \
            "a missing guard|missing|guard exists" \
            "a scheduled guard|guard['status']['policyStatus'] = 'scheduled'|status.policyStatus is active" \
            "no webhook|del docs[1]|the guard's webhook is installed" \
            "a webhook selecting by team|hook['webhooks'][0]['namespaceSelector']['matchExpressions'].append({'key': 'team', 'operator': 'In', 'values': ['edge']})|the guard sees every template"; do
  IFS='|' read -r what edit name <<<"$case"
  state "$edit"
  start
  run
  check "$what: exit 2" is "$CODE" 2
  check "$what: the message names the check" has "$ERR" "pre-flight check \`$name\` failed"
  check "$what: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
  check "$what: no DELETE sent" is "$(grep -c ' DELETE ' "$T/api.log" || true)" 0
  stop
done
echo "1..$n"
echo "cleanup e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
