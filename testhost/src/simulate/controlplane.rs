//! The control-plane controllers (KubeadmControlPlane, RKE2ControlPlane): rollout, one machine at
//! a time, and deletion. KubeadmControlPlane 1.12.0 to 1.12.5 cannot delete itself while its
//! machine template is missing (cluster-api issue 13536); 1.12.6 tolerates it
//! (controlplane/kubeadm/internal/filters.go@v1.12.6, PR 13558). CAPRKE2 0.25.0 has the same bug
//! (cluster-api-provider-rke2 issue 1004, PR 1007).

use anyhow::Result;

use super::api::{Kind, Obj, Spec, CLONED_FROM_NAME};
use super::sim::*;

impl Sim<'_> {
    pub(super) fn cp_controller(&mut self) -> Result<bool> {
        let kind = self.sc.cp_kind;
        let Some(obj) = self.read(|s| s.get(kind, "edge-a-cp").cloned()) else {
            return Ok(false);
        };
        let Spec::ControlPlane {
            infra,
            replicas,
            max_surge,
            ..
        } = obj.spec.clone()
        else {
            return Ok(false);
        };
        let machines = self.machines_of(kind, "edge-a-cp");
        let (paused, _) = self.cluster_state();
        if paused {
            return Ok(false);
        }
        if obj.deleting.is_some() {
            if self.sc.cp_needs_template_on_delete && !self.fetch(kind.name(), &infra) {
                return Ok(false);
            }
            let mut did = false;
            for m in &machines {
                if m.deleting.is_none() {
                    let now = self.now;
                    self.write(|s| s.delete(Kind::Metal3Machine, &m.name, now));
                    did = true;
                }
            }
            if machines.is_empty() {
                self.write(|s| s.drop_finalizer(kind, "edge-a-cp", CP_FINALIZER));
                self.ev(|| format!("{} gone", kind.name()));
                return Ok(true);
            }
            return Ok(did);
        }
        // a missing current template aborts the whole reconcile
        if !self.fetch(kind.name(), &infra) {
            return Ok(false);
        }
        self.write(|s| {
            if let Some(t) = s.get_mut(infra.kind, &infra.name) {
                t.owner_cluster.get_or_insert_with(|| CLUSTER.to_string());
            }
        });
        let live: Vec<&Obj> = machines.iter().filter(|m| m.deleting.is_none()).collect();
        if live.len() < machines.len() {
            // one machine at a time
            return Ok(false);
        }
        let outdated: Vec<&Obj> = live
            .iter()
            .copied()
            .filter(|m| m.annotations.get(CLONED_FROM_NAME) != Some(&infra.name))
            .collect();
        let all_ready = live.iter().all(|m| self.ready(m));
        let n = live.len() as u32;
        let target = replicas + if outdated.is_empty() { 0 } else { max_surge };
        if n < target {
            return self.create_machine((kind, "edge-a-cp".into()), &infra, false);
        }
        if all_ready && !outdated.is_empty() && n >= replicas {
            let v = outdated[0].name.clone();
            let now = self.now;
            self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
            self.ev(|| format!("{}: rollout, Metal3Machine {v} deleting", kind.name()));
            return Ok(true);
        }
        if n > replicas && all_ready {
            let v = live[0].name.clone();
            let now = self.now;
            self.write(|s| s.delete(Kind::Metal3Machine, &v, now));
            return Ok(true);
        }
        Ok(false)
    }
}
