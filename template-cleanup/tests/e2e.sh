#!/usr/bin/env bash
# End to end, with no cluster: template-cleanup against `testhost apiserver` (testhost/README.md),
# whose DELETEs of templates go through its validating webhook, i.e. are judged by the compiled
# policy.wasm the way kube-apiserver sends them to the policy server. The guard is
# template-cleanup's own, examples/cleanup/guard (built by kubectl kustomize), with the status Kubewarden
# gives an active policy. Prints TAP lines. Run from the repository root through `make cleanup-e2e`.
#
# A case: `start EDIT [apiserver flags]` (the state below, edited by EDIT), `run ARGS` (runs
# template-cleanup, setting OUT, ERR and CODE), `check "what" is|has ...`, then `stop`.
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

# template-cleanup's guard as kustomize builds it: the main guard with the clean-up's patch
# (YAML to JSON with kubectl's local patch, which changes nothing: jq reads no YAML)
kubectl kustomize examples/cleanup/guard | kubectl patch --local -f - --type merge -p '{}' -o json |
  "$JQ" -c 'select(.kind == "ClusterAdmissionPolicy")' >"$T/guard.json"

# state EDIT: writes state.json: the guard, active, and its ValidatingWebhookConfiguration as
# kubewarden-controller writes it (testhost/kubewarden.jq), and `capi`, a Cluster and a
# MachineDeployment using template in-use, edited by EDIT (a jq filter on {guard, hook, capi}; a
# deleted one is not in the state), then three labelled templates: in-use and free (created in
# 2020), young (created now).
KUBEWARDEN_JQ=$(cat testhost/kubewarden.jq)
state() {
  "$JQ" -n --slurpfile guard "$T/guard.json" --arg now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$KUBEWARDEN_JQ"'
    ($guard[0] | active_policy) as $guard
    | {guard: $guard,
       hook: ($guard | webhook_configuration),
       capi: [{apiVersion: "cluster.x-k8s.io/v1beta1", kind: "Cluster",
               metadata: {name: "edge-a", namespace: "edge"}, spec: {}},
              {apiVersion: "cluster.x-k8s.io/v1beta1", kind: "MachineDeployment",
               metadata: {name: "edge-a-md", namespace: "edge"},
               spec: {clusterName: "edge-a", template: {spec: {clusterName: "edge-a",
                 infrastructureRef: {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1",
                                     kind: "Metal3MachineTemplate", name: "in-use"}}}}}]}
    | '"$1"'
    | [.guard, .hook | select(. != null)] + .capi
    + [["in-use", "2020-01-01T00:00:00Z"], ["free", "2020-01-01T00:00:00Z"], ["young", $now]
       | {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3MachineTemplate",
          metadata: {name: .[0], namespace: "edge", creationTimestamp: .[1],
                     labels: {"capi-template-guard.kubewarden.io/cleanup": "true"}},
          spec: {template: {spec: {}}}}]' >"$T/state.json"
}

