#!/usr/bin/env bats
# End-to-end tests of the compiled policy. Each case runs the module on a request from
# test_data/requests/ and answers its host calls from test_data/sessions/ (kwctl's replay format,
# strictly in order), then asserts on the AdmissionResponse line.
#
# Engine: $KWCTL if set, else `kwctl` when it is on PATH (run against annotated-policy.wasm), else
# the project's test host (target/testhost/testhost, run against policy.wasm with metadata.yml).
# Assertions only use what both engines print the same way: allowed, status, warnings and the
# decoded JSON patch, compared as a set of operations.

bats_require_minimum_version 1.5.0

setup() {
  if [ -z "${KWCTL:-}" ]; then
    if command -v kwctl >/dev/null 2>&1; then KWCTL=kwctl; else KWCTL=target/testhost/testhost; fi
  fi
  if [ -z "${POLICY:-}" ]; then
    case "$(basename "$KWCTL")" in
      kwctl*) POLICY=annotated-policy.wasm ;;
      *) POLICY=policy.wasm ;;
    esac
  fi
  # Explicit v1beta2 versions; every other case runs with the default settings ('{}': `auto`).
  V2='{"capiApiVersion":"v1beta2","controlPlaneApiVersion":"v1beta2","metal3ApiVersion":"v1beta2"}'
}

# evaluate CASE SETTINGS [SESSION]: runs the policy; leaves the JSON line in $output. Fails when
# the policy made fewer host calls than the session holds, unless LEFTOVERS_EXPECTED is set.
evaluate() {
  local session="test_data/sessions/${3:-$1}.yml"
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" run \
    --request-path "test_data/requests/$1.json" \
    --settings-json "$2" \
    --allow-context-aware \
    --replay-host-capabilities-interactions "$session" \
    "$POLICY"
  if [ "$status" -ne 0 ]; then
    echo "engine failed ($status): $stderr" >&2
    return 1
  fi
  if [ -z "${LEFTOVERS_EXPECTED:-}" ] && grep -q "have not been replayed" <<<"$stderr"; then
    echo "the policy made fewer host calls than $session expects: $stderr" >&2
    return 1
  fi
  echo "response: $output" >&2
}

allowed() { jq -e '.allowed == true and .patch == null and .status == null' <<<"$output"; }
rejected_with() { jq -e --argjson code "$1" '.allowed == false and .status.code == $code' <<<"$output"; }
message_has() { jq -e --arg s "$1" '.status.message | contains($s)' <<<"$output"; }
message() { jq -r '.status.message' <<<"$output"; }
# add PATH VALUE: one JSON-patch add operation; annotation keys are escaped as JSON pointers.
add() { jq -cn --arg p "$1" --arg v "$2" '{op: "add", path: $p, value: $v}'; }
REUSE=/metadata/annotations/capi-template-guard.kubewarden.io~1node-reuse
SOURCE=/metadata/annotations/capi-template-guard.kubewarden.io~1source-template
# patch_is JSON: the decoded patch, as a set of operations, equals JSON.
patch_is() {
  jq -e --argjson want "$1" '(.patch | @base64d | fromjson | sort_by(.path)) == ($want | sort_by(.path))' <<<"$output"
}

@test "row 1: a MachineDeployment keeps its infrastructure template (v1beta1; kinds without a CRD cost no call)" {
  evaluate guard-row1-machinedeployment-v1beta1 '{}'
  rejected_with 409
  message_has "Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e is still in use and was not deleted."
  message_has "MachineDeployment edge-a-md-storage (spec.template.spec.infrastructureRef)."
}

@test "a dry-run delete gets the same answer" {
  evaluate guard-row1-machinedeployment-v1beta1 '{}'
  real="$(message)"
  evaluate guard-row1-machinedeployment-dryrun '{}'
  rejected_with 409
  [ "$(message)" = "$real" ]
}

