//! `testhost bench-compare`: `validate` inside the compiled module against a native baseline on
//! namespaces written by bench/make_namespace.py, all in one run, so that a shared, noisy machine
//! still gives meaningful ratios. See [`compare`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use kubewarden_policy_sdk::host_capabilities::kubernetes::GetResourceRequest;
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{json, Value};
use tabled::{builder::Builder, settings::Style};

use crate::admission::{ValidateRequest, ValidationResponse};
use crate::engine::{Policy, PolicyModule};
use crate::host::{ContextAwareResource, HostState, Responder};
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

/// A release line: the versions of the Cluster API groups it serves, oldest first. Requests
/// arrive at the newest, which is also the version of the baseline's lists.
type Release = &'static [&'static str];
const TWO_VERSIONS: Release = &[V1, V2];
/// The columns of the second table.
const RELEASES: [Release; 3] = [&[V1], TWO_VERSIONS, &[V2]];

fn preferred(release: Release) -> &'static str {
    release[release.len() - 1]
}

/// An objects-<version>.json file.
#[derive(Deserialize)]
struct Objects {
    namespace: String,
    kinds: BTreeMap<String, Vec<Value>>,
}

/// The objects of one kind at one version, and their list answer without masks, made once: the
/// policy server answers from its cache, and the baseline is timed on copying it out.
struct KindStore {
    items: Vec<Value>,
    unmasked_list: Vec<u8>,
}

/// The objects of a namespace at each version make_namespace.py wrote, by (version, kind).
struct Namespace {
    dir: PathBuf,
    name: String,
    machines: usize,
    kinds: BTreeMap<(String, String), KindStore>,
}

/// Where a request names the version of its object.
const VERSIONED: [&str; 6] = [
    "/kind/version",
    "/requestKind/version",
    "/resource/version",
    "/requestResource/version",
    "/object/apiVersion",
    "/oldObject/apiVersion",
];

fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("reading {} (see bench/make_namespace.py)", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))
}

impl Namespace {
    fn load(dir: &Path) -> Result<Namespace> {
        let (mut name, mut kinds) = (String::new(), BTreeMap::new());
        for version in [V2, V1] {
            let path = dir.join(format!("objects-{version}.json"));
            if version == V1 && !path.exists() {
                continue;
            }
            let objects: Objects = read_json(&path)?;
            name = objects.namespace;
            for (kind, items) in objects.kinds {
                // the items' own apiVersion; an empty list has none
                let api_version = (items.first().and_then(|o| o["apiVersion"].as_str()))
                    .map_or_else(|| version.to_string(), |av| av.to_string());
                let unmasked_list = list_answer(&api_version, &kind, items.clone());
                let store = KindStore {
                    items,
                    unmasked_list,
                };
                kinds.insert((version.to_string(), kind), store);
            }
        }
        let machines = kinds.get(&(V2.to_string(), "Metal3Machine".to_string()));
        Ok(Namespace {
            dir: dir.to_path_buf(),
            name,
            machines: machines.map_or(0, |s| s.items.len()),
            kinds,
        })
    }

    fn kind(&self, version: &str, kind: &str) -> Option<&KindStore> {
        self.kinds.get(&(version.to_string(), kind.to_string()))
    }

    /// request-<name>.json (at v1beta2) as `release` sends it.
    fn request(&self, name: &str, release: Release) -> Result<Value> {
        let mut request: Value = read_json(&self.dir.join(format!("request-{name}.json")))?;
        for pointer in VERSIONED {
            if let Some(Value::String(version)) = request.pointer_mut(pointer) {
                *version = version.replace(V2, preferred(release));
            }
        }
        Ok(request)
    }

    /// The `validate` payload of [`Namespace::request`].
    fn payload(&self, name: &str, release: Release) -> Result<Vec<u8>> {
        let request = ValidateRequest::build(&self.request(name, release)?)?;
        let payload = json!({"request": request.value(), "settings": {}});
        Ok(serde_json::to_vec(&payload)?)
    }
}

