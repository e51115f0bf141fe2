//! Property tests over the native entry point (`answer`, the code the wasm module runs): hostile
//! requests, generated settings, and host calls answered with arbitrary outcomes.
//!
//! Properties, for every case:
//! - never a panic, and always a well-formed answer (a rejection has a sentence and a 400, 409 or
//!   500 code; every warning fits in 256 characters);
//! - identical input gives an identical answer and identical host calls;
//! - a lookup that failed or could not be read never leads to a silent accept;
//! - a guarded template that a listed, non-deleting referrer names is never deleted, unless
//!   `failOpenOnLookupError` is set, and then with a warning.
//!
//! `FUZZ_CASES` sets the number of cases (20,000 by default, as CI runs it; `make fuzz CASES=N`).
//! A failing case is minimised by proptest and written to `test_data/fuzz-failures/`, where
//! `fuzz_failures_stay_fixed` replays it from then on.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;
use std::time::Instant;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    GetResourceRequest, ListAllResourcesRequest, ListResourcesByNamespaceRequest,
};
use kubewarden_policy_sdk::response::ValidationResponse;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::catalogue::{self, CRD};
use crate::host::Host;
use crate::message::MAX_WARNING;

/// How the host answers one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Answer {
    /// The fixture objects of the kind asked for (and the keeper, if any).
    Good,
    Empty,
    /// A thousand objects.
    Large,
    NotServed,
    GroupVersion404,
    NotFound,
    Denied,
    Forbidden,
    Timeout,
    NotJson,
    WrongListKind,
    NoItems,
    NullItems,
    ItemsOfOtherKind,
    /// Good items and one whose name is a number.
    MixedBadItem,
}

impl Answer {
    const ALL: [Answer; 15] = [
        Answer::Good,
        Answer::Empty,
        Answer::Large,
        Answer::NotServed,
        Answer::GroupVersion404,
        Answer::NotFound,
        Answer::Denied,
        Answer::Forbidden,
        Answer::Timeout,
        Answer::NotJson,
        Answer::WrongListKind,
        Answer::NoItems,
        Answer::NullItems,
        Answer::ItemsOfOtherKind,
        Answer::MixedBadItem,
    ];

    /// An answer the policy cannot use: it must never be taken for "nothing refers to it".
    /// Which kinds exist comes from the CRD list, so a not-served text is a failure like any
    /// other; a not-found answer to a get is a legitimate "none".
    fn is_failure(self) -> bool {
        !matches!(
            self,
            Answer::Good | Answer::Empty | Answer::Large | Answer::NotFound
        )
    }
}

/// A change to a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum Mutation {
    Remove(usize),
    Null(usize),
    /// Replaces a value with one of another type.
    Retype(usize),
    Huge(usize),
    NonAscii(usize),
    Deep(usize),
    Operation(usize),
    Kind(usize),
}

/// An object in the template's namespace that names the template and is not being deleted.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Keeper {
    kind: String,
    object: Value,
}

/// One generated case: everything `answer` and the host see.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Case {
    request: Value,
    settings: Value,
    answers: Vec<Answer>,
    keeper: Option<Keeper>,
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

/// Answers every call with the next answer of the case, records the calls and whether any
/// answer was a failure.
struct FuzzHost<'a> {
    case: &'a Case,
    next: Cell<usize>,
    calls: RefCell<Vec<String>>,
    failed: Cell<bool>,
    /// Each call as a session exchange (kwctl's replay format), for the hostile corpus.
    exchanges: RefCell<Vec<Value>>,
}

