//! What a seed chooses (deploy tool, lifecycle, releases, sizes, what the upgrade changes),
//! the world it starts with, and what a run measures.

use super::rng::Rng;
use crate::apiserver::objects::{HOUR, Kind, Providers};

/// How the seed's release rolls out: a deploy tool that points the owners at new templates and
/// deletes the retired ones, or a ClusterClass. Ordered as [`Deployer::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Deployer {
    /// A deploy tool, simulated by what it does with a refused delete: all the policy ever sees
    /// of it. docs/deploy-tools.md maps each tool and version to one, with the upstream sources.
    Tool(OnRefusal),
    /// A ClusterClass: Helm 3 (`Forget`) ships the class and its templates; the topology
    /// controller rotates the cluster's own copies and deletes them.
    Topology,
}

impl Deployer {
    pub const ALL: [Deployer; 7] = [
        Deployer::Tool(OnRefusal::Forget),
        Deployer::Tool(OnRefusal::Rerun { after: (300, 900) }),
        // kustomize-controller >= v1.9.0: its interval
        Deployer::Tool(OnRefusal::RetryEvery(600)),
        // helm-controller with upgrade.remediation.retries: 2
        Deployer::Tool(OnRefusal::RollBackAndRetry(2)),
        // Argo CD: syncPolicy.retry.limit 5, the example of its docs
        Deployer::Tool(OnRefusal::SkipOwned { retries: 5 }),
        Deployer::Tool(OnRefusal::Keep),
        Deployer::Topology,
    ];

    /// What the flow tables call it: the behaviour, and the tools docs/deploy-tools.md maps to it.
    pub fn label(self) -> &'static str {
        match self {
            Deployer::Tool(OnRefusal::Forget) => {
                "forgets a refusal (Helm 3, helm-controller retries 0, kustomize-controller < 1.9)"
            }
            Deployer::Tool(OnRefusal::Rerun { .. }) => "fails, rerun (Helm 4 in a pipeline)",
            Deployer::Tool(OnRefusal::RetryEvery(_)) => {
                "retries every interval (kustomize-controller >= 1.9)"
            }
            Deployer::Tool(OnRefusal::RollBackAndRetry(_)) => {
                "rolls back, retries twice (helm-controller retries 2)"
            }
            Deployer::Tool(OnRefusal::SkipOwned { .. }) => "skips owned objects (Argo CD prune)",
            Deployer::Tool(OnRefusal::Keep) => "keeps, template-cleanup collects",
            Deployer::Topology => "ClusterClass topology",
        }
    }

    /// What it does with a refused delete (the class chart of a topology is a Helm 3 release).
    pub fn on_refusal(self) -> OnRefusal {
        match self {
            Deployer::Tool(behaviour) => behaviour,
            Deployer::Topology => OnRefusal::Forget,
        }
    }
}

/// What a deploy tool does with a refused delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OnRefusal {
    /// Logs it and moves on: the template is forgotten.
    Forget,
    /// Fails the run; the pipeline runs it again `after` (a range of seconds) until it succeeds.
    Rerun { after: (u64, u64) },
    /// Keeps the object in its inventory and retries every so many seconds.
    RetryEvery(u64),
    /// Rolls the release back (a second rollout) and tries again, this many times; then forgets.
    RollBackAndRetry(u32),
    /// Never deletes an object with ownerReferences (forgotten); a refused delete of another is
    /// retried this many times, from 5 s doubling, then forgotten.
    SkipOwned { retries: u32 },
    /// Never deletes: the template keeps the cleanup label and the job collects it.
    Keep,
}

impl OnRefusal {
    /// Why templates leak with this behaviour (template-cleanup collects them); `None`: they do
    /// not, and a leak fails the simulation.
    pub fn explained_leak(self) -> Option<&'static str> {
        match self {
            OnRefusal::Forget => Some(
                "a refused delete is forgotten (the topology controller, too, deletes an old control-plane template once, best effort)",
            ),
            OnRefusal::RollBackAndRetry(_) => Some(
                "rolled back between attempts (a second re-provisioning wave), then the release is left failed and the template forgotten",
            ),
            OnRefusal::SkipOwned { .. } => Some(
                "owned templates (every one a MachineSet or control plane used) are never pruned, with or without the policy",
            ),
            OnRefusal::Rerun { .. } | OnRefusal::RetryEvery(_) | OnRefusal::Keep => None,
        }
    }
}

/// In the order of [`Lifecycle::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lifecycle {
    /// The upgrade alone.
    None,
    ClusterDeletion,
    NamespaceDeletion,
    Move,
}

