//! The API server model that `simulate`, `bench` and `apiserver` (over HTTP, [`http`]) share: the
//! Cluster API objects of [`objects`], served in the shape of the API version asked for
//! ([`render`]), and objects of any other kind held as JSON (the HTTP front's state file), with
//! label selectors, the CRD list of the custom kinds served, and the host's answers and error texts
//! of [`kube`].

pub mod http;
pub mod kube;
pub mod objects;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::host::{Responder, lock};
use crate::session::KubeRequest;
use objects::{Kind, NAMESPACE, Providers, Store, installed};
use render::render;

/// apiVersion, kind, namespace ("" for a cluster-scoped object) and name.
pub type Key = (String, String, String, String);

/// Kinds every cluster serves, held or not.
const BUILT_IN: [(&str, &str); 4] = [
    ("v1", "Namespace"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
    ("events.k8s.io/v1", "Event"),
];

/// The simulated cluster(s): the management cluster, and the target of a `clusterctl move`.
#[derive(Debug, Clone, Default)]
pub struct Api {
    pub installed: Providers,
    pub stores: [Store; 2],
    /// Which store answers the policy's lookups (0: source, 1: move target).
    pub active: usize,
    pub host_calls: u64,
    pub host_bytes: u64,
    /// Answer whole objects, as hosts before kwctl 1.33 did (the bench's column "masks ignored").
    pub ignore_masks: bool,
    /// Objects of any kind as JSON, each served at its apiVersion.
    pub held: BTreeMap<Key, Value>,
    /// The last resourceVersion given to a held object.
    pub revision: u64,
}

impl Api {
    pub fn new(installed: Providers) -> Self {
        Api {
            installed,
            ..Api::default()
        }
    }

    /// Holds `object`, giving it the uid, resourceVersion and creationTimestamp the API server
    /// writes when it lacks them.
    pub fn hold(&mut self, mut object: Value) -> Result<(), String> {
        let text = |o: &Value, at: &str| o.pointer(at).and_then(Value::as_str).map(String::from);
        let [Some(api_version), Some(kind), Some(name)] =
            ["/apiVersion", "/kind", "/metadata/name"].map(|at| text(&object, at))
        else {
            let missing = "every object needs apiVersion, kind and metadata.name; this one has not";
            return Err(format!("{missing}: {object}"));
        };
        self.revision += 1;
        let uid = json!(format!("00000000-0000-4000-8000-{:012}", self.revision));
        let written = [
            ("uid", uid),
            ("resourceVersion", json!(self.revision.to_string())),
        ];
        let created = ("creationTimestamp", json!("2025-01-01T00:00:00Z"));
        if let Some(meta) = object["metadata"].as_object_mut() {
            written
                .into_iter()
                .chain([created])
                .for_each(|(k, v)| _ = meta.entry(k).or_insert(v));
        }
        let namespace = text(&object, "/metadata/namespace").unwrap_or_default();
        self.held
            .insert((api_version, kind, namespace, name), object);
        Ok(())
    }

    /// Every served apiVersion with its kinds: the installed providers' at the versions they
    /// serve, the held ones, the core kinds and the CRDs.
    pub fn served(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (group, kind, provider, _) in installed() {
            for version in ["v1beta1", "v1beta2"] {
                if self.installed.provider_serves(provider, version) {
                    let entry = out.entry(format!("{group}/{version}")).or_default();
                    entry.insert(kind.into());
                }
            }
        }
        let held = self.held.keys().map(|k| (k.0.as_str(), k.1.as_str()));
        let crd = [(kube::CRD_API_VERSION, kube::CRD_KIND)];
        for (api_version, kind) in held.chain(BUILT_IN).chain(crd) {
            out.entry(api_version.into())
                .or_default()
                .insert(kind.into());
        }
        out
    }

    /// Whether `kind` at `api_version` is namespaced: unless it is held without a namespace, or
    /// is a Namespace or a CRD.
    pub fn namespaced(&self, api_version: &str, kind: &str) -> bool {
        let cluster = |k: &Key| k.0 == api_version && k.1 == kind && k.2.is_empty();
        ![kube::CRD_KIND, "Namespace"].contains(&kind) && !self.held.keys().any(cluster)
    }

    /// The simulated kind (`None`: none simulated, held or installed empty) and the version
    /// `api_version` names; the host's text when either is not served.
    fn resolve<'v>(
        &self,
        api_version: &'v str,
        kind: &str,
    ) -> Result<(Option<Kind>, &'v str), String> {
        let served = self.served();
        let not_served = || kube::no_such_group_version(api_version, kind);
        let kinds = served.get(api_version).ok_or_else(not_served)?;
        if !kinds.contains(kind) {
            return Err(kube::no_such_kind(api_version, kind));
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let simulated = |k: &Kind| k.group() == group && k.name() == kind;
        let simulated = Kind::ALL.into_iter().find(simulated);
        Ok((simulated, version))
    }

    /// The objects of a kind in `namespace` (`None`: every namespace) whose labels match
    /// `selector`, as the API server sends them.
    pub fn list(
        &self,
        (api_version, kind): (&str, &str),
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<Value>, String> {
        let selector = Selector::parse(selector)?;
        if (api_version, kind) == (kube::CRD_API_VERSION, kube::CRD_KIND) {
            return Ok(self.crds());
        }
        let (simulated, version) = self.resolve(api_version, kind)?;
        let simulated = simulated
            .filter(|_| namespace.is_none_or(|ns| ns == NAMESPACE))
            .into_iter()
            .flat_map(|k| self.stores[self.active].of_kind(k))
            .map(|o| render(o, version, &self.installed));
        let held = self.held.iter().filter(|((v, k, ns, _), _)| {
            v == api_version && k == kind && namespace.is_none_or(|n| n == ns)
        });
        let held = held.map(|(_, o)| o.clone());
        Ok(simulated
            .chain(held)
            .filter(|o| selector.matches(o))
            .collect())
    }

    /// One object, as the API server sends it; the host's text when it does not exist.
    pub fn get(
        &self,
        (api_version, kind): (&str, &str),
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Value, String> {
        let (simulated, version) = self.resolve(api_version, kind)?;
        let key = |ns: &str| (api_version.into(), kind.into(), ns.into(), name.into());
        let simulated = simulated
            .filter(|_| namespace == Some(NAMESPACE))
            .and_then(|k| self.stores[self.active].get(k, name))
            .map(|o| render(o, version, &self.installed));
        simulated
            .or_else(|| self.held.get(&key(namespace.unwrap_or_default())).cloned())
            .ok_or_else(|| kube::no_such_object(api_version, kind, name, namespace))
    }

    /// One CRD per custom kind served (its group is not a built-in `*.k8s.io` one), listing every
    /// version it is served at, so a kind installed or held here is in the CRD list too.
    pub fn crds(&self) -> Vec<Value> {
        let mut crds: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for (api_version, kinds) in self.served() {
            let Some((group, version)) = api_version.split_once('/') else {
                continue;
            };
            for kind in kinds.into_iter().filter(|_| !group.ends_with(".k8s.io")) {
                crds.entry((group.into(), kind))
                    .or_default()
                    .push(version.into());
            }
        }
        let crd = |((group, kind), versions): ((String, String), Vec<String>)| {
            let mut versions: Vec<&str> = versions.iter().map(String::as_str).collect();
            versions.sort_by_key(|v| std::cmp::Reverse(kube::priority(v)));
            kube::crd(&group, &kind, &versions)
        };
        crds.into_iter().map(crd).collect()
    }
}

/// A label selector of equality and existence requirements joined by commas (`a=b`, `a==b`,
/// `a!=b`, `a`, `!a`), matched as k8s.io/apimachinery v0.33's `labels.Parse` does; set-based
/// requirements (`in`, `notin`), which no caller of this server sends, are refused.
struct Selector(Vec<(String, Option<String>, bool)>);

impl Selector {
    fn parse(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.contains('(') {
                return Err(format!(
                    "the label selector {text:?} is set-based; this API server serves equality and existence requirements only"
                ));
            }
            let (key, value, equal) = if let Some((k, v)) = part.split_once("!=") {
                (k, Some(v), false)
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (k, Some(v), true)
            } else if let Some(k) = part.strip_prefix('!') {
                (k, None, false)
            } else {
                (part, None, true)
            };
            requirements.push((key.trim().into(), value.map(|v| v.trim().into()), equal));
        }
        Ok(Selector(requirements))
    }

    /// A `!=` requirement matches an object without the label, as upstream's does.
    fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.0.iter().all(|(key, value, equal)| {
            let label = labels.get(key).and_then(Value::as_str);
            match value {
                Some(value) => (label == Some(value.as_str())) == *equal,
                None => label.is_some() == *equal,
            }
        })
    }
}

/// The host side: answers the policy's Kubernetes calls from [`Api`] as the policy server does
/// (lists as its reflectors keep them, gets pruned to their masks but for their metadata),
/// counting calls and bytes.
pub struct ApiHost {
    pub api: Arc<Mutex<Api>>,
}

impl Responder for ApiHost {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let mut api = lock(&self.api);
        api.host_calls += 1;
        let resource = request.resource();
        let ignore = api.ignore_masks;
        fn masks(m: &Option<BTreeSet<String>>, ignore: bool) -> Option<&BTreeSet<String>> {
            m.as_ref().filter(|_| !ignore)
        }
        let list = |namespace, label: &Option<String>, field: &Option<String>, m| {
            // the policy sends none (its lookups' tests check it)
            if field.as_ref().is_some_and(|f| !f.is_empty()) {
                return Err(format!("field selectors are not served ({field:?})"));
            }
            let items = api.list(resource, namespace, label.as_deref().unwrap_or_default())?;
            let items = items.iter().map(|o| kube::apply_masks(o, m)).collect();
            Ok(kube::list_answer(resource.0, resource.1, "1", items))
        };
        let answer = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => {
                let (label, field, m) = (&r.label_selector, &r.field_selector, &r.field_masks);
                list(Some(&r.namespace), label, field, masks(m, ignore))
            }
            KubeRequest::KubernetesListResourceAll(r) => {
                let (label, field, m) = (&r.label_selector, &r.field_selector, &r.field_masks);
                list(None, label, field, masks(m, ignore))
            }
            KubeRequest::KubernetesGetResource(r) => api
                .get(resource, &r.name, r.namespace.as_deref())
                .map(|o| kube::apply_get_masks(&o, masks(&r.field_masks, ignore))),
        }?;
        let bytes = serde_json::to_vec(&answer).map_err(|e| e.to_string())?;
        api.host_bytes += bytes.len() as u64;
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::objects::{MsSpec, Obj, Ref, Spec};
    use super::*;

    /// Cluster API >= 1.11, CAPM3 <= 1.12, no RKE2, one MachineSet, and a held policy.
    fn api() -> Api {
        let mut api = Api::new(Providers::new(true, false, None));
        let (infra, bootstrap) = (Kind::Metal3MachineTemplate, Kind::KubeadmConfigTemplate);
        let (infra, bootstrap) = (Ref::new(infra, "w-1"), Ref::new(bootstrap, "b-1"));
        let ms = MsSpec {
            infra,
            bootstrap,
            replicas: 2,
            status_replicas: Some(2),
        };
        let mut ms = Obj::new(Kind::MachineSet, "md-1", Spec::MachineSet(ms));
        ms.owner_cluster = Some("edge-a".into());
        api.stores[0].create(ms, 10);
        let policy = json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy", "metadata": {"name": "guard"}});
        api.hold(policy).unwrap();
        api
    }

    fn list(api_version: &str, kind: &str, masks: &[&str]) -> Result<Vec<Value>, String> {
        let masks = masks.iter().map(|m| m.to_string()).collect();
        let items = api().list((api_version, kind), Some(NAMESPACE), "")?;
        let masked = |o: &Value| kube::apply_masks(o, Some(&masks));
        Ok(items.iter().map(masked).collect())
    }

    #[test]
    fn list_in_both_shapes_with_masks() {
        let masks = ["spec.template.spec.infrastructureRef", "status.replicas"];
        let v2 = list("cluster.x-k8s.io/v1beta2", "MachineSet", &masks).unwrap();
        let reference = json!({"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3MachineTemplate", "name": "w-1"});
        let spec = json!({"template": {"spec": {"infrastructureRef": reference}}});
        let (spec_status, replicas) = ((&v2[0]["spec"], &v2[0]["status"]), json!({"replicas": 2}));
        assert_eq!(spec_status, (&spec, &replicas));
        assert_eq!(v2[0]["metadata"]["managedFields"], json!([]));
        assert_eq!(v2[0]["metadata"]["ownerReferences"][0]["kind"], "Cluster");
        let v1 = list("cluster.x-k8s.io/v1beta1", "MachineSet", &masks[..1]).unwrap();
        // CAPM3 <= 1.12 serves its templates at v1beta1 only
        let reference = &v1[0]["spec"]["template"]["spec"]["infrastructureRef"]["apiVersion"];
        assert_eq!(reference, "infrastructure.cluster.x-k8s.io/v1beta1");
    }

    #[test]
    fn host_error_texts() {
        let (infra, cp) = (
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "controlplane.cluster.x-k8s.io/v1beta2",
        );
        let err = list(infra, "Metal3Machine", &[]).unwrap_err();
        let group_version = format!("error finding resource {infra} / Metal3Machine");
        assert_eq!(err.split(':').next(), Some(group_version.as_str()));
        let kind = format!("Cannot find resource {cp}/RKE2ControlPlane");
        assert_eq!(list(cp, "RKE2ControlPlane", &[]), Err(kind));
        let gvk = ("cluster.x-k8s.io/v1beta2", "Cluster");
        let missing = "Cannot find cluster.x-k8s.io/v1beta2/Cluster named 'edge-a' inside of namespace 'Some(\"edge-sites\")'";
        assert_eq!(
            api().get(gvk, "edge-a", Some(NAMESPACE)),
            Err(missing.into())
        );
        // a get is pruned to its masks too, its metadata kept as the API server sent it
        let masks = ["status.replicas".to_string()].into();
        let gvk = ("cluster.x-k8s.io/v1beta2", "MachineSet");
        let ms = api().get(gvk, "md-1", Some(NAMESPACE)).unwrap();
        let ms = kube::apply_get_masks(&ms, Some(&masks));
        let (spec, status) = (&ms["spec"], &ms["status"]);
        assert_eq!((spec, status), (&Value::Null, &json!({"replicas": 2})));
        assert_eq!(ms["metadata"]["managedFields"][0]["manager"], "simulation");
        // an installed kind the simulation holds no objects of
        assert_eq!(list("cluster.x-k8s.io/v1beta2", "Machine", &[]), Ok(vec![]));
    }

    #[test]
    fn the_crd_list_names_the_custom_kinds_at_their_served_versions() {
        let crd = (kube::CRD_API_VERSION, kube::CRD_KIND);
        let crds = api().list(crd, None, "").unwrap();
        let names: Vec<&str> = crds
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str())
            .collect();
        // a held kind of a custom group is a CRD too
        let custom = [
            "clusterclasses.cluster.x-k8s.io",
            "clusteradmissionpolicies.policies.kubewarden.io",
        ];
        assert!(custom.iter().all(|c| names.contains(c)), "{names:?}");
        // a built-in `*.k8s.io` kind is not; RKE2 is not installed in this release: no CRD, so
        // the policy makes no call for it
        assert!(
            !names
                .iter()
                .any(|n| n.ends_with(".k8s.io") || n.contains("rke2")),
            "{names:?}"
        );
        let m3mt = crds
            .iter()
            .find(|c| c["spec"]["names"]["kind"] == "Metal3MachineTemplate");
        let served = json!([{"name": "v1beta1", "served": true, "storage": true}]);
        assert_eq!(m3mt.unwrap()["spec"]["versions"], served);
        // the storage version is the one of highest priority, not the last in text order
        let mut api = api();
        let old = json!({"apiVersion": "policies.kubewarden.io/v1alpha2", "kind": "ClusterAdmissionPolicy", "metadata": {"name": "old"}});
        api.hold(old).unwrap();
        let crds = api.crds();
        let policy = crds
            .iter()
            .find(|c| c["spec"]["group"] == "policies.kubewarden.io");
        let versions = json!([{"name": "v1alpha2", "served": true, "storage": false}, {"name": "v1", "served": true, "storage": true}]);
        assert_eq!(policy.unwrap()["spec"]["versions"], versions);
    }
}
