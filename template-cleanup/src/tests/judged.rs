//! The probe that proves or stops the pass, the caller the guard must judge, rules that leave out
//! DELETE, a guard that changes during a long pass, and the order of a pass: a pass against the
//! mocked API server, asserting the requests sent.

use super::*;

/// The DELETEs a pass sent, as `(name, dry run)`.
fn deletes(seen: &[Seen]) -> Vec<(String, bool)> {
    seen.iter()
        .filter(|s| s.method == "DELETE")
        .map(|s| {
            let body: Value = serde_json::from_str(&s.body).unwrap_or_default();
            let name = s.uri.split('?').next().unwrap_or("").rsplit('/').next();
            (
                name.unwrap_or("").to_string(),
                body["dryRun"] == json!(["All"]),
            )
        })
        .collect()
}

/// Only `free` listed, and twelve MachineDeployments naming templates that do not exist, sorted
/// before one that names `in-use`.
fn stuck_rollout() -> Fake {
    let mut fake = only_free();
    let mut deployments: Vec<Value> = (0..12)
        .map(|i| deployment(&format!("a-missing-{i:02}")))
        .collect();
    deployments.push(deployment("in-use"));
    fake.deployments = Some(deployments);
    fake
}

/// Twelve MachineDeployments of a stuck rollout name templates that do not exist, sorted before
/// the one in use: none of them counts against a bound, the probe reaches `in-use`, and a guard
/// whose pods let its dry-run DELETE through (monitor mode) stops the pass before any DELETE.
/// With a bound of ten tries, the pass said "no probe possible" and deleted `free`.
#[tokio::test]
async fn missing_targets_do_not_use_up_the_probe() {
    let mut fake = stuck_rollout();
    fake.deletes.insert(
        "in-use",
        Some((200, template("in-use", "2026-01-01T00:00:00Z"))),
    );
    let (report, seen) = pass(fake, false).await;
    let error = report.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("the probe, a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses, did not come back as the guard's refusal: 2xx"),
        "{error}"
    );
    assert_eq!(report.exit_code(), CANNOT_RUN);
    assert_eq!(deletes(&seen), [("in-use".to_string(), true)]);
    // each missing template cost one GET and no DELETE
    let gets = seen
        .iter()
        .filter(|s| s.method == "GET" && s.uri.contains("/a-missing-"))
        .count();
    assert_eq!(gets, 12);
}

/// The same stuck rollout with the guard judging: the probe passes and `free` is deleted.
#[tokio::test]
async fn missing_targets_then_a_live_one_prove_the_guard() {
    let fake = stuck_rollout();
    let (report, seen) = pass(fake, false).await;
    assert!(
        report
            .probe
            .as_deref()
            .unwrap_or("")
            .starts_with("the guard refused"),
        "{:?}",
        report.probe
    );
    assert_eq!(
        deletes(&seen),
        [("in-use".to_string(), true), ("free".to_string(), false)]
    );
    assert_eq!(report.exit_code(), OK);
}

/// The job asks who it is before anything else, and a caller the guard's matchCondition does not
/// select deletes nothing: its DELETEs would be judged by another policy.
#[rstest]
#[case::a_person("kubernetes-admin", false)]
#[case::another_account("system:serviceaccount:capi-system:default", false)]
#[case::the_account_elsewhere("system:serviceaccount:tools:capi-template-cleanup", true)]
#[case::the_account("system:serviceaccount:capi-system:capi-template-cleanup", true)]
#[tokio::test]
async fn the_guard_must_judge_this_very_caller(#[case] user: &'static str, #[case] judged: bool) {
    let fake = Fake {
        user,
        ..only_free()
    };
    let (report, seen) = pass(fake, false).await;
    assert_eq!(
        seen[0].method, "POST",
        "the SelfSubjectReview comes first: {seen:?}"
    );
    assert_eq!(
        seen[0].uri,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews?"
    );
    if judged {
        assert_eq!(report.exit_code(), OK, "{:?}", report.error);
        return;
    }
    let error = report.error.clone().unwrap_or_default();
    assert!(error.starts_with(&format!("pre-flight check `the guard judges this caller` failed: the API server says this job runs as \"{user}\" (SelfSubjectReview), but the guard capi-template-guard-cleanup judges only DELETEs by a service account named capi-template-cleanup")), "{error}");
    assert!(
        error.contains("Run template-cleanup as the service account capi-template-cleanup"),
        "{error}"
    );
    assert!(!seen.iter().any(|s| s.method == "DELETE"), "{seen:?}");
    assert_eq!(report.exit_code(), CANNOT_RUN);
}

