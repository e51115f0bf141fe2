//! One pass: the pre-flight, the kinds the guard guards, what the deploy tools declare, the
//! candidates, one DELETE each. Every read happens before the first DELETE: a pass that cannot
//! read what it needs deletes nothing and exits 2.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use kube::api::ApiResource;
use template_cleanup_core::answer::{classify, webhook_unreachable, TemplateOutcome};
use template_cleanup_core::guard::{
    check_coverage, check_policy, check_webhook, collectable, rule_groups,
    webhook_configuration_name,
};
use template_cleanup_core::select::{candidate, ListedTemplate, Skip};
use template_cleanup_core::{CLEANUP_LABEL, CLEANUP_VALUE, TOPOLOGY_OWNED_LABEL};

use crate::api::{CallError, Cluster};
use crate::cli::{Args, Output};
use crate::probe;
use crate::report::{nothing_deleted, Printer, Report, TemplateLine, CANNOT_RUN};

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

/// The client: kubeconfig or in-cluster configuration, each attempt bounded by
/// `--request-timeout` and reads retried (`api::per_attempt`, `api::retrying_reads`, behind a
/// buffer because retrying clones the service).
async fn client(args: &Args) -> Result<kube::Client, String> {
    let mut config = kube::Config::infer().await.map_err(|e| e.to_string())?;
    config.connect_timeout = Some(args.request_timeout);
    let builder = kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
    Ok(builder
        .with_layer(&tower::buffer::BufferLayer::new(64))
        .with_layer(&crate::api::per_attempt(args.request_timeout))
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
            report.outcome(line, TemplateOutcome::NotTried);
            continue;
        }
        let outcome = match cluster.delete(&template, options.dry_run).await {
            Ok(true) => TemplateOutcome::DeletionStarted,
            Ok(false) => classify(&options.guard, None),
            Err(CallError::Refused(refused)) => {
                stopped = webhook_unreachable(&refused);
                classify(&options.guard, Some(&refused))
            }
            Err(CallError::Other(text)) => {
                // a timeout or a lost connection: the next DELETE would wait as long
                stopped = true;
                TemplateOutcome::Failed(text)
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
) -> Result<Vec<(ListedTemplate, TemplateLine)>, String> {
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
    groups.extend(template_cleanup_core::sources::discovery_groups());
    let served = cluster
        .discover(&groups)
        .await
        .map_err(|e| format!("cannot discover the API groups of the guard's rules: {e}."))?;
    let kinds = collectable(&guard, &served);
    check_coverage(&guard, &kinds).map_err(|r| r.to_string())?;
    let declared = crate::sources::read(cluster, o, &served, report).await?;
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
                let template = ListedTemplate::from_listed(kind, &item, now)?;
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
        let line = TemplateLine {
            resource: template.kind.resource(),
            api_version: template.kind.api_version(),
            namespace: template.namespace.clone(),
            name: template.name.clone(),
            age_seconds: template.age(now),
            verdict: "",
            detail: None,
        };
        // a listed template is marked, unless a topology copy opted out: left, saying so
        let verdict = match candidate(&template, now, o.min_age, &declared) {
            opted_out @ Err(Skip::NotMarked) => opted_out,
            _ if guard.unseen.contains(&template.namespace) => Err(Skip::Unjudged {
                namespace: template.namespace.clone(),
                guard: o.guard.clone(),
            }),
            other => other,
        };
        match verdict {
            Ok(()) => candidates.push((template, line)),
            Err(skip) => left.push((line, TemplateOutcome::Left(skip))),
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
