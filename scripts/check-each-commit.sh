#!/usr/bin/env bash
# Checks that every commit of a series builds: `cargo check --workspace --locked` at each commit
# that `git rev-list` gives for the arguments (default: the commits on HEAD that the upstream
# branch lacks, else the last one), oldest first, each in a
# temporary worktree, so that `git bisect` never lands on a commit that does not compile. The
# worktrees share one target directory (target/each-commit), so only what changed is rebuilt.
# Used by .githooks/pre-push (`git config core.hooksPath .githooks`); run it by hand with a range:
#   scripts/check-each-commit.sh origin/main..HEAD
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
range=("$@")
if [[ ${#range[@]} -eq 0 ]]; then
  if git rev-parse --verify --quiet '@{upstream}' >/dev/null; then
    range=('@{upstream}..HEAD')
  else
    range=('HEAD~1..HEAD')
  fi
fi
mapfile -t commits < <(git rev-list --reverse "${range[@]}")
if [[ ${#commits[@]} -eq 0 ]]; then
  echo "No commits in ${range[*]}."
  exit 0
fi
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/each-commit}
tree=$(mktemp -d)
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$tree"' EXIT
git worktree add --detach --quiet "$tree" "${commits[0]}"
failed=0
for commit in "${commits[@]}"; do
  git -C "$tree" checkout --detach --quiet "$commit"
  subject=$(git log -1 --format=%s "$commit")
  if (cd "$tree" && cargo check --workspace --locked --quiet 2>"$tree.log"); then
    echo "ok     ${commit:0:9} $subject"
  else
    echo "FAILED ${commit:0:9} $subject"
    sed 's/^/    /' "$tree.log" | tail -20
    failed=$((failed + 1))
  fi
done
rm -f "$tree.log"
if [[ $failed -gt 0 ]]; then
  echo "$failed of ${#commits[@]} commits in ${range[*]} do not build: fix them (git rebase -i) before they land."
  exit 1
fi
echo "All ${#commits[@]} commits in ${range[*]} build."
