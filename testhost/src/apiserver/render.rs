//! Objects as the API server returns them: in the shape of the API version asked for (Cluster API
//! v1beta1 ObjectReferences with apiVersion, v1beta2 ContractVersionedObjectReferences with
//! apiGroup), and the AdmissionReview requests the simulation and the bench send about them.

use serde_json::{Value, json};

use super::kube;
use super::objects::{Kind, NAMESPACE, Obj, Providers, Ref, Spec};

/// The AdmissionReview request of a DELETE, CREATE or UPDATE of `obj` by `user`, with `obj` at
/// `version`, and the object as sent.
pub fn admission_request(
    operation: &str,
    obj: &Obj,
    version: &str,
    installed: &Providers,
    uid: &str,
    user: &str,
) -> (Value, Value) {
    let kind = obj.kind;
    let mut value = render(obj, version, installed);
    let options = match operation {
        "DELETE" => "DeleteOptions",
        "CREATE" => "CreateOptions",
        _ => "UpdateOptions",
    };
    let mut options = json!({"apiVersion": "meta.k8s.io/v1", "kind": options});
    let key = if operation == "DELETE" {
        options["propagationPolicy"] = json!("Background");
        "oldObject"
    } else {
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            // assigned or written by the API server, after admission (the clients send none)
            let server = ["uid", "resourceVersion", "creationTimestamp", "generation"];
            for key in server.into_iter().chain(["managedFields"]) {
                meta.remove(key);
            }
        }
        "object"
    };
    let gvk = json!({"group": kind.group(), "version": version, "kind": kind.name()});
    let gvr =
        json!({"group": kind.group(), "version": version, "resource": kube::plural(kind.name())});
    let mut request = json!({
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": obj.name,
        "namespace": NAMESPACE,
        "operation": operation,
        "userInfo": {"username": user, "groups": ["system:authenticated"]},
        "dryRun": false,
        "options": options,
    });
    request[key] = value.clone();
    if operation == "UPDATE" {
        request["oldObject"] = value.clone();
    }
    (request, value)
}

