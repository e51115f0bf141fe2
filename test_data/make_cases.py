#!/usr/bin/env python3
"""Writes the admission requests (test_data/requests/) and the host-call sessions
(test_data/sessions/) that e2e.bats replays, from the objects in test_data/objects/.

Sessions follow kwctl's replay format: a YAML list of exchanges, replayed strictly in order and
matched exactly, so the field masks below must be the ones the policy sends (guard/src/catalogue/,
written to catalogue.json by a unit test). A list answer holds the objects as the policy server
returns them: metadata plus masked fields. Every session that makes a lookup starts with the
cluster-wide CRD list, from which the policy learns the installed kinds and their versions.
Run it after changing a case; the output is committed.
"""
import copy
import json
import pathlib

import yaml

HERE = pathlib.Path(__file__).parent
NS = "edge-sites"
CAPI, CP, INFRA, BOOT = ("cluster.x-k8s.io", "controlplane.cluster.x-k8s.io",
                         "infrastructure.cluster.x-k8s.io", "bootstrap.cluster.x-k8s.io")

# Groups and field masks come from the policy's catalogue (guard/src/catalogue/), which a unit test
# writes to catalogue.json: the sessions replay exactly what the policy sends.
CATALOGUE = json.loads((HERE / "catalogue.json").read_text())
MASKS = {kind: entry["masks"] for kind, entry in CATALOGUE.items()}
GROUP = {kind: entry["group"] for kind, entry in CATALOGUE.items()}
TEMPLATE_MASKS = MASKS["Metal3MachineTemplate"]
OWNER_MS_MASKS = MASKS["MachineSet"]


def obj(path):
    return json.loads((HERE / "objects" / path).read_text())


def prune(value, mask):
    """Keeps the masked keys; a mask with nothing below keeps the subtree; lists are transparent."""
    if not mask:
        return value
    if isinstance(value, dict):
        return {k: prune(v, mask[k]) for k, v in value.items() if k in mask}
    if isinstance(value, list):
        return [prune(v, mask) for v in value]
    return value


