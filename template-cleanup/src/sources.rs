//! Reads the desired-state sources of the core's table (`template_cleanup_core::sources`) where
//! the API server serves them: what each deploy tool still declares. An installed source that
//! cannot be read stops the pass; a Helm release that cannot be read keeps its namespaces'
//! templates instead (`crate::helm`).

use serde_json::Value;
use template_cleanup_core::ServedKind;
use template_cleanup_core::declared::{Declared, ObjectError};
use template_cleanup_core::helm::{FluxHelmRelease, flux_helm_release};
use template_cleanup_core::preflight::Served;
use template_cleanup_core::sources::{FLUX_HELM_RELEASES, Reader, SOURCES, Source, When};

use crate::api::{Cluster, ListError};
use crate::cli::Options;
use crate::error::SourceError;
use crate::report::{Report, SourceLine};

/// The served version of a source's kind, the preferred one first.
fn served_kind<'a>(served: &'a [Served], source: &Source) -> Option<&'a ServedKind> {
    template_cleanup_core::preflight::served_kind(served, source.group, source.kind)
}

/// Every object of a source's kind, in every namespace, handed to `each` page by page (no list
/// is held whole). An error of `each` stops the reading and is returned as it is.
async fn list(
    cluster: &Cluster,
    source: &Source,
    kind: &ServedKind,
    mut each: impl FnMut(&Value) -> Result<(), ObjectError>,
) -> Result<usize, SourceError> {
    let listed = cluster.list_each(kind, None, "", false, |item| each(&item));
    listed.await.map_err(|e| match e {
        ListError::Item(e) => SourceError::Object(e),
        ListError::Call(e) => SourceError::List {
            name: source.name,
            api_version: kind.api_version(),
            source: e,
        },
    })
}

fn name_of(item: &Value) -> String {
    let field = |p: &str| item.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!(
        "{}/{}",
        field("/metadata/namespace"),
        field("/metadata/name")
    )
}

/// Reads every source of the table that this pass reads, in the table's order, and says in
/// `report` what was read of each.
pub async fn read(
    cluster: &Cluster,
    o: &Options,
    served: &[Served],
    report: &mut Report,
) -> Result<Declared, SourceError> {
    let mut declared = Declared::default();
    let mut flux_helm: Vec<FluxHelmRelease> = Vec::new();
    for source in SOURCES {
        if source.when == When::HelmReleases && !o.helm_releases {
            if let Reader::HelmStorage = source.reader {
                report.sources.push(SourceLine {
                    name: source.name.into(),
                    read: helm_off(served),
                });
            }
            continue;
        }
        let line = match (source.reader, served_kind(served, source)) {
            (Reader::HelmStorage, _) => {
                let namespaces = crate::helm::storage_namespaces(
                    o.namespaces.as_deref(),
                    &o.helm_storage_namespaces,
                    &flux_helm,
                );
                crate::helm::read(cluster, namespaces.as_deref(), &flux_helm, &mut declared).await?
            }
            (_, None) => "not installed".into(),
            (Reader::Status(reader), Some(kind)) => {
                let before = declared.len();
                let count = list(cluster, source, kind, |item| {
                    let declaration = reader(item)?;
                    let by = match &declaration.note {
                        None => format!("{} {}", source.kind, name_of(item)),
                        Some(note) => format!("{} {} {note}", source.kind, name_of(item)),
                    };
                    for object in declaration.objects {
                        declared.insert(object, &by);
                    }
                    Ok(())
                })
                .await?;
                format!("{count} read, {} objects declared", declared.len() - before)
            }
            (Reader::FluxHelmReleases, Some(kind)) => {
                let count = list(cluster, source, kind, |item| {
                    flux_helm.push(flux_helm_release(item)?);
                    Ok(())
                })
                .await?;
                format!("{count} read, for where their Helm releases are stored and render")
            }
        };
        report.sources.push(SourceLine {
            name: source.name.into(),
            read: line,
        });
    }
    Ok(declared)
}

/// The Helm line without `--helm-releases`: a warning, on standard error too, whenever Flux
/// helm-controller is installed, since its releases then read as declaring nothing.
fn helm_off(served: &[Served]) -> String {
    if served_kind(served, &FLUX_HELM_RELEASES).is_none() {
        return "not read (--helm-releases not given)".into();
    }
    let warning = "not read (--helm-releases not given), but Flux HelmReleases are installed: a \
                   template a Helm release still declares, and nothing references yet, reads as \
                   undeclared and is deleted if the guard lets it go. Add the component \
                   examples/cleanup/helm (--helm-releases and its RBAC).";
    eprintln!("template-cleanup: warning: Helm releases {warning}");
    warning.into()
}
