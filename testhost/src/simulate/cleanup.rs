//! The README's clean-up job (docs/cleanup.md), hourly: deletes every labelled template at least
//! MIN_AGE_MINUTES old, and what the topology controller tried to delete once and left behind;
//! the policy refuses those still in use, and the job moves on.

use anyhow::Result;

use super::objects::*;
use super::world::{Actor, World};

/// The job's MIN_AGE_MINUTES.
const MIN_AGE: u64 = HOUR;

#[derive(Debug, Default)]
pub struct CleanupJob;

impl Actor for CleanupJob {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let candidates: Vec<Ref> = w.read(|s| {
            s.objects
                .values()
                .filter(|o| o.kind.is_template())
                .filter(|o| {
                    o.labels.get(CLEANUP_LABEL).map(String::as_str) == Some("true")
                        || o.labels.contains_key(TOPOLOGY_OWNED)
                })
                .filter(|o| o.deleting.is_none() && o.created + MIN_AGE <= w.now)
                .map(Obj::to_ref)
                .collect()
        });
        for r in candidates {
            let user = "system:serviceaccount:edge-sites:template-cleanup";
            w.delete(r.kind, &r.name, user)?;
        }
        Ok(Some(HOUR))
    }
}