# start EDIT [FLAGS...]: the API server on the state edited by EDIT, its webhook (template-cleanup
# guard's) running the policy, unless NO_POLICY=1 (then the webhook cannot be called); FLAGS go to
# `testhost apiserver`. Sets KUBECONFIG and API.
start() {
  state "$1"
  rm -f "$T/kc.yaml"
  local policy=(--policy "$POLICY")
  [ "${NO_POLICY:-}" = 1 ] && policy=()
  # its stderr: one line per request (method, URL, status, what was done), then the policy's log
  "$TESTHOST" apiserver --state "$T/state.json" "${policy[@]}" --kubeconfig "$T/kc.yaml" \
    --webhook clusterwide-capi-template-guard-cleanup.kubewarden.admission \
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

# The Events of namespace $1, one line each: regarding name, reason, series count, note.
events() {
  curl -s "http://$API/apis/events.k8s.io/v1/namespaces/$1/events" \
    | "$JQ" -r '.items[] | "\(.regarding.name) \(.reason) \(.series.count // 1) \(.note)"'
}
# The OpenReports Report template-cleanup wrote in namespace edge.
edge_report() { curl -s "http://$API/apis/openreports.io/v1alpha1/namespaces/edge/reports/template-cleanup"; }

# shellcheck source=tests/lib/tap.bash
. tests/lib/tap.bash
run() { capture "$CLEANUP" -n edge "$@"; } # run ARGS...: template-cleanup; sets OUT, ERR and CODE

start .
run --dry-run
check "a dry run exits 0" is "$CODE" 0
check "a dry run would delete the free template" has "$OUT" "would delete     metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/free"
check "the probe: the guard refused a dry-run DELETE of the template in use" has "$OUT" "probe: the guard refused a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses: "
check "a dry run quotes the guard's refusal of the template in use" has "$(grep ' edge/in-use (age ' <<<"$OUT")" "kept "
check "the refusal names the MachineDeployment" has "$(grep ' edge/in-use (age ' <<<"$OUT")" "edge-a-md"
check "a young template is left" has "$(grep edge/young <<<"$OUT")" "left             metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/young (age "
check "a young template is left for its age" has "$(grep edge/young <<<"$OUT")" "): younger than --min-age"
check "a dry run's closing line comes last" is "$(tail -n 1 <<<"$OUT")" "deleted 1, deletion started 0, kept 1, left 1, already gone 0, changed 0, failed 0, not tried 0 (dry run)"
check "a dry run deletes nothing" is "$(template_status free)$(template_status in-use)" "200200"
run -o json
check "a pass exits 0" is "$CODE" 0
check "the JSON report says deleted" is "$("$JQ" -r '.templates[] | select(.name == "free") | .verdict' <<<"$OUT")" deleted
check "the JSON report keeps the template in use" is "$("$JQ" -r '.templates[] | select(.name == "in-use") | .verdict' <<<"$OUT")" kept
check "the free template is deleted" is "$(template_status free)" 404
check "the template in use is kept" is "$(template_status in-use)" 200
stop

# What a pass records on the objects (docs/cleanup.md#events-and-reports), with the OpenReports CRD
# served (a Report is held in another namespace): an Event per template decided, reason and note;
# one Report for edge; a second pass adds to each Event's series instead of making another.
start '.capi += [{apiVersion: "openreports.io/v1alpha1", kind: "Report", metadata: {name: "x", namespace: "other"}}]'
run --dry-run
check "a dry run records no Event and says so" is "$(events edge | wc -l)/$(grep -c '^events and reports: none written (a dry run writes nothing)$' <<<"$OUT")" 0/1
run
check "Events: the kept template's says why, with the guard's text" has "$(events edge | grep '^in-use ')" "in-use TemplateKept 1 Kept: no DELETE sent, as the guard's own decision over what this pass listed keeps it: Metal3MachineTemplate edge/in-use is still in use and was not deleted. It is referenced by MachineDeployment edge-a-md"
check "Events: the left template's says why" is "$(events edge | grep '^young ')" "young TemplateLeft 1 No DELETE sent: younger than --min-age (10m); a later pass tries it."
check "Events: the deleted template's" is "$(events edge | grep '^free ')" "free TemplateDeleted 1 Deleted: the guard capi-template-guard-cleanup let its DELETE through, so nothing it checks still needs this template."
check "Events: the summary line" has "$OUT" "events: 3 recorded (3 new, 0 added to a series), 0 over the cap of 500 (--events-per-pass), 0 failed"
check "Report: one for edge, its summary" is "$(edge_report | "$JQ" -c .summary)" '{"error":0,"fail":0,"pass":1,"skip":1,"warn":1}'
check "Report: the kept template is warn, with the guard's text" has "$(edge_report | "$JQ" -r '.results[] | select(.resources[0].name == "in-use") | "\(.result) \(.rule) \(.policy) \(.message)"')" "warn TemplateKept capi-template-guard-cleanup Kept: no DELETE sent, as the guard's own decision over what this pass listed keeps it: Metal3MachineTemplate edge/in-use is still in use"
check "Report: deleted is pass, left is skip" is "$(edge_report | "$JQ" -r '[.results[] | "\(.resources[0].name)=\(.result)"] | sort | join(" ")')" "free=pass in-use=warn young=skip"
check "Report: the summary line" has "$OUT" "reports: 1 written, 0 failed (openreports.io/v1alpha1 Report template-cleanup, one per namespace"
run
check "a second pass: one Event per template and verdict, its series counts 2" is "$(events edge | grep -c '^in-use TemplateKept 2 Kept: ')/$(events edge | grep -c '^in-use ')" 1/1
check "a second pass: the left template's series too" has "$(events edge | grep '^young ')" "young TemplateLeft 2 No DELETE sent"
check "a second pass: the summary line" has "$OUT" "events: 2 recorded (0 new, 2 added to a series), 0 over the cap of 500"
stop
# The cap: 600 more young templates, 603 decided; the kept and the deleted one come first.
start '.capi += [range(600) as $i | {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3MachineTemplate",
    metadata: {name: "y\($i)", namespace: "edge", creationTimestamp: $now,
               labels: {"capi-template-guard.kubewarden.io/cleanup": "true"}}, spec: {template: {spec: {}}}}]'
