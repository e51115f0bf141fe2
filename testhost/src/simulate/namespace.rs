//! The lifecycle "namespace deletion": the namespace controller deletes every kind (one kind per
//! pass, in random order), again and again until the namespace is empty; creates are refused
//! from the start.

use anyhow::Result;

use super::world::{Actor, World};
use crate::apiserver::objects::*;

#[derive(Debug, Default)]
pub struct NamespaceController {
    /// The kinds left in this pass.
    kinds: Vec<Kind>,
}

impl Actor for NamespaceController {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        w.lifecycle_starts();
        w.write(|s| s.namespace_terminating = true);
        if w.read(|s| s.objects.is_empty()) {
            return Ok(None);
        }
        if self.kinds.is_empty() {
            self.kinds = Kind::ALL.to_vec();
            w.rng.shuffle(&mut self.kinds);
        }
        let kind = self.kinds.remove(0);
        for name in w.shuffled(kind) {
            let user = "system:serviceaccount:kube-system:namespace-controller";
            if !w.delete(kind, &name, user)? {
                w.m.retries += 1;
            }
        }
        let pass_done = self.kinds.is_empty();
        let (lo, hi) = if pass_done { (5, 30) } else { (0, 2) };
        Ok(Some(w.rng.range(lo, hi)))
    }
}
