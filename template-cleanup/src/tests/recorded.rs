//! What a pass records on the objects: an Event per template decided and per stop (reason, note,
//! the series of a second pass, the cap, a failure that changes nothing else, none in a dry run),
//! and one OpenReports Report per namespace where the CRD is installed. The mocked API server
//! keeps the Events and Reports written (create, merge PATCH, server-side apply).

use super::*;

/// The mock's answers to Event writes and OpenReports discovery and applies (`None`: not one).
pub(super) fn answer(fake: &Fake, method: &str, path: &str, body: &str) -> Option<Answer> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let body: Value = serde_json::from_str(body).unwrap_or_default();
    match (method, parts.as_slice()) {
        ("GET", ["apis", "openreports.io", "v1alpha1"]) if fake.reports.is_some() => {
            Some(tool_resources("openreports.io/v1alpha1", "Report"))
        }
        (
            "PATCH",
            [
                "apis",
                "openreports.io",
                "v1alpha1",
                "namespaces",
                ns,
                "reports",
                _,
            ],
        ) => {
            let reports = fake.reports.as_ref()?;
            reports.lock().unwrap().insert(ns.to_string(), body.clone());
            Some(Some((200, body)))
        }
        (
            _,
            [
                "apis",
                "events.k8s.io",
                "v1",
                "namespaces",
                ns,
                "events",
                rest @ ..,
            ],
        ) => {
            if let Some(answer) = &fake.event_answer {
                return Some(answer.clone());
            }
            let mut events = fake.events.lock().unwrap();
            Some(match (method, rest) {
                ("POST", []) => {
                    let key = format!("{ns}/{}", body["metadata"]["name"].as_str().unwrap());
                    if events.contains_key(&key) {
                        return Some(status(409, "AlreadyExists", &format!("{key} exists")));
                    }
                    let mut event = body.clone();
                    event["metadata"]["resourceVersion"] = json!("1");
                    events.insert(key, event.clone());
                    Some((201, event))
                }
                ("PATCH", [name]) => match events.get_mut(&format!("{ns}/{name}")) {
                    None => status(
                        404,
                        "NotFound",
                        &format!("events.events.k8s.io \"{name}\" not found"),
                    ),
                    Some(event) => {
                        let have = event["metadata"]["resourceVersion"].clone();
                        let want = &body["metadata"]["resourceVersion"];
                        if !want.is_null() && *want != have {
                            return Some(status(409, "Conflict", "the object has been modified"));
                        }
                        let before = event.clone();
                        json_patch::merge(event, &body);
                        if *event != before {
                            // a PATCH that changes nothing writes nothing
                            let next = have.as_str().unwrap().parse::<u32>().unwrap() + 1;
                            event["metadata"]["resourceVersion"] = json!(next.to_string());
                        }
                        Some((200, event.clone()))
                    }
                },
                _ => status(
                    405,
                    "MethodNotAllowed",
                    "the mock serves no such Event request",
                ),
            })
        }
        _ => None,
    }
}

/// Each Event of `fake`'s store as `(namespace/regarding name, reason, note, series count)`.
fn events(store: &Mutex<BTreeMap<String, Value>>) -> Vec<(String, String, String, i64)> {
    let store = store.lock().unwrap();
    let mut out: Vec<_> = store
        .values()
        .map(|e| {
            (
                format!(
                    "{}/{}",
                    e["metadata"]["namespace"].as_str().unwrap(),
                    e["regarding"]["name"].as_str().unwrap()
                ),
                e["reason"].as_str().unwrap().to_string(),
                e["note"].as_str().unwrap().to_string(),
                e["series"]["count"].as_i64().unwrap_or(1),
            )
        })
        .collect();
    out.sort();
    out
}

