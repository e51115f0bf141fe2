//! One pass: the pre-flight, the kinds the guard guards, what the deploy tools declare, the
//! candidates, one DELETE each. Every read happens before the first DELETE: a pass that cannot
//! read what it needs deletes nothing and exits 2.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use guard::settings::Settings;
use kube::api::ApiResource;
use template_cleanup_core::ServedKind;
use template_cleanup_core::answer::{
    ErrorStatus, TemplateOutcome, classify, not_found_elsewhere, webhook_unreachable,
};
use template_cleanup_core::delete_decision::{Referrers, Verdict};
use template_cleanup_core::preflight::{
    Check, Refusal, Served, Webhook, check_caller, check_coverage, check_named_coverage,
    check_policy, check_webhook, collectable, rule_groups, webhook_configuration_name,
};
use template_cleanup_core::probe::Named;
use template_cleanup_core::select::{ListedTemplate, Skip, candidate};
use template_cleanup_core::{CLEANUP_LABEL, CLEANUP_VALUE, TOPOLOGY_OWNED_LABEL};

use crate::api::{CallError, Cluster, ListError};
use crate::cli::{Args, Options, Output};
use crate::error::{ConfigError, Error};
use crate::probe::{self, Proof};
use crate::report::{CANNOT_RUN, Printer, Report, TemplateLine, nothing_deleted};
use crate::{events, openreports};