def get_masked(o, masks):
    """An object as the policy server answers a get, cached or not (kubewarden-controller
    v1.36.0-beta.1, crates/policy-evaluator/src/callback_handler.rs, KubernetesGetResource):
    everything but apiVersion, kind and metadata pruned to the masks, metadata as sent."""
    tree = {}
    for m in masks or []:
        node = tree
        for part in m.split("."):
            node = node.setdefault(part, {})
    rest = {k: v for k, v in o.items() if k not in ("apiVersion", "kind", "metadata")}
    return {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": o["metadata"], **prune(rest, tree)}


def masked(o, masks):
    """An object as the policy server's reflector keeps it for a list (kubewarden-controller
    v1.36.0-beta.1, crates/policy-evaluator/src/callback_handler/kubernetes/reflector.rs,
    modify_object): managedFields emptied, the last-applied-configuration annotation dropped,
    the rest as get_masked(). check_masks() replays test_data/field-masks/vectors.json."""
    out = get_masked(o, masks)
    meta = copy.deepcopy(out["metadata"])
    meta["managedFields"] = []
    meta.setdefault("annotations", {}).pop("kubectl.kubernetes.io/last-applied-configuration", None)
    return {**out, "metadata": meta}


def check_masks():
    """Fails unless masked() (lists) and get_masked() (gets) reproduce the golden vectors."""
    vectors = json.loads((HERE / "field-masks" / "vectors.json").read_text())
    for case in vectors["cases"]:
        got = (masked if case["call"] == "list" else get_masked)(case["object"], case["masks"])
        if got != case["expected"]:
            raise SystemExit(f"make_cases.py: masking differs from the golden vector {case['name']!r}")


def av(kind, version):
    return f"{GROUP[kind]}/{version}"


def yaml_list(items):
    return "".join(f"- {i}\n" for i in sorted(items))


def list_call(kind, version, items=None, error=None):
    # A kind whose controller follows the namespace a reference gives is listed across namespaces,
    # keeping each object's namespace (src/lookups.rs, referrers_across_namespaces).
    if version in CATALOGUE[kind]["acrossNamespacesAt"]:
        masks = MASKS[kind] + ["metadata.namespace"]
        request = (f"!KubernetesListResourceAll\napi_version: {av(kind, version)}\nkind: {kind}\n"
                   f"label_selector: null\nfield_selector: null\nfield_masks:\n" + yaml_list(masks))
    else:
        masks = MASKS[kind]
        request = (f"!KubernetesListResourceNamespace\napi_version: {av(kind, version)}\nkind: {kind}\n"
                   f"namespace: {NS}\nlabel_selector: null\nfield_selector: null\nfield_masks:\n"
                   + yaml_list(masks))
    if error is not None:
        return {"type": "Exchange", "request": request, "response": {"type": "Error", "message": error}}
    payload = {"apiVersion": av(kind, version), "kind": f"{kind}List", "metadata": {"resourceVersion": "4711"},
               "items": [masked(i, masks) for i in (items or [])]}
    return {"type": "Exchange", "request": request,
            "response": {"type": "Success", "payload": json.dumps(payload, separators=(",", ":"))}}


def get_call(kind, version, name, masks, disable_cache, found=None, error=None):
    request = (f"!KubernetesGetResource\napi_version: {av(kind, version)}\nkind: {kind}\nname: {name}\n"
               f"namespace: {NS}\ndisable_cache: {str(disable_cache).lower()}\nfield_masks:\n" + yaml_list(masks))
    if found is None:
        error = error or (f"Cannot find {av(kind, version)}/{kind} named '{name}' inside of namespace "
                          f"'Some(\"{NS}\")'")
        return {"type": "Exchange", "request": request, "response": {"type": "Error", "message": error}}
    # the policy server prunes a get's answer to its masks too (see get_masked)
    payload = get_masked(found, masks)
    return {"type": "Exchange", "request": request,
            "response": {"type": "Success", "payload": json.dumps(payload, separators=(",", ":"))}}


def served(release):
    """The versions a provider of `release` serves: v1beta2 releases serve v1beta1 too."""
    return [V2, V1] if release == V2 else [release]


# The kinds a Metal3 management cluster with kubeadm has installed.
USUAL = ["MachineDeployment", "MachineSet", "KubeadmControlPlane", "ClusterClass", "MachineHealthCheck",
         "Cluster", "Metal3Machine", "Metal3MachineTemplate"]


def crd_call(release, also=None, unserved=(), without=(), error=None, others=()):
    """The CRD list: the usual kinds at `release`, plus `also` ({kind: release}); the CRDs of
    `unserved` list their versions with `served: false`; `without` are not installed; `others`
    are CRDs of kinds the catalogue does not read, as (group, kind, version)."""
    kinds = {k: release for k in USUAL if k not in without} | (also or {})
    crd = CATALOGUE["CustomResourceDefinition"]
    request = (f"!KubernetesListResourceAll\napi_version: {crd['group']}/v1\nkind: CustomResourceDefinition\n"
               f"label_selector: null\nfield_selector: null\nfield_masks:\n" + yaml_list(crd["masks"]))
    if error is not None:
        return {"type": "Exchange", "request": request, "response": {"type": "Error", "message": error}}
    items = [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
              "metadata": {"name": f"{CATALOGUE[k]['plural']}.{GROUP[k]}"},
              "spec": {"group": GROUP[k], "names": {"kind": k, "plural": CATALOGUE[k]["plural"]},
                       "versions": [{"name": v, "served": k not in unserved} for v in served(r)]}}
             for k, r in sorted(kinds.items())]
    items += [{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": f"{k.lower()}s.{g}"},
               "spec": {"group": g, "names": {"kind": k, "plural": f"{k.lower()}s"},
                        "versions": [{"name": v, "served": True}]}} for g, k, v in others]
    payload = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinitionList",
               "metadata": {"resourceVersion": "4711"}, "items": items}
    return {"type": "Exchange", "request": request,
            "response": {"type": "Success", "payload": json.dumps(payload, separators=(",", ":"))}}


def list_at(kind, release, items=None):
    """One list, at the newest version the policy reads that the provider's release serves."""
    version = next(v for v in CATALOGUE[kind]["versions"] if v in served(release))
    return [list_call(kind, version, items)]


def with_meta(o, **meta):
    o = copy.deepcopy(o)
    o["metadata"].update(meta)
    return o


def deleting(o):
    return with_meta(o, deletionTimestamp="2026-11-29T10:00:00Z")


def request(operation, group, kind, version, name, obj=None, old=None, dry_run=False):
    plural = kind.lower() + "s"
    return {
        "uid": f"e2e-{operation.lower()}-{name}",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": plural},
        "requestKind": {"group": group, "version": version, "kind": kind},
        "requestResource": {"group": group, "version": version, "resource": plural},
        "name": name,
        "namespace": NS,
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:flux-system:helm-controller",
                     "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions" if operation == "DELETE"
                    else "CreateOptions"},
    }


def delete(o, dry_run=False):
    group, version = o["apiVersion"].split("/")
    return request("DELETE", group, o["kind"], version, o["metadata"]["name"], old=o, dry_run=dry_run)


def create(o):
    group, version = o["apiVersion"].split("/")
    return request("CREATE", group, o["kind"], version, o["metadata"]["name"], obj=o)


