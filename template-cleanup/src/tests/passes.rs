//! Whole passes: every answer a DELETE can get, a dry run, what a deploy tool declares, the
//! reads and checks that stop a pass before any DELETE, the time limit, and the guard's own
//! decision before each DELETE.

use super::*;

#[tokio::test(start_paused = true)]
async fn every_answer_to_a_delete_and_the_exit_code() {
    let (report, seen) = pass(every_answer(), false).await;
    let v = verdicts(&report);
    let expect = |name: &str, verdict: &str, detail: &str| {
        let line = v
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap_or_else(|| panic!("no line for {name}: {v:?}"));
        assert_eq!(line.1, verdict, "{name}: {line:?}");
        assert!(line.2.starts_with(detail), "{name}: {line:?}");
    };
    for (name, verdict, detail) in [
        ("free", "deleted", ""),
        ("finalized", "deletion started", ""),
        (
            "in-use",
            "kept",
            "no DELETE sent: the guard's own decision over what this pass listed keeps it: ",
        ),
        (
            "refused",
            "kept",
            "refused is referenced by MachineSet edge/md-7f9c",
        ),
        ("gone", "already gone", ""),
        (
            "orphaned",
            "failed",
            "404 NotFound: namespaces \"edge\" not found: its namespace edge does not exist",
        ),
        ("forbidden", "failed", "403 Forbidden: "),
        ("recreated", "changed", "changed since it was listed"),
        (
            "slow",
            "failed",
            "delete metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/slow: no answer within 30s",
        ),
        ("young", "left", "younger than --min-age"),
    ] {
        expect(name, verdict, detail);
    }
    assert_eq!(
        report.closing_line(),
        "deleted 1, deletion started 1, kept 2, left 1, already gone 1, changed 1, failed 3, not tried 0"
    );
    assert_eq!(report.exit_code(), FAILED);
    assert!(
        report.probe.as_deref().unwrap_or("").starts_with("the guard refused a dry-run DELETE of metal3machinetemplates.infrastructure.cluster.x-k8s.io edge/in-use, which a MachineDeployment uses: in-use is referenced by"),
        "{:?}",
        report.probe
    );
    // the list followed continue over five pages
    let lists: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.uri.starts_with(M3MT_PATH) && s.uri.contains("cleanup"))
        .collect();
    assert_eq!(lists.len(), 5, "{lists:?}");
    assert!(
        lists[1].uri.contains("continue=2") && lists[3].uri.contains("continue=6"),
        "{lists:?}"
    );
    // the probe's dry-run DELETE first, then one DELETE per candidate, none for the young
    // template, each with background propagation and preconditions on uid and resourceVersion,
    // never a grace period
    let mut deletes: Vec<&Seen> = seen.iter().filter(|s| s.method == "DELETE").collect();
    let probe = deletes.remove(0);
    assert!(probe.uri.ends_with("/in-use?"), "{probe:?}");
    let body: Value = serde_json::from_str(&probe.body).unwrap();
    assert_eq!(
        body,
        json!({"dryRun": ["All"], "propagationPolicy": "Background", "preconditions": {"uid": "uid-in-use"}}),
        "the probe is a server-side dry run, on the uid it read"
    );
    assert_eq!(deletes.len(), 8, "{deletes:?}");
    for d in &deletes {
        let body: Value = serde_json::from_str(&d.body).unwrap();
        let name = d.uri.split('?').next().unwrap().rsplit('/').next().unwrap();
        assert_eq!(body["propagationPolicy"], "Background", "{d:?}");
        assert_eq!(
            body["preconditions"],
            json!({"uid": format!("uid-{name}"), "resourceVersion": "7"}),
            "{d:?}"
        );
        assert!(
            body.get("gracePeriodSeconds").is_none() && body.get("dryRun").is_none(),
            "{d:?}"
        );
    }
}

#[tokio::test]
async fn a_dry_run_sends_dry_run_deletes_and_says_would_delete() {
    let mut fake = every_answer();
    fake.templates
        .retain(|t| ["free", "in-use"].contains(&t["metadata"]["name"].as_str().unwrap()));
    let (report, seen) = pass(fake, true).await;
    assert_eq!(verdicts(&report)[0].1, "would delete");
    assert_eq!(
        report.text().lines().last(),
        Some(
            "deleted 1, deletion started 0, kept 1, left 0, already gone 0, changed 0, failed 0, not tried 0 (dry run)"
        )
    );
    assert_eq!(report.exit_code(), OK);
    for d in seen.iter().filter(|s| s.method == "DELETE") {
        let body: Value = serde_json::from_str(&d.body).unwrap();
        assert_eq!(body["dryRun"], json!(["All"]), "{d:?}");
    }
}