@test "row 1: an old MachineSet keeps the previous template (v1beta2)" {
  evaluate guard-row1-machineset-v1beta2 '{}'
  rejected_with 409
  message_has "It is referenced by MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)."
}

@test "row 1: a MachineSet scaled to zero with no machines left releases its template" {
  evaluate guard-row1-scaled-down-machineset '{}'
  allowed
}

@test "row 1: a MachineSet outside a MachineDeployment keeps its template scaled to zero" {
  evaluate guard-row1-standalone-machineset '{}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)"
}

@test "row 1: the MachineSet of the current revision keeps its template at zero replicas" {
  evaluate guard-row1-current-revision-machineset '{}'
  rejected_with 409
  message_has "It is referenced by MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)."
}

@test "row 1, v1beta2: an old revision at zero keeps its template while it has machines (in-place updates)" {
  evaluate guard-row1-old-revision-draining '{}'
  rejected_with 409
  message_has "It is referenced by MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)."
}

@test "row 1: a MachineSet of the current revision being deleted keeps its template while it has machines" {
  evaluate guard-row1-deleting-machineset-with-machines '{}'
  rejected_with 409
  message_has "It is referenced by MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)."
}

@test "row 1: a MachineSet being deleted with no machines left releases its template" {
  evaluate guard-row1-deleting-machineset-drained '{}'
  allowed
}

@test "row 1, v1beta2: an old revision at zero keeps a nodeReuse template while it has machines" {
  evaluate guard-row1-old-revision-draining-node-reuse '{}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)"
}

@test "row 1, v1beta2: a MachineSet whose MachineDeployment is gone releases its template" {
  evaluate guard-row1-owner-gone-machineset '{}'
  allowed
}

@test "row 2: Kairos naming another namespace does not keep the template of its own" {
  evaluate guard-row2-kairos-other-namespace '{}'
  allowed
}

@test "row 2: Kairos naming the template's namespace keeps it" {
  evaluate guard-row2-kairos-own-namespace '{}'
  rejected_with 409
  message_has "KairosControlPlane edge-k-cp (spec.machineTemplate.infrastructureRef)"
}

@test "row 1, Cluster API 1.9 and 1.10: a MachineDeployment in another namespace keeps the template it names" {
  evaluate guard-row1-cross-namespace-v1beta1 '{}'
  rejected_with 409
  message_has "MachineDeployment edge-east/edge-b-md-storage (spec.template.spec.infrastructureRef)"
}

@test "row 1, v1beta1: a MachineDeployment naming another namespace keeps its own (Cluster API 1.8)" {
  evaluate guard-row1-other-namespace-v1beta1 '{}'
  rejected_with 409
  message_has "MachineDeployment edge-a-md-storage (spec.template.spec.infrastructureRef)"
}

@test "row 1, v1beta1: a MachineDeployment of another namespace naming a third keeps nothing" {
  evaluate guard-row1-third-namespace-v1beta1 '{}'
  allowed
}

@test "row 1: countScaledDownMachineSets makes a scaled-down MachineSet keep its template" {
  evaluate guard-row1-scaled-down-machineset '{"countScaledDownMachineSets":true}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6"
}

@test "rows 1-3: referrers being deleted do not keep a template" {
  evaluate guard-row1-deleting-referrers '{}'
  allowed
}

@test "row 1: a bootstrap template is kept by its MachineDeployment, and only MD/MS/ClusterClass are read" {
  evaluate guard-row1-bootstrap-template '{}'
  rejected_with 409
  message_has "KubeadmConfigTemplate edge-sites/edge-a-workers-kct-9a4f01 is still in use"
  message_has "MachineDeployment edge-a-md-storage (spec.template.spec.bootstrap.configRef)"
}

@test "row 2: a KubeadmControlPlane keeps its machine template (v1beta2), with its Metal3Machine (row 4)" {
  evaluate guard-row2-kubeadmcontrolplane '{}'
  rejected_with 409
  message_has "KubeadmControlPlane edge-a-cp (spec.machineTemplate.spec.infrastructureRef)"
  message_has "Metal3Machine edge-a-cp-h8w2q (metadata.annotations[cluster.x-k8s.io/cloned-from-name])"
}

