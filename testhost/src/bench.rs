//! `testhost bench-compare`: `validate` inside the compiled module against a native baseline on
//! generated namespaces (`bench/make_namespace.py`), in one run, so that a shared, noisy machine
//! still gives meaningful ratios. See [`compare`].

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tabled::{builder::Builder, settings::Style};

use crate::admission::{ValidateRequest, ValidationResponse};
use crate::engine::{Policy, PolicyModule};
use crate::host::{lock, ContextAwareResource, HostState, Responder};
use crate::kube::{self, Crd};
use crate::session::KubeRequest;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// A namespace directory written by bench/make_namespace.py (repeat the flag for several)
    #[arg(long = "namespace", value_name = "DIR", required = true)]
    namespaces: Vec<PathBuf>,

    /// Timed evaluations per case (default: 300,000 / Metal3Machines, between 10 and 200)
    #[arg(long)]
    iterations: Option<usize>,

    /// Policy module: a path to a .wasm file
    policy: String,
}

const V1: &str = "v1beta1";
const V2: &str = "v1beta2";
const INFRA: &str = "infrastructure.cluster.x-k8s.io";
const GROUPKIND: &str = "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io";

/// The lists the baseline reads, in the policy's order.
const BASELINE_LISTS: [&str; 6] = [
    "MachineDeployment",
    "MachineSet",
    "KubeadmControlPlane",
    "RKE2ControlPlane",
    "ClusterClass",
    "Metal3Machine",
];

/// Which versions of the Cluster API groups a release serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    V1beta1Only,
    TwoVersions,
    V1beta2Only,
}

impl Release {
    const ALL: [Release; 3] = [
        Release::V1beta1Only,
        Release::TwoVersions,
        Release::V1beta2Only,
    ];

    fn serves(self, version: &str) -> bool {
        match self {
            Release::V1beta1Only => version == V1,
            Release::TwoVersions => version == V1 || version == V2,
            Release::V1beta2Only => version == V2,
        }
    }

    /// The version requests arrive at, and the objects of the baseline's lists.
    fn preferred(self) -> &'static str {
        match self {
            Release::V1beta1Only => V1,
            _ => V2,
        }
    }
}

/// One kind at one version: the whole objects and their list answer without masks.
struct KindStore {
    group: String,
    items: Vec<Value>,
    unmasked_list: Vec<u8>,
}

/// The objects of a namespace at each version written by make_namespace.py.
struct Namespace {
    dir: PathBuf,
    name: String,
    machines: usize,
    kinds: HashMap<(String, String), KindStore>,
}

impl Namespace {
    fn load(dir: &Path) -> Result<Namespace> {
        let mut ns = Namespace {
            dir: dir.to_path_buf(),
            name: String::new(),
            machines: 0,
            kinds: HashMap::new(),
        };
        for version in [V2, V1] {
            let path = dir.join(format!("objects-{version}.json"));
            if !path.exists() {
                continue;
            }
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut doc: Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("parsing {}", path.display()))?;
            ns.name = doc["namespace"].as_str().unwrap_or_default().to_string();
            let Some(kinds) = doc.get_mut("kinds").and_then(Value::as_object_mut) else {
                bail!("{}: no \"kinds\" object", path.display());
            };
            for (kind, items) in std::mem::take(kinds) {
                let Value::Array(items) = items else {
                    bail!("{}: {kind} is not a list", path.display());
                };
                if kind == "Metal3Machine" {
                    ns.machines = items.len();
                }
                let group = items
                    .first()
                    .and_then(|o| o["apiVersion"].as_str())
                    .map(|av| av.split('/').next().unwrap_or_default().to_string());
                let api_version = group
                    .as_ref()
                    .map_or_else(|| version.to_string(), |g| format!("{g}/{version}"));
                let unmasked_list = list_answer(&api_version, &kind, items.clone());
                ns.kinds.insert(
                    (version.to_string(), kind),
                    KindStore {
                        group: group.unwrap_or_default(),
                        items,
                        unmasked_list,
                    },
                );
            }
        }
        if ns.kinds.is_empty() {
            bail!(
                "{}: no objects-v1beta2.json: run python3 bench/make_namespace.py {} first",
                dir.display(),
                dir.display()
            );
        }
        Ok(ns)
    }

    fn has_version(&self, version: &str) -> bool {
        self.kinds.keys().any(|(v, _)| v == version)
    }

    fn kind(&self, version: &str, kind: &str) -> Option<&KindStore> {
        self.kinds.get(&(version.to_string(), kind.to_string()))
    }

    fn request(&self, name: &str, release: Release) -> Result<Value> {
        let path = self.dir.join(format!("request-{name}.json"));
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let mut request: Value = serde_json::from_str(&text)?;
        if release.preferred() == V1 {
            // the same request as a v1beta1-only API server sends it
            for field in ["kind", "requestKind", "resource", "requestResource"] {
                if let Some(v) = request[field].get_mut("version") {
                    *v = json!(V1);
                }
            }
            for field in ["object", "oldObject"] {
                if let Some(av) = request[field].get_mut("apiVersion") {
                    *av = json!(av.as_str().unwrap_or_default().replace(V2, V1));
                }
            }
        }
        Ok(request)
    }
}