/// A host call as kwctl's session files name it (serde's external tag becomes the YAML tag, so
/// the variants keep kwctl's names).
#[derive(Serialize)]
#[allow(clippy::enum_variant_names)]
enum SessionRequest<'a> {
    KubernetesListResourceAll(&'a ListAllResourcesRequest),
    KubernetesListResourceNamespace(&'a ListResourcesByNamespaceRequest),
    KubernetesGetResource(&'a GetResourceRequest),
}

fn exchange(request: &SessionRequest<'_>, answer: &Result<Vec<u8>, String>) -> Value {
    let response = match answer {
        Ok(bytes) => json!({"type": "Success", "payload": String::from_utf8_lossy(bytes)}),
        Err(message) => json!({"type": "Error", "message": message}),
    };
    json!({"type": "Exchange", "request": yaml_serde::to_string(request).expect("YAML"), "response": response})
}

impl<'a> FuzzHost<'a> {
    fn new(case: &'a Case) -> Self {
        FuzzHost {
            case,
            next: Cell::new(0),
            calls: RefCell::new(Vec::new()),
            failed: Cell::new(false),
            exchanges: RefCell::new(Vec::new()),
        }
    }

    fn answer(
        &self,
        call: String,
        api_version: &str,
        kind: &str,
        name: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        let i = self.next.get();
        self.next.set(i + 1);
        self.calls.borrow_mut().push(call);
        let answer = self.case.answers.get(i).copied().unwrap_or(Answer::Good);
        if answer.is_failure() {
            self.failed.set(true);
        }
        let items = |count: usize| -> Vec<Value> {
            if kind == CRD.kind {
                // Every kind of the catalogue is installed; with an empty answer, only the
                // keeper's (a keeper exists, so its CRD does).
                let keeper = self.case.keeper.as_ref().map(|k| k.kind.as_str());
                return catalogue::resources_read()
                    .filter(|r| r.kind != CRD.kind)
                    .filter(|r| count > 0 || keeper == Some(r.kind))
                    .map(|r| {
                        let versions: Vec<(&str, bool)> =
                            r.versions.iter().map(|v| (*v, true)).collect();
                        crate::testing::crd_object(r.group, r.kind, r.plural, &versions)
                    })
                    .collect();
            }
            let mut items: Vec<Value> = objects()
                .iter()
                .filter(|o| o["kind"] == kind)
                .cloned()
                .cycle()
                .take(count)
                .collect();
            if let Some(keeper) = self.case.keeper.as_ref().filter(|k| k.kind == kind) {
                items.push(keeper.object.clone());
            }
            items
        };
        let list = |items: Vec<Value>| json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items});
        let text = |t: String| Err(t);
        match answer {
            Answer::Good | Answer::Empty | Answer::Large => {
                let count = match answer {
                    Answer::Good => 2,
                    Answer::Empty => 0,
                    _ => 1000,
                };
                match name {
                    None => Ok(list(items(count)).to_string().into_bytes()),
                    Some(name) => match items(1).into_iter().next() {
                        Some(mut object) => {
                            object["metadata"]["name"] = json!(name);
                            Ok(object.to_string().into_bytes())
                        }
                        None => text(format!("Callback evaluation failure: Cannot find {api_version}/{kind} named '{name}' inside of namespace 'Some(\"ns\")'")),
                    },
                }
            }
            Answer::NotServed => text(format!("Callback evaluation failure: Cannot find resource {api_version}/{kind}")),
            // The host's texts as ../shared/tools/fakeapi/README.md records them (kwctl 1.36).
            Answer::GroupVersion404 => text(format!("Callback evaluation failure: error finding resource {api_version} / {kind}: ApiError: 404 page not found\n: Failed to parse error data (Status {{ status: Some(Failure), code: 404, message: \"404 page not found\\n\", metadata: None, reason: \"Failed to parse error data\", details: None }})")),
            Answer::NotFound => text(format!("Callback evaluation failure: Cannot find {api_version}/{kind} named '{}' inside of namespace 'Some(\"ns\")'", name.unwrap_or("x"))),
            Answer::Denied => text(format!("Policy has not been granted access to Kubernetes {api_version}/{kind} resources. The violation has been reported.")),
            Answer::Forbidden => text(format!("Callback evaluation failure: ApiError: {kind} \"x\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server-default\" cannot get resource: Forbidden (Status {{ status: Some(Failure), code: 403, metadata: None, reason: \"Forbidden\", details: None }})\n\nCaused by:\n    0: ApiError: forbidden")),
            Answer::Timeout => text("Callback evaluation failure: HyperError: operation timed out".to_string()),
            Answer::NotJson => Ok(b"<html>502 Bad Gateway</html>".to_vec()),
            Answer::WrongListKind => Ok(json!({"kind": "SecretList", "items": []}).to_string().into_bytes()),
            Answer::NoItems => Ok(json!({"kind": format!("{kind}List")}).to_string().into_bytes()),
            Answer::NullItems => Ok(json!({"kind": format!("{kind}List"), "items": null}).to_string().into_bytes()),
            Answer::ItemsOfOtherKind => match name {
                None => Ok(list(vec![json!({"kind": "Secret", "metadata": {"name": "s"}})]).to_string().into_bytes()),
                Some(_) => Ok(json!({"kind": "Secret", "metadata": {"name": "s"}}).to_string().into_bytes()),
            },
            Answer::MixedBadItem => {
                let mut items = items(2);
                items.push(json!({"kind": kind, "metadata": {"name": 7}}));
                match name {
                    None => Ok(list(items).to_string().into_bytes()),
                    Some(_) => Ok(json!({"kind": kind, "metadata": {"name": 7}}).to_string().into_bytes()),
                }
            }
        }
    }
}

