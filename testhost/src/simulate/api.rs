//! The simulated API server: the objects of [`super::objects`], served in the shape of the API
//! version asked for (Cluster API v1beta1 ObjectReferences with apiVersion, v1beta2
//! ContractVersionedObjectReferences with apiGroup), with field masks, list answers, the CRD list
//! and the host's error texts from [`crate::kube`].

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::objects::{installed, Installed, Kind, Store, NAMESPACE};
use super::render::render;
use crate::host::{lock, Responder};
use crate::kube::{self, Crd};
use crate::session::KubeRequest;

/// The simulated cluster(s) the host answers from: the management cluster, and the target of a
/// `clusterctl move`.
#[derive(Debug, Clone, Default)]
pub struct Api {
    pub installed: Installed,
    pub stores: [Store; 2],
    /// Which store answers the policy's lookups (0: source, 1: move target).
    pub active: usize,
    pub host_calls: u64,
    pub host_bytes: u64,
    /// Answer whole objects, as hosts before kwctl 1.33 did (the bench's column "masks ignored").
    pub ignore_masks: bool,
}

impl Api {
    pub fn new(installed: Installed) -> Self {
        Api {
            installed,
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
            .filter(|&(g, _, p, _)| g == group && self.installed.provider_serves(p, version))
            .peekable();
        if served.peek().is_none() {
            return Err(kube::no_such_group_version(api_version, kind));
        }
        match served.find(|&(_, name, ..)| name == kind) {
            Some((.., simulated)) => Ok((simulated, version)),
            None => Err(kube::no_such_kind(api_version, kind)),
        }
    }

    fn list(
        &self,
        (api_version, kind): (&str, &str),
        namespace: &str,
        selectors: [&Option<String>; 2],
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Value, String> {
        let (simulated, version) = self.resolve(api_version, kind)?;
        // the policy sends none (its lookups' tests check it)
        if selectors
            .iter()
            .any(|s| s.as_ref().is_some_and(|s| !s.is_empty()))
        {
            return Err(format!(
                "simulation: selectors are not simulated ({selectors:?})"
            ));
        }
        let items = simulated
            .filter(|_| namespace == NAMESPACE)
            .into_iter()
            .flat_map(|k| self.stores[self.active].of_kind(k))
            .map(|o| kube::apply_masks(&render(o, version, &self.installed), masks))
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
        // the policy server gets the object from the API server and prunes all but its metadata
        // to the masks (the golden vectors of test_data/field-masks/, checked live)
        simulated
            .filter(|_| namespace == Some(NAMESPACE))
            .and_then(|k| self.stores[self.active].get(k, name))
            .map(|o| kube::apply_get_masks(&render(o, version, &self.installed), masks))
            .ok_or_else(|| kube::no_such_object(api_version, kind, name, namespace))
    }

    /// The CRDs of every kind the installed providers serve, built from the tables the
    /// lookups resolve against, so a kind added there is installed here too.
    pub fn crds(&self) -> Vec<Crd> {
        installed()
            .filter_map(|(group, kind, provider, _)| {
                let versions: Vec<(String, bool)> = ["v1beta1", "v1beta2"]
                    .into_iter()
                    .filter(|v| self.installed.provider_serves(provider, v))
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
        let ignore = api.ignore_masks;
        fn masks(m: &Option<BTreeSet<String>>, ignore: bool) -> Option<&BTreeSet<String>> {
            m.as_ref().filter(|_| !ignore)
        }
        let answer = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => api.list(
                resource,
                &r.namespace,
                [&r.label_selector, &r.field_selector],
                masks(&r.field_masks, ignore),
            ),
            KubeRequest::KubernetesListResourceAll(r) if crds => {
                Ok(kube::crd_list(&api.crds(), masks(&r.field_masks, ignore)))
            }
            // one namespace holds every object
            KubeRequest::KubernetesListResourceAll(r) => api.list(
                resource,
                NAMESPACE,
                [&r.label_selector, &r.field_selector],
                masks(&r.field_masks, ignore),
            ),
            KubeRequest::KubernetesGetResource(r) => api.get(
                resource,
                &r.name,
                r.namespace.as_deref(),
                masks(&r.field_masks, ignore),
            ),
        }?;
        let bytes = serde_json::to_vec(&answer).map_err(|e| e.to_string())?;
        api.host_bytes += bytes.len() as u64;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::objects::{MsSpec, Obj, Ref, Spec};
    use super::*;
    use kubewarden_policy_sdk::host_capabilities::kubernetes::ListAllResourcesRequest;
    use serde_json::json;

    /// Cluster API >= 1.11, CAPM3 <= 1.12, no RKE2, and one MachineSet.
    fn api() -> Api {
        let mut api = Api::new(Installed {
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
        api().list((api_version, kind), NAMESPACE, [&None, &None], Some(&masks))
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
        assert_eq!(item["metadata"]["managedFields"], json!([]));
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
        // a get is pruned to its masks too, its metadata kept as the API server sent it
        let masks = ["status.replicas".to_string()].into();
        let gvk = ("cluster.x-k8s.io/v1beta2", "MachineSet");
        let ms = api()
            .get(gvk, "md-1", Some(NAMESPACE), Some(&masks))
            .unwrap();
        assert_eq!(
            (&ms["spec"], &ms["status"]),
            (&Value::Null, &json!({"replicas": 2}))
        );
        assert_eq!(ms["metadata"]["managedFields"][0]["manager"], "simulation");
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
