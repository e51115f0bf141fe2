//! The clean-up job: its script's decisions, run against a fake `kubectl`, and its manifest's
//! agreement with the script, the image and the guard policy.

use super::*;
use std::process::Command;

const SCRIPT: &str = "examples/cleanup-image/template-cleanup.sh";
const CRONJOB: &str = "examples/template-cleanup-cronjob.yaml";

/// A `kubectl` that answers from files in its directory and records every call in `calls`:
/// - the guard policy's state line from `policy` (`missing` when there is none);
/// - lists from `lists`, lines of `kind|selector|namespace name created deleting`;
/// - the kinds in `unserved` as kubectl reports a resource type the server does not have;
/// - deletes from `deletes`, lines of `name outcome` (409, 500, 404; anything else deletes),
///   with the `-v=6` log line and error line kubectl prints (checked against kubectl 1.32).
const FAKE_KUBECTL: &str = r#"#!/bin/sh
dir=$(dirname "$0")
echo "$*" >>"$dir/calls"
case "$1" in
  get)
    if [ "$2" = clusteradmissionpolicies.policies.kubewarden.io ]; then
      state=$(cat "$dir/policy")
      if [ "$state" = missing ]; then
        echo "Error from server (NotFound): clusteradmissionpolicies.policies.kubewarden.io \"$3\" not found" >&2
        exit 1
      fi
      printf '%s' "$state"
      exit 0
    fi
    kind=$2
    selector=
    for arg in "$@"; do
      case "$arg" in --selector=*) selector=${arg#--selector=} ;; esac
    done
    if grep -qx "$kind" "$dir/unserved" 2>/dev/null; then
      echo "error: the server doesn't have a resource type \"$kind\"" >&2
      exit 1
    fi
    if grep -qx "$kind" "$dir/forbidden" 2>/dev/null; then
      echo "Error from server (Forbidden): $kind is forbidden: User cannot list resource" >&2
      exit 1
    fi
    awk -F'|' -v k="$kind" -v s="$selector" '$1 == k && $2 == s { print $3 }' "$dir/lists"
    ;;
  delete)
    name=$3
    outcome=$(awk -v n="$name" '$1 == n { print $2 }' "$dir/deletes")
    log() { echo "I1201 07:57:07.091874    9033 round_trippers.go:560] DELETE https://api/apis/x/namespaces/ns/t/$name $1 in 2 milliseconds" >&2; }
    case "$outcome" in
      409) log "409 Conflict"; echo "Error from server: admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request: $name is still in use and was not deleted." >&2; exit 1 ;;
      500) log "500 Internal Server Error"; echo "Error from server: admission webhook \"clusterwide-capi-template-guard.kubewarden.admission\" denied the request: capi-template-guard could not check whether $name is still in use" >&2; exit 1 ;;
      404) log "404 Not Found"; echo "Error from server (NotFound): \"$name\" not found" >&2; exit 1 ;;
      *) log "200 OK"; echo "$2 \"$name\" deleted" ;;
    esac
    ;;
  *) echo "unexpected kubectl call: $*" >&2; exit 3 ;;
esac
"#;

const GOOD_POLICY: &str = "protect|protect|active|false";
const LABEL: &str = "capi-template-guard.kubewarden.io/cleanup=true";
const TOPOLOGY: &str = "topology.cluster.x-k8s.io/owned";
const M3MT: &str = "metal3machinetemplates.infrastructure.cluster.x-k8s.io";
const KCT: &str = "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io";
const OLD: &str = "2020-01-01T00:00:00Z";

/// One run of the script against the fake kubectl.
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
    calls: Vec<String>,
}

impl Run {
    fn summary(&self) -> &str {
        self.stdout.lines().last().unwrap_or("")
    }

    fn deletes(&self) -> Vec<&str> {
        self.calls
            .iter()
            .filter(|c| c.starts_with("delete "))
            .map(|c| c.split_whitespace().nth(2).unwrap_or(""))
            .collect()
    }

