//! The cases, each with what it shows.

use serde_json::{Value, json};

use super::*;

/// The calls for an infrastructure machine template on a release serving `version` (and, for
/// v1beta2, v1beta1 too), with default settings: the CRDs, then one list per installed kind that
/// can keep it. `rke2` None: the RKE2 provider is not installed; `also`: other installed control
/// planes (kind, release, items).
#[derive(Default)]
struct Infra<'a> {
    md: &'a [Value],
    ms: &'a [Value],
    kcp: &'a [Value],
    rke2: Option<&'a [Value]>,
    rke2_version: Option<&'a str>,
    cc: &'a [Value],
    m3m: Option<&'a [Value]>,
    also: &'a [(&'a str, &'a str, Vec<Value>)],
}

fn infra_lists(version: &str, i: Infra) -> Vec<Value> {
    let rke2_release = i.rke2_version.unwrap_or(version);
    let mut installed: Vec<(&str, &str)> = Vec::new();
    if i.rke2.is_some() {
        installed.push(("RKE2ControlPlane", rke2_release));
    }
    installed.extend(i.also.iter().map(|(k, r, _)| (*k, *r)));
    let mut calls = vec![crd_call(
        version,
        Crds {
            also: &installed,
            ..Crds::default()
        },
    )];
    calls.extend(list_at("MachineDeployment", version, i.md));
    calls.extend(list_at("MachineSet", version, i.ms));
    calls.extend(list_at("KubeadmControlPlane", version, i.kcp));
    if let Some(rke2) = i.rke2 {
        calls.extend(list_at("RKE2ControlPlane", rke2_release, rke2));
    }
    for (kind, release, items) in i.also {
        calls.extend(list_at(kind, release, items));
    }
    calls.extend(list_at("ClusterClass", version, i.cc));
    if let Some(m3m) = i.m3m {
        calls.extend(list_at("Metal3Machine", version, m3m));
    }
    calls
}

/// The calls for a bootstrap template: the CRDs, MachineDeployments, MachineSets, ClusterClasses.
fn class_lists(version: &str, md: &[Value], ms: &[Value], cc: &[Value]) -> Vec<Value> {
    let mut calls = vec![crd_call(version, Crds::default())];
    calls.extend(list_at("MachineDeployment", version, md));
    calls.extend(list_at("MachineSet", version, ms));
    calls.extend(list_at("ClusterClass", version, cc));
    calls
}

/// The calls for a remediation template: the CRDs, ClusterClasses, MachineHealthChecks, Clusters.
fn remediation_lists(version: &str, cc: &[Value], mhc: &[Value], clusters: &[Value]) -> Vec<Value> {
    let mut calls = vec![crd_call(version, Crds::default())];
    calls.extend(list_at("ClusterClass", version, cc));
    calls.extend(list_at("MachineHealthCheck", version, mhc));
    calls.extend(list_at("Cluster", version, clusters));
    calls
}

/// The lists a scan case reads before the scan: the usual v1beta2 kinds with a MachineDeployment
/// and a MachineSet.
fn scan_lists(md2: &Value, ms2: &Value) -> Vec<Value> {
    let mut calls = list_at("MachineDeployment", V2, std::slice::from_ref(md2));
    calls.extend(list_at("MachineSet", V2, std::slice::from_ref(ms2)));
    calls.extend(list_at("KubeadmControlPlane", V2, &[]));
    calls.extend(list_at("ClusterClass", V2, &[]));
    calls.extend(list_at("Metal3Machine", V2, &[]));
    calls
}

fn old_template(template: &Value, name: &str, version: &str) -> Value {
    let mut t = with_meta(template, "name", json!(name));
    t["apiVersion"] = json!(format!("{INFRA}/{version}"));
    t
}

/// A template of another provider, as its oldObject arrives: metadata and an opaque spec.
fn template_object(group: &str, kind: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{group}/{V2}"), "kind": kind,
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
        "spec": {"template": {"spec": {}}}})
}

fn cluster(deleted: bool) -> Value {
    let c = json!({"apiVersion": format!("{CAPI}/{V2}"), "kind": "Cluster",
        "metadata": {"name": "edge-a", "namespace": NS}});
    if deleted { deleting(&c) } else { c }
}

fn no_owner(o: &Value) -> Value {
    with_meta(o, "ownerReferences", json!([]))
}

fn case(request: Value, calls: Vec<Value>) -> Case {
    Case {
        request,
        calls,
        settings: json!({}),
    }
}

