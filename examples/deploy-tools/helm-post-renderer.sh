#!/bin/sh
# Helm post-renderer: keeps and labels every Cluster API template of a chart you do not own, with
# the kustomize Component in kustomization.yaml beside this script (copy the two files together).
#
#   Helm 3:  helm upgrade RELEASE CHART --post-renderer ./helm-post-renderer.sh
#   Helm 4:  --post-renderer takes the name of a plugin of type postrenderer/v1 instead of a path
#            (pkg/cmd/flags.go, Helm 4.2.4). Make one from this script and install it:
#              ./helm-post-renderer.sh --helm4-plugin DIR && helm plugin install DIR
#              helm upgrade RELEASE CHART --post-renderer capi-template-keep
#
# Helm writes the rendered manifests to standard input and reads the result from standard output
# (Helm 4: internal/plugin/runtime_subprocess.go, runPostrenderer). Needs `kustomize` or `kubectl`
# (its `kubectl kustomize`) on PATH.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
if [ "${1:-}" = "--helm4-plugin" ]; then
  [ -n "${2:-}" ] || { echo "usage: $0 --helm4-plugin DIR" >&2; exit 2; }
  mkdir -p "$2"
  cp "$here/helm-post-renderer.sh" "$here/kustomization.yaml" "$2/"
  # The plugin descriptor Helm 4 reads (internal/plugin/metadata_v1.go): a subprocess runtime.
  cat >"$2/plugin.yaml" <<'PLUGIN'
apiVersion: v1
name: capi-template-keep
version: 0.1.0
type: postrenderer/v1
runtime: subprocess
runtimeConfig:
  platformCommand:
    - command: ${HELM_PLUGIN_DIR}/helm-post-renderer.sh
PLUGIN
  echo "Helm 4 plugin written to $2: helm plugin install $2"
  exit 0
fi
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
