#!/usr/bin/env python3
"""Build each Sylva unit of this project as Flux builds it; with Sylva's chart, render
examples/sylva through it with Helm 4's engine and check the rendered units too.

Usage: sylva-render.py [CHART_DIR]   (`make sylva-render [SYLVA_CHART=<sylva-core>/charts/sylva-units]`)

Always (no Sylva code needed; part of `make test`): the substitution rules of
sylva-render/flux.py against their cited cases, then each unit of examples/sylva/values.yaml and
workload-cluster.values.yaml whose source is this project, its kustomization_spec as the chart
writes it (`_components` then `components`, `_patches` then `patches`: templates/units.yaml
lines 274-279 at fd968edc; `{{ .Release.Namespace }}` and the other templates of those units
standing for what the chart gives them), built by kustomize and Flux's substitution and checked
(sylva-render/units.py says what), and no object applied by two of them; and the kubewarden
unit's driftDetection.ignore paths, applied as helm-controller applies them (sylva-render/flux.py,
ignored_by), against what admission-controller renders and kubewarden-controller rotates.

With CHART_DIR:

CHART_DIR is sylva-core's charts/sylva-units, with the sylva-library archive it carries in its
charts/ folder (CONTRIBUTING.md, "Sylva", says how to get it). Nothing of Sylva is in this
repository. The engine is Helm 4's, from the Python package helm-python-sdk
(`Chart.load(...).render`, which validates the values against the chart's schema first); the
Makefile installs it under target/tools/.

Each value set is merged as Flux helm-controller merges a HelmRelease's values (valuesFiles in
order, then valuesFrom, then values; maps merged key by key, the later value winning), in the order
sylva-core at fd968edc gives them:

- bootstrap: values.yaml, management.values.yaml, bootstrap.values.yaml (tools/shell-lib/
  common.sh, inject_bootstrap_values), then the environment values (environment-values/base/
  helm-release.yaml: the sylva-units-values ConfigMap), here scripts/sylva-render/environment.yaml
  and examples/sylva/values.yaml;
- management, before the pivot: as management, with `cluster` and `cluster-bmh` disabled, as the
  bootstrap cluster's management-sylva-units unit installs it (bootstrap.values.yaml, lines
  383-394) until the pivot job enables them (lines 484-486);
- management: values.yaml, management.values.yaml, the environment values;
- workload cluster, release namespace edge-a: values.yaml, workload-cluster.values.yaml, the
  mgmt-cluster-state-values the management render writes (environment-values/workload-clusters/
  base/patch-helm-release.yaml lists it first in valuesFrom), the environment values and
  examples/sylva/workload-cluster.values.yaml.

Each value set is rendered on two shapes of Sylva: the chart as given (fd968edc, with
refresh-metal3machinetemplates, so examples/sylva/refresh-metal3machinetemplates.values.yaml is
added after values.yaml), and the same chart with that unit removed from management.values.yaml
and drift detection on for the `cluster` HelmRelease, as sylva-core MR 4758 left it (values.yaml
alone; with the refresh file added, that render must fail, as it does on such a Sylva).

Then it checks that this project's units are where they belong and in the order
docs/operations.md ("Sylva") gives, builds each rendered unit whose source is this project as
Flux does (as above, from its rendered spec; no object applied by two of them), prints the units of each render with their
dependsOn, and exits 1 if any check fails. The closing line counts the checks.
"""

import copy
import re
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True  # no __pycache__ in scripts/sylva-render
sys.path.insert(0, str(ROOT / "scripts/sylva-render"))
import flux  # noqa: E402
import units as unit_checks  # noqa: E402

ENVIRONMENT = ROOT / "scripts/sylva-render/environment.yaml"
MANAGEMENT = ROOT / "examples/sylva/values.yaml"
REFRESH_OFF = ROOT / "examples/sylva/refresh-metal3machinetemplates.values.yaml"
WORKLOAD = ROOT / "examples/sylva/workload-cluster.values.yaml"
SOURCE = "capi-template-guard"
REFRESH = "refresh-metal3machinetemplates"

