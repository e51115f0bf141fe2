//! The command line. The CronJob example (examples/cleanup/) passes these flags; the packaging
//! tests check that it passes only flags defined here.

use std::time::Duration;

use clap::{ArgGroup, Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

/// Deletes retired Cluster API templates once nothing needs them: every template marked for
/// clean-up (label capi-template-guard.kubewarden.io/cleanup=true) or left behind by the topology
/// controller, of every kind the guard policy guards, that no deploy tool still declares. Each
/// DELETE goes through the guard, which refuses (409) the templates still in use.
///
/// Exit codes: 0 every candidate was deleted, kept or already gone; 1 a DELETE failed; 2 the
/// pre-flight refused (the guard cannot refuse) or the pass could not run; nothing was deleted.
#[derive(Debug, Parser)]
#[command(name = "template-cleanup", version)]
#[command(group(ArgGroup::new("scope").args(["namespace", "all_namespaces"])))]
pub struct Args {
    /// Collect in this namespace (repeatable). Default: the namespace of the kubeconfig's context,
    /// or the pod's namespace in a cluster
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Vec<String>,

    /// Collect in every namespace
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,

    /// Send server-side dry-run DELETEs (the guard answers them as real ones); delete nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Leave templates younger than this alone (a deploy tool creates a template a moment before
    /// it points a MachineDeployment or control plane at it), as in 10m or 1h30m; not 0
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_min_age)]
    pub min_age: Duration,

    /// The guard's ClusterAdmissionPolicy
    #[arg(
        long,
        value_name = "NAME",
        default_value = "capi-template-guard-cleanup"
    )]
    pub policy: String,

    /// Also read Helm's release Secrets (Helm CLI and Flux helm-controller, Secrets driver only)
    /// in the namespaces collected in, and, unless collecting in every namespace, in those of
    /// --helm-storage-namespace and in each Flux HelmRelease's storage namespace: listed as
    /// metadata, only each release's current revisions fetched. Needs get and list on Secrets
    /// there, and list on Flux HelmReleases (the component examples/cleanup/helm)
    #[arg(long)]
    pub helm_releases: bool,

    /// With --helm-releases: also read Helm's release Secrets in this namespace (repeatable), where
    /// a release is stored whose templates are in a namespace collected in
    #[arg(long, value_name = "NS", requires = "helm_releases")]
    pub helm_storage_namespace: Vec<String>,

    /// Give up on one attempt of an API request after this long, as in 30s; not 0 (a read is
    /// tried up to four times, a DELETE once)
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_request_timeout)]
    pub request_timeout: Duration,

    /// Record at most this many Kubernetes Events in a pass (one per template decided, and one
    /// when the pass stops), the most telling first: failed, not tried, kept, changed, deleted,
    /// already gone, left; 0 records none. A dry run records none
    #[arg(long, value_name = "N", default_value_t = crate::events::PER_PASS)]
    pub events_per_pass: usize,

    /// Send no DELETE once the pass has run this long, as in 12m; the templates left are reported
    /// `not tried`, and a later pass starts at another quarter of them. The default ends a pass
    /// three minutes before the example Job's activeDeadlineSeconds (900), leaving the time to
    /// write its Events and Reports; not 0. Every pass sends at least one DELETE
    #[arg(long, value_name = "DURATION", default_value = "12m", value_parser = parse_time_limit)]
    pub time_limit: Duration,

    /// Output format: one line per template, or one JSON document
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// What a pass needs from the command line.
#[derive(Debug, Clone)]
pub struct Options {
    /// `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
    pub dry_run: bool,
    pub min_age: i64,
    pub policy: String,
    pub helm_releases: bool,
    /// More namespaces whose Helm release Secrets are read (`--helm-storage-namespace`).
    pub helm_storage_namespaces: Vec<String>,
    /// `--events-per-pass`.
    pub events_per_pass: usize,
    /// `--time-limit`: no DELETE is sent once the pass has run this long.
    pub time_limit: std::time::Duration,
}

/// A duration flag's value that is not a positive duration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    #[error(
        "{text:?} is not a duration ({source}): write a number with a unit, as in 10m or 1h30m"
    )]
    NotADuration {
        text: String,
        #[source]
        source: humantime::DurationError,
    },
    /// `why`: what a 0 would do.
    #[error("{flag} cannot be 0: {why}")]
    Zero {
        flag: &'static str,
        why: &'static str,
    },
}

/// A positive duration as humantime reads it: `90s`, `10m`, `1h30m`, `2d`.
fn positive(text: &str, flag: &'static str, zero: &'static str) -> Result<Duration, DurationError> {
    let duration =
        humantime::parse_duration(text).map_err(|source| DurationError::NotADuration {
            text: text.to_string(),
            source,
        })?;
    if duration.is_zero() {
        return Err(DurationError::Zero { flag, why: zero });
    }
    Ok(duration)
}

/// `--min-age`.
pub fn parse_min_age(text: &str) -> Result<Duration, DurationError> {
    positive(
        text,
        "--min-age",
        "a deploy tool creates a template a moment before it points a MachineDeployment or control plane at it, and such a template must not be deleted in between.",
    )
}

