#!/bin/sh
# capi-template-guard-prepare: the Job of the Sylva unit of that name (../values.yaml and
# ../workload-cluster.values.yaml; docs/operations.md, "Sylva"). It sends no DELETE, so the guard
# never has to judge it, and it is safe to run again: each step writes only what differs.
#
# 1. Keep and label every template of the `cluster` Helm release of this namespace for
#    template-cleanup, the ones the release no longer renders included (Sylva keeps them; the
#    post-renderer of the `cluster` unit reaches only those it renders now).
# 2. METAL3_TEMPLATES=refresh (management cluster, first install, after the pivot, on a Sylva
#    that still has refresh-metal3machinetemplates): put the Metal3MachineTemplates the release
#    renders now into the live ones, in place. This is what
#    Sylva's refresh-metal3machinetemplates fixed by deleting them all: after `clusterctl move`
#    the live templates still hold what the bootstrap cluster rendered (its os-image-server's
#    URLs), and the management cluster's first `cluster` install adopts them without changing
#    them (docs/operations.md, "Sylva", says why and cites the code).
#
# Environment (the unit's postBuild substitution writes it into the Job): NAMESPACE, RELEASE (the
# `cluster` HelmRelease's releaseName), METAL3_TEMPLATES (`refresh` or `keep`). Needs kubectl,
# jq, base64 and gzip, as Sylva's kube-job image has for its pivot job.
set -eu

ns=${NAMESPACE:?}
release=${RELEASE:?}
label=capi-template-guard.kubewarden.io/cleanup

# Every template kind served in a Cluster API provider group (the guard's groups, docs/design.md).
kinds=$(kubectl api-resources --namespaced -o name |
  grep -E '^[a-z0-9]+templates\.(infrastructure|vmware\.infrastructure|bootstrap|controlplane)\.cluster\.x-k8s\.io$' || true)

marked=0
for kind in $kinds; do
  names=$(kubectl -n "$ns" get "$kind" -o json | jq -r --arg r "$release" --arg ns "$ns" --arg l "$label" '
    .items[]
    | select(.metadata.annotations["meta.helm.sh/release-name"] == $r
             and .metadata.annotations["meta.helm.sh/release-namespace"] == $ns)
    | select(.metadata.labels[$l] != "true"
             or .metadata.annotations["helm.sh/resource-policy"] != "keep"
             or .metadata.annotations["kustomize.toolkit.fluxcd.io/prune"] != "disabled")
    | .metadata.name')
  for name in $names; do
    kubectl -n "$ns" patch "$kind" "$name" --type merge -p "{\"metadata\":{\"labels\":{\"$label\":\"true\"},\"annotations\":{\"helm.sh/resource-policy\":\"keep\",\"kustomize.toolkit.fluxcd.io/prune\":\"disabled\"}}}"
    marked=$((marked + 1))
  done
done
echo "templates of release $ns/$release kept and labelled for template-cleanup: $marked"

if [ "${METAL3_TEMPLATES:-keep}" != refresh ]; then
  exit 0
fi

# Where the release, its manifest and the templates wanted are written: TMPDIR, /tmp when unset
# (as in the Job; e2e.sh sets it).
work=${TMPDIR:-/tmp}

# The deployed revision of the release, from Helm's storage: the Secret's data.release is base64
# of gzip of the release JSON, and the API server base64-encodes Secret data once more. More than
# one revision can be marked deployed (an upgrade interrupted before Helm marked the previous one
# superseded); Helm takes the latest (pkg/storage/storage.go, Deployed: "multiple releases are
# DEPLOYED. Take the latest.", sorting by revision), and so does template-cleanup, so this takes
# the one with the highest revision, its `version` label.
# sh has no pipefail: each command whose failure matters writes a file (or ends its pipeline, as
# gzip does, which refuses what is not whole gzip), so that `set -e` stops the Job there instead of
# refreshing nothing from an empty manifest.
kubectl -n "$ns" get secret -l "owner=helm,name=$release,status=deployed" -o json >"$work/deployed.json"
secret=$(jq -r '[.items[] | select(.metadata.labels.version | test("^[0-9]+$"))]
  | max_by(.metadata.labels.version | tonumber) | .metadata.name // empty' "$work/deployed.json")
if [ -z "$secret" ]; then
  echo "no deployed revision of Helm release $ns/$release" >&2
  exit 1
fi
echo "Helm release $ns/$release: refreshing from $secret ($(jq '.items | length' "$work/deployed.json") marked deployed)"
kubectl -n "$ns" get secret "$secret" -o jsonpath='{.data.release}' >"$work/release.b64"
base64 -d "$work/release.b64" | base64 -d | gzip -d >"$work/release.json"
jq -r .manifest "$work/release.json" >"$work/manifest.yaml"
# kubectl only parses the manifest into objects here; --validate=false spares it the download of the
# API server's OpenAPI document, which client-side validation needs (the release's objects are
# installed already).
kubectl create --dry-run=client --validate=false -o json -f "$work/manifest.yaml" >"$work/rendered.json"
jq -c '(.items // [.])[] | select(.kind == "Metal3MachineTemplate")' "$work/rendered.json" >"$work/wanted.json"

refreshed=0
while read -r wanted; do
  name=$(printf '%s' "$wanted" | jq -r .metadata.name)
  live=$(kubectl -n "$ns" get metal3machinetemplate "$name" -o json)
  # A merge patch (RFC 7386) from the live spec.template.spec to the rendered one: at any depth, a
  # key the release no longer renders is set to null, which removes it; a list is replaced whole.
  patch=$(jq -cn --argjson live "$live" --argjson wanted "$wanted" '
    def diff($l; $w):
      if ($l | type) == "object" and ($w | type) == "object" then
        reduce ((($l | keys) + ($w | keys)) | unique[]) as $k ({};
          if ($w | has($k)) | not then . + {($k): null}
          elif ($l | has($k)) | not then . + {($k): $w[$k]}
          elif $l[$k] == $w[$k] then .
          else . + {($k): diff($l[$k]; $w[$k])}
          end)
      else $w
      end;
    ($wanted.spec.template.spec // {}) as $w
    | ($live.spec.template.spec // {}) as $l
    | if $w == $l then empty
      else {spec: {template: {spec: diff($l; $w)}}}
      end')
  if [ -n "$patch" ]; then
    kubectl -n "$ns" patch metal3machinetemplate "$name" --type merge -p "$patch"
    refreshed=$((refreshed + 1))
  fi
done <"$work/wanted.json"
echo "Metal3MachineTemplates of release $ns/$release refreshed in place: $refreshed of $(wc -l <"$work/wanted.json")"
