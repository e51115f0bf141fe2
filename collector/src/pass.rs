//! One pass: the pre-flight, the kinds the guard guards, what the deploy tools declare, the
//! candidates, one DELETE each. Every read happens before the first DELETE: a pass that cannot
//! read what it needs deletes nothing and exits 2.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use kube::api::ApiResource;
use serde_json::Value;
use template_cleanup_core::answer::{classify, webhook_unreachable, Outcome};
use template_cleanup_core::declared::{
    argo_application, flux_helm_storage_namespaces, flux_kustomization, helm_current,
    helm_release_secret, Declared,
};
use template_cleanup_core::guard::{
    check_coverage, check_policy, check_webhook, collectable, rule_groups,
    webhook_configuration_name, Served,
};
use template_cleanup_core::select::{candidate, Skip, Template};
use template_cleanup_core::{Kind, CLEANUP_LABEL, CLEANUP_VALUE, TOPOLOGY_OWNED_LABEL};

use crate::api::{CallError, Cluster};
use crate::cli::{Args, Output};
use crate::probe;
use crate::report::{nothing_deleted, Line, Printer, Report, Source, CANNOT_RUN};

const FLUX_GROUP: &str = "kustomize.toolkit.fluxcd.io";
const ARGO_GROUP: &str = "argoproj.io";
const FLUX_HELM_GROUP: &str = "helm.toolkit.fluxcd.io";

/// What a pass needs from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
    pub dry_run: bool,
    pub min_age: i64,
    pub guard: String,
    pub helm_releases: bool,
    /// More namespaces whose Helm release Secrets are read (`--helm-storage-namespace`).
    pub helm_storage_namespaces: Vec<String>,
}

/// Runs one pass with the kubeconfig or in-cluster configuration and prints its report; returns
/// the exit code.
pub async fn main(args: Args) -> u8 {
    let client = match client(&args).await {
        Ok(client) => client,
        Err(e) => {
            eprintln!(
                "template-cleanup: {}",
                nothing_deleted(&format!(
                    "no Kubernetes configuration (kubeconfig or in-cluster): {e}."
                ))
            );
            return CANNOT_RUN;
        }
    };
    let cluster = Cluster::new(client, args.request_timeout);
    let namespaces = if args.all_namespaces {
        None
    } else if args.namespace.is_empty() {
        Some(vec![cluster.default_namespace().to_string()])
    } else {
        Some(args.namespace.clone())
    };
    let options = Options {
        namespaces,
        dry_run: args.dry_run,
        min_age: i64::try_from(args.min_age.as_secs()).unwrap_or(i64::MAX),
        guard: args.guard.clone(),
        helm_releases: args.helm_releases,
        helm_storage_namespaces: args.helm_storage_namespace.clone(),
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    // text: each line on stdout as it is decided, the closing line last; JSON: the lines on
    // stderr as they are decided (a record even if the Job is killed), one document at the end
    let printer: fn(&str) = match args.output {
        Output::Text => |line| println!("{line}"),
        Output::Json => |line| eprintln!("{line}"),
    };
    let report = run(&cluster, &options, now, Some(printer)).await;
    if let Some(error) = &report.error {
        eprintln!("template-cleanup: {error}");
    }
    match args.output {
        Output::Text => println!("{}", report.closing_line()),
        Output::Json => println!("{}", report.json()),
    }
    report.exit_code()
}

/// The client: kubeconfig or in-cluster configuration, with reads retried (`api::retrying_reads`,
/// behind a buffer because retrying clones the service).
async fn client(args: &Args) -> Result<kube::Client, String> {
    let mut config = kube::Config::infer().await.map_err(|e| e.to_string())?;
    config.connect_timeout = Some(args.request_timeout);
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
    Ok(builder
        .with_layer(&tower::buffer::BufferLayer::new(64))
        .with_layer(&crate::api::retrying_reads())
        .build())
}

/// The guard's kind (kubewarden-controller `api/policies/v1`).
fn cluster_admission_policy() -> ApiResource {
    ApiResource {
        group: "policies.kubewarden.io".into(),
        version: "v1".into(),
        api_version: "policies.kubewarden.io/v1".into(),
        kind: "ClusterAdmissionPolicy".into(),
        plural: "clusteradmissionpolicies".into(),
    }
}

/// The kind of the guard's webhook configuration, which kubewarden-controller writes.
fn validating_webhook_configuration() -> ApiResource {
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: "ValidatingWebhookConfiguration".into(),
        plural: "validatingwebhookconfigurations".into(),
    }
}

