//! Helm's release storage, bounded at a cluster's scale: one metadata-only list of the `owner=helm`
//! Secrets per namespace read (no Secret data crosses the wire), the current revisions picked
//! from Helm's labels by the core ([`current_revisions`]), and only those fetched, one at a time,
//! each decoded under [`MAX_RELEASE_BYTES`] and dropped before the next. A release that cannot be
//! read keeps every template of its namespaces (declared, unreadable release); a list or GET the
//! API server refuses stops the pass, as every other read does.

use std::collections::BTreeSet;

use template_cleanup_core::declared::Declared;
use template_cleanup_core::helm::{
    FluxHelmRelease, HelmRevision, MAX_RELEASE_BYTES, SELECTOR, StoredRevision, Unreadable,
    current_revisions, stored_release, stored_revision, unreadable_namespaces,
};

use crate::api::Cluster;
use crate::error::{RevisionError, SourceError};

/// Where the release Secrets are read: `None` for every namespace (the collection is
/// cluster-wide); else the namespaces collected in, those of `--helm-storage-namespace`, and the
/// storage namespaces of every Flux HelmRelease (helm-controller keeps a release's Secrets in the
/// HelmRelease's storage namespace, by default its own, not where the templates are rendered).
pub fn storage_namespaces(
    collected: Option<&[String]>,
    flags: &[String],
    flux: &[FluxHelmRelease],
) -> Option<Vec<String>> {
    let collected = collected?;
    let mut out: BTreeSet<String> = collected.iter().cloned().collect();
    out.extend(flags.iter().cloned());
    for release in flux {
        out.extend(release.storage.iter().cloned());
    }
    Some(out.into_iter().collect())
}

/// Reads the releases stored in `namespaces` (`None`: every namespace) into `declared`; returns
/// the report's line for the source.
pub async fn read(
    cluster: &Cluster,
    namespaces: Option<&[String]>,
    flux: &[FluxHelmRelease],
    declared: &mut Declared,
) -> Result<String, SourceError> {
    let scopes: Vec<Option<&str>> = match namespaces {
        None => vec![None],
        Some(list) => list.iter().map(|ns| Some(ns.as_str())).collect(),
    };
    let mut stored = Vec::new();
    let mut unreadable = Vec::new();
    let mut listed = 0;
    for scope in scopes {
        listed += cluster
            .list_secret_metadata(scope, SELECTOR, |meta| {
                let namespace = meta.namespace.unwrap_or_default();
                let name = meta.name.unwrap_or_default();
                let labels = meta.labels.unwrap_or_default();
                match stored_revision(&namespace, &name, &labels) {
                    Ok(Some(revision)) => stored.push(revision),
                    Ok(None) => {}
                    Err(u) => unreadable.push(u),
                }
            })
            .await
            .map_err(|source| SourceError::HelmSecrets {
                place: scope.map_or("every namespace".into(), |ns| format!("namespace {ns}")),
                source,
            })?;
    }
    let current = current_revisions(&stored);
    let before = declared.len();
    let mut read = 0;
    for revision in &current {
        match fetch(cluster, revision).await? {
            Ok(release) => {
                read += 1;
                // named by the release's own namespace (a Flux HelmRelease's target), with the
                // revision and status of the labels that picked it
                let source = format!(
                    "Helm release {}/{} (revision {}, {})",
                    release.namespace, release.name, revision.version, revision.status
                );
                for object in release.objects {
                    declared.insert(object, &source);
                }
            }
            Err(reason) => unreadable.push(Unreadable {
                namespace: revision.namespace.clone(),
                release: revision.release.clone(),
                reason: reason.to_string(),
            }),
        }
    }
    unreadable.sort();
    unreadable.dedup_by(|a, b| (&a.namespace, &a.release) == (&b.namespace, &b.release));
    for u in &unreadable {
        for namespace in unreadable_namespaces(u, flux) {
            declared.insert_namespace(
                &namespace,
                &format!(
                    "Helm release {}/{}, which cannot be read ({}); every template in namespace {namespace} counts as declared (unreadable release)",
                    u.namespace, u.release, u.reason.trim_end_matches('.')
                ),
            );
        }
    }
    let mut line = format!(
        "{listed} Secrets listed (metadata only), {read} current revisions read, {} objects declared (Secrets read in {})",
        declared.len() - before,
        namespaces.map_or("every namespace".to_string(), |list| list.join(", "))
    );
    if !unreadable.is_empty() {
        let names: Vec<String> = unreadable
            .iter()
            .map(|u| format!("{}/{}", u.namespace, u.release))
            .collect();
        line.push_str(&format!(
            "; unreadable, their namespaces' templates kept: {}",
            names.join(", ")
        ));
    }
    Ok(line)
}

/// One current revision, fetched by name and decoded: `Ok(Err(reason))` when the release cannot
/// be read (gone since the list, not Helm's format, over the size cap), `Err` when the API server
/// refuses or does not answer (the pass stops).
async fn fetch(
    cluster: &Cluster,
    revision: &StoredRevision,
) -> Result<Result<HelmRevision, RevisionError>, SourceError> {
    let (namespace, name) = (&revision.namespace, &revision.secret);
    let secret = cluster
        .get_secret(namespace, name)
        .await
        .map_err(|source| SourceError::HelmSecret {
            namespace: namespace.clone(),
            name: name.clone(),
            source,
        })?;
    let Some(secret) = secret else {
        return Ok(Err(RevisionError::Deleted {
            secret: name.clone(),
        }));
    };
    let release = secret.data.as_ref().and_then(|d| d.get("release"));
    Ok(stored_release(
        namespace,
        name,
        secret.type_.as_deref(),
        release.map(|r| r.0.as_slice()),
        MAX_RELEASE_BYTES,
    )
    .map_err(RevisionError::from))
}