run
check "600 templates more: exit 0" is "$CODE" 0
check "600 templates more: the summary says 500 recorded, 103 over the cap" has "$OUT" "events: 500 recorded (500 new, 0 added to a series), 103 over the cap of 500 (--events-per-pass), 0 failed"
check "600 templates more: 500 Events, the kept and the deleted one among them" is "$(events edge | wc -l) $(events edge | grep -c -E '^(in-use TemplateKept|free TemplateDeleted) ')" "500 2"
check "no OpenReports CRD: the pass says so once" is "$(grep -c '^reports: not written: the OpenReports CRD (reports.openreports.io, v1alpha1) is not installed$' <<<"$OUT")" 1
stop

# Namespaces the guard never judges: one its webhook's namespaceSelector leaves out, and the policy
# server's own (it accepts every request there unchecked): the pass leaves their templates, says
# why, and sends no DELETE, not even the probe's.
for case in "left out by the selector|.hook.webhooks[0].namespaceSelector.matchExpressions[0].values = [\"edge\"]" \
            "the policy server's namespace|.hook.webhooks[0].clientConfig.service.namespace = \"edge\""; do
  IFS='|' read -r what edit <<<"$case"
  start "$edit"
  run
  check "$what: exit 0" is "$CODE" 0
  check "$what: the template is left" has "$(grep edge/free <<<"$OUT")" "left             metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/free (age "
  check "$what: the line says the guard never judges there" has "$(grep edge/free <<<"$OUT")" "the guard capi-template-guard-cleanup never judges a DELETE in namespace edge"
  check "$what: no DELETE sent" is "$(deletes)" 0
  check "$what: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
  stop
done

# The probe catches a guard that answers but does not refuse: the policy server runs it in monitor
# mode (whatever the policy's status says). Only the probe's dry-run DELETE is sent.
start . --monitor
run
check "monitor mode at the policy server: exit 2" is "$CODE" 2
check "monitor mode: the probe says what came back" has "$ERR" "did not come back as the guard's refusal: 2xx: the DELETE would have gone through"
check "monitor mode: the message ends saying nothing was deleted" has "$ERR" "Nothing was deleted."
check "monitor mode: only the probe's DELETE was sent" is "$(deletes)" 1
check "monitor mode: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
stop