@test "row 2: an RKE2ControlPlane naming the template in the deprecated v1beta1 field keeps it" {
  evaluate guard-row2-rke2-deprecated-field '{}'
  rejected_with 409
  message_has "RKE2ControlPlane edge-c-cp (spec.infrastructureRef)"
}

@test "row 3: a ClusterClass keeps a worker class bootstrap template" {
  evaluate guard-row3-clusterclass '{}'
  rejected_with 409
  message_has "ClusterClass metal3-kubeadm (spec.workers.machineDeployments[class=storage].bootstrap.templateRef)"
  message_has "Change or delete the ClusterClass first."
}

@test "row 4: a deleting Metal3Machine keeps a nodeReuse template" {
  evaluate guard-row4-metal3machine '{}'
  rejected_with 409
  message_has "It is referenced by Metal3Machine edge-a-md-storage-5f7d9c8b6-x7k2p"
  message_has "The template sets nodeReuse: true"
}

@test "row 5: clusterctl move deletes are accepted without any lookup" {
  evaluate guard-row5-clusterctl-move '{}'
  allowed
}

@test "row 6: a template whose Cluster is being deleted is released" {
  evaluate guard-row6-cluster-deleting '{}'
  allowed
}

@test "row 6: a template whose Cluster is gone is released" {
  evaluate guard-row6-cluster-gone '{}'
  allowed
}

@test "row 6: a template whose Cluster lives stays kept" {
  evaluate guard-row6-cluster-live '{}'
  rejected_with 409
  message_has "MachineDeployment edge-a-md-storage"
}

@test "a template nothing names is deleted" {
  evaluate guard-unused-template '{}'
  allowed
}

@test "a failed lookup rejects (fail closed) with the lookup and the fix" {
  evaluate guard-lookup-failure '{}'
  rejected_with 500
  message_has "listing MachineSet objects (cluster.x-k8s.io/v1beta1) in every namespace failed:"
  message_has "Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources"
  message_has "Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy's contextAwareResources."
}

@test "failOpenOnLookupError accepts a failed lookup with a warning" {
  evaluate guard-lookup-failure '{"failOpenOnLookupError":true}'
  jq -e '.allowed == true and .status == null' <<<"$output"
  jq -e '.warnings | length == 1 and (.[0] | startswith("Add apiVersion cluster.x-k8s.io/v1beta1, kind MachineSet to the policy'"'"'s contextAwareResources.")) and (.[0] | contains("unchecked (failOpenOnLookupError)")) and (.[0] | length <= 256)' <<<"$output"
}

@test "host calls that do not match the session fail closed, naming the replay error" {
  # A machine template's lookups replayed against the session of a bootstrap template, which
  # expects ClusterClasses where the policy lists KubeadmControlPlanes.
  LEFTOVERS_EXPECTED=1 evaluate guard-row1-machineset-v1beta2 '{}' guard-row1-bootstrap-template
  rejected_with 500
  message_has "Replay error: unexpected request"
}

@test "deleting a Metal3Machine and updating a template need no lookup" {
  evaluate guard-delete-metal3machine '{}'
  allowed
  evaluate guard-update-template '{}'
  allowed
}

@test "a DELETE without oldObject is refused as a bad request" {
  evaluate guard-delete-without-oldobject '{}'
  rejected_with 400
  message_has "the API server sent no oldObject with the DELETE"
}

@test "mutation: a new Metal3Machine gets node reuse, source template and cleaning mode" {
  evaluate mutate-create-from-annotations '{}'
  jq -e '.allowed == true and .patchType == "JSONPatch"' <<<"$output"
  patch_is "[$(add $REUSE true),$(add $SOURCE edge-a-workers-7f3c9d2e),$(add /spec/automatedCleaningMode disabled)]"
}

