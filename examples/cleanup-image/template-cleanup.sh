#!/bin/sh
# template-cleanup: deletes retired Cluster API templates once capi-template-guard lets them go.
#
# Run by the CronJob of ../template-cleanup-cronjob.yaml (the image of ./Dockerfile holds it as
# /usr/local/bin/template-cleanup); docs/cleanup.md explains the design. It relies on the guard
# policy to refuse (code 409) the templates still in use, so before deleting anything it checks
# that the guard can do that: the ClusterAdmissionPolicy exists, is in protect mode, is active,
# and does not set failOpenOnLookupError. Otherwise it deletes nothing and exits 2.
#
# Then it tries a plain delete of every template carrying the clean-up label or the label the
# Cluster API topology controller puts on the copies it makes (it deletes an old control-plane
# template copy once, best effort, and never retries), skipping those already being deleted and
# those younger than MIN_AGE_MINUTES. Only a 409 refusal counts as "kept": a template still in
# use. Any other failure (500: RBAC or contextAwareResources of the policy; 403: this job's RBAC;
# a timeout) is counted as failed, and the Job fails after the whole pass (exit 1), so that a
# broken guard or missing RBAC shows up as a failed Job. The last line is always the summary:
#   deleted N, kept K, failed F
#
# Plain POSIX sh: it runs with busybox (Alpine) as well as dash or bash. Needs kubectl and date.
#
# Environment:
#   KINDS              fully qualified plurals to collect, separated by blanks (required)
#   POLICY_NAME        the guard's ClusterAdmissionPolicy (capi-template-guard)
#   SELECTOR           the clean-up label (capi-template-guard.kubewarden.io/cleanup=true)
#   TOPOLOGY_SELECTOR  the topology controller's label (topology.cluster.x-k8s.io/owned); empty
#                      to leave topology copies alone
#   MIN_AGE_MINUTES    templates younger than this are left alone (60)
#   NAMESPACE          the namespace to clean (the Job's own, from the downward API)
#   NAMESPACE_ARGS     "--all-namespaces" to clean every namespace (needs cluster-wide RBAC)
set -u

POLICY_NAME=${POLICY_NAME:-capi-template-guard}
SELECTOR=${SELECTOR:-capi-template-guard.kubewarden.io/cleanup=true}
TOPOLOGY_SELECTOR=${TOPOLOGY_SELECTOR-topology.cluster.x-k8s.io/owned}
MIN_AGE_MINUTES=${MIN_AGE_MINUTES:-60}
NAMESPACE=${NAMESPACE:-default}
NAMESPACE_ARGS=${NAMESPACE_ARGS:-}
KINDS=${KINDS:-}

deleted=0
kept=0
failed=0

summary() {
  echo "deleted $deleted, kept $kept, failed $failed"
}

work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT

# Deletes nothing, says why, and fails the Job.
refuse() {
  echo "template-cleanup: deleted nothing: $*" >&2
  summary
  exit 2
}

[ -n "$KINDS" ] || refuse "KINDS is empty; set it to the fully qualified plurals of the templates to collect"
case "$MIN_AGE_MINUTES" in
  '' | *[!0-9]*) refuse "MIN_AGE_MINUTES must be a whole number of minutes, not '$MIN_AGE_MINUTES'" ;;
esac

# --- 1. The guard must be able to refuse: otherwise every delete below would go through. ---
policy="ClusterAdmissionPolicy $POLICY_NAME"
if ! state=$(kubectl get clusteradmissionpolicies.policies.kubewarden.io "$POLICY_NAME" \
  -o jsonpath='{.spec.mode}{"|"}{.status.mode}{"|"}{.status.policyStatus}{"|"}{.spec.settings.failOpenOnLookupError}' \
  2>"$work/error"); then
  case "$(cat "$work/error")" in
    *NotFound* | *"not found"*)
      refuse "$policy does not exist, so nothing would refuse to delete a template still in use" ;;
    *) refuse "cannot read $policy: $(cat "$work/error")" ;;
  esac
