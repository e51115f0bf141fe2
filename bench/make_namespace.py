#!/usr/bin/env python3
"""Writes a large namespace for `make bench` into DIR (default target/bench/ns-10000):

- objects-v1beta2.json (and objects-v1beta1.json with --v1beta1): {"namespace": NS, "kinds":
  {Kind: [object, ...]}}, whole objects as the API server returns them at that version (metadata,
  spec and status, no managedFields: the policy server's reflectors strip them). The bench host
  applies the field masks the policy sends, so masked and unmasked answers come from the same
  objects.
- request-delete.json: DELETE of a nodeReuse Metal3MachineTemplate owned by a live Cluster, named
  only by the last MachineSet and the last Metal3Machine, so every object is looked at;
- request-create.json: CREATE of a Metal3Machine cloned from that template (the mutation);
- request-ignored.json: UPDATE of the template (CAPI patches templates all the time; no lookup).

The namespace holds N Metal3Machines, N/10 MachineSets, N/100 MachineDeployments and as many
KubeadmControlPlanes and Clusters, 3 ClusterClasses and no RKE2ControlPlane (the provider is
installed, the list is empty). Shapes follow CAPI 1.11, CAPM3 1.13 (v1beta2) and their v1beta1
predecessors.
"""
import argparse
import json
import pathlib
import zlib

NS = "edge-sites"
CAPI, CP, INFRA, BOOT = ("cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
                         "infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io")
V1, V2 = "v1beta1", "v1beta2"
TARGET = "edge-a-workers-bench"
TS = "2026-11-01T08:00:00Z"
GROUPKIND = "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"


def uid(name):
    return f"00000000-0000-4000-8000-{zlib.crc32(name.encode()):012d}"


def meta(name, labels, annotations=None, owners=(), finalizers=None, generation=1):
    m = {"name": name, "namespace": NS, "uid": uid(name), "resourceVersion": str(100000 + zlib.crc32(name.encode()) % 900000),
         "generation": generation, "creationTimestamp": TS, "labels": labels}
    if annotations:
        m["annotations"] = annotations
    if owners:
        m["ownerReferences"] = [dict(o) for o in owners]
    if finalizers:
        m["finalizers"] = finalizers
    return m


def owner(api_version, kind, name, controller=True):
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid(name), "controller": controller,
            "blockOwnerDeletion": True}


def ref(v, group, kind, name):
    """v1beta2 ContractVersionedObjectReference (apiGroup) or v1beta1 ObjectReference (apiVersion)."""
    if v == V2:
        return {"apiGroup": group, "kind": kind, "name": name}
    return {"apiVersion": f"{group}/{V1}", "kind": kind, "name": name, "namespace": NS}


def conditions(v, kinds):
    if v == V2:
        return [{"type": k, "status": "True", "observedGeneration": 1, "lastTransitionTime": TS, "reason": k,
                 "message": ""} for k in kinds]
    return [{"type": k, "status": "True", "lastTransitionTime": TS} for k in kinds]


def cluster_of(i):
    return f"edge-{i:04d}"


def machine_spec(v, cluster, infra_template, boot_template):
    spec = {"clusterName": cluster, "version": "v1.32.8",
            "bootstrap": {"configRef": ref(v, BOOT, "KubeadmConfigTemplate", boot_template)},
            "infrastructureRef": ref(v, INFRA, "Metal3MachineTemplate", infra_template)}
    if v == V2:
        spec["deletion"] = {"nodeDrainTimeoutSeconds": 600, "nodeDeletionTimeoutSeconds": 10}
    else:
        spec["nodeDrainTimeout"] = "10m0s"
        spec["nodeDeletionTimeout"] = "10s"
    return spec


def replica_status(v, n, kinds):
    s = {"replicas": n, "readyReplicas": n, "availableReplicas": n, "observedGeneration": 1,
         "selector": "cluster.x-k8s.io/cluster-name=edge,cluster.x-k8s.io/deployment-name=md"}
    if v == V2:
        s["upToDateReplicas"] = n
        s["conditions"] = conditions(V2, kinds)
        s["deprecated"] = {"v1beta1": {"conditions": conditions(V1, ["Ready", "MachinesReady"]),
                                       "readyReplicas": n, "availableReplicas": n, "unavailableReplicas": 0}}
    else:
        s["fullyLabeledReplicas"] = n
        s["conditions"] = conditions(V1, ["Ready", "MachinesReady", "MachinesCreated", "Resized"])
        s["v1beta2"] = {"conditions": conditions(V2, kinds), "readyReplicas": n, "upToDateReplicas": n}
    return s