@test "mutation: annotation keys come from the settings" {
  evaluate mutate-create-from-annotations '{"nodeReuseAnnotation":"example.com/node-reuse","sourceTemplateAnnotation":"example.com/template"}'
  patch_is "[$(add /metadata/annotations/example.com~1node-reuse true),$(add /metadata/annotations/example.com~1template edge-a-workers-7f3c9d2e),$(add /spec/automatedCleaningMode disabled)]"
}

@test "mutation: without cloned-from annotations the MachineSet owner names the template" {
  evaluate mutate-create-owner-fallback '{}'
  patch_is "[$(add $REUSE true),$(add $SOURCE edge-a-workers-7f3c9d2e),$(add /spec/automatedCleaningMode disabled)]"
}

@test "mutation: a cleaning mode the machine already has is never overridden" {
  evaluate mutate-keeps-machine-cleaning-mode '{}'
  patch_is "[$(add $REUSE true),$(add $SOURCE edge-a-workers-7f3c9d2e)]"
}

@test "mutation: a machine that already carries the intent gets no patch" {
  evaluate mutate-already-mutated '{}'
  allowed
}

@test "mutation: a missing template never blocks creation, and says why" {
  evaluate mutate-template-missing '{}'
  jq -e '.allowed == true and .patch == null' <<<"$output"
  jq -e '.warnings[0] | contains("its template Metal3MachineTemplate edge-sites/edge-a-workers-7f3c9d2e does not exist")' <<<"$output"
}

@test "mutation: switched off by mutateMetal3Machines, no lookup" {
  evaluate mutate-create-from-annotations '{"mutateMetal3Machines":false}' no-host-calls
  allowed
}

@test "mutation: UPDATE of a Metal3Machine is left alone" {
  evaluate mutate-update-ignored '{}'
  allowed
}

@test "invalid settings stop the run with a readable message" {
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" run --request-path test_data/requests/guard-unused-template.json \
    --settings-json '{"nodeReuse":true}' --allow-context-aware \
    --replay-host-capabilities-interactions test_data/sessions/no-host-calls.yml "$POLICY"
  [ "$status" -ne 0 ]
  grep -q "Unknown setting(s): nodeReuse." <<<"$output$stderr"
}

@test "settings naming an invalid annotation key are refused" {
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" run --request-path test_data/requests/guard-unused-template.json \
    --settings-json '{"nodeReuseAnnotation":"Not A Key"}' --allow-context-aware \
    --replay-host-capabilities-interactions test_data/sessions/no-host-calls.yml "$POLICY"
  [ "$status" -ne 0 ]
  grep -q "The setting nodeReuseAnnotation is not a valid annotation key" <<<"$output$stderr"
}

@test "an explicit capiApiVersion the release does not serve is refused, naming the setting" {
  evaluate guard-capi-version-not-served "$V2"
  rejected_with 500
  message_has "listing MachineDeployment objects (cluster.x-k8s.io/v1beta2) in namespace edge-sites failed: capiApiVersion pins MachineDeployment to v1beta2, and its CRD serves v1beta1."
  message_has "Set capiApiVersion to auto."
}

@test "safe by default: an explicit controlPlaneApiVersion v1beta2 on Cluster API 1.10 never counts KubeadmControlPlanes as none" {
  evaluate guard-wrong-explicit-setting '{"controlPlaneApiVersion":"v1beta2"}'
  rejected_with 500
  message_has "listing KubeadmControlPlane objects (controlplane.cluster.x-k8s.io/v1beta2) in namespace edge-sites failed: controlPlaneApiVersion pins KubeadmControlPlane to v1beta2, and its CRD serves v1beta1."
  message_has "Set controlPlaneApiVersion to auto."
}

@test "safe by default: explicit v1beta2 settings on a release that serves it" {
  evaluate guard-explicit-v1beta2 "$V2"
  rejected_with 409
  message_has "It is referenced by MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)."
}

