//! template-cleanup as examples/cleanup runs it (hourly, `--min-age=10m`), with its own decisions
//! (template-cleanup/core): which templates are candidates (`select::candidate`: the cleanup
//! label or a topology copy, not being deleted, old enough, declared by no deploy tool: what the
//! simulated tool publishes) and what the answer to each DELETE means (`answer::classify`: the
//! guard's refusal keeps the template, anything else fails the pass).

use anyhow::Result;
use template_cleanup_core::answer::{self, ErrorStatus, TemplateOutcome};
use template_cleanup_core::declared::Declared;
use template_cleanup_core::select::{self, ListedTemplate, Skip};

use super::world::{Actor, World};
use crate::apiserver::objects::*;

/// The example's `--min-age`.
const MIN_AGE: u64 = 600;
/// The simulation's second 0 as the API server's timestamps show it (2026-11-01T00:00:00Z,
/// apiserver/render.rs), in seconds since the epoch: the clock the listed templates are aged by.
const START: i64 = 1_793_491_200;
/// The policy named in the webhook's refusal and read back by `answer::classify`. One simulated
/// guard answers every client, so it keeps the main guard's name; the real job's DELETEs meet
/// examples/cleanup's copy, `capi-template-guard-cleanup` (template-cleanup's default `--policy`).
const GUARD: &str = "capi-template-guard";

#[derive(Debug, Default)]
pub struct TemplateCleanup;

impl Actor for TemplateCleanup {
    fn step(&mut self, w: &mut World) -> Result<Option<u64>> {
        let now = START + w.now as i64;
        let templates: Vec<(Ref, ListedTemplate)> = w.read(|s| {
            let templates = s.objects.values().filter(|o| o.kind.is_template());
            let listed = |o: &Obj| Ok((o.to_ref(), listed(o, &w.sc.installed, now)?));
            templates.map(listed).collect::<Result<_>>()
        })?;
        // the declared state names objects as template-cleanup's listing does
        let mut declared = Declared::default();
        for (r, t) in &templates {
            if w.status.declared.contains(r) {
                declared.insert(t.declared_object(), "the deploy tool");
            }
        }
        let mut candidates = Vec::new();
        for (r, t) in templates {
            match select::candidate(&t, now, MIN_AGE as i64, &declared) {
                Ok(()) => candidates.push(r),
                Err(Skip::Declared { .. }) => w.m.template_cleanup_declared += 1,
                Err(_) => {}
            }
        }
        for r in candidates {
            let user = "system:serviceaccount:edge-sites:template-cleanup";
            // kube-apiserver's answer to a webhook's refusal (k8s.io/apiserver
            // pkg/admission/plugin/webhook/errors/statuserror.go, ToStatusErr)
            let refused = w.try_delete(r.kind, &r.name, user)?.map(|v| ErrorStatus {
                code: v.code,
                reason: String::new(),
                message: format!(
                    "admission webhook \"{}\" denied the request: {}",
                    answer::guard_webhook(GUARD),
                    v.message
                ),
                ..ErrorStatus::default()
            });
            if let TemplateOutcome::Failed(why) = answer::classify(GUARD, refused.as_ref()) {
                w.m.template_cleanup_failed += 1;
                w.ev(|| format!("template-cleanup: {r}: {why}: the pass fails"));
            }
        }
        Ok(Some(HOUR))
    }
}

/// A template as template-cleanup lists it: served at v1beta1 and read by the binary's own
/// function.
fn listed(o: &Obj, installed: &Providers, now: i64) -> Result<ListedTemplate> {
    let kind = template_cleanup_core::ServedKind {
        group: o.kind.group().into(),
        version: "v1beta1".into(),
        kind: o.kind.name().into(),
        plural: crate::apiserver::kube::plural(o.kind.name()),
    };
    let item = crate::apiserver::render::render(o, "v1beta1", installed);
    ListedTemplate::from_listed(&kind, &item, now).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::super::world::Verdict;
    use super::*;

    /// On a World of one free template with the cleanup label, past `--min-age`: the job
    /// deletes it, unless the deploy tool still declares it.
    #[test]
    fn the_job_leaves_what_the_deploy_tool_declares() {
        for (declared, deleted) in [(false, true), (true, false)] {
            let mut admit = |_: &serde_json::Value| Ok(Verdict::ALLOW);
            let mut w = World::new(1, Default::default(), &mut admit, false);
            let spec = Spec::Template {
                node_reuse: true,
                cleaning: None,
            };
            let mut t = Obj::new(Kind::Metal3MachineTemplate, "t-1", spec);
            t.labels.insert(CLEANUP_LABEL.into(), "true".into());
            let r = w.create(t);
            if declared {
                w.status.declared.insert(r.clone());
            }
            w.now = MIN_AGE;
            TemplateCleanup.step(&mut w).unwrap();
            let gone = w.read(|s| !s.exists(&r));
            assert_eq!(gone, deleted, "declared: {declared}");
            assert_eq!(w.m.template_cleanup_declared, u64::from(declared));
        }
    }
}
