//! The control-plane controllers (KubeadmControlPlane, RKE2ControlPlane): rollout, one machine at
//! a time, and deletion. KubeadmControlPlane 1.12.0 to 1.12.5 cannot delete itself while its
//! machine template is missing (cluster-api issue 13536); 1.12.6 tolerates a missing template
//! while the control plane is being deleted (controlplane/kubeadm/internal/filters.go:
//! 208-211@v1.12.6, PR 13558). CAPRKE2 0.25.0 has the same bug (cluster-api-provider-rke2 issue
//! 1004, PR 1007).

use anyhow::Result;

use super::world::World;
use crate::apiserver::objects::*;

/// One reconcile; true when it changed something.
pub fn reconcile(w: &mut World) -> Result<bool> {
    let kind = w.sc.cp_kind;
    let Some(Obj {
        spec: Spec::ControlPlane(cp),
        deleting,
        ..
    }) = w.read(|s| s.get(kind, CP).cloned())
    else {
        return Ok(false);
    };
    let (infra, replicas) = (&cp.infra, cp.replicas);
    let machines = w.machines_of(kind, CP);
    if w.cluster_state().0 {
        return Ok(false);
    }
    if deleting.is_some() {
        if w.sc.cp_needs_template_on_delete && !w.fetch(kind.name(), infra) {
            return Ok(false);
        }
        for m in machines.iter().filter(|m| m.deleting.is_none()) {
            w.mark_deleted(Kind::Metal3Machine, &m.name);
        }
        if machines.is_empty() {
            w.write(|s| s.drop_finalizer(kind, CP, CP_FINALIZER));
            w.ev(|| format!("{} gone", kind.name()));
        }
        return Ok(machines.is_empty() || machines.iter().any(|m| m.deleting.is_none()));
    }
    // a missing current template aborts the whole reconcile
    if !w.fetch(kind.name(), infra) {
        return Ok(false);
    }
    w.adopt(&[infra]);
    // one machine at a time
    if machines.iter().any(|m| m.deleting.is_some()) {
        return Ok(false);
    }
    let outdated = machines
        .iter()
        .find(|m| m.cloned_from() != Some(&infra.name));
    let n = machines.len() as u32;
    if n < replicas + if outdated.is_some() { cp.max_surge } else { 0 } {
        return w.create_machine((kind, CP.into()), infra, false);
    }
    // here n >= replicas, and the replicas never change: no scale-down
    if let Some(v) = outdated.filter(|_| machines.iter().all(|m| w.ready(m))) {
        w.mark_deleted(Kind::Metal3Machine, &v.name);
        let v = &v.name;
        w.ev(|| format!("{}: rollout, Metal3Machine {v} deleting", kind.name()));
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::super::sim::testing::*;

    #[test]
    fn a_control_plane_that_needs_its_template_to_be_deleted_hangs_without_it() {
        let stuck: u64 = Deployer::ALL
            .into_iter()
            .flat_map(|d| seeds(d, Lifecycle::NamespaceDeletion))
            .filter(|seed| scenario(*seed).cp_needs_template_on_delete)
            .map(|seed| run(seed, false).0.stuck)
            .sum();
        assert!(stuck > 0);
    }
}
