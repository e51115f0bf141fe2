//! `testhost bench`: times `validate` inside the compiled module on namespaces built from the
//! API server model's objects and served by that model ([`crate::apiserver`]), the one the
//! simulation uses, so the bench sees every referrer kind the simulation renders, at the versions
//! a release serves. See [`bench`].

use std::collections::{BTreeSet, HashMap};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Result, anyhow};
use bench_floor::percentile;
use clap::Args;
use serde_json::json;
use tabled::{builder::Builder, settings::Style};

use crate::admission::{ValidateRequest, ValidationResponse};
use crate::apiserver::objects::*;
use crate::apiserver::render::admission_request;
use crate::apiserver::{Api, ApiHost};
use crate::engine::{Policy, PolicyModule};
use crate::host::{ContextAwareResource, Responder, lock};
use crate::session::KubeRequest;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Metal3Machines in the namespace (repeat the flag for several sizes)
    #[arg(long = "machines", value_name = "N", default_values_t = [1000, 10000])]
    sizes: Vec<usize>,

    /// Timed evaluations per case (default: 300,000 / Metal3Machines, between 10 and 200)
    #[arg(long)]
    iterations: Option<usize>,

    /// Policy module: a path to a .wasm file
    policy: String,

    /// bench-floor's module: the DELETE is also timed against it making the policy's host calls
    #[arg(long, value_name = "WASM")]
    floor: Option<String>,
}

/// The release lines the DELETE's host calls are counted on: Cluster API 1.10 (v1beta1 only),
/// then 1.11 or later with CAPM3 up to 1.12, then with CAPM3 1.13 or later and RKE2 0.22 or
/// later. Timings are taken on the second.
const LINES: [Providers; 3] = [
    Providers::new(false, false, None),
    Providers::new(true, false, None),
    Providers::new(true, true, Some(true)),
];

/// The template the DELETE asks for: owned by the last Cluster, named by its last MachineSet and
/// cloned into that MachineSet's last Metal3Machine, so every referrer list is read to its end.
const TARGET: &str = "target-m3mt";

/// A namespace of `machines` Metal3Machines, as the simulation's controllers leave it: per 100
/// machines a Cluster, its KubeadmControlPlane (its machines left out), a MachineDeployment and
/// ten MachineSets of ten machines, each MachineSet on its own revision of the worker template
/// (nodeReuse), and one ClusterClass.
fn namespace(machines: usize) -> Store {
    let mut s = Store::default();
    let m3mt = Kind::Metal3MachineTemplate;
    let template = |s: &mut Store, name: &str, cluster: &str| {
        let spec = Spec::Template {
            node_reuse: true,
            cleaning: Some("disabled".into()),
        };
        let mut t = Obj::new(m3mt, name, spec);
        t.labels.insert(CLEANUP_LABEL.into(), "true".into());
        t.owner_cluster = Some(cluster.into());
        s.create(t, 0);
        Ref::new(m3mt, name)
    };
    let machine = |s: &mut Store, owner: (Kind, String), from: &Ref, cluster: &str, i: usize| {
        let spec = Spec::Metal3Machine {
            cleaning: Some("disabled".into()),
            ready_at: 0,
            intent: true,
        };
        let mut m = Obj::new(Kind::Metal3Machine, format!("{}-{i}", owner.1), spec);
        m.set_cloned_from(from);
        m.labels.insert(CLUSTER_NAME_LABEL.into(), cluster.into());
        m.finalizers.insert(M3M_FINALIZER.into());
        m.controller = Some(owner);
        s.create(m, 0);
    };
    let clusters = machines.div_ceil(100).max(1);
    for c in 0..clusters {
        let cluster = format!("edge-{c}");
        let last = c + 1 == clusters;
        let spec = Spec::Cluster { paused: false };
        s.create(Obj::new(Kind::Cluster, &cluster, spec), 0);
        let boot = Ref::new(Kind::KubeadmConfigTemplate, format!("{cluster}-bootstrap"));
        let cp_infra = template(&mut s, &format!("{cluster}-cp"), &cluster);
        let cp = Spec::ControlPlane(CpSpec {
            infra: cp_infra.clone(),
            replicas: 3,
            max_surge: 1,
            legacy_ref: false,
        });
        s.create(Obj::new(Kind::KubeadmControlPlane, &cp_infra.name, cp), 0);
        let md = format!("{cluster}-md");
        let mut left = machines.saturating_sub(c * 100).min(100);
        for r in 0..10 {
            let name = if last && r == 9 {
                TARGET.to_string()
            } else {
                format!("{md}-r{r}")
            };
            let infra = template(&mut s, &name, &cluster);
            let n = left.min(10);
            left -= n;
            let spec = Spec::MachineSet(MsSpec {
                infra: infra.clone(),
                bootstrap: boot.clone(),
                replicas: n as u32,
                status_replicas: Some(n as u32),
            });
            let ms_name = format!("{md}-{r}");
            let mut ms = Obj::new(Kind::MachineSet, &ms_name, spec);
            ms.owner_cluster = Some(cluster.clone());
            ms.controller = Some((Kind::MachineDeployment, md.clone()));
            s.create(ms, 0);
            for i in 0..n {
                let owner = (Kind::MachineSet, ms_name.clone());
                machine(&mut s, owner, &infra, &cluster, i);
            }
        }
        // the MachineDeployment has moved on to a revision no MachineSet runs yet, so that the
        // target's referrers are one MachineSet and its machines
        let spec = Spec::MachineDeployment(MdSpec {
            infra: template(&mut s, &format!("{md}-next"), &cluster),
            bootstrap: boot,
            replicas: 10,
            max_surge: 1,
            max_unavailable: 0,
        });
        let mut md_obj = Obj::new(Kind::MachineDeployment, &md, spec);
        md_obj.owner_cluster = Some(cluster.clone());
        s.create(md_obj, 0);
    }
    let worker = |name: &str| Ref::new(m3mt, name);
    let class = Spec::ClusterClass {
        cp_infra: worker("class-cp"),
        workers: vec![Worker {
            class: "pool0".into(),
            infra: worker("class-workers"),
            bootstrap: Ref::new(Kind::KubeadmConfigTemplate, "class-bootstrap"),
        }],
    };
    s.create(Obj::new(Kind::ClusterClass, CLASS, class), 0);
    s
}