/// One pass at time `now` (seconds since the epoch); `printer` gets each line of the report as
/// it is decided.
pub async fn run(cluster: &Cluster, options: &Options, now: i64, printer: Printer) -> Report {
    let mut report = Report::new(options.dry_run, &options.guard, printer);
    let candidates = match prepare(cluster, options, now, &mut report).await {
        Ok(candidates) => candidates,
        Err(reason) => {
            report.stop(reason);
            return report;
        }
    };
    let mut stopped = false;
    for (template, line) in candidates {
        if stopped {
            report.outcome(line, Outcome::NotTried);
            continue;
        }
        let outcome = match cluster.delete(&template, options.dry_run).await {
            Ok(true) => Outcome::DeletionStarted,
            Ok(false) => classify(&options.guard, None),
            Err(CallError::Refused(refused)) => {
                stopped = webhook_unreachable(&refused);
                classify(&options.guard, Some(&refused))
            }
            Err(CallError::Other(text)) => {
                // a timeout or a lost connection: the next DELETE would wait as long
                stopped = true;
                Outcome::Failed(text)
            }
        };
        report.outcome(line, outcome);
    }
    report
}

/// Everything before the first DELETE: the candidates, in a stable order.
async fn prepare(
    cluster: &Cluster,
    o: &Options,
    now: i64,
    report: &mut Report,
) -> Result<Vec<(Template, Line)>, String> {
    let policy = cluster
        .get_cluster_object(&cluster_admission_policy(), &o.guard)
        .await
        .map_err(|e| format!("cannot read the ClusterAdmissionPolicy {}: {e}.", o.guard))?;
    check_policy(&o.guard, policy.as_ref()).map_err(|r| r.to_string())?;
    // the namespaces the guard's webhook never sees, from the webhook itself
    let configuration = webhook_configuration_name(&o.guard);
    let webhook = cluster
        .get_cluster_object(&validating_webhook_configuration(), &configuration)
        .await
        .map_err(|e| {
            format!(
                "pre-flight check `the guard's webhook is installed` failed: cannot read the ValidatingWebhookConfiguration {configuration}: {e}."
            )
        })?;
    let guard = check_webhook(&o.guard, webhook.as_ref()).map_err(|r| r.to_string())?;
    let mut groups = rule_groups(&guard);
    groups.push(probe::CAPI_GROUP.to_string());
    groups.extend([FLUX_GROUP, ARGO_GROUP, FLUX_HELM_GROUP].map(String::from));
    let served = cluster
        .discover(&groups)
        .await
        .map_err(|e| format!("cannot discover the API groups of the guard's rules: {e}."))?;
    let kinds = collectable(&guard, &served);
    check_coverage(&guard, &kinds).map_err(|r| r.to_string())?;
    let declared = read_sources(cluster, o, &served, report).await?;
    let mut templates = BTreeMap::new();
    for kind in &kinds {
        for selector in [
            format!("{CLEANUP_LABEL}={CLEANUP_VALUE}"),
            TOPOLOGY_OWNED_LABEL.to_string(),
        ] {
            let items = cluster
                .list(kind, o.namespaces.as_deref(), &selector)
                .await
                .map_err(|e| format!("cannot list {}: {e}.", kind.resource()))?;
            for item in items {
                let template = template(kind, &item, now)?;
                templates.insert(
                    (
                        kind.resource(),
                        template.namespace.clone(),
                        template.name.clone(),
                    ),
                    template,
                );
            }
        }
    }
    let (mut candidates, mut left) = (Vec::new(), Vec::new());
    for template in templates.into_values() {
        let line = Line {
            resource: template.kind.resource(),
            api_version: template.kind.api_version(),
            namespace: template.namespace.clone(),
            name: template.name.clone(),
            age_seconds: template.age(now),
            verdict: "",
            detail: None,
        };
        let verdict = match candidate(&template, now, o.min_age, &declared) {
            Err(Skip::NotMarked) => continue,
            _ if guard.unseen.contains(&template.namespace) => Err(Skip::Unjudged {
                namespace: template.namespace.clone(),
                guard: o.guard.clone(),
            }),
            other => other,
        };
        match verdict {
            Ok(()) => candidates.push((template, line)),
            Err(skip) => left.push((line, Outcome::Left(skip))),
        }
    }
    // the proof that the guard judges comes last, right before the first DELETE
    let proof = probe::run(
        cluster,
        &o.guard,
        &served,
        &kinds,
        o.namespaces.as_deref(),
        &guard.unseen,
    )
    .await?;
    report.probe(proof);
    for (line, outcome) in left {
        report.outcome(line, outcome);
    }
    Ok(candidates)
}

fn preferred<'a>(served: &'a [Served], group: &str, kind: &str) -> Option<&'a Kind> {
    let mut matching: Vec<&Served> = served
        .iter()
        .filter(|s| s.kind.group == group && s.kind.kind == kind)
        .collect();
    matching.sort_by_key(|s| !s.preferred);
    matching.first().map(|s| &s.kind)
}