#[tokio::test]
async fn a_template_flux_still_declares_is_never_asked_about() {
    let mut fake = only_free();
    fake.flux = Some(Some((
        200,
        json!({"kind": "KustomizationList", "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "metadata": {}, "items": [
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": {"name": "sites", "namespace": "flux-system"},
             "status": {"inventory": {"entries": [{"id": "edge_free_infrastructure.cluster.x-k8s.io_Metal3MachineTemplate", "v": "v1beta1"}]}}},
        ]}),
    )));
    let (report, seen) = pass(fake, false).await;
    assert_eq!(
        verdicts(&report),
        [(
            "free".into(),
            "left".into(),
            "still declared by Kustomization flux-system/sites".into()
        )]
    );
    assert_eq!(report.sources[0].read, "1 read, 1 objects declared");
    assert!(!seen.iter().any(|s| s.method == "DELETE"));
}

#[rstest]
#[case::guard_missing(
    status(
        404,
        "NotFound",
        "clusteradmissionpolicies.policies.kubewarden.io \"capi-template-guard\" not found"
    ),
    None,
    "pre-flight check `guard exists` failed"
)]
#[case::monitor(Some((200, { let mut p = policy(); p["spec"]["mode"] = json!("monitor"); p })), None, "pre-flight check `spec.mode is protect` failed")]
#[case::rolling_out(Some((200, { let mut p = policy(); p["status"]["conditions"][2]["status"] = json!("False"); p })), None, "pre-flight check `condition PolicyUniquelyReachable is True` failed")]
#[case::policy_unreadable(
    status(403, "Forbidden", "cannot get"),
    None,
    "cannot read the ClusterAdmissionPolicy capi-template-guard-cleanup: 403 Forbidden: cannot get"
)]
#[case::flux_unreadable(Some((200, policy())), Some(status(403, "Forbidden", "cannot list kustomizations")), "cannot read Flux Kustomizations (installed, kustomize.toolkit.fluxcd.io/v1): 403 Forbidden")]
#[tokio::test]
async fn a_pass_that_cannot_be_safe_deletes_nothing_and_exits_2(
    #[case] policy: Answer,
    #[case] flux: Option<Answer>,
    #[case] error: &str,
) {
    let fake = Fake {
        policy,
        flux,
        ..every_answer()
    };
    refused_before_any_delete(fake, error).await;
}

/// At the time limit the pass sends no more DELETEs: the rest are `not tried`, and at least one
/// DELETE is sent however long the pass took to start. Without the limit all eight candidates
/// that reach the webhook would be tried (in-use is kept by the guard's own decision first).
#[tokio::test(start_paused = true)]
async fn the_time_limit_stops_the_deletes_and_reports_the_rest() {
    let mut fake = every_answer();
    fake.time_limit = Duration::ZERO;
    let (report, seen) = pass(fake, false).await;
    let real_deletes = seen
        .iter()
        .filter(|s| s.method == "DELETE" && !s.body.contains("dryRun"))
        .count();
    assert_eq!(real_deletes, 1, "{seen:?}");
    assert_eq!(report.counts.not_tried, 8, "{}", report.closing_line());
    assert_eq!(
        report.counts.left, 1,
        "the young template is left, not counted as not tried"
    );
}

/// The guard's own decision before each DELETE: a template a MachineDeployment uses is never
/// sent a real DELETE, even when the guard's pods switch to monitor mode right after the probe
/// (every later DELETE would be let through). Without that decision, in-use would be deleted.
#[tokio::test(start_paused = true)]
async fn a_template_the_guards_decision_keeps_gets_no_delete_in_monitor_mode() {
    let mut fake = every_answer();
    fake.monitor_after = Some(1);
    let (report, seen) = pass(fake, false).await;
    let in_use: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.method == "DELETE" && s.uri.contains("/in-use?"))
        .collect();
    assert_eq!(in_use.len(), 1, "only the probe's: {in_use:?}");
    assert!(in_use[0].body.contains("dryRun"), "{in_use:?}");
    let (verdict, detail) = verdict_of(&report, "in-use");
    assert_eq!(verdict, "kept");
    assert!(
        detail.starts_with(
            "no DELETE sent: the guard's own decision over what this pass listed keeps it: "
        ) && detail.contains("in-use is still in use"),
        "{detail}"
    );
}

/// A template an old MachineSet still scaled up names gets no DELETE: the guard's own decision
/// over the listed MachineSets keeps it. Without MachineSets listed, the webhook refuses it.
#[tokio::test(start_paused = true)]
async fn a_template_a_listed_machine_set_keeps_gets_no_delete() {
    let mut fake = every_answer();
    let mut ms = deployment("refused");
    ms["kind"] = json!("MachineSet");
    ms["metadata"]["name"] = json!("md-7f9c");
    ms["spec"]["replicas"] = json!(2);
    ms["status"] = json!({"replicas": 2});
    fake.machine_sets = Some(vec![ms]);
    let (report, seen) = pass(fake, false).await;
    let sent = seen
        .iter()
        .filter(|s| s.method == "DELETE" && s.uri.contains("/refused?"))
        .count();
    assert_eq!(sent, 0, "{seen:?}");
    let (verdict, detail) = verdict_of(&report, "refused");
    assert_eq!(verdict, "kept");
    assert!(detail.contains("MachineSet md-7f9c"), "{detail}");
}