/// Calls and bytes the policy's host calls cost.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Traffic {
    calls: u64,
    bytes: u64,
}

/// The API server model, its answers kept like the policy server's caches (the objects
/// do not change during a bench), counting calls and bytes.
struct CachedHost {
    host: ApiHost,
    cache: HashMap<String, Result<Vec<u8>, String>>,
    tally: Arc<Mutex<Traffic>>,
}

impl Responder for CachedHost {
    fn respond(&mut self, request: &KubeRequest) -> Result<Vec<u8>, String> {
        let key = serde_json::to_string(request).map_err(|e| e.to_string())?;
        let host = &mut self.host;
        let answer = self
            .cache
            .entry(key)
            .or_insert_with(|| host.respond(request));
        let mut traffic = lock(&self.tally);
        traffic.calls += 1;
        traffic.bytes += answer.as_ref().map_or(0, |a| a.len() as u64);
        answer.clone()
    }
}

/// The policy, loaded with the API server model for one release line behind its calls.
struct Bench {
    policy: Policy,
    traffic: Arc<Mutex<Traffic>>,
}

impl Bench {
    fn load(
        module: &PolicyModule,
        allow_list: &BTreeSet<ContextAwareResource>,
        store: &Store,
        line: Providers,
        masks: bool,
    ) -> Result<Bench> {
        let mut api = Api::new(line);
        (api.stores[0], api.ignore_masks) = (store.clone(), !masks);
        let traffic = Arc::new(Mutex::new(Traffic::default()));
        let (api, cache, tally) = (Arc::new(Mutex::new(api)), HashMap::new(), traffic.clone());
        let host = ApiHost { api };
        let host = CachedHost { host, cache, tally };
        let policy = module.load_answered_by(allow_list, false, Box::new(host))?;
        Ok(Bench { policy, traffic })
    }

    /// One evaluation: milliseconds, the verdict and the traffic.
    fn evaluate(&self, payload: &[u8]) -> Result<(f64, String, Traffic)> {
        *lock(&self.traffic) = Traffic::default();
        let start = Instant::now();
        let answer = self.policy.call("validate", payload);
        let elapsed = start.elapsed().as_secs_f64() * 1000.0;
        let answer = answer.map_err(|e| anyhow!("the policy failed during validate: {e}"))?;
        let r: ValidationResponse = serde_json::from_slice(&answer)?;
        let verdict = match (r.accepted, &r.mutated_object) {
            (true, Some(_)) => "patched".to_string(),
            (true, None) => "accepted".to_string(),
            (false, _) => format!("rejected {}", r.code.unwrap_or(0)),
        };
        Ok((elapsed, verdict, *lock(&self.traffic)))
    }