fn list_answer(api_version: &str, kind: &str, items: Vec<Value>) -> Vec<u8> {
    kube::list_answer(api_version, kind, "4711", items)
        .to_string()
        .into_bytes()
}

/// What the bench host counts for one evaluation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Traffic {
    calls: u64,
    bytes: u64,
}

/// The bench's API server: answers the policy's calls from a [`Namespace`] for one release line,
/// honouring or ignoring the field masks, and counts calls and bytes.
struct BenchApi {
    ns: Arc<Namespace>,
    release: Release,
    honour_masks: bool,
    masked_lists: HashMap<(String, String, BTreeSet<String>), Vec<u8>>,
    traffic: Arc<Mutex<Traffic>>,
}

impl Responder for BenchApi {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        lock(&self.traffic).calls += 1;
        let answer = match request {
            KubeRequest::KubernetesListResourceNamespace(r) => {
                let masks = r.field_masks.as_ref().filter(|_| self.honour_masks);
                self.list(&r.api_version, &r.kind, &r.namespace, masks)
            }
            KubeRequest::KubernetesListResourceAll(r)
                if (r.api_version.as_str(), r.kind.as_str())
                    == (kube::CRD_API_VERSION, kube::CRD_KIND) =>
            {
                let masks = r.field_masks.as_ref().filter(|_| self.honour_masks);
                Ok(kube::crd_list(&self.crds(), masks).to_string().into_bytes())
            }
            KubeRequest::KubernetesListResourceAll(r) => {
                let masks = r.field_masks.as_ref().filter(|_| self.honour_masks);
                let ns = self.ns.name.clone();
                self.list(&r.api_version, &r.kind, &ns, masks)
            }
            KubeRequest::KubernetesGetResource(r) => self.get(
                &r.api_version,
                &r.kind,
                &r.name,
                r.namespace.as_deref(),
                r.field_masks.as_ref(),
            ),
        }?;
        lock(&self.traffic).bytes += answer.len() as u64;
        Ok(answer)
    }
}