V1, V2 = "v1beta1", "v1beta2"
md1, ms1 = obj("v1beta1/04-machinedeployment.json"), obj("v1beta1/05-machineset-old-revision.json")
md2, ms2 = obj("v1beta2/04-machinedeployment.json"), obj("v1beta2/05-machineset-old-revision.json")
kcp1, kcp2 = obj("v1beta1/07-kubeadmcontrolplane.json"), obj("v1beta2/08-kubeadmcontrolplane.json")
rke2_legacy = obj("v1beta1/09-rke2controlplane-legacy-infraref.json")
cc2 = obj("v1beta2/13-clusterclass.json")
m3m1, m3m2 = obj("v1beta1/06-metal3machine-worker.json"), obj("v1beta2/06-metal3machine-worker.json")
m3m_cp2 = obj("v1beta2/09-metal3machine-controlplane.json")
tpl_workers1 = obj("v1beta1/01-metal3machinetemplate-workers.json")
tpl_workers2 = obj("v1beta2/01-metal3machinetemplate-workers.json")
tpl_cp2 = obj("v1beta2/02-metal3machinetemplate-controlplane.json")
kct2 = obj("v1beta2/03-kubeadmconfigtemplate-workers.json")
created = obj("admission/metal3machine-as-created-by-machineset.v1beta2.json")
moved = obj("admission/metal3machinetemplate-delete-for-move.oldObject.v1beta2.json")


def old_template(template, name, version=V2):
    t = with_meta(template, name=name)
    t["apiVersion"] = f"{INFRA}/{version}"
    return t


def infra_lists(version, md=(), ms=(), kcp=(), rke2=None, cc=(), m3m=None, rke2_version=None, also=None):
    """The calls for an infrastructure machine template on a release serving `version` (and, for
    v1beta2, v1beta1 too), with default settings: the CRDs, then one list per installed kind that
    can keep it. rke2=None: the RKE2 provider is not installed; `also`: other installed control
    planes, {kind: (release, items)}."""
    installed = {"RKE2ControlPlane": rke2_version or version} if rke2 is not None else {}
    installed |= {k: r for k, (r, _) in (also or {}).items()}
    calls = [crd_call(version, installed)]
    calls += list_at("MachineDeployment", version, list(md)) + list_at("MachineSet", version, list(ms))
    calls += list_at("KubeadmControlPlane", version, list(kcp))
    if rke2 is not None:
        calls += list_at("RKE2ControlPlane", rke2_version or version, list(rke2))
    for kind, (release, items) in (also or {}).items():
        calls += list_at(kind, release, list(items))
    calls += list_at("ClusterClass", version, list(cc))
    if m3m is not None:
        calls += list_at("Metal3Machine", version, list(m3m))
    return calls


def class_lists(version, md=(), ms=(), cc=()):
    """The calls for a bootstrap template: the CRDs, MachineDeployments, MachineSets, ClusterClasses."""
    return [crd_call(version)] + list_at("MachineDeployment", version, list(md)) + list_at(
        "MachineSet", version, list(ms)) + list_at("ClusterClass", version, list(cc))


def remediation_lists(version, cc=(), mhc=(), clusters=()):
    """The calls for a remediation template: the CRDs, ClusterClasses, MachineHealthChecks, Clusters."""
    return [crd_call(version)] + list_at("ClusterClass", version, list(cc)) + list_at(
        "MachineHealthCheck", version, list(mhc)) + list_at("Cluster", version, list(clusters))


no_owner = {"ownerReferences": []}
scaled_ms2 = copy.deepcopy(ms2)
scaled_ms2["spec"]["replicas"] = 0
scaled_ms2["status"] = {"replicas": 0}
standalone_ms2 = copy.deepcopy(scaled_ms2)
standalone_ms2["metadata"]["labels"].pop("cluster.x-k8s.io/deployment-name")
standalone_ms2["metadata"]["ownerReferences"] = [
    o for o in standalone_ms2["metadata"].get("ownerReferences", []) if o["kind"] != "MachineDeployment"]
md1_east = with_meta(md1, namespace="edge-east", name="edge-b-md-storage")
md1_west_ref = copy.deepcopy(md1)
md1_west_ref["spec"]["template"]["spec"]["infrastructureRef"]["namespace"] = "edge-west"
md1_east_west_ref = with_meta(md1_west_ref, namespace="edge-east", name="edge-b-md-storage")
old_tpl_1b8 = old_template(with_meta(tpl_workers2, **no_owner), "edge-a-workers-1b8e4a60")
rke2_1 = obj("v1beta1/08-rke2controlplane.json")
tpl_cp1 = obj("v1beta1/02-metal3machinetemplate-controlplane.json")
openstack_ms = copy.deepcopy(ms2)
openstack_ms["spec"]["template"]["spec"]["infrastructureRef"] = {
    "apiGroup": INFRA, "kind": "OpenStackMachineTemplate", "name": "edge-os-workers-41d2"}


talos = {"apiVersion": f"{CP}/v1alpha3", "kind": "TalosControlPlane",
         "metadata": {"name": "edge-t-cp", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "edge-t"}},
         "spec": {"replicas": 3, "version": "v1.33.1", "infrastructureTemplate": {
             "apiVersion": f"{INFRA}/v1beta1", "kind": "Metal3MachineTemplate", "name": "edge-a-cp-5d21c0aa"}}}