/// Reads each deploy tool's desired state where it is installed.
async fn read_sources(
    cluster: &Cluster,
    o: &Options,
    served: &[Served],
    report: &mut Report,
) -> Result<Declared, String> {
    let mut declared = Declared::default();
    type Reader = fn(&Value) -> Result<Vec<template_cleanup_core::ObjectRef>, String>;
    let tools: [(&str, &str, &str, Reader); 2] = [
        (
            "Flux Kustomizations",
            FLUX_GROUP,
            "Kustomization",
            flux_kustomization,
        ),
        (
            "Argo CD Applications",
            ARGO_GROUP,
            "Application",
            argo_application,
        ),
    ];
    for (name, group, kind_name, reader) in tools {
        let Some(kind) = preferred(served, group, kind_name) else {
            report.sources.push(Source {
                name: name.into(),
                read: "not installed".into(),
            });
            continue;
        };
        let items = cluster.list(kind, None, "").await.map_err(|e| {
            format!(
                "cannot read {name} (installed, {}): {e}.",
                kind.api_version()
            )
        })?;
        let before = declared.len();
        for item in &items {
            let object = format!(
                "{}/{}",
                item.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
                item.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            );
            for reference in reader(item)? {
                declared.insert(reference, &format!("{kind_name} {object}"));
            }
        }
        report.sources.push(Source {
            name: name.into(),
            read: format!(
                "{} read, {} objects declared",
                items.len(),
                declared.len() - before
            ),
        });
    }
    if !o.helm_releases {
        report.sources.push(Source {
            name: "Helm releases".into(),
            read: "not read (--helm-releases not given)".into(),
        });
        return Ok(declared);
    }
    let secrets = Kind {
        group: String::new(),
        version: "v1".into(),
        kind: "Secret".into(),
        plural: "secrets".into(),
    };
    let namespaces = helm_storage_namespaces(cluster, o, served).await?;
    // one list per namespace, so that a refusal names the namespace whose Secrets are not readable
    let scopes: Vec<Option<&String>> = match &namespaces {
        None => vec![None],
        Some(list) => list.iter().map(Some).collect(),
    };
    let mut items = Vec::new();
    for ns in scopes {
        let found = cluster
            .list(&secrets, ns.map(std::slice::from_ref), "owner=helm")
            .await
            .map_err(|e| {
                let place = ns.map_or("every namespace".into(), |ns| format!("namespace {ns}"));
                format!("cannot read Helm's release Secrets in {place}: {e}.")
            })?;
        items.extend(found);
    }
    let revisions = items
        .iter()
        .map(helm_release_secret)
        .collect::<Result<Vec<_>, String>>()?;
    let revisions: Vec<_> = revisions.into_iter().flatten().collect();
    let current = helm_current(&revisions);
    let before = declared.len();
    let releases: BTreeSet<(&str, &str)> = current
        .iter()
        .map(|r| (r.namespace.as_str(), r.name.as_str()))
        .collect();
    for r in &current {
        for reference in &r.objects {
            declared.insert(
                reference.clone(),
                &format!(
                    "Helm release {}/{} (revision {}, {})",
                    r.namespace, r.name, r.version, r.status
                ),
            );
        }
    }
    report.sources.push(Source {
        name: "Helm releases".into(),
        read: format!(
            "{} releases read, {} objects declared (Secrets read in {})",
            releases.len(),
            declared.len() - before,
            namespaces.map_or("every namespace".to_string(), |list| list.join(", "))
        ),
    });
    Ok(declared)
}

/// Where Helm's release Secrets are read: `None` for every namespace; else the namespaces
/// collected in, those of `--helm-storage-namespace`, and the storage namespaces of every Flux
/// HelmRelease (helm-controller keeps a release's Secrets in the HelmRelease's storage namespace,
/// by default its own, not where the templates are rendered). HelmReleases that are installed
/// but cannot be read stop the pass: a release they store elsewhere would read as undeclared.
async fn helm_storage_namespaces(
    cluster: &Cluster,
    o: &Options,
    served: &[Served],
) -> Result<Option<Vec<String>>, String> {
    let Some(collected) = &o.namespaces else {
        return Ok(None);
    };
    let mut out: BTreeSet<String> = collected.iter().cloned().collect();
    out.extend(o.helm_storage_namespaces.iter().cloned());
    if let Some(kind) = preferred(served, FLUX_HELM_GROUP, "HelmRelease") {
        let items = cluster.list(kind, None, "").await.map_err(|e| {
            format!(
                "cannot read Flux HelmReleases (installed, {}), whose storage namespaces hold their Helm release Secrets: {e}.",
                kind.api_version()
            )
        })?;
        for item in &items {
            out.extend(flux_helm_storage_namespaces(item)?);
        }
    }
    Ok(Some(out.into_iter().collect()))
}

/// A listed object as a [`Template`]; an object without a creation time counts as created now.
fn template(kind: &Kind, item: &Value, now: i64) -> Result<Template, String> {
    let field = |p: &str| {
        item.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (namespace, name) = (field("/metadata/namespace"), field("/metadata/name"));
    if name.is_empty()
        || field("/metadata/uid").is_empty()
        || field("/metadata/resourceVersion").is_empty()
    {
        return Err(format!(
            "the API server listed a {} without name, uid or resourceVersion ({namespace}/{name}).",
            kind.resource()
        ));
    }
    let created = item
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<k8s_openapi::jiff::Timestamp>().ok())
        .map_or(now, |t| t.as_second());
    let labels = item
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Template {
        kind: kind.clone(),
        namespace,
        name,
        uid: field("/metadata/uid"),
        resource_version: field("/metadata/resourceVersion"),
        labels,
        created,
        deleting: item
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null()),
    })
}