OURS = (
    "kubewarden",
    "capi-template-guard",
    "capi-template-guard-monitoring",
    "capi-template-guard-prepare",
    "capi-template-guard-ready",
)
REPLACED = ("cluster-garbage-collector", REFRESH)
# template-cleanup, in the guard's unit: examples/cleanup applies the main guard too, so a unit of
# its own would be a second owner of it (examples/cleanup/kustomization.yaml).
CLEANUP = ["cleanup/component", "cleanup/helm"]


class CheckFailed(Exception):
    pass


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def merge(base, over):
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render(chart, name, layers, namespace):
    """The chart's Kustomizations for one value set, by name; raises CheckFailed if it fails."""
    values = {}
    for layer in layers:
        values = merge(values, layer)
    started = time.monotonic()
    try:
        out = chart.render(values, name="sylva-units", namespace=namespace, is_install=True)
    except Exception as error:  # the SDK's errors carry Helm's message
        raise CheckFailed(f"{name}: the chart does not render: {error}") from error
    seconds = time.monotonic() - started
    docs = [d for d in yaml.safe_load_all(out.get("sylva-units/templates/units.yaml", "")) if d]
    units = {
        d["metadata"]["name"]: d for d in docs if d.get("kind") == "Kustomization"
    }
    return units, seconds


def depends_on(unit):
    return sorted(d["name"] for d in unit["spec"].get("dependsOn", []))


def helmrelease_spec(unit):
    """The HelmRelease spec Sylva writes into a Helm unit's Kustomization as a JSON patch."""
    for patch in unit["spec"].get("patches", []):
        if patch.get("target", {}).get("kind") != "HelmRelease":
            continue
        for op in yaml.safe_load(patch["patch"]) or []:
            if op.get("path") == "/spec":
                return op["value"]
    return None


def substitutions(unit):
    return unit["spec"].get("postBuild", {}).get("substitute", {})


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)


def check_cluster(units, renderer, name, allowed=()):
    expect("cluster" in units, f"{name}: no `cluster` unit")
    spec = helmrelease_spec(units["cluster"])
    expect(spec is not None, f"{name}: the `cluster` unit renders no HelmRelease")
    wanted = renderer["units"]["cluster"]["helmrelease_spec"]["postRenderers"]
    got = spec.get("postRenderers", [])
    expect(
        got[-len(wanted):] == wanted,
        f"{name}: the `cluster` HelmRelease does not end its postRenderers with ours: {got}",
    )
    expect(
        not any(d in OURS and d not in allowed for d in depends_on(units["cluster"])),
        f"{name}: `cluster` waits for a unit of this project: {depends_on(units['cluster'])}",
    )


def check_absent(units, names, name):
    present = [n for n in names if n in units]
    expect(not present, f"{name}: units that do not belong here: {present}")


def report(name, units, seconds):
    print(f"{name}: rendered in {seconds:.1f} s, {len(units)} units", flush=True)
    for unit in (*OURS, "cluster", *REPLACED):
        if unit in units:
            line = f"  {unit}: dependsOn {', '.join(depends_on(units[unit])) or 'nothing'}"
            subst = substitutions(units[unit])
            if unit == "capi-template-guard-prepare":
                line += (
                    f"; NAMESPACE={subst.get('NAMESPACE')} RELEASE={subst.get('RELEASE')}"
                    f" METAL3_TEMPLATES={subst.get('METAL3_TEMPLATES')}"
                    f" components={units[unit]['spec'].get('components')}"
                )
            print(line, flush=True)
        else:
            print(f"  {unit}: not rendered")


# The templates of this project's units, and what the chart gives them, for the units' own folders.
JOB_CHECKSUM = "0" * 63 + "1"
IF_ELSE = re.compile(r"^\{\{ if .* \}\}([-\w]+)\{\{ else \}\}([-\w]+)\{\{ end \}\}$")


def standin(value, namespace, metal3_templates):
    """A unit's value with its templates replaced as the chart would render them for a release in
    `namespace`; None for a `set-only-if` list item the chart would drop."""
    if isinstance(value, dict):
        return {k: standin(v, namespace, metal3_templates) for k, v in value.items()}
    if isinstance(value, list):
        items = [standin(v, namespace, metal3_templates) for v in value]
        return [v for v in items if v is not None]
    if not isinstance(value, str) or "{{" not in value:
        return value
    if '"set-only-if"' in value and '"refresh"' in value:
        return "refresh" if metal3_templates == "refresh" else None
    if "sha256sum" in value:
        return JOB_CHECKSUM
    choice = IF_ELSE.match(value)
    if choice:  # the refresh condition: first install with Metal3, on a Sylva with the refresh
        return choice.group(1) if metal3_templates == "refresh" else choice.group(2)
    out = value.replace("{{ .Release.Namespace }}", namespace)
    if "{{" in out:
        raise CheckFailed(f"a template the units' folder check does not know: {value}")
    return out