/// RFC 3339 time of a simulated second (the simulation starts 2026-11-01T00:00:00Z).
fn timestamp(secs: u64) -> String {
    let day = (1 + secs / 86_400).min(30);
    let (h, m, s) = (secs % 86_400 / 3600, secs % 3600 / 60, secs % 60);
    format!("2026-11-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

/// A ClusterClass reference: apiVersion (the version the provider serves its templates at),
/// kind and name.
fn class_ref(r: &Ref, installed: &Providers) -> Value {
    json!({"apiVersion": installed.api_version(r.kind), "kind": r.kind.name(), "name": r.name})
}

/// A v1beta1 ObjectReference (a class reference with the namespace), or a v1beta2
/// ContractVersionedObjectReference.
fn reference(r: &Ref, version: &str, installed: &Providers) -> Value {
    if version != "v1beta1" {
        return json!({"apiGroup": r.kind.group(), "kind": r.kind.name(), "name": r.name});
    }
    let mut v = class_ref(r, installed);
    v["namespace"] = json!(NAMESPACE);
    v
}

/// `value` without the members that are null, empty maps or empty lists: fields unset or empty,
/// which the API server leaves out.
fn omit_empty(mut value: Value) -> Value {
    if let Some(map) = value.as_object_mut() {
        map.retain(|_, v| match v {
            Value::Null => false,
            Value::Array(items) => !items.is_empty(),
            Value::Object(members) => !members.is_empty(),
            _ => true,
        });
    }
    value
}

/// The object as the API server returns it at `version`.
pub fn render(obj: &Obj, version: &str, installed: &Providers) -> Value {
    let cluster_owner = obj.owner_cluster.iter().map(|cluster| {
        json!({
            "apiVersion": installed.api_version(Kind::Cluster),
            "kind": "Cluster",
            "name": cluster,
            "uid": format!("c1a55e00-0000-4000-8000-{:>012}", cluster.len()),
        })
    });
    let controller = obj.controller.iter().map(|(kind, name)| {
        json!({
            "apiVersion": installed.api_version(*kind),
            "kind": kind.name(),
            "name": name,
            "uid": "0c0c0c0c-0000-4000-8000-000000000000",
            "controller": true,
            "blockOwnerDeletion": true,
        })
    });
    let meta = omit_empty(json!({
        "name": obj.name,
        "namespace": NAMESPACE,
        "uid": format!("00000000-0000-4000-8000-{:012x}", obj.uid),
        "resourceVersion": obj.uid.to_string(),
        "generation": 1,
        "creationTimestamp": timestamp(obj.created),
        "managedFields": [{"manager": "simulation", "operation": "Update", "apiVersion": format!("{}/{version}", obj.kind.group())}],
        "labels": obj.labels,
        "annotations": obj.annotations,
        "finalizers": obj.finalizers,
        "deletionTimestamp": obj.deleting.map(timestamp),
        "deletionGracePeriodSeconds": obj.deleting.map(|_| 0),
        "ownerReferences": cluster_owner.chain(controller).collect::<Vec<_>>(),
    }));

    let v1 = version == "v1beta1";
    let image = "https://images.edge.internal/ubuntu-2404-kube-v1.33.4.qcow2";
    let host_selector = json!({"matchLabels": {"edge.example.org/role": "storage-worker"}});
    // the spec a MachineDeployment and a MachineSet share: replicas and the Machine template
    let machine_set_spec = |infra: &Ref, bootstrap: &Ref, replicas: u32| {
        json!({
            "clusterName": obj.owner_cluster,
            "replicas": replicas,
            "template": {"spec": {
                "clusterName": obj.owner_cluster,
                "version": "v1.33.4",
                "bootstrap": {"configRef": reference(bootstrap, version, installed)},
                "infrastructureRef": reference(infra, version, installed),
            }},
        })
    };
    let (spec, status) = match &obj.spec {
        Spec::Cluster { paused } => (
            json!({"paused": paused, "controlPlaneEndpoint": {"host": "192.0.2.10", "port": 6443}}),
            json!({"phase": if obj.deleting.is_some() { "Deleting" } else { "Provisioned" }}),
        ),
        Spec::Template {
            node_reuse,
            cleaning,
        } => {
            let m3 = obj.kind == Kind::Metal3MachineTemplate;
            let inner = if m3 {
                json!({
                    "image": {"url": image, "checksum": format!("{image}.sha256sum"), "checksumType": "sha256"},
                    "hostSelector": host_selector,
                    "automatedCleaningMode": cleaning,
                })
            } else {
                json!({
                    "joinConfiguration": {"nodeRegistration": {"name": "{{ ds.meta_data.name }}"}},
                    "automatedCleaningMode": cleaning,
                })
            };
            let spec = json!({"template": {"spec": omit_empty(inner)}, "nodeReuse": m3.then_some(node_reuse)});
            (omit_empty(spec), Value::Null)
        }
        Spec::MachineDeployment(md) => {
            let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": md.max_surge, "maxUnavailable": md.max_unavailable}});
            let mut spec = machine_set_spec(&md.infra, &md.bootstrap, md.replicas);
            if v1 {
                spec["strategy"] = strategy;
            } else {
                spec["rollout"] = json!({ "strategy": strategy });
            }
            (spec, json!({"replicas": md.replicas}))
        }
        Spec::MachineSet(ms) => (
            machine_set_spec(&ms.infra, &ms.bootstrap, ms.replicas),
            omit_empty(json!({ "replicas": ms.status_replicas })),
        ),
        Spec::ControlPlane(cp) => {
            let r = reference(&cp.infra, version, installed);
            let mut spec = json!({
                "replicas": cp.replicas,
                "version": "v1.33.4",
                "rolloutStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": cp.max_surge}},
            });
            if !v1 {
                spec["machineTemplate"] = json!({"spec": {"infrastructureRef": r}});
            } else if cp.legacy_ref && obj.kind == Kind::Rke2ControlPlane {
                spec["infrastructureRef"] = r;
            } else {
                spec["machineTemplate"] = json!({ "infrastructureRef": r });
            }
            (spec, json!({"replicas": cp.replicas}))
        }
        Spec::ClusterClass { cp_infra, workers } => {
            let key = if v1 { "ref" } else { "templateRef" };
            let workers: Vec<Value> = workers
                .iter()
                .map(|w| {
                    let mut worker = json!({
                        "bootstrap": {key: class_ref(&w.bootstrap, installed)},
                        "infrastructure": {key: class_ref(&w.infra, installed)},
                    });
                    if v1 {
                        worker = json!({ "template": worker });
                    }
                    worker["class"] = json!(w.class);
                    worker
                })
                .collect();
            let spec = json!({
                "controlPlane": {"machineInfrastructure": {key: class_ref(cp_infra, installed)}},
                "workers": {"machineDeployments": workers},
            });
            (spec, Value::Null)
        }
        Spec::Metal3Machine { cleaning, .. } => (
            omit_empty(json!({
                "image": {"url": image},
                "hostSelector": host_selector,
                "automatedCleaningMode": cleaning,
            })),
            Value::Null,
        ),
    };
    let mut out = json!({
        "apiVersion": format!("{}/{version}", obj.kind.group()),
        "kind": obj.kind.name(),
        "metadata": meta,
        "spec": spec,
    });
    if !status.is_null() {
        out["status"] = status;
    }
    out
}
