//! The desired-state sources, one row each: what the pass discovers, lists and reads, and the
//! RBAC the job needs for it. Discovery, the pass (`template-cleanup/src/sources.rs`), the RBAC
//! table of docs/cleanup.md and the RBAC of examples/cleanup are all checked against [`SOURCES`]
//! (`cargo xtask check`, xtask/src/checks/cleanup.rs), and the RBAC's rules are written from it
//! (`make manifests`, xtask/src/manifests.rs): adding a deploy tool is one row here plus its
//! reader.

use serde_json::Value;

use crate::declared::{Declaration, ObjectError, argo_application, flux_kustomization_declaration};

/// How a source's objects are read.
#[derive(Debug, Clone, Copy)]
pub enum Reader {
    /// Each object's status names what it declares; listed in every namespace.
    Status(fn(&Value) -> Result<Declaration, ObjectError>),
    /// Where helm-controller stores releases and where they render
    /// ([`crate::helm::flux_helm_release`]); listed in every namespace.
    FluxHelmReleases,
    /// Helm's release Secrets ([`crate::helm`]): listed as metadata only, the current revisions
    /// fetched by name.
    HelmStorage,
}

/// When a pass reads a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Every pass, where the API server serves the kind.
    Always,
    /// With `--helm-releases` (examples/cleanup/helm adds the flag and the RBAC).
    HelmReleases,
}

/// One desired-state source.
#[derive(Debug, Clone, Copy)]
pub struct Source {
    /// As the report names it.
    pub name: &'static str,
    /// The API group (`""`: core).
    pub group: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// The verbs the job's ClusterRole grants on it, sorted.
    pub verbs: &'static [&'static str],
    pub when: When,
    pub reader: Reader,
}

impl Source {
    /// `plural.group`, the name RBAC and kubectl use.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Flux kustomize-controller's Kustomizations ([`crate::declared::flux_kustomization`]).
pub const FLUX_KUSTOMIZATIONS: Source = Source {
    name: "Flux Kustomizations",
    group: "kustomize.toolkit.fluxcd.io",
    kind: "Kustomization",
    plural: "kustomizations",
    verbs: &["list"],
    when: When::Always,
    reader: Reader::Status(flux_kustomization_declaration),
};

/// Argo CD's Applications ([`crate::declared::argo_application`]).
pub const ARGO_APPLICATIONS: Source = Source {
    name: "Argo CD Applications",
    group: "argoproj.io",
    kind: "Application",
    plural: "applications",
    verbs: &["list"],
    when: When::Always,
    reader: Reader::Status(argo_application),
};

/// Flux helm-controller's HelmReleases. Without `--helm-releases` the pass only asks discovery
/// whether they are served, and warns when they are.
pub const FLUX_HELM_RELEASES: Source = Source {
    name: "Flux HelmReleases",
    group: "helm.toolkit.fluxcd.io",
    kind: "HelmRelease",
    plural: "helmreleases",
    verbs: &["list"],
    when: When::HelmReleases,
    reader: Reader::FluxHelmReleases,
};

/// Helm's release Secrets (Helm CLI and Flux helm-controller, Secrets driver). `get` fetches
/// the current revisions by name; Kubernetes RBAC cannot grant by label (`owner=helm`) or by
/// Secret type, and release names are not known in advance for `resourceNames`, so this grants
/// every Secret in the namespaces it is bound in.
pub const HELM_STORAGE: Source = Source {
    name: "Helm releases",
    group: "",
    kind: "Secret",
    plural: "secrets",
    verbs: &["get", "list"],
    when: When::HelmReleases,
    reader: Reader::HelmStorage,
};

/// Every source, in the order the report lists them.
pub const SOURCES: [&Source; 4] = [
    &FLUX_KUSTOMIZATIONS,
    &ARGO_APPLICATIONS,
    &FLUX_HELM_RELEASES,
    &HELM_STORAGE,
];

/// The API groups discovery must look into for the sources (the core group is always served).
pub fn discovery_groups() -> Vec<String> {
    let mut groups: Vec<String> = SOURCES
        .iter()
        .filter(|s| !s.group.is_empty())
        .map(|s| s.group.to_string())
        .collect();
    groups.dedup();
    groups
}
