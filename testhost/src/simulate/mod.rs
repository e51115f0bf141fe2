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
use crate::host::HostState;
use crate::metadata::ContextAwareResource;

use api::{Api, Release, SimHost};
use scenario::{Deployer, Lifecycle, Metrics};
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
        let req = ValidateRequest::build(request, false)?;
        let (response, _guest_failed) = self.policy.validate(&req, &self.settings)?;
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

#[derive(Debug, Default)]
struct Totals {
    with: Metrics,
    without: Metrics,
    runs: u64,
    failing: BTreeSet<u64>,
    /// node-reuse decisions lost without the policy, by deployer
    lost_by_deployer: BTreeMap<&'static str, (u64, u64)>,
    flows: BTreeMap<(usize, usize), u64>,
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
    let module = PolicyModule::open(&args.policy, args.metadata.as_deref(), None)?;
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
            failed |= with_policy && metrics.failed();
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
                        let deployer = sim.scenario().deployer;
                        let lifecycle = sim.scenario().lifecycle;
                        let mut allow = AllowAll;
                        let without = Sim::new(seed, api.clone(), &mut allow, false).run()?;
                        if with.failed() {
                            local.failing.insert(seed);
                        }
                        let entry = local.lost_by_deployer.entry(deployer.label()).or_default();
                        entry.0 += with.lost;
                        entry.1 += without.lost;
                        *local
                            .flows
                            .entry((
                                Deployer::ALL
                                    .iter()
                                    .position(|d| *d == deployer)
                                    .unwrap_or(0),
                                Lifecycle::ALL
                                    .iter()
                                    .position(|l| *l == lifecycle)
                                    .unwrap_or(0),
                            ))
                            .or_default() += 1;
                        local.with.add(&with);
                        local.without.add(&without);
                        local.runs += 1;
                    }
                    let mut t = totals
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    t.with.add(&local.with);
                    t.without.add(&local.without);
                    t.runs += local.runs;
                    t.failing.extend(local.failing);
                    for (k, v) in local.lost_by_deployer {
                        let e = t.lost_by_deployer.entry(k).or_default();
                        e.0 += v.0;
                        e.1 += v.1;
                    }
                    for (k, v) in local.flows {
                        *t.flows.entry(k).or_default() += v;
                    }
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
type Row = (&'static str, fn(&Metrics) -> u64, bool);

fn print_table(args: &SimulateArgs, t: &Totals, elapsed: f64, jobs: usize) {
    let rows: [Row; 10] = [
        ("node-reuse decisions lost", |m| m.lost, true),
        ("missing-template reconcile errors", |m| m.missing, true),
        ("stuck flows", |m| m.stuck, true),
        ("leaked templates", |m| m.leaked, true),
        ("refused Metal3Machine creates", |m| m.refused_creates, true),
        ("refused deletes", |m| m.refused, false),
        (
            "missing-template errors while the Cluster is being deleted",
            |m| m.missing_cluster_deleting,
            false,
        ),
        ("retries", |m| m.retries, false),
        ("node-reuse decisions made", |m| m.decisions, false),
        ("Metal3Machines annotated", |m| m.mutations, false),
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
    for (label, get, must_be_zero) in rows {
        println!(
            "| {label}{} | {} | {} |",
            if must_be_zero { " (must be 0)" } else { "" },
            get(&t.with),
            get(&t.without)
        );
    }
    println!(
        "| policy evaluations / host calls | {} / {} | 0 / 0 |",
        t.with.admissions, t.with.host_calls
    );
    println!();
    println!("node-reuse decisions lost, by deployer (with / without the policy):");
    for (deployer, (w, wo)) in &t.lost_by_deployer {
        println!("  {deployer:<24} {w:>6} / {wo}");
    }
    println!();
    let per_flow: Vec<String> = t
        .flows
        .iter()
        .map(|((d, l), n)| {
            format!(
                "{} {}: {n}",
                Deployer::ALL.get(*d).map_or("?", |x| x.label()),
                Lifecycle::ALL.get(*l).map_or("?", |x| x.label())
            )
        })
        .collect();
    println!("seeds per flow: {}", per_flow.join("; "));
    println!(
        "{} runs in {elapsed:.1} s on {jobs} worker(s): {:.0} runs per second",
        t.runs * 2,
        (t.runs * 2) as f64 / elapsed.max(1e-9)
    );
}