/// Every verdict gets its Event (reason, and a note saying why), in the template's namespace,
/// on the template by kind, name and uid; the summary says so, and where OpenReports is not
/// installed, the pass says that once.
#[tokio::test(start_paused = true)]
async fn every_verdict_is_recorded_on_its_template() {
    let fake = every_answer();
    let store = fake.events.clone();
    let (report, _) = pass(fake, false).await;
    let recorded = events(&store);
    let reason = |name: &str| {
        let e = recorded.iter().find(|e| e.0 == format!("edge/{name}"));
        let e = e.unwrap_or_else(|| panic!("no Event on {name}: {recorded:?}"));
        (e.1.as_str(), e.2.as_str(), e.3)
    };
    assert_eq!(
        reason("free"),
        (
            "TemplateDeleted",
            "Deleted: the guard capi-template-guard-cleanup let its DELETE through, so nothing it checks still needs this template.",
            1
        )
    );
    assert_eq!(
        reason("refused"),
        (
            "TemplateKept",
            "Kept: the guard capi-template-guard-cleanup refused its DELETE: refused is referenced by MachineSet edge/md-7f9c",
            1
        )
    );
    assert_eq!(reason("in-use").0, "TemplateKept");
    assert!(
        reason("in-use").1.starts_with("Kept: no DELETE sent, as the guard's own decision over what this pass listed keeps it: "),
        "{:?}",
        reason("in-use")
    );
    assert_eq!(reason("young").0, "TemplateLeft");
    assert_eq!(
        reason("young").1,
        "No DELETE sent: younger than --min-age (10m); a later pass tries it."
    );
    assert_eq!(reason("recreated").0, "TemplateChanged");
    assert!(reason("recreated").1.starts_with("Not deleted: changed since it was listed, the next pass looks again (Operation cannot be fulfilled"));
    assert_eq!(reason("forbidden").0, "DeleteFailed");
    assert_eq!(reason("finalized").0, "TemplateDeletionStarted");
    assert_eq!(reason("gone").0, "TemplateAlreadyGone");
    assert_eq!(recorded.len(), 10);
    let event = store
        .lock()
        .unwrap()
        .values()
        .find(|e| e["regarding"]["name"] == "refused")
        .cloned()
        .unwrap();
    assert_eq!(
        (
            &event["regarding"],
            &event["reportingController"],
            &event["reportingInstance"],
            &event["type"],
            &event["action"]
        ),
        (
            &json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate", "namespace": "edge", "name": "refused", "uid": "uid-refused"}),
            &json!("template-cleanup"),
            &json!("template-cleanup"),
            &json!("Normal"),
            &json!("Delete")
        )
    );
    let text = report.text();
    assert!(text.contains("\nevents: 10 recorded (10 new, 0 added to a series), 0 over the cap of 500 (--events-per-pass), 0 failed\n"), "{text}");
    assert_eq!(text.matches("reports: not written: the OpenReports CRD (reports.openreports.io, v1alpha1) is not installed").count(), 1, "{text}");
    assert_eq!(text.lines().last(), Some(report.closing_line().as_str()));
}

/// A second pass with the same verdicts adds to each Event's series: no second Event.
#[tokio::test(start_paused = true)]
async fn a_second_pass_adds_to_the_series() {
    let first = every_answer();
    let store = first.events.clone();
    pass(first, false).await;
    let mut second = every_answer();
    second.events = store.clone();
    let (report, seen) = pass(second, false).await;
    let recorded = events(&store);
    assert_eq!(recorded.len(), 10, "{recorded:?}");
    assert!(recorded.iter().all(|e| e.3 == 2), "{recorded:?}");
    let counts = report.events.clone().unwrap();
    assert_eq!((counts.new, counts.series, counts.failed), (0, 10, 0));
    // per Event, a PATCH that reads it, then one with the series and the resourceVersion read
    let patches: Vec<Value> = seen
        .iter()
        .filter(|s| s.method == "PATCH" && s.uri.contains("/events/in-use."))
        .map(|s| serde_json::from_str(&s.body).unwrap())
        .collect();
    assert_eq!(patches.len(), 2);
    assert_eq!(patches[0], json!({}));
    assert_eq!(patches[1]["series"]["count"], 2);
    assert_eq!(patches[1]["metadata"]["resourceVersion"], "1");
    assert!(
        !seen
            .iter()
            .any(|s| s.method == "POST" && s.uri.contains("/events"))
    );
}

/// At most --events-per-pass Events, the most telling first (here the three failed DELETEs).
#[tokio::test(start_paused = true)]
async fn the_cap_keeps_the_most_telling() {
    let mut fake = every_answer();
    fake.events_per_pass = 3;
    let store = fake.events.clone();
    let (report, _) = pass(fake, false).await;
    let recorded = events(&store);
    assert!(
        recorded.iter().all(|e| e.1 == "DeleteFailed"),
        "{recorded:?}"
    );
    assert_eq!(recorded.len(), 3);
    assert!(
        report
            .text()
            .contains("events: 3 recorded (3 new, 0 added to a series), 7 over the cap of 3")
    );
}

