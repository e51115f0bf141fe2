//! The generated cases: hostile changes to the sample requests, settings, host answers, and
//! templates that a listed referrer keeps.

use super::*;

/// A change to a request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum Mutation {
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

/// Every JSON pointer in `value`, in a stable order.
pub(super) fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
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
pub(super) fn mutate(request: &mut Value, mutation: &Mutation, only_objects: bool) {
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

pub(super) fn settings_strategy() -> impl Strategy<Value = Value> {
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

pub(super) fn answers_strategy() -> impl Strategy<Value = Vec<Answer>> {
    proptest::collection::vec(
        prop_oneof![
            6 => Just(Answer::Good),
            1 => proptest::sample::select(Answer::ALL.to_vec()),
        ],
        0..12,
    )
}

pub(super) fn mutation_strategy() -> impl Strategy<Value = Mutation> {
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
pub(super) fn hostile_case() -> impl Strategy<Value = Case> {
    hostile_case_in(false)
}

pub(super) fn hostile_case_in(only_objects: bool) -> impl Strategy<Value = Case> {
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
pub(super) fn kept_case() -> impl Strategy<Value = Case> {
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
pub(super) fn settings_strategy_valid(settings: Value) -> Value {
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