impl Host for FuzzHost<'_> {
    fn list_all_resources(&self, r: &ListAllResourcesRequest) -> Result<Vec<u8>, String> {
        let call = format!("list-all {} {} {:?}", r.api_version, r.kind, r.field_masks);
        let answer = self.answer(call, &r.api_version, &r.kind, None);
        self.exchanges.borrow_mut().push(exchange(
            &SessionRequest::KubernetesListResourceAll(r),
            &answer,
        ));
        answer
    }

    fn list_resources_by_namespace(
        &self,
        r: &ListResourcesByNamespaceRequest,
    ) -> Result<Vec<u8>, String> {
        let call = format!(
            "list {} {} {} {:?}",
            r.api_version, r.kind, r.namespace, r.field_masks
        );
        let answer = self.answer(call, &r.api_version, &r.kind, None);
        self.exchanges.borrow_mut().push(exchange(
            &SessionRequest::KubernetesListResourceNamespace(r),
            &answer,
        ));
        answer
    }

    fn get_resource(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let call = format!(
            "get {} {} {:?}/{} {}",
            r.api_version, r.kind, r.namespace, r.name, r.disable_cache
        );
        let answer = self.answer(call, &r.api_version, &r.kind, Some(&r.name));
        self.exchanges
            .borrow_mut()
            .push(exchange(&SessionRequest::KubernetesGetResource(r), &answer));
        answer
    }
}

/// Every JSON pointer in `value`, in a stable order.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(v, p, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(v, p, out);
            }
        }
        _ => {}
    }
}