/// Runs one pass with the kubeconfig or in-cluster configuration and prints its report; returns
/// the exit code.
pub async fn main(args: Args) -> u8 {
    let client = match client(&args).await {
        Ok(client) => client,
        Err(source) => {
            let error = Error::NoConfiguration { source };
            eprintln!("template-cleanup: {}", nothing_deleted(&error.to_string()));
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
        policy: args.policy.clone(),
        helm_releases: args.helm_releases,
        helm_storage_namespaces: args.helm_storage_namespace.clone(),
        events_per_pass: args.events_per_pass,
        time_limit: args.time_limit,
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
/// `--request-timeout`, reads retried and DELETEs never ([`crate::api::client`]).
async fn client(args: &Args) -> Result<kube::Client, ConfigError> {
    let config = kube::Config::infer().await?;
    Ok(crate::api::client(config, args.request_timeout)?)
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

/// The guard is checked again during a pass (its policy, its webhook, and the probe) after this
/// many DELETEs...
pub const RECHECK_DELETES: usize = 50;

/// ...or this long after the last check, whichever comes first, before the next DELETE.
pub const RECHECK_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// What the checks before the first DELETE established, which a re-check must find unchanged.
struct Checked {
    webhook: Webhook,
    served: Vec<Served>,
    kinds: Vec<ServedKind>,
    /// The template whose refusal proved the guard judges (`None`: no probe possible).
    target: Option<Named>,
    /// The deployed guard's settings, and the referrers the probe listed: the guard's
    /// own decision before each DELETE.
    settings: Settings,
    referrers: Referrers,
    /// The OpenReports CRD is served (`crate::openreports`).
    openreports: bool,
}

/// One pass at time `now` (seconds since the epoch); `printer` gets each line of the report as
/// it is decided.
pub async fn run(cluster: &Cluster, options: &Options, now: i64, printer: Printer) -> Report {
    let started = tokio::time::Instant::now();
    let mut report = Report::new(options.dry_run, &options.policy, printer);
    let mut uid = None;
    let prepared = prepare(cluster, options, now, &mut report, &mut uid).await;
    let (candidates, mut checked) = match prepared {
        Ok(prepared) => prepared,
        Err(error) => {
            report.stop(&error);
            if !options.dry_run {
                let stop = stop_event(options, uid, true, &report);
                events::record(
                    cluster,
                    vec![stop],
                    options.events_per_pass,
                    now,
                    &mut report,
                )
                .await;
            }
            return report;
        }
    };
    let (mut stopped, mut out_of_time) = (false, false);
    let (mut sent, mut last_check) = (0, tokio::time::Instant::now());
    for (template, line) in candidates {
        // The Job's deadline would kill the pass mid-DELETE, with no report and no Events: stop
        // sending at the time limit instead. At least one DELETE each pass, so a slow start
        // cannot starve every pass.
        if !stopped && !out_of_time && sent > 0 && started.elapsed() >= options.time_limit {
            out_of_time = true;
            report.out_of_time(sent, options.time_limit);
        }
        if out_of_time {
            report.outcome(line, TemplateOutcome::NotTried);
            continue;
        }
        if !stopped
            && sent > 0
            && (sent % RECHECK_DELETES == 0 || last_check.elapsed() >= RECHECK_AFTER)
        {
            last_check = tokio::time::Instant::now();
            match recheck(cluster, options, &checked).await {
                Ok(proof) => {
                    report.reprobe(sent, &proof.line);
                    checked.target = proof.target;
                    checked.referrers = proof.referrers;
                }
                Err(error) => {
                    stopped = true;
                    report.halt(sent, &error);
                }
            }
        }
        if stopped {
            report.outcome(line, TemplateOutcome::NotTried);
            continue;
        }
        // The guard's own decision first, over what the probe listed: a template it keeps is
        // never sent a DELETE, whatever mode the deployed guard is in. The live webhook stays
        // the authority for everything else, and for what changed since the list.
        if let Some(guarded) = &template.guarded {
            let verdict = checked.referrers.decide(guarded, &checked.settings);
            if let Verdict::Keeps(text) = verdict {
                report.outcome(line, TemplateOutcome::KeptByDecision(text));
                continue;
            }
        }
        sent += 1;
        let outcome = match cluster.delete(&template, options.dry_run).await {
            Ok(true) => TemplateOutcome::DeletionStarted,
            Ok(false) => classify(&options.policy, None),
            Err(CallError::Status(refused)) => {
                stopped = webhook_unreachable(&refused);
                classify_delete(&options.policy, &template, &refused)
            }
            Err(CallError::Other(text)) => {
                // a timeout or a lost connection: the next DELETE would wait as long
                stopped = true;
                TemplateOutcome::Failed(text)
            }
        };
        report.outcome(line, outcome);
    }
    if !options.dry_run {
        let halted = if report.error.is_some() {
            Some(stop_event(options, uid, false, &report))
        } else {
            None
        };
        let policy = &options.policy;
        let records = events::records(halted, &report.templates, policy, options.min_age);
        events::record(cluster, records, options.events_per_pass, now, &mut report).await;
        let templates = std::mem::take(&mut report.templates);
        let (installed, min_age) = (checked.openreports, options.min_age);
        openreports::write(
            cluster,
            installed,
            &templates,
            policy,
            min_age,
            now,
            &mut report,
        )
        .await;
        report.templates = templates;
    } else {
        report.say("events and reports: none written (a dry run writes nothing)");
    }
    report
}

/// The Event of a pass that stopped (`before_any_delete`: nothing deleted), on the guard's
/// ClusterAdmissionPolicy, with the uid the pass read (if it could), so that `kubectl describe`
/// shows it.
fn stop_event(
    options: &Options,
    uid: Option<String>,
    before_any_delete: bool,
    report: &Report,
) -> events::Record {
    let why = report.error.as_deref().unwrap_or_default();
    events::for_stop(&options.policy, uid, before_any_delete, why)
}

/// A refused DELETE of `template`: the core's reading, and a 404 is `already gone` only when
/// its Status names the template itself (`details.kind` its plural, `details.name` its name).
fn classify_delete(
    policy: &str,
    template: &ListedTemplate,
    refused: &ErrorStatus,
) -> TemplateOutcome {
    not_found_elsewhere(template, refused).unwrap_or_else(|| classify(policy, Some(refused)))
}

/// The guard's ClusterAdmissionPolicy and ValidatingWebhookConfiguration, read and checked:
/// before the first DELETE and at every re-check. A webhook that cannot be read fails `check`
/// when one is given (the pre-flight), or gives the bare reason (a re-check); `uid` gets the policy's, when it has one. The guard's settings come back read
/// as the guard reads them.
async fn read_policy_and_webhook(
    cluster: &Cluster,
    name: &str,
    check: Option<Check>,
    uid: &mut Option<String>,
) -> Result<(Webhook, Settings), Error> {
    let policy = cluster
        .get_cluster_object(&cluster_admission_policy(), name)
        .await
        .map_err(|source| Error::ReadPolicy {
            name: name.to_string(),
            source,
        })?;
    let read = policy.as_ref().and_then(|p| p.pointer("/metadata/uid"));
    *uid = read.and_then(serde_json::Value::as_str).map(String::from);
    let settings = check_policy(name, policy.as_ref())?;
    let configuration = webhook_configuration_name(name);
    let webhook = cluster
        .get_cluster_object(&validating_webhook_configuration(), &configuration)
        .await
        .map_err(|source| {
            let unread = Error::ReadWebhook {
                configuration: configuration.clone(),
                source,
            };
            match check {
                Some(check) => Error::Refused(Refusal {
                    check,
                    message: unread.to_string(),
                }),
                None => unread,
            }
        })?;
    let webhook = check_webhook(name, webhook.as_ref())?;
    Ok((webhook, settings))
}

/// The pre-flight's reads and checks again, and the probe, trying the last proof's template
/// first. Any difference from what the pass began with is a change.
async fn recheck(cluster: &Cluster, o: &Options, checked: &Checked) -> Result<Proof, Error> {
    let (webhook, settings) = read_policy_and_webhook(cluster, &o.policy, None, &mut None).await?;
    if webhook != checked.webhook {
        return Err(Error::WebhookChanged {
            configuration: webhook_configuration_name(&o.policy),
        });
    }
    let scope = probe::Scope {
        policy: &o.policy,
        served: &checked.served,
        kinds: &checked.kinds,
        namespaces: o.namespaces.as_deref(),
        unseen: &webhook.unseen,
        settings: &settings,
    };
    Ok(probe::run(cluster, &scope, checked.target.as_ref()).await?)
}

/// Everything before the first DELETE: the candidates, in this pass's order, and what was
/// checked.
async fn prepare(
    cluster: &Cluster,
    o: &Options,
    now: i64,
    report: &mut Report,
    uid: &mut Option<String>,
) -> Result<(Vec<(ListedTemplate, TemplateLine)>, Checked), Error> {
    // who is deleting, before anything else: the guard must judge this very caller
    let username = cluster
        .who_am_i()
        .await
        .map_err(|source| Error::WhoAmI { source })?;
    // the namespaces the guard's webhook never sees, from the webhook itself
    let installed = Some(Check::WebhookInstalled);
    let (webhook, settings) = read_policy_and_webhook(cluster, &o.policy, installed, uid).await?;
    check_caller(&o.policy, &webhook, &username)?;
    let mut groups = rule_groups(&webhook);
    groups.push(guard::catalogue::CAPI_GROUP.to_string());
    groups.extend(template_cleanup_core::sources::discovery_groups());
    groups.push(openreports::GROUP.to_string());
    let served = cluster
        .discover(&groups)
        .await
        .map_err(|source| Error::Discover { source })?;
    check_named_coverage(&webhook, &served)?;
    let kinds = collectable(&webhook, &served);
    check_coverage(&webhook, &kinds)?;
    let declared = crate::sources::read(cluster, o, &served, report).await?;
    // metadata only, page by page: a decision reads nothing else of a template
    let mut templates = BTreeMap::new();
    for kind in &kinds {
        for selector in [
            format!("{CLEANUP_LABEL}={CLEANUP_VALUE}"),
            TOPOLOGY_OWNED_LABEL.to_string(),
        ] {
            cluster
                .list_each(kind, o.namespaces.as_deref(), &selector, true, |item| {
                    let template = ListedTemplate::from_listed(kind, &item, now)?;
                    templates.insert(
                        (
                            kind.resource(),
                            template.namespace.clone(),
                            template.name.clone(),
                        ),
                        template,
                    );
                    Ok(())
                })
                .await
                .map_err(|e| match e {
                    ListError::Item(unidentified) => Error::Unidentified(unidentified),
                    ListError::Call(source) => Error::ListTemplates {
                        resource: kind.resource(),
                        source,
                    },
                })?;
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
            kind: template.kind.kind.clone(),
            uid: template.uid.clone(),
            outcome: None,
        };
        // a listed template is marked, unless a topology copy opted out: left, saying so
        let verdict = match candidate(&template, now, o.min_age, &declared) {
            opted_out @ Err(Skip::NotMarked) => opted_out,
            _ if webhook.unseen.contains(&template.namespace) => Err(Skip::Unjudged {
                namespace: template.namespace.clone(),
                policy: o.policy.clone(),
            }),
            other => other,
        };
        match verdict {
            Ok(()) => candidates.push((template, line)),
            Err(skip) => left.push((line, TemplateOutcome::Left(skip))),
        }
    }
    // the proof that the guard judges comes last, right before the first DELETE
    let scope = probe::Scope {
        policy: &o.policy,
        served: &served,
        kinds: &kinds,
        namespaces: o.namespaces.as_deref(),
        unseen: &webhook.unseen,
        settings: &settings,
    };
    let proof = probe::run(cluster, &scope, None).await?;
    report.probe(proof.line);
    for (line, outcome) in left {
        report.outcome(line, outcome);
    }
    let candidates = in_pass_order(candidates, now);
    Ok((
        candidates,
        Checked {
            webhook,
            openreports: openreports::installed(&served),
            served,
            kinds,
            target: proof.target,
            settings,
            referrers: proof.referrers,
        },
    ))
}

/// How many passes it takes the order to start at every quarter of the candidates.
pub const ROTATION: i64 = 4;

/// The candidates, sorted by resource, namespace and name, then rotated: the pass of hour `h`
/// (since the epoch) starts at the `h mod 4`-th quarter and wraps around. A pass cut short by
/// its deadline always reaches the quarter it starts with, so with an hourly schedule every
/// template is among the first quarter of some pass within four hours, however long the kept
/// templates take.
pub fn in_pass_order<T>(mut candidates: Vec<T>, now: i64) -> Vec<T> {
    let len = candidates.len();
    if len > 0 {
        let quarter = usize::try_from((now / 3600).rem_euclid(ROTATION)).unwrap_or(0);
        candidates.rotate_left(len * quarter / ROTATION as usize % len);
    }
    candidates
}