@test "safe by default: a v1beta1-only release, no settings (versions from the CRDs, no failed try)" {
  evaluate guard-v1beta1-release '{}'
  rejected_with 409
  message_has "MachineDeployment edge-a-md-storage (spec.template.spec.infrastructureRef)."
}

@test "safe by default: a v1beta2-only release, no settings, keeps a referenced template" {
  evaluate guard-v1beta2-release-kept '{}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6"
}

@test "safe by default: a v1beta2-only release, no settings, deletes an unreferenced template" {
  evaluate guard-v1beta2-release-unused '{}'
  allowed
}

@test "safe by default: an RKE2 provider older than Cluster API is read at v1beta1 and keeps its template" {
  evaluate guard-rke2-older-than-capi '{}'
  rejected_with 409
  message_has "RKE2ControlPlane edge-b-cp (spec.machineTemplate.infrastructureRef)"
}

@test "every provider: an OpenStackMachineTemplate is kept by a MachineSet" {
  evaluate guard-row1-openstack-machineset '{}'
  rejected_with 409
  message_has "OpenStackMachineTemplate edge-sites/edge-os-workers-41d2 is still in use"
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)"
}

@test "row 3: a ClusterClass keeps its KubeadmControlPlaneTemplate (only ClusterClasses are read)" {
  evaluate guard-row3-kubeadmcontrolplanetemplate '{}'
  rejected_with 409
  message_has "KubeadmControlPlaneTemplate edge-sites/metal3-kubeadm-cp is still in use"
  message_has "ClusterClass metal3-kubeadm (spec.controlPlane.templateRef)"
}

@test "row 3: a ClusterClass keeps its Metal3ClusterTemplate" {
  evaluate guard-row3-metal3clustertemplate '{}'
  rejected_with 409
  message_has "ClusterClass metal3-kubeadm (spec.infrastructure.templateRef)"
}

@test "row 3: a ClusterClass being deleted releases its Metal3ClusterTemplate" {
  evaluate guard-row3-clusterclass-deleting '{}'
  allowed
}

@test "rule 1: a KubeadmControlPlane being deleted keeps its machine template (cluster-api issue 13536)" {
  evaluate guard-rule1-deleting-control-plane '{}'
  rejected_with 409
  message_has "KubeadmControlPlane edge-a-cp (spec.machineTemplate.spec.infrastructureRef)"
}

@test "rule 2: a MachineSet being deleted keeps a nodeReuse template while it has machines (CAPM3 PR 3168)" {
  evaluate guard-rule2-draining-machineset '{}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)"
}

@test "rule 2: a MachineSet being deleted whose machine count is not written yet keeps it (fail closed)" {
  evaluate guard-rule2-machineset-not-counted-yet '{}'
  rejected_with 409
  message_has "MachineSet edge-a-md-storage-5f7d9c8b6 (spec.template.spec.infrastructureRef)"
}

@test "rule 3: a deleting Cluster does not release a template another Cluster's MachineDeployment names" {
  evaluate guard-rule3-other-cluster-keeps '{}'
  rejected_with 409
  message_has "MachineDeployment edge-a-md-storage (spec.template.spec.infrastructureRef)"
}

@test "rule 4: a TalosControlPlane, read at v1alpha3 as its CRD serves it, keeps its machine template" {
  evaluate guard-rule4-talos-control-plane '{}'
  rejected_with 409
  message_has "TalosControlPlane edge-t-cp (spec.infrastructureTemplate)"
}

@test "rule 5: a MachineHealthCheck keeps its remediation template (v1beta2)" {
  evaluate guard-rule5-machinehealthcheck '{}'
  rejected_with 409
  message_has "Metal3RemediationTemplate edge-sites/edge-a-remediation is still in use"
  message_has "MachineHealthCheck edge-a-workers-unhealthy (spec.remediation.templateRef)"
}