fn list_answer(api_version: &str, kind: &str, items: Vec<Value>) -> Vec<u8> {
    let list = kube::list_answer(api_version, kind, "4711", items);
    list.to_string().into_bytes()
}

/// What the bench host counts for one evaluation.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Traffic {
    calls: u64,
    bytes: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bench's API server: answers the policy's calls from a [`Namespace`] for one release line,
/// honouring or ignoring the field masks, and counts calls and bytes.
struct BenchApi {
    ns: Arc<Namespace>,
    release: Release,
    honour_masks: bool,
    /// Each masked list is made once, as the policy server's caches hold it.
    masked_lists: HashMap<(String, String, BTreeSet<String>), Vec<u8>>,
    traffic: Arc<Mutex<Traffic>>,
}

impl Responder for BenchApi {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        lock(&self.traffic).calls += 1;
        let answer = match request {
            KubeRequest::KubernetesListResourceAll(r)
                if (r.api_version.as_str(), r.kind.as_str())
                    == (kube::CRD_API_VERSION, kube::CRD_KIND) =>
            {
                let list = kube::crd_list(&self.crds(), self.masks(&r.field_masks));
                Ok(list.to_string().into_bytes())
            }
            KubeRequest::KubernetesListResourceAll(r) => {
                self.list(&r.api_version, &r.kind, None, &r.field_masks)
            }
            KubeRequest::KubernetesListResourceNamespace(r) => {
                self.list(&r.api_version, &r.kind, Some(&r.namespace), &r.field_masks)
            }
            KubeRequest::KubernetesGetResource(r) => self.get(r),
        }?;
        lock(&self.traffic).bytes += answer.len() as u64;
        Ok(answer)
    }
}

impl BenchApi {
    fn masks<'m>(&self, masks: &'m Option<BTreeSet<String>>) -> Option<&'m BTreeSet<String>> {
        masks
            .as_ref()
            .filter(|m| self.honour_masks && !m.is_empty())
    }

    /// The version part of `api_version` when the release and the namespace have it, else the
    /// host's error.
    fn served<'r>(&self, api_version: &'r str, kind: &str) -> Result<&'r str, String> {
        let version = api_version.rsplit('/').next().unwrap_or_default();
        let in_namespace = self.ns.kinds.keys().any(|(v, _)| v == version);
        match self.release.contains(&version) && in_namespace {
            true => Ok(version),
            false => Err(kube::no_such_kind(api_version, kind)),
        }
    }

    /// The CRDs of the kinds the namespace has objects of, at the versions this release serves.
    fn crds(&self) -> Vec<Crd> {
        let mut crds = BTreeMap::new();
        for ((version, kind), store) in &self.ns.kinds {
            let api_version = store.items.first().and_then(|o| o["apiVersion"].as_str());
            let Some((group, _)) = api_version.and_then(|av| av.split_once('/')) else {
                continue;
            };
            if self.release.contains(&version.as_str()) {
                let crd = crds.entry(kind).or_insert_with(|| Crd {
                    group: group.to_string(),
                    kind: kind.clone(),
                    versions: Vec::new(),
                });
                crd.versions.push((version.clone(), true));
            }
        }
        crds.into_values().collect()
    }

    /// A list in the namespace, or in all namespaces (`None`).
    fn list(
        &mut self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        masks: &Option<BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        let version = self.served(api_version, kind)?;
        let not_found = || kube::no_such_kind(api_version, kind);
        let store = self.ns.kind(version, kind).ok_or_else(not_found)?;
        if namespace.is_some_and(|n| n != self.ns.name) {
            return Ok(list_answer(api_version, kind, Vec::new()));
        }
        let Some(masks) = self.masks(masks) else {
            return Ok(store.unmasked_list.clone());
        };
        let key = (version.to_string(), kind.to_string(), masks.clone());
        let list = self.masked_lists.entry(key).or_insert_with(|| {
            let masked = store
                .items
                .iter()
                .map(|o| kube::apply_masks(o, Some(masks)));
            list_answer(api_version, kind, masked.collect())
        });
        Ok(list.clone())
    }

    fn get(&self, r: &GetResourceRequest) -> Result<Vec<u8>, String> {
        let version = self.served(&r.api_version, &r.kind)?;
        let namespace = r.namespace.as_deref();
        let object = (self.ns.kind(version, &r.kind))
            .filter(|_| namespace == Some(self.ns.name.as_str()))
            .and_then(|s| s.items.iter().find(|o| o["metadata"]["name"] == *r.name))
            .ok_or_else(|| kube::no_such_object(&r.api_version, &r.kind, &r.name, namespace))?;
        let answer = kube::apply_masks(object, self.masks(&r.field_masks));
        serde_json::to_vec(&answer).map_err(|e| e.to_string())
    }
}