def machine_deployment(v, i):
    c = cluster_of(i)
    labels = {"cluster.x-k8s.io/cluster-name": c, "topology.cluster.x-k8s.io/owned": ""}
    tmpl_labels = dict(labels, **{"cluster.x-k8s.io/deployment-name": f"{c}-md-0"})
    spec = {"clusterName": c, "replicas": 10, "selector": {"matchLabels": tmpl_labels},
            "template": {"metadata": {"labels": tmpl_labels},
                         "spec": machine_spec(v, c, f"{c}-workers-cur", f"{c}-kct-cur")}}
    if v == V2:
        spec["rollout"] = {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}
    else:
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
        spec["revisionHistoryLimit"] = 1
        spec["minReadySeconds"] = 0
    return {"apiVersion": f"{CAPI}/{v}", "kind": "MachineDeployment",
            "metadata": meta(f"{c}-md-0", labels, {"machinedeployment.clusters.x-k8s.io/revision": "3"},
                             [owner(f"{CAPI}/{v}", "Cluster", c, controller=False)]),
            "spec": spec, "status": dict(replica_status(v, 10, ["Available", "MachinesReady", "MachinesUpToDate",
                                                                "RollingOut", "ScalingUp", "Ready"]),
                                         phase="Running")}


def machine_set(v, i, infra_template):
    c = cluster_of(i // 10)
    name = f"{c}-md-0-{i:06d}"
    labels = {"cluster.x-k8s.io/cluster-name": c, "cluster.x-k8s.io/deployment-name": f"{c}-md-0",
              "machine-template-hash": str(zlib.crc32(name.encode()))}
    return {"apiVersion": f"{CAPI}/{v}", "kind": "MachineSet",
            "metadata": meta(name, labels, {"machinedeployment.clusters.x-k8s.io/desired-replicas": "10",
                                            "machinedeployment.clusters.x-k8s.io/max-replicas": "11",
                                            "machinedeployment.clusters.x-k8s.io/revision": "3"},
                             [owner(f"{CAPI}/{v}", "MachineDeployment", f"{c}-md-0")]),
            "spec": {"clusterName": c, "replicas": 10, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": machine_spec(v, c, infra_template, f"{c}-kct-{i:06d}")}},
            "status": replica_status(v, 10, ["MachinesReady", "MachinesUpToDate", "ScalingUp", "ScalingDown"])}


def metal3_machine(v, i, template):
    name = f"m3m-{i:06d}"
    host = f"host-{i:06d}"
    c = cluster_of(i // 100)
    annotations = {"cluster.x-k8s.io/cloned-from-name": template, "cluster.x-k8s.io/cloned-from-groupkind": GROUPKIND,
                   "metal3.io/BareMetalHost": f"{NS}/{host}"}
    labels = {"cluster.x-k8s.io/cluster-name": c, "cluster.x-k8s.io/deployment-name": f"{c}-md-0",
              "cluster.x-k8s.io/set-name": f"{c}-md-0-{i // 10:06d}"}
    addresses = [{"type": "InternalIP", "address": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"},
                 {"type": "InternalIP", "address": f"fd00::{i:x}"},
                 {"type": "Hostname", "address": host}, {"type": "InternalDNS", "address": host}]
    status = {"ready": True, "lastUpdated": TS, "addresses": addresses,
              "renderedData": {"name": f"{c}-workers-metadata-{i}", "namespace": NS},
              "metaData": {"name": f"{name}-metadata", "namespace": NS},
              "networkData": {"name": f"{name}-networkdata", "namespace": NS},
              "userData": {"name": f"{name}-userdata", "namespace": NS}}
    cond = ["AssociateBMH", "AssociateMetal3MachineMetaData", "KubernetesNodeReady", "Ready"]
    if v == V2:
        status["initialization"] = {"provisioned": True}
        status["conditions"] = conditions(V2, cond)
        status["deprecated"] = {"v1beta1": {"conditions": conditions(V1, cond)}}
    else:
        status["conditions"] = conditions(V1, cond)
        status["v1beta2"] = {"conditions": conditions(V2, cond)}
    return {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3Machine",
            "metadata": meta(name, labels, annotations, [owner(f"{CAPI}/{v}", "Machine", name)],
                             ["metal3machine.infrastructure.cluster.x-k8s.io"]),
            "spec": {"providerID": f"metal3://{NS}/{host}/{name}", "automatedCleaningMode": "disabled",
                     "image": {"url": "https://images.edge.internal/ubuntu-2404-kube-v1.32.8.qcow2",
                               "checksum": "https://images.edge.internal/ubuntu-2404-kube-v1.32.8.qcow2.sha256sum",
                               "checksumType": "sha256", "format": "qcow2"},
                     "hostSelector": {"matchLabels": {"edge.example.org/role": "worker", "edge.example.org/site": c}},
                     "dataTemplate": {"name": f"{c}-workers-metadata"}},
            "status": status}


def control_plane(v, i):
    c = cluster_of(i)
    infra = ref(v, INFRA, "Metal3MachineTemplate", f"{c}-cp-cur")
    files = [{"path": f"/etc/kubernetes/{f}", "owner": "root:root", "permissions": "0644",
              "content": "apiVersion: v1\nkind: Config\n# site defaults\n" * 3} for f in ("audit.yaml", "admission.yaml")]
    kubeadm = {"clusterConfiguration": {"apiServer": {"certSANs": [f"{c}.edge.internal"]},
                                        "controllerManager": {"extraArgs": [{"name": "bind-address", "value": "0.0.0.0"}]}},
               "initConfiguration": {"nodeRegistration": {"name": "{{ ds.meta_data.name }}", "kubeletExtraArgs": [
                   {"name": "node-labels", "value": "metal3.io/uuid={{ ds.meta_data.uuid }}"}]}},
               "joinConfiguration": {"nodeRegistration": {"name": "{{ ds.meta_data.name }}"}},
               "files": files, "preKubeadmCommands": ["systemctl enable --now keepalived"],
               "users": [{"name": "metal3", "sudo": "ALL=(ALL) NOPASSWD:ALL", "sshAuthorizedKeys": ["ssh-ed25519 AAAA"]}]}
    if v == V2:
        mt = {"spec": {"infrastructureRef": infra}}
    else:
        mt = {"infrastructureRef": infra, "nodeDrainTimeout": "10m0s"}
    return {"apiVersion": f"{CP}/{v}", "kind": "KubeadmControlPlane",
            "metadata": meta(f"{c}-cp", {"cluster.x-k8s.io/cluster-name": c}, None,
                             [owner(f"{CAPI}/{v}", "Cluster", c)], ["kubeadm.controlplane.cluster.x-k8s.io"]),
            "spec": {"replicas": 3, "version": "v1.32.8", "machineTemplate": mt, "kubeadmConfigSpec": kubeadm},
            "status": dict(replica_status(v, 3, ["Available", "CertificatesAvailable", "EtcdClusterHealthy",
                                                 "MachinesReady", "Initialized"]), version="v1.32.8")}


def cluster_class(v, i):
    name = f"edge-class-{i}"
    if v == V2:
        spec = {"infrastructure": {"templateRef": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3ClusterTemplate", "name": f"{name}-cluster"}},
                "controlPlane": {"templateRef": {"apiVersion": f"{CP}/{v}", "kind": "KubeadmControlPlaneTemplate", "name": f"{name}-cp"},
                                 "machineInfrastructure": {"templateRef": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3MachineTemplate", "name": f"{name}-cp"}}},
                "workers": {"machineDeployments": [{"class": "default-worker",
                                                    "bootstrap": {"templateRef": {"apiVersion": f"{BOOT}/{v}", "kind": "KubeadmConfigTemplate", "name": f"{name}-w"}},
                                                    "infrastructure": {"templateRef": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3MachineTemplate", "name": f"{name}-w"}}}]}}
    else:
        spec = {"infrastructure": {"ref": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3ClusterTemplate", "name": f"{name}-cluster"}},
                "controlPlane": {"ref": {"apiVersion": f"{CP}/{v}", "kind": "KubeadmControlPlaneTemplate", "name": f"{name}-cp"},
                                 "machineInfrastructure": {"ref": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3MachineTemplate", "name": f"{name}-cp"}}},
                "workers": {"machineDeployments": [{"class": "default-worker", "template": {
                    "bootstrap": {"ref": {"apiVersion": f"{BOOT}/{v}", "kind": "KubeadmConfigTemplate", "name": f"{name}-w"}},
                    "infrastructure": {"ref": {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3MachineTemplate", "name": f"{name}-w"}}}}]}}
    spec["variables"] = [{"name": "image", "required": True, "schema": {"openAPIV3Schema": {"type": "string"}}}]
    return {"apiVersion": f"{CAPI}/{v}", "kind": "ClusterClass", "metadata": meta(name, {}), "spec": spec,
            "status": {"observedGeneration": 1, "conditions": conditions(v, ["VariablesReady", "RefVersionsUpToDate"])}}


def cluster(v, i):
    c = cluster_of(i)
    return {"apiVersion": f"{CAPI}/{v}", "kind": "Cluster",
            "metadata": meta(c, {"cluster.x-k8s.io/cluster-name": c}, None, (), ["cluster.cluster.x-k8s.io"]),
            "spec": {"controlPlaneRef": ref(v, CP, "KubeadmControlPlane", f"{c}-cp"),
                     "infrastructureRef": ref(v, INFRA, "Metal3Cluster", c)},
            "status": {"phase": "Provisioned", "conditions": conditions(v, ["Available", "ControlPlaneAvailable"])}}


def template(v):
    return {"apiVersion": f"{INFRA}/{v}", "kind": "Metal3MachineTemplate",
            "metadata": meta(TARGET, {"cluster.x-k8s.io/cluster-name": cluster_of(0)}, None,
                             [owner(f"{CAPI}/{v}", "Cluster", cluster_of(0), controller=False)]),
            "spec": {"nodeReuse": True, "template": {"spec": {
                "automatedCleaningMode": "metadata",
                "image": {"url": "https://images.edge.internal/ubuntu-2404-kube-v1.32.8.qcow2",
                          "checksum": "https://images.edge.internal/ubuntu-2404-kube-v1.32.8.qcow2.sha256sum",
                          "checksumType": "sha256", "format": "qcow2"},
                "dataTemplate": {"name": "edge-workers-metadata"}}}}}


def namespace(v, n):
    sets = max(n // 10, 1)
    clusters = max(n // 100, 1)
    ms = [machine_set(v, i, f"tpl-{i:06d}") for i in range(sets - 1)] + [machine_set(v, sets - 1, TARGET)]
    m3m = [metal3_machine(v, i, f"tpl-{i % sets:06d}") for i in range(n - 1)] + [metal3_machine(v, n - 1, TARGET)]
    return {"namespace": NS, "kinds": {
        "MachineDeployment": [machine_deployment(v, i) for i in range(clusters)],
        "MachineSet": ms,
        "KubeadmControlPlane": [control_plane(v, i) for i in range(clusters)],
        "RKE2ControlPlane": [],
        "ClusterClass": [cluster_class(v, i) for i in range(3)],
        "Metal3Machine": m3m,
        "Metal3MachineTemplate": [template(v)],
        "Cluster": [cluster(v, i) for i in range(clusters)],
    }}


def request(operation, obj, old):
    o = obj or old
    group, version = o["apiVersion"].split("/")
    kind, name = o["kind"], o["metadata"]["name"]
    plural = kind.lower() + "s"
    return {"uid": f"bench-{operation.lower()}", "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "requestKind": {"group": group, "version": version, "kind": kind},
            "requestResource": {"group": group, "version": version, "resource": plural},
            "name": name, "namespace": NS, "operation": operation,
            "userInfo": {"username": "system:serviceaccount:flux-system:helm-controller",
                         "groups": ["system:serviceaccounts", "system:authenticated"]},
            "object": obj, "oldObject": old, "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"}}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", nargs="?", default="target/bench/ns-10000")
    parser.add_argument("--machines", type=int, default=10_000)
    parser.add_argument("--v1beta1", action="store_true", help="also write the v1beta1 objects (a v1beta1-only release)")
    args = parser.parse_args()
    out = pathlib.Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    total = 0
    for v in [V2] + ([V1] if args.v1beta1 else []):
        text = json.dumps(namespace(v, args.machines), separators=(",", ":"))
        (out / f"objects-{v}.json").write_text(text)
        total += len(text)
    tpl = template(V2)
    created = metal3_machine(V2, args.machines, TARGET)
    del created["status"]
    created["metadata"].update(resourceVersion=None, uid=None, creationTimestamp=None)
    created["metadata"] = {k: v for k, v in created["metadata"].items() if v is not None}
    created["spec"].pop("automatedCleaningMode")
    created["spec"].pop("providerID")
    updated = json.loads(json.dumps(tpl))
    updated["metadata"]["labels"]["edge.example.org/reviewed"] = "true"
    for name, req in (("delete", request("DELETE", None, tpl)), ("create", request("CREATE", created, None)),
                      ("ignored", request("UPDATE", updated, tpl))):
        (out / f"request-{name}.json").write_text(json.dumps(req, indent=1))
    (out / "settings.json").write_text("{}")
    print(f"{out}: {args.machines} Metal3Machines, {max(args.machines // 10, 1)} MachineSets, "
          f"{max(args.machines // 100, 1)} MachineDeployments, KubeadmControlPlanes and Clusters; "
          f"{total / 1e6:.1f} MB of whole objects")


if __name__ == "__main__":
    main()
