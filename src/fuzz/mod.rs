//! Property tests over the native entry point (`answer`, the code the wasm module runs): hostile
//! requests, generated settings, and host calls answered with arbitrary outcomes.
//!
//! Properties, for every case:
//! - never a panic, and always a well-formed answer (a rejection has a sentence and a 400, 409 or
//!   500 code; every warning fits in 256 characters);
//! - identical input gives an identical answer and identical host calls;
//! - a lookup that failed or could not be read never leads to a silent accept;
//! - a guarded template that a keeper names is never deleted, unless `failOpenOnLookupError` is
//!   set, and then with a warning: every kind of keeper (catalogue kinds, Metal3DataTemplate's
//!   name-only references, a scanned kind, a known kind at a future version, row 6, keepers
//!   being deleted, a reference as deep as the parser allows);
//! - a Metal3Machine CREATE with valid settings is never refused, whatever the host answers.
//!
//! The host lists the catalogue's CRDs and generated ones (kinds the catalogue does not know,
//! versions it does not know, versions not served), answers `can_i`, and refuses kinds outside
//! metadata.yml's list unless the case grants them.
//!
//! `FUZZ_CASES` sets the number of cases (20,000 by default, as CI runs it; `make fuzz CASES=N`).
//! A failing case is minimised by proptest and written to `test_data/fuzz-failures/`, where
//! `fuzz_failures_stay_fixed` replays it from then on.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;
use std::time::Instant;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
    SubjectAccessReview,
};
use kubewarden_policy_sdk::response::ValidationResponse;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::host::Host;
use guard::catalogue::{self, CRD};
use guard::message::MAX_WARNING;

mod host;
mod strategies;

use host::{Answer, FuzzHost};
use strategies::*;

/// An object in the template's namespace that names the template and is not being deleted.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Keeper {
    kind: String,
    object: Value,
}

/// A CRD the fuzz host lists besides the catalogue's: a kind the catalogue does not know, or a
/// catalogue kind at versions it does not know (then it replaces the catalogue's CRD).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ExtraCrd {
    group: String,
    kind: String,
    /// (name, served)
    versions: Vec<(String, bool)>,
}

/// One generated case: everything `answer` and the host see.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Case {
    request: Value,
    settings: Value,
    answers: Vec<Answer>,
    keeper: Option<Keeper>,
    #[serde(default)]
    crds: Vec<ExtraCrd>,
    /// Every Cluster the host is asked for is being deleted (row 6).
    #[serde(default)]
    cluster_deleting: bool,
    /// The operator granted the extra CRDs' kinds in `contextAwareResources` (otherwise the host
    /// refuses them, as the test host does with metadata.yml's list).
    #[serde(default)]
    granted: bool,
    /// A Metal3Machine CREATE with valid settings: it must be accepted, whatever the host says.
    #[serde(default)]
    machine_created: bool,
}

/// Every JSON file of `test_data/<dir>`, in file-name order.
fn json_files(dir: &str) -> Vec<Value> {
    let dir = format!("{}/test_data/{dir}", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("a test data file");
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
        })
        .collect()
}

/// The fixture objects of both API versions.
fn objects() -> &'static Vec<Value> {
    static OBJECTS: OnceLock<Vec<Value>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        let mut all = json_files("objects/v1beta1");
        all.extend(json_files("objects/v1beta2"));
        all
    })
}

/// The sample admission requests.
fn requests() -> &'static Vec<Value> {
    static REQUESTS: OnceLock<Vec<Value>> = OnceLock::new();
    REQUESTS.get_or_init(|| json_files("requests"))
}

fn evaluate(case: &Case) -> (Vec<u8>, Vec<String>, bool) {
    let payload = json!({"request": case.request, "settings": case.settings}).to_string();
    let host = FuzzHost::new(case);
    let bytes = crate::answer(payload.as_bytes(), &host).expect("the policy always answers");
    let calls = host.calls.borrow().clone();
    (bytes, calls, host.failed.get())
}

fn fail_open(case: &Case) -> bool {
    case.settings.get("failOpenOnLookupError") == Some(&json!(true))
}

