//! `testhost simulate`: seeded lifecycle simulations of the controllers around the policy.
//!
//! Each worker thread loads policy.wasm once and evaluates every guarded request of its runs in
//! that module, with the policy's default settings (`{}`). Host calls are answered from the
//! simulated cluster ([`api`]); verdicts are read from the AdmissionResponse only. Every seed is
//! run twice: with the policy, and without it (every request allowed, nothing mutated).

mod capm3;
mod cluster;
mod clusterctl;
mod controlplane;
mod create;
mod deployer;
mod gc;
mod machinedeployment;
mod machineset;
mod namespace;
mod remote;
mod rng;
mod scenario;
mod sim;
mod standalone;
mod template_cleanup;
mod topology;
mod verdicts;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Result, anyhow};
use base64::Engine as _;
use serde_json::{Value, json};
use tabled::builder::Builder;
use tabled::settings::{Alignment, Style, object::Columns};

use crate::admission::ValidateRequest;
use crate::engine::{Policy, PolicyModule};

use crate::apiserver::{Api, ApiHost};
use scenario::{Deployer, Lifecycle, Metrics, Scenario};
use world::Verdict;

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

    /// Policy module
    #[arg(default_value = "policy.wasm")]
    policy: String,
}

/// The compiled policy as the admission chain: what the simulated controllers see of its answer
/// is the verdict, the status as one message, and the patch decoded.
fn policy_verdict(policy: &Policy, request: &Value) -> Result<Verdict> {
    let req = ValidateRequest::build(request)?;
    let response = policy.validate(&req, &json!({}));
    let patch = response
        .patch
        .as_ref()
        .map(|b64| -> Result<json_patch::Patch> {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| anyhow!("the policy's patch is not base64: {e}"))?;
            serde_json::from_slice(&bytes)
                .map_err(|e| anyhow!("the policy's patch is not a JSON patch: {e}"))
        });
    let status = response.status.as_ref();
    Ok(Verdict {
        allowed: response.allowed,
        code: status.and_then(|s| s.code).unwrap_or(200),
        message: status.and_then(|s| s.message.clone()).unwrap_or_default(),
        patch: patch.transpose()?,
    })
}

/// A run of `seed`, with the policy (`Some`) or without it: its scenario, metrics and trace.
fn run_seed(
    policy: Option<&Policy>,
    api: &Arc<Mutex<Api>>,
    seed: u64,
    trace: bool,
) -> Result<(Scenario, Metrics, Vec<String>)> {
    let mut admit = |request: &Value| match policy {
        Some(policy) => policy_verdict(policy, request),
        None => Ok(Verdict::ALLOW),
    };
    sim::run(seed, api.clone(), &mut admit, trace)
}

/// One flow's (deploy tool and lifecycle) runs, with and without the policy.
#[derive(Debug, Default)]
struct Flow {
    seeds: u64,
    with: Metrics,
    without: Metrics,
}

impl Flow {
    fn add(&mut self, other: &Flow) {
        self.seeds += other.seeds;
        self.with.add(&other.with);
        self.without.add(&other.without);
    }
}

#[derive(Debug, Default)]
struct Totals {
    failing: BTreeSet<u64>,
    /// by (deployer, lifecycle), in the order of Deployer::ALL and Lifecycle::ALL (as both are
    /// ordered)
    flows: BTreeMap<(Deployer, Lifecycle), Flow>,
}

