"""Each Sylva unit of this project, built as Flux builds it (flux.py), and checked as the API
server and Flux would take it. Used by scripts/sylva-render.py, with and without Sylva's chart.

A check is one line of the result; each can fail:
- the build: kustomize with the unit's path, components and patches, then Flux's substitution,
  with Sylva's default (not strict) and in strict mode (Flux recommends it; an operator may turn
  it on);
- names and namespaces: every name is a DNS subdomain and every namespace a DNS label (a `${...}`
  left in them is neither); every namespaced object has a namespace, as the units set no
  targetNamespace and Flux's apply fails on one without ("namespace not specified", fluxcd/pkg
  ssa/errors/errors.go);
- types: labels, annotations, ConfigMap data and container env values are strings (substitution
  reads its result back as YAML, so `true` becomes a boolean, which the API server refuses);
- what the unit's own objects refer to (a Pod's ServiceAccount and ConfigMaps, a RoleBinding's
  Role and subjects) is in the same namespace;
- ready means active: a unit that applies Kubewarden policies waits for them (`wait: true`) and
  has a healthCheckExprs entry for each policy kind, whose CEL keeps a `pending` policy, or one
  without a status, from being Current, and makes an `active` one Current.
"""

import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import flux  # noqa: E402

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "PriorityClass",
    "ClusterAdmissionPolicy", "ClusterAdmissionPolicyGroup", "PolicyServer",
}
POLICY_GROUP = "policies.kubewarden.io/"
POLICY_KINDS = {"ClusterAdmissionPolicy", "AdmissionPolicy", "ClusterAdmissionPolicyGroup",
                "AdmissionPolicyGroup"}
POD_TEMPLATES = {
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
}


class Results:
    """Counts the checks and prints one line for each failure, and the closing line."""

    def __init__(self, quiet=False):
        self.passed = 0
        self.failed = []
        self.quiet = quiet

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed.append(what)
            if not self.quiet:
                print(f"  FAILED: {what}", flush=True)
        return cond

    def close(self, name):
        print(f"{name}: {self.passed} passed, {len(self.failed)} failed", flush=True)
        return not self.failed


def dig(obj, *keys):
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def where(obj):
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}"


def check_objects(results, label, objects):
    for obj in objects:
        meta = obj.get("metadata") or {}
        name, ns = meta.get("name"), meta.get("namespace")
        results.check(isinstance(name, str) and DNS_SUBDOMAIN.match(name),
                      f"{label}: {where(obj)}: name {name!r} is not a DNS subdomain")
        if obj.get("kind") in CLUSTER_SCOPED:
            results.check(ns is None, f"{label}: {where(obj)} is cluster-scoped but has a namespace")
        else:
            results.check(isinstance(ns, str) and DNS_LABEL.match(ns),
                          f"{label}: {where(obj)}: namespace {ns!r} is not a DNS label")
        for field in ("labels", "annotations"):
            bad = {k: v for k, v in (meta.get(field) or {}).items() if not isinstance(v, str)}
            results.check(not bad, f"{label}: {where(obj)}: {field} that are not strings: {bad}")
        if obj.get("kind") in ("ConfigMap", "Secret"):
            bad = [k for k, v in (obj.get("data") or {}).items() if not isinstance(v, str)]
            results.check(not bad, f"{label}: {where(obj)}: data that is not a string: {bad}")
        if not flux.substitution_disabled(obj):
            left = [s for s in strings(obj) if "${" in s]
            results.check(not left, f"{label}: {where(obj)}: variables left after substitution: {left[:3]}")
        pod = dig(obj, *POD_TEMPLATES[obj["kind"]]) if obj.get("kind") in POD_TEMPLATES else None
        if pod:
            check_pod(results, label, obj, pod, objects)
        if obj.get("kind") == "RoleBinding":
            check_binding(results, label, obj, objects)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def shipped(objects, kind, name):
    return [o for o in objects if o.get("kind") == kind and dig(o, "metadata", "name") == name]


def check_pod(results, label, obj, pod, objects):
    ns = dig(obj, "metadata", "namespace")
    for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
        bad = [e.get("name") for e in c.get("env") or [] if "value" in e and not isinstance(e["value"], str)]
        results.check(not bad, f"{label}: {where(obj)}: env values that are not strings: {bad}")
    refs = [("ServiceAccount", pod.get("serviceAccountName"))]
    refs += [("ConfigMap", dig(v, "configMap", "name")) for v in pod.get("volumes") or []]
    for kind, name in refs:
        for target in shipped(objects, kind, name) if name else []:
            results.check(dig(target, "metadata", "namespace") == ns,
                          f"{label}: {where(obj)} uses {where(target)}, in another namespace")


def check_binding(results, label, obj, objects):
    ns = dig(obj, "metadata", "namespace")
    role = obj.get("roleRef") or {}
    for target in shipped(objects, role.get("kind"), role.get("name")):
        if target.get("kind") == "Role":
            results.check(dig(target, "metadata", "namespace") == ns,
                          f"{label}: {where(obj)} binds {where(target)}, in another namespace")
    for subject in obj.get("subjects") or []:
        for target in shipped(objects, subject.get("kind"), subject.get("name")):
            results.check(dig(target, "metadata", "namespace") == subject.get("namespace"),
                          f"{label}: {where(obj)} names {where(target)} in namespace {subject.get('namespace')}")