/// The properties of the module documentation.
fn check(case: &Case) -> Result<(), TestCaseError> {
    let (bytes, calls, failed) = evaluate(case);
    let response: ValidationResponse = serde_json::from_slice(&bytes)
        .map_err(|e| TestCaseError::fail(format!("not a ValidationResponse: {e}")))?;
    if response.accepted {
        prop_assert!(response.code.is_none() && response.message.is_none());
    } else {
        prop_assert!(
            matches!(response.code, Some(400 | 409 | 500)),
            "code {:?}",
            response.code
        );
        let message = response.message.clone().unwrap_or_default();
        prop_assert!(
            !message.is_empty() && message.ends_with('.'),
            "message {message:?}"
        );
        prop_assert!(
            message.chars().count() <= 4096,
            "message of {} characters",
            message.chars().count()
        );
    }
    for warning in response.warnings.iter().flatten() {
        prop_assert!(
            warning.chars().count() <= MAX_WARNING,
            "warning {warning:?}"
        );
    }
    let (again, calls_again, _) = evaluate(case);
    prop_assert_eq!(&bytes, &again, "a second evaluation answered differently");
    prop_assert_eq!(&calls, &calls_again);
    let silent_accept = response.accepted && response.warnings.as_ref().is_none_or(Vec::is_empty);
    prop_assert!(
        !(failed && silent_accept),
        "a failed lookup was accepted silently; calls {calls:?}"
    );
    if case.machine_created {
        // The mutation never stands between Cluster API and a new machine.
        prop_assert!(
            response.accepted,
            "a Metal3Machine CREATE was refused: {:?}; calls {calls:?}",
            response.message
        );
    }
    if case.keeper.is_some() && response.accepted {
        prop_assert!(
            fail_open(case) && !silent_accept,
            "a template in use was deleted; calls {calls:?}"
        );
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
}

fn failures_dir() -> String {
    format!("{}/test_data/fuzz-failures", env!("CARGO_MANIFEST_DIR"))
}

fn run(name: &str, cases: u32, strategy: impl Strategy<Value = Case>) {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let start = Instant::now();
    let result = runner.run(&strategy, |case| check(&case));
    let seconds = start.elapsed().as_secs_f64();
    println!(
        "fuzz {name}: {cases} cases in {seconds:.1} s ({:.0} cases/s)",
        f64::from(cases) / seconds
    );
    if let Err(error) = result {
        let text = format!("{error}");
        if let proptest::test_runner::TestError::Fail(_, case) = &error {
            let dir = failures_dir();
            let _ = std::fs::create_dir_all(&dir);
            let json = serde_json::to_string_pretty(case).unwrap_or_default();
            let file = format!("{dir}/{name}-{:016x}.json", fxhash(&json));
            let _ = std::fs::write(&file, &json);
            panic!("{text}\nminimal failing case saved to {file}:\n{json}");
        }
        panic!("{text}");
    }
}

fn fxhash(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

#[test]
fn fuzz_hostile_requests_and_answers() {
    run("hostile", cases() / 4 * 3, hostile_case());
}

#[test]
fn fuzz_templates_in_use_are_kept() {
    run("kept", cases() / 4, kept_case());
}

#[test]
fn fuzz_metal3_machine_creation_is_never_refused() {
    run("create", cases() / 10, create_case());
}

/// With every host answer good and the default settings, each kind of keeper of the kept
/// property is found and named: a 409, never a 500 (the deep reference included, so the scan
/// walks as deep as the parser lets an answer through).
#[test]
fn every_kind_of_keeper_is_found() {
    let mut runner = TestRunner::deterministic();
    let strategy = kept_case();
    let mut kinds = std::collections::BTreeSet::new();
    for _ in 0..400 {
        let mut case = strategy.new_tree(&mut runner).expect("a case").current();
        case.answers = vec![Answer::Good; 64];
        case.settings = json!({});
        let (bytes, calls, _) = evaluate(&case);
        let response: ValidationResponse = serde_json::from_slice(&bytes).expect("a response");
        let keeper = case
            .keeper
            .as_ref()
            .map(|k| k.kind.clone())
            .unwrap_or_default();
        assert_eq!(
            response.code,
            Some(409),
            "{keeper}: {:?}; calls {calls:?}",
            response.message
        );
        let message = response.message.unwrap_or_default();
        assert!(message.contains(&format!("{keeper} keeper")), "{message}");
        kinds.insert(keeper);
    }
    assert_eq!(kinds.len(), 10, "{kinds:?}");
}

/// Every case a fuzz run ever failed on, replayed.
#[test]
fn fuzz_failures_stay_fixed() {
    let Ok(entries) = std::fs::read_dir(failures_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("saved case");
        let case: Case = serde_json::from_str(&text).expect("saved case JSON");
        if let Err(e) = check(&case) {
            panic!("{}: {e}", entry.path().display());
        }
    }
}

/// Writes the hostile corpus that e2e.bats runs through the compiled module: `HOSTILE_CORPUS`
/// names the directory (the test does nothing without it). Each entry is a request, valid
/// settings, the session of host answers it gets, and the verdict the native code gave, which
/// the module must repeat. Deterministic: the same corpus on every run.
#[test]
fn write_hostile_corpus() {
    let Ok(dir) = std::env::var("HOSTILE_CORPUS") else {
        return;
    };
    std::fs::create_dir_all(&dir).expect("corpus directory");
    let mut runner = TestRunner::deterministic();
    let strategy = hostile_case_in(true);
    for n in 0..300 {
        let mut case = strategy.new_tree(&mut runner).expect("a case").current();
        case.settings = settings_strategy_valid(case.settings);
        // The test host grants only metadata.yml's kinds.
        case.granted = false;
        let payload = json!({"request": case.request, "settings": case.settings}).to_string();
        let host = FuzzHost::new(&case);
        let bytes = crate::answer(payload.as_bytes(), &host).expect("an answer");
        let response: ValidationResponse = serde_json::from_slice(&bytes).expect("a response");
        let expected = json!({
            "allowed": response.accepted,
            "code": response.code,
            "warned": response.warnings.is_some_and(|w| !w.is_empty()),
            "patched": response.mutated_object.is_some(),
        });
        let base = format!("{dir}/{n:03}");
        let write = |suffix: &str, value: &Value| {
            std::fs::write(format!("{base}.{suffix}"), value.to_string()).expect("corpus file")
        };
        write("request.json", &case.request);
        write("settings.json", &case.settings);
        write(
            "session.yml",
            &Value::Array(host.exchanges.borrow().clone()),
        );
        write("expected.json", &expected);
    }
}