@test "rule 5: a Cluster's topology health check keeps its remediation template (v1beta1)" {
  evaluate guard-rule5-cluster-topology-v1beta1 '{}'
  rejected_with 409
  message_has "Cluster edge-a (spec.topology.workers.machineDeployments[name=md-storage].machineHealthCheck.remediationTemplate)"
}

@test "rule 5: a remediation template nothing names is deleted" {
  evaluate guard-rule5-unused-remediation-template '{}'
  allowed
}

@test "a Metal3DataTemplate is kept by the Metal3 objects that name it (sylva-core issue 2820)" {
  evaluate guard-data-template-kept '{}'
  rejected_with 409
  message_has "Metal3DataTemplate edge-sites/edge-a-workers-metadata is still in use and was not deleted."
  message_has "Metal3Machine edge-a-md-storage-5f7d9c8b6-x7k2p (spec.dataTemplate)"
  message_has "Metal3MachineTemplate edge-a-workers-7f3c9d2e (spec.template.spec.dataTemplate)"
  message_has "Metal3DataClaim edge-a-workers-7f3c9d2e-x2v9k (spec.template)"
  message_has "A Metal3DataTemplate being deleted is gone once no claim or data names it"
}

@test "a Metal3DataTemplate nothing names is deleted" {
  evaluate guard-data-template-unused '{}'
  allowed
}

@test "a provider newer than the policy (Talos serving only v1alpha4) is scanned; without the grant it fails closed naming it" {
  evaluate guard-scan-future-version '{}'
  rejected_with 500
  message_has "listing TalosControlPlane objects (controlplane.cluster.x-k8s.io/v1alpha4) in namespace edge-sites to scan them for references failed"
  message_has "add apiVersion controlplane.cluster.x-k8s.io/v1alpha4, kind TalosControlPlane to its contextAwareResources"
  # A kind the policy reads cannot be declared to name no template: no such alternative.
  [[ "$(message)" != *kindsNamingNoTemplate* ]]
}

@test "kinds known to name no template (teutonet, nested) and one declared in kindsNamingNoTemplate are never listed" {
  evaluate guard-scan-kinds-naming-no-template "$(cat test_data/settings/guard-scan-kinds-naming-no-template.json)"
  allowed
}

@test "an unknown control plane the policy server may not list is refused at once (can_i), naming the RBAC rule and the setting" {
  evaluate guard-scan-not-permitted '{}'
  rejected_with 500
  message_has "system:serviceaccount:kubewarden:policy-server may not list foocontrolplanes.controlplane.cluster.x-k8s.io in namespace edge-sites"
  message_has 'resources ["foocontrolplanes"] and verbs ["get", "list", "watch"] to the ClusterRole capi-template-guard-reader'
  message_has '"FooControlPlane.controlplane.cluster.x-k8s.io" to the policy'"'"'s kindsNamingNoTemplate setting'
}

@test "a CRD whose versions are all served: false is not installed and costs no list" {
  evaluate guard-served-false '{}'
  rejected_with 409
  message_has "MachineDeployment edge-a-md-storage"
}

@test "a template with Cluster owners and no Cluster CRD fails closed" {
  evaluate guard-cluster-crd-missing '{}'
  rejected_with 500
  message_has "without the Cluster CRD they would all read as gone"
}

@test "Kubewarden 1.36's host-capability denial gets its own hint (policy-evaluator's text, checked live with kwctl 1.36)" {
  evaluate guard-capability-denied '{}'
  rejected_with 500
  message_has "Policy has not been granted access to the 'kubernetes/list_resources_all' host capability"
  message_has "grant this policy the host capability the error names"
}

@test "mutation: with the CRD list refused, the template is read directly and the machine mutated" {
  evaluate mutate-crd-list-refused '{}'
  patch_is "[$(add $REUSE true),$(add $SOURCE edge-a-workers-7f3c9d2e),$(add /spec/automatedCleaningMode disabled)]"
}

