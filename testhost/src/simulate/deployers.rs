//! The deploy tools: they apply an upgrade (new templates, the owners pointed at them) and
//! delete the templates it retired; what each does when the policy refuses a delete is cited at
//! each tool below. And the README's clean-up job.

use anyhow::Result;

use super::objects::{Kind, Obj, Ref, Spec, CLEANUP_LABEL};
use super::scenario::*;
use super::sim::*;

impl Sim<'_> {
    pub(super) fn deployer(&mut self) -> Result<Option<u64>> {
        match self.deploy.clone() {
            DeployPhase::Apply | DeployPhase::Reapply(_)
                if self.read(|s| s.namespace_terminating) =>
            {
                // a terminating namespace refuses the creates: the upgrade fails at once
                self.deploy = DeployPhase::Done;
                Ok(None)
            }
            DeployPhase::Apply => {
                let before = self.release_objects();
                self.apply_upgrade();
                self.revisions = Some((before, self.release_objects(), self.retired.clone()));
                self.deploy = DeployPhase::Delete(0);
                Ok(Some(self.rng.range(1, 5)))
            }
            DeployPhase::Reapply(attempt) => {
                if let Some((_, after, retired)) = self.revisions.clone() {
                    self.install(&after);
                    self.retired = retired;
                    self.ev(|| "helm-controller: upgrade applied again".to_string());
                }
                self.deploy = DeployPhase::Delete(attempt);
                Ok(Some(self.rng.range(1, 5)))
            }
            DeployPhase::Delete(attempt) => self.delete_retired(attempt),
            DeployPhase::Done => Ok(None),
        }
    }

    /// The tool deletes the templates the upgrade retired; what it does after a refusal.
    fn delete_retired(&mut self, attempt: u32) -> Result<Option<u64>> {
        let deployer = self.sc.deployer;
        let user = match deployer {
            Deployer::Helm3 | Deployer::Helm4 | Deployer::Topology => "helm",
            Deployer::Flux { .. } => "system:serviceaccount:flux-system:helm-controller",
            Deployer::Kustomize { .. } => "system:serviceaccount:flux-system:kustomize-controller",
            Deployer::Argo => "system:serviceaccount:argocd:argocd-application-controller",
            Deployer::Keep => {
                self.deploy = DeployPhase::Done;
                return Ok(None);
            }
        };
        let mut refused = Vec::new();
        for r in self.retired.clone() {
            // gitops-engine pkg/cache/cluster.go@5baed56 (GetManagedLiveObjs): only objects
            // without ownerReferences are managed, so prune candidates; Cluster API owns every
            // template a MachineSet or control plane used (argo-cd issue 4764): dropped from Git,
            // it is orphaned silently, the app stays Synced
            let owned = self.read(|s| {
                s.get(r.kind, &r.name)
                    .is_some_and(|o| o.owner_cluster.is_some() || o.controller.is_some())
            });
            if deployer == Deployer::Argo && owned {
                self.retired.remove(&r);
                self.leak(&r, "Argo CD does not prune an owned object");
            } else if self.delete(r.kind, &r.name, user)? {
                self.retired.remove(&r);
            } else {
                refused.push(r);
            }
        }
        if refused.is_empty() {
            self.deploy = DeployPhase::Done;
            return Ok(None);
        }
        let retry = match deployer {
            // helm pkg/kube/client.go@v3.8.1 (Update): a failed delete is logged (seen with
            // --debug only) and the upgrade succeeds (helm issue 11375). The class chart of the
            // topology flow is a Helm 3 release too.
            Deployer::Helm3 | Deployer::Topology => None,
            // helm PR 31393 (v4.0.0): the upgrade fails; the pipeline runs it again
            Deployer::Helm4 => Some(self.rng.range(300, 900)),
            // helm-controller go.mod@v1.5.0 (helm.sh/helm/v4): the upgrade fails; with the
            // default upgrade.remediation.retries 0 the release stays failed and is not retried
            // until its spec changes
            Deployer::Flux { retries: false } => None,
            // with upgrade.remediation.retries 2, the release is rolled back and the upgrade tried
            // again (internal/reconcile/atomic_release.go@v1.5.0)
            Deployer::Flux { retries: true }
                if attempt < 2 && !self.read(|s| s.namespace_terminating) =>
            {
                self.rollback(user)?;
                self.deploy = DeployPhase::Reapply(attempt + 1);
                self.m.retries += 1;
                return Ok(Some(self.rng.range(60, 300)));
            }
            // kustomize-controller internal/controller/kustomization_controller.go@v1.9.0
            // (PR 1665): what was not pruned stays in status.inventory, Ready=False
            // (PruneFailed), retried every interval; before, the inventory moved on and the
            // object was forgotten after one failure
            Deployer::Kustomize { retries: true } => Some(600),
            Deployer::Kustomize { retries: false } => None,
            // a refused prune fails the sync: retried 5 times with backoff
            Deployer::Argo if attempt < 5 => Some(5 << attempt),
            _ => None,
        };
        if retry.is_some() {
            self.m.retries += 1;
            self.deploy = DeployPhase::Delete(attempt + 1);
            return Ok(retry);
        }
        let why = format!("{} gave up the delete", deployer.label());
        for r in refused {
            self.retired.remove(&r);
            self.leak(&r, &why);
        }
        self.deploy = DeployPhase::Done;
        Ok(None)
    }

    /// The release's objects: the owners the upgrade points at templates, and the templates.
    fn release_objects(&self) -> Vec<Obj> {
        self.read(|s| {
            s.objects
                .values()
                .filter(|o| match o.spec {
                    Spec::Template { .. } => o.labels.contains_key(CLEANUP_LABEL),
                    Spec::MachineDeployment(_)
                    | Spec::ControlPlane(_)
                    | Spec::ClusterClass { .. } => true,
                    _ => false,
                })
                .cloned()
                .collect()
        })
    }

    /// Applies a revision: its templates created where missing, its owners pointed back at them.
    fn install(&mut self, revision: &[Obj]) {
        let now = self.now;
        self.write(|s| {
            for o in revision {
                match s.get_mut(o.kind, &o.name) {
                    Some(live) if !o.kind.is_template() => live.spec = o.spec.clone(),
                    None if o.kind.is_template() => {
                        s.create(o.clone(), now);
                    }
                    _ => {}
                }
            }
        });
    }

    /// helm-controller's remediation: Helm rolls back to the previous revision (its templates
    /// recreated, the owners pointed back at them: a second re-provisioning wave) and deletes the
    /// failed revision's new templates; a refusal there fails the rollback, which is logged.
    fn rollback(&mut self, user: &str) -> Result<()> {
        let Some((before, after, _)) = self.revisions.clone() else {
            return Ok(());
        };
        self.install(&before);
        self.ev(|| "helm-controller: upgrade failed, release rolled back".to_string());
        let new = after
            .iter()
            .filter(|o| o.kind.is_template() && !before.iter().any(|b| b.key() == o.key()));
        for o in new {
            self.delete(o.kind, &o.name, user)?;
        }
        Ok(())
    }

    /// Retires the template `old` and replaces it with a new one of its kind, when the upgrade
    /// `changes` it.
    fn renew(&mut self, changes: bool, old: &mut Ref, prefix: &str) {
        if changes {
            self.retired.insert(old.clone());
            *old = self.new_template(old.kind, prefix, false);
        }
    }

    /// Renders the new templates (content-hash names), points the MachineDeployments and the
    /// control plane (or the ClusterClass) at them, and retires the old ones.
    fn apply_upgrade(&mut self) {
        let sc = self.sc.clone();
        if self.topology() {
            let Some(Spec::ClusterClass {
                mut cp_infra,
                mut workers,
            }) = self.spec(Kind::ClusterClass, CLASS)
            else {
                return;
            };
            self.renew(sc.upgrade_cp, &mut cp_infra, "cc-cp");
            for w in workers.iter_mut() {
                self.renew(sc.upgrade_workers, &mut w.infra, "cc-workers");
                self.renew(sc.upgrade_bootstrap, &mut w.bootstrap, "cc-bootstrap");
            }
            self.write(|s| {
                if let Some(spec) = s.spec_mut(Kind::ClusterClass, CLASS) {
                    *spec = Spec::ClusterClass { cp_infra, workers };
                }
            });
            self.ev(|| "helm: ClusterClass points at new templates".to_string());
            return;
        }
        if let Some(mut infra) = self.cp_infra(false).filter(|_| sc.upgrade_cp) {
            self.renew(true, &mut infra, CP);
            self.point_control_plane(&infra);
        }
        for md in self.read(|s| s.names(Kind::MachineDeployment)) {
            let Some(Spec::MachineDeployment(mut spec)) = self.spec(Kind::MachineDeployment, &md)
            else {
                continue;
            };
            self.renew(sc.upgrade_workers, &mut spec.infra, &md);
            let prefix = format!("{md}-bootstrap");
            self.renew(sc.upgrade_bootstrap, &mut spec.bootstrap, &prefix);
            self.point_machine_deployment(&md, spec.infra, spec.bootstrap);
        }
        let label = self.sc.deployer.label();
        let retired: Vec<String> = self.retired.iter().map(Ref::to_string).collect();
        self.ev(|| format!("{label}: upgrade applied, retired {retired:?}"));
    }

    /// The README's clean-up job: deletes every labelled template at least an hour old; the
    /// policy refuses those still in use, and the job moves on.
    pub(super) fn cleanup_job(&mut self) -> Result<()> {
        let candidates: Vec<Ref> = self.read(|s| {
            s.objects
                .values()
                .filter(|o| o.kind.is_template())
                // its label, and what the topology controller tried to delete once and left
                // behind (issue 17: the clean-up job collects topology-owned templates too)
                .filter(|o| {
                    o.labels.get(CLEANUP_LABEL).map(String::as_str) == Some("true")
                        || o.labels.contains_key(TOPOLOGY_OWNED)
                })
                .filter(|o| o.deleting.is_none() && o.created + CLEANUP_MIN_AGE <= self.now)
                .map(Obj::to_ref)
                .collect()
        });
        for r in candidates {
            let user = "system:serviceaccount:edge-sites:template-cleanup";
            self.delete(r.kind, &r.name, user)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::*;

    #[test]
    fn without_the_policy_helm3_upgrades_lose_node_reuse_decisions() {
        let lost: u64 = seeds(Deployer::Helm3, Lifecycle::None)
            .map(|s| run(s, false).0.lost)
            .sum();
        assert!(lost > 0);
    }

    #[test]
    fn argo_cd_never_prunes_owned_templates_with_or_without_the_policy() {
        for seed in seeds(Deployer::Argo, Lifecycle::None) {
            let (metrics, trace) = run(seed, false);
            assert_eq!(metrics.lost, 0, "seed {seed}");
            assert!(!trace
                .iter()
                .any(|l| l.contains("argocd-application-controller: DELETE")));
        }
    }
}
