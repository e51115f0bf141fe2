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
                        if let Ok(i) = key.parse::<usize>()
                            && i < items.len()
                        {
                            items.remove(i);
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
                    Mutation::Deep(i) => deep(*i),
                    _ => json!(null),
                };
            }
        }
    }
}

/// A value nested as deep as the JSON parser lets a request through (128 levels, the request's
/// own levels included) or just past it, so that both the parser's limit and the policy's own
/// walks (the mutation's clone, the scan of a spec) are reached.
pub(super) fn deep(i: usize) -> Value {
    let mut deep = json!("bottom");
    for _ in 0..(52 + i % 14) {
        deep = json!({ "d": [deep] });
    }
    deep
}

/// CRDs beyond the catalogue's: kinds it does not know in the scanned groups, kinds known to
/// name no template, catalogue kinds served only at versions the policy does not know, and
/// versions that are not served.
pub(super) fn extra_crds() -> impl Strategy<Value = Vec<ExtraCrd>> {
    let cp = catalogue::CONTROL_PLANE_GROUP;
    type Versions = Vec<(&'static str, bool)>;
    let pool: Vec<(&str, &str, Versions)> = vec![
        (cp, "FooControlPlane", vec![("v1alpha1", true)]),
        (
            cp,
            "FooControlPlane",
            vec![("v1alpha1", false), ("v1alpha2", true)],
        ),
        (
            catalogue::ETCD_GROUP,
            "FooEtcdCluster",
            vec![("v1beta1", true)],
        ),
        (cp, "HostedControlPlane", vec![("v1alpha1", true)]),
        (cp, "NestedEtcd", vec![("v1alpha4", true)]),
        (cp, "TalosControlPlane", vec![("v1alpha4", true)]),
        (cp, "KairosControlPlane", vec![("v1beta3", true)]),
        (catalogue::CAPI_GROUP, "MachineSet", vec![("v1beta3", true)]),
        (
            catalogue::CAPI_GROUP,
            "MachineDeployment",
            vec![("v1beta2", false), ("v1beta1", true)],
        ),
        (
            cp,
            "KubeadmControlPlane",
            vec![("v1beta2", false), ("v1beta1", false)],
        ),
    ];
    let crds: Vec<ExtraCrd> = pool
        .into_iter()
        .map(|(group, kind, versions)| ExtraCrd {
            group: group.to_string(),
            kind: kind.to_string(),
            versions: versions.iter().map(|(v, s)| (v.to_string(), *s)).collect(),
        })
        .collect();
    proptest::sample::subsequence(crds.clone(), 0..4).prop_map(|mut chosen| {
        // One CRD per kind: the first chosen.
        let mut seen: Vec<String> = Vec::new();
        chosen.retain(|c| {
            let fresh = !seen.contains(&c.kind);
            seen.push(c.kind.clone());
            fresh
        });
        chosen
    })
}

/// Metal3Machine CREATEs (the sample requests the mutation sees), unchanged, with valid
/// settings and any host answers and CRDs.
pub(super) fn create_case() -> impl Strategy<Value = Case> {
    let creates: Vec<Value> = requests()
        .iter()
        .filter(|r| r["operation"] == "CREATE" && r["kind"]["kind"] == "Metal3Machine")
        .cloned()
        .collect();
    (
        proptest::sample::select(creates),
        settings_strategy(),
        answers_strategy(),
        extra_crds(),
        any::<bool>(),
    )
        .prop_map(|(request, settings, answers, crds, granted)| Case {
            request,
            settings: settings_strategy_valid(settings),
            answers,
            keeper: None,
            crds,
            cluster_deleting: false,
            granted,
            machine_created: true,
        })
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
        extra_crds(),
        any::<bool>(),
    )
        .prop_map(move |(i, mutations, settings, answers, crds, granted)| {
            let mut request = requests()[i].clone();
            for m in &mutations {
                mutate(&mut request, m, only_objects);
            }
            Case {
                request,
                settings,
                answers,
                keeper: None,
                crds,
                cluster_deleting: false,
                granted,
                machine_created: false,
            }
        })
}

/// One way a template is kept: the template's group and kind, the keeper's kind, where it names
/// the template, and how.
#[derive(Debug, Clone, Copy, Default)]
struct Kept {
    group: &'static str,
    kind: &'static str,
    referrer: &'static str,
    path: &'static str,
    /// The reference gives a name only (its kind is implied by the keeper's field).
    name_only: bool,
    /// The keeper's CRD, when it is not the catalogue's: (group, the one version it serves).
    crd: Option<(&'static str, &'static str)>,
    /// The keeper is being deleted (it keeps the template all the same).
    deleting: bool,
    /// The template is owned by a Cluster being deleted, which the keeper belongs to (row 6:
    /// control planes and scanned kinds keep it all the same).
    cluster: bool,
    /// The reference sits as deep in the keeper's spec as the parser lets it.
    deep: bool,
}

const fn kept(
    group: &'static str,
    kind: &'static str,
    referrer: &'static str,
    path: &'static str,
) -> Kept {
    Kept {
        group,
        kind,
        referrer,
        path,
        name_only: false,
        crd: None,
        deleting: false,
        cluster: false,
        deep: false,
    }
}

const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const M3: &str = "Metal3MachineTemplate";
const DATA: &str = "Metal3DataTemplate";
const FOO: Option<(&str, &str)> = Some((catalogue::CONTROL_PLANE_GROUP, "v1alpha1"));