def folder_specs(values, namespace, metal3_templates):
    """Each unit of a values file whose source is this project: its Kustomization spec as the
    chart writes it (templates/units.yaml lines 274-299 at fd968edc)."""
    specs = {}
    for name, unit in (values.get("units") or {}).items():
        if unit.get("repo") != SOURCE:
            continue
        k = standin(copy.deepcopy(unit.get("kustomization_spec") or {}), namespace, metal3_templates)
        spec = {key: v for key, v in k.items() if not key.startswith("_")}
        spec["components"] = (k.get("_components") or []) + (k.get("components") or [])
        spec["patches"] = (k.get("_patches") or []) + (k.get("patches") or [])
        spec["sourceRef"] = {"kind": "GitRepository", "name": SOURCE}
        specs[name] = spec
    return specs


def check_folders(results, evaluate):
    management, workload = load(MANAGEMENT), load(WORKLOAD)
    for label, values, namespace, metal3 in (
        ("management, refreshing", management, "sylva-system", "refresh"),
        ("management, keeping", management, "sylva-system", "keep"),
        ("workload cluster edge-a", workload, "edge-a", "keep"),
    ):
        try:
            specs = folder_specs(values, namespace, metal3)
        except CheckFailed as failure:
            results.check(False, f"units' folders, {label}: {failure}")
            continue
        owners = {}
        for name, spec in specs.items():
            objects = unit_checks.check_unit(results, f"units' folders, {label}: {name}", spec, ROOT,
                                             evaluate=evaluate)
            print(f"units' folders, {label}: {name}: {len(objects or [])} objects built", flush=True)
            for obj in objects or []:
                owners.setdefault(unit_checks.where(obj), []).append(name)
        shared = {obj: names for obj, names in owners.items() if len(names) > 1}
        results.check(not shared, f"units' folders, {label}: objects applied by two units: {shared}")


# The namespaces this project's units apply to that another unit creates: capi-system by Sylva's
# `capi` unit (Cluster API's core-components.yaml, kustomize-units/capi at fd968edc), kubewarden by
# the `kubewarden` unit (install.createNamespace). sylva-system is the releases' own.
NAMESPACE_CREATORS = {"capi-system": "capi", "kubewarden": "kubewarden"}


def waits_for(units, unit_name):
    """Every unit that unit_name depends on, directly or not."""
    seen, todo = set(), [unit_name]
    while todo:
        for dep in depends_on(units.get(todo.pop(), {"spec": {}})):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def check_rendered_builds(results, name, units, evaluate):
    """Each rendered unit whose source is this project, built as Flux builds it, after the unit
    that creates each namespace it applies to, and the only one of them that applies its objects
    (two Flux Kustomizations that apply one object undo each other's version of it)."""
    owners = {}
    for unit_name, unit in sorted(units.items()):
        if (unit["spec"].get("sourceRef") or {}).get("name") != SOURCE:
            continue
        label = f"{name}: {unit_name}"
        objects = unit_checks.check_unit(results, label, unit["spec"], ROOT, evaluate=evaluate)
        for obj in objects or []:
            owners.setdefault(unit_checks.where(obj), []).append(unit_name)
        before = waits_for(units, unit_name)
        for ns in sorted({(o.get("metadata") or {}).get("namespace") for o in objects or []} - {None}):
            creator = NAMESPACE_CREATORS.get(ns)
            if creator and creator != unit_name:
                results.check(creator in before,
                              f"{label}: applies to namespace {ns} without waiting for {creator}, "
                              "which creates it")
    shared = {obj: names for obj, names in owners.items() if len(names) > 1}
    results.check(not shared, f"{name}: objects applied by two units: {shared}")