/// What an evaluation decided, to check that every configuration decides the same.
fn verdict(response: &ValidationResponse) -> String {
    match (response.accepted, &response.mutated_object) {
        (true, Some(_)) => "patched".to_string(),
        (true, None) => "accepted".to_string(),
        (false, _) => format!("rejected {}", response.code.unwrap_or(0)),
    }
}

/// One timed run: its time in milliseconds, its verdict and its traffic.
type Run = (f64, String, Traffic);

struct Sample {
    p50: f64,
    p99: f64,
    verdict: String,
    traffic: Traffic,
}

/// Times `iterations` runs after one warm-up; every run must decide and count as the warm-up did.
fn sample(iterations: usize, mut run: impl FnMut() -> Result<Run>) -> Result<Sample> {
    let (_, verdict, traffic) = run()?;
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let (ms, v, t) = run()?;
        if (&v, t) != (&verdict, traffic) {
            bail!("evaluations disagree: {verdict} {traffic:?}, then {v} {t:?}");
        }
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&times, 0.50), percentile(&times, 0.99));
    Ok(Sample {
        p50,
        p99,
        verdict,
        traffic,
    })
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied().unwrap_or(f64::NAN)
}

/// The lists the baseline reads, in the policy's order, and where their objects name a machine
/// template (JSON pointers; `*` is every element of a list). Metal3Machines name it by their
/// cloned-from annotations instead.
const REFERENCES: [(&str, &[&str]); 6] = [
    ("MachineDeployment", &MACHINE_REFS),
    ("MachineSet", &MACHINE_REFS),
    ("KubeadmControlPlane", &CONTROL_PLANE_REFS),
    ("RKE2ControlPlane", &CONTROL_PLANE_REFS),
    (
        "ClusterClass",
        &[
            "/spec/controlPlane/machineInfrastructure/ref",
            "/spec/controlPlane/machineInfrastructure/templateRef",
            "/spec/infrastructure/ref",
            "/spec/infrastructure/templateRef",
            "/spec/workers/machineDeployments/*/template/infrastructure/ref",
            "/spec/workers/machineDeployments/*/template/bootstrap/ref",
            "/spec/workers/machineDeployments/*/infrastructure/templateRef",
            "/spec/workers/machineDeployments/*/bootstrap/templateRef",
            "/spec/workers/machinePools/*/template/infrastructure/ref",
            "/spec/workers/machinePools/*/template/bootstrap/ref",
            "/spec/workers/machinePools/*/infrastructure/templateRef",
            "/spec/workers/machinePools/*/bootstrap/templateRef",
        ],
    ),
    ("Metal3Machine", &[]),
];
const MACHINE_REFS: [&str; 2] = [
    "/spec/template/spec/infrastructureRef",
    "/spec/template/spec/bootstrap/configRef",
];
const CONTROL_PLANE_REFS: [&str; 3] = [
    "/spec/machineTemplate/infrastructureRef",
    "/spec/machineTemplate/spec/infrastructureRef",
    "/spec/infrastructureRef",
];

/// The values at a [`REFERENCES`] path.
fn lookup<'v>(value: &'v Value, path: &str) -> Vec<&'v Value> {
    let Some((list, rest)) = path.split_once("/*") else {
        return value.pointer(path).into_iter().collect();
    };
    let items = value.pointer(list).and_then(Value::as_array).into_iter();
    items.flatten().flat_map(|v| lookup(v, rest)).collect()
}