/// `--request-timeout`.
pub fn parse_request_timeout(text: &str) -> Result<Duration, DurationError> {
    positive(
        text,
        "--request-timeout",
        "every request would time out before it is sent.",
    )
}

/// `--time-limit`.
pub fn parse_time_limit(text: &str) -> Result<Duration, DurationError> {
    positive(
        text,
        "--time-limit",
        "the pass would stop after its first DELETE; set the Job's activeDeadlineSeconds and this limit together.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("90s", Ok(90))]
    #[case("10m", Ok(600))]
    #[case("1h", Ok(3600))]
    #[case("1h30m", Ok(5400))]
    #[case("2d", Ok(172_800))]
    #[case("45", Err("\"45\" is not a duration ("))]
    #[case("m", Err("\"m\" is not a duration ("))]
    #[case("-1m", Err("\"-1m\" is not a duration ("))]
    #[case("0s", Err("--min-age cannot be 0: a deploy tool creates a template"))]
    #[case("0", Err("--min-age cannot be 0: "))]
    fn min_ages(#[case] text: &str, #[case] expected: Result<u64, &str>) {
        match (parse_min_age(text), expected) {
            (Ok(d), Ok(seconds)) => assert_eq!(d.as_secs(), seconds),
            (Err(e), Err(start)) => assert!(e.to_string().starts_with(start), "{e}"),
            (got, expected) => panic!("{text}: expected {expected:?}, got {got:?}"),
        }
    }

    #[test]
    fn a_request_timeout_of_0_is_refused_with_the_reason() {
        assert_eq!(
            parse_request_timeout("0s").map_err(|e| e.to_string()),
            Err(
                "--request-timeout cannot be 0: every request would time out before it is sent."
                    .to_string()
            )
        );
        assert_eq!(parse_request_timeout("1m30s"), Ok(Duration::from_secs(90)));
        let err = Args::try_parse_from(["template-cleanup", "--request-timeout", "0"]).unwrap_err();
        assert!(
            err.to_string().contains("--request-timeout cannot be 0"),
            "{err}"
        );
    }

    #[test]
    fn namespace_and_all_namespaces_exclude_each_other() {
        let err = Args::try_parse_from(["template-cleanup", "-n", "a", "-A"]).unwrap_err();
        assert!(err.to_string().contains("cannot be used with"), "{err}");
        let args = Args::try_parse_from([
            "template-cleanup",
            "-n",
            "a",
            "-n",
            "b",
            "--dry-run",
            "-o",
            "json",
        ])
        .unwrap();
        assert_eq!(args.namespace, ["a", "b"]);
        assert_eq!(
            (args.dry_run, args.output, args.min_age.as_secs()),
            (true, Output::Json, 600)
        );
    }

    #[test]
    fn helm_storage_namespaces_need_helm_releases() {
        let err = Args::try_parse_from(["template-cleanup", "--helm-storage-namespace", "x"])
            .unwrap_err();
        assert!(err.to_string().contains("--helm-releases"), "{err}");
        let args = Args::try_parse_from([
            "template-cleanup",
            "--helm-releases",
            "--helm-storage-namespace",
            "x",
            "--helm-storage-namespace",
            "y",
        ])
        .unwrap();
        assert_eq!(args.helm_storage_namespace, ["x", "y"]);
    }

    /// `--policy` names the guard's policy; `--guard`, a name it had before any release, does not.
    #[test]
    fn policy_names_the_guards_policy() {
        let args = Args::try_parse_from(["template-cleanup", "--policy=mine"]).unwrap();
        assert_eq!(args.policy, "mine");
        let args = Args::try_parse_from(["template-cleanup"]).unwrap();
        assert_eq!(args.policy, "capi-template-guard-cleanup");
        assert!(Args::try_parse_from(["template-cleanup", "--guard=mine"]).is_err());
    }

    /// The CronJob of examples/cleanup passes only flags this command line defines, with values
    /// it accepts.
    #[test]
    fn the_cronjob_examples_arguments_parse() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/cleanup/component/cleanup.yaml"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let cronjob = yaml_serde::Deserializer::from_str(&text)
            .map(|d| <serde_json::Value as serde::Deserialize>::deserialize(d).unwrap())
            .find(|d| d["kind"] == "CronJob")
            .unwrap();
        let args: Vec<String> = serde_json::from_value(
            cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
                .clone(),
        )
        .unwrap();
        assert!(!args.is_empty());
        let parsed =
            Args::try_parse_from(std::iter::once("template-cleanup".to_string()).chain(args));
        let parsed = parsed.unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(
            parsed.all_namespaces && !parsed.dry_run,
            "the example collects cluster-wide, for real"
        );
        // The pass stops sending DELETEs before the Job's deadline kills it, with a minute to
        // spare for its Events and Reports.
        let deadline = cronjob["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
            .as_u64()
            .unwrap();
        assert!(
            parsed.time_limit.as_secs() + 60 <= deadline,
            "--time-limit {:?} must end the pass well before activeDeadlineSeconds {deadline}",
            parsed.time_limit
        );
    }
}
