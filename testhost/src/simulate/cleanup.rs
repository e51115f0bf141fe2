//! The clean-up job (examples/cleanup: hourly, `--min-age=10m`), running template-cleanup's own
//! decisions (collector/core): which templates are candidates (`select::candidate`: the clean-up
//! label or a topology copy, not being deleted, old enough, declared by no deploy tool; the
//! simulated tools publish no declared state, so none is) and what the answer to each DELETE
//! means (`answer::classify`: the guard's refusal keeps the template, anything else fails the
//! pass).

use anyhow::Result;
use template_cleanup_core::answer::{self, Outcome, Refused};
use template_cleanup_core::declared::Declared;
use template_cleanup_core::select::{self, Template};

use super::objects::*;
use super::world::{Actor, World};

/// The example's `--min-age`.
const MIN_AGE: u64 = 600;
/// The guard's ClusterAdmissionPolicy (template-cleanup's default `--guard`).
const GUARD: &str = "capi-template-guard";

#[derive(Debug, Default)]
pub struct CleanupJob;

impl Actor for CleanupJob {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let candidates: Vec<Ref> = w.read(|s| {
            let templates = s.objects.values().filter(|o| o.kind.is_template());
            let none = Declared::default();
            let now = w.now as i64;
            templates
                .filter(|o| select::candidate(&listed(o), now, MIN_AGE as i64, &none).is_ok())
                .map(Obj::to_ref)
                .collect()
        });
        for r in candidates {
            let user = "system:serviceaccount:edge-sites:template-cleanup";
            // kube-apiserver's answer to a webhook's refusal (k8s.io/apiserver
            // pkg/admission/plugin/webhook/errors/statuserror.go, ToStatusErr)
            let refused = w.try_delete(r.kind, &r.name, user)?.map(|v| Refused {
                code: v.code,
                reason: String::new(),
                message: format!(
                    "admission webhook \"{}\" denied the request: {}",
                    answer::guard_webhook(GUARD),
                    v.message
                ),
                causes: Vec::new(),
            });
            if let Outcome::Failed(why) = answer::classify(GUARD, refused.as_ref()) {
                w.m.cleanup_failed += 1;
                w.ev(|| format!("template-cleanup: {r}: {why}: the pass fails"));
            }
        }
        Ok(Some(HOUR))
    }
}

/// A template as template-cleanup lists it.
fn listed(o: &Obj) -> Template {
    Template {
        kind: template_cleanup_core::Kind {
            group: o.kind.group().into(),
            version: "v1beta1".into(),
            kind: o.kind.name().into(),
            plural: crate::kube::plural(o.kind.name()),
        },
        namespace: NAMESPACE.into(),
        name: o.name.clone(),
        uid: o.uid.to_string(),
        resource_version: o.uid.to_string(),
        labels: o.labels.clone(),
        created: o.created as i64,
        deleting: o.deleting.is_some(),
    }
}
