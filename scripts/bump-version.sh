#!/usr/bin/env bash
# Sets the policy's version everywhere it is written, in one step:
#
#   Cargo.toml            [package] version
#   Cargo.lock            the capi-template-guard and template-cleanup entries (CI builds --locked)
#   template-cleanup/Cargo.toml
#                         [package] version of template-cleanup (its --version)
#   metadata.yml          io.kubewarden.policy.version (checked against the tag by the release)
#   artifacthub-pkg.yml   version, createdAt, the image tag, the release download link, install notes
#   README.md, CONTRIBUTING.md, docs/*.md, examples/ (subdirectories too)
#                         every <ociUrl>:vX.Y.Z, the template-cleanup image's tag (<owner's
#                         ghcr.io path>/template-cleanup:vX.Y.Z), releases/download/vX.Y.Z,
#                         tag-pinned raw file URL (raw.githubusercontent.com/OWNER/REPO/vX.Y.Z/),
#                         docs link (<source>/blob/vX.Y.Z/) and kustomize remote target
#                         (<source>//examples?ref=vX.Y.Z)
#
# Usage: scripts/bump-version.sh [--dry-run] [--root DIR] X.Y.Z
#        make bump VERSION=X.Y.Z [DRY_RUN=1]
#
# --dry-run  applies the bump to a temporary copy of those files, prints the diff and leaves the
#            working tree untouched.
# --root     bumps the files under DIR instead of this repository (what --dry-run uses).
#
# Every tagged reference is rewritten whatever version it named before, so a place that had
# drifted is repaired too. `cargo test --test release` checks afterwards that all of them agree.
set -euo pipefail

usage() {
  echo "usage: $0 [--dry-run] [--root DIR] X.Y.Z" >&2
  exit 2
}

