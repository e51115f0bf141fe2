//! The deploy tool: applies an upgrade (new templates with content-hash names, the owners
//! pointed at them) and deletes the templates it retired; what it does when the policy refuses a
//! delete is its [`OnRefusal`] (docs/deploy-tools.md: which tool does what, from its source).

use std::collections::BTreeSet;

use anyhow::Result;

use super::create::MANAGED_BY;
use super::scenario::{Deployer, OnRefusal};
use super::world::{Actor, World};
use crate::apiserver::objects::*;

/// The account its deletes come from (the policy reads no user: one name for every tool).
const USER: &str = "deploy-tool";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Apply,
    /// Deleting what the upgrade retired; the attempt.
    Delete(u32),
    /// The release was rolled back after a failed attempt; the upgrade runs again.
    Reapply(u32),
    Done,
}

/// The release's objects (owners and templates) before and after the upgrade, and what it
/// retired, for a rollback and the attempt after it (empty before the upgrade).
type Revisions = (Vec<Obj>, Vec<Obj>, BTreeSet<Ref>);

#[derive(Debug)]
pub struct DeployTool {
    tool: Deployer,
    phase: Phase,
    /// Templates the upgrade retired (to be deleted by the tool or collected by template-cleanup).
    retired: BTreeSet<Ref>,
    /// Retired templates it gave up deleting (leaked): in no release or inventory any more.
    given_up: BTreeSet<Ref>,
    revisions: Revisions,
}

impl DeployTool {
    pub fn new(tool: Deployer) -> Self {
        DeployTool {
            tool,
            phase: Phase::Apply,
            retired: BTreeSet::new(),
            given_up: BTreeSet::new(),
            revisions: Revisions::default(),
        }
    }
}

impl Actor for DeployTool {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let next = match self.phase.clone() {
            Phase::Apply | Phase::Reapply(_) if w.read(|s| s.namespace_terminating) => {
                // a terminating namespace refuses the creates: the upgrade fails at once
                self.phase = Phase::Done;
                None
            }
            Phase::Apply => {
                let before = release_objects(w);
                self.apply_upgrade(w);
                self.revisions = (before, release_objects(w), self.retired.clone());
                self.phase = Phase::Delete(0);
                Some(w.rng.range(1, 5))
            }
            Phase::Reapply(attempt) => {
                install(w, &self.revisions.1);
                self.retired = self.revisions.2.clone();
                w.ev(|| format!("{USER}: upgrade applied again"));
                self.phase = Phase::Delete(attempt);
                Some(w.rng.range(1, 5))
            }
            Phase::Delete(attempt) => self.delete_retired(w, attempt)?,
            Phase::Done => None,
        };
        w.status.upgrade_done = self.phase == Phase::Done;
        w.status.declared = self.declared(w);
        Ok(next)
    }
}

impl DeployTool {
    /// What the tool still declares: the templates it renders and has not retired, and, for a
    /// tool that retries every interval, the retired ones it has not pruned yet (Flux
    /// kustomize-controller keeps them in `status.inventory`, docs/deploy-tools.md). A Helm
    /// release's manifest holds only what it renders now.
    fn declared(&self, w: &World) -> BTreeSet<Ref> {
        let pruning = matches!(self.tool.on_refusal(), OnRefusal::RetryEvery(_));
        let declares =
            |r: &Ref| !self.given_up.contains(r) && (pruning || !self.retired.contains(r));
        w.read(|s| {
            let rendered = s
                .objects
                .values()
                .filter(|o| o.labels.contains_key(CLEANUP_LABEL))
                .filter(|o| o.labels.get(MANAGED_BY).is_some_and(|by| by == "Helm"));
            rendered.map(Obj::to_ref).filter(declares).collect()
        })
    }

    /// Deletes the templates the upgrade retired; after a refusal, what its [`OnRefusal`] says.
    fn delete_retired(&mut self, w: &mut World, attempt: u32) -> Result<Option<u64>> {
        let on_refusal = self.tool.on_refusal();
        if on_refusal == OnRefusal::Keep {
            self.phase = Phase::Done;
            return Ok(None);
        }
        let mut refused = Vec::new();
        for r in self.retired.clone() {
            let owned = w.read(|s| {
                s.get(r.kind, &r.name)
                    .is_some_and(|o| o.owner_cluster.is_some() || o.controller.is_some())
            });
            if matches!(on_refusal, OnRefusal::SkipOwned { .. }) && owned {
                self.give_up(w, r, "an owned object is never pruned");
            } else if w.delete(r.kind, &r.name, USER)? {
                self.retired.remove(&r);
            } else {
                refused.push(r);
            }
        }
        if refused.is_empty() {
            self.phase = Phase::Done;
            return Ok(None);
        }
        let retry = match on_refusal {
            OnRefusal::Rerun { after: (lo, hi) } => Some(w.rng.range(lo, hi)),
            OnRefusal::RetryEvery(interval) => Some(interval),
            OnRefusal::RollBackAndRetry(n)
                if attempt < n && !w.read(|s| s.namespace_terminating) =>
            {
                self.rollback(w)?;
                self.phase = Phase::Reapply(attempt + 1);
                w.m.retries += 1;
                return Ok(Some(w.rng.range(60, 300)));
            }
            OnRefusal::SkipOwned { retries } if attempt < retries => Some(5 << attempt),
            _ => None,
        };
        if retry.is_some() {
            w.m.retries += 1;
            self.phase = Phase::Delete(attempt + 1);
            return Ok(retry);
        }
        for r in refused {
            self.give_up(w, r, &format!("{USER} gave up the delete"));
        }
        self.phase = Phase::Done;
        Ok(None)
    }