/// Every kind of keeper: catalogue kinds, Metal3DataTemplate's (name-only references), a scanned
/// kind, a known kind served only at a future version (name-only, keeper rules), row 6, keepers
/// being deleted, and a reference as deep as the parser allows.
const KEPT: [Kept; 17] = [
    kept(
        INFRA,
        M3,
        "MachineDeployment",
        "/spec/template/spec/infrastructureRef",
    ),
    kept(
        INFRA,
        "OpenStackMachineTemplate",
        "MachineSet",
        "/spec/template/spec/infrastructureRef",
    ),
    kept(
        "bootstrap.cluster.x-k8s.io",
        "TalosConfigTemplate",
        "MachineDeployment",
        "/spec/template/spec/bootstrap/configRef",
    ),
    kept(
        INFRA,
        "Metal3ClusterTemplate",
        "ClusterClass",
        "/spec/infrastructure/templateRef",
    ),
    kept(
        "controlplane.cluster.x-k8s.io",
        "KubeadmControlPlaneTemplate",
        "ClusterClass",
        "/spec/controlPlane/ref",
    ),
    kept(
        INFRA,
        M3,
        "KubeadmControlPlane",
        "/spec/machineTemplate/spec/infrastructureRef",
    ),
    kept(
        INFRA,
        M3,
        "TalosControlPlane",
        "/spec/infrastructureTemplate",
    ),
    kept(
        INFRA,
        "Metal3RemediationTemplate",
        "MachineHealthCheck",
        "/spec/remediation/templateRef",
    ),
    Kept {
        name_only: true,
        ..kept(INFRA, DATA, M3, "/spec/template/spec/dataTemplate")
    },
    Kept {
        name_only: true,
        deleting: true,
        ..kept(INFRA, DATA, "Metal3Machine", "/spec/dataTemplate")
    },
    Kept {
        crd: FOO,
        ..kept(
            INFRA,
            M3,
            "FooControlPlane",
            "/spec/machines/infrastructure",
        )
    },
    Kept {
        crd: FOO,
        deleting: true,
        cluster: true,
        ..kept(INFRA, M3, "FooControlPlane", "/spec/infra")
    },
    Kept {
        crd: FOO,
        deep: true,
        ..kept(INFRA, M3, "FooControlPlane", "/spec/nested")
    },
    Kept {
        name_only: true,
        crd: Some((catalogue::CONTROL_PLANE_GROUP, "v1beta3")),
        ..kept(
            "bootstrap.cluster.x-k8s.io",
            "KairosConfigTemplate",
            "KairosControlPlane",
            "/spec/kairosConfigTemplate",
        )
    },
    Kept {
        crd: Some((catalogue::CAPI_GROUP, "v1beta3")),
        ..kept(
            INFRA,
            M3,
            "MachineSet",
            "/spec/template/spec/infrastructureRef",
        )
    },
    Kept {
        cluster: true,
        ..kept(
            INFRA,
            M3,
            "KubeadmControlPlane",
            "/spec/machineTemplate/spec/infrastructureRef",
        )
    },
    Kept {
        deleting: true,
        ..kept(
            INFRA,
            M3,
            "KubeadmControlPlane",
            "/spec/machineTemplate/spec/infrastructureRef",
        )
    },
];

/// A guarded template, with no move annotation, that a listed or scanned keeper names.
pub(super) fn kept_case() -> impl Strategy<Value = Case> {
    (
        proptest::sample::select(KEPT.to_vec()),
        any::<bool>(),
        settings_strategy(),
        answers_strategy(),
        any::<usize>(),
    )
        .prop_map(|(k, node_reuse, settings, answers, depth)| {
            // Valid settings only: invalid ones are refused before any decision.
            let settings = settings_strategy_valid(settings);
            let mut reference = json!({"apiGroup": k.group, "kind": k.kind, "name": "t-1"});
            if k.name_only {
                reference = json!({"name": "t-1"});
            }
            if k.deep {
                // The reference at the bottom of the parser's depth, where only the scan looks.
                let mut nested = reference;
                for _ in 0..(40 + depth % 12) {
                    nested = json!({ "d": [nested] });
                }
                reference = nested;
            }
            let mut meta = json!({"name": "keeper", "namespace": "ns"});
            if k.deleting {
                meta["deletionTimestamp"] = json!("2026-12-01T00:00:00Z");
                meta["finalizers"] = json!(["example.com/keep"]);
            }
            if k.cluster {
                meta["labels"] = json!({"cluster.x-k8s.io/cluster-name": "c1"});
            }
            let mut object = json!({"kind": k.referrer, "metadata": meta});
            let mut at = &mut object;
            for part in k.path.trim_start_matches('/').split('/') {
                at = &mut at[part];
            }
            *at = reference;
            let mut old_meta = json!({"name": "t-1", "namespace": "ns"});
            if k.cluster {
                old_meta["ownerReferences"] = json!([{"apiVersion": "cluster.x-k8s.io/v1beta2",
                    "kind": "Cluster", "name": "c1", "uid": "u-c1"}]);
            }
            let old = json!({"apiVersion": format!("{}/v1beta2", k.group), "kind": k.kind,
                "metadata": old_meta, "spec": {"nodeReuse": node_reuse}});
            let request = json!({"uid": "u", "kind": {"group": k.group, "version": "v1beta2", "kind": k.kind},
                "name": "t-1", "namespace": "ns", "operation": "DELETE", "oldObject": old});
            let crds = k
                .crd
                .map(|(group, version)| ExtraCrd {
                    group: group.to_string(),
                    kind: k.referrer.to_string(),
                    versions: vec![(version.to_string(), true)],
                })
                .into_iter()
                .collect();
            Case {
                request,
                settings,
                answers,
                keeper: Some(Keeper { kind: k.referrer.to_string(), object }),
                crds,
                cluster_deleting: k.cluster,
                granted: true,
                machine_created: false,
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
