//! The live probe (template_cleanup_core::probe): before the first DELETE, a dry-run DELETE of a
//! template the guard is sure to keep must come back as the guard's refusal.

use guard::catalogue::CAPI_GROUP;
use guard::settings::Settings;
use serde_json::Value;
use template_cleanup_core::ServedKind;
use template_cleanup_core::delete_decision::{Referrers, Verdict};
use template_cleanup_core::preflight::{Served, served_kind};
use template_cleanup_core::probe::{
    MACHINE_DEPLOYMENT, Named, Probe, being_deleted, judge, targets,
};

use crate::api::{CallError, Cluster, ListError};
use crate::error::ProbeError;

/// How often one template is read and probed before the probe gives up on it.
const MOVES: usize = 2;

/// What the probe found: the report's line, and the template whose refusal proved it (`None`:
/// no probe possible), which a re-probe during the pass tries first.
#[derive(Debug, Default)]
pub struct Proof {
    pub line: String,
    pub target: Option<Named>,
    /// The referrers it listed, as the guard reads them: the pass decides with them before
    /// each DELETE.
    pub referrers: Referrers,
}

/// What the probe works within: the guard's policy name, the served and collected kinds, the
/// namespaces collected in (`None`: all) and those the guard never judges, and the deployed
/// guard's settings.
pub struct Scope<'a> {
    pub policy: &'a str,
    pub served: &'a [Served],
    pub kinds: &'a [ServedKind],
    pub namespaces: Option<&'a [String]>,
    pub unseen: &'a [String],
    pub settings: &'a Settings,
}

/// The probe: tries every template a live MachineDeployment names, in order, until the guard
/// refuses one. A target is one the guard's own decision keeps, taken over the referrers and
/// Clusters listed in its namespace with the deployed guard's `settings`
/// (template_cleanup_core::delete_decision). A target that cannot prove anything (a template of
/// a kind not collected, in a namespace the guard never judges, missing, being deleted, or one
/// the decision lets go: marked for move, its Clusters being deleted) is skipped and costs no
/// DELETE; there is no bound on how many are skipped,
/// so a stuck rollout cannot use up the tries. A live target that never holds still (gone or
/// recreated between the read and the dry-run DELETE, [`MOVES`] times) is no proof either: when
/// a live target existed and none could be probed, the pass stops. "No probe possible" only when
/// no live target exists. `first` is tried before the others (the last proof, on a re-probe).
pub async fn run(
    cluster: &Cluster,
    scope: &Scope<'_>,
    first: Option<&Named>,
) -> Result<Proof, ProbeError> {
    let Scope {
        policy,
        served,
        kinds,
        namespaces,
        unseen,
        settings,
    } = *scope;
    let none = |why: &str, referrers: Referrers| {
        Ok(Proof {
            line: format!(
                "no probe possible ({why}); the pass relies on the checks of the guard's policy and webhook"
            ),
            target: None,
            referrers,
        })
    };
    if served_kind(served, CAPI_GROUP, MACHINE_DEPLOYMENT).is_none() {
        return none(
            "Cluster API's MachineDeployments are not served",
            Referrers::default(),
        );
    }
    // Every kind of the guard's referrer table the cluster serves, at its group's preferred
    // version, page by page: only what the guard reads is kept of each object.
    let mut listed = Referrers::default();
    let mut unreadable = None;
    for entry in &guard::catalogue::REFERRERS {
        let kind = entry.kind();
        let Some(served) = served_kind(served, entry.resource.group, kind) else {
            continue;
        };
        cluster
            .list_each(served, namespaces, "", false, |object| {
                if let Err(e) = listed.add(kind, &object) {
                    unreadable.get_or_insert(e);
                }
                Ok::<(), std::convert::Infallible>(())
            })
            .await
            .map_err(|e| match e {
                ListError::Call(source) => ProbeError::List {
                    resource: served.resource(),
                    source,
                },
                ListError::Item(never) => match never {},
            })?;
    }
    // The deployed guard fails its own list of them the same way, and refuses every DELETE it
    // asks about: no pass can prove anything then.
    if let Some(source) = unreadable {
        return Err(ProbeError::Referrers { source });
    }
    let mut named = targets(&listed);
    if let Some(first) = first.filter(|f| named.contains(f)) {
        named.retain(|n| n != first);
        named.insert(0, first.clone());
    }
    let mut moved = Vec::new();
    'targets: for target in named {
        let Some(kind) = kinds
            .iter()
            .find(|k| k.group == target.group && k.kind == target.kind)
        else {
            continue;
        };
        if unseen.contains(&target.namespace) {
            continue;
        }
        let what = format!("{} {}/{}", kind.resource(), target.namespace, target.name);
        // A template deleted or recreated between the GET and the dry-run DELETE (its uid
        // precondition fails) proves nothing either way: read it again.
        for _ in 0..MOVES {
            let read = |source: CallError| ProbeError::Read {
                what: what.clone(),
                source,
            };
            let Some(template) = cluster
                .get(kind, &target.namespace, &target.name)
                .await
                .map_err(read)?
            else {
                continue 'targets;
            };
            if being_deleted(&template) {
                continue 'targets;
            }
            if let Verdict::Releases(_) =
                listed.guard_decides(&target.group, &target.kind, &template, settings)
            {
                continue 'targets;
            }
            let uid = template
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("");
            let answer = match cluster
                .probe_delete(kind, &target.namespace, &target.name, uid)
                .await
            {
                Ok(_) => None,
                Err(CallError::Status(refused)) => Some(refused),
                Err(source @ CallError::Other(_)) => {
                    return Err(ProbeError::NoAnswer { what, source });
                }
            };
            match judge(policy, answer.as_ref()) {
                Probe::Judged(text) => {
                    return Ok(Proof {
                        line: format!(
                            "the guard refused a dry-run DELETE of {what}, which a MachineDeployment uses: {text}"
                        ),
                        target: Some(target),
                        referrers: listed,
                    });
                }
                Probe::Moved => continue,
                Probe::NotJudged(answer) => return Err(ProbeError::NotJudged { what, answer }),
            }
        }
        moved.push(what);
    }
    // A template in use existed, so a probe was possible; it only never held still. Deleting
    // on the checks alone would skip the proof exactly when templates are being recreated.
    if !moved.is_empty() {
        return Err(ProbeError::Unsettled {
            moved,
            times: MOVES,
        });
    }
    none(
        "no MachineDeployment in a namespace collected in names a live template of a kind collected",
        listed,
    )
}