/// Applies `mutation`; with `only_objects`, field changes stay inside `object` and `oldObject`,
/// which an engine passes to the policy untouched (kwctl re-encodes the rest of the request).
fn mutate(request: &mut Value, mutation: &Mutation, only_objects: bool) {
    let mut all = Vec::new();
    pointers(request, String::new(), &mut all);
    if only_objects {
        all.retain(|p| p.starts_with("/object/") || p.starts_with("/oldObject/"));
    }
    let pick = |i: usize| all.get(i % all.len().max(1)).cloned();
    match mutation {
        Mutation::Operation(i) => {
            request["operation"] =
                json!(["CREATE", "UPDATE", "DELETE", "CONNECT", "", "delete"][i % 6]);
        }
        Mutation::Kind(i) => {
            let (group, kind) = [
                (
                    "infrastructure.cluster.x-k8s.io",
                    "OpenStackMachineTemplate",
                ),
                ("infrastructure.cluster.x-k8s.io", "Metal3Machine"),
                ("bootstrap.cluster.x-k8s.io", "TalosConfigTemplate"),
                (
                    "controlplane.cluster.x-k8s.io",
                    "KubeadmControlPlaneTemplate",
                ),
                (
                    "vmware.infrastructure.cluster.x-k8s.io",
                    "VSphereMachineTemplate",
                ),
                ("", "Secret"),
            ][i % 6];
            request["kind"] = json!({"group": group, "version": "v1beta2", "kind": kind});
        }
        other => {
            let Some(pointer) = (match other {
                Mutation::Remove(i)
                | Mutation::Null(i)
                | Mutation::Retype(i)
                | Mutation::Huge(i)
                | Mutation::NonAscii(i)
                | Mutation::Deep(i) => pick(*i),
                _ => None,
            }) else {
                return;
            };
            if let Mutation::Remove(_) = other {
                let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", ""));
                match request.pointer_mut(parent) {
                    Some(Value::Object(map)) => {
                        map.remove(&key.replace("~1", "/").replace("~0", "~"));
                    }
                    Some(Value::Array(items)) => {
                        if let Ok(i) = key.parse::<usize>() {
                            if i < items.len() {
                                items.remove(i);
                            }
                        }
                    }
                    _ => {}
                }
                return;
            }
            if let Some(slot) = request.pointer_mut(&pointer) {
                *slot = match other {
                    Mutation::Null(_) => Value::Null,
                    Mutation::Retype(_) => match slot {
                        Value::String(_) => json!(42),
                        Value::Number(_) => json!("forty-two"),
                        Value::Bool(_) => json!([true]),
                        Value::Array(_) => json!({"a": 1}),
                        Value::Object(_) => json!("object"),
                        Value::Null => json!(false),
                    },
                    Mutation::Huge(_) => json!("x".repeat(300_000)),
                    Mutation::NonAscii(_) => json!("ノード/再利用\u{0}é\u{202e}"),
                    _ => {
                        let mut deep = json!("bottom");
                        for _ in 0..100 {
                            deep = json!({ "d": [deep] });
                        }
                        deep
                    }
                };
            }
        }
    }
}

fn settings_strategy() -> impl Strategy<Value = Value> {
    let version = prop_oneof![
        Just(Value::Null),
        Just(json!("auto")),
        Just(json!("v1beta1")),
        Just(json!("v1beta2")),
        Just(json!("v1alpha4")),
        Just(json!(2))
    ];
    let flag = prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(false)),
        Just(json!("yes"))
    ];
    let key = prop_oneof![
        Just(Value::Null),
        Just(json!("example.com/reuse")),
        Just(json!("cluster.x-k8s.io/cloned-from-name")),
        Just(json!("Not A Key")),
        Just(json!("")),
    ];
    (
        version.clone(),
        version.clone(),
        version,
        flag.clone(),
        flag.clone(),
        flag,
        key,
        any::<u8>(),
    )
        .prop_map(|(capi, cp, m3, scaled, open, mutate, reuse, extra)| {
            let mut s = serde_json::Map::new();
            for (k, v) in [
                ("capiApiVersion", capi),
                ("controlPlaneApiVersion", cp),
                ("metal3ApiVersion", m3),
                ("countScaledDownMachineSets", scaled),
                ("failOpenOnLookupError", open),
                ("mutateMetal3Machines", mutate),
                ("nodeReuseAnnotation", reuse),
            ] {
                if !v.is_null() {
                    s.insert(k.into(), v);
                }
            }
            if extra == 0 {
                s.insert("unknownSetting".into(), json!(1));
            }
            Value::Object(s)
        })
}

fn answers_strategy() -> impl Strategy<Value = Vec<Answer>> {
    proptest::collection::vec(
        prop_oneof![
            6 => Just(Answer::Good),
            1 => proptest::sample::select(Answer::ALL.to_vec()),
        ],
        0..12,
    )
}

fn mutation_strategy() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::Remove),
        any::<usize>().prop_map(Mutation::Null),
        any::<usize>().prop_map(Mutation::Retype),
        any::<usize>().prop_map(Mutation::Huge),
        any::<usize>().prop_map(Mutation::NonAscii),
        any::<usize>().prop_map(Mutation::Deep),
        any::<usize>().prop_map(Mutation::Operation),
        any::<usize>().prop_map(Mutation::Kind),
    ]
}

