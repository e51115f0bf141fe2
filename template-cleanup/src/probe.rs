//! The live probe (template_cleanup_core::probe): before the first DELETE, a dry-run DELETE of a
//! template the guard is sure to keep must come back as the guard's refusal.

use serde_json::Value;
use template_cleanup_core::guard::Served;
use template_cleanup_core::probe::{
    judge, named_by_machine_deployment, not_a_proof, owning_clusters, Probe,
};
use template_cleanup_core::ServedKind;

use crate::api::{CallError, Cluster};

/// Cluster API's core group: MachineDeployments and Clusters.
pub const CAPI_GROUP: &str = "cluster.x-k8s.io";

/// The most templates tried: each try that is no proof costs a GET and perhaps a DELETE.
const TRIES: usize = 10;

/// How often one template is read and probed before the probe gives up on it.
const MOVES: usize = 2;

/// What the probe found: the report's line, or why the pass must stop.
pub async fn run(
    cluster: &Cluster,
    guard: &str,
    served: &[Served],
    kinds: &[ServedKind],
    namespaces: Option<&[String]>,
    unseen: &[String],
) -> Result<String, String> {
    let preferred = |kind: &str| {
        let mut matching: Vec<&Served> = served
            .iter()
            .filter(|s| s.kind.group == CAPI_GROUP && s.kind.kind == kind)
            .collect();
        matching.sort_by_key(|s| !s.preferred);
        matching.first().map(|s| s.kind.clone())
    };
    let none = |why: &str| {
        Ok(format!(
            "no probe possible ({why}); the pass relies on the checks of the guard's policy and webhook"
        ))
    };
    let Some(deployments) = preferred("MachineDeployment") else {
        return none("Cluster API's MachineDeployments are not served");
    };
    let items = cluster
        .list(&deployments, namespaces, "")
        .await
        .map_err(|e| {
            format!("the probe cannot list MachineDeployments: {e}. The job needs list on machinedeployments.cluster.x-k8s.io (examples/cleanup/component/cleanup.yaml).")
        })?;
    let mut named: Vec<_> = items.iter().flat_map(named_by_machine_deployment).collect();
    named.sort();
    named.dedup();
    let mut tried = 0;
    let mut moved = Vec::new();
    'targets: for target in named {
        if tried == TRIES {
            break;
        }
        let Some(kind) = kinds
            .iter()
            .find(|k| k.group == target.group && k.kind == target.kind)
        else {
            continue;
        };
        if unseen.contains(&target.namespace) {
            continue;
        }
        tried += 1;
        let what = format!("{} {}/{}", kind.resource(), target.namespace, target.name);
        // A template deleted or recreated between the GET and the dry-run DELETE (its uid
        // precondition fails) proves nothing either way: read it again once.
        for _ in 0..MOVES {
            let read = |e: CallError| format!("the probe cannot read {what}: {e}.");
            let Some(template) = cluster
                .get(kind, &target.namespace, &target.name)
                .await
                .map_err(read)?
            else {
                continue 'targets;
            };
            if not_a_proof(&template).is_some()
                || !clusters_live(cluster, &target.namespace, &template, served).await?
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
                Err(CallError::Refused(refused)) => Some(refused),
                Err(CallError::Other(text)) => {
                    return Err(format!(
                        "the probe, a dry-run DELETE of {what}, which a MachineDeployment uses, got no answer: {text}."
                    ))
                }
            };
            match judge(guard, answer.as_ref()) {
                Probe::Judged(text) => {
                    return Ok(format!(
                        "the guard refused a dry-run DELETE of {what}, which a MachineDeployment uses: {text}"
                    ))
                }
                Probe::Moved => continue,
                Probe::NotJudged(text) => {
                    return Err(format!(
                        "the probe, a dry-run DELETE of {what}, which a MachineDeployment uses, did not come back as the guard's refusal: {text}. The guard does not judge as its policy and webhook say (its pods may run monitor mode or an older configuration)."
                    ))
                }
            }
        }
        moved.push(what);
    }
    // A template in use existed, so a probe was possible; it only never held still. Deleting
    // on the checks alone would skip the proof exactly when templates are being recreated.
    if !moved.is_empty() {
        return Err(format!(
            "the probe could not finish: {} changed or went away between its read and its dry-run DELETE, {MOVES} times each. Run the pass again once the deploy tool that recreates them has settled.",
            moved.join(", ")
        ));
    }
    none("no MachineDeployment in a namespace collected in names a live template of a kind collected")
}

/// Whether every Cluster that owns `template` exists and is not being deleted: the guard lets a
/// template go once its Clusters are all being deleted (docs/design.md, row 6).
async fn clusters_live(
    cluster: &Cluster,
    namespace: &str,
    template: &Value,
    served: &[Served],
) -> Result<bool, String> {
    let owners = owning_clusters(template);
    if owners.is_empty() {
        return Ok(true);
    }
    let Some(kind) = served
        .iter()
        .filter(|s| s.kind.group == CAPI_GROUP && s.kind.kind == "Cluster")
        .min_by_key(|s| !s.preferred)
        .map(|s| s.kind.clone())
    else {
        return Ok(false);
    };
    for name in owners {
        let owner = cluster
            .get(&kind, namespace, &name)
            .await
            .map_err(|e| {
                format!("the probe cannot read Cluster {namespace}/{name}: {e}. The job needs get on clusters.cluster.x-k8s.io (examples/cleanup/component/cleanup.yaml).")
            })?;
        match owner {
            Some(o)
                if o.pointer("/metadata/deletionTimestamp")
                    .is_none_or(Value::is_null) => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}