# What admission-controller renders that kubewarden-controller rotates, as the chart renders it
# (kubewarden/helm-charts 148b1a90, charts/admission-controller/templates/controller/webhooks.yaml:
# the two Secrets, then 4 mutating and 5 validating webhooks, each with clientConfig.caBundle).
def _webhooks(kind, name, count):
    return {"kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": f"w{i}.kb.io", "clientConfig": {"caBundle": "Cg==", "service": {}}}
                         for i in range(count)]}


ROTATED = [
    {"kind": "Secret", "metadata": {"name": "kubewarden-ca"},
     "data": {"ca.crt": "Cg==", "ca.key": "Cg==", "old-ca.crt": "Cg=="}},
    {"kind": "Secret", "metadata": {"name": "kubewarden-webhook-server-cert"},
     "data": {"tls.crt": "Cg==", "tls.key": "Cg=="}},
    _webhooks("MutatingWebhookConfiguration", "kubewarden-controller-mutating-webhook-configuration", 4),
    _webhooks("ValidatingWebhookConfiguration", "kubewarden-controller-validating-webhook-configuration", 5),
]


def check_drift_ignore(results, rules):
    """The kubewarden unit's driftDetection.ignore, as helm-controller applies it (flux.ignored_by):
    each path removes something from the object its target names, and every rotated field is
    removed (each Secret's data, each webhook's caBundle)."""
    for bad, good in (("/webhooks[0]/clientConfig/caBundle", "/webhooks/0/clientConfig/caBundle"),):
        results.check(not flux.ignored_by(ROTATED[3], bad) and flux.ignored_by(ROTATED[3], good),
                      f"drift ignore: {bad} (V's monitoring unit's shape) must ignore nothing, {good} "
                      "the first webhook's caBundle")
    removed = {}
    for rule in rules:
        target = rule.get("target") or {}
        objects = [o for o in ROTATED if o["kind"] == target.get("kind")
                   and o["metadata"]["name"] == target.get("name")]
        if not results.check(len(objects) == 1, f"drift ignore: {target} names none of {[unit_checks.where(o) for o in ROTATED]}"):
            continue
        for path in rule.get("paths") or []:
            results.check(flux.ignored_by(objects[0], path),
                          f"drift ignore: {path} removes nothing from {unit_checks.where(objects[0])}: "
                          "helm-controller skips it silently and puts the rotated value back")
            removed.setdefault(unit_checks.where(objects[0]), set()).add(path)
    for obj in ROTATED:
        wanted = ({"/data"} if obj["kind"] == "Secret" else
                  {f"/webhooks/{i}/clientConfig/caBundle" for i in range(len(obj["webhooks"]))})
        got = removed.get(unit_checks.where(obj), set())
        results.check(wanted <= got, f"drift ignore: {unit_checks.where(obj)}: {sorted(wanted - got)} "
                                     "not ignored, so drift correction undoes the controller's rotation")


def main(argv):
    if len(argv) > 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    results = unit_checks.Results()
    unit_checks.selftest(results)
    unit_checks.selftest_trap(results)
    evaluate = flux.cel_evaluator()
    check_folders(results, evaluate)
    check_drift_ignore(results, load(MANAGEMENT)["units"]["kubewarden"]["helmrelease_spec"]
                       ["driftDetection"]["ignore"])
    if len(argv) == 2:
        code = check_chart(results, Path(argv[1]), evaluate)
        if code:
            return code
    else:
        print("sylva-render: no SYLVA_CHART given, so Sylva's chart is not rendered "
              "(CONTRIBUTING.md, \"Sylva\")")
    return 0 if results.close("sylva-render") else 1