fi
IFS='|' read -r spec_mode status_mode policy_status fail_open <<EOF
$state
EOF
# An empty spec.mode is protect (the CRD's default); status.mode is what the policy server runs.
[ "${spec_mode:-protect}" = protect ] ||
  refuse "$policy is in $spec_mode mode, which allows every delete (it only logs); set spec.mode: protect"
[ -z "$status_mode" ] || [ "$status_mode" = protect ] ||
  refuse "$policy runs in $status_mode mode (status.mode), which allows every delete; wait until it runs in protect mode"
[ "$policy_status" = active ] ||
  refuse "$policy is not active (status.policyStatus: ${policy_status:-none}); check it with kubectl wait --for=condition=PolicyUniquelyReachable clusteradmissionpolicy/$POLICY_NAME"
[ "$fail_open" != true ] ||
  refuse "$policy sets failOpenOnLookupError: true, so a failed lookup would let a template still in use be deleted"

# --- 2. The candidates: "kind namespace name created deleting", one per line, no duplicates. ---
if [ -n "$NAMESPACE_ARGS" ]; then scope=$NAMESPACE_ARGS; else scope="--namespace=$NAMESPACE"; fi
: >"$work/candidates"
for kind in $KINDS; do
  for selector in "$SELECTOR" $TOPOLOGY_SELECTOR; do
    # Word splitting of $scope is wanted ("--all-namespaces" or "--namespace=NS").
    # shellcheck disable=SC2086
    if ! kubectl get "$kind" $scope --selector="$selector" \
      -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.metadata.creationTimestamp}{" "}{.metadata.deletionTimestamp}{"\n"}{end}' \
      >"$work/items" 2>"$work/error"; then
      case "$(cat "$work/error")" in
        # The provider is not installed: nothing to collect, not a fault.
        *"doesn't have a resource type"*) echo "skip $kind: not served by this cluster"; break ;;
        *) echo "cannot list $kind ($selector): $(cat "$work/error")"; failed=$((failed + 1)); continue ;;
      esac
    fi
    while read -r ns name created deleting; do
      [ -n "$name" ] && echo "$kind $ns $name $created ${deleting:--}"
    done <"$work/items" >>"$work/candidates"
  done
done
sort -u "$work/candidates" >"$work/sorted"

# --- 3. One plain delete each. The guard decides; nothing is forced. ---
# A deploy tool creates a new template a moment before it points a MachineDeployment or control
# plane at it; in that moment nothing names it yet. Timestamps compare as YYYYMMDDhhmmss numbers.
now=$(date -u +%s)
cutoff=$(date -u -d "@$((now - MIN_AGE_MINUTES * 60))" +%Y%m%d%H%M%S)
while read -r kind ns name created deleting; do
  what="$kind $ns/$name"
  if [ "$deleting" != - ]; then
    echo "skip $what: already being deleted"
    continue
  fi
  created_number=$(printf '%s' "$created" | tr -cd '0-9')
  if [ "${created_number:-0}" -gt "$cutoff" ]; then
    echo "skip $what: younger than $MIN_AGE_MINUTES minutes"
    continue
  fi
  # -v=6 logs the HTTP status of the DELETE: kubectl prints a webhook's refusal as
  # "Error from server: ..." without its code, and only a 409 means "still in use".
  if kubectl delete "$kind" "$name" --namespace="$ns" --wait=false -v=6 \
    >"$work/out" 2>"$work/log" </dev/null; then
    echo "deleted $what"
    deleted=$((deleted + 1))
    continue
  fi
  # kubectl's own error line, without the -v=6 log around it.
  message=$(grep -E '^(Error|error)' "$work/log" | tr '\n' ' ')
  [ -n "$message" ] || message=$(tail -n 1 "$work/log")
  if grep 'DELETE ' "$work/log" | grep -q ' 409 Conflict'; then
    echo "kept $what: $message"
    kept=$((kept + 1))
  elif grep 'DELETE ' "$work/log" | grep -q ' 404 Not Found'; then
    echo "skip $what: already gone"
  else
    echo "failed $what: $message"
    failed=$((failed + 1))
  fi
done <"$work/sorted"

summary
[ "$failed" -eq 0 ] || exit 1
