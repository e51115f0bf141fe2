#!/usr/bin/env bash
# End to end, with no cluster: what replaces Sylva's refresh-metal3machinetemplates unit
# (docs/operations.md, "Sylva"), with the guard active. `testhost apiserver` (testhost/README.md)
# models the management cluster right after `clusterctl move` and the first `cluster` install in
# sylva-system: the live templates are what the bootstrap cluster rendered (images on its
# os-image-server, 192.0.2.5), adopted by Helm unchanged, and Helm's storage of `cluster` holds two
# revisions marked deployed, the latest with the management render (192.0.2.10). Its DELETEs of templates go through its validating
# webhook, which runs the compiled policy.wasm as the main guard of examples/ (built by kubectl
# kustomize, with the status Kubewarden gives an active policy and the ValidatingWebhookConfiguration
# kubewarden-controller writes for it). Then:
#   1. Sylva's refresh as its unit does it (`kubectl delete m3mt --all`) is refused by the guard;
#   2. prepare.sh refreshes the templates in place instead, with no DELETE;
#   3. a second run of prepare.sh changes nothing.
# Prints TAP lines. Run from the repository root through `make sylva-e2e`; needs kubectl, curl,
# jq (the repository's, target/tools/bin/jq, first on PATH), base64 and gzip.
set -euo pipefail
cd "$(dirname "$0")/../.."
TESTHOST=${TESTHOST:-target/testhost/testhost}
POLICY=${POLICY:-policy.wasm}
PREPARE=examples/sylva/prepare/prepare.sh
export PATH="$PWD/target/tools/bin:$PATH"
T=$(mktemp -d)
pid=
stop() { [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; }
trap 'stop; rm -rf "$T"' EXIT
unset HTTPS_PROXY https_proxy HTTP_PROXY http_proxy
# kubectl's discovery cache and prepare.sh's files stay in the test's directory
export KUBECACHEDIR="$T/kube-cache" TMPDIR="$T"
NS=sylva-system
M3MT=infrastructure.cluster.x-k8s.io/v1beta1/namespaces/$NS/metal3machinetemplates
CP=management-cluster-cp-5f1c2a9e MD=management-cluster-md0-8c6e4f27 KCT=management-cluster-md0-0b7d3e41
# The service account of Sylva's refresh Job (docs/operations.md), the user of its DELETEs. The
# API server names it as the user of every request: prepare.sh sends no DELETE, so its own account
# would make no difference to the guard.
SYLVA_REFRESH=system:serviceaccount:sylva-system:refresh-metal3machinetemplates-sa
# The image of every Metal3MachineTemplate, on the bootstrap cluster's os-image-server and on the
# management cluster's.
IMAGE=/ubuntu-jammy-plain-kubeadm-1-30-9/ubuntu-jammy-plain-kubeadm-1-30-9.qcow2
BOOTSTRAP_URL=http://192.0.2.5$IMAGE MANAGEMENT_URL=http://192.0.2.10$IMAGE

# YAML to JSON, one object a line, with no API server: kubectl's local patch, which changes nothing.
to_json() { kubectl patch --local -f - --type merge -p '{}' -o json | jq -c .; }

# render HOST: the `cluster` unit's render (sylva-capi-cluster) of the management cluster's Cluster
# API objects, with the images served from HOST, as Helm stores it in the release's manifest.
render() {
  local image=http://$1$IMAGE
  cat <<EOF
---
# Source: sylva-capi-cluster/templates/cluster.yaml
apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata:
  name: management-cluster
  namespace: $NS
spec:
  controlPlaneRef:
    apiVersion: controlplane.cluster.x-k8s.io/v1beta1
    kind: KubeadmControlPlane
    name: management-cluster-control-plane
  infrastructureRef:
    apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
    kind: Metal3Cluster
    name: management-cluster
---
# Source: sylva-capi-cluster/templates/metal3cluster.yaml
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3Cluster
metadata:
  name: management-cluster
  namespace: $NS
spec:
  controlPlaneEndpoint:
    host: 192.0.2.10
    port: 6443
---
# Source: sylva-capi-cluster/templates/kubeadmcontrolplane.yaml
apiVersion: controlplane.cluster.x-k8s.io/v1beta1
kind: KubeadmControlPlane
metadata:
  name: management-cluster-control-plane
  namespace: $NS
spec:
  replicas: 1
  version: v1.30.9
  machineTemplate:
    infrastructureRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
      kind: Metal3MachineTemplate
      name: $CP
  kubeadmConfigSpec: {}
---
# Source: sylva-capi-cluster/templates/machinedeployment.yaml
apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: management-cluster-md0
  namespace: $NS
spec:
  clusterName: management-cluster
  replicas: 1
  template:
    spec:
      clusterName: management-cluster
      version: v1.30.9
      bootstrap:
        configRef:
          apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
          kind: KubeadmConfigTemplate
          name: $KCT
      infrastructureRef:
        apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
        kind: Metal3MachineTemplate
        name: $MD
---
# Source: sylva-capi-cluster/templates/kubeadmconfigtemplate.yaml
apiVersion: bootstrap.cluster.x-k8s.io/v1beta1
kind: KubeadmConfigTemplate
metadata:
  name: $KCT
  namespace: $NS
spec:
  template:
    spec:
      joinConfiguration:
        nodeRegistration:
          kubeletExtraArgs:
            provider-id: metal3://{{ ds.meta_data.providerid }}
EOF
  local name role
  for name in "$CP" "$MD"; do
    role=worker
    [ "$name" = "$CP" ] && role=control-plane
    cat <<EOF
---
# Source: sylva-capi-cluster/templates/metal3machinetemplate.yaml
apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
kind: Metal3MachineTemplate
metadata:
  name: $name
  namespace: $NS
spec:
  template:
    spec:
      image:
        url: $image
        checksum: $image.sha256sum
        checksumType: sha256
        format: qcow2
      hostSelector:
        matchLabels:
          role: $role
EOF
  done
}

# The guard: examples/ as kustomize builds it, the ClusterAdmissionPolicy capi-template-guard.
kubectl kustomize examples | to_json | jq -c 'select(.kind == "ClusterAdmissionPolicy" and .metadata.name == "capi-template-guard")' >"$T/guard.json"
# The live objects: the bootstrap cluster's render (192.0.2.5) as `clusterctl move` copied it,
# adopted by the management cluster's first `cluster` install, which only adds Helm's ownership
# (Helm 3 pkg/action/validate.go, `setMetadataVisitor`); each Metal3MachineTemplate also holds
# keys the release no longer renders, one at the top of its spec (automatedCleaningMode) and one
# deeper (hostSelector.matchLabels.rack). They carry neither the clean-up label nor the keep
# annotations, so prepare.sh's first step has work too.
render 192.0.2.5 | to_json | jq -c '
  .metadata.labels["app.kubernetes.io/managed-by"] = "Helm"
  | .metadata.annotations = {"meta.helm.sh/release-name": "cluster", "meta.helm.sh/release-namespace": "sylva-system"}
  | if .kind == "Metal3MachineTemplate"
    then .spec.template.spec.automatedCleaningMode = "metadata" | .spec.template.spec.hostSelector.matchLabels.rack = "r1"
    else . end' >"$T/live.json"
# The release Secrets of the management cluster's `cluster` release, data.release being Helm's
# base64 of gzip of the release JSON, base64-encoded again as Secret data. Two revisions are
# marked deployed, as an interrupted upgrade leaves them: revision 2 holds the management render,
# revision 1 an older one (the bootstrap's URLs); Helm takes the latest.
release() { # release VERSION MANIFEST_FILE
  jq -n --argjson version "$1" --arg manifest "$(cat "$2")" '{name: "cluster", namespace: "sylva-system",
      version: $version, info: {status: "deployed"}, chart: {metadata: {name: "sylva-capi-cluster"}}, manifest: $manifest}' |
    gzip -c | base64 | tr -d '\n' | base64 | tr -d '\n'
}
render 192.0.2.10 >"$T/manifest.yaml"
render 192.0.2.5 >"$T/old-manifest.yaml"
release=$(release 2 "$T/manifest.yaml")
old_release=$(release 1 "$T/old-manifest.yaml")