impl BenchApi {
    /// The version part of `api_version` when the release serves it, else the host's error.
    fn served<'r>(&self, api_version: &'r str, kind: &str) -> Result<&'r str, String> {
        let version = api_version.rsplit('/').next().unwrap_or_default();
        if self.release.serves(version) && self.ns.has_version(version) {
            Ok(version)
        } else {
            Err(kube::no_such_kind(api_version, kind))
        }
    }

    /// The CRDs of the kinds the namespace has objects of, at the versions this release serves.
    fn crds(&self) -> Vec<Crd> {
        let mut crds: Vec<Crd> = Vec::new();
        let mut keys: Vec<_> = self.ns.kinds.keys().collect();
        keys.sort();
        for (version, kind) in keys {
            let store = &self.ns.kinds[&(version.clone(), kind.clone())];
            if !self.release.serves(version) || store.group.is_empty() {
                continue;
            }
            match crds.iter_mut().find(|c| &c.kind == kind) {
                Some(crd) => crd.versions.push((version.clone(), true)),
                None => crds.push(Crd {
                    group: store.group.clone(),
                    kind: kind.clone(),
                    versions: vec![(version.clone(), true)],
                }),
            }
        }
        crds
    }

    fn list(
        &mut self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let version = self.served(api_version, kind)?.to_string();
        let ns = self.ns.clone();
        let store = ns
            .kind(&version, kind)
            .ok_or_else(|| kube::no_such_kind(api_version, kind))?;
        if namespace != ns.name {
            return Ok(list_answer(api_version, kind, Vec::new()));
        }
        match masks.filter(|m| !m.is_empty()) {
            None => Ok(store.unmasked_list.clone()),
            Some(masks) => {
                let key = (version, kind.to_string(), masks.clone());
                let list = self.masked_lists.entry(key).or_insert_with(|| {
                    let masked = store
                        .items
                        .iter()
                        .map(|o| kube::apply_masks(o, Some(masks)))
                        .collect();
                    list_answer(api_version, kind, masked)
                });
                Ok(list.clone())
            }
        }
    }

    fn get(
        &self,
        api_version: &str,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let version = self.served(api_version, kind)?;
        let not_found = || kube::no_such_object(api_version, kind, name, namespace);
        if namespace != Some(self.ns.name.as_str()) {
            return Err(not_found());
        }
        let object = self
            .ns
            .kind(version, kind)
            .and_then(|s| s.items.iter().find(|o| o["metadata"]["name"] == name))
            .ok_or_else(not_found)?;
        let answer = kube::apply_masks(object, masks.filter(|_| self.honour_masks));
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

/// A policy loaded with the bench's API server behind its host calls.
struct Bench {
    policy: Policy,
    traffic: Arc<Mutex<Traffic>>,
}

impl Bench {
    fn load(
        module: &PolicyModule,
        allow_list: &BTreeSet<ContextAwareResource>,
        api: BenchApi,
    ) -> Result<Bench> {
        let traffic = api.traffic.clone();
        let state = HostState {
            allow_list: allow_list.clone(),
            responder: Some(Box::new(api)),
            ..Default::default()
        };
        let policy = module.load(state)?;
        let settings = policy.validate_settings(&json!({}));
        if !settings.valid {
            bail!(
                "the policy refuses the default settings: {:?}",
                settings.message
            );
        }
        Ok(Bench { policy, traffic })
    }

    /// One evaluation: the guest call's time in milliseconds, its answer and its traffic.
    fn evaluate(&self, payload: &[u8]) -> Result<(f64, Verdict, Traffic)> {
        *lock(&self.traffic) = Traffic::default();
        let start = Instant::now();
        let answer = self.policy.call("validate", payload);
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        let answer = answer.map_err(|e| anyhow!("the policy failed during validate: {e}"))?;
        let response: ValidationResponse = serde_json::from_slice(&answer)?;
        Ok((elapsed, Verdict::from(&response), *lock(&self.traffic)))
    }

    /// Times `iterations` evaluations after one warm-up; every evaluation must agree.
    fn time(&self, payload: &[u8], iterations: usize) -> Result<Sample> {
        let (_, verdict, traffic) = self.evaluate(payload)?;
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let (ms, v, t) = self.evaluate(payload)?;
            if v != verdict || t != traffic {
                bail!("evaluations disagree: {verdict:?} {traffic:?}, then {v:?} {t:?}");
            }
            times.push(ms);
        }
        Ok(Sample::new(times, verdict, traffic))
    }
}

/// The gist of a policy answer, to check that every configuration decides the same.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Accept,
    Mutate,
    Reject(u16),
}

impl From<&ValidationResponse> for Verdict {
    fn from(response: &ValidationResponse) -> Verdict {
        match (response.accepted, &response.mutated_object) {
            (true, Some(_)) => Verdict::Mutate,
            (true, None) => Verdict::Accept,
            (false, _) => Verdict::Reject(response.code.unwrap_or(0)),
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Accept => f.write_str("accepted"),
            Verdict::Mutate => f.write_str("patched"),
            Verdict::Reject(code) => write!(f, "rejected {code}"),
        }
    }
}

struct Sample {
    p50: f64,
    p99: f64,
    n: usize,
    verdict: Verdict,
    traffic: Traffic,
}

