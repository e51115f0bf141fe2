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
    /// it points a MachineDeployment or control plane at it). Units: s, m, h, d
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub min_age: Duration,

    /// The guard's ClusterAdmissionPolicy
    #[arg(long, value_name = "NAME", default_value = "capi-template-guard")]
    pub guard: String,

    /// Also read Helm's release Secrets (Helm CLI and Flux helm-controller, Secrets driver only)
    /// in the namespaces collected in, and, unless collecting in every namespace, in those of
    /// --helm-storage-namespace and in each Flux HelmRelease's storage namespace; needs list on
    /// Secrets there, and on Flux HelmReleases
    #[arg(long)]
    pub helm_releases: bool,

    /// With --helm-releases: also read Helm's release Secrets in this namespace (repeatable), where
    /// a release is stored whose templates are in a namespace collected in
    #[arg(long, value_name = "NS", requires = "helm_releases")]
    pub helm_storage_namespace: Vec<String>,

    /// Give up on an API request after this long. Units: s, m, h, d
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// Output format: one line per template, or one JSON document
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// `90s`, `10m`, `1h`, `2d` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |i| text.split_at(i));
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => {
            return Err(format!(
                "{text:?} is not a duration: use a whole number and s, m, h or d, as in 10m"
            ))
        }
    };
    let n: u64 = number.parse().map_err(|_| {
        format!("{text:?} is not a duration: use a whole number and s, m, h or d, as in 10m")
    })?;
    Ok(Duration::from_secs(n.saturating_mul(factor)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("90s", Ok(90))]
    #[case("10m", Ok(600))]
    #[case("1h", Ok(3600))]
    #[case("2d", Ok(172_800))]
    #[case("45", Ok(45))]
    #[case("10 m", Err(()))]
    #[case("m", Err(()))]
    #[case("1.5h", Err(()))]
    #[case("-1m", Err(()))]
    fn durations(#[case] text: &str, #[case] seconds: Result<u64, ()>) {
        assert_eq!(
            parse_duration(text).map(|d| d.as_secs()).map_err(|_| ()),
            seconds
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
    }
}