# The state: the guard, active, and its ValidatingWebhookConfiguration as kubewarden-controller
# v1.36.0-beta.1 writes it (testhost/kubewarden.jq), the namespace, the release Secret, the live
# objects, and what the controllers made of them: a Machine and its Metal3Machine for each
# Metal3MachineTemplate, cloned from it.
jq -n --slurpfile guard "$T/guard.json" --slurpfile live "$T/live.json" --arg release "$release" --arg ns "$NS" \
  --arg old_release "$old_release" \
  --arg cp "$CP" --arg md "$MD" --arg image "$BOOTSTRAP_URL" "$(cat testhost/kubewarden.jq)"'
  ($guard[0] | active_policy) as $guard
  | [$guard,
     ($guard | webhook_configuration),
     {apiVersion: "v1", kind: "Namespace", metadata: {name: $ns}},
     {apiVersion: "v1", kind: "Secret", type: "helm.sh/release.v1",
      metadata: {name: "sh.helm.release.v1.cluster.v1", namespace: $ns,
                 labels: {owner: "helm", name: "cluster", status: "deployed", version: "1"}},
      data: {release: $old_release}},
     {apiVersion: "v1", kind: "Secret", type: "helm.sh/release.v1",
      metadata: {name: "sh.helm.release.v1.cluster.v2", namespace: $ns,
                 labels: {owner: "helm", name: "cluster", status: "deployed", version: "2"}},
      data: {release: $release}}]
  + $live
  + [["management-cluster-control-plane-x7k2p", $cp], ["management-cluster-md0-6d9f8b7c5-q4w8z", $md]
     | {apiVersion: "cluster.x-k8s.io/v1beta1", kind: "Machine", metadata: {name: .[0], namespace: $ns},
        spec: {clusterName: "management-cluster", infrastructureRef: {
          apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3Machine", name: .[0]}}},
       {apiVersion: "infrastructure.cluster.x-k8s.io/v1beta1", kind: "Metal3Machine",
        metadata: {name: .[0], namespace: $ns, annotations: {
          "cluster.x-k8s.io/cloned-from-name": .[1],
          "cluster.x-k8s.io/cloned-from-groupkind": "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"}},
        spec: {image: {url: $image}}}]' \
  >"$T/state.json"

# the API server, its webhook the main guard's running the policy; stderr: one line per request
"$TESTHOST" apiserver --state "$T/state.json" --policy "$POLICY" --kubeconfig "$T/kc.yaml" \
  --webhook clusterwide-capi-template-guard.kubewarden.admission --user "$SYLVA_REFRESH" 2>"$T/api.log" &
pid=$!
for _ in $(seq 300); do [ -s "$T/kc.yaml" ] && break; sleep 0.1; done
[ -s "$T/kc.yaml" ] || { echo "Bail out! testhost apiserver did not start:"; cat "$T/api.log"; exit 1; }
API=$(sed -n 's#.*server: http://##p' "$T/kc.yaml")
export KUBECONFIG="$T/kc.yaml"

# A template, as served.
template() { curl -s "http://$API/apis/$M3MT/$1"; }
template_status() { curl -s -o /dev/null -w '%{http_code}' "http://$API/apis/$M3MT/$1"; }
# The requests of method $1 the API server received since line $2 of its log.
requests() { tail -n +"$(($2 + 1))" "$T/api.log" | grep "^$1 " || true; }
log_lines() { wc -l <"$T/api.log"; }

# shellcheck source=tests/lib/tap.bash
. tests/lib/tap.bash
prepare() { NAMESPACE=$NS RELEASE=cluster METAL3_TEMPLATES=refresh "$PREPARE"; }
check "the live templates hold the bootstrap cluster's image URL" \
  is "$(template "$CP" | jq -r .spec.template.spec.image.url) $(template "$MD" | jq -r .spec.template.spec.image.url)" "$BOOTSTRAP_URL $BOOTSTRAP_URL"

# 1. Sylva's refresh-metal3machinetemplates, its delete as the unit runs it.
capture kubectl -n "$NS" delete m3mt --all
while IFS= read -r l; do echo "# kubectl: $l"; done <<<"$ERR"
check "Sylva's refresh (kubectl delete m3mt --all): refused, non-zero exit" isnt "$CODE" 0
check "the refusal is the guard's" has "$ERR" 'admission webhook "clusterwide-capi-template-guard.kubewarden.admission" denied the request: Metal3MachineTemplate sylva-system/'"$MD"' is still in use'
check "the refusal of the workers' template names the MachineDeployment" has "$(grep "$MD" <<<"$ERR")" "MachineDeployment management-cluster-md0"
check "the refusal of the control plane's template names the KubeadmControlPlane" has "$(grep "$CP" <<<"$ERR")" "KubeadmControlPlane management-cluster-control-plane"
check "both templates are still there" is "$(template_status "$CP") $(template_status "$MD")" "200 200"
check "two DELETEs sent, none let through" is "$(requests DELETE 0 | wc -l) $(requests DELETE 0 | awk '$3 < 300' | wc -l)" "2 0"

# 2. What replaces it: prepare.sh, refreshing in place.
before=$(log_lines)
md_version=$(kubectl -n "$NS" get machinedeployment management-cluster-md0 -o jsonpath='{.metadata.resourceVersion}')
capture prepare
check "prepare.sh exits 0" is "$CODE" 0
check "prepare.sh keeps and labels the release's three templates" has "$OUT" "templates of release sylva-system/cluster kept and labelled for template-cleanup: 3"
check "prepare.sh refreshes both Metal3MachineTemplates" has "$OUT" "Metal3MachineTemplates of release sylva-system/cluster refreshed in place: 2 of 2"
check "prepare.sh takes the latest of the two deployed revisions" has "$OUT" "refreshing from sh.helm.release.v1.cluster.v2 (2 marked deployed)"
check "prepare.sh sends no DELETE" is "$(requests DELETE "$before" | wc -l)" 0
check "prepare.sh writes templates only" is "$(requests PATCH "$before" | grep -vc "^PATCH /apis/[a-z.]*cluster.x-k8s.io/v1beta1/namespaces/$NS/[a-z0-9]*templates/" || true)" 0
for name in "$CP" "$MD"; do
  spec=$(template "$name" | jq -c .spec.template.spec)
  check "$name: the management cluster's image URL" is "$(jq -r .image.url <<<"$spec")" "$MANAGEMENT_URL"
  check "$name: the management cluster's checksum URL" is "$(jq -r .image.checksum <<<"$spec")" "$MANAGEMENT_URL.sha256sum"
  check "$name: the key only the live spec had is removed" is "$(jq -c 'has("automatedCleaningMode")' <<<"$spec")" false
  check "$name: the nested key only the live spec had is removed" is "$(jq -c '.hostSelector.matchLabels | has("rack")' <<<"$spec")" false
  check "$name: the spec is the management render's" is "$(jq -S -c . <<<"$spec")" "$(to_json <"$T/manifest.yaml" | jq -S -c --arg n "$name" 'select(.metadata.name == $n) | .spec.template.spec')"
done
for path in "$M3MT/$CP" "$M3MT/$MD" "bootstrap.cluster.x-k8s.io/v1beta1/namespaces/$NS/kubeadmconfigtemplates/$KCT"; do
  meta=$(curl -s "http://$API/apis/$path" | jq -c .metadata)
  check "${path##*/}: labelled for template-cleanup" is "$(jq -r '.labels["capi-template-guard.kubewarden.io/cleanup"]' <<<"$meta")" true
  check "${path##*/}: kept by Helm and Flux" is "$(jq -r '[.annotations["helm.sh/resource-policy"], .annotations["kustomize.toolkit.fluxcd.io/prune"]] | join(" ")' <<<"$meta")" "keep disabled"
done
check "the MachineDeployment is untouched" is "$(kubectl -n "$NS" get machinedeployment management-cluster-md0 -o jsonpath='{.metadata.resourceVersion}')" "$md_version"

# 3. Again: nothing left to write.
before=$(log_lines)
capture prepare
check "prepare.sh again: exits 0" is "$CODE" 0
check "prepare.sh again: nothing to keep or label" has "$OUT" "kept and labelled for template-cleanup: 0"
check "prepare.sh again: refreshed in place: 0" has "$OUT" "refreshed in place: 0 of 2"
check "prepare.sh again: no PATCH, no DELETE" is "$(requests PATCH "$before" | wc -l) $(requests DELETE "$before" | wc -l)" "0 0"
check "prepare.sh reads Secrets when it refreshes" isnt "$(requests GET "$before" | grep -c /secrets || true)" 0

# 4. Where it does not refresh (a workload cluster, an upgrade, a Sylva without the refresh unit),
# the Job has no grant to read Secrets (the unit leaves out the component refresh/), and needs none.
before=$(log_lines)
capture env NAMESPACE=$NS RELEASE=cluster METAL3_TEMPLATES=keep "$PREPARE"
check "prepare.sh keeping: exits 0" is "$CODE" 0
check "prepare.sh keeping: does not refresh" is "$(grep -c "refreshed in place" <<<"$OUT" || true)" 0
check "prepare.sh keeping: reads no Secret" is "$(requests GET "$before" | grep -c /secrets || true)" 0

tap_done "sylva e2e"