/// The baseline: the same lists (and the owning Cluster when something refers to the template)
/// read the straightforward way, at the two-version release: no field masks, every answer copied
/// out of the host and parsed whole into `serde_json::Value`, then walked with JSON pointers. It
/// runs natively, without the wasm sandbox, so the ratio to it is conservative.
fn baseline(ns: &Namespace, template: &Value) -> Result<&'static str> {
    let version = preferred(TWO_VERSIONS);
    let name = template["metadata"]["name"].as_str().unwrap_or_default();
    let node_reuse = template.pointer("/spec/nodeReuse") == Some(&json!(true));
    let names_template = |r: &Value| {
        let group =
            (r["apiGroup"].as_str()).or_else(|| r["apiVersion"].as_str()?.split('/').next());
        r["kind"] == "Metal3MachineTemplate"
            && r["name"] == name
            && group.is_none_or(|g| g == INFRA)
    };
    let mut referrers = 0;
    for (kind, paths) in REFERENCES {
        if kind == "Metal3Machine" && !node_reuse {
            continue;
        }
        let Some(store) = ns.kind(version, kind) else {
            bail!("{}: no {kind} at {version}", ns.dir.display());
        };
        let list: Value = serde_json::from_slice(&store.unmasked_list.clone())?;
        for item in list["items"].as_array().into_iter().flatten() {
            let annotations = &item["metadata"]["annotations"];
            // what is being deleted, or a MachineSet scaled down to nothing, keeps no template
            let gone = item.pointer("/metadata/deletionTimestamp").is_some()
                || (kind == "MachineSet"
                    && item.pointer("/spec/replicas") == Some(&json!(0))
                    && item.pointer("/status/replicas") == Some(&json!(0)));
            let names = match kind {
                // a machine cloned from the template, being deleted or not
                "Metal3Machine" => {
                    annotations["cluster.x-k8s.io/cloned-from-name"] == name
                        && annotations["cluster.x-k8s.io/cloned-from-groupkind"]
                            == format!("Metal3MachineTemplate.{INFRA}")
                }
                _ => {
                    !gone
                        && paths
                            .iter()
                            .flat_map(|p| lookup(item, p))
                            .any(names_template)
                }
            };
            referrers += usize::from(names);
        }
    }
    // a Cluster being deleted takes its templates with it
    if referrers > 0 {
        let owners = template["metadata"]["ownerReferences"]
            .as_array()
            .into_iter();
        for owner in owners.flatten().filter(|o| o["kind"] == "Cluster") {
            let mut clusters = ns
                .kind(version, "Cluster")
                .into_iter()
                .flat_map(|s| &s.items);
            let cluster = clusters.find(|c| c["metadata"]["name"] == owner["name"]);
            let cluster: Value = serde_json::from_slice(&serde_json::to_vec(&cluster)?)?;
            if cluster.pointer("/metadata/deletionTimestamp").is_some() {
                referrers = 0;
            }
        }
    }
    Ok(if referrers == 0 {
        "accepted"
    } else {
        "rejected 409"
    })
}

/// The policy loaded with a [`BenchApi`] behind its host calls, as a function that runs one
/// evaluation and times the guest call alone.
fn load(
    module: &PolicyModule,
    allow_list: &BTreeSet<ContextAwareResource>,
    ns: &Arc<Namespace>,
    release: Release,
    honour_masks: bool,
) -> Result<impl Fn(&[u8]) -> Result<Run>> {
    let traffic = Arc::<Mutex<Traffic>>::default();
    let api = BenchApi {
        ns: ns.clone(),
        release,
        honour_masks,
        masked_lists: HashMap::new(),
        traffic: traffic.clone(),
    };
    let state = HostState {
        allow_list: allow_list.clone(),
        responder: Some(Box::new(api)),
        ..Default::default()
    };
    let policy = Policy::load(&module.wasm, &module.origin, true, state)?;
    let settings = policy.validate_settings(&json!({}));
    if !settings.valid {
        bail!(
            "the policy refuses the default settings: {:?}",
            settings.message
        );
    }
    Ok(move |payload: &[u8]| {
        *lock(&traffic) = Traffic::default();
        let start = Instant::now();
        let answer = policy.call("validate", payload);
        let elapsed = millis(start);
        let answer = answer.map_err(|e| anyhow!("the policy failed during validate: {e}"))?;
        let response: ValidationResponse = serde_json::from_slice(&answer)?;
        Ok((elapsed, verdict(&response), *lock(&traffic)))
    })
}