/// Without a matchCondition, the guard judges every caller.
#[tokio::test]
async fn a_guard_without_conditions_judges_every_caller() {
    let fake = Fake {
        user: "kubernetes-admin",
        webhook: webhook_with(|h| h["matchConditions"] = json!([])),
        ..only_free()
    };
    let (report, _) = pass(fake, false).await;
    assert_eq!(report.exit_code(), OK, "{:?}", report.error);
}

/// A SelfSubjectReview the API server refuses stops the pass.
#[tokio::test]
async fn a_pass_that_cannot_know_who_it_is_deletes_nothing() {
    let fake = Fake {
        user: "",
        ..only_free()
    };
    refused_before_any_delete(fake, "cannot ask the API server who this job is").await;
}

/// Rules that name the templates but leave out DELETE: the pass refuses instead of collecting
/// nothing and exiting 0.
#[rstest]
#[case::create_only(json!(["CREATE"]))]
#[case::update_only(json!(["UPDATE", "CONNECT"]))]
#[tokio::test]
async fn rules_without_delete_refuse(#[case] operations: Value) {
    let fake = Fake {
        webhook: webhook_with(|h| {
            for rule in h["rules"].as_array_mut().unwrap() {
                rule["operations"] = operations.clone();
            }
        }),
        ..only_free()
    };
    refused_before_any_delete(fake, "pre-flight check `rules cover DELETE` failed: the guard's rules name metal3machinetemplates.infrastructure.cluster.x-k8s.io but send no DELETE of them to it").await;
}

/// `n` labelled templates `t000`.., old enough, each DELETE answered 200.
fn many_free(n: usize) -> Fake {
    let mut fake = every_answer();
    fake.templates = (0..n)
        .map(|i| template(&format!("t{i:03}"), "2026-01-01T00:00:00Z"))
        .collect();
    for t in &fake.templates {
        let name: &'static str = Box::leak(
            t["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_string()
                .into_boxed_str(),
        );
        fake.deletes.insert(name, Some((200, t.clone())));
    }
    fake
}

/// A guard that goes to monitor mode during a long pass is seen by the re-check after
/// RECHECK_DELETES DELETEs: the pass stops there, the rest not tried, exit 2.
#[tokio::test(start_paused = true)]
async fn a_guard_that_changes_during_the_pass_stops_it() {
    let mut fake = many_free(60);
    // the probe's DELETE, then 50; from the 52nd on, the pods let everything through
    fake.monitor_after = Some(1 + crate::pass::RECHECK_DELETES);
    let (report, seen) = pass(fake, false).await;
    let sent = deletes(&seen);
    assert_eq!(sent.len(), 1 + crate::pass::RECHECK_DELETES + 1, "{sent:?}");
    assert_eq!(sent[0], ("in-use".to_string(), true));
    assert_eq!(sent.last().cloned(), Some(("in-use".to_string(), true)));
    let error = report.error.clone().unwrap_or_default();
    assert!(error.starts_with("The guard was checked again after 50 DELETEs and has changed: the probe, a dry-run DELETE of"), "{error}");
    assert!(error.contains("The pass stopped there"), "{error}");
    assert_eq!(report.counts.not_tried, 10);
    assert_eq!(report.exit_code(), CANNOT_RUN);
}

/// An unchanged guard is re-checked and the pass goes on: the probe again, reported.
#[tokio::test(start_paused = true)]
async fn an_unchanged_guard_is_rechecked_and_the_pass_goes_on() {
    let (report, seen) = pass(many_free(120), false).await;
    let probes = deletes(&seen).iter().filter(|d| d.1).count();
    assert_eq!(
        probes, 3,
        "one before the first DELETE, one after 50 and one after 100"
    );
    assert_eq!(report.counts.deleted, 120);
    assert_eq!(report.exit_code(), OK);
}

/// The order rotates by a quarter each hour: four passes start at four different quarters.
#[test]
fn each_hour_starts_at_another_quarter() {
    let items: Vec<usize> = (0..8).collect();
    let firsts: Vec<usize> = (0..4)
        .map(|h| crate::pass::in_pass_order(items.clone(), h * 3600)[0])
        .collect();
    assert_eq!(firsts, [0, 2, 4, 6]);
    assert_eq!(crate::pass::in_pass_order(items.clone(), 4 * 3600), items);
    assert!(crate::pass::in_pass_order(Vec::<usize>::new(), 3600).is_empty());
}