@test "settings naming a key that Cluster API owns are refused" {
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" run --request-path test_data/requests/guard-unused-template.json \
    --settings-json '{"nodeReuseAnnotation":"cluster.x-k8s.io/cloned-from-name"}' --allow-context-aware \
    --replay-host-capabilities-interactions test_data/sessions/no-host-calls.yml "$POLICY"
  [ "$status" -ne 0 ]
  grep -q "a key that Cluster API, Kubernetes or this policy owns" <<<"$output$stderr"
}

# ---------------------------------------------------------------------------------------------
# The publication path: the annotated module pushed to an OCI registry, then pulled, inspected and
# run from registry:// as users do. The registry is Debian's docker-registry, started by the case
# on 127.0.0.1 at a free port and stopped by teardown.

REGISTRY_PID=""

# start_registry: serves an empty registry on 127.0.0.1; leaves host:port in $REGISTRY.
start_registry() {
  local dir="$BATS_TEST_TMPDIR/registry" port attempt
  mkdir -p "$dir/data"
  for attempt in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi # taken
    printf '%s\n' 'version: 0.1' 'log: {level: error}' \
      "storage: {filesystem: {rootdirectory: $dir/data}}" "http: {addr: 127.0.0.1:$port}" \
      >"$dir/config.yml"
    # fd 3 is bats' own output; the registry must not hold it open.
    docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 3>&- &
    REGISTRY_PID=$!
    for _ in $(seq 100); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        REGISTRY="127.0.0.1:$port"
        return 0
      fi
      kill -0 "$REGISTRY_PID" 2>/dev/null || break
      sleep 0.1
    done
    stop_registry
  done
  echo "the local registry did not start (attempt $attempt): $(cat "$dir/log")" >&2
  return 1
}

stop_registry() {
  if [ -n "$REGISTRY_PID" ]; then
    kill "$REGISTRY_PID" 2>/dev/null || true
    wait "$REGISTRY_PID" 2>/dev/null || true
    REGISTRY_PID=""
  fi
  return 0
}

teardown() {
  stop_registry
}

# kw ARGS...: runs kwctl, leaving stdout in $output and stderr in $stderr; fails on failure.
kw() {
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" "$@"
  if [ "$status" -ne 0 ]; then
    echo "kwctl $1 failed ($status): $stderr $output" >&2
    return 1
  fi
}

@test "publication: push to a registry, then pull, inspect, verify and run from registry://" {
  case "$(basename "$KWCTL")" in
    testhost*) skip "needs a real kwctl: the test host ($KWCTL) cannot push to or pull from a registry" ;;
  esac
  command -v docker-registry >/dev/null 2>&1 ||
    skip "needs docker-registry on PATH (Debian and Ubuntu: apt-get install docker-registry)"
  start_registry
  # kwctl keeps its store and configuration here, not in the user's home.
  export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache" XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/config"
  export NO_PROXY="127.0.0.1${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1${no_proxy:+,$no_proxy}"
  local sources="$BATS_TEST_TMPDIR/sources.yml"
  printf 'insecure_sources:\n  - "%s"\n' "$REGISTRY" >"$sources"
  local version
  version="$(sed -n 's/^  io\.kubewarden\.policy\.version: *//p' metadata.yml)"
  local uri="registry://$REGISTRY/capi-template-guard/policies/capi-template-guard:v$version"

  kw push --sources-path "$sources" "$POLICY" "$uri"

  # What users do: pull into the store, inspect, run by URI.
  kw pull --sources-path "$sources" "$uri"
  kw inspect --sources-path "$sources" --output yaml "$uri"
  grep -Eq "^  io\.kubewarden\.policy\.version: '?$version'?$" <<<"$output"
  grep -q "^  io.kubewarden.policy.ociUrl: ghcr.io/capi-template-guard/policies/capi-template-guard$" <<<"$output"

  local case=guard-row1-machineset-v1beta2
  kw run --sources-path "$sources" --request-path "test_data/requests/$case.json" \
    --settings-json "$(cat "test_data/settings/$case.json")" --allow-context-aware \
    --replay-host-capabilities-interactions "test_data/sessions/$case.yml" "$uri"
  rejected_with 409
  message_has "is still in use and was not deleted."

  # The registry serves the very bytes that were pushed.
  kw pull --sources-path "$sources" --output-path "$BATS_TEST_TMPDIR/pulled.wasm" "$uri"
  cmp "$POLICY" "$BATS_TEST_TMPDIR/pulled.wasm"

  # Nothing signed this copy, so the verification docs/operations.md shows must refuse it, and so must
  # the PolicyServer config of examples/policy-server-verification.yaml (which kwctl must read
  # without complaint first).
  sed -n '/^  verification-config: |$/,$p' examples/policy-server-verification.yaml | tail -n +2 |
    sed 's/^    //' >"$BATS_TEST_TMPDIR/verification-config.yml"
  refuses_unsigned --github-owner capi-template-guard --github-repo capi-template-guard "$uri"
  refuses_unsigned --verification-config-path "$BATS_TEST_TMPDIR/verification-config.yml" "$uri"
  stop_registry
}