fn millis(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}

/// One namespace's results: the DELETE with masks, without them and the baseline, the CREATE and
/// the ignored request, and the DELETE's host calls on each release line.
struct Row {
    machines: usize,
    iterations: usize,
    policy: Sample,
    unmasked: Sample,
    native: Sample,
    create: Sample,
    ignored: Sample,
    calls: Vec<String>,
}

/// `testhost bench-compare`: for each namespace, times the DELETE of the template with the masks
/// the policy sends, the same with a host that ignores them (whole objects, as the baseline gets),
/// the baseline, the CREATE mutation and an ignored request, on a two-version release; then counts
/// the DELETE's host calls on each release line whose objects the namespace has.
pub fn compare(args: CompareArgs) -> Result<ExitCode> {
    let module = PolicyModule::open(&args.policy, None)?;
    let allow_list = module.allow_list(true);
    let mut rows = Vec::new();
    for dir in &args.namespaces {
        let started = Instant::now();
        let ns = Arc::new(Namespace::load(dir)?);
        let iterations =
            (args.iterations).unwrap_or_else(|| (300_000 / ns.machines.max(1)).clamp(10, 200));
        let bench = |release, honour_masks| load(&module, &allow_list, &ns, release, honour_masks);
        let two = TWO_VERSIONS;
        let [delete, create, ignored] = ["delete", "create", "ignored"].map(|r| ns.payload(r, two));
        let (delete, create, ignored) = (delete?, create?, ignored?);
        let masked = bench(two, true)?;
        let policy = sample(iterations, || masked(&delete))?;
        let create = sample(iterations.max(50), || masked(&create))?;
        let ignored = sample(iterations.max(50), || masked(&ignored))?;
        drop(masked);
        let whole = bench(two, false)?;
        let unmasked = sample(iterations, || whole(&delete))?;
        // no policy is loaded while the baseline is timed
        drop(whole);
        let template = &ns.request("delete", two)?["oldObject"];
        let native = sample(iterations, || {
            let start = Instant::now();
            let verdict = std::hint::black_box(baseline(&ns, template)?);
            Ok((millis(start), verdict.to_string(), Traffic::default()))
        })?;
        if native.verdict != policy.verdict || unmasked.verdict != policy.verdict {
            bail!(
                "{}: the policy ({}, {} without masks) and the baseline ({}) disagree",
                dir.display(),
                policy.verdict,
                unmasked.verdict,
                native.verdict
            );
        }
        let mut calls = Vec::new();
        for release in RELEASES {
            if !ns.kinds.keys().any(|(v, _)| v == preferred(release)) {
                calls.push("–".to_string());
                continue;
            }
            let payload = ns.payload("delete", release)?;
            let (_, verdict, traffic) = bench(release, true)?(&payload)?;
            // a release line that decides otherwise says so
            calls.push(if verdict == policy.verdict {
                traffic.calls.to_string()
            } else {
                format!("{} ({verdict})", traffic.calls)
            });
        }
        let elapsed = started.elapsed().as_secs_f64();
        let machines = ns.machines;
        eprintln!(
            "{}: {machines} Metal3Machines, {iterations} evaluations per case, {elapsed:.0} s",
            dir.display()
        );
        rows.push(Row {
            machines,
            iterations,
            policy,
            unmasked,
            native,
            create,
            ignored,
            calls,
        });
    }
    print!("{}", render(&rows));
    Ok(ExitCode::SUCCESS)
}

