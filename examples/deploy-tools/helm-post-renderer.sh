#!/bin/sh
# Helm post-renderer: keeps and labels every Cluster API template of a chart you do not own, with
# the kustomize Component in kustomization.yaml beside this script (copy the two files together).
#
#   Helm 3:  helm upgrade RELEASE CHART --post-renderer ./helm-post-renderer.sh
#   Helm 4:  --post-renderer takes the name of a plugin of type postrenderer/v1 instead of a path
#            (pkg/cmd/flags.go, Helm 4.2.4): docs/deploy-tools.md#helm-post-renderer shows the
#            plugin.yaml that runs this script, and `helm plugin install DIR`.
#
# Helm writes the rendered manifests to standard input and reads the result from standard
# output. Needs `kustomize` or `kubectl` (its `kubectl kustomize`) on PATH.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/rendered.yaml"
# kustomize takes no absolute path and no directory above the kustomization: link the Component in.
ln -s "$here" "$work/keep"
printf 'resources:\n  - rendered.yaml\ncomponents:\n  - keep\n' >"$work/kustomization.yaml"
if command -v kustomize >/dev/null 2>&1; then
  kustomize build "$work"
else
  kubectl kustomize "$work"
fi