impl Sample {
    fn new(mut times: Vec<f64>, verdict: Verdict, traffic: Traffic) -> Sample {
        times.sort_by(f64::total_cmp);
        Sample {
            p50: percentile(&times, 0.50),
            p99: percentile(&times, 0.99),
            n: times.len(),
            verdict,
            traffic,
        }
    }
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The baseline: the same six lists (and the owning Cluster when something refers to the
/// template) read the straightforward way: no field masks, every answer copied out of the host
/// and parsed whole into `serde_json::Value`, then walked with JSON pointers. It runs natively,
/// without the wasm sandbox, so the ratio to it is conservative.
fn baseline(ns: &Namespace, release: Release, template: &Value) -> Result<(Vec<String>, Traffic)> {
    let version = release.preferred();
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    let node_reuse = template.pointer("/spec/nodeReuse") == Some(&json!(true));
    let mut traffic = Traffic::default();
    let mut referrers = Vec::new();
    let names_template = |r: Option<&Value>| {
        r.is_some_and(|r| {
            let group = r["apiGroup"].as_str().or_else(|| {
                r["apiVersion"]
                    .as_str()
                    .map(|av| av.split('/').next().unwrap_or_default())
            });
            r["kind"] == "Metal3MachineTemplate"
                && r["name"] == name
                && group.is_none_or(|g| g == INFRA)
        })
    };
    for kind in BASELINE_LISTS {
        if kind == "Metal3Machine" && !node_reuse {
            continue;
        }
        let Some(store) = ns.kind(version, kind) else {
            bail!("{}: no {kind} at {version}", ns.dir.display());
        };
        let bytes = store.unmasked_list.clone();
        traffic.calls += 1;
        traffic.bytes += bytes.len() as u64;
        let list: Value = serde_json::from_slice(&bytes)?;
        for item in list["items"].as_array().into_iter().flatten() {
            let deleting = item.pointer("/metadata/deletionTimestamp").is_some();
            let refs: Vec<Option<&Value>> = match kind {
                "MachineDeployment" | "MachineSet" => {
                    let scaled_down = kind == "MachineSet"
                        && item.pointer("/spec/replicas") == Some(&json!(0))
                        && item.pointer("/status/replicas") == Some(&json!(0));
                    if deleting || scaled_down {
                        continue;
                    }
                    vec![
                        item.pointer("/spec/template/spec/infrastructureRef"),
                        item.pointer("/spec/template/spec/bootstrap/configRef"),
                    ]
                }
                "KubeadmControlPlane" | "RKE2ControlPlane" if !deleting => vec![
                    item.pointer("/spec/machineTemplate/infrastructureRef"),
                    item.pointer("/spec/machineTemplate/spec/infrastructureRef"),
                    item.pointer("/spec/infrastructureRef"),
                ],
                "ClusterClass" if !deleting => {
                    let mut refs = vec![];
                    for base in [
                        "/spec/controlPlane/machineInfrastructure",
                        "/spec/infrastructure",
                    ] {
                        refs.push(item.pointer(&format!("{base}/ref")));
                        refs.push(item.pointer(&format!("{base}/templateRef")));
                    }
                    for pool in ["machineDeployments", "machinePools"] {
                        let classes = item.pointer(&format!("/spec/workers/{pool}"));
                        for class in classes.and_then(Value::as_array).into_iter().flatten() {
                            for path in [
                                "/template/infrastructure/ref",
                                "/template/bootstrap/ref",
                                "/infrastructure/templateRef",
                                "/bootstrap/templateRef",
                            ] {
                                refs.push(class.pointer(path));
                            }
                        }
                    }
                    refs
                }
                "Metal3Machine" => {
                    let annotations = &item["metadata"]["annotations"];
                    if annotations["cluster.x-k8s.io/cloned-from-name"] == name
                        && annotations["cluster.x-k8s.io/cloned-from-groupkind"] == GROUPKIND
                    {
                        referrers.push(format!(
                            "{kind} {}",
                            item["metadata"]["name"].as_str().unwrap_or_default()
                        ));
                    }
                    continue;
                }
                _ => continue,
            };
            if refs.into_iter().any(names_template) {
                referrers.push(format!(
                    "{kind} {}",
                    item["metadata"]["name"].as_str().unwrap_or_default()
                ));
            }
        }
    }
    if !referrers.is_empty() {
        let owners = template["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for owner in owners.iter().filter(|o| o["kind"] == "Cluster") {
            let cluster = ns.kind(version, "Cluster").and_then(|s| {
                s.items
                    .iter()
                    .find(|c| c["metadata"]["name"] == owner["name"])
            });
            let bytes = serde_json::to_vec(&cluster)?;
            traffic.calls += 1;
            traffic.bytes += bytes.len() as u64;
            let cluster: Value = serde_json::from_slice(&bytes)?;
            if cluster.pointer("/metadata/deletionTimestamp").is_some() {
                referrers.clear();
            }
        }
    }
    referrers.sort();
    Ok((referrers, traffic))
}

fn time_baseline(ns: &Namespace, template: &Value, iterations: usize) -> Result<(Sample, usize)> {
    let (found, traffic) = baseline(ns, Release::TwoVersions, template)?;
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        let (again, _) = std::hint::black_box(baseline(ns, Release::TwoVersions, template)?);
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        if again != found {
            bail!("the baseline disagrees with itself");
        }
    }
    let verdict = if found.is_empty() {
        Verdict::Accept
    } else {
        Verdict::Reject(409)
    };
    Ok((Sample::new(times, verdict, traffic), found.len()))
}

fn validate_payload(request: &Value) -> Result<Vec<u8>> {
    Ok(ValidateRequest::build(request)?.payload(&json!({})))
}

/// One namespace's results.
struct Row {
    machines: usize,
    delete: Sample,
    unmasked: Sample,
    baseline: Sample,
    create: Sample,
    ignored: Sample,
    /// The DELETE on each of [`Release::ALL`] whose objects the namespace has.
    releases: Vec<Option<(Traffic, Verdict)>>,
}

/// `testhost bench-compare`: for each namespace, times the DELETE of the template with the masks
/// the policy sends, the same with a host that ignores them (whole objects, as the baseline gets),
/// the baseline, the CREATE mutation and an ignored request, on a two-version release; then counts
/// the DELETE's host calls on each release line whose objects the namespace has.
pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    let module = PolicyModule::open(&args.policy)?;
    let allow_list = module.allow_list(true);
    let mut rows = Vec::new();
    for dir in &args.namespaces {
        let started = Instant::now();
        let ns = Arc::new(Namespace::load(dir)?);
        let iterations = args
            .iterations
            .unwrap_or_else(|| (300_000 / ns.machines.max(1)).clamp(10, 200));
        let load = |release: Release, honour_masks: bool| {
            Bench::load(
                &module,
                &allow_list,
                BenchApi {
                    ns: ns.clone(),
                    release,
                    honour_masks,
                    masked_lists: HashMap::new(),
                    traffic: Default::default(),
                },
            )
        };
        let two = Release::TwoVersions;
        let delete_request = ns.request("delete", two)?;
        let delete = validate_payload(&delete_request)?;
        let masked = load(two, true)?;
        let row_delete = masked.time(&delete, iterations)?;
        let create = masked.time(
            &validate_payload(&ns.request("create", two)?)?,
            iterations.max(50),
        )?;
        let ignored = masked.time(
            &validate_payload(&ns.request("ignored", two)?)?,
            iterations.max(50),
        )?;
        drop(masked);
        let unmasked = load(two, false)?.time(&delete, iterations)?;
        let (baseline, found) = time_baseline(&ns, &delete_request["oldObject"], iterations)?;
        if baseline.verdict != row_delete.verdict || unmasked.verdict != row_delete.verdict {
            bail!(
                "{}: the policy ({}, {} without masks) and the baseline ({}, {found} referrers) disagree",
                dir.display(),
                row_delete.verdict,
                unmasked.verdict,
                baseline.verdict
            );
        }
        let mut releases = Vec::new();
        for release in Release::ALL {
            if !ns.has_version(release.preferred()) {
                releases.push(None);
                continue;
            }
            let payload = validate_payload(&ns.request("delete", release)?)?;
            let (_, verdict, traffic) = load(release, true)?.evaluate(&payload)?;
            releases.push(Some((traffic, verdict)));
        }
        eprintln!(
            "{}: {} Metal3Machines, {iterations} evaluations per case, {:.0} s",
            dir.display(),
            ns.machines,
            started.elapsed().as_secs_f64()
        );
        rows.push(Row {
            machines: ns.machines,
            delete: row_delete,
            unmasked,
            baseline,
            create,
            ignored,
            releases,
        });
    }
    print!("{}", render(&rows));
    Ok(ExitCode::SUCCESS)
}

