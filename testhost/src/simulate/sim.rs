//! One seeded run: the event loop that wakes each actor (the deploy tool, the controllers, the
//! lifecycle, template-cleanup) at random times on one [`World`].

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use anyhow::Result;

use super::capm3::Capm3;
use super::cluster::{self, ClusterDeletion};
use super::clusterctl::Clusterctl;
use super::controlplane;
use super::deployer::DeployTool;
use super::gc::GarbageCollector;
use super::machinedeployment;
use super::machineset;
use super::namespace::NamespaceController;
use super::remote::RemoteDeployment;
use super::scenario::{Lifecycle, Metrics, Scenario};
use super::standalone::StandaloneOperator;
use super::template_cleanup::TemplateCleanup;
use super::topology;
use super::world::{Actor, Admit, Controller, WorkQueue, World};
use crate::apiserver::Api;
use crate::apiserver::objects::{HOUR, Kind};

/// Everything settles before this (template-cleanup runs hourly until then).
const HORIZON: u64 = 12 * HOUR;

/// A run of `seed` with `admit` as the admission chain: its scenario, metrics and trace (empty
/// unless `trace`).
pub fn run(
    seed: u64,
    api: Arc<Mutex<Api>>,
    admit: Admit,
    trace: bool,
) -> Result<(Scenario, Metrics, Vec<String>)> {
    let mut w = World::new(seed, api, admit, trace);
    w.build()?;
    let remote = if w.sc.remote_md {
        Some(w.build_remote()?)
    } else {
        None
    };
    w.ev(|| "initial state built".to_string());
    let sc = w.sc.clone();
    // (when, a random tie-break, which actor)
    let mut queue = BinaryHeap::new();
    let mut actors: Vec<Box<dyn Actor>> = Vec::new();
    // the actors and when each first wakes, the draws in this order
    let mut add = |w: &mut World, actor: Box<dyn Actor>, at: u64| {
        let tie = w.rng.next_u64();
        queue.push(Reverse((at, tie, actors.len())));
        actors.push(actor);
    };
    let tool = Box::new(DeployTool::new(sc.deployer));
    add(&mut w, tool, sc.upgrade_at);
    if w.topology() {
        add(&mut w, Box::new(Controller(topology::reconcile)), 5);
    }
    let controllers: [Box<dyn Actor>; 6] = [
        Box::new(WorkQueue {
            kind: Kind::MachineDeployment,
            skip_paused: true,
            reconcile: machinedeployment::reconcile,
            backoff: Default::default(),
        }),
        Box::new(WorkQueue {
            kind: Kind::MachineSet,
            skip_paused: false,
            reconcile: machineset::reconcile,
            backoff: Default::default(),
        }),
        Box::new(Controller(controlplane::reconcile)),
        Box::new(Capm3),
        Box::new(Controller(cluster::reconcile_delete)),
        Box::new(GarbageCollector::default()),
    ];
    for actor in controllers {
        let first = w.rng.range(1, 30);
        add(&mut w, actor, first);
    }
    let lifecycle: Option<Box<dyn Actor>> = match sc.lifecycle {
        Lifecycle::None => None,
        Lifecycle::ClusterDeletion => Some(Box::new(ClusterDeletion)),
        Lifecycle::NamespaceDeletion => Some(Box::new(NamespaceController::default())),
        Lifecycle::Move => Some(Box::new(Clusterctl::default())),
    };
    if let Some(actor) = lifecycle {
        add(&mut w, actor, sc.lifecycle_at);
    }
    add(&mut w, Box::new(TemplateCleanup), sc.template_cleanup_at);
    if let Some(template) = remote {
        let first = w.rng.range(1, 30);
        add(&mut w, Box::new(RemoteDeployment(template)), first);
    }
    if sc.standalone_ms {
        let at = sc.upgrade_at + w.rng.range(0, HOUR);
        add(&mut w, Box::<StandaloneOperator>::default(), at);
    }

    let mut flow_done = None;
    while let Some(Reverse((t, _, index))) = queue.pop() {
        if t > HORIZON {
            break;
        }
        w.now = t;
        if let Some(delay) = actors[index].step(&mut w)? {
            let at = w.now + delay.max(1);
            let tie = w.rng.next_u64();
            queue.push(Reverse((at, tie, index)));
        }
        if flow_done.is_none() && w.flow_finished() {
            flow_done = Some(w.now);
            w.ev(|| "flow finished".to_string());
        }
    }
    w.finish(flow_done);
    Ok((w.sc.clone(), w.m.clone(), w.take_trace()))
}

/// What the tests of the actors share: runs of a seed and the seeds of a flow.
#[cfg(test)]
pub(super) mod testing {
    use std::collections::BTreeSet;

    use serde_json::Value;

    use super::super::rng::Rng;
    use super::super::world::Verdict;
    use super::*;
    use crate::apiserver::objects::{CLUSTER, Obj, Spec};
    // what the actors' tests name their flows by
    pub use super::super::scenario::{Deployer, Lifecycle};

    /// A run of `seed` without the policy, or refusing every template DELETE (as the policy does
    /// for templates in use).
    pub fn run(seed: u64, refuse_deletes: bool) -> (Metrics, Vec<String>) {
        let mut admit = |request: &Value| {
            Ok(Verdict {
                allowed: !refuse_deletes || request["operation"] != "DELETE",
                code: 409,
                message: "in use".to_string(),
                patch: None,
            })
        };
        let (_, metrics, trace) = super::run(seed, Arc::default(), &mut admit, true).unwrap();
        (metrics, trace)
    }

    /// A World of seed 1 that holds only a live Cluster.
    pub fn world(admit: Admit<'_>) -> World<'_> {
        let mut w = World::new(1, Arc::default(), admit, false);
        let cluster = Spec::Cluster { paused: false };
        w.create(Obj::new(Kind::Cluster, CLUSTER, cluster));
        w
    }

    pub fn scenario(seed: u64) -> Scenario {
        Scenario::generate(seed, &mut Rng::new(seed))
    }

    /// The index of a flow: deployer, then lifecycle.
    pub fn flow(deployer: Deployer, lifecycle: Lifecycle) -> u64 {
        let index = Deployer::ALL.iter().position(|d| *d == deployer).unwrap();
        (lifecycle as usize * Deployer::ALL.len() + index) as u64
    }

    /// 20 seeds of a flow.
    pub fn seeds(deployer: Deployer, lifecycle: Lifecycle) -> impl Iterator<Item = u64> {
        let flows = (Deployer::ALL.len() * Lifecycle::ALL.len()) as u64;
        (0..20).map(move |i| i * flows + flow(deployer, lifecycle))
    }

    #[test]
    fn a_seed_replays_exactly() {
        for seed in [3, 7, 40] {
            assert_eq!(run(seed, false), run(seed, false));
        }
    }

    #[test]
    fn every_flow_is_chosen_evenly() {
        let flows = Deployer::ALL.len() * Lifecycle::ALL.len();
        let chosen: BTreeSet<u64> = (0..flows as u64)
            .map(|seed| flow(scenario(seed).deployer, scenario(seed).lifecycle))
            .collect();
        assert_eq!(chosen.len(), flows);
        for d in Deployer::ALL {
            assert!(seeds(d, Lifecycle::Move).all(|seed| scenario(seed).deployer == d));
        }
    }
}