def check_chart(results, chart_dir, evaluate):
    for needed in ("Chart.yaml", "values.yaml", "management.values.yaml",
                   "bootstrap.values.yaml", "workload-cluster.values.yaml"):
        if not (chart_dir / needed).is_file():
            print(f"{chart_dir} has no {needed}: give sylva-core's charts/sylva-units",
                  file=sys.stderr)
            return 2
    if not list((chart_dir / "charts").glob("sylva-library-*.tgz")):
        print(f"{chart_dir}/charts holds no sylva-library archive", file=sys.stderr)
        return 2
    from helm_python import Chart

    chart = Chart.load(str(chart_dir))
    mgmt_file = load(chart_dir / "management.values.yaml")
    if REFRESH not in (mgmt_file.get("units") or {}):
        print(f"{chart_dir}: management.values.yaml has no {REFRESH}; give sylva-core fd968edc's "
              "chart, and the check derives the shape without it", file=sys.stderr)
        return 2
    # The shape of sylva-core after MR 4758: the unit gone, drift detection on for `cluster`.
    without = copy.deepcopy(mgmt_file)
    del without["units"][REFRESH]
    drift = {"units": {"cluster": {"helmrelease_spec": {"driftDetection": {"mode": "enabled"}}}}}
    for shape, mgmt, ours in (
        ("fd968edc", [mgmt_file], [load(MANAGEMENT), load(REFRESH_OFF)]),
        (f"fd968edc without {REFRESH}", [without, drift], [load(MANAGEMENT)]),
    ):
        check_shape(results, chart, chart_dir, shape, mgmt, ours, evaluate)
    try:
        render(chart, "refused", [without, drift, load(ENVIRONMENT), load(MANAGEMENT),
                                   load(REFRESH_OFF)], "sylva-system")
        refused = False
    except CheckFailed:
        refused = True
    results.check(refused, f"without {REFRESH}, an entry for it must fail the render, as Sylva's "
                           "test-values/unit-name-typo expects: keep it out of values.yaml")
    return 0


def check_shape(results, chart, chart_dir, shape, mgmt, ours, evaluate):
    environment = load(ENVIRONMENT)
    management = load(MANAGEMENT)
    workload = load(WORKLOAD)
    before_pivot = {"units": {"cluster": {"enabled": False}, "cluster-bmh": {"enabled": False}}}
    refreshing = shape == "fd968edc"
    state = None
    for name, layers, namespace in (
        ("bootstrap", mgmt + [load(chart_dir / "bootstrap.values.yaml"), environment] + ours,
         "sylva-system"),
        ("management, before the pivot", mgmt + [environment] + ours + [before_pivot], "sylva-system"),
        ("management", mgmt + [environment] + ours, "sylva-system"),
        ("workload cluster edge-a", None, "edge-a"),
    ):
        name = f"{shape}: {name}"
        try:
            if layers is None:
                expect(state is not None, f"{name}: no management state to start from")
                layers = [load(chart_dir / "workload-cluster.values.yaml"), state, environment, workload]
            units, seconds = render(chart, name, layers, namespace)
            report(name, units, seconds)
            if name.endswith(": bootstrap"):
                check_cluster(units, management, name)
                check_absent(units, OURS + REPLACED, name)
            elif name.endswith("before the pivot"):
                check_before_pivot(units, name)
            elif name.endswith(": management"):
                check_management(units, management, name, refreshing)
                state = mgmt_cluster_state_values(units)
            else:
                check_workload(units, management, name)
            results.check(True, f"{name}: renders and holds")
            check_rendered_builds(results, name, units, evaluate)
        except CheckFailed as failure:
            results.check(False, str(failure))


def check_before_pivot(units, name):
    check_absent(units, ("cluster", "capi-template-guard-prepare", "capi-template-guard-ready")
                 + REPLACED, name)
    for unit in ("kubewarden", "capi-template-guard"):
        expect(unit in units, f"{name}: no {unit} unit")
    guard = depends_on(units["capi-template-guard"])
    expect("kubewarden" in guard and "capi" in guard and "cluster" not in guard
           and "capi-template-guard-prepare" not in guard,
           f"{name}: capi-template-guard must wait for kubewarden and capi, not cluster: {guard}")