remediation_template = {"apiVersion": f"{INFRA}/{V2}", "kind": "Metal3RemediationTemplate",
                        "metadata": {"name": "edge-a-remediation", "namespace": NS},
                        "spec": {"template": {"spec": {"strategy": {"type": "Reboot", "retryLimit": 2, "timeout": "5m0s"}}}}}
mhc2 = {"apiVersion": f"{CAPI}/{V2}", "kind": "MachineHealthCheck",
        "metadata": {"name": "edge-a-workers-unhealthy", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "edge-a"}},
        "spec": {"clusterName": "edge-a", "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": "edge-a-md-storage"}},
                 "remediation": {"templateRef": {"apiVersion": f"{INFRA}/{V2}", "kind": "Metal3RemediationTemplate",
                                                 "name": "edge-a-remediation"}}}}
topology_cluster1 = {"apiVersion": f"{CAPI}/{V1}", "kind": "Cluster",
                     "metadata": {"name": "edge-a", "namespace": NS},
                     "spec": {"topology": {"class": "metal3-kubeadm", "version": "v1.33.1", "workers": {"machineDeployments": [
                         {"class": "storage", "name": "md-storage", "machineHealthCheck": {"remediationTemplate": {
                             "apiVersion": f"{INFRA}/{V1}", "kind": "Metal3RemediationTemplate", "name": "edge-a-remediation"}}}]}}}}


# CAPM3's Metal3DataTemplate of the workers, as Sylva renders it with a content-hash name.
data_template = {"apiVersion": f"{INFRA}/{V2}", "kind": "Metal3DataTemplate",
                 "metadata": {"name": "edge-a-workers-metadata", "namespace": NS, "uid": "uid-edge-a-workers-metadata"},
                 "spec": {"clusterName": "edge-a", "metaData": {"strings": [{"key": "role", "value": "worker"}]}}}
claim2 = {"apiVersion": f"{INFRA}/{V2}", "kind": "Metal3DataClaim",
          "metadata": {"name": "edge-a-workers-7f3c9d2e-x2v9k", "namespace": NS,
                       "labels": {"cluster.x-k8s.io/cluster-name": "edge-a"}},
          "spec": {"template": {"name": "edge-a-workers-metadata"}}}
# Kubewarden 1.36's host-capability denial, written from policy-evaluator src/runtimes/callback.rs
# (`host_capability_denied`). kwctl 1.36.0-beta.1, run live with --allowed-host-capabilities lacking
# list_resources_all, answered this text word for word; its recording holds no exchange (the denial
# comes before the host is called), so the session carries it as an Error exchange.
CAPABILITY_DENIED = ("Policy has not been granted access to the 'kubernetes/list_resources_all' host "
                     "capability. The violation has been reported.")


NO_TEMPLATE_KINDS = [(CP, "HostedControlPlane", "v1alpha1"), (CP, "NestedControlPlane", "v1alpha4"),
                     (CP, "NestedEtcd", "v1alpha4"), (CP, "NestedAPIServer", "v1alpha4"),
                     (CP, "NestedControllerManager", "v1alpha4"), (CP, "FooControlPlane", "v1alpha1")]
# The policy server's account as the Kubewarden charts install it (the setting's default).
ACCOUNT_NS, ACCOUNT = "kubewarden", "system:serviceaccount:kubewarden:policy-server"


def can_i_call(plural, allowed, group=CP):
    """The can_i question before a scan's list, as kwctl records it (KubernetesCanI)."""
    request = (f"!KubernetesCanI\nrequest:\n  groups:\n  - system:serviceaccounts\n"
               f"  - system:serviceaccounts:{ACCOUNT_NS}\n  - system:authenticated\n"
               f"  resource_attributes:\n    group: {group}\n    name: null\n    namespace: {NS}\n"
               f"    resource: {plural}\n    subresource: null\n    verb: list\n    version: null\n"
               f"  user: {ACCOUNT}\ndisable_cache: false\n")
    status = {"allowed": allowed} if allowed else {"allowed": False, "reason": "no RBAC policy matched"}
    return {"type": "Exchange", "request": request,
            "response": {"type": "Success", "payload": json.dumps(status, separators=(",", ":"))}}


def template_object(group, kind, name):
    """A template of another provider, as its oldObject arrives: metadata and an opaque spec."""
    return {"apiVersion": f"{group}/{V2}", "kind": kind,
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}"},
            "spec": {"template": {"spec": {}}}}