def check_ready_means_active(results, label, spec, objects, evaluate):
    """The health check of policies: pending is not ready, active is."""
    policies = [o for o in objects if str(o.get("apiVersion", "")).startswith(POLICY_GROUP)
                and o.get("kind") in POLICY_KINDS]
    if not policies:
        return
    results.check(spec.get("wait") is True,
                  f"{label}: applies Kubewarden policies without `wait: true`, so nothing waits for them")
    exprs = spec.get("healthCheckExprs") or []
    for policy in policies:
        covered = flux.health(policy, exprs, lambda _e, _o: False) is not None
        if not results.check(covered, f"{label}: no healthCheckExprs entry for {policy['apiVersion']} "
                                      f"{policy['kind']} ({where(policy)}): kstatus takes it as "
                                      "Current as soon as it exists"):
            continue
        for status, want in (({"policyStatus": "pending"}, False), ({"policyStatus": "scheduled"}, False),
                             ({"policyStatus": "unschedulable"}, False), (None, False),
                             ({"policyStatus": "active"}, True)):
            obj = dict(policy)
            if status is None:
                obj.pop("status", None)
            else:
                obj["status"] = status
            got = flux.health(obj, exprs, evaluate)
            shown = status["policyStatus"] if status else "no status"
            results.check((got == "Current") == want,
                          f"{label}: {where(policy)} with {shown} is {got}, "
                          f"{'want Current' if want else 'must not be Current'}")


def check_unit(results, label, spec, source, substitute_from=None, evaluate=None):
    """Build one unit's Kustomization spec as Flux does and check what it applies."""
    try:
        objects = flux.build(source, spec, substitute_from)
    except flux.SubstitutionError as error:
        results.check(False, f"{label}: Flux's build fails: {error}")
        return None
    results.check(bool(objects), f"{label}: builds to nothing")
    if spec.get("postBuild") is not None:
        try:
            strict = flux.build(source, spec, substitute_from, strict=True)
            results.check(strict == objects, f"{label}: strict substitution gives other objects")
        except flux.SubstitutionError as error:
            results.check(False, f"{label}: Flux's build fails in strict mode: {error}")
    check_objects(results, label, objects)
    if evaluate is not None:
        check_ready_means_active(results, label, spec, objects, evaluate)
    return objects


def selftest(results):
    """The substitution rules of flux.py against the cases of fluxcd/pkg envsubst@v1.3.0
    (eval_test.go) and kustomize_varsub.go@kustomize/v1.16.0 that the units rely on."""
    v = {"NS": "edge-a", "EMPTY": ""}
    for text, want in (
        ("${NS}", "edge-a"),
        ("a-${NS}-b", "a-edge-a-b"),
        ("${UNSET}", ""),
        ("${UNSET:=sylva-system}", "sylva-system"),
        ("${EMPTY:-x}", "x"),
        ("${NS:=x}", "edge-a"),
        ("$${NS}", "${NS}"),
        ("$$NS", "$NS"),
        ("$NS", "$NS"),
        ("s${NS}", "sedge-a"),
    ):
        got = flux.envsubst(text, v, strict=False)
        results.check(got == want, f"envsubst {text!r}: {got!r}, want {want!r}")
    for text, fails in (("${UNSET}", True), ("${UNSET:=d}", False), ("$${UNSET}", False)):
        try:
            flux.envsubst(text, v, strict=True)
            failed = False
        except flux.SubstitutionError:
            failed = True
        results.check(failed == fails, f"strict envsubst {text!r}: failed={failed}, want {fails}")
    disabled = {"kind": "ConfigMap", "metadata": {"name": "x", "namespace": "${NS}",
                                                   "annotations": {flux.SUBSTITUTE_KEY: "disabled"}}}
    results.check(flux.substitute(disabled, v, False) is None,
                  "an object annotated substitute: disabled is left alone")
    labelled = {"kind": "ConfigMap", "metadata": {"name": "x", "labels": {flux.SUBSTITUTE_KEY: "disabled"}}}
    results.check(flux.substitute(labelled, v, False) is None,
                  "an object labelled substitute: disabled is left alone")
    typed = flux.substitute({"kind": "ConfigMap", "data": {"a": "${B}"}}, {"B": "true"}, False)
    results.check(typed["data"]["a"] is True, "a substituted `true` reads back as a boolean")
    results.check(flux.substitute({"a": "${X}"}, {}, True) == {"a": "${X}"},
                  "with no variable at all nothing is substituted")


# The prepare unit as it was before issue 55, cut down: the checks must refuse it.
TRAP = {
    "kustomization.yaml": """resources: [job.yaml]
configMapGenerator:
  - name: script
    namespace: ${NAMESPACE}
    literals: ["run.sh=echo"]
    options:
      annotations:
        kustomize.toolkit.fluxcd.io/substitute: disabled
""",
    "job.yaml": """apiVersion: batch/v1
kind: Job
metadata:
  name: job
  namespace: ${NAMESPACE}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: run
          image: example
          env:
            - name: REFRESH
              value: "${REFRESH}"
      volumes:
        - name: script
          configMap:
            name: script
""",
}


def selftest_trap(results):
    """Built as Flux builds it, the old prepare unit's mistakes are found: the ConfigMap marked
    substitute: disabled keeps `${NAMESPACE}`, the Job mounts it from another namespace, and a
    substituted "true" is a boolean env value."""
    with tempfile.TemporaryDirectory(prefix="flux-trap-") as tmp:
        unit = Path(tmp) / "unit"
        unit.mkdir()
        for name, text in TRAP.items():
            (unit / name).write_text(text, encoding="utf-8")
        inner = Results(quiet=True)
        spec = {"path": "./unit", "postBuild": {"substitute": {"NAMESPACE": "edge-a", "REFRESH": "true"}}}
        check_unit(inner, "trap", spec, tmp)
    found = "\n".join(inner.failed)
    for what in ("namespace '${NAMESPACE}' is not a DNS label", "in another namespace",
                 "env values that are not strings: ['REFRESH']"):
        results.check(what in found, f"the old prepare unit must fail with {what!r}; it failed with: {found}")