# refuses_unsigned ARGS...: `kwctl verify ARGS` fails because the module is not signed as asked.
# Offline, kwctl cannot fetch Sigstore's trust root and stops before the signature check; that is
# noted, and only the reading of the verification config is checked.
refuses_unsigned() {
  run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" verify --sources-path "$sources" "$@"
  local said="$output$stderr"
  if [ "$status" -eq 0 ]; then
    echo "kwctl verify accepted an unsigned module: $said" >&2
    return 1
  fi
  if grep -q "Not a valid configuration file\|Not a supported configuration version" <<<"$said"; then
    echo "kwctl verify cannot read the verification config: $said" >&2
    return 1
  fi
  if grep -q "cannot be validated" <<<"$said"; then
    return 0
  fi
  if grep -q "tuf-repo-cdn.sigstore.dev" <<<"$said"; then
    echo "# kwctl verify $1: Sigstore's trust root is out of reach (offline); signature check not run" >&3
    return 0
  fi
  echo "kwctl verify failed for another reason: $said" >&2
  return 1
}

@test "a hostile corpus: the compiled module answers 300 mutated requests and host answers as the native code does" {
  # Written by `make e2e-tests` (src/fuzz/mod.rs, write_hostile_corpus): requests with fields removed,
  # retyped, nulled, huge or non-ASCII, any kind and operation, and host answers of every kind.
  corpus=target/hostile
  [ -f "$corpus/000.request.json" ] || { echo "no corpus in $corpus: run make e2e-tests" >&2; return 1; }
  evaluated=0
  for req in "$corpus"/*.request.json; do
    base="${req%.request.json}"
    run --separate-stderr env RUST_BACKTRACE=0 "$KWCTL" run --request-path "$req" \
      --settings-json "$(cat "$base.settings.json")" --allow-context-aware \
      --replay-host-capabilities-interactions "$base.session.yml" "$POLICY"
    if [ "$status" -ne 0 ]; then
      # Only the engine's own refusal of a request file it cannot read is acceptable here.
      grep -qiE "request|admission|recursion limit" <<<"$stderr" || { echo "$base: engine failed ($status): $stderr" >&2; return 1; }
      continue
    fi
    got="$(jq -c '{allowed, code: .status.code, warned: ((.warnings // []) | length > 0), patched: (.patch != null)}' <<<"$output")"
    want="$(jq -c '{allowed, code, warned, patched}' "$base.expected.json")"
    [ "$got" = "$want" ] || { echo "$base: the module answered $got, the native code $want" >&2; return 1; }
    evaluated=$((evaluated + 1))
  done
  echo "the module evaluated $evaluated hostile requests" >&2
  [ "$evaluated" -ge 200 ]
}