def check_management(units, management, name, refreshing):
    check_cluster(units, management, name)
    check_absent(units, REPLACED + ("capi-template-guard-ready",), name)
    for unit in OURS[:-1]:
        expect(unit in units, f"{name}: no {unit} unit")
    guard = depends_on(units["capi-template-guard"])
    for dep in ("kubewarden", "capi", "cluster", "capi-template-guard-prepare"):
        expect(dep in guard, f"{name}: capi-template-guard does not wait for {dep}: {guard}")
    expect("cluster" in depends_on(units["capi-template-guard-prepare"]),
           f"{name}: capi-template-guard-prepare does not wait for cluster")
    expect(units["capi-template-guard"]["spec"].get("components") == CLEANUP,
           f"{name}: capi-template-guard must apply template-cleanup with its components "
           f"{CLEANUP}: {units['capi-template-guard']['spec'].get('components')}")
    expect("monitoring" in depends_on(units["capi-template-guard-monitoring"]),
           f"{name}: capi-template-guard-monitoring does not wait for monitoring")
    prepare = units["capi-template-guard-prepare"]["spec"]
    subst = substitutions(units["capi-template-guard-prepare"])
    expect(subst.get("RELEASE") == helmrelease_spec(units["cluster"]).get("releaseName"),
           f"{name}: capi-template-guard-prepare names another release than `cluster`'s")
    want = ("refresh", ["refresh"]) if refreshing else ("keep", [])
    expect((subst.get("METAL3_TEMPLATES"), prepare.get("components")) == want
           and subst.get("NAMESPACE") == "sylva-system",
           f"{name}: capi-template-guard-prepare must have METAL3_TEMPLATES and components "
           f"{want} in sylva-system: {subst}, {prepare.get('components')}")
    spec = helmrelease_spec(units["kubewarden"])
    drift = spec.get("driftDetection") or {}
    wanted = management["units"]["kubewarden"]["helmrelease_spec"]["driftDetection"]["ignore"]
    expect(drift.get("mode") == "enabled" and all(rule in drift.get("ignore", []) for rule in wanted),
           f"{name}: the kubewarden HelmRelease must keep drift detection on with our ignore rules: {drift}")


def check_workload(units, management, name):
    # The post-renderer reaches each workload release through mgmt_cluster_state_values alone.
    check_cluster(units, management["mgmt_cluster_state_values"], name,
                  allowed=("capi-template-guard-ready",))
    check_absent(units, tuple(u for u in OURS if u not in ("capi-template-guard-prepare",
                                                            "capi-template-guard-ready"))
                 + REPLACED, name)
    for unit in ("capi-template-guard-prepare", "capi-template-guard-ready", "mgmt-cluster-ready"):
        expect(unit in units, f"{name}: no {unit}")
    subst = substitutions(units["capi-template-guard-prepare"])
    expect(subst.get("RELEASE") == helmrelease_spec(units["cluster"]).get("releaseName"),
           f"{name}: capi-template-guard-prepare names another release than `cluster`'s")
    expect(subst.get("METAL3_TEMPLATES") == "keep" and subst.get("NAMESPACE") == "edge-a"
           and not units["capi-template-guard-prepare"]["spec"].get("components"),
           f"{name}: capi-template-guard-prepare must only keep and label, in edge-a: {subst}")
    cluster = depends_on(units["cluster"])
    expect("capi-template-guard-ready" in cluster and "mgmt-cluster-ready" in cluster,
           f"{name}: `cluster` must wait for capi-template-guard-ready and mgmt-cluster-ready: {cluster}")
    ready = units["capi-template-guard-ready"]["spec"]
    expect(ready.get("healthChecks") == [{"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                                          "kind": "Kustomization", "name": "capi-template-guard",
                                          "namespace": "sylva-system"}]
           and not ready.get("kubeConfig") and not ready.get("wait"),
           f"{name}: capi-template-guard-ready must health-check sylva-system/capi-template-guard "
           f"on the management cluster: {ready}")
    status = units["mgmt-cluster-ready"]["spec"].get("healthChecks") or []
    expect(any(c.get("kind") == "ConfigMap" and c.get("name") == "sylva-units-status" for c in status),
           f"{name}: mgmt-cluster-ready no longer waits for sylva-units-status: {status}")


def mgmt_cluster_state_values(units):
    """The values the management cluster hands to workload clusters' releases: the ConfigMap the
    mgmt-cluster-state-values unit writes (sylva-core values.yaml, that unit's _patches)."""
    unit = units.get("mgmt-cluster-state-values")
    expect(unit is not None, "management: no mgmt-cluster-state-values unit")
    for patch in unit["spec"].get("patches", []):
        for op in yaml.safe_load(patch.get("patch", "")) or []:
            if isinstance(op, dict) and op.get("path") == "/data/values":
                return yaml.safe_load(op["value"]) or {}
    raise CheckFailed("management: mgmt-cluster-state-values writes no values")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
