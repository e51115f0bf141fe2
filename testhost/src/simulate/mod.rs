//! `testhost simulate`: seeded lifecycle simulations of the controllers around the policy.
//!
//! Each worker thread loads policy.wasm once and evaluates every guarded request of its runs in
//! that module, with the policy's default settings (`{}`). Host calls are answered from the
//! simulated cluster ([`api`]); verdicts are read from the AdmissionResponse only. Every seed is
//! run twice: with the policy, and without it (every request allowed, nothing mutated).

mod api;
mod capm3;
mod cluster;
mod clusterctl;
mod controlplane;
mod deployers;
mod machinedeployment;
mod machineset;
mod rng;
mod scenario;
mod sim;
mod topology;
mod verdicts;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail, Result};
use base64::Engine as _;
use serde_json::{json, Value};

use crate::admission::{AdmissionResponse, ValidateRequest};
use crate::engine::{Policy, PolicyModule};
use crate::host::{ContextAwareResource, HostState};

use api::{Api, Release, SimHost};
use scenario::{Deployer, Lifecycle, Metrics, Scenario};
use sim::{Admit, AllowAll, Sim, Verdict};

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// How many seeds to run (each one with and without the policy)
    #[arg(long, default_value_t = 1000)]
    seeds: u64,

    /// The first seed
    #[arg(long, default_value_t = 0)]
    first_seed: u64,

    /// Run this seed only and print its scenario and event trace, with and without the policy
    #[arg(long)]
    seed: Option<u64>,

    /// Worker threads, each with its own loaded module (default: the number of CPUs)
    #[arg(long)]
    jobs: Option<usize>,

    /// Print the event trace of at most this many failing seeds
    #[arg(long, default_value_t = 3)]
    show_failures: usize,

    /// metadata.yml giving contextAwareResources when the module is not annotated
    #[arg(long, value_name = "FILE")]
    metadata: Option<PathBuf>,

    /// Turn off usage of wasmtime cache
    #[arg(long)]
    disable_wasmtime_cache: bool,

    /// Policy module
    #[arg(default_value = "policy.wasm")]
    policy: String,
}

/// The compiled policy as the admission chain.
struct PolicyAdmit<'p> {
    policy: &'p Policy,
    settings: Value,
}

impl Admit for PolicyAdmit<'_> {
    fn admit(&mut self, request: &Value, _api: &Arc<Mutex<Api>>) -> Result<Verdict> {
        let req = ValidateRequest::build(request)?;
        let response = self.policy.validate(&req, &self.settings);
        Verdict::try_from(&response)
    }
}

/// What the simulated controllers see of an admission answer: the verdict, the status as one
/// message, and the patch decoded.
impl TryFrom<&AdmissionResponse> for Verdict {
    type Error = anyhow::Error;

    fn try_from(response: &AdmissionResponse) -> Result<Verdict> {
        let patch = match &response.patch {
            Some(b64) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| anyhow!("the policy's patch is not base64: {e}"))?;
                Some(
                    serde_json::from_slice::<json_patch::Patch>(&bytes)
                        .map_err(|e| anyhow!("the policy's patch is not a JSON patch: {e}"))?,
                )
            }
            None => None,
        };
        let message = match &response.status {
            Some(status) => format!(
                "({}) {}",
                status.code.map(|c| c.to_string()).unwrap_or_default(),
                status.message.clone().unwrap_or_default()
            ),
            None => String::new(),
        };
        Ok(Verdict {
            allowed: response.allowed,
            message,
            patch,
        })
    }
}

/// One flow's (deploy tool and lifecycle) runs, with and without the policy.
#[derive(Debug, Default)]
struct Flow {
    seeds: u64,
    with: Metrics,
    without: Metrics,
    explained: Option<&'static str>,
}