fn kb(bytes: u64) -> String {
    let mb = bytes as f64 / 1e6;
    match bytes {
        10_000_000.. => format!("{mb:.0} MB"),
        1_000_000.. => format!("{mb:.1} MB"),
        _ => format!("{:.0} kB", bytes as f64 / 1e3),
    }
}

/// Milliseconds to about three significant digits: no decimals from 100, one from 1, else two.
fn ms(value: f64) -> String {
    let decimals = usize::from(value < 100.0) + usize::from(value < 1.0);
    format!("{value:.decimals$}")
}

fn p50_p99(sample: &Sample) -> String {
    format!("{} / {}", ms(sample.p50), ms(sample.p99))
}

const DELETES: &str = "Metal3Machines | policy p50 / p99 ms | baseline p50 / p99 ms | ratio (goal <= 0.6) | policy, masks ignored p50 ms | host bytes with masks | without | cut (goal >= 5) | host calls | verdict";
const OTHERS: &str = "Metal3Machines | CREATE mutation p50 / p99 ms | calls | ignored UPDATE p50 / p99 ms | calls | DELETE calls: v1beta1-only | two-version | v1beta2-only";

/// The two Markdown tables (tabled) and the lines after each.
fn render(rows: &[Row]) -> String {
    let mut deletes = Builder::from_iter([DELETES.split(" | ")]);
    let mut others = Builder::from_iter([OTHERS.split(" | ")]);
    for r in rows {
        let (bytes, unmasked_bytes) = (r.delete.traffic.bytes, r.unmasked.traffic.bytes);
        deletes.push_record([
            r.machines.to_string(),
            p50_p99(&r.delete),
            p50_p99(&r.baseline),
            format!("{:.2}", r.delete.p50 / r.baseline.p50),
            ms(r.unmasked.p50),
            kb(bytes),
            kb(unmasked_bytes),
            format!("{:.1}x", unmasked_bytes as f64 / bytes.max(1) as f64),
            r.delete.traffic.calls.to_string(),
            r.delete.verdict.to_string(),
        ]);
        let mut cells = vec![r.machines.to_string()];
        for s in [&r.create, &r.ignored] {
            cells.extend([
                format!("{} ({})", p50_p99(s), s.verdict),
                s.traffic.calls.to_string(),
            ]);
        }
        cells.extend(r.releases.iter().map(|t| match t {
            Some((traffic, verdict)) if *verdict == r.delete.verdict => traffic.calls.to_string(),
            Some((traffic, verdict)) => format!("{} ({verdict})", traffic.calls),
            None => "–".to_string(),
        }));
        others.push_record(cells);
    }
    let mut out = vec![
        "DELETE of a nodeReuse Metal3MachineTemplate still named by one MachineSet and one Metal3Machine (two-version release):".to_string(),
        deletes.build().with(Style::markdown()).to_string(),
    ];
    let steps: Vec<String> = rows
        .windows(2)
        .filter(|w| w[1].machines > w[0].machines)
        .map(|w| {
            let size = w[1].machines as f64 / w[0].machines as f64;
            let policy = w[1].delete.p50 / w[0].delete.p50;
            // the machines this runs on are shared: 25% is within their noise
            let linear = if policy <= size * 1.25 {
                "linear"
            } else {
                "worse than linear"
            };
            format!(
                "{} to {} (objects x{size:.0}): policy x{policy:.1}, baseline x{:.1}, {linear}",
                w[0].machines,
                w[1].machines,
                w[1].baseline.p50 / w[0].baseline.p50,
            )
        })
        .collect();
    if !steps.is_empty() {
        let per_object: Vec<String> = rows
            .iter()
            .map(|r| format!("{:.1}", r.delete.p50 * 1000.0 / r.machines.max(1) as f64))
            .collect();
        out.push(format!(
            "Growth of p50 (linear: within 1.25 times the growth in objects): {}. Policy time per Metal3Machine: {} us.",
            steps.join("; "),
            per_object.join(", ")
        ));
    }
    let samples: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {}", r.machines, r.delete.n))
        .collect();
    out.extend([
        "Other requests, and the DELETE's host calls on each release line (`auto` API versions):".to_string(),
        others.build().with(Style::markdown()).to_string(),
        format!(
            "Timed evaluations per case (after one warm-up): {}; p99 is the nearest rank. \
             \"–\": the namespace has no objects for that release line (make_namespace.py --v1beta1).",
            samples.join(", ")
        ),
    ]);
    out.join("\n\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&values[..10], 0.99), 10.0);
        assert_eq!(percentile(&[7.0], 0.5), 7.0);
    }
}