pub fn run(args: SimulateArgs, verbose: bool) -> Result<ExitCode> {
    let module = PolicyModule::open(&args.policy)?;
    let allow_list = module.allow_list(true);
    // the module as one worker loads it, answered from its own simulated cluster
    let load = || -> Result<(Policy, Arc<Mutex<Api>>)> {
        let api = Arc::new(Mutex::new(Api::default()));
        let host = Box::new(ApiHost { api: api.clone() });
        Ok((module.load_answered_by(&allow_list, verbose, host)?, api))
    };

    if let Some(seed) = args.seed {
        let (policy, api) = load()?;
        let mut failed = false;
        for with_policy in [true, false] {
            let (sc, metrics, trace) = run_seed(with_policy.then_some(&policy), &api, seed, true)?;
            let with = if with_policy { "with" } else { "without" };
            println!("seed {seed} {with} the policy: {sc:?}");
            println!("  {}\n  => {metrics:?}\n", trace.join("\n  "));
            failed |= with_policy && metrics.failed(sc.deployer);
        }
        return Ok(ExitCode::from(u8::from(failed)));
    }

    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = AtomicU64::new(args.first_seed);
    let end = args.first_seed + args.seeds;
    let started = Instant::now();
    let totals = std::thread::scope(|scope| -> Result<Totals> {
        let worker = || -> Result<Totals> {
            let (policy, api) = load()?;
            let mut local = Totals::default();
            loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= end {
                    break;
                }
                let (sc, with, _) = run_seed(Some(&policy), &api, seed, false)?;
                let (_, without, _) = run_seed(None, &api, seed, false)?;
                if with.failed(sc.deployer) {
                    local.failing.insert(seed);
                }
                let flow = local.flows.entry((sc.deployer, sc.lifecycle)).or_default();
                flow.seeds += 1;
                flow.with.add(&with);
                flow.without.add(&without);
            }
            Ok(local)
        };
        let handles: Vec<_> = (0..jobs).map(|_| scope.spawn(worker)).collect();
        let mut totals = Totals::default();
        for h in handles {
            let panicked = |_| Err(anyhow!("a simulation worker panicked"));
            let local = h.join().unwrap_or_else(panicked)?;
            totals.failing.extend(local.failing);
            for (key, f) in local.flows {
                totals.flows.entry(key).or_default().add(&f);
            }
        }
        Ok(totals)
    })?;
    let elapsed = started.elapsed().as_secs_f64();
    print_table(&args, &totals, elapsed, jobs);

    if totals.failing.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let (policy, api) = load()?;
    println!(
        "\nFAILED with the policy: {} seed(s): {:?}",
        totals.failing.len(),
        totals.failing.iter().take(50).collect::<Vec<_>>()
    );
    for &seed in totals.failing.iter().take(args.show_failures) {
        let (sc, metrics, trace) = run_seed(Some(&policy), &api, seed, true)?;
        println!(
            "\nseed {seed}: {sc:?}\n  {metrics:?}\n  reproduce: testhost simulate --seed {seed} {}",
            args.policy
        );
        println!("  {}", trace.join("\n  "));
    }
    Ok(ExitCode::from(1))
}

/// `rows` (the header first) as a Markdown table.
fn markdown(rows: Vec<Vec<String>>) -> String {
    let mut table = Builder::from(rows).build();
    table.with(Style::markdown());
    table.modify(Columns::new(1..), Alignment::right());
    table.to_string()
}

fn print_table(args: &SimulateArgs, t: &Totals, elapsed: f64, jobs: usize) {
    let mut all = Flow::default();
    t.flows.values().for_each(|f| all.add(f));
    let header = ["metric", "with policy", "without policy"].map(String::from);
    let rows = all.with.rows().into_iter().zip(all.without.rows());
    let totals = rows.map(|((label, with), (_, without))| {
        [label.to_string(), with.to_string(), without.to_string()]
    });
    let totals = std::iter::once(header).chain(totals).map(Vec::from);
    println!(
        "Lifecycle simulation: seeds {}..{} ({} runs: each seed with and without the policy), {}, settings {{}}",
        args.first_seed,
        args.first_seed + args.seeds,
        all.seeds * 2,
        args.policy
    );
    println!("\n{}\n", markdown(totals.collect()));
    println!("Per flow, with / without the policy (leaks: * = explained, see below):\n");
    let header = ["flow", "seeds", "lost", "stuck", "leaked"].map(String::from);
    let flows = t.flows.iter().map(|((deployer, lifecycle), f)| {
        let star = deployer.on_refusal().explained_leak().map_or("", |_| " *");
        [
            format!("{} {}", deployer.label(), lifecycle.label()),
            f.seeds.to_string(),
            format!("{} / {}", f.with.lost, f.without.lost),
            format!("{} / {}", f.with.stuck, f.without.stuck),
            format!("{} / {}{star}", f.with.leaked, f.without.leaked),
        ]
    });
    let flows = std::iter::once(header).chain(flows).map(Vec::from);
    println!("{}\n", markdown(flows.collect()));
    println!(
        "Explained leaks, by what the tool does with a refused delete (allowed in these flows only; template-cleanup collects them):"
    );
    for d in Deployer::ALL {
        if let (Deployer::Tool(behaviour), Some(why)) = (d, d.on_refusal().explained_leak()) {
            println!("  {behaviour:?}: {why}");
        }
    }
    println!(
        "\n{} runs in {elapsed:.1} s on {jobs} worker(s): {:.0} runs per second",
        all.seeds * 2,
        (all.seeds * 2) as f64 / elapsed.max(1e-9)
    );
}
