#!/usr/bin/env bash
# Checks the golden field-mask vectors (vectors.json) against a real Kubewarden host: builds the
# probe policy (probe/), serves every case's object through fakeapi (one namespace per case, so
# that reflectors and masks do not mix), runs the probe once under `kwctl run`, and compares each
# answer with the case's `expected` (a list's one item, a get's object). Prints OK or the
# difference per case and exits non-zero on any mismatch. Run by hand when kwctl changes.
#
#   KWCTL=/path/to/kwctl test_data/field-masks/check-live.sh
#
# Needs: KWCTL (a kwctl binary), cargo with the wasm32-wasip1 target, python3 with PyYAML, and
# FAKEAPI, the path of a fake Kubernetes API server script that serves the objects (none ships
# here).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${KWCTL:?set KWCTL to a kwctl binary, for example KWCTL=\$(command -v kwctl)}"
fakeapi=${FAKEAPI:?set FAKEAPI to the fake API server script, for example FAKEAPI=path/to/fakeapi.py}
[ -f "$fakeapi" ] || { echo "fakeapi not found at $fakeapi: set FAKEAPI=path/to/fakeapi.py" >&2; exit 2; }
work=$root/target/field-masks-live
rm -rf "$work" && mkdir -p "$work"

CARGO_TARGET_DIR=$root/target/field-masks-probe cargo build --locked --release \
    --target wasm32-wasip1 --manifest-path "$here/probe/Cargo.toml"
wasm=$root/target/field-masks-probe/wasm32-wasip1/release/field_masks_probe.wasm

# From the vectors: the objects (case i in namespace field-masks-i), the probe's settings, the
# metadata granting every kind they use, the served kinds, and an admission request to run on.
python3 - "$here/vectors.json" "$work" <<'PY'
import json, sys
vectors, work = json.load(open(sys.argv[1])), sys.argv[2]
objects, calls, kinds = [], [], set()
for i, case in enumerate(vectors["cases"]):
    o = case["object"]
    o["metadata"]["namespace"] = f"field-masks-{i}"
    objects.append(o)
    kinds.add((o["apiVersion"], o["kind"]))
    call = {"call": case["call"], "api_version": o["apiVersion"], "kind": o["kind"],
            "namespace": o["metadata"]["namespace"], "masks": case["masks"]}
    if case["call"] == "get":
        call.update(name=o["metadata"]["name"], disable_cache=case["disable_cache"])
    calls.append(call)
json.dump({"apiVersion": "v1", "kind": "List", "items": objects}, open(f"{work}/objects.json", "w"))
json.dump({"calls": calls}, open(f"{work}/settings.json", "w"))
open(f"{work}/served", "w").write(",".join(f"{av}/{k}" for av, k in sorted(kinds)))
json.dump({"rules": [], "mutating": False, "backgroundAudit": False, "executionMode": "kubewarden-wapc",
           "hostCapabilities": ["kubernetes/get_resource", "kubernetes/list_resources_by_namespace"],
           "contextAwareResources": [{"apiVersion": av, "kind": k} for av, k in sorted(kinds)]},
          open(f"{work}/metadata.json", "w"))
json.dump({"uid": "field-masks", "operation": "CREATE",
           "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
           "resource": {"group": "", "version": "v1", "resource": "configmaps"},
           "name": "probe", "namespace": "default",
           "userInfo": {"username": "field-masks-probe"},
           "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}},
          open(f"{work}/request.json", "w"))
PY

"$KWCTL" annotate -m "$work/metadata.json" -o "$work/probe.wasm" "$wasm" 2>"$work/annotate.err" ||
    { cat "$work/annotate.err" >&2; exit 2; }

# Objects as given (no server-populated fields), so that what differs is the host's doing.
unset HTTPS_PROXY https_proxy
python3 "$fakeapi" --objects "$work/objects.json" --raw-objects --served "$(cat "$work/served")" \
    --port 0 --kubeconfig "$work/kubeconfig.yaml" --log "$work/api.log" --pid-file "$work/api.pid" \
    2>"$work/fakeapi.err" &
trap 'kill "$(cat "$work/api.pid" 2>/dev/null)" 2>/dev/null || true' EXIT
for _ in $(seq 50); do [ -s "$work/kubeconfig.yaml" ] && [ -s "$work/api.pid" ] && break; sleep 0.2; done
[ -s "$work/kubeconfig.yaml" ] || { echo "fakeapi did not start:" >&2; cat "$work/fakeapi.err" >&2; exit 2; }

# A list the API server refuses never returns to the policy (the reflector retries): time it out.
KUBECONFIG=$work/kubeconfig.yaml RUST_BACKTRACE=0 timeout 120 "$KWCTL" run --allow-context-aware \
    -r "$work/request.json" --settings-path "$work/settings.json" "$work/probe.wasm" \
    >"$work/response.json" 2>"$work/kwctl.err" ||
    { cat "$work/kwctl.err" >&2; echo "kwctl run failed or took over 120 s; fakeapi's log: $work/api.log" >&2; exit 2; }

python3 - "$here/vectors.json" "$work/response.json" <<'PY'
import difflib, json, sys
cases = json.load(open(sys.argv[1]))["cases"]
response = json.load(open(sys.argv[2]))
try:
    answers = json.loads(response["status"]["message"])
except (KeyError, TypeError, ValueError):
    sys.exit(f"kwctl's response does not carry the probe's answers: {json.dumps(response)}")
if len(answers) != len(cases):
    sys.exit(f"{len(answers)} answers for {len(cases)} cases: {json.dumps(answers)}")
failed = 0
for i, (case, answer) in enumerate(zip(cases, answers)):
    expected = case["expected"]
    expected["metadata"]["namespace"] = f"field-masks-{i}"
    got = answer.get("answer")
    if case["call"] == "list" and isinstance(got, dict):
        items = got.get("items") or []
        got = items[0] if len(items) == 1 else {"items (expected one)": items}
    if got == expected:
        print(f"OK    {case['name']}")
        continue
    failed += 1
    print(f"DIFF  {case['name']}")
    if got is None:
        print(f"      the host answered an error: {answer.get('error')}")
        continue
    show = lambda v: json.dumps(v, indent=1, sort_keys=True).splitlines()
    sys.stdout.writelines(f"      {line}\n" for line in difflib.unified_diff(
        show(expected), show(got), "expected (vectors.json)", "the host's answer", lineterm=""))
print(f"{len(cases) - failed} of {len(cases)} cases equal")
sys.exit(1 if failed else 0)
PY