/// Events the API server refuses change nothing else: same verdicts and exit code; after a 403
/// no more are sent.
#[tokio::test(start_paused = true)]
async fn a_refused_event_changes_nothing_else() {
    let mut fake = every_answer();
    fake.event_answer = Some(status(403, "Forbidden", "cannot patch events"));
    let (report, seen) = pass(fake, false).await;
    assert_eq!(report.exit_code(), FAILED);
    assert_eq!(report.counts.kept, 2);
    let writes = seen
        .iter()
        .filter(|s| s.uri.contains("/events/") || s.uri.contains("/events?"));
    assert_eq!(writes.count(), 1);
    let counts = report.events.clone().unwrap();
    assert_eq!((counts.recorded, counts.failed), (0, 10));
}

/// A dry run writes no Event and no Report.
#[tokio::test(start_paused = true)]
async fn a_dry_run_records_nothing() {
    let mut fake = every_answer();
    fake.reports = Some(Arc::default());
    let (report, seen) = pass(fake, true).await;
    assert!(
        !seen
            .iter()
            .any(|s| s.method == "POST" && s.uri.contains("events") || s.method == "PATCH")
    );
    assert!(report.events.is_none() && report.reports.is_none());
}

/// The pre-flight's refusal: one Warning Event on the guard's ClusterAdmissionPolicy, in
/// `default`, saying which check failed.
#[tokio::test(start_paused = true)]
async fn a_refused_pass_is_recorded_on_the_guard() {
    let mut p = policy();
    p["spec"]["mode"] = json!("monitor");
    p["metadata"]["uid"] = json!("uid-guard");
    let fake = Fake {
        policy: Some((200, p)),
        ..every_answer()
    };
    let store = fake.events.clone();
    let (report, _) = pass(fake, false).await;
    assert_eq!(report.exit_code(), CANNOT_RUN);
    let store = store.lock().unwrap();
    let (key, event) = store.iter().next().unwrap();
    assert_eq!(store.len(), 1);
    assert!(
        key.starts_with("default/capi-template-guard-cleanup."),
        "{key}"
    );
    assert_eq!(event["reason"], "CleanupRefused");
    assert_eq!(event["type"], "Warning");
    assert_eq!(
        event["regarding"],
        json!({"apiVersion": "policies.kubewarden.io/v1", "kind": "ClusterAdmissionPolicy", "name": POLICY, "uid": "uid-guard"})
    );
    let note = event["note"].as_str().unwrap();
    assert!(
        note.starts_with("pre-flight check `spec.mode is protect` failed")
            && note.ends_with("Nothing was deleted."),
        "{note}"
    );
}

/// Where OpenReports is installed: one Report per namespace, applied, with a result per
/// template (deleted pass, kept warn, left and changed skip, failed error) and the summary.
#[tokio::test(start_paused = true)]
async fn one_report_per_namespace_where_openreports_is_installed() {
    let mut fake = every_answer();
    let reports: Arc<Mutex<BTreeMap<String, Value>>> = Arc::default();
    fake.reports = Some(reports.clone());
    let (report, seen) = pass(fake, false).await;
    let apply = seen
        .iter()
        .find(|s| s.method == "PATCH" && s.uri.contains("/reports/"))
        .unwrap();
    assert!(
        apply.uri.contains("fieldManager=template-cleanup") && apply.uri.contains("force=true"),
        "{apply:?}"
    );
    let reports = reports.lock().unwrap();
    let edge = &reports["edge"];
    assert_eq!(edge["metadata"]["name"], "template-cleanup");
    assert_eq!(edge["source"], "template-cleanup");
    assert_eq!(
        edge["summary"],
        json!({"pass": 3, "fail": 0, "warn": 2, "error": 3, "skip": 2})
    );
    let result = |name: &str| {
        let results = edge["results"].as_array().unwrap();
        results
            .iter()
            .find(|r| r["resources"][0]["name"] == name)
            .cloned()
            .unwrap()
    };
    let kept = result("refused");
    assert_eq!(
        (&kept["result"], &kept["rule"], &kept["policy"]),
        (&json!("warn"), &json!("TemplateKept"), &json!(POLICY))
    );
    assert!(
        kept["message"]
            .as_str()
            .unwrap()
            .contains("referenced by MachineSet edge/md-7f9c")
    );
    assert_eq!(kept["timestamp"], json!({"seconds": NOW, "nanos": 0}));
    for (name, result_) in [
        ("free", "pass"),
        ("young", "skip"),
        ("recreated", "skip"),
        ("forbidden", "error"),
    ] {
        assert_eq!(result(name)["result"], result_, "{name}");
    }
    assert_eq!(
        edge["results"][0]["result"], "error",
        "the most telling first"
    );
    assert!(report.text().contains("reports: 1 written, 0 failed (openreports.io/v1alpha1 Report template-cleanup, one per namespace; 0 results over 500 per Report left out)"));
}