    /// A retired template it will not try to delete again: leaked, and declared no more.
    fn give_up(&mut self, w: &mut World, r: Ref, why: &str) {
        self.retired.remove(&r);
        w.leak(&r, why);
        self.given_up.insert(r);
    }

    /// The remediation between attempts: Helm rolls back to the previous revision (its templates
    /// recreated, the owners pointed back at them: a second re-provisioning wave) and deletes the
    /// failed revision's new templates; a refusal there fails the rollback, which is logged.
    fn rollback(&self, w: &mut World) -> Result<()> {
        let (before, after, _) = &self.revisions;
        install(w, before);
        w.ev(|| format!("{USER}: upgrade failed, release rolled back"));
        let new = after
            .iter()
            .filter(|o| o.kind.is_template() && !before.iter().any(|b| b.key() == o.key()));
        for o in new {
            w.delete(o.kind, &o.name, USER)?;
        }
        Ok(())
    }

    /// Retires the template `old` and replaces it with a new one of its kind, when the upgrade
    /// `changes` it.
    fn renew(&mut self, w: &mut World, changes: bool, old: &mut Ref, prefix: &str) {
        if changes {
            self.retired.insert(old.clone());
            *old = w.new_template(old.kind, prefix, false);
        }
    }

    /// Renders the new templates, points the MachineDeployments and the control plane (or the
    /// ClusterClass) at them, and retires the old ones.
    fn apply_upgrade(&mut self, w: &mut World) {
        let sc = w.sc.clone();
        if w.topology() {
            let Some(Spec::ClusterClass {
                mut cp_infra,
                mut workers,
            }) = w.spec(Kind::ClusterClass, CLASS)
            else {
                return;
            };
            self.renew(w, sc.upgrade_cp, &mut cp_infra, "cc-cp");
            for wk in workers.iter_mut() {
                self.renew(w, sc.upgrade_workers, &mut wk.infra, "cc-workers");
                self.renew(w, sc.upgrade_bootstrap, &mut wk.bootstrap, "cc-bootstrap");
            }
            w.write(|s| {
                if let Some(spec) = s.spec_mut(Kind::ClusterClass, CLASS) {
                    *spec = Spec::ClusterClass { cp_infra, workers };
                }
            });
            w.ev(|| format!("{USER}: ClusterClass points at new templates"));
            return;
        }
        if let Some(mut infra) = w.cp_infra(false).filter(|_| sc.upgrade_cp) {
            self.renew(w, true, &mut infra, CP);
            w.point_control_plane(&infra);
        }
        for md in w.read(|s| s.names(Kind::MachineDeployment)) {
            let Some(Spec::MachineDeployment(mut spec)) = w.spec(Kind::MachineDeployment, &md)
            else {
                continue;
            };
            self.renew(w, sc.upgrade_workers, &mut spec.infra, &md);
            let prefix = format!("{md}-bootstrap");
            self.renew(w, sc.upgrade_bootstrap, &mut spec.bootstrap, &prefix);
            w.point_machine_deployment(&md, spec.infra, spec.bootstrap);
        }
        let retired: Vec<String> = self.retired.iter().map(Ref::to_string).collect();
        w.ev(|| format!("{USER}: upgrade applied, retired {retired:?}"));
    }
}

/// The release's objects: the owners the upgrade points at templates, and the templates.
fn release_objects(w: &World) -> Vec<Obj> {
    w.read(|s| {
        s.objects
            .values()
            .filter(|o| match o.spec {
                Spec::Template { .. } => o.labels.contains_key(CLEANUP_LABEL),
                Spec::MachineDeployment(_) | Spec::ControlPlane(_) | Spec::ClusterClass { .. } => {
                    true
                }
                _ => false,
            })
            .cloned()
            .collect()
    })
}

/// Applies a revision: its templates created where missing, its owners pointed back at them.
fn install(w: &World, revision: &[Obj]) {
    let now = w.now;
    w.write(|s| {
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

#[cfg(test)]
mod tests {
    use super::super::sim::testing::*;
    use super::OnRefusal;

    /// With every template DELETE refused, templates leak exactly in the flows whose behaviour
    /// explains a leak (forget, roll back and retry, skip owned), never where the tool reruns,
    /// retries every interval or keeps them.
    #[test]
    fn leaks_follow_what_the_tool_does_with_a_refusal() {
        for d in Deployer::ALL {
            let leaked: u64 = seeds(d, Lifecycle::None)
                .map(|s| run(s, true).0.leaked)
                .sum();
            let explained = d.on_refusal().explained_leak().is_some();
            assert_eq!(leaked > 0, explained, "{} leaked {leaked}", d.label());
        }
    }

    #[test]
    fn without_the_policy_upgrades_lose_node_reuse_decisions() {
        let forget = Deployer::Tool(OnRefusal::Forget);
        let lost: u64 = seeds(forget, Lifecycle::None)
            .map(|s| run(s, false).0.lost)
            .sum();
        assert!(lost > 0);
    }

    #[test]
    fn a_tool_that_skips_owned_objects_never_deletes_a_template_with_or_without_the_policy() {
        let mut leaked = 0;
        let skip_owned = Deployer::Tool(OnRefusal::SkipOwned { retries: 5 });
        for seed in seeds(skip_owned, Lifecycle::None) {
            let (metrics, trace) = run(seed, false);
            let prunes = trace.iter().filter(|l| l.contains("deploy-tool: DELETE"));
            assert_eq!(prunes.count(), 0, "seed {seed}");
            leaked += metrics.leaked;
        }
        // every retired template was owned, and left to template-cleanup
        assert!(leaked > 0);
    }
}