    fn explain(&self) -> String {
        format!(
            "exit {}\nstdout:\n{}\nstderr:\n{}\ncalls:\n{}",
            self.status,
            self.stdout,
            self.stderr,
            self.calls.join("\n")
        )
    }
}

/// The state of the fake cluster.
#[derive(Default)]
struct Fake<'a> {
    policy: &'a str,
    lists: Vec<String>,
    deletes: Vec<(&'a str, &'a str)>,
    unserved: Vec<&'a str>,
    forbidden: Vec<&'a str>,
}

impl<'a> Fake<'a> {
    fn policy(policy: &'a str) -> Self {
        Fake {
            policy,
            ..Fake::default()
        }
    }

    /// A template of `kind` under `selector`; `created` is a timestamp, `deleting` one or "".
    fn listed(
        mut self,
        kind: &str,
        selector: &str,
        name: &str,
        created: &str,
        deleting: &str,
    ) -> Self {
        self.lists.push(format!(
            "{kind}|{selector}|edge-sites {name} {created} {deleting}"
        ));
        self
    }

    fn delete(mut self, name: &'a str, outcome: &'a str) -> Self {
        self.deletes.push((name, outcome));
        self
    }

    fn run(&self, test: &str) -> Run {
        let dir = std::env::temp_dir().join(format!(
            "capi-template-guard-cleanup-{test}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("a scratch directory");
        let write = |name: &str, text: String| {
            fs::write(dir.join(name), text).expect("a scratch file");
        };
        write("kubectl", FAKE_KUBECTL.to_string());
        write("policy", self.policy.to_string());
        write("lists", self.lists.join("\n") + "\n");
        write(
            "deletes",
            self.deletes
                .iter()
                .map(|(n, o)| format!("{n} {o}\n"))
                .collect(),
        );
        write("unserved", self.unserved.join("\n") + "\n");
        write("forbidden", self.forbidden.join("\n") + "\n");
        write("calls", String::new());
        let made_executable = Command::new("chmod")
            .arg("+x")
            .arg(dir.join("kubectl"))
            .status()
            .expect("chmod runs");
        assert!(made_executable.success());

        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let output = Command::new("sh")
            .arg(root().join(SCRIPT))
            .env("PATH", path)
            .env("KINDS", format!("{M3MT} {KCT}"))
            .env("NAMESPACE", "edge-sites")
            .env_remove("NAMESPACE_ARGS")
            .env_remove("POLICY_NAME")
            .env_remove("SELECTOR")
            .env_remove("TOPOLOGY_SELECTOR")
            .env_remove("MIN_AGE_MINUTES")
            .output()
            .expect("sh runs the clean-up script");
        let calls = fs::read_to_string(dir.join("calls"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        let _ = fs::remove_dir_all(&dir);
        Run {
            status: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            calls,
        }
    }
}

/// A guard that cannot refuse: nothing is listed or deleted, the Job fails and says why.
#[test]
fn the_script_deletes_nothing_unless_the_guard_can_refuse() {
    for (case, policy, why) in [
        ("missing", "missing", "does not exist"),
        (
            "monitor",
            "monitor|monitor|active|false",
            "is in monitor mode",
        ),
        (
            "monitor-observed",
            "protect|monitor|active|false",
            "runs in monitor mode",
        ),
        ("pending", "protect|protect|pending|false", "is not active"),
        ("unscheduled", "protect||unscheduled|", "is not active"),
        (
            "fail-open",
            "protect|protect|active|true",
            "sets failOpenOnLookupError: true",
        ),
    ] {
        let run = Fake::policy(policy)
            .listed(M3MT, LABEL, "old", OLD, "")
            .delete("old", "ok")
            .run(case);
        assert_eq!(run.status, 2, "{case}: {}", run.explain());
        assert!(
            run.stderr.contains("deleted nothing") && run.stderr.contains(why),
            "{case}: the reason must say `{why}`: {}",
            run.explain()
        );
        assert_eq!(run.summary(), "deleted 0, kept 0, failed 0", "{case}");
        assert_eq!(
            run.calls.len(),
            1,
            "{case}: only the policy may be read: {}",
            run.explain()
        );
    }
}

/// An empty spec.mode is protect (the CRD's default), and status.mode may not be there yet.
#[test]
fn the_script_accepts_the_default_mode() {
    let run = Fake::policy("||active|")
        .listed(M3MT, LABEL, "old", OLD, "")
        .delete("old", "ok")
        .run("default-mode");
    assert_eq!(run.status, 0, "{}", run.explain());
    assert_eq!(run.summary(), "deleted 1, kept 0, failed 0");
}

/// Deleted, kept (409), skipped; labelled and topology-owned templates; each deleted once.
#[test]
fn the_script_counts_a_409_as_kept_and_collects_topology_leftovers() {
    let young = "2999-01-01T00:00:00Z";
    let run = Fake::policy(GOOD_POLICY)
        .listed(M3MT, LABEL, "free", OLD, "")
        .listed(M3MT, LABEL, "in-use", OLD, "")
        .listed(M3MT, TOPOLOGY, "cp-copy", OLD, "")
        .listed(KCT, LABEL, "both-labels", OLD, "")
        .listed(KCT, TOPOLOGY, "both-labels", OLD, "")
        .listed(M3MT, LABEL, "new", young, "")
        .listed(M3MT, LABEL, "going", OLD, "2024-05-01T00:00:00Z")
        .delete("in-use", "409")
        .run("pass");
    assert_eq!(run.status, 0, "{}", run.explain());
    assert_eq!(
        run.summary(),
        "deleted 3, kept 1, failed 0",
        "{}",
        run.explain()
    );
    let mut deletes = run.deletes();
    deletes.sort();
    assert_eq!(deletes, vec!["both-labels", "cp-copy", "free", "in-use"]);
    for line in [
        format!("kept {M3MT} edge-sites/in-use: Error from server"),
        format!("skip {M3MT} edge-sites/new: younger than 60 minutes"),
        format!("skip {M3MT} edge-sites/going: already being deleted"),
    ] {
        assert!(run.stdout.contains(&line), "no `{line}`: {}", run.explain());
    }
}

/// A 500 (or any refusal that is not a 409) fails the Job, but only after the whole pass.
#[test]
fn the_script_fails_the_job_on_a_500_after_the_pass() {
    let run = Fake::policy(GOOD_POLICY)
        .listed(M3MT, LABEL, "a-broken", OLD, "")
        .listed(M3MT, LABEL, "b-in-use", OLD, "")
        .listed(M3MT, LABEL, "c-free", OLD, "")
        .listed(M3MT, LABEL, "d-gone", OLD, "")
        .delete("a-broken", "500")
        .delete("b-in-use", "409")
        .delete("d-gone", "404")
        .run("500");
    assert_eq!(run.status, 1, "{}", run.explain());
    assert_eq!(
        run.summary(),
        "deleted 1, kept 1, failed 1",
        "{}",
        run.explain()
    );
    assert_eq!(
        run.deletes(),
        vec!["a-broken", "b-in-use", "c-free", "d-gone"]
    );
    assert!(
        run.stdout.contains(&format!(
            "failed {M3MT} edge-sites/a-broken: Error from server"
        )),
        "{}",
        run.explain()
    );
    assert!(
        run.stdout.contains("d-gone: already gone"),
        "{}",
        run.explain()
    );
}

/// A kind the cluster does not serve is skipped; a list refused by RBAC is a failure.
#[test]
fn the_script_skips_unserved_kinds_and_fails_on_a_refused_list() {
    let mut fake = Fake::policy(GOOD_POLICY).listed(M3MT, LABEL, "free", OLD, "");
    fake.unserved.push(KCT);
    let run = fake.run("unserved");
    assert_eq!(run.status, 0, "{}", run.explain());
    assert!(run.stdout.contains(&format!("skip {KCT}: not served")));
    assert_eq!(run.summary(), "deleted 1, kept 0, failed 0");

    let mut fake = Fake::policy(GOOD_POLICY).listed(M3MT, LABEL, "free", OLD, "");
    fake.forbidden.push(KCT);
    let run = fake.run("forbidden");
    assert_eq!(run.status, 1, "{}", run.explain());
    assert_eq!(
        run.summary(),
        "deleted 1, kept 0, failed 2",
        "both selectors of the refused kind fail: {}",
        run.explain()
    );
}

// ---------------------------------------------------------------------------------------------
// The manifest, the image and the script agree

fn env_value<'a>(container: &'a Value, name: &str) -> &'a str {
    seq_at(container, "/env", CRONJOB)
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_else(|| panic!("{CRONJOB}: the container sets no value for {name}"))
}

#[test]
fn the_cronjob_runs_the_script_with_the_rbac_it_needs() {
    let documents = yaml_documents(CRONJOB, &read(CRONJOB));
    let find = |kind: &str| {
        documents
            .iter()
            .filter(|d| d["kind"] == kind)
            .collect::<Vec<_>>()
    };
    let cronjob = find("CronJob");
    let container = &seq_at(
        cronjob[0],
        "/spec/jobTemplate/spec/template/spec/containers",
        CRONJOB,
    )[0];

    // The image puts the script where the container runs it.
    let command = strings(&container["command"], "the container's command");
    let dockerfile = read("examples/cleanup-image/Dockerfile");
    assert!(
        dockerfile.lines().any(|l| l.starts_with("COPY")
            && l.contains("template-cleanup.sh")
            && l.ends_with(&command[0])),
        "cleanup-image/Dockerfile must COPY template-cleanup.sh to {}, the CronJob's command",
        command[0]
    );

    // The Role lets it list and delete every kind of KINDS, and each is a guarded template.
    let guarded: BTreeSet<(String, String)> = Metadata::load()
        .rules()
        .iter()
        .filter(|r| r.operations.iter().any(|o| o == "DELETE"))
        .flat_map(|r| {
            r.api_groups
                .iter()
                .flat_map(move |g| r.resources.iter().map(move |p| (g.clone(), p.clone())))
        })
        .collect();
    let role = find("Role")[0];
    for kind in env_value(container, "KINDS").split_whitespace() {
        let (plural, group) = kind.split_once('.').expect("KINDS holds plural.group");
        assert!(
            guarded.contains(&(group.to_string(), plural.to_string())),
            "{CRONJOB}: KINDS names {kind}, which the guard does not guard (metadata.yml rules)"
        );
        let granted = seq_at(role, "/rules", CRONJOB).iter().any(|rule| {
            let has = |key: &str, item: &str| strings(&rule[key], key).iter().any(|x| x == item);
            has("apiGroups", group)
                && has("resources", plural)
                && ["get", "list", "delete"].iter().all(|v| has("verbs", v))
        });
        assert!(
            granted,
            "{CRONJOB}: the Role must grant get, list and delete on {kind}"
        );
    }

    // It may read the guard policy it checks, and that is the guard of the examples.
    let policy = env_value(container, "POLICY_NAME");
    let guard = yaml_documents(
        "examples/cluster-admission-policy-guard.yaml",
        &read("examples/cluster-admission-policy-guard.yaml"),
    );
    assert_eq!(
        guard[0]["metadata"]["name"], policy,
        "POLICY_NAME must be the guard's name"
    );
    let readable = find("ClusterRole").iter().any(|role| {
        seq_at(role, "/rules", CRONJOB).iter().any(|rule| {
            rule["resources"] == serde_json::json!(["clusteradmissionpolicies"])
                && rule["resourceNames"] == serde_json::json!([policy])
                && rule["verbs"] == serde_json::json!(["get"])
        })
    });
    assert!(
        readable,
        "{CRONJOB}: a ClusterRole must grant get on the ClusterAdmissionPolicy {policy} only"
    );
    assert_eq!(env_value(container, "SELECTOR"), LABEL);
    assert_eq!(env_value(container, "TOPOLOGY_SELECTOR"), TOPOLOGY);
}
