//! The simulated API server: the objects of [`super::objects`], served in the shape of the API
//! version asked for (Cluster API v1beta1 ObjectReferences with apiVersion, v1beta2
//! ContractVersionedObjectReferences with apiGroup), with field masks, list answers, the CRD list
//! and the host's error texts from [`crate::kube`].

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

#[cfg(test)]
use super::objects::MsSpec;
use super::objects::{installed, Kind, Obj, Ref, Release, Spec, Store, NAMESPACE};
use crate::host::{lock, Responder};
use crate::kube::{self, Crd};
use crate::session::KubeRequest;

/// The simulated cluster(s) the host answers from: the management cluster, and the target of a
/// `clusterctl move`.
#[derive(Debug, Clone, Default)]
pub struct Api {
    pub release: Release,
    pub stores: [Store; 2],
    /// Which store answers the policy's lookups (0: source, 1: move target).
    pub active: usize,
    pub host_calls: u64,
}

impl Api {
    pub fn new(release: Release) -> Self {
        Api {
            release,
            ..Api::default()
        }
    }

    /// The simulated kind (`None`: installed, held empty) and the version `api_version` names.
    fn resolve<'v>(
        &self,
        api_version: &'v str,
        kind: &str,
    ) -> Result<(Option<Kind>, &'v str), String> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let mut served = installed()
            .filter(|&(g, _, p, _)| g == group && self.release.provider_serves(p, version))
            .peekable();
        if served.peek().is_none() {
            return Err(kube::no_such_group_version(api_version, kind));
        }
        match served.find(|&(_, name, ..)| name == kind) {
            Some((.., simulated)) => Ok((simulated, version)),
            None => Err(kube::no_such_kind(api_version, kind)),
        }
    }

    fn render(&self, obj: &Obj, version: &str, masks: Option<&BTreeSet<String>>) -> Value {
        kube::apply_masks(&render(obj, version, &self.release), masks)
    }

    fn list(
        &self,
        (api_version, kind): (&str, &str),
        namespace: &str,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, String> {
        let (simulated, version) = self.resolve(api_version, kind)?;
        let selector = parse_selector(label_selector)?;
        if field_selector.is_some_and(|f| !f.is_empty()) {
            return Err(format!(
                "simulation: field selectors are not simulated ({field_selector:?})"
            ));
        }
        let items = simulated
            .filter(|_| namespace == NAMESPACE)
            .into_iter()
            .flat_map(|k| self.stores[self.active].of_kind(k))
            .filter(|o| selector.iter().all(|(k, v)| o.labels.get(k) == Some(v)))
            .map(|o| self.render(o, version, masks))
            .collect();
        Ok(kube::list_answer(api_version, kind, "1", items))
    }

    fn get(
        &self,
        (api_version, kind): (&str, &str),
        name: &str,
        namespace: Option<&str>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, String> {
        let (simulated, version) = self.resolve(api_version, kind)?;
        simulated
            .filter(|_| namespace == Some(NAMESPACE))
            .and_then(|k| self.stores[self.active].get(k, name))
            .map(|o| self.render(o, version, masks))
            .ok_or_else(|| kube::no_such_object(api_version, kind, name, namespace))
    }

    /// The CRDs of every kind the installed providers serve, built from the tables the
    /// lookups resolve against, so a kind added there is installed here too.
    pub fn crds(&self) -> Vec<Crd> {
        installed()
            .filter_map(|(group, kind, provider, _)| {
                let versions: Vec<(String, bool)> = ["v1beta1", "v1beta2"]
                    .into_iter()
                    .filter(|v| self.release.provider_serves(provider, v))
                    .map(|v| (v.to_string(), true))
                    .collect();
                (!versions.is_empty()).then(|| Crd {
                    group: group.into(),
                    kind: kind.into(),
                    versions,
                })
            })
            .collect()
    }
}

fn parse_selector(selector: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let Some(text) = selector.filter(|s| !s.is_empty()) else {
        return Ok(Vec::new());
    };
    text.split(',')
        .map(|term| {
            term.split_once('=')
                .filter(|(k, _)| !k.ends_with('!'))
                .map(|(k, v)| (k.to_string(), v.trim_start_matches('=').to_string()))
                .ok_or_else(|| format!("simulation: label selector {text:?} is not simulated"))
        })
        .collect()
}

/// The host side of the simulation: answers the policy's Kubernetes calls from [`Api`].
pub struct SimHost {
    pub api: Arc<Mutex<Api>>,
}

impl Responder for SimHost {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let mut api = lock(&self.api);
        api.host_calls += 1;
        let resource = request.resource();
        let crds = resource == (kube::CRD_API_VERSION, kube::CRD_KIND);
        let answer = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => api.list(
                resource,
                &r.namespace,
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesListResourceAll(r) if crds => {
                Ok(kube::crd_list(&api.crds(), r.field_masks.as_ref()))
            }
            // one namespace holds every object
            KubeRequest::KubernetesListResourceAll(r) => api.list(
                resource,
                NAMESPACE,
                r.label_selector.as_deref(),
                r.field_selector.as_deref(),
                r.field_masks.as_ref(),
            ),
            KubeRequest::KubernetesGetResource(r) => api.get(
                resource,
                &r.name,
                r.namespace.as_deref(),
                r.field_masks.as_ref(),
            ),
        }?;
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

/// RFC 3339 time of a simulated second (the simulation starts 2026-11-01T00:00:00Z).
fn timestamp(secs: u64) -> String {
    let (day, rest) = (1 + secs / 86_400, secs % 86_400);
    format!(
        "2026-11-{:02}T{:02}:{:02}:{:02}Z",
        day.min(30),
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// A ClusterClass reference: apiVersion (the version the provider serves its templates at),
/// kind and name.
fn class_ref(r: &Ref, release: &Release) -> Value {
    json!({"apiVersion": release.api_version(r.kind), "kind": r.kind.name(), "name": r.name})
}

/// A v1beta1 ObjectReference (a class reference with the namespace), or a v1beta2
/// ContractVersionedObjectReference.
fn reference(r: &Ref, version: &str, release: &Release) -> Value {
    if version != "v1beta1" {
        return json!({"apiGroup": r.kind.group(), "kind": r.kind.name(), "name": r.name});
    }
    let mut v = class_ref(r, release);
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
pub fn render(obj: &Obj, version: &str, release: &Release) -> Value {
    let cluster_owner = obj.owner_cluster.iter().map(|cluster| {
        json!({
            "apiVersion": release.api_version(Kind::Cluster),
            "kind": "Cluster",
            "name": cluster,
            "uid": format!("c1a55e00-0000-4000-8000-{:>012}", cluster.len()),
        })
    });
    let controller = obj.controller.iter().map(|(kind, name)| {
        json!({
            "apiVersion": release.api_version(*kind),
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
                "bootstrap": {"configRef": reference(bootstrap, version, release)},
                "infrastructureRef": reference(infra, version, release),
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
            let r = reference(&cp.infra, version, release);
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
                        "bootstrap": {key: class_ref(&w.bootstrap, release)},
                        "infrastructure": {key: class_ref(&w.infra, release)},
                    });
                    if v1 {
                        worker = json!({ "template": worker });
                    }
                    worker["class"] = json!(w.class);
                    worker
                })
                .collect();
            let spec = json!({
                "controlPlane": {"machineInfrastructure": {key: class_ref(cp_infra, release)}},
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

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;

    /// Cluster API >= 1.11, CAPM3 <= 1.12, no RKE2, and one MachineSet.
    fn api() -> Api {
        let mut api = Api::new(Release {
            capi_v1beta2: true,
            metal3_v1beta2: false,
            rke2: None,
        });
        let spec = Spec::MachineSet(MsSpec {
            infra: Ref::new(Kind::Metal3MachineTemplate, "w-1"),
            bootstrap: Ref::new(Kind::KubeadmConfigTemplate, "b-1"),
            replicas: 2,
            status_replicas: Some(2),
        });
        let mut ms = Obj::new(Kind::MachineSet, "md-1", spec);
        ms.owner_cluster = Some("edge-a".into());
        api.stores[0].create(ms, 10);
        api
    }

    fn list(api_version: &str, kind: &str, masks: &[&str]) -> Result<Value, String> {
        let masks = masks.iter().map(|m| m.to_string()).collect();
        api().list((api_version, kind), NAMESPACE, None, None, Some(&masks))
    }

    #[test]
    fn list_in_both_shapes_with_masks() {
        let masks = ["spec.template.spec.infrastructureRef", "status.replicas"];
        let v2 = list("cluster.x-k8s.io/v1beta2", "MachineSet", &masks).unwrap();
        assert_eq!(v2["kind"], "MachineSetList");
        let item = &v2["items"][0];
        assert_eq!(
            item["spec"],
            json!({"template": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "w-1"}}}})
        );
        assert_eq!(item["status"], json!({"replicas": 2}));
        assert!(item["metadata"].get("managedFields").is_none());
        assert_eq!(item["metadata"]["ownerReferences"][0]["kind"], "Cluster");
        let v1 = list("cluster.x-k8s.io/v1beta1", "MachineSet", &masks[..1]).unwrap();
        // CAPM3 <= 1.12 serves its templates at v1beta1 only
        assert_eq!(
            v1["items"][0]["spec"]["template"]["spec"]["infrastructureRef"]["apiVersion"],
            "infrastructure.cluster.x-k8s.io/v1beta1"
        );
    }

    #[test]
    fn host_error_texts() {
        let err = list(
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "Metal3Machine",
            &[],
        );
        assert_eq!(
            err.unwrap_err().split(':').next(),
            Some("error finding resource infrastructure.cluster.x-k8s.io/v1beta2 / Metal3Machine")
        );
        assert_eq!(
            list(
                "controlplane.cluster.x-k8s.io/v1beta2",
                "RKE2ControlPlane",
                &[]
            ),
            Err(
                "Cannot find resource controlplane.cluster.x-k8s.io/v1beta2/RKE2ControlPlane"
                    .into()
            )
        );
        let gvk = ("cluster.x-k8s.io/v1beta2", "Cluster");
        assert_eq!(
            api().get(gvk, "edge-a", Some(NAMESPACE), None),
            Err("Cannot find cluster.x-k8s.io/v1beta2/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'".into())
        );
        // an installed kind the simulation holds no objects of
        let machines = list("cluster.x-k8s.io/v1beta2", "Machine", &[]).unwrap();
        assert_eq!(machines["items"], json!([]));
    }

    #[test]
    fn the_crd_list_names_the_installed_kinds_at_their_served_versions() {
        let mut host = SimHost {
            api: Arc::new(Mutex::new(api())),
        };
        let request = KubeRequest::KubernetesListResourceAll(ListAllResourcesRequest {
            api_version: kube::CRD_API_VERSION.into(),
            kind: kube::CRD_KIND.into(),
            label_selector: None,
            field_selector: None,
            field_masks: None,
        });
        let crds: Value = serde_json::from_slice(&host.respond(&request).unwrap()).unwrap();
        let crds = crds["items"].as_array().unwrap();
        let names: Vec<&str> = crds
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str())
            .collect();
        assert!(
            names.contains(&"clusterclasses.cluster.x-k8s.io"),
            "{names:?}"
        );
        // RKE2 is not installed in this release: no CRD, so the policy makes no call for it
        assert!(!names.iter().any(|n| n.contains("rke2")), "{names:?}");
        let m3mt = crds
            .iter()
            .find(|c| c["spec"]["names"]["kind"] == "Metal3MachineTemplate")
            .unwrap();
        assert_eq!(
            m3mt["spec"]["versions"],
            json!([{"name": "v1beta1", "served": true, "storage": true}])
        );
    }
}
