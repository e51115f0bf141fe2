//! The deploy tools: they apply an upgrade (new templates, the owners pointed at them) and
//! delete the templates it retired; what each does when the policy refuses a delete. And the
//! README's clean-up job.

use anyhow::Result;

use super::api::{Kind, Obj, Ref, Spec, CLEANUP_LABEL};
use super::scenario::*;
use super::sim::*;

impl Sim<'_> {
    pub(super) fn deployer(&mut self) -> Result<Option<u64>> {
        match self.deploy.clone() {
            DeployPhase::Apply => {
                if self.read(|s| s.namespace_terminating) {
                    self.deploy = DeployPhase::Done;
                    return Ok(None);
                }
                self.apply_upgrade();
                self.deploy = DeployPhase::Delete { attempt: 0 };
                Ok(Some(self.rng.range(1, 5)))
            }
            DeployPhase::Delete { attempt } => {
                let user = match self.sc.deployer {
                    Deployer::Helm3 | Deployer::Helm4 | Deployer::Topology => "helm",
                    Deployer::Flux => "system:serviceaccount:flux-system:helm-controller",
                    Deployer::Argo => "system:serviceaccount:argocd:argocd-application-controller",
                    Deployer::Keep => {
                        self.deploy = DeployPhase::Done;
                        return Ok(None);
                    }
                };
                let mut refused = false;
                let retired: Vec<Ref> = self.retired.iter().cloned().collect();
                for r in retired {
                    if matches!(self.delete(r.kind, &r.name, user)?, Deleted::Refused(_)) {
                        refused = true;
                    }
                }
                if !refused {
                    self.deploy = DeployPhase::Done;
                    return Ok(None);
                }
                let next = match self.sc.deployer {
                    // Helm 3 (and the class chart) logs the refusal and forgets the template
                    Deployer::Helm3 | Deployer::Topology => None,
                    Deployer::Helm4 => Some(self.rng.range(300, 900)),
                    Deployer::Flux => Some(600),
                    Deployer::Argo if attempt < 5 => Some(5 << attempt),
                    _ => None,
                };
                match next {
                    Some(delay) => {
                        self.m.retries += 1;
                        self.deploy = DeployPhase::Delete {
                            attempt: attempt + 1,
                        };
                        Ok(Some(delay))
                    }
                    None => {
                        self.deploy = DeployPhase::Done;
                        Ok(None)
                    }
                }
            }
            DeployPhase::Done => Ok(None),
        }
    }

    /// Renders the new templates (content-hash names), points the MachineDeployments and the
    /// control plane (or the ClusterClass) at them, and retires the old ones.
    pub(super) fn apply_upgrade(&mut self) {
        let bk = self.bootstrap_kind();
        if self.topology() {
            let Some(Spec::ClusterClass {
                mut cp_infra,
                mut workers,
            }) = self.read(|s| s.get(Kind::ClusterClass, CLASS).map(|o| o.spec.clone()))
            else {
                return;
            };
            if self.sc.upgrade_cp {
                let t = self.template(Kind::Metal3MachineTemplate, "cc-cp", true);
                self.retired.insert(cp_infra.clone());
                cp_infra = self.create(t);
            }
            for w in workers.iter_mut() {
                if self.sc.upgrade_workers {
                    let t = self.template(Kind::Metal3MachineTemplate, "cc-workers", true);
                    self.retired.insert(w.infra.clone());
                    w.infra = self.create(t);
                }
                if self.sc.upgrade_bootstrap {
                    let t = self.template(bk, "cc-bootstrap", true);
                    self.retired.insert(w.bootstrap.clone());
                    w.bootstrap = self.create(t);
                }
            }
            self.write(|s| {
                if let Some(o) = s.get_mut(Kind::ClusterClass, CLASS) {
                    o.spec = Spec::ClusterClass { cp_infra, workers };
                }
            });
            self.ev(|| "helm: ClusterClass points at new templates".to_string());
            return;
        }
        if self.sc.upgrade_cp {
            let old = self.read(|s| match s.get(self.sc.cp_kind, "edge-a-cp") {
                Some(Obj {
                    spec: Spec::ControlPlane { infra, .. },
                    ..
                }) => Some(infra.clone()),
                _ => None,
            });
            if let Some(old) = old {
                let t = self.template(Kind::Metal3MachineTemplate, "edge-a-cp", true);
                let new = self.create(t);
                self.write(|s| {
                    if let Some(Obj {
                        spec: Spec::ControlPlane { infra, .. },
                        ..
                    }) = s.get_mut(self.sc.cp_kind, "edge-a-cp")
                    {
                        *infra = new.clone();
                    }
                });
                self.retired.insert(old);
            }
        }
        for md in self.read(|s| s.names(Kind::MachineDeployment)) {
            let Some(Spec::MachineDeployment {
                infra, bootstrap, ..
            }) = self.read(|s| s.get(Kind::MachineDeployment, &md).map(|o| o.spec.clone()))
            else {
                continue;
            };
            let new_infra = if self.sc.upgrade_workers {
                let t = self.template(Kind::Metal3MachineTemplate, &md, true);
                self.retired.insert(infra.clone());
                self.create(t)
            } else {
                infra
            };
            let new_boot =
                if self.sc.upgrade_bootstrap || !self.sc.upgrade_workers && !self.sc.upgrade_cp {
                    let t = self.template(bk, &format!("{md}-bootstrap"), true);
                    self.retired.insert(bootstrap.clone());
                    self.create(t)
                } else {
                    bootstrap
                };
            self.write(|s| {
                if let Some(Obj {
                    spec:
                        Spec::MachineDeployment {
                            infra, bootstrap, ..
                        },
                    ..
                }) = s.get_mut(Kind::MachineDeployment, &md)
                {
                    *infra = new_infra;
                    *bootstrap = new_boot;
                }
            });
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
                .filter(|o| o.labels.get(CLEANUP_LABEL).map(String::as_str) == Some("true"))
                .filter(|o| o.deleting.is_none() && o.created + CLEANUP_MIN_AGE <= self.now)
                .map(|o| Ref::new(o.kind, o.name.clone()))
                .collect()
        });
        for r in candidates {
            self.delete(
                r.kind,
                &r.name,
                "system:serviceaccount:edge-sites:template-cleanup",
            )?;
        }
        Ok(())
    }
}