#[derive(Debug, Default)]
struct Totals {
    with: Metrics,
    without: Metrics,
    runs: u64,
    failing: BTreeSet<u64>,
    /// by (deploy tool, its variant, lifecycle), in the order of Deployer::ALL and Lifecycle::ALL
    flows: BTreeMap<(usize, &'static str, usize), Flow>,
}

impl Totals {
    fn add(&mut self, sc: &Scenario, with: &Metrics, without: &Metrics) {
        let deployer = Deployer::ALL
            .iter()
            .position(|d| d.label() == sc.deployer.label())
            .unwrap_or(0);
        let lifecycle = Lifecycle::ALL
            .iter()
            .position(|l| *l == sc.lifecycle)
            .unwrap_or(0);
        let flow = self
            .flows
            .entry((deployer, sc.deployer.name(), lifecycle))
            .or_default();
        flow.seeds += 1;
        flow.with.add(with);
        flow.without.add(without);
        flow.explained = sc.deployer.explained_leak();
        self.with.add(with);
        self.without.add(without);
        self.runs += 1;
    }

    fn merge(&mut self, other: Totals) {
        self.with.add(&other.with);
        self.without.add(&other.without);
        self.runs += other.runs;
        self.failing.extend(other.failing);
        for (key, f) in other.flows {
            let flow = self.flows.entry(key).or_default();
            flow.seeds += f.seeds;
            flow.with.add(&f.with);
            flow.without.add(&f.without);
            flow.explained = f.explained;
        }
    }
}

struct Shared {
    wasm: Vec<u8>,
    origin: String,
    allow_list: BTreeSet<ContextAwareResource>,
    enable_cache: bool,
    verbose: bool,
}

fn load(shared: &Shared) -> Result<(Policy, Arc<Mutex<Api>>)> {
    let api = Arc::new(Mutex::new(Api::new(Release {
        capi_v1beta2: true,
        metal3_v1beta2: true,
        rke2: None,
    })));
    let state = HostState {
        allow_list: shared.allow_list.clone(),
        verbose: shared.verbose,
        responder: Some(Box::new(SimHost { api: api.clone() })),
        ..Default::default()
    };
    let policy = Policy::load(&shared.wasm, &shared.origin, shared.enable_cache, state)?;
    let validation = policy.validate_settings(&json!({}));
    if !validation.valid {
        bail!(
            "the policy refuses its default settings {{}}: {}",
            validation.message.unwrap_or_default()
        );
    }
    Ok((policy, api))
}

pub fn run(args: SimulateArgs, verbose: bool) -> Result<ExitCode> {
    let module = PolicyModule::open(&args.policy, args.metadata.as_deref())?;
    let allow_list = module.allow_list(true);
    let shared = Shared {
        wasm: module.wasm,
        origin: module.origin,
        allow_list,
        enable_cache: !args.disable_wasmtime_cache,
        verbose,
    };

    if let Some(seed) = args.seed {
        let (policy, api) = load(&shared)?;
        let mut failed = false;
        for with_policy in [true, false] {
            let mut admit_policy = PolicyAdmit {
                policy: &policy,
                settings: json!({}),
            };
            let mut allow = AllowAll;
            let admit: &mut dyn Admit = if with_policy {
                &mut admit_policy
            } else {
                &mut allow
            };
            let mut sim = Sim::new(seed, api.clone(), admit, true);
            let metrics = sim.run()?;
            println!(
                "seed {seed} {} the policy: {}",
                if with_policy { "with" } else { "without" },
                sim.scenario().describe()
            );
            for line in sim.take_trace() {
                println!("  {line}");
            }
            println!("  => {metrics:?}\n");
            failed |= with_policy && metrics.failed(sim.scenario().deployer);
        }
        return Ok(if failed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }

    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = AtomicU64::new(args.first_seed);
    let end = args.first_seed + args.seeds;
    let totals = Mutex::new(Totals::default());
    let started = Instant::now();
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..jobs)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    let (policy, api) = load(&shared)?;
                    let mut local = Totals::default();
                    loop {
                        let seed = next.fetch_add(1, Ordering::Relaxed);
                        if seed >= end {
                            break;
                        }
                        let mut admit = PolicyAdmit {
                            policy: &policy,
                            settings: json!({}),
                        };
                        let mut sim = Sim::new(seed, api.clone(), &mut admit, false);
                        let with = sim.run()?;
                        let scenario = sim.scenario().clone();
                        let mut allow = AllowAll;
                        let without = Sim::new(seed, api.clone(), &mut allow, false).run()?;
                        if with.failed(scenario.deployer) {
                            local.failing.insert(seed);
                        }
                        local.add(&scenario, &with, &without);
                    }
                    totals
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .merge(local);
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a simulation worker panicked")))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let totals = totals
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    print_table(&args, &totals, elapsed, jobs);

    if !totals.failing.is_empty() {
        let (policy, api) = load(&shared)?;
        println!(
            "\nFAILED with the policy: {} seed(s): {:?}",
            totals.failing.len(),
            totals.failing.iter().take(50).collect::<Vec<_>>()
        );
        for seed in totals.failing.iter().take(args.show_failures) {
            let mut admit = PolicyAdmit {
                policy: &policy,
                settings: json!({}),
            };
            let mut sim = Sim::new(*seed, api.clone(), &mut admit, true);
            let metrics = sim.run()?;
            println!(
                "\nseed {seed}: {}\n  {metrics:?}\n  reproduce: testhost simulate --seed {seed} {}",
                sim.scenario().describe(),
                args.policy
            );
            for line in sim.take_trace() {
                println!("  {line}");
            }
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// A table row: label, the value of a run's metrics, whether it must be 0 with the policy.
type Row = (&'static str, fn(&Metrics) -> u64, &'static str);

fn print_table(args: &SimulateArgs, t: &Totals, elapsed: f64, jobs: usize) {
    let rows: [Row; 12] = [
        ("node-reuse decisions lost", |m| m.lost, " (must be 0)"),
        (
            "missing-template reconcile errors",
            |m| m.missing,
            " (must be 0)",
        ),
        ("stuck flows", |m| m.stuck, " (must be 0)"),
        (
            "templates leaked: a delete given up or never made",
            |m| m.leaked,
            " (explained flows only)",
        ),
        (
            "templates left at the end, nothing collected them",
            |m| m.left,
            " (must be 0)",
        ),
        (
            "refused Metal3Machine creates",
            |m| m.refused_creates,
            " (must be 0)",
        ),
        ("refused deletes", |m| m.refused, ""),
        (
            "missing-template errors while the Cluster is being deleted",
            |m| m.missing_cluster_deleting,
            "",
        ),
        ("retries", |m| m.retries, ""),
        ("node-reuse decisions made", |m| m.decisions, ""),
        ("Metal3Machines annotated", |m| m.mutations, ""),
        (
            "guarded requests (evaluations, with the policy)",
            |m| m.admissions,
            "",
        ),
    ];
    println!(
        "Lifecycle simulation: seeds {}..{} ({} runs: each seed with and without the policy), {}, settings {{}}",
        args.first_seed,
        args.first_seed + args.seeds,
        t.runs * 2,
        args.policy
    );
    println!();
    println!("| metric | with policy | without policy |");
    println!("|---|---:|---:|");
    for (label, get, rule) in rows {
        println!("| {label}{rule} | {} | {} |", get(&t.with), get(&t.without));
    }
    println!("| host calls | {} | 0 |", t.with.host_calls);
    println!();
    println!("Per flow, with / without the policy (leaks: * = explained, see below):");
    println!();
    println!("| flow | seeds | lost | stuck | leaked |");
    println!("|---|---:|---:|---:|---:|");
    for ((_, deployer, l), f) in &t.flows {
        println!(
            "| {deployer} {} | {} | {} / {} | {} / {} | {} / {}{} |",
            Lifecycle::ALL.get(*l).map_or("?", |x| x.label()),
            f.seeds,
            f.with.lost,
            f.without.lost,
            f.with.stuck,
            f.without.stuck,
            f.with.leaked,
            f.without.leaked,
            if f.explained.is_some() { " *" } else { "" },
        );
    }
    println!();
    println!("Explained leaks (allowed in these flows only; the clean-up job collects them):");
    let variants = [
        Deployer::Flux { retries: true },
        Deployer::Kustomize { retries: false },
    ];
    for d in Deployer::ALL.into_iter().chain(variants) {
        if let Some(why) = d.explained_leak() {
            println!("  {}: {why}", d.name());
        }
    }
    println!();
    println!(
        "{} runs in {elapsed:.1} s on {jobs} worker(s): {:.0} runs per second",
        t.runs * 2,
        (t.runs * 2) as f64 / elapsed.max(1e-9)
    );
}
