#!/usr/bin/env python3
"""Render examples/sylva through Sylva's own chart, with Helm 4's engine, and check the units.

Usage: sylva-render.py CHART_DIR   (`make sylva-render SYLVA_CHART=<sylva-core>/charts/sylva-units`)

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

Then it checks that this project's units are where they belong and in the order
docs/operations.md ("Sylva") gives, prints the units of each render, and exits 1 on the first
render that fails or check that does not hold.
"""

import copy
import sys
import time
from pathlib import Path

import yaml
from helm_python import Chart

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT = ROOT / "scripts/sylva-render/environment.yaml"
MANAGEMENT = ROOT / "examples/sylva/values.yaml"
WORKLOAD = ROOT / "examples/sylva/workload-cluster.values.yaml"

OURS = (
    "kubewarden",
    "capi-template-guard",
    "capi-template-cleanup",
    "capi-template-guard-monitoring",
    "capi-template-guard-prepare",
)
REPLACED = ("cluster-garbage-collector", "refresh-metal3machinetemplates")


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


def check_cluster(units, renderer, name):
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
        not any(d in OURS for d in depends_on(units["cluster"])),
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
                    f" REFRESH_METAL3_TEMPLATES={subst.get('REFRESH_METAL3_TEMPLATES')}"
                )
            print(line, flush=True)
        else:
            print(f"  {unit}: not rendered")


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    chart_dir = Path(argv[1])
    for needed in ("Chart.yaml", "values.yaml", "management.values.yaml",
                   "bootstrap.values.yaml", "workload-cluster.values.yaml"):
        if not (chart_dir / needed).is_file():
            print(f"{chart_dir} has no {needed}: give sylva-core's charts/sylva-units",
                  file=sys.stderr)
            return 2
    if not list((chart_dir / "charts").glob("sylva-library-*.tgz")):
        print(f"{chart_dir}/charts holds no sylva-library archive", file=sys.stderr)
        return 2

    chart = Chart.load(str(chart_dir))
    environment = load(ENVIRONMENT)
    management, workload = load(MANAGEMENT), load(WORKLOAD)
    mgmt_file = load(chart_dir / "management.values.yaml")
    before_pivot = {"units": {"cluster": {"enabled": False}, "cluster-bmh": {"enabled": False}}}

    try:
        name = "bootstrap"
        units, seconds = render(chart, name, [
            mgmt_file, load(chart_dir / "bootstrap.values.yaml"), environment, management,
        ], "sylva-system")
        report(name, units, seconds)
        check_cluster(units, management, name)
        check_absent(units, OURS + REPLACED, name)

        name = "management, before the pivot"
        units, seconds = render(chart, name, [mgmt_file, environment, management, before_pivot],
                                "sylva-system")
        report(name, units, seconds)
        check_absent(units, ("cluster", "capi-template-guard-prepare") + REPLACED, name)
        for unit in ("kubewarden", "capi-template-guard", "capi-template-cleanup"):
            expect(unit in units, f"{name}: no {unit} unit")
        guard = depends_on(units["capi-template-guard"])
        expect("kubewarden" in guard and "cluster" not in guard
               and "capi-template-guard-prepare" not in guard,
               f"{name}: capi-template-guard must wait for kubewarden, not cluster: {guard}")

        name = "management"
        units, seconds = render(chart, name, [mgmt_file, environment, management], "sylva-system")
        report(name, units, seconds)
        check_cluster(units, management, name)
        check_absent(units, REPLACED, name)
        for unit in OURS:
            expect(unit in units, f"{name}: no {unit} unit")
        guard = depends_on(units["capi-template-guard"])
        for dep in ("kubewarden", "cluster", "capi-template-guard-prepare"):
            expect(dep in guard, f"{name}: capi-template-guard does not wait for {dep}: {guard}")
        expect("cluster" in depends_on(units["capi-template-guard-prepare"]),
               f"{name}: capi-template-guard-prepare does not wait for cluster")
        expect("capi-template-guard" in depends_on(units["capi-template-cleanup"]),
               f"{name}: capi-template-cleanup does not wait for the guard")
        expect("monitoring" in depends_on(units["capi-template-guard-monitoring"]),
               f"{name}: capi-template-guard-monitoring does not wait for monitoring")
        subst = substitutions(units["capi-template-guard-prepare"])
        expect(subst.get("RELEASE") == helmrelease_spec(units["cluster"]).get("releaseName"),
               f"{name}: capi-template-guard-prepare names another release than `cluster`'s")
        expect(subst.get("REFRESH_METAL3_TEMPLATES") == "true"
               and subst.get("NAMESPACE") == "sylva-system",
               f"{name}: capi-template-guard-prepare must refresh in sylva-system: {subst}")
        state = mgmt_cluster_state_values(units)

        name = "workload cluster edge-a"
        units, seconds = render(chart, name, [
            load(chart_dir / "workload-cluster.values.yaml"), state, environment, workload,
        ], "edge-a")
        report(name, units, seconds)
        check_cluster(units, workload, name)
        check_absent(units, tuple(u for u in OURS if u != "capi-template-guard-prepare")
                     + REPLACED, name)
        expect("capi-template-guard-prepare" in units, f"{name}: no capi-template-guard-prepare")
        subst = substitutions(units["capi-template-guard-prepare"])
        expect(subst.get("RELEASE") == helmrelease_spec(units["cluster"]).get("releaseName"),
               f"{name}: capi-template-guard-prepare names another release than `cluster`'s")
        expect(subst.get("REFRESH_METAL3_TEMPLATES") == "false"
               and subst.get("NAMESPACE") == "edge-a",
               f"{name}: capi-template-guard-prepare must only label, in edge-a: {subst}")
    except CheckFailed as failure:
        print(f"sylva-render: FAILED: {failure}", file=sys.stderr)
        return 1
    print("sylva-render: all four renders hold")
    return 0


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