    /// Times `iterations` evaluations after one warm-up (which fills the host's cache); every
    /// evaluation must agree.
    fn time(&self, payload: &[u8], iterations: usize) -> Result<Sample> {
        let (_, verdict, traffic) = self.evaluate(payload)?;
        let mut times = Vec::with_capacity(iterations);
        for _ in 0..iterations {
            let (ms, v, t) = self.evaluate(payload)?;
            if v != verdict || t != traffic {
                anyhow::bail!("evaluations disagree: {verdict} {traffic:?}, then {v} {t:?}");
            }
            times.push(ms);
        }
        times.sort_by(f64::total_cmp);
        Ok(Sample {
            p50: percentile(&times, 0.50),
            p99: percentile(&times, 0.99),
            verdict,
            traffic,
        })
    }
}

/// The p50s of the policy on the DELETE, of bench-floor making the policy's host calls (recorded
/// in a warm-up, checked to come back byte for byte with the same traffic) and nothing else, and
/// of it reading their answers too, taking turns; then the policy's ratio to each.
fn against_floors(guard: &Bench, floor: &Bench, delete: &[u8], n: usize) -> Result<String> {
    let record = |bench: &Bench, payload: &[u8]| -> Result<_> {
        bench.policy.with_state(|st| st.record = Some(Vec::new()));
        let (_, _, traffic) = bench.evaluate(payload)?;
        Ok((traffic, bench.policy.with_state(|st| st.record.take())))
    };
    let (traffic, calls) = record(guard, delete)?;
    let calls = calls.unwrap_or_default();
    let [exact, read] = bench_floor::payloads(&calls);
    for payload in [&exact, &read] {
        let same = record(floor, payload)? == (traffic, Some(calls.clone()));
        anyhow::ensure!(same, "bench-floor made other host calls than the policy");
    }
    let runs = [(guard, delete), (floor, &exact), (floor, &read)];
    let times = bench_floor::alternate(3, n, |k| {
        let (ms, _, t) = runs[k].0.evaluate(runs[k].1)?;
        anyhow::ensure!(t == traffic, "the traffic changed: {t:?}");
        Ok(ms)
    })?;
    let [g, f, r] = [0, 1, 2].map(|k| percentile(&times[k], 0.5));
    let ratios = format!("{:.2}x, {:.2}x", g / f, g / r);
    Ok(format!("{} / {} / {} ({ratios})", ms(g), ms(f), ms(r)))
}

struct Sample {
    p50: f64,
    p99: f64,
    verdict: String,
    traffic: Traffic,
}

/// The validate payload of `operation` on `obj`, at the newest version `line` serves.
fn payload(operation: &str, obj: &Obj, line: &Providers) -> Result<Vec<u8>> {
    let version = ["v1beta1", "v1beta2"][usize::from(line.serves(obj.kind, "v1beta2"))];
    let user = "system:serviceaccount:capi-system:capi-manager";
    let (request, _) = admission_request(operation, obj, version, line, "bench", user);
    Ok(ValidateRequest::build(&request)?.payload(&json!({})))
}

