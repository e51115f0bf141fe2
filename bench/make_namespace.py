#!/usr/bin/env python3
"""Writes a large namespace for the benchmark into DIR (default target/bench/): a DELETE request
for a Metal3MachineTemplate with nodeReuse, and a replay session whose lists hold
N_MACHINES Metal3Machines, N_SETS MachineSets and N_SETS/10 MachineDeployments, shaped as the
policy server returns them (metadata plus the masked fields). The template is referenced by the
last MachineSet and the last Metal3Machine only, so every object is looked at.
"""
import json
import pathlib
import sys
import zlib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "test_data"))
import make_cases as cases  # noqa: E402

N_MACHINES, N_SETS = 10_000, 1_000
V2 = cases.V2


def meta(name, **extra):
    m = {"name": name, "namespace": cases.NS, "uid": f"00000000-0000-4000-8000-{zlib.crc32(name.encode()):012d}",
         "resourceVersion": "12345", "creationTimestamp": "2026-11-01T00:00:00Z",
         "labels": {"cluster.x-k8s.io/cluster-name": "edge-a", "cluster.x-k8s.io/deployment-name": "md"}}
    m.update(extra)
    return m


def ref(kind, group, name):
    return {"apiGroup": group, "kind": kind, "name": name}


def machine_set(i, template):
    return {"apiVersion": f"{cases.CAPI}/{V2}", "kind": "MachineSet", "metadata": meta(f"ms-{i:05d}"),
            "spec": {"replicas": 1, "template": {"spec": {
                "infrastructureRef": ref("Metal3MachineTemplate", cases.INFRA, template),
                "bootstrap": {"configRef": ref("KubeadmConfigTemplate", cases.BOOT, f"kct-{i:05d}")}}}},
            "status": {"replicas": 1}}


def machine_deployment(i):
    return {"apiVersion": f"{cases.CAPI}/{V2}", "kind": "MachineDeployment", "metadata": meta(f"md-{i:05d}"),
            "spec": {"template": {"spec": {
                "infrastructureRef": ref("Metal3MachineTemplate", cases.INFRA, f"tpl-md-{i:05d}"),
                "bootstrap": {"configRef": ref("KubeadmConfigTemplate", cases.BOOT, f"kct-md-{i:05d}")}}}}}


def metal3_machine(i, template):
    return {"apiVersion": f"{cases.INFRA}/{V2}", "kind": "Metal3Machine",
            "metadata": meta(f"m3m-{i:05d}", annotations={
                "cluster.x-k8s.io/cloned-from-name": template,
                "cluster.x-k8s.io/cloned-from-groupkind": "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io",
                "metal3.io/BareMetalHost": f"{cases.NS}/host-{i:05d}"},
                finalizers=["metal3machine.infrastructure.cluster.x-k8s.io"])}


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/bench")
    out.mkdir(parents=True, exist_ok=True)
    target = "edge-a-workers-bench"
    template = cases.with_meta(cases.tpl_workers2, name=target, ownerReferences=[])
    sets = [machine_set(i, f"tpl-{i:05d}") for i in range(N_SETS - 1)] + [machine_set(N_SETS - 1, target)]
    machines = [metal3_machine(i, f"tpl-{i % N_SETS:05d}") for i in range(N_MACHINES - 1)]
    machines.append(metal3_machine(N_MACHINES - 1, target))
    session = cases.infra_lists(V2, md=[machine_deployment(i) for i in range(N_SETS // 10)], ms=sets,
                                kcp=[], rke2=[], m3m=machines)
    (out / "request.json").write_text(json.dumps(cases.delete(template)))
    (out / "settings.json").write_text(json.dumps(cases.V2_SETTINGS))
    cases.yaml.SafeDumper.add_representer(str, cases.literal_blocks)
    (out / "session.yml").write_text(cases.yaml.safe_dump(session, sort_keys=False, width=1 << 30))
    size = sum(len(c["response"]["payload"]) for c in session)
    print(f"{out}: {N_MACHINES} Metal3Machines, {N_SETS} MachineSets, {N_SETS // 10} MachineDeployments, "
          f"{size / 1e6:.1f} MB of list answers")


if __name__ == "__main__":
    main()