/// Hostile cases: any sample request, changed, with any settings and any host answers.
fn hostile_case() -> impl Strategy<Value = Case> {
    hostile_case_in(false)
}

fn hostile_case_in(only_objects: bool) -> impl Strategy<Value = Case> {
    (
        0..requests().len(),
        proptest::collection::vec(mutation_strategy(), 0..4),
        settings_strategy(),
        answers_strategy(),
    )
        .prop_map(move |(i, mutations, settings, answers)| {
            let mut request = requests()[i].clone();
            for m in &mutations {
                mutate(&mut request, m, only_objects);
            }
            Case {
                request,
                settings,
                answers,
                keeper: None,
            }
        })
}

/// A guarded template, no Cluster owner and no move annotation, that a listed referrer names.
fn kept_case() -> impl Strategy<Value = Case> {
    let templates = [
        (
            "infrastructure.cluster.x-k8s.io",
            "Metal3MachineTemplate",
            "MachineDeployment",
            "/spec/template/spec/infrastructureRef",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "OpenStackMachineTemplate",
            "MachineSet",
            "/spec/template/spec/infrastructureRef",
        ),
        (
            "bootstrap.cluster.x-k8s.io",
            "TalosConfigTemplate",
            "MachineDeployment",
            "/spec/template/spec/bootstrap/configRef",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "Metal3ClusterTemplate",
            "ClusterClass",
            "/spec/infrastructure/templateRef",
        ),
        (
            "controlplane.cluster.x-k8s.io",
            "KubeadmControlPlaneTemplate",
            "ClusterClass",
            "/spec/controlPlane/ref",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "Metal3MachineTemplate",
            "KubeadmControlPlane",
            "/spec/machineTemplate/spec/infrastructureRef",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "Metal3MachineTemplate",
            "TalosControlPlane",
            "/spec/infrastructureTemplate",
        ),
        (
            "infrastructure.cluster.x-k8s.io",
            "Metal3RemediationTemplate",
            "MachineHealthCheck",
            "/spec/remediation/templateRef",
        ),
    ];
    (
        proptest::sample::select(templates.to_vec()),
        any::<bool>(),
        settings_strategy(),
        answers_strategy(),
    )
        .prop_map(|((group, kind, referrer, path), node_reuse, mut settings, answers)| {
            // Valid settings only: invalid ones are refused before any decision.
            settings = settings_strategy_valid(settings);
            let reference = json!({"apiGroup": group, "kind": kind, "name": "t-1"});
            let mut object = json!({"kind": referrer, "metadata": {"name": "keeper", "namespace": "ns"}});
            let mut at = &mut object;
            for part in path.trim_start_matches('/').split('/') {
                at = &mut at[part];
            }
            *at = reference;
            let old = json!({"apiVersion": format!("{group}/v1beta2"), "kind": kind,
                "metadata": {"name": "t-1", "namespace": "ns"}, "spec": {"nodeReuse": node_reuse}});
            let request = json!({"uid": "u", "kind": {"group": group, "version": "v1beta2", "kind": kind},
                "name": "t-1", "namespace": "ns", "operation": "DELETE", "oldObject": old});
            Case {
                request,
                settings,
                answers,
                keeper: Some(Keeper { kind: referrer.to_string(), object }),
            }
        })
}

/// Keeps only the settings the policy accepts.
fn settings_strategy_valid(settings: Value) -> Value {
    let mut out = serde_json::Map::new();
    for (k, v) in settings.as_object().into_iter().flatten() {
        let valid = match k.as_str() {
            "capiApiVersion" | "controlPlaneApiVersion" | "metal3ApiVersion" => {
                matches!(v.as_str(), Some("auto" | "v1beta1" | "v1beta2"))
            }
            "countScaledDownMachineSets" | "failOpenOnLookupError" | "mutateMetal3Machines" => {
                v.is_boolean()
            }
            "nodeReuseAnnotation" => v == "example.com/reuse",
            _ => false,
        };
        if valid {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Object(out)
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