CASES = {
    # Row 1, v1beta1: the MachineDeployment names the template; RKE2 is not installed.
    "guard-row1-machinedeployment-v1beta1": (delete(tpl_workers1), infra_lists(
        V1, md=[md1], ms=[ms1], kcp=[kcp1], m3m=[m3m1])),
    # The same request as a dry run gets the same answer.
    "guard-row1-machinedeployment-dryrun": (delete(tpl_workers1, dry_run=True), infra_lists(
        V1, md=[md1], ms=[ms1], kcp=[kcp1], m3m=[m3m1])),
    # Row 1, v1beta2: the old MachineSet still names the previous template (nodeReuse true).
    "guard-row1-machineset-v1beta2": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[])),
    # The same with explicit v1beta2 settings on a release that serves both versions.
    "guard-explicit-v1beta2": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[])),
    # Row 1: a MachineSet scaled to zero with no machines left releases the template.
    "guard-row1-scaled-down-machineset": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[scaled_ms2], kcp=[kcp2], rke2=[], m3m=[])),
    # Row 1: a MachineSet outside a MachineDeployment (no deployment-name label) keeps its
    # templates scaled to zero: Cluster API fails its reconcile without them.
    "guard-row1-standalone-machineset": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[standalone_ms2], kcp=[kcp2], rke2=[], m3m=[])),
    # Row 1, Cluster API 1.10: a MachineDeployment in another namespace whose reference names the
    # template's namespace keeps it (listed across namespaces).
    "guard-row1-cross-namespace-v1beta1": (delete(tpl_workers1), infra_lists(
        V1, md=[md1_east], ms=[], kcp=[kcp1], m3m=[])),
    # Row 1, v1beta1: a MachineDeployment of the template's namespace whose reference names
    # another namespace still keeps it (Cluster API 1.8 and older read their own namespace).
    "guard-row1-other-namespace-v1beta1": (delete(tpl_workers1), infra_lists(
        V1, md=[md1_west_ref], ms=[], kcp=[kcp1], m3m=[])),
    # Row 1, v1beta1: a MachineDeployment of another namespace naming a third keeps nothing here.
    "guard-row1-third-namespace-v1beta1": (delete(tpl_workers1), infra_lists(
        V1, md=[md1_east_west_ref], ms=[], kcp=[kcp1], m3m=[])),
    # Row 1: referrers being deleted do not count (the MachineSet's machines are gone: its
    # controller wrote status.replicas 0).
    "guard-row1-deleting-referrers": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[deleting(ms2) | {"status": {"replicas": 0}}], kcp=[kcp2], rke2=[], m3m=[])),
    # Row 1, bootstrap template: only MachineDeployments, MachineSets and ClusterClasses are read.
    "guard-row1-bootstrap-template": (delete(kct2), class_lists(V2, md=[md2], ms=[ms2], cc=[cc2])),
    # Row 2: KubeadmControlPlane; row 4 too, its Metal3Machine was cloned from the template.
    "guard-row2-kubeadmcontrolplane": (delete(with_meta(tpl_cp2, **no_owner)), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[m3m2, m3m_cp2])),
    # Row 2: RKE2ControlPlane naming the template only in the deprecated v1beta1 field.
    "guard-row2-rke2-deprecated-field": (delete(old_template(tpl_workers1, "edge-c-cp-9b02d4e1", V1)),
                                         infra_lists(V1, md=[md1], ms=[ms1], kcp=[kcp1], rke2=[rke2_legacy], m3m=[])),
    # Row 3: a ClusterClass names the bootstrap template of a worker class.
    "guard-row3-clusterclass": (delete(with_meta(kct2, name="metal3-kubeadm-storage-bootstrap")),
                                class_lists(V2, md=[md2], ms=[ms2], cc=[cc2])),
    # Row 3: a ClusterClass keeps its control-plane template and its infrastructure cluster
    # template; only ClusterClasses can name them, so only they are read.
    "guard-row3-kubeadmcontrolplanetemplate": (delete(template_object(CP, "KubeadmControlPlaneTemplate", "metal3-kubeadm-cp")),
                                               [crd_call(V2), list_call("ClusterClass", V2, [cc2])]),
    "guard-row3-metal3clustertemplate": (delete(template_object(INFRA, "Metal3ClusterTemplate", "metal3-kubeadm-cluster")),
                                         [crd_call(V2), list_call("ClusterClass", V2, [cc2])]),
    # Row 3: the ClusterClass is being deleted: its templates are released.
    "guard-row3-clusterclass-deleting": (delete(template_object(INFRA, "Metal3ClusterTemplate", "metal3-kubeadm-cluster")),
                                         [crd_call(V2), list_call("ClusterClass", V2, [deleting(cc2)])]),
    # Row 1, any provider: an OpenStackMachineTemplate kept by a MachineSet.
    "guard-row1-openstack-machineset": (delete(template_object(INFRA, "OpenStackMachineTemplate", "edge-os-workers-41d2")),
                                        infra_lists(V2, md=[md2], ms=[openstack_ms], kcp=[kcp2], rke2=[])),
    # A v1beta1-only release (Cluster API before 1.11) with default settings: the CRDs say so, and
    # every kind is read at v1beta1 straight away.
    "guard-v1beta1-release": (delete(tpl_workers1), infra_lists(V1, md=[md1], ms=[ms1], kcp=[kcp1], m3m=[m3m1])),
    # A v1beta2-only release (after v1beta1 is dropped) with default settings: a referenced
    # template is kept, an unreferenced one is deleted.
    "guard-v1beta2-release-kept": (delete(old_tpl_1b8), infra_lists(V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[])),
    "guard-v1beta2-release-unused": (delete(old_template(with_meta(tpl_workers2, **no_owner), "edge-a-workers-00000000")),
                                     infra_lists(V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[])),
    # The RKE2 provider older than Cluster API: RKE2ControlPlane served at v1beta1 only; its
    # machine template is still kept.
    "guard-rke2-older-than-capi": (delete(with_meta(old_template(tpl_workers2, "edge-b-cp-0c7e11f2"), **no_owner)),
                                   infra_lists(V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[rke2_1], m3m=[], rke2_version=V1)),
    # An explicit controlPlaneApiVersion v1beta2 on Cluster API 1.10 (v1beta1 only): refused,
    # naming the setting, instead of counting KubeadmControlPlanes as none.
    "guard-wrong-explicit-setting": (delete(with_meta(tpl_cp1, **no_owner)), [crd_call(V1)] + list_at(
        "MachineDeployment", V1, [md1]) + list_at("MachineSet", V1, [ms1])),
    # Row 4: only a Metal3Machine being deleted still needs the nodeReuse template.
    "guard-row4-metal3machine": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[scaled_ms2], kcp=[kcp2], rke2=[], m3m=[deleting(m3m2)])),
    # Row 5: clusterctl move: accepted with no lookup at all.
    "guard-row5-clusterctl-move": (delete(moved), []),
    # Row 6: the owning Cluster is being deleted.
    "guard-row6-cluster-deleting": (delete(tpl_workers2), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[]) + [
        get_call("Cluster", V2, "edge-a", MASKS["Cluster"], False,
                 found=deleting({"apiVersion": f"{CAPI}/{V2}", "kind": "Cluster",
                                 "metadata": {"name": "edge-a", "namespace": NS}}))]),
    # Row 6: the owning Cluster is gone.
    "guard-row6-cluster-gone": (delete(tpl_workers2), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[]) + [
        get_call("Cluster", V2, "edge-a", MASKS["Cluster"], False)]),
    # Row 6 does not apply: the owning Cluster lives, so the MachineDeployment keeps the template.
    "guard-row6-cluster-live": (delete(tpl_workers2), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[kcp2], rke2=[], m3m=[]) + [
        get_call("Cluster", V2, "edge-a", MASKS["Cluster"], False,
                 found={"apiVersion": f"{CAPI}/{V2}", "kind": "Cluster",
                        "metadata": {"name": "edge-a", "namespace": NS}})]),
    # Nothing names the template: accepted.
    "guard-unused-template": (delete(old_template(tpl_workers1, "edge-a-workers-00000000", V1)), infra_lists(
        V1, md=[md1], ms=[ms1], kcp=[kcp1], m3m=[m3m1])),
    # A failed lookup rejects, or accepts with a warning when failOpenOnLookupError is set. The
    # failure is one that reaches the policy (a list the API server refuses never returns on the
    # real host: the user sees a webhook timeout): MachineSet missing from contextAwareResources,
    # in the host's own words.
    "guard-lookup-failure": (delete(tpl_workers1), [crd_call(V1)] + list_at("MachineDeployment", V1, [md1]) + [
        list_call("MachineSet", V1, error="Policy has not been granted access to Kubernetes "
                  "cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported.")]),
    # The configured CAPI version is not served (an old CAPI with capiApiVersion v1beta2): refused
    # after the CRD list, naming the setting, instead of counting MachineDeployments as none.
    "guard-capi-version-not-served": (delete(tpl_workers2), [crd_call(V1)]),
    # Rule 1: a KubeadmControlPlane being deleted keeps its machine template.
    "guard-rule1-deleting-control-plane": (delete(with_meta(tpl_cp2, **no_owner)), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[deleting(kcp2)], m3m=[])),
    # Rule 2: a MachineSet being deleted that still has machines keeps its nodeReuse template.
    "guard-rule2-draining-machineset": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[deleting(ms2) | {"status": {"replicas": 2}}], kcp=[kcp2], m3m=[])),
    # Rule 2: one whose controller has not written status.replicas yet may have machines: kept.
    "guard-rule2-machineset-not-counted-yet": (delete(old_tpl_1b8), infra_lists(
        V2, md=[md2], ms=[deleting(ms2)], kcp=[kcp2], m3m=[])),
    # Rule 3: the owning Cluster is being deleted, but a MachineDeployment of another Cluster
    # names the template: kept.
    "guard-rule3-other-cluster-keeps": (delete(tpl_workers2), infra_lists(
        V2, md=[with_meta(md2, labels={"cluster.x-k8s.io/cluster-name": "edge-b"}) | {
            "spec": md2["spec"] | {"clusterName": "edge-b"}}], ms=[], kcp=[kcp2], m3m=[]) + [
        get_call("Cluster", V2, "edge-a", MASKS["Cluster"], False,
                 found=deleting({"apiVersion": f"{CAPI}/{V2}", "kind": "Cluster",
                                 "metadata": {"name": "edge-a", "namespace": NS}}))]),
    # Rule 4: a TalosControlPlane (served at v1alpha3) keeps its machine template.
    "guard-rule4-talos-control-plane": (delete(with_meta(tpl_cp2, **no_owner)), infra_lists(
        V2, md=[md2], ms=[ms2], kcp=[], m3m=[], also={"TalosControlPlane": ("v1alpha3", [talos])})),
    # Rule 5: remediation templates, kept by a MachineHealthCheck (v1beta2) and by a Cluster's
    # topology health check (v1beta1).
    "guard-rule5-machinehealthcheck": (delete(remediation_template), remediation_lists(V2, cc=[cc2], mhc=[mhc2])),
    "guard-rule5-cluster-topology-v1beta1": (delete(remediation_template), remediation_lists(
        V1, cc=[], mhc=[], clusters=[topology_cluster1])),
    "guard-rule5-unused-remediation-template": (delete(remediation_template), remediation_lists(V2, cc=[cc2])),
    # Other kinds and operations: accepted with no lookup.
    "guard-delete-metal3machine": (delete(m3m2), []),
    "guard-update-template": (request("UPDATE", INFRA, "Metal3MachineTemplate", V2, tpl_workers2["metadata"]["name"],
                                      obj=tpl_workers2, old=tpl_workers2), []),
    # A DELETE without oldObject cannot be checked: rejected.
    "guard-delete-without-oldobject": (request("DELETE", INFRA, "Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e"), []),
    # Mutation, as the MachineSet controller creates the machine (annotations present).
    "mutate-create-from-annotations": (create(created), [
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True, found=tpl_workers2)]),
    # Mutation: no cloned-from annotations, the MachineSet owner names the template.
    "mutate-create-owner-fallback": (create(with_meta(created, annotations={})), [crd_call(V2),
        get_call("MachineSet", V2, "edge-a-md-storage-7c4b9d5f8", OWNER_MS_MASKS, False, found=with_meta(md2, name="edge-a-md-storage-7c4b9d5f8") | {"kind": "MachineSet"}),
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True, found=tpl_workers2)]),
    # Mutation: the machine already carries its own cleaning mode; only the annotations are added.
    "mutate-keeps-machine-cleaning-mode": (create(created | {"spec": created["spec"] | {"automatedCleaningMode": "metadata"}}), [
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True, found=tpl_workers2)]),
    # Mutation: a machine that already carries the intent (clusterctl move) gets no patch.
    "mutate-already-mutated": (create(with_meta(created, annotations=created["metadata"]["annotations"] | {
        "capi-template-guard.kubewarden.io/node-reuse": "true",
        "capi-template-guard.kubewarden.io/source-template": "edge-a-workers-7f3c9d2e"}) | {
        "spec": created["spec"] | {"automatedCleaningMode": "disabled"}}), [
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True, found=tpl_workers2)]),
    # Mutation: the template is gone; creation goes on, with a warning.
    "mutate-template-missing": (create(created), [
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True)]),
    # Mutation with the CRD list refused (RBAC without list on CRDs: on a real policy server that
    # list never answers): the annotations name the template, which is read at the machine's
    # version without the CRD list, so the machine is mutated at once.
    "mutate-crd-list-refused": (create(created), [
        get_call("Metal3MachineTemplate", V2, "edge-a-workers-7f3c9d2e", TEMPLATE_MASKS, True, found=tpl_workers2)]),
    # A Metal3DataTemplate (sylva-core issue 2820) is kept by the Metal3MachineTemplate, the
    # Metal3Machine and the claim that name it; nothing but CAPM3's kinds is read for it.
    "guard-data-template-kept": (delete(data_template), [
        crd_call(V2, also={"Metal3DataClaim": V2, "Metal3Data": V2})] + list_at("Metal3Machine", V2, [m3m2])
        + list_at("Metal3MachineTemplate", V2, [tpl_workers2]) + list_at("Metal3DataClaim", V2, [claim2])
        + list_at("Metal3Data", V2, [])),
    # Nothing names it: deleted.
    "guard-data-template-unused": (delete(with_meta(data_template, name="edge-a-workers-metadata-0ld")), [
        crd_call(V2, also={"Metal3DataClaim": V2, "Metal3Data": V2})] + list_at("Metal3Machine", V2, [m3m2])
        + list_at("Metal3MachineTemplate", V2, [tpl_workers2]) + list_at("Metal3DataClaim", V2, [claim2])
        + list_at("Metal3Data", V2, [])),
    # A Talos release newer than the policy (only v1alpha4 served): the policy scans it, which
    # needs v1alpha4 in contextAwareResources. metadata.yml cannot grant a version that does not
    # exist yet, so the host refuses the scan before it reaches the session and the deletion fails
    # closed naming the grant. (With the grant, the scan's reference keeps the template: the
    # policy's own tests, src/tests.rs.)
    "guard-scan-future-version": (delete(with_meta(tpl_cp2, **no_owner)), [
        crd_call(V2, also={"TalosControlPlane": "v1alpha4"})] + list_at("MachineDeployment", V2, [md2])
        + list_at("MachineSet", V2, [ms2]) + list_at("KubeadmControlPlane", V2, []) + list_at("ClusterClass", V2, [])
        + list_at("Metal3Machine", V2, [])),
    # Kinds known to name no template (teutonet's, the nested provider's) and one the operator
    # declares in kindsNamingNoTemplate are installed: none is listed, nothing is asked.
    "guard-scan-kinds-naming-no-template": (delete(with_meta(tpl_cp2, **no_owner)), [
        crd_call(V2, others=NO_TEMPLATE_KINDS)] + list_at("MachineDeployment", V2, [md2])
        + list_at("MachineSet", V2, [ms2]) + list_at("KubeadmControlPlane", V2, []) + list_at("ClusterClass", V2, [])
        + list_at("Metal3Machine", V2, [])),
    # An unknown control-plane kind the shipped RBAC does not grant: the policy asks can_i first
    # and, refused, fails closed at once naming the rule; it never lists the kind.
    "guard-scan-not-permitted": (delete(with_meta(tpl_cp2, **no_owner)), [
        crd_call(V2, others=[(CP, "FooControlPlane", "v1alpha1")])] + list_at("MachineDeployment", V2, [md2])
        + list_at("MachineSet", V2, [ms2]) + list_at("KubeadmControlPlane", V2, []) + list_at("ClusterClass", V2, [])
        + list_at("Metal3Machine", V2, []) + [can_i_call("foocontrolplanes", allowed=False)]),
    # A CRD whose versions are all served: false is not installed: RKE2 is not listed.
    "guard-served-false": (delete(tpl_workers2), [crd_call(V2, also={"RKE2ControlPlane": V2}, unserved=("RKE2ControlPlane",))]
                           + list_at("MachineDeployment", V2, [md2]) + list_at("MachineSet", V2, [ms2])
                           + list_at("KubeadmControlPlane", V2, [kcp2]) + list_at("ClusterClass", V2, [])
                           + list_at("Metal3Machine", V2, []) + [
                               get_call("Cluster", V2, "edge-a", MASKS["Cluster"], False,
                                        found={"apiVersion": f"{CAPI}/{V2}", "kind": "Cluster",
                                               "metadata": {"name": "edge-a", "namespace": NS}})]),
    # The template has a Cluster owner and no Cluster CRD is listed: every owner would read as
    # gone and row 6 would release it, so it fails closed.
    "guard-cluster-crd-missing": (delete(tpl_workers2), [crd_call(V2, without=("Cluster",))]
                                  + list_at("MachineDeployment", V2, [md2]) + list_at("MachineSet", V2, [ms2])
                                  + list_at("KubeadmControlPlane", V2, [kcp2]) + list_at("ClusterClass", V2, [])
                                  + list_at("Metal3Machine", V2, [])),
    # Kubewarden 1.36 refuses the host capability itself: its own 500 and hint.
    "guard-capability-denied": (delete(tpl_workers2), [crd_call(V2, error=CAPABILITY_DENIED)]),
    # UPDATE of a Metal3Machine: no lookup, no patch.
    "mutate-update-ignored": (request("UPDATE", INFRA, "Metal3Machine", V2, created["metadata"]["name"], obj=created, old=created), []),
}


def literal_blocks(dumper, text):
    """Request strings are YAML documents themselves: keep them readable as literal blocks."""
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


# Every case runs with the default settings (`auto` versions) but these.
V2_SETTINGS = {"capiApiVersion": V2, "controlPlaneApiVersion": V2, "metal3ApiVersion": V2}
SETTINGS = {"guard-capi-version-not-served": V2_SETTINGS, "guard-explicit-v1beta2": V2_SETTINGS,
            "guard-wrong-explicit-setting": {"controlPlaneApiVersion": V2},
            "guard-scan-kinds-naming-no-template": {
                "kindsNamingNoTemplate": ["FooControlPlane.controlplane.cluster.x-k8s.io"]}}


def main():
    yaml.SafeDumper.add_representer(str, literal_blocks)
    for name, (req, calls) in CASES.items():
        (HERE / "requests" / f"{name}.json").write_text(json.dumps(req, indent=2) + "\n")
        (HERE / "settings" / f"{name}.json").write_text(json.dumps(SETTINGS.get(name, {})) + "\n")
        (HERE / "sessions" / f"{name}.yml").write_text(
            yaml.safe_dump(calls, sort_keys=False, width=1 << 20) if calls else "[]\n")


if __name__ == "__main__":
    check_masks()
    main()
