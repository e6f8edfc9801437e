//! Saturating an e-graph with a set of rules, as each phase of the optimiser does: a term
//! loaded into a fresh e-graph ([`load`]), the rules run under node, iteration and time
//! limits with the backoff scheduler ([`saturate`]), and the ways to run the same rules
//! otherwise that the confluence properties compare ([`Variant`]). Which rules each phase
//! runs, and what happens between phases (extraction, lowering), is the driver's
//! (`eqfuse-optimize`).

use crate::schedule::SizedBackoff;
use crate::{Rewrite, EG};
use egg::{Id, Language, RecExpr};
use eqfuse_egraph::{ArrayLang, Facts};
use std::time::{Duration, Instant};

/// The limits of one saturation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most e-nodes the e-graph may hold.
    pub node_limit: usize,
    /// Most iterations.
    pub iter_limit: usize,
}

/// Ways to run the same rules otherwise: a saturated run should extract a plan of the same
/// cost whatever they are (the confluence properties check it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Variant {
    /// Shuffle the rules of each phase with this seed.
    pub rule_order_seed: Option<u64>,
    /// egg's simple scheduler instead of the backoff scheduler.
    pub simple_scheduler: bool,
    /// No simplification phase of its own before the fuse phase (which simplifies too).
    pub merge_phases: bool,
}

/// A term loaded into a fresh e-graph, with the class of each of its nodes.
pub struct Loaded {
    /// The e-graph.
    pub egraph: EG,
    /// The class of each node of the term, by node index.
    pub ids: Vec<Id>,
}

/// Loads `term` into a fresh e-graph and starts the rules' state for it ([`crate::context`]).
pub fn load(facts: &Facts, term: &RecExpr<ArrayLang>) -> Loaded {
    let mut egraph = EG::new(facts.clone());
    let mut ids: Vec<Id> = Vec::with_capacity(term.as_ref().len());
    for n in term.as_ref() {
        let m = n.clone().map_children(|c| ids[usize::from(c)]);
        ids.push(egraph.add(m));
    }
    egraph.rebuild();
    crate::context::start(&egraph, ids.clone());
    Loaded { egraph, ids }
}

/// The backoff scheduler's initial match limit (for e-graphs of up to
/// `MATCH_LIMIT / schedule::PER_NODE` nodes; above, it grows with the e-graph).
const MATCH_LIMIT: usize = 2_000;

/// The backoff scheduler's initial ban length, in iterations (egg's default).
const BAN_LENGTH: usize = 5;

/// Runs `rules` on `egraph` until it saturates or a limit stops it.
pub fn saturate(
    egraph: EG,
    rules: &[Rewrite],
    limits: Limits,
    variant: &Variant,
    deadline: Instant,
) -> egg::Runner<ArrayLang, Facts> {
    // egg's own limit ends a millisecond before the deadline, so that when the node rules
    // find nothing because the deadline has passed, egg has stopped for its time limit
    // (and does not take the silence for saturation)
    let left = deadline
        .saturating_duration_since(Instant::now())
        .saturating_sub(Duration::from_millis(1))
        .max(Duration::from_millis(1));
    let mut rules: Vec<Rewrite> = rules.to_vec();
    if let Some(seed) = variant.rule_order_seed {
        shuffle(&mut rules, seed);
    }
    let mut egraph = egraph;
    egraph.analysis.deadline = Some(deadline);
    let runner = egg::Runner::default()
        .with_egraph(egraph)
        .with_node_limit(limits.node_limit)
        .with_iter_limit(limits.iter_limit)
        .with_time_limit(left)
        // a walk's findings are only good for the e-graph it walked: memoised across
        // iterations they would hide a fusion that a later merge makes legal
        .with_hook(|r| {
            crate::context::new_iteration(&r.egraph);
            Ok(())
        });
    if variant.simple_scheduler {
        runner.with_scheduler(egg::SimpleScheduler).run(&rules)
    } else {
        let scheduler = rules.iter().fold(SizedBackoff::new(MATCH_LIMIT, BAN_LENGTH), |s, r| {
            // fusion and beta must not be banned: they only ever finish what another started
            if r.name.as_str().starts_with("fuse-") || r.name.as_str().starts_with("recast-") {
                s.do_not_ban(r.name)
            } else {
                s
            }
        });
        runner.with_scheduler(scheduler).run(&rules)
    }
}

/// Shuffles `v` deterministically by `seed` (xorshift64*, Fisher–Yates).
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        v.swap(i, (r % (i as u64 + 1)) as usize);
    }
}