/// Kubewarden 1.36's host-capability denial (kubewarden-controller crates/policy-evaluator/src/runtimes/callback.rs,
/// `host_capability_denied`), as kwctl 1.36.0-beta.1 answered it live.
const CAPABILITY_DENIED: &str = "Policy has not been granted access to the 'kubernetes/list_resources_all' host capability. The violation has been reported.";

/// Every case, by name.
pub fn cases() -> Vec<(&'static str, Case)> {
    let md1 = obj("v1beta1/04-machinedeployment.json");
    let ms1 = obj("v1beta1/05-machineset-old-revision.json");
    let md2 = obj("v1beta2/04-machinedeployment.json");
    let ms2 = obj("v1beta2/05-machineset-old-revision.json");
    let kcp1 = obj("v1beta1/07-kubeadmcontrolplane.json");
    let kcp2 = obj("v1beta2/08-kubeadmcontrolplane.json");
    let rke2_legacy = obj("v1beta1/09-rke2controlplane-legacy-infraref.json");
    let cc2 = obj("v1beta2/13-clusterclass.json");
    let m3m1 = obj("v1beta1/06-metal3machine-worker.json");
    let m3m2 = obj("v1beta2/06-metal3machine-worker.json");
    let m3m_cp2 = obj("v1beta2/09-metal3machine-controlplane.json");
    let tpl_workers1 = obj("v1beta1/01-metal3machinetemplate-workers.json");
    let tpl_workers2 = obj("v1beta2/01-metal3machinetemplate-workers.json");
    let tpl_cp2 = obj("v1beta2/02-metal3machinetemplate-controlplane.json");
    let kct2 = obj("v1beta2/03-kubeadmconfigtemplate-workers.json");
    let created = obj("admission/metal3machine-as-created-by-machineset.v1beta2.json");
    let moved = obj("admission/metal3machinetemplate-delete-for-move.oldObject.v1beta2.json");
    let rke2_1 = obj("v1beta1/08-rke2controlplane.json");
    let tpl_cp1 = obj("v1beta1/02-metal3machinetemplate-controlplane.json");

    let mut scaled_ms2 = ms2.clone();
    scaled_ms2["spec"]["replicas"] = json!(0);
    scaled_ms2["status"] = json!({"replicas": 0});
    let mut standalone_ms2 = scaled_ms2.clone();
    if let Some(labels) = standalone_ms2["metadata"]["labels"].as_object_mut() {
        labels.remove("cluster.x-k8s.io/deployment-name");
    }
    let owners: Vec<Value> = standalone_ms2["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|o| o["kind"] != "MachineDeployment")
        .collect();
    standalone_ms2["metadata"]["ownerReferences"] = json!(owners);
    let md1_east = with_meta(
        &with_meta(&md1, "namespace", json!("edge-east")),
        "name",
        json!("edge-b-md-storage"),
    );
    let mut md1_west_ref = md1.clone();
    md1_west_ref["spec"]["template"]["spec"]["infrastructureRef"]["namespace"] = json!("edge-west");
    let md1_east_west_ref = with_meta(
        &with_meta(&md1_west_ref, "namespace", json!("edge-east")),
        "name",
        json!("edge-b-md-storage"),
    );
    let old_tpl_1b8 = old_template(&no_owner(&tpl_workers2), "edge-a-workers-1b8e4a60", V2);
    // The same previous template without node reuse: only Cluster API's reads keep it.
    let mut old_tpl_no_reuse = old_tpl_1b8.clone();
    old_tpl_no_reuse["spec"]["nodeReuse"] = json!(false);
    // The previous MachineSet at the MachineDeployment's revision (2): its new MachineSet has
    // not been created yet, so it is still the current revision.
    let mut current_ms2 = scaled_ms2.clone();
    current_ms2["metadata"]["annotations"]["machinedeployment.clusters.x-k8s.io/revision"] =
        json!("2");
    // An old revision scaled to zero with two machines left to delete.
    let mut draining_ms2 = ms2.clone();
    draining_ms2["spec"]["replicas"] = json!(0);
    draining_ms2["status"] = json!({"replicas": 2});
    // The MachineSet of the current revision being deleted, with two machines left, and once
    // they are gone (its controller writes status.replicas while it deletes them).
    let deleting_current_ms2 = deleting(&with(&current_ms2, "status", json!({"replicas": 2})));
    let deleted_current_ms2 = deleting(&current_ms2);
    // A KairosControlPlane of the template's namespace naming a template of the same name in
    // another namespace.
    let kairos_elsewhere = json!({"apiVersion": format!("{CP}/{V2}"), "kind": "KairosControlPlane",
        "metadata": {"name": "edge-k-cp", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "edge-k"}},
        "spec": {"replicas": 1, "version": "v1.33.1", "machineTemplate": {"infrastructureRef": {
            "apiVersion": format!("{INFRA}/{V2}"), "kind": "Metal3MachineTemplate",
            "name": "edge-a-workers-1b8e4a60", "namespace": "edge-west"}}}});
    let mut kairos_here = kairos_elsewhere.clone();
    kairos_here["spec"]["machineTemplate"]["infrastructureRef"]["namespace"] = json!(NS);
    let mut openstack_ms = ms2.clone();
    openstack_ms["spec"]["template"]["spec"]["infrastructureRef"] = json!({"apiGroup": INFRA, "kind": "OpenStackMachineTemplate", "name": "edge-os-workers-41d2"});
    let talos = json!({"apiVersion": format!("{CP}/v1alpha3"), "kind": "TalosControlPlane",
        "metadata": {"name": "edge-t-cp", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "edge-t"}},
        "spec": {"replicas": 3, "version": "v1.33.1", "infrastructureTemplate": {
            "apiVersion": format!("{INFRA}/v1beta1"), "kind": "Metal3MachineTemplate", "name": "edge-a-cp-5d21c0aa"}}});
    let remediation_template = json!({"apiVersion": format!("{INFRA}/{V2}"), "kind": "Metal3RemediationTemplate",
        "metadata": {"name": "edge-a-remediation", "namespace": NS},
        "spec": {"template": {"spec": {"strategy": {"type": "Reboot", "retryLimit": 2, "timeout": "5m0s"}}}}});
    let mhc2 = json!({"apiVersion": format!("{CAPI}/{V2}"), "kind": "MachineHealthCheck",
        "metadata": {"name": "edge-a-workers-unhealthy", "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": "edge-a"}},
        "spec": {"clusterName": "edge-a", "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": "edge-a-md-storage"}},
                 "remediation": {"templateRef": {"apiVersion": format!("{INFRA}/{V2}"), "kind": "Metal3RemediationTemplate",
                                                 "name": "edge-a-remediation"}}}});
    let topology_cluster1 = json!({"apiVersion": format!("{CAPI}/{V1}"), "kind": "Cluster",
        "metadata": {"name": "edge-a", "namespace": NS},
        "spec": {"topology": {"class": "metal3-kubeadm", "version": "v1.33.1", "workers": {"machineDeployments": [
            {"class": "storage", "name": "md-storage", "machineHealthCheck": {"remediationTemplate": {
                "apiVersion": format!("{INFRA}/{V1}"), "kind": "Metal3RemediationTemplate", "name": "edge-a-remediation"}}}]}}}});
    // CAPM3's Metal3DataTemplate of the workers, as Sylva renders it with a content-hash name.
    let data_template = json!({"apiVersion": format!("{INFRA}/{V2}"), "kind": "Metal3DataTemplate",
        "metadata": {"name": "edge-a-workers-metadata", "namespace": NS, "uid": "uid-edge-a-workers-metadata"},
        "spec": {"clusterName": "edge-a", "metaData": {"strings": [{"key": "role", "value": "worker"}]}}});
    let claim2 = json!({"apiVersion": format!("{INFRA}/{V2}"), "kind": "Metal3DataClaim",
        "metadata": {"name": "edge-a-workers-7f3c9d2e-x2v9k", "namespace": NS,
                     "labels": {"cluster.x-k8s.io/cluster-name": "edge-a"}},
        "spec": {"template": {"name": "edge-a-workers-metadata"}}});
    let no_template_kinds = [
        (CP, "HostedControlPlane", "v1alpha1"),
        (CP, "NestedControlPlane", "v1alpha4"),
        (CP, "NestedEtcd", "v1alpha4"),
        (CP, "NestedAPIServer", "v1alpha4"),
        (CP, "NestedControllerManager", "v1alpha4"),
        (CP, "FooControlPlane", "v1alpha1"),
    ];
    let v2_settings =
        json!({"capiApiVersion": V2, "controlPlaneApiVersion": V2, "metal3ApiVersion": V2});
    let (md, ms, kcp) = (
        std::slice::from_ref(&md2),
        std::slice::from_ref(&ms2),
        std::slice::from_ref(&kcp2),
    );
    let (md_1, ms_1, kcp_1) = (
        std::slice::from_ref(&md1),
        std::slice::from_ref(&ms1),
        std::slice::from_ref(&kcp1),
    );
    fn v1<'a>(
        md: &'a [Value],
        ms: &'a [Value],
        kcp: &'a [Value],
        m3m: Option<&'a [Value]>,
    ) -> Infra<'a> {
        Infra {
            md,
            ms,
            kcp,
            m3m,
            ..Infra::default()
        }
    }
    let cluster_get =
        |found: Option<Value>| get_call("Cluster", V2, "edge-a", false, found.as_ref());
    let template_get = |found: Option<&Value>| {
        get_call(
            "Metal3MachineTemplate",
            V2,
            "edge-a-workers-7f3c9d2e",
            true,
            found,
        )
    };
    let data_lists = {
        let mut calls = vec![crd_call(
            V2,
            Crds {
                also: &[("Metal3DataClaim", V2), ("Metal3Data", V2)],
                ..Crds::default()
            },
        )];
        calls.extend(list_at("Metal3Machine", V2, std::slice::from_ref(&m3m2)));
        calls.extend(list_at(
            "Metal3MachineTemplate",
            V2,
            std::slice::from_ref(&tpl_workers2),
        ));
        calls.extend(list_at(
            "Metal3DataClaim",
            V2,
            std::slice::from_ref(&claim2),
        ));
        calls.extend(list_at("Metal3Data", V2, &[]));
        calls
    };
    let empty: &[Value] = &[];
    let mut out = vec![
        // Row 1, v1beta1: the MachineDeployment names the template; RKE2 is not installed.
        ("guard-row1-machinedeployment-v1beta1", case(delete(&tpl_workers1, false), infra_lists(V1, v1(md_1, ms_1, kcp_1, Some(std::slice::from_ref(&m3m1)))))),
        // The same request as a dry run gets the same answer.
        ("guard-row1-machinedeployment-dryrun", case(delete(&tpl_workers1, true), infra_lists(V1, v1(md_1, ms_1, kcp_1, Some(std::slice::from_ref(&m3m1)))))),
        // Row 1, v1beta2: the old MachineSet still names the previous template (nodeReuse true).
        ("guard-row1-machineset-v1beta2", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // The same with explicit v1beta2 settings on a release that serves both versions.
        ("guard-explicit-v1beta2", Case { settings: v2_settings.clone(), ..case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() })) }),
        // Row 1: a MachineSet scaled to zero with no machines left releases the template.
        ("guard-row1-scaled-down-machineset", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&scaled_ms2), kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // Row 1: a MachineSet outside a MachineDeployment keeps its templates scaled to zero.
        ("guard-row1-standalone-machineset", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&standalone_ms2), kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // Row 1: the MachineSet of the MachineDeployment's current revision keeps its templates at
        // zero replicas (isCurrentMachineSet, machineset_controller.go@v1.14.0).
        ("guard-row1-current-revision-machineset", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&current_ms2), kcp, rke2: Some(empty), ..Infra::default() }))),
        // Row 1, v1beta2: an old revision scaled to zero keeps its templates while it has
        // machines: Cluster API 1.12 and newer with InPlaceUpdates read them
        // (reconcileInPlaceUpdateIntent, getTemplateObjects@v1.14.0).
        ("guard-row1-old-revision-draining", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&draining_ms2), kcp, rke2: Some(empty), ..Infra::default() }))),
        // The same with node reuse: CAPM3 1.13 reads it through the MachineSet for each machine.
        ("guard-row1-old-revision-draining-node-reuse", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&draining_ms2), kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // Row 1: the MachineSet of the current revision, being deleted with machines left, keeps
        // its templates for the same reason; once its machines are gone it lets them go.
        ("guard-row1-deleting-machineset-with-machines", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&deleting_current_ms2), kcp, rke2: Some(empty), ..Infra::default() }))),
        ("guard-row1-deleting-machineset-drained", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&deleted_current_ms2), kcp, rke2: Some(empty), ..Infra::default() }))),
        // Row 1, v1beta2: a MachineSet whose MachineDeployment is gone reads no template
        // (Reconcile returns getOwnerMachineDeployment's error first, @v1.14.0).
        ("guard-row1-owner-gone-machineset", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md: empty, ms, kcp, rke2: Some(empty), ..Infra::default() }))),
        // Row 2: Kairos reads the template only in the namespace its reference names.
        ("guard-row2-kairos-other-namespace", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: empty, kcp, rke2: Some(empty), also: &[("KairosControlPlane", V2, vec![kairos_elsewhere])], ..Infra::default() }))),
        ("guard-row2-kairos-own-namespace", case(delete(&old_tpl_no_reuse, false), infra_lists(V2, Infra { md, ms: empty, kcp, rke2: Some(empty), also: &[("KairosControlPlane", V2, vec![kairos_here])], ..Infra::default() }))),
        // Row 1, Cluster API 1.10: a MachineDeployment in another namespace whose reference names
        // the template's namespace keeps it (listed across namespaces).
        ("guard-row1-cross-namespace-v1beta1", case(delete(&tpl_workers1, false), infra_lists(V1, Infra { md: std::slice::from_ref(&md1_east), kcp: std::slice::from_ref(&kcp1), m3m: Some(empty), ..Infra::default() }))),
        // Row 1, v1beta1: a MachineDeployment of the template's namespace whose reference names
        // another namespace still keeps it (Cluster API 1.8 and older read their own namespace).
        ("guard-row1-other-namespace-v1beta1", case(delete(&tpl_workers1, false), infra_lists(V1, Infra { md: std::slice::from_ref(&md1_west_ref), kcp: std::slice::from_ref(&kcp1), m3m: Some(empty), ..Infra::default() }))),
        // Row 1, v1beta1: a MachineDeployment of another namespace naming a third keeps nothing here.
        ("guard-row1-third-namespace-v1beta1", case(delete(&tpl_workers1, false), infra_lists(V1, Infra { md: std::slice::from_ref(&md1_east_west_ref), kcp: std::slice::from_ref(&kcp1), m3m: Some(empty), ..Infra::default() }))),
        // Row 1: referrers being deleted do not count (its controller wrote status.replicas 0).
        ("guard-row1-deleting-referrers", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: &[with(&deleting(&ms2), "status", json!({"replicas": 0}))], kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // Row 1, bootstrap template: only MachineDeployments, MachineSets and ClusterClasses are read.
        ("guard-row1-bootstrap-template", case(delete(&kct2, false), class_lists(V2, md, ms, std::slice::from_ref(&cc2)))),
        // Row 2: KubeadmControlPlane; row 4 too, its Metal3Machine was cloned from the template.
        ("guard-row2-kubeadmcontrolplane", case(delete(&no_owner(&tpl_cp2), false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(&[m3m2.clone(), m3m_cp2.clone()]), ..Infra::default() }))),
        // Row 2: RKE2ControlPlane naming the template only in the deprecated v1beta1 field.
        ("guard-row2-rke2-deprecated-field", case(delete(&old_template(&tpl_workers1, "edge-c-cp-9b02d4e1", V1), false), infra_lists(V1, Infra { rke2: Some(std::slice::from_ref(&rke2_legacy)), m3m: Some(empty), ..v1(md_1, ms_1, kcp_1, None) }))),
        // Row 3: a ClusterClass names the bootstrap template of a worker class.
        ("guard-row3-clusterclass", case(delete(&with_meta(&kct2, "name", json!("metal3-kubeadm-storage-bootstrap")), false), class_lists(V2, md, ms, std::slice::from_ref(&cc2)))),
        // Row 3: a ClusterClass keeps its control-plane template and its infrastructure cluster
        // template; only ClusterClasses can name them, so only they are read.
        ("guard-row3-kubeadmcontrolplanetemplate", case(delete(&template_object(CP, "KubeadmControlPlaneTemplate", "metal3-kubeadm-cp"), false), vec![crd_call(V2, Crds::default()), list_call("ClusterClass", V2, std::slice::from_ref(&cc2), None)])),
        ("guard-row3-metal3clustertemplate", case(delete(&template_object(INFRA, "Metal3ClusterTemplate", "metal3-kubeadm-cluster"), false), vec![crd_call(V2, Crds::default()), list_call("ClusterClass", V2, std::slice::from_ref(&cc2), None)])),
        // Row 3: the ClusterClass is being deleted: its templates are released.
        ("guard-row3-clusterclass-deleting", case(delete(&template_object(INFRA, "Metal3ClusterTemplate", "metal3-kubeadm-cluster"), false), vec![crd_call(V2, Crds::default()), list_call("ClusterClass", V2, &[deleting(&cc2)], None)])),
        // Row 1, any provider: an OpenStackMachineTemplate kept by a MachineSet.
        ("guard-row1-openstack-machineset", case(delete(&template_object(INFRA, "OpenStackMachineTemplate", "edge-os-workers-41d2"), false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&openstack_ms), kcp, rke2: Some(empty), ..Infra::default() }))),
        // A v1beta1-only release (Cluster API before 1.11) with default settings.
        ("guard-v1beta1-release", case(delete(&tpl_workers1, false), infra_lists(V1, v1(md_1, ms_1, kcp_1, Some(std::slice::from_ref(&m3m1)))))),
        // A v1beta2-only release with default settings: a referenced template is kept, an
        // unreferenced one is deleted.
        ("guard-v1beta2-release-kept", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        ("guard-v1beta2-release-unused", case(delete(&old_template(&no_owner(&tpl_workers2), "edge-a-workers-00000000", V2), false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }))),
        // The RKE2 provider older than Cluster API: RKE2ControlPlane served at v1beta1 only.
        ("guard-rke2-older-than-capi", case(delete(&no_owner(&old_template(&tpl_workers2, "edge-b-cp-0c7e11f2", V2)), false), infra_lists(V2, Infra { md, ms, kcp, rke2: Some(std::slice::from_ref(&rke2_1)), rke2_version: Some(V1), m3m: Some(empty), ..Infra::default() }))),
        // An explicit controlPlaneApiVersion v1beta2 on Cluster API 1.10 (v1beta1 only): refused,
        // naming the setting.
        ("guard-wrong-explicit-setting", Case { settings: json!({"controlPlaneApiVersion": V2}), ..case(delete(&no_owner(&tpl_cp1), false), [vec![crd_call(V1, Crds::default())], list_at("MachineDeployment", V1, std::slice::from_ref(&md1)), list_at("MachineSet", V1, std::slice::from_ref(&ms1))].concat()) }),
        // Row 4: only a Metal3Machine being deleted still needs the nodeReuse template.
        ("guard-row4-metal3machine", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: std::slice::from_ref(&scaled_ms2), kcp, rke2: Some(empty), m3m: Some(&[deleting(&m3m2)]), ..Infra::default() }))),
        // Row 5: clusterctl move: accepted with no lookup at all.
        ("guard-row5-clusterctl-move", case(delete(&moved, false), vec![])),
        // Row 6: the owning Cluster is being deleted, gone, or live.
        ("guard-row6-cluster-deleting", case(delete(&tpl_workers2, false), [infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }), vec![cluster_get(Some(cluster(true)))]].concat())),
        ("guard-row6-cluster-gone", case(delete(&tpl_workers2, false), [infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }), vec![cluster_get(None)]].concat())),
        ("guard-row6-cluster-live", case(delete(&tpl_workers2, false), [infra_lists(V2, Infra { md, ms, kcp, rke2: Some(empty), m3m: Some(empty), ..Infra::default() }), vec![cluster_get(Some(cluster(false)))]].concat())),
        // Nothing names the template: accepted.
        ("guard-unused-template", case(delete(&old_template(&tpl_workers1, "edge-a-workers-00000000", V1), false), infra_lists(V1, v1(md_1, ms_1, kcp_1, Some(std::slice::from_ref(&m3m1)))))),
        // A failed lookup rejects, or accepts with a warning when failOpenOnLookupError is set:
        // MachineSet missing from contextAwareResources, in the host's own words.
        ("guard-lookup-failure", case(delete(&tpl_workers1, false), [vec![crd_call(V1, Crds::default())], list_at("MachineDeployment", V1, std::slice::from_ref(&md1)), vec![list_call("MachineSet", V1, &[], Some("Policy has not been granted access to Kubernetes cluster.x-k8s.io/v1beta1/MachineSet resources. The violation has been reported."))]].concat())),
        // The configured CAPI version is not served: refused after the CRD list, naming the setting.
        ("guard-capi-version-not-served", Case { settings: v2_settings.clone(), ..case(delete(&tpl_workers2, false), vec![crd_call(V1, Crds::default())]) }),
        // Rule 1: a KubeadmControlPlane being deleted keeps its machine template.
        ("guard-rule1-deleting-control-plane", case(delete(&no_owner(&tpl_cp2), false), infra_lists(V2, Infra { md, ms, kcp: &[deleting(&kcp2)], m3m: Some(empty), ..Infra::default() }))),
        // Rule 2: a MachineSet being deleted that still has machines keeps its nodeReuse template;
        // one whose controller has not written status.replicas yet may have machines: kept.
        ("guard-rule2-draining-machineset", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: &[with(&deleting(&ms2), "status", json!({"replicas": 2}))], kcp, m3m: Some(empty), ..Infra::default() }))),
        ("guard-rule2-machineset-not-counted-yet", case(delete(&old_tpl_1b8, false), infra_lists(V2, Infra { md, ms: &[deleting(&ms2)], kcp, m3m: Some(empty), ..Infra::default() }))),
    ];
    // Rule 3: the owning Cluster is being deleted, but a MachineDeployment of another Cluster
    // names the template: kept.
    let mut md2_b = with_meta(
        &md2,
        "labels",
        json!({"cluster.x-k8s.io/cluster-name": "edge-b"}),
    );
    md2_b["spec"]["clusterName"] = json!("edge-b");
    out.push((
        "guard-rule3-other-cluster-keeps",
        case(
            delete(&tpl_workers2, false),
            [
                infra_lists(
                    V2,
                    Infra {
                        md: std::slice::from_ref(&md2_b),
                        kcp,
                        m3m: Some(empty),
                        ..Infra::default()
                    },
                ),
                vec![cluster_get(Some(cluster(true)))],
            ]
            .concat(),
        ),
    ));
    let mut created_own_mode = created.clone();
    created_own_mode["spec"]["automatedCleaningMode"] = json!("metadata");
    let mut already = created.clone();
    already["metadata"]["annotations"]["capi-template-guard.kubewarden.io/node-reuse"] =
        json!("true");
    already["metadata"]["annotations"]["capi-template-guard.kubewarden.io/source-template"] =
        json!("edge-a-workers-7f3c9d2e");
    already["spec"]["automatedCleaningMode"] = json!("disabled");
    let owner_ms = with(
        &with_meta(&md2, "name", json!("edge-a-md-storage-7c4b9d5f8")),
        "kind",
        json!("MachineSet"),
    );
    let owner_get = get_call(
        "MachineSet",
        V2,
        "edge-a-md-storage-7c4b9d5f8",
        false,
        Some(&owner_ms),
    );
    out.extend([
        // Rule 4: a TalosControlPlane (served at v1alpha3) keeps its machine template.
        ("guard-rule4-talos-control-plane", case(delete(&no_owner(&tpl_cp2), false), infra_lists(V2, Infra { md, ms, m3m: Some(empty), also: &[("TalosControlPlane", "v1alpha3", vec![talos.clone()])], ..Infra::default() }))),
        // Rule 5: remediation templates, kept by a MachineHealthCheck (v1beta2) and by a
        // Cluster's topology health check (v1beta1).
        ("guard-rule5-machinehealthcheck", case(delete(&remediation_template, false), remediation_lists(V2, std::slice::from_ref(&cc2), std::slice::from_ref(&mhc2), &[]))),
        ("guard-rule5-cluster-topology-v1beta1", case(delete(&remediation_template, false), remediation_lists(V1, &[], &[], std::slice::from_ref(&topology_cluster1)))),
        ("guard-rule5-unused-remediation-template", case(delete(&remediation_template, false), remediation_lists(V2, std::slice::from_ref(&cc2), &[], &[]))),
        // Other kinds and operations: accepted with no lookup.
        ("guard-delete-metal3machine", case(delete(&m3m2, false), vec![])),
        ("guard-update-template", case(request("UPDATE", (INFRA, "Metal3MachineTemplate", V2), tpl_workers2["metadata"]["name"].as_str().unwrap_or(""), Some(&tpl_workers2), Some(&tpl_workers2), false), vec![])),
        // A DELETE without oldObject cannot be checked: rejected.
        ("guard-delete-without-oldobject", case(request("DELETE", (INFRA, "Metal3MachineTemplate", V2), "edge-a-workers-7f3c9d2e", None, None, false), vec![])),
        // Mutation, as the MachineSet controller creates the machine (annotations present).
        ("mutate-create-from-annotations", case(create(&created), vec![template_get(Some(&tpl_workers2))])),
        // Mutation: no cloned-from annotations, the MachineSet owner names the template.
        ("mutate-create-owner-fallback", case(create(&with_meta(&created, "annotations", json!({}))), vec![crd_call(V2, Crds::default()), owner_get, template_get(Some(&tpl_workers2))])),
        // Mutation: the machine already carries its own cleaning mode; only the annotations are added.
        ("mutate-keeps-machine-cleaning-mode", case(create(&created_own_mode), vec![template_get(Some(&tpl_workers2))])),
        // Mutation: a machine that already carries the intent (clusterctl move) gets no patch.
        ("mutate-already-mutated", case(create(&already), vec![template_get(Some(&tpl_workers2))])),
        // Mutation: the template is gone; creation goes on, with a warning.
        ("mutate-template-missing", case(create(&created), vec![template_get(None)])),
        // Mutation with the CRD list refused: the annotations name the template, which is read at
        // the machine's version without the CRD list, so the machine is mutated at once.
        ("mutate-crd-list-refused", case(create(&created), vec![template_get(Some(&tpl_workers2))])),
        // A Metal3DataTemplate is kept by the Metal3MachineTemplate, the Metal3Machine and the
        // claim that name it; nothing but CAPM3's kinds is read for it. Nothing names it: deleted.
        ("guard-data-template-kept", case(delete(&data_template, false), data_lists.clone())),
        ("guard-data-template-unused", case(delete(&with_meta(&data_template, "name", json!("edge-a-workers-metadata-0ld")), false), data_lists)),
        // A Talos release newer than the policy (only v1alpha4 served): the host refuses the scan
        // before it reaches the session, and the deletion fails closed naming the grant.
        ("guard-scan-future-version", case(delete(&no_owner(&tpl_cp2), false), [vec![crd_call(V2, Crds { also: &[("TalosControlPlane", "v1alpha4")], ..Crds::default() })], scan_lists(&md2, &ms2)].concat())),
        // Kinds known to name no template and one the operator declares are installed: none is
        // listed, nothing is asked.
        ("guard-scan-kinds-naming-no-template", Case { settings: json!({"kindsNamingNoTemplate": ["FooControlPlane.controlplane.cluster.x-k8s.io"]}), ..case(delete(&no_owner(&tpl_cp2), false), [vec![crd_call(V2, Crds { others: &no_template_kinds, ..Crds::default() })], scan_lists(&md2, &ms2)].concat()) }),
        // An unknown control-plane kind the shipped RBAC does not grant: can_i first, refused,
        // fails closed at once naming the rule; it never lists the kind.
        ("guard-scan-not-permitted", case(delete(&no_owner(&tpl_cp2), false), [vec![crd_call(V2, Crds { others: &[(CP, "FooControlPlane", "v1alpha1")], ..Crds::default() })], scan_lists(&md2, &ms2), vec![can_i_call("foocontrolplanes", false)]].concat())),
        // A CRD whose versions are all served: false is not installed: RKE2 is not listed.
        ("guard-served-false", case(delete(&tpl_workers2, false), [vec![crd_call(V2, Crds { also: &[("RKE2ControlPlane", V2)], unserved: &["RKE2ControlPlane"], ..Crds::default() })], list_at("MachineDeployment", V2, md), list_at("MachineSet", V2, ms), list_at("KubeadmControlPlane", V2, kcp), list_at("ClusterClass", V2, &[]), list_at("Metal3Machine", V2, &[]), vec![cluster_get(Some(cluster(false)))]].concat())),
        // The template has a Cluster owner and no Cluster CRD is listed: fails closed.
        ("guard-cluster-crd-missing", case(delete(&tpl_workers2, false), [vec![crd_call(V2, Crds { without: &["Cluster"], ..Crds::default() })], list_at("MachineDeployment", V2, md), list_at("MachineSet", V2, ms), list_at("KubeadmControlPlane", V2, kcp), list_at("ClusterClass", V2, &[]), list_at("Metal3Machine", V2, &[])].concat())),
        // Kubewarden 1.36 refuses the host capability itself: its own 500 and hint.
        ("guard-capability-denied", case(delete(&tpl_workers2, false), vec![crd_call(V2, Crds { error: Some(CAPABILITY_DENIED), ..Crds::default() })])),
        // UPDATE of a Metal3Machine: no lookup, no patch.
        ("mutate-update-ignored", case(request("UPDATE", (INFRA, "Metal3Machine", V2), created["metadata"]["name"].as_str().unwrap_or(""), Some(&created), Some(&created), false), vec![])),
    ]);
    out
}