impl Lifecycle {
    pub const ALL: [Lifecycle; 4] = [
        Lifecycle::None,
        Lifecycle::ClusterDeletion,
        Lifecycle::NamespaceDeletion,
        Lifecycle::Move,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Lifecycle::None => "upgrade only",
            Lifecycle::ClusterDeletion => "then Cluster deletion",
            Lifecycle::NamespaceDeletion => "then namespace deletion",
            Lifecycle::Move => "then clusterctl move",
        }
    }
}

/// What a seed chose.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub deployer: Deployer,
    pub lifecycle: Lifecycle,
    pub installed: Providers,
    pub cp_kind: Kind,
    pub cp_replicas: u32,
    pub cp_surge: u32,
    /// replicas, maxSurge, maxUnavailable of each MachineDeployment
    pub mds: Vec<(u32, u32, u32)>,
    pub node_reuse: bool,
    pub cleaning: Option<String>,
    pub upgrade_workers: bool,
    pub upgrade_bootstrap: bool,
    pub upgrade_cp: bool,
    pub delete_old_ms: bool,
    pub remove_md: bool,
    pub upgrade_at: u64,
    pub lifecycle_at: u64,
    pub template_cleanup_at: u64,
    /// KubeadmControlPlane 1.12.0-1.12.5 (or CAPRKE2 0.25.0): deleting the control plane fails
    /// while its machine template is missing.
    pub cp_needs_template_on_delete: bool,
    /// A MachineSet outside any MachineDeployment, scaled to zero and back (standalone.rs).
    pub standalone_ms: bool,
    /// Cluster API 1.10: a MachineDeployment of another namespace names a template (remote.rs).
    /// Not with namespace deletion (the namespace waits until it lets go) or a move (which takes
    /// the template away from it).
    pub remote_md: bool,
    /// The MachineDeployments' new MachineSets are refused until this time (0: never), from the
    /// upgrade on: the previous MachineSet stays the current revision meanwhile, while the
    /// deploy tool retires its templates.
    pub ms_refused_until: u64,
    /// Cluster API 1.12 or newer with the `InPlaceUpdates` feature gate: a rolling update reads
    /// the templates of every old MachineSet with machines (machinedeployment.rs).
    pub in_place_updates: bool,
    /// CAPM3 deprovisions a host in 5 to 20 minutes (cleaning its disks) instead of 20 s to 2
    /// minutes: old MachineSets stay at zero replicas with machines for longer.
    pub slow_deprovisioning: bool,
}

impl Scenario {
    pub fn generate(seed: u64, rng: &mut Rng) -> Scenario {
        let combos = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        let combo = (seed % combos) as usize;
        let deployer = Deployer::ALL[combo % Deployer::ALL.len()];
        let lifecycle = Lifecycle::ALL[combo / Deployer::ALL.len()];
        let capi_v1beta2 = rng.chance(70);
        let metal3_v1beta2 = capi_v1beta2 && rng.chance(50);
        let cp_kind = if rng.chance(50) {
            Kind::KubeadmControlPlane
        } else {
            Kind::Rke2ControlPlane
        };
        let rke2 = (cp_kind == Kind::Rke2ControlPlane || rng.chance(30))
            .then(|| capi_v1beta2 && rng.chance(70));
        let mds = (0..rng.range(1, 2))
            .map(|_| {
                let replicas = rng.range(1, 3) as u32;
                // maxSurge 1 or maxUnavailable 1
                let surge = u32::from(rng.chance(50));
                (replicas, surge, 1 - surge)
            })
            .collect();
        let upgrade_workers = rng.chance(80);
        // an upgrade changes the workers or the control plane, or both
        let upgrade_cp = !upgrade_workers || rng.chance(50);
        let upgrade_at = rng.range(60, 900);
        let mut sc = Scenario {
            deployer,
            lifecycle,
            installed: Providers::new(capi_v1beta2, metal3_v1beta2, rke2),
            cp_kind,
            cp_replicas: if rng.chance(50) { 1 } else { 3 },
            cp_surge: if rng.chance(50) { 1 } else { 0 },
            mds,
            node_reuse: rng.chance(80),
            cleaning: rng.chance(70).then(|| "disabled".to_string()),
            upgrade_workers,
            upgrade_bootstrap: rng.chance(50),
            upgrade_cp,
            delete_old_ms: deployer == Deployer::Topology || rng.chance(50),
            remove_md: deployer == Deployer::Topology && rng.chance(40),
            upgrade_at,
            lifecycle_at: upgrade_at + rng.range(0, 2 * HOUR),
            template_cleanup_at: rng.range(0, HOUR - 1),
            cp_needs_template_on_delete: false,
            standalone_ms: false,
            remote_md: false,
            ms_refused_until: 0,
            in_place_updates: false,
            slow_deprovisioning: false,
        };
        sc.cp_needs_template_on_delete = match sc.cp_kind {
            Kind::KubeadmControlPlane => sc.installed.capi_v1beta2 && rng.chance(40),
            _ => sc.installed.rke2 == Some(true) && rng.chance(40),
        };
        // drawn last, so that every other choice of a seed stays as it was
        sc.standalone_ms = deployer != Deployer::Topology && rng.chance(30);
        sc.remote_md = !capi_v1beta2
            && deployer != Deployer::Topology
            && matches!(lifecycle, Lifecycle::None | Lifecycle::ClusterDeletion)
            && rng.chance(50);
        // A new MachineSet refused for half an hour to two hours after the upgrade; in half of
        // those seeds the first MachineDeployment is scaled to zero, so that its previous
        // MachineSet, still the current revision, has no replicas and no machines.
        if deployer != Deployer::Topology && sc.upgrade_workers && rng.chance(25) {
            sc.ms_refused_until = sc.upgrade_at + rng.range(HOUR / 2, 2 * HOUR);
            if rng.chance(50)
                && let Some(md) = sc.mds.first_mut()
            {
                md.0 = 0;
            }
        }
        // The gate exists from Cluster API 1.12, which serves v1beta2; drawn after everything
        // else so that every other choice of a seed stays as it was.
        sc.in_place_updates = capi_v1beta2 && rng.chance(40);
        sc.slow_deprovisioning = sc.in_place_updates && rng.chance(50);
        sc
    }
}