# The probe is not used up by a stuck rollout: twelve MachineDeployments, sorted first, name
# templates that do not exist. They cost a GET each and no DELETE; the probe reaches in-use, and
# a policy server in monitor mode lets its dry-run DELETE through: exit 2, nothing deleted.
start '.capi += [range(12) as $i | {apiVersion: "cluster.x-k8s.io/v1beta1", kind: "MachineDeployment",
    metadata: {name: "a-stuck-\($i)", namespace: "edge"},
    spec: {clusterName: "edge-a", template: {spec: {clusterName: "edge-a",
      infrastructureRef: {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3MachineTemplate", name: "a-missing-\($i)"}}}}}]' --monitor
run
check "a stuck rollout before the template in use, monitor mode: exit 2" is "$CODE" 2
check "a stuck rollout: the probe reached the template in use" has "$ERR" "the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, did not come back as the guard's refusal"
check "a stuck rollout: no \"no probe possible\"" is "$(grep -c 'no probe possible' <<<"$OUT$ERR" || true)" 0
check "a stuck rollout: only the probe's DELETE was sent" is "$(deletes)" 1
check "a stuck rollout: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
stop

# Who is deleting: the job asks (SelfSubjectReview) before anything else; run as someone the
# clean-up policy's matchCondition does not select, it deletes nothing and names both.
start . --user kubernetes-admin
run
check "another caller: exit 2" is "$CODE" 2
check "another caller: the SelfSubjectReview comes first" has "$(grep -m1 -E '^(GET|POST|DELETE) ' "$T/api.log")" "POST /apis/authentication.k8s.io/v1/selfsubjectreviews"
check "another caller: the message names the user and the policy" has "$ERR" "pre-flight check \`the guard judges this caller\` failed: the API server says this job runs as \"kubernetes-admin\" (SelfSubjectReview), but the guard capi-template-guard-cleanup judges only DELETEs by a service account named capi-template-cleanup"
check "another caller: no DELETE sent" is "$(deletes)" 0
# Why it must not run: the API server sends that caller's DELETEs to the clean-up's guard not at
# all (its matchCondition is false; in a cluster the main guard judges them instead, which this
# state does not hold). A DELETE of the template in use by that caller goes through unjudged.
check "another caller: the API server does not call the clean-up's guard for it" is "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://$API/apis/infrastructure.cluster.x-k8s.io/v1beta1/namespaces/edge/metal3machinetemplates/in-use")" 200
check "another caller: its matchCondition said so" has "$(cat "$T/api.log")" "the webhook is not called: matchCondition only-capi-template-cleanup of clusterwide-capi-template-guard-cleanup.kubewarden.admission is false"
stop
start . --user system:serviceaccount:ops:capi-template-cleanup
run
check "the job's account in another namespace: exit 0 (the same condition selects it)" is "$CODE" 0
stop

# A 404 for the template's Namespace, not the template (a force-finalized Namespace): failed,
# naming it, never "already gone".
start '.capi = []' --fault delete:Metal3MachineTemplate=no-namespace
run
check "a missing namespace: exit 1" is "$CODE" 1
check "a missing namespace: the line fails and names it" has "$(grep edge/free <<<"$OUT")" "its namespace edge does not exist"
check "a missing namespace: nothing is already gone" has "$(tail -n 1 <<<"$OUT")" "already gone 0"
check "a missing namespace: the template is still there" is "$(template_status free)" 200
stop

# A long pass: the guard is checked again every 50 DELETEs; a policy server that switches to
# monitor mode after the 51st judged DELETE (the probe and 50) is caught by the re-check's probe.
# The template in use gets no DELETE at all: the guard's own decision keeps it first.
start '.capi += [range(60) as $i | {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3MachineTemplate",
    metadata: {name: "t\($i)", namespace: "edge", creationTimestamp: "2020-01-01T00:00:00Z",
               labels: {"capi-template-guard.kubewarden.io/cleanup": "true"}}, spec: {template: {spec: {}}}}]' --monitor-after 51
run
check "a mode change during the pass: exit 2" is "$CODE" 2
check "a mode change during the pass: the re-check says so" has "$ERR" "The guard was checked again after 50 DELETEs and has changed: the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use"
check "a mode change during the pass: 52 DELETEs (probe, 50, re-probe)" is "$(deletes)" 52
check "a mode change during the pass: the rest not tried" has "$(tail -n 1 <<<"$OUT")" "kept 1, left 1, already gone 0, changed 0, failed 0, not tried 11"
stop

# A template recreated under the same name since it was listed (a new uid) is left for the next
# pass: the preconditions fail before the guard is asked. The probe's template, recreated under
# it on each of its two tries, proves nothing: the pass stops before any real DELETE. With no
# template in use to probe, the pass runs and reports the others changed.
start . --fault delete:Metal3MachineTemplate=recreate
run
check "a probe whose template is recreated under it: exit 2" is "$CODE" 2
check "a probe whose template is recreated under it: the message says so" has "$ERR" "the probe could not finish: metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use changed or went away between its read and its dry-run DELETE, 2 times each, and no other template in use could be probed."
check "a probe whose template is recreated under it: only its two dry-run DELETEs sent" is "$(deletes)" 2
stop
start '.capi = []' --fault delete:Metal3MachineTemplate=recreate
run
check "recreated templates: exit 0" is "$CODE" 0
check "recreated templates: no probe possible" has "$OUT" "probe: no probe possible ("
check "a recreated template is reported changed" has "$(grep edge/free <<<"$OUT")" "changed          metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/free (age "
check "a recreated template's Event says so" has "$(events edge | grep '^free ')" "free TemplateChanged 1 Not deleted: changed since it was listed, the next pass looks again (Operation cannot be fulfilled on metal3machinetemplates.infrastructure.cluster.x-k8s.io \"free\": Precondition failed: UID in precondition"
check "a recreated template is not deleted" is "$(template_status free)" 200
stop

# A webhook that cannot be called: the probe finds it before any DELETE (exit 2); without a
# template for the probe, the first DELETE finds it and the pass stops there (exit 1), the rest
# not tried.
NO_POLICY=1 start .
run
check "an unreachable webhook, probed: exit 2" is "$CODE" 2
check "an unreachable webhook, probed: the message quotes the API server" has "$ERR" "failed calling webhook"
check "an unreachable webhook, probed: only the probe's DELETE was sent" is "$(deletes)" 1
stop
NO_POLICY=1 start '.capi = []'
run
check "an unreachable webhook, no probe: exit 1" is "$CODE" 1
# Which template comes first turns with the hour (the pass order rotates), so the lines are
# counted, not named.
check "an unreachable webhook, no probe: the first DELETE fails" is "$(grep -c '^failed           metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/' <<<"$OUT")" 1
check "an unreachable webhook, no probe: the next is not tried" is "$(grep -c '^not tried        metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/' <<<"$OUT")" 1
check "an unreachable webhook, no probe: one DELETE sent" is "$(deletes)" 1
check "an unreachable webhook, no probe: the closing line comes last" has "$(tail -n 1 <<<"$OUT")" "failed 1, not tried 1"
stop

# Argo CD: an Application whose target state did not load has a ComparisonError condition and
# lists every live resource with requiresPruning (argo-cd v3.5.1 controller/state.go,
# CompareAppState): what it lists stays declared, so its template is left. Once the target state
# loads, the same entry is retired and the template deleted.
for case in "ComparisonError|[{type: \"ComparisonError\", message: \"Failed to load target state: authentication required\"}]|left" \
            "target state loaded|[]|deleted"; do
  IFS='|' read -r what conditions verdict <<<"$case"
  start ".capi += [{apiVersion: \"argoproj.io/v1alpha1\", kind: \"Application\",
    metadata: {name: \"sites\", namespace: \"argocd\"},
    status: {conditions: $conditions, resources: [{group: \"infrastructure.cluster.x-k8s.io\",
      version: \"v1beta1\", kind: \"Metal3MachineTemplate\", namespace: \"edge\", name: \"free\",
      status: \"OutOfSync\", requiresPruning: true}]}}]"
  run
  check "Argo CD, $what: exit 0" is "$CODE" 0
  check "Argo CD, $what: the template it listed is $verdict" has "$(grep edge/free <<<"$OUT")" "$verdict "
  if [ "$verdict" = left ]; then
    check "Argo CD, $what: the line says why" has "$(grep edge/free <<<"$OUT")" "still declared by Application argocd/sites (its target state did not load, ComparisonError"
    check "Argo CD, $what: the template is still there" is "$(template_status free)" 200
  else
    check "Argo CD, $what: the template is gone" is "$(template_status free)" 404
  fi
  stop
done

# Helm with --helm-releases: 500 releases of 10 revisions each (Helm's default history), 5,000
# release Secrets as Helm's Secrets driver stores them (labels owner, name, version, status;
# data.release is Helm's base64 of the release JSON, stored uncompressed, which Helm still reads),
# about 18 KiB each, 89 MiB as the API serves them. The pass lists them as metadata only and
# fetches the 500 deployed revisions alone (19 MiB resident when measured); release site-000
# declares `free`, which is left. A deployed revision that is not Helm's
# encoding leaves its namespace's templates (declared, unreadable release) and the pass goes on.
helm_state() { # helm_state DATA: DATA is a jq expression for site-000's data.release
  echo '.capi += [range(500) as $r | range(1; 11) as $v
    | ("site-" + ($r | tostring | if length == 1 then "00" + . elif length == 2 then "0" + . else . end)) as $name
    | {apiVersion: "v1", kind: "Secret", type: "helm.sh/release.v1",
       metadata: {name: ("sh.helm.release.v1." + $name + ".v" + ($v | tostring)), namespace: "edge",
                  labels: {owner: "helm", name: $name, version: ($v | tostring),
                           status: (if $v == 10 then "deployed" else "superseded" end)}},
       data: {release: ({name: $name, namespace: "edge", version: $v, info: {status: "deployed"},
                         chart: {files: [range(300) | "chart file line \(.) of \($name)"]},
                         manifest: ("apiVersion: infrastructure.cluster.x-k8s.io/v1beta1\nkind: Metal3MachineTemplate\nmetadata:\n  name: "
                                    + (if $r == 0 then "free" else $name + "-md" end) + "\n")}
                        | tojson | @base64 | @base64)}}
    | if .metadata.name == "sh.helm.release.v1.site-000.v10" then .data.release = ('"$1"') else . end]'
}
start "$(helm_state .data.release)"
# Peak resident memory from /proc (VmHWM only grows, so the last reading before the process
# exits is its peak up to ~20 ms before the end), with no tool beyond bash.
"$CLEANUP" -n edge --helm-releases >"$T/cleanup.out" 2>"$T/cleanup.err" &
pid=$! hwm=0
while h=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$pid/status" 2>/dev/null) && [ -n "$h" ]; do
  hwm=$h; sleep 0.02
done
set +e
wait "$pid"; CODE=$?
set -e
OUT=$(cat "$T/cleanup.out")
ERR=$(cat "$T/cleanup.err")
check "Helm, 5,000 revisions: exit 0" is "$CODE" 0
check "Helm, 5,000 revisions: the template a deployed release declares is left" has "$(grep edge/free <<<"$OUT")" "still declared by Helm release edge/site-000 (revision 10, deployed)"
check "Helm, 5,000 revisions: listed as metadata, the 500 current revisions read" has "$OUT" "source Helm releases: 5000 Secrets listed (metadata only), 500 current revisions read, 500 objects declared (Secrets read in edge)"
check "Helm, 5,000 revisions: ten pages listed" is "$(grep -c '^GET /api/v1/namespaces/edge/secrets?' "$T/api.log")" 10
check "Helm, 5,000 revisions: only the deployed revisions fetched" is "$(grep -c '^GET /api/v1/namespaces/edge/secrets/sh.helm.release.v1.site-...\.v10[? ]' "$T/api.log")/$(grep -c '^GET /api/v1/namespaces/edge/secrets/' "$T/api.log")" 500/500
echo "# Helm, 5,000 revisions: template-cleanup's peak resident memory was $((hwm / 1024)) MiB"
check "Helm, 5,000 revisions: the peak memory was read" test "$hwm" -gt 0
check "Helm, 5,000 revisions: template-cleanup stays under 64 MiB resident (the Job's limit is 128 MiB)" test "$hwm" -lt 65536
check "Helm, 5,000 revisions: free is still there" is "$(template_status free)" 200
stop
start "$(helm_state '"!!" | @base64')"
run --helm-releases
check "Helm, an unreadable release: exit 0" is "$CODE" 0
check "Helm, an unreadable release: its namespace's templates are left" has "$(grep edge/free <<<"$OUT")" "still declared by Helm release edge/site-000, which cannot be read (Helm release Secret edge/sh.helm.release.v1.site-000.v10: the release is not Helm's base64"
check "Helm, an unreadable release: the report names it" has "$OUT" "unreadable, their namespaces' templates kept: edge/site-000"
check "Helm, an unreadable release: nothing of edge deleted" is "$(template_status free)" 200
stop

# Pre-flight refusals: "what|EDIT|the check named"
for case in "monitor|.guard.spec.mode = \"monitor\"|spec.mode is protect" \
            "failurePolicy Ignore on the webhook|.hook.webhooks[0].failurePolicy = \"Ignore\"|failurePolicy is Fail" \
            "a policy server rolling out|.guard.status.conditions[1].status = \"False\"|condition PolicyUniquelyReachable is True" \
            "a break-glass matchCondition|.hook.webhooks[0].matchConditions += [{name: \"not-break-glass\", expression: \"true\"}]|no matchCondition exempts a template DELETE" \
            "a missing guard|del(.guard)|guard exists" \
            "a scheduled guard|.guard.status.policyStatus = \"scheduled\"|status.policyStatus is active" \
            "no webhook|del(.hook)|the guard's webhook is installed" \
            "rules without DELETE|.hook.webhooks[0].rules[].operations = [\"CREATE\"]|rules cover DELETE" \
            "a webhook selecting by team|.hook.webhooks[0].namespaceSelector.matchExpressions += [{key: \"team\", operator: \"In\", values: [\"edge\"]}]|the guard sees every template"; do
  IFS='|' read -r what edit name <<<"$case"
  start "$edit"
  run
  check "$what: exit 2" is "$CODE" 2
  check "$what: the message names the check" has "$ERR" "pre-flight check \`$name\` failed"
  check "$what: nothing deleted" is "$(template_status free)$(template_status in-use)" "200200"
  check "$what: no DELETE sent" is "$(deletes)" 0
  check "$what: recorded as an Event on the guard" has "$(events default)" "capi-template-guard-cleanup CleanupRefused 1 pre-flight check \`$name\` failed"
  stop
done
tap_done "cleanup e2e"