/// `testhost bench`: per namespace size, the DELETE of [`TARGET`] with the masks the policy sends
/// and with a host that ignores them, a Metal3Machine CREATE (the mutation) and an UPDATE the
/// policy ignores, on the second of [`LINES`]; then the DELETE's host calls on each line.
pub fn bench(args: BenchArgs) -> Result<ExitCode> {
    let module = PolicyModule::open(&args.policy)?;
    let floor = args.floor.as_deref().map(PolicyModule::open).transpose()?;
    let allow_list = module.allow_list(true);
    let load = |store: &Store, line: Providers, masks: bool| {
        Bench::load(&module, &allow_list, store, line, masks)
    };
    let line = LINES[1];
    let mut table = Builder::from_iter([HEADER.split(" | ")]);
    for &machines in &args.sizes {
        let started = Instant::now();
        let store = namespace(machines);
        let default = (300_000 / machines.max(1)).clamp(10, 200);
        let iterations = args.iterations.unwrap_or(default);
        let missing = || anyhow!("the bench namespace lacks {TARGET} or Metal3Machines");
        let target = store.get(Kind::Metal3MachineTemplate, TARGET);
        let target = target.cloned().ok_or_else(missing)?;
        let last = store.of_kind(Kind::Metal3Machine).last().cloned();
        let last = last.ok_or_else(missing)?;
        let mut new = last.clone();
        new.name = "bench-new".into();
        new.annotations
            .retain(|k, _| k.starts_with("cluster.x-k8s.io/cloned-from"));

        let bench = load(&store, line, true)?;
        let delete = payload("DELETE", &target, &line)?;
        let floor = floor
            .as_ref()
            .map(|f| Bench::load(f, &allow_list, &store, line, true));
        let floors = floor.map(|f| against_floors(&bench, &f?, &delete, iterations));
        let delete = bench.time(&delete, iterations)?;
        let create = bench.time(&payload("CREATE", &new, &line)?, iterations.max(50))?;
        let update = bench.time(&payload("UPDATE", &last, &line)?, iterations.max(50))?;
        drop(bench);
        let unmasked = load(&store, line, false)?;
        let unmasked = unmasked.time(&payload("DELETE", &target, &line)?, iterations)?;
        let mut calls = Vec::new();
        for l in LINES {
            let (_, verdict, t) =
                load(&store, l, true)?.evaluate(&payload("DELETE", &target, &l)?)?;
            let other = (verdict != delete.verdict).then(|| format!(" ({verdict})"));
            calls.push(format!("{}{}", t.calls, other.unwrap_or_default()));
        }
        let (objects, secs) = (store.objects.len(), started.elapsed().as_secs_f64());
        eprintln!("{machines} Metal3Machines ({objects} objects): {iterations} runs, {secs:.0} s");
        let (bytes, whole) = (delete.traffic.bytes, unmasked.traffic.bytes);
        let mut row = vec![
            machines.to_string(),
            objects.to_string(),
            format!("{} ({})", p50_p99(&delete), delete.verdict),
            p50_p99(&unmasked),
            delete.traffic.calls.to_string(),
            kb(bytes),
            kb(whole),
            format!("{:.1}x", whole as f64 / bytes.max(1) as f64),
            with_calls(&create),
            with_calls(&update),
            floors.transpose()?.unwrap_or_else(|| "–".into()),
        ];
        row.extend(calls);
        table.push_record(row);
    }
    println!("{}", table.build().with(Style::markdown()));
    Ok(ExitCode::SUCCESS)
}

const HEADER: &str = "Metal3Machines | objects | DELETE p50 / p99 ms | masks ignored p50 / p99 ms | host calls | bytes with masks | without | cut | CREATE p50 / p99 ms | ignored UPDATE p50 / p99 ms | DELETE / exact floor / reading floor p50 ms | DELETE calls: CAPI 1.10 | CAPI >= 1.11, CAPM3 <= 1.12 | CAPM3 >= 1.13, RKE2 >= 0.22";

fn kb(bytes: u64) -> String {
    match bytes {
        1_000_000.. => format!("{:.1} MB", bytes as f64 / 1e6),
        _ => format!("{:.0} kB", bytes as f64 / 1e3),
    }
}

/// Milliseconds to about three significant digits: no decimals from 100, one from 1, else two.
fn ms(value: f64) -> String {
    let decimals = usize::from(value < 100.0) + usize::from(value < 1.0);
    format!("{value:.decimals$}")
}

fn with_calls(s: &Sample) -> String {
    format!("{} ({}, {} calls)", p50_p99(s), s.verdict, s.traffic.calls)
}

fn p50_p99(sample: &Sample) -> String {
    format!("{} / {}", ms(sample.p50), ms(sample.p99))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_namespace_has_its_machines_and_the_targets_referrers_last() {
        let s = namespace(300);
        let workers = s.of_kind(Kind::Metal3Machine);
        let workers = workers.filter(|m| m.controlled_by(Kind::MachineSet, None));
        assert_eq!(workers.count(), 300);
        assert_eq!(s.of_kind(Kind::Cluster).count(), 3);
        let users: Vec<&Obj> = s
            .of_kind(Kind::MachineSet)
            .filter(|ms| ms.spec.templates()[0].name == TARGET)
            .collect();
        assert_eq!(users.len(), 1);
        assert_eq!(users[0].owner_cluster.as_deref(), Some("edge-2"));
        // the machines cloned from the target are listed last
        let last = s.of_kind(Kind::Metal3Machine).last().unwrap();
        assert_eq!(last.cloned_from().map(String::as_str), Some(TARGET));
    }
}