dry_run=0
root="$(cd "$(dirname "$0")/.." && pwd)"
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --root)
      [ $# -ge 2 ] || usage
      root="$2"
      shift
      ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      [ -z "$version" ] || usage
      version="$1"
      ;;
  esac
  shift
done
[ -n "$version" ] || usage

# SemVer 2.0 without build metadata (an OCI tag cannot hold "+"); a leading "v" is dropped.
version="${version#v}"
semver='[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?'
if ! [[ "$version" =~ ^${semver}$ ]]; then
  echo "$0: '$version' is not a version of the form X.Y.Z or X.Y.Z-pre.1" >&2
  exit 2
fi

cd "$root"

# The files the version lives in, relative to the root.
files=(Cargo.toml Cargo.lock template-cleanup/Cargo.toml metadata.yml artifacthub-pkg.yml README.md)
# Documentation and every manifest under examples/, sorted so the dry run's diff is stable.
while IFS= read -r file; do
  files+=("$file")
done < <(
  { [ -f CONTRIBUTING.md ] && echo CONTRIBUTING.md
    [ -d docs ] && find docs -name '*.md'
    [ -d examples ] && find examples -name '*.yaml' -o -name '*.yml'
  } | sort
)
for file in "${files[@]}"; do
  [ -f "$file" ] || {
    echo "$0: $root/$file is missing" >&2
    exit 1
  }
done

if [ "$dry_run" = 1 ]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/before" "$scratch/after"
  for file in "${files[@]}"; do
    mkdir -p "$scratch/before/$(dirname "$file")" "$scratch/after/$(dirname "$file")"
    cp "$file" "$scratch/before/$file"
    cp "$file" "$scratch/after/$file"
  done
  "$0" --root "$scratch/after" "$version" >/dev/null
  echo "Dry run: what 'make bump VERSION=$version' would change (nothing was written):"
  (cd "$scratch" && diff -ru before after) || true
  exit 0
fi

# Values that locate the version: the OCI repository and the source repository.
annotation() {
  sed -n "s/^  $1: *//p" metadata.yml | head -n 1
}
oci_url="$(annotation 'io\.kubewarden\.policy\.ociUrl')"
source_url="$(annotation 'io\.kubewarden\.policy\.source')"
[ -n "$oci_url" ] && [ -n "$source_url" ] || {
  echo "$0: metadata.yml has no io.kubewarden.policy.ociUrl or io.kubewarden.policy.source" >&2
  exit 1
}
regex_escape() { printf '%s' "$1" | sed 's/[][\.*^$+?(){}|/]/\\&/g'; }
oci_re="$(regex_escape "$oci_url")"
# template-cleanup's image goes beside the policy (release.yml): ghcr.io/OWNER/template-cleanup.
image_re="$(regex_escape "${oci_url%%/policies/*}/template-cleanup")"
download_re="$(regex_escape "$source_url/releases/download/")"
# Example files by URL, so that a reader of Artifact Hub needs no clone.
raw_re="$(regex_escape "${source_url/https:\/\/github.com\//https://raw.githubusercontent.com/}/")"
remote_re="$(regex_escape "$source_url//")"
blob_re="$(regex_escape "$source_url/blob/")"

# rewrite FILE PROGRAM...: runs the program on FILE and replaces the file only when it changed.
changed=()
rewrite() {
  local file="$1" tmp
  shift
  tmp="$(mktemp "$file.XXXXXX")"
  "$@" <"$file" >"$tmp"
  if cmp -s "$file" "$tmp"; then rm -f "$tmp"; else
    chmod --reference="$file" "$tmp" 2>/dev/null || true
    mv "$tmp" "$file"
    case " ${changed[*]} " in *" $file "*) ;; *) changed+=("$file") ;; esac
  fi
}

# Cargo.toml: the version line of the [package] table only (dependencies have their own).
rewrite Cargo.toml awk -v v="$version" '
  /^\[/ { table = $0 }
  table == "[package]" && !done && /^version *= *"/ { sub(/"[^"]*"/, "\"" v "\""); done = 1 }
  { print }'

rewrite template-cleanup/Cargo.toml awk -v v="$version" '
  /^\[/ { table = $0 }
  table == "[package]" && !done && /^version *= *"/ { sub(/"[^"]*"/, "\"" v "\""); done = 1 }
  { print }'

# Cargo.lock: the version lines that follow name = "capi-template-guard" and "template-cleanup".
rewrite Cargo.lock awk -v v="$version" '
  /^\[\[package\]\]/ { ours = 0 }
  /^name = "(capi-template-guard|template-cleanup)"$/ { ours = 1 }
  ours && /^version = "/ { sub(/"[^"]*"/, "\"" v "\""); ours = 0 }
  { print }'

rewrite metadata.yml sed -E "s/^(  io\.kubewarden\.policy\.version:).*/\1 $version/"

# artifacthub-pkg.yml's version and createdAt move with the version here; its annotations are
# written by `cargo xtask gen manifests` from metadata.yml (createdAt moves with the version only).
if [ "$(sed -n 's/^version: *//p' artifacthub-pkg.yml)" != "$version" ]; then
  rewrite artifacthub-pkg.yml sed -E \
    -e "s/^version:.*/version: $version/" \
    -e "s/^createdAt:.*/createdAt: $(date -u +%Y-%m-%dT%H:%M:%SZ)/"
fi

# Every tagged reference to the published module and every release download link.
for file in "${files[@]}"; do
  case "$file" in Cargo.toml | Cargo.lock | template-cleanup/Cargo.toml) continue ;; esac
  rewrite "$file" sed -E \
    -e "s/(${oci_re}):v${semver}/\1:v${version}/g" \
    -e "s/(${image_re}):v${semver}/\1:v${version}/g" \
    -e "s/(${download_re})v${semver}/\1v${version}/g" \
    -e "s/(${raw_re})v${semver}\//\1v${version}\//g" \
    -e "s/(${blob_re})v${semver}\//\1v${version}\//g" \
    -e "s/(${remote_re}[A-Za-z0-9._\/-]*\?ref=)v${semver}/\1v${version}/g"
done

# Cargo.lock must be what cargo itself would write; only checkable inside the real workspace.
if [ -f testhost/Cargo.toml ] && command -v cargo >/dev/null 2>&1; then
  if ! cargo update --workspace --locked --offline --quiet; then
    echo "$0: Cargo.lock does not match Cargo.toml after the bump; run 'cargo update -p capi-template-guard'" >&2
    exit 1
  fi
fi

echo "Version set to $version; changed: ${changed[*]:-nothing, it was already $version}"
echo "Next: cargo test --test release, commit, then tag v$version (see CONTRIBUTING.md, Releasing)."