/// The tables and lines docs/performance.md quotes.
fn render(rows: &[Row]) -> String {
    let mut deletes = Builder::from_iter([DELETES.split(" | ")]);
    let mut others = Builder::from_iter([OTHERS.split(" | ")]);
    for row in rows {
        let Row {
            policy,
            unmasked,
            native,
            ..
        } = row;
        let (bytes, unmasked_bytes) = (policy.traffic.bytes, unmasked.traffic.bytes);
        deletes.push_record([
            row.machines.to_string(),
            p50_p99(policy),
            p50_p99(native),
            format!("{:.2}", policy.p50 / native.p50),
            ms(unmasked.p50),
            kb(bytes),
            kb(unmasked_bytes),
            format!("{:.1}x", unmasked_bytes as f64 / bytes.max(1) as f64),
            policy.traffic.calls.to_string(),
            policy.verdict.clone(),
        ]);
        let mut cells = vec![row.machines.to_string()];
        for s in [&row.create, &row.ignored] {
            cells.extend([
                format!("{} ({})", p50_p99(s), s.verdict),
                s.traffic.calls.to_string(),
            ]);
        }
        others.push_record(cells.into_iter().chain(row.calls.iter().cloned()));
    }
    let mut out = vec![
        "DELETE of a nodeReuse Metal3MachineTemplate still named by one MachineSet and one Metal3Machine (two-version release):".to_string(),
        deletes.build().with(Style::markdown()).to_string(),
    ];
    let steps: Vec<String> = rows
        .windows(2)
        .filter(|w| w[1].machines > w[0].machines)
        .map(|w| {
            let [(m0, p0, b0), (m1, p1, b1)] =
                [&w[0], &w[1]].map(|r| (r.machines, r.policy.p50, r.native.p50));
            let (size, policy) = (m1 as f64 / m0 as f64, p1 / p0);
            // the machines this runs on are shared: 25% is within their noise
            let linear = if policy <= size * 1.25 {
                "linear"
            } else {
                "worse than linear"
            };
            format!(
                "{m0} to {m1} (objects x{size:.0}): policy x{policy:.1}, baseline x{:.1}, {linear}",
                b1 / b0
            )
        })
        .collect();
    if !steps.is_empty() {
        let per_object: Vec<String> = (rows.iter())
            .map(|r| format!("{:.1}", r.policy.p50 * 1000.0 / r.machines.max(1) as f64))
            .collect();
        out.push(format!(
            "Growth of p50 (linear: within 1.25 times the growth in objects): {}. Policy time per Metal3Machine: {} us.",
            steps.join("; "),
            per_object.join(", ")
        ));
    }
    let counts: Vec<String> = rows
        .iter()
        .map(|r| format!("{}: {}", r.machines, r.iterations))
        .collect();
    out.extend([
        "Other requests, and the DELETE's host calls on each release line (`auto` API versions):".to_string(),
        others.build().with(Style::markdown()).to_string(),
        format!(
            "Timed evaluations per case (after one warm-up): {}; p99 is the nearest rank. \
             \"–\": the namespace has no objects for that release line (make_namespace.py --v1beta1).",
            counts.join(", ")
        ),
    ]);
    out.join("\n\n") + "\n"
}

const DELETES: &str = "Metal3Machines | policy p50 / p99 ms | baseline p50 / p99 ms | ratio (goal <= 0.6) | policy, masks ignored p50 ms | host bytes with masks | without | cut (goal >= 5) | host calls | verdict";
const OTHERS: &str = "Metal3Machines | CREATE mutation p50 / p99 ms | calls | ignored UPDATE p50 / p99 ms | calls | DELETE calls: v1beta1-only | two-version | v1beta2-only";

fn p50_p99(sample: &Sample) -> String {
    format!("{} / {}", ms(sample.p50), ms(sample.p99))
}

/// Milliseconds to about three significant digits: no decimals from 100, one from 1, else two.
fn ms(value: f64) -> String {
    let decimals = usize::from(value < 100.0) + usize::from(value < 1.0);
    format!("{value:.decimals$}")
}

fn kb(bytes: u64) -> String {
    let mb = bytes as f64 / 1e6;
    match bytes {
        10_000_000.. => format!("{mb:.0} MB"),
        1_000_000.. => format!("{mb:.1} MB"),
        _ => format!("{:.0} kB", bytes as f64 / 1e3),
    }
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