/// The per-run metrics, each said once: its field and the label of its row in the summary,
/// in the summary's order.
macro_rules! metrics {
    ($($(#[doc = $doc:literal])* $field:ident: $label:literal,)*) => {
        /// What one run measured.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Metrics {
            $($(#[doc = $doc])* pub $field: u64,)*
        }

        impl Metrics {
            pub fn add(&mut self, o: &Metrics) {
                $(self.$field += o.$field;)*
            }

            /// The summary's rows: label and value.
            pub fn rows(&self) -> Vec<(&'static str, u64)> {
                vec![$(($label, self.$field)),*]
            }
        }
    };
}

metrics! {
    lost: "node-reuse decisions lost (must be 0)",
    missing: "missing-template reconcile errors (must be 0)",
    stuck: "stuck flows (must be 0)",
    /// Templates a deploy tool or controller gave up deleting after a refusal (or never tries).
    leaked: "templates leaked: a delete given up or never made (explained flows only)",
    /// Templates nothing needs that are still there at the end, declared by no deploy tool:
    /// nothing collected them.
    left: "templates left at the end, nothing collected them (must be 0)",
    refused_creates: "refused Metal3Machine creates (must be 0)",
    /// template-cleanup passes that failed on an answer other than the guard's refusal.
    template_cleanup_failed: "template-cleanup passes failed on another answer (must be 0)",
    refused: "refused deletes",
    /// Reconcile errors on templates released because their Cluster is being deleted, in
    /// controllers that have not been told to delete yet (nothing scales up any more, and CAPM3
    /// makes no node-reuse decisions while the Cluster is being deleted).
    missing_cluster_deleting: "missing-template errors while the Cluster is being deleted",
    retries: "retries",
    /// Templates a template-cleanup pass left to the deploy tool that still declares them.
    template_cleanup_declared: "template-cleanup candidates left to the deploy tool that declares them",
    decisions: "node-reuse decisions made",
    /// Decisions CAPM3 >= 1.13 cannot make (no reuse): it may not read an RKE2 control plane.
    no_rbac: "decisions CAPM3 >= 1.13 cannot make: no RBAC for an RKE2 control plane",
    mutations: "Metal3Machines annotated",
    admissions: "guarded requests (evaluations, with the policy)",
    host_calls: "host calls",
}

impl Metrics {
    /// With the policy these must be zero; leaks only in a flow whose deployer explains them.
    pub fn failed(&self, deployer: Deployer) -> bool {
        let unexplained_leaks = deployer
            .on_refusal()
            .explained_leak()
            .map_or(self.leaked, |_| 0);
        let must_be_zero = self.lost + self.missing + self.stuck + self.left;
        must_be_zero + self.refused_creates + self.template_cleanup_failed + unexplained_leaks > 0
    }
}
