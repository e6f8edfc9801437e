//! The optimiser's driver, the phased runner (docs/design-decisions.md, decision 6): it runs
//! the phases declared in `eqfuse_rules::pipeline::PHASES` (simplify → fuse, repeated until
//! its term settles → loops → horizontal), each phase a fresh e-graph built from the term the
//! previous phase extracted, each with node, iteration and time limits and the backoff
//! scheduler. On hitting a limit a phase still
//! extracts the best term found so far, and the report says which limit stopped it.
//!
//! Top-level `let` names follow the classes from phase to phase, so the final program and
//! `explain` name intermediate arrays as the source did. Source positions follow them the
//! same way (a class made by substitution from another takes that one's position when it
//! has none), so that run-time errors of the optimised plan point into the program.

use crate::stop::{Stage, StopReason};
use egg::{Id, Language, RecExpr};
use eqfuse_egraph::{decode, ArrayLang, Encoded, Facts, IdMap, Term, TreeCost};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::Plan;
use eqfuse_ir::Program;
use eqfuse_lower::dag::{CostContext, Search};
use eqfuse_lower::lower::{Lowered, Signature};
use eqfuse_lower::model::{plan_cost, PlanCost};
use eqfuse_rules::pipeline::{rules_of, run_list};
pub use eqfuse_rules::saturate::Variant;
use eqfuse_rules::saturate::{load, saturate, Limits};
use eqfuse_rules::{catalogue, Gas, Rewrite, RuleSets, EG};
use indexmap::IndexMap;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Limits and switches of one optimisation.
#[derive(Clone, Debug)]
pub struct OptimizeOptions {
    /// Most e-nodes a phase's e-graph may hold.
    pub node_limit: usize,
    /// Most iterations per phase.
    pub iter_limit: usize,
    /// Wall-clock limit for the whole optimisation: saturation (within an iteration too),
    /// extraction and the search over what to materialise, the choice among the branches
    /// kept, lowering, loop rolling and decoding all stop at this one deadline with the
    /// best they have (at worst the unfused plan), and the result's `stop_reason` names
    /// the stage ([`Stage`]). The phases stop a little earlier, leaving the stages after
    /// them about as long as encoding and lowering the source took (at most a quarter of
    /// the limit). Only the unfused plan is always made in full (it is the fallback).
    pub time_limit: Duration,
    /// The fusion budget: at most this many fusing rewrites (`None`: unlimited).
    pub fuse_gas: Option<usize>,
    /// Turn on the rules that change float results.
    pub fast_math: bool,
    /// Skip the fusion phases (simplification only).
    pub no_fusion: bool,
    /// The cost model extraction uses (parameters, assumed sizes, search).
    pub cost: CostContext,
    /// The same rules applied otherwise (the confluence properties compare the results).
    pub variant: Variant,
}

impl Default for OptimizeOptions {
    fn default() -> OptimizeOptions {
        OptimizeOptions {
            node_limit: 200_000,
            iter_limit: 200,
            time_limit: Duration::from_secs(10),
            fuse_gas: None,
            fast_math: false,
            no_fusion: false,
            cost: CostContext::default(),
            variant: Variant::default(),
        }
    }
}

/// What one phase did.
#[derive(Clone, Debug)]
pub struct PhaseReport {
    /// `simplify`, `fuse`, `fuse-again` (the fuse phase repeats until its term settles:
    /// the last run changes nothing), `loops` or `horizontal`.
    pub name: &'static str,
    /// Why it stopped: `saturated`, `iteration limit`, `node limit`, `time limit`.
    pub stop_reason: StopReason,
    /// Iterations run.
    pub iterations: usize,
    /// E-nodes at the end.
    pub nodes: usize,
    /// E-classes at the end.
    pub classes: usize,
    /// Seconds spent.
    pub seconds: f64,
    /// How often each rule applied.
    pub rules_fired: IndexMap<String, usize>,
}

/// The result of [`optimize`].
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The final extracted term (a DAG; its last node is the `outputs` root), with the
    /// source `let` names and source positions of its nodes.
    pub term: Term,
    /// The optimised program, decoded (horizontal fusion is written as separate operations).
    pub program: Program,
    /// Each phase's report.
    pub phases: Vec<PhaseReport>,
    /// Rules fired over all phases.
    pub rules_fired: IndexMap<String, usize>,
    /// The stop reason that matters: the first phase that hit a limit, or the stage the
    /// deadline stopped, else `saturated`.
    pub stop_reason: StopReason,
    /// Milliseconds spent optimising.
    pub optimize_ms: f64,
    /// Fusion budget left (`None`: unlimited).
    pub gas_left: Option<usize>,
    /// The analysis the term's e-graphs use (the inputs' types).
    pub facts: Facts,
    /// The source program's own term (one operation per kernel, nothing fused), with its
    /// `let` names and source positions: the baseline `explain` compares with.
    pub source: Term,
    /// The plan the term lowers to (what the executors run).
    pub plan: Plan,
    /// Its predicted cost.
    pub cost: PlanCost,
    /// The source program's plan: one kernel per operation, nothing fused.
    pub unfused_plan: Plan,
    /// Its predicted cost.
    pub unfused_cost: PlanCost,
    /// The cost model's parameter set (its name).
    pub cost_model: String,
}

impl Optimized {
    /// The largest e-graph of any phase: (nodes, classes, total iterations).
    pub fn egraph_size(&self) -> (usize, usize, usize) {
        let nodes = self.phases.iter().map(|p| p.nodes).max().unwrap_or(0);
        let classes = self.phases.iter().map(|p| p.classes).max().unwrap_or(0);
        (nodes, classes, self.phases.iter().map(|p| p.iterations).sum())
    }
}

/// Extracts the best term of `root` as a DAG (one node per class), with the node index of
/// each extracted class: the tree cost, chosen acyclically and closed terms first
/// ([`eqfuse_egraph::extract`]).
fn extract(eg: &EG, root: Id) -> Result<(RecExpr<ArrayLang>, IdMap<usize>)> {
    let tc = TreeCost { egraph: eg };
    let choice = eqfuse_egraph::extract::choose(eg, |_, n, costs| tc.of(n, costs));
    eqfuse_egraph::extract::term_of(eg, &choice, root)
}

/// `a`, unless it is none or `saturated`: then `b` (the first limit that stopped a run is the
/// one reported).
fn first_stop(a: Option<StopReason>, b: StopReason) -> Option<StopReason> {
    match a {
        Some(r) if !r.is_saturated() => Some(r),
        _ => Some(b),
    }
}

/// What saturating a phase's stages left: the e-graph, how often each rule applied, the
/// iterations run, and the first limit that stopped a stage.
struct Saturated {
    egraph: EG,
    fired: IndexMap<String, usize>,
    iterations: usize,
    stop: Option<StopReason>,
}

/// Saturates `egraph` with each of `stages` in turn (each stage the e-graph the one before
/// left), under the round's limits and the phases' deadline.
fn saturate_stages(
    round: &Round<'_>,
    name: &'static str,
    mut egraph: EG,
    stages: &[&[Rewrite]],
) -> Saturated {
    let (opts, deadline) = (round.opts, round.phases_deadline);
    let mut fired: IndexMap<String, usize> = IndexMap::new();
    let mut iterations = 0;
    let mut stop: Option<StopReason> = None;
    for rules in stages {
        if Instant::now() >= deadline {
            stop = first_stop(stop, StopReason::TimeLimit(Stage::Saturation));
            break;
        }
        let runner = saturate(
            egraph,
            rules,
            Limits { node_limit: opts.node_limit, iter_limit: opts.iter_limit },
            &opts.variant,
            deadline,
        );
        for it in &runner.iterations {
            for (r, n) in &it.applied {
                *fired.entry(r.to_string()).or_default() += n;
            }
        }
        for it in &runner.iterations {
            crate::trace::note_secs(name, "iteration", it.total_time, || {
                format!(
                    "(search {:.3}s apply {:.3}s rebuild {:.3}s) {} nodes {} classes, applied {:?}",
                    it.search_time,
                    it.apply_time,
                    it.rebuild_time,
                    it.egraph_nodes,
                    it.egraph_classes,
                    it.applied
                )
            });
        }
        iterations += runner.iterations.len();
        stop = first_stop(stop, runner.stop_reason.as_ref().map_or(StopReason::Saturated, StopReason::from));
        egraph = runner.egraph;
    }
    Saturated { egraph, fired, iterations, stop }
}

/// Runs one phase of `round` on `start`: saturates its stages, then extracts a term for
/// each search of `modes` (past the phases' deadline, fewer). Returns the distinct terms,
/// each with `start`'s names and positions carried over ([`Term::carry`]), and the report.
fn phase(
    round: &Round<'_>,
    name: &'static str,
    stages: &[&[Rewrite]],
    start: &Term,
    modes: &[Search],
) -> Result<(Vec<Term>, PhaseReport)> {
    let (opts, deadline) = (round.opts, round.phases_deadline);
    let started = Instant::now();
    let loaded = load(round.facts, &start.expr);
    let root = *loaded.ids.last().ok_or_else(|| eqfuse_ir::error::internal("empty term"))?;
    let Saturated { egraph, fired, iterations, mut stop } =
        saturate_stages(round, name, loaded.egraph, stages);
    let eg = &egraph;
    let mut outs: Vec<Term> = Vec::new();
    // where no rule fired and the e-graph is the term as loaded (one node per class, none
    // added), every extraction gives the term back: every kernel class has only its
    // kernel node, so it is materialised whatever the search
    let size = start.expr.as_ref().len();
    let unchanged = fired.values().all(|n| *n == 0)
        && eg.total_number_of_nodes() == size
        && eg.number_of_classes() == size;
    if unchanged {
        outs.push(start.clone());
    }
    for mode in modes.iter().filter(|_| !unchanged) {
        // past the deadline, one extraction (its search stops at once) and no other
        if !outs.is_empty() && Instant::now() >= deadline {
            stop = first_stop(stop, StopReason::TimeLimit(Stage::Extraction));
            break;
        }
        let ctx = CostContext { search: *mode, deadline: Some(deadline), ..opts.cost.clone() };
        let t = Instant::now();
        let x = eqfuse_lower::dag::extract(eg, root, &round.sig, &ctx)?;
        crate::trace::note(name, "extract", t, || {
            format!("{mode:?}, {} sets evaluated", x.as_ref().map_or(0, |x| x.evaluated))
        });
        let Some(x) = x else {
            // the deadline passed before a term was extracted
            stop = first_stop(stop, StopReason::TimeLimit(Stage::Extraction));
            break;
        };
        if Instant::now() >= deadline {
            stop = first_stop(stop, StopReason::TimeLimit(Stage::Extraction));
        }
        if outs.iter().any(|t| t.expr == x.term) {
            continue;
        }
        outs.push(start.carry(eg, &loaded.ids, x.term, &x.index));
    }
    if outs.is_empty() {
        // nothing extracted by the deadline: the phase's own term (a valid program, the one
        // the previous phase chose, at worst the source's)
        outs.push(start.clone());
    }
    let report = PhaseReport {
        name,
        stop_reason: stop.unwrap_or(StopReason::Saturated),
        iterations,
        nodes: eg.total_number_of_nodes(),
        classes: eg.number_of_classes(),
        seconds: started.elapsed().as_secs_f64(),
        rules_fired: fired,
    };
    Ok((outs, report))
}

/// How many times the fuse phase may run before its term settles.
const MAX_FUSION_ROUNDS: usize = 3;

/// Optimises a checked program: encode, run the phases, decode.
///
/// ```
/// let p = eqfuse_ir::parse::parse("input xs : f32[n]\ninput ys : f32[n]\noutput d = reduce (+) 0 (map (\\x y -> x * y) xs ys)").unwrap();
/// let c = eqfuse_ir::check::check(&p).unwrap();
/// let opt = eqfuse_optimize::optimize(&c, &Default::default()).unwrap();
/// assert_eq!(opt.stop_reason, "saturated");
/// println!("{}", eqfuse_ir::print::print_program(&opt.program));
/// ```
pub fn optimize(checked: &Checked, opts: &OptimizeOptions) -> Result<Optimized> {
    // version-2 forms the e-graph does not have, in the forms it has (`core`)
    let core = crate::core::to_core(checked)?;
    let checked = core.as_ref().unwrap_or(checked);
    // substitution and decoding recurse over term depth: give them a large stack
    eqfuse_egraph::with_big_stack(|| optimize_here(checked, opts))
}

/// The most rounds of one optimisation: the first, from the source's term, and the rounds
/// that start again from the decoded program of the one before, each kept only where its
/// plan prices lower.
const MAX_ROUNDS: usize = 3;

/// A candidate term (with its names and positions) and the reports of the phases that made
/// it.
struct Branch {
    term: Term,
    reports: Vec<PhaseReport>,
}

/// The phases of one optimisation with their rules, built once from the declared phase list
/// ([`eqfuse_rules::pipeline::PHASES`]): every round applies the same rules (and spends the
/// one fusion budget).
struct Pipeline {
    /// Each phase run: its name, the name of a repeated run, its stages' rules, whether it
    /// repeats until its term settles.
    phases: Vec<(&'static str, &'static str, Vec<Vec<Rewrite>>, bool)>,
}

impl Pipeline {
    fn new(opts: &OptimizeOptions, gas: &Gas) -> Pipeline {
        let sets = RuleSets { fast_math: opts.fast_math };
        let budgeted = catalogue::table(sets, gas);
        let free = catalogue::table(sets, &Gas::unlimited());
        let phases = run_list(!opts.no_fusion, opts.variant.merge_phases)
            .iter()
            .map(|spec| {
                (spec.phase.as_str(), spec.phase.again(), rules_of(spec, &budgeted, &free), spec.repeats)
            })
            .collect();
        Pipeline { phases }
    }

    /// The phases: (name, name of a repeated run, stages, whether it repeats until its term
    /// settles).
    fn phases(&self) -> impl Iterator<Item = (&'static str, &'static str, Vec<&[Rewrite]>, bool)> + '_ {
        self.phases.iter().map(|(name, again, stages, repeats)| {
            (*name, *again, stages.iter().map(Vec::as_slice).collect(), *repeats)
        })
    }
}

/// What a round starts from and works under: the program's signature and facts, the
/// deadlines.
struct Round<'a> {
    sig: Signature<'a>,
    facts: &'a Facts,
    opts: &'a OptimizeOptions,
    /// When the phases stop (the stages after them get the rest).
    phases_deadline: Instant,
    deadline: Instant,
}

/// What a round chose: the term and the reports of its phases, its plan, and the
/// deadline's stop (if it stopped a stage).
struct Chosen {
    branch: Branch,
    plan: Plan,
    late: Option<StopReason>,
}

/// One round: rolls long chains, runs the phases on `start`, lowers and prices every
/// candidate term, and keeps the cheapest; never one priced above `start` itself, lowered
/// as `start_plan`.
fn explore(pipeline: &Pipeline, round: &Round<'_>, start: Term, start_plan: &Plan) -> Result<Chosen> {
    let started = Instant::now();
    let (branches, late) = run_phases(pipeline, round, &start)?;
    crate::trace::note("phases", "done", started, String::new);
    choose(round, branches, start, start_plan, late)
}

/// Runs phase `name` of `round` on every branch: the distinct terms it extracts, each with
/// the reports of the phases that made it.
fn run_phase(
    round: &Round<'_>,
    name: &'static str,
    rules: &[&[Rewrite]],
    modes: &[Search],
    branches: Vec<Branch>,
) -> Result<Vec<Branch>> {
    let mut next: Vec<Branch> = Vec::new();
    for b in branches {
        let (outs, report) = phase(round, name, rules, &b.term, modes)?;
        for term in outs {
            if next.iter().any(|n| n.term.expr == term.expr) {
                continue;
            }
            let mut reports = b.reports.clone();
            reports.push(report.clone());
            next.push(Branch { term, reports });
        }
    }
    Ok(next)
}

/// Long chains rolled before the phases: chains of one map (`preroll.rs`), then unrolled
/// scalar recurrences (`preroll_scalar.rs`); the term and the applications folded.
fn preroll(start: &Term, facts: &Facts) -> Option<(Term, usize)> {
    let maps = crate::preroll::roll(start);
    let base = maps.as_ref().map_or(start, |(t, _)| t);
    let folded = maps.as_ref().map_or(0, |(_, k)| *k);
    match crate::preroll_scalar::roll(base, facts) {
        Some((t, k)) => Some((t, k + folded)),
        None => maps,
    }
}

/// The preroll and the phases of one round, from `start`: the candidate branches, and the
/// deadline's stop where it stopped the phases.
fn run_phases(
    pipeline: &Pipeline,
    round: &Round<'_>,
    start: &Term,
) -> Result<(Vec<Branch>, Option<StopReason>)> {
    let (opts, phases_deadline) = (round.opts, round.phases_deadline);
    // each branch: a term, its names, the reports of the phases that made it. Each fuse
    // round extracts twice (the sharing-aware choice and the fully fused one):
    // horizontal fusion, later, can make fusing everything the better plan (shared work
    // computed once in a multi-output kernel), which the fuse phase cannot see.
    // long chains of one map rolled into loops first: the phases would build an e-graph of
    // tens of nodes per map to reach the same form (`preroll.rs`)
    let t_roll = Instant::now();
    let first = match preroll(start, round.facts) {
        Some((term, folded)) => {
            let report = PhaseReport {
                name: "preroll",
                stop_reason: StopReason::Saturated,
                iterations: 1,
                nodes: term.expr.as_ref().len(),
                classes: term.expr.as_ref().len(),
                seconds: t_roll.elapsed().as_secs_f64(),
                rules_fired: IndexMap::from([("loop-chain".to_string(), folded)]),
            };
            Branch { term, reports: vec![report] }
        }
        None => Branch { term: start.clone(), reports: Vec::new() },
    };
    let mut branches: Vec<Branch> = vec![first];
    // past the deadline no phase starts: the branches so far are kept (at worst the
    // start's own term)
    let mut late: Option<StopReason> = None;
    for (name, again, rules, repeats) in pipeline.phases() {
        if Instant::now() >= phases_deadline {
            late = Some(StopReason::TimeLimit(Stage::Saturation));
            break;
        }
        if !repeats {
            branches = run_phase(round, name, &rules, &[opts.cost.search], branches)?;
            continue;
        }
        // the fuse phase repeats until its term stops changing: a phase extracts one term
        // and the next starts from it alone, and what the extraction dropped (a map form
        // beside its index form) can hide a rewrite the next run finds
        let mut settled: Vec<Branch> = Vec::new();
        for round_no in 0..MAX_FUSION_ROUNDS {
            if round_no > 0 && Instant::now() >= phases_deadline {
                late = Some(StopReason::TimeLimit(Stage::Saturation));
                break;
            }
            let before: Vec<RecExpr<ArrayLang>> = branches.iter().map(|b| b.term.expr.clone()).collect();
            // every round extracts both ways: a fully fused branch re-extracted greedily
            // alone would go back to reading the outputs (`fuse-read` keeps that form too)
            let modes = vec![opts.cost.search, Search::Fused];
            let name = if round_no == 0 { name } else { again };
            let (done, open): (Vec<Branch>, Vec<Branch>) = run_phase(round, name, &rules, &modes, branches)?
                .into_iter()
                .partition(|b| before.contains(&b.term.expr) || round_no + 1 == MAX_FUSION_ROUNDS);
            for b in done {
                if !settled.iter().any(|s| s.term.expr == b.term.expr) {
                    settled.push(b);
                }
            }
            branches = open;
            if branches.is_empty() {
                break;
            }
        }
        settled.extend(branches);
        branches = settled;
    }
    Ok((branches, late))
}

/// The cheapest of `branches` by the price of its plan, each lowered to be priced (past the
/// deadline, the first); never one priced above `start`, lowered as `start_plan`. A branch
/// whose lowering the deadline stopped is not a candidate, and with none lowered the plan
/// is the start's.
fn choose(
    round: &Round<'_>,
    branches: Vec<Branch>,
    start: Term,
    start_plan: &Plan,
    mut late: Option<StopReason>,
) -> Result<Chosen> {
    let (opts, deadline) = (round.opts, round.deadline);
    let t = Instant::now();
    let mut best: Option<(f64, Branch, Plan)> = None;
    let mut first_phases: Option<Vec<PhaseReport>> = None;
    for b in branches {
        if best.is_some() && Instant::now() >= deadline {
            late = first_stop(late, StopReason::TimeLimit(Stage::Choice));
            break;
        }
        first_phases.get_or_insert_with(|| b.reports.clone());
        let plan = if b.term.expr == start.expr {
            start_plan.clone()
        } else {
            match eqfuse_lower::lower::lower_by(&b.term, round.facts, &round.sig, Some(deadline))? {
                Lowered::Plan(p) => p,
                Lowered::Unrolled(p) => {
                    late = first_stop(late, StopReason::TimeLimit(Stage::Rolling));
                    p
                }
                Lowered::Late => {
                    let stage = if best.is_some() { Stage::Choice } else { Stage::Lowering };
                    late = first_stop(late, StopReason::TimeLimit(stage));
                    break;
                }
            }
        };
        let c = plan_cost(&plan, &opts.cost.params, opts.cost.extents()).total;
        if best.as_ref().is_none_or(|(bc, _, _)| c < *bc) {
            best = Some((c, b, plan));
        }
    }
    crate::trace::note("choice", "lower", t, String::new);
    // never a plan priced above the start's: the terms are chosen by the e-graph's costs,
    // and the plan's price knows what the lowering adds (a row block keeps its
    // intermediates per block of rows, unpriced in the e-graph), so a rule order that
    // extracted only a fully fused term could otherwise keep it over the source's own
    // term, lowered to a cheaper row block; a tie keeps the optimised plan
    let start_cost = plan_cost(start_plan, &opts.cost.params, opts.cost.extents()).total;
    let (branch, plan) = match best {
        Some((c, b, plan)) if c <= start_cost => (b, plan),
        Some((_, b, _)) => (Branch { term: start, reports: b.reports }, start_plan.clone()),
        None => (Branch { term: start, reports: first_phases.unwrap_or_default() }, start_plan.clone()),
    };
    Ok(Chosen { branch, plan, late })
}

/// How often each rule fired over `phases`.
fn rules_fired(phases: &[PhaseReport]) -> IndexMap<String, usize> {
    let mut fired: IndexMap<String, usize> = IndexMap::new();
    for p in phases {
        for (r, n) in &p.rules_fired {
            *fired.entry(r.clone()).or_default() += n;
        }
    }
    fired
}

/// The first limit that stopped one of `phases` (none where every phase saturated).
fn first_limit(phases: &[PhaseReport]) -> Option<StopReason> {
    phases.iter().map(|p| p.stop_reason.clone()).find(|s| !s.is_saturated())
}

/// The reports of a later round's phases as one report, `again`.
fn round_report(phases: &[PhaseReport], seconds: f64) -> PhaseReport {
    let rules_fired = rules_fired(phases);
    PhaseReport {
        name: "again",
        stop_reason: first_limit(phases).unwrap_or(StopReason::Saturated),
        iterations: phases.iter().map(|p| p.iterations).sum(),
        nodes: phases.iter().map(|p| p.nodes).max().unwrap_or(0),
        classes: phases.iter().map(|p| p.classes).max().unwrap_or(0),
        seconds,
        rules_fired,
    }
}

fn optimize_here(checked: &Checked, opts: &OptimizeOptions) -> Result<Optimized> {
    let started = Instant::now();
    let deadline = started + opts.time_limit;
    let enc = eqfuse_egraph::encode(checked)?;
    let facts = enc.egraph.analysis.clone();
    let source = source_term(&enc)?;
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    // the unfused plan: reported beside the optimised one, and the plan kept when the
    // deadline leaves no other
    let unfused_plan = eqfuse_lower::lower::lower(&source, &facts, &sig)?;
    crate::trace::note("start", "encode, source term, unfused plan", started, String::new);
    // the phases stop early enough to leave the stages after them (lowering the chosen
    // term, decoding it) about the time encoding and lowering the source took: at most a
    // quarter of the limit
    let reserve = started.elapsed().min(opts.time_limit / 4);
    let phases_deadline = deadline.checked_sub(reserve).unwrap_or(deadline).max(started);
    let gas = opts.fuse_gas.map_or_else(Gas::unlimited, Gas::limited);
    let pipeline = Pipeline::new(opts, &gas);
    let sized = OptimizeOptions { cost: opts.cost.at_signature(&enc.inputs), ..opts.clone() };
    let opts = &sized;
    let first = Round { sig, facts: &facts, opts, phases_deadline, deadline };
    let chosen = explore(&pipeline, &first, source.clone(), &unfused_plan)?;
    let (Branch { mut term, reports: mut phases }, mut plan) = (chosen.branch, chosen.plan);
    let mut stop_reason = first_limit(&phases);
    if let Some(l) = chosen.late {
        stop_reason = first_stop(stop_reason, l);
    }
    // the decoded program (past the deadline, the source program: the same values)
    let t = Instant::now();
    let mut program = if stop_reason.as_ref().is_some_and(|r| r.stage().is_some()) && term.expr == source.expr
    {
        // the deadline left the source's own term: its program is the source program
        checked.program.clone()
    } else if Instant::now() >= deadline {
        stop_reason = first_stop(stop_reason, StopReason::TimeLimit(Stage::Decoding));
        checked.program.clone()
    } else if !decodable(&term) {
        // reductions over groups and tuple `iterate`s have no decoded form yet: the source
        // program computes the same values
        checked.program.clone()
    } else {
        decode_term(&enc, &facts, &term)?
    };
    crate::trace::note("final", "decode", t, String::new);
    let mut facts = facts;
    let mut cost = plan_cost(&plan, &opts.cost.params, opts.cost.extents());
    let mut made = phases.len();
    // later rounds: the decoded program encoded again and optimised again, as a second
    // optimisation of the optimised program would, kept where it prices lower, until one
    // finds nothing cheaper (or the rounds or the time run out). The encoder shares what
    // the chosen term keeps apart (a scan that recomputes an output's element prints as a
    // scan of the output's own `generate`), and a
    // phase starts from one extracted term, so a rewrite hidden by what an extraction
    // dropped can show in the next round; optimising the result again then finds nothing
    // cheaper, whatever order the rules ran in. A first round that left the kernels as
    // they were (what each reads and writes; it changed scalar code only) is not followed
    // by another: there is no fused form for an extraction to have dropped, and a second
    // round over a wide program of independent `map`s is all cost and no gain
    let unchanged = kernel_structure(&plan) == kernel_structure(&unfused_plan);
    for round in 1..MAX_ROUNDS {
        if term.expr == source.expr || Instant::now() >= phases_deadline || !decodable(&term) {
            break;
        }
        let t = Instant::now();
        let Some((enc2, t2, f2, p2)) = round_trip(&program, &facts, &term) else {
            break;
        };
        crate::trace::note("again", "round trip", t, String::new);
        // the decoded program as written is what a second optimisation starts from
        let c2 = plan_cost(&p2, &opts.cost.params, opts.cost.extents());
        if c2.total < cost.total {
            (term, plan, cost) = (t2.clone(), p2.clone(), c2);
            facts = f2.clone();
        }
        if round == 1 && unchanged {
            break;
        }
        let sig2 = Signature { inputs: &enc2.inputs, sizes: &enc2.sizes, outputs: &enc2.outputs };
        let again = Round { sig: sig2, facts: &f2, opts, phases_deadline, deadline };
        let t = Instant::now();
        let chosen = explore(&pipeline, &again, t2, &p2)?;
        let report = round_report(&chosen.branch.reports, t.elapsed().as_secs_f64());
        if let Some(l) = chosen.late {
            stop_reason = first_stop(stop_reason, l);
        }
        if !report.stop_reason.is_saturated() {
            stop_reason = first_stop(stop_reason, report.stop_reason.clone());
        }
        let c3 = plan_cost(&chosen.plan, &opts.cost.params, opts.cost.extents());
        let better = c3.total < cost.total;
        phases.push(report);
        if !better || Instant::now() >= deadline {
            break;
        }
        made = phases.len();
        let t3 = chosen.branch.term;
        program = decode_term(&enc2, &f2, &t3)?;
        (term, plan, cost, facts) = (t3, chosen.plan, c3, f2);
    }
    // the rules that made the chosen term (not those of a round that found nothing cheaper)
    let mut rules_fired = rules_fired(&phases[..made]);
    rules_fired.sort_keys();
    let unfused_cost = plan_cost(&unfused_plan, &opts.cost.params, opts.cost.extents());
    let stop_reason = stop_reason.unwrap_or(StopReason::Saturated);
    Ok(Optimized {
        plan,
        cost,
        unfused_plan,
        unfused_cost,
        cost_model: opts.cost.params.name.clone(),
        term,
        program,
        phases,
        rules_fired,
        stop_reason,
        optimize_ms: started.elapsed().as_secs_f64() * 1e3,
        gas_left: gas.left(),
        facts,
        source,
    })
}

/// What a plan's kernels are, apart from their scalar code: the names of what each one
/// reads and writes (a `map` that became a copy is the same kernel).
fn kernel_structure(plan: &Plan) -> Vec<(Vec<String>, Vec<String>)> {
    let name = |v: eqfuse_ir::plan::ValueId| plan.values[v].name.clone();
    plan.kernels()
        .iter()
        .map(|k| (k.reads().into_iter().map(name).collect(), k.lanes.iter().map(|l| name(l.dst)).collect()))
        .collect()
}

/// `program` (decoded from `term`) checked, encoded and lowered as written: its encoding,
/// its term (its own `let` names, and the positions of `term`'s nodes that it shares: the
/// decoded program's own positions are in a text the user never wrote), facts and plan;
/// `None` where any step fails (the optimised plan stands).
fn round_trip(program: &Program, facts: &Facts, term: &Term) -> Option<(Encoded, Term, Facts, Plan)> {
    let checked = eqfuse_ir::check::check(program).ok()?;
    let enc = eqfuse_egraph::encode(&checked).ok()?;
    let own = source_term(&enc).ok()?;
    // positions: the new term's nodes that are nodes of the old one, found by loading both
    // into one e-graph
    let mut loaded = load(facts, &term.expr);
    let mut ids: Vec<Id> = Vec::with_capacity(own.expr.as_ref().len());
    let mut index: IdMap<usize> = IdMap::default();
    for (j, n) in own.expr.as_ref().iter().enumerate() {
        let id = loaded.egraph.add(n.clone().map_children(|c| ids[usize::from(c)]));
        ids.push(id);
        if !index.contains_key(&id) {
            index.insert(id, j);
        }
    }
    let carried = term.carry(&loaded.egraph, &loaded.ids, own.expr.clone(), &index);
    let t2 = Term { spans: carried.spans, ..own };
    let f2 = enc.egraph.analysis.clone();
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    let plan = eqfuse_lower::lower::lower(&t2, &f2, &sig).ok()?;
    Some((enc, t2, f2, plan))
}

/// The encoded program's own term (extracted with no rule run), with its `let` names and
/// the source positions of its nodes.
fn source_term(enc: &Encoded) -> Result<Term> {
    let (expr, index) = extract(&enc.egraph, enc.root)?;
    Ok(Term::encoded(enc, expr, &index))
}

/// `term` decoded to a program, its shared classes named after the term's `let`s.
/// Whether the decoder writes `term` back as a program: not yet where it holds a reduction
/// or scan over a group, or a projection of a tuple that is not a `multi`'s or a `tuple`'s
/// (an `iterate` over a tuple).
fn decodable(term: &Term) -> bool {
    let nodes = term.expr.as_ref();
    !nodes.iter().any(|n| match n {
        ArrayLang::GReduce(_) | ArrayLang::GScan(_) | ArrayLang::SegCheck(_) => true,
        ArrayLang::Proj([_, x]) => {
            !matches!(nodes[usize::from(*x)], ArrayLang::Multi(_) | ArrayLang::Tuple(_))
        }
        _ => false,
    })
}

fn decode_term(enc: &Encoded, facts: &Facts, term: &Term) -> Result<Program> {
    let loaded = load(facts, &term.expr);
    let root = *loaded.ids.last().ok_or_else(|| eqfuse_ir::error::internal("empty term"))?;
    let lets = term.lets(&loaded.ids);
    // each class holds the node the term chose for it (hash-consing: one per class)
    let chosen: HashMap<Id, ArrayLang> = term
        .expr
        .as_ref()
        .iter()
        .enumerate()
        .map(|(i, n)| {
            (loaded.egraph.find(loaded.ids[i]), n.clone().map_children(|c| loaded.ids[usize::from(c)]))
        })
        .collect();
    let fin = Encoded {
        egraph: loaded.egraph,
        root,
        inputs: enc.inputs.clone(),
        outputs: enc.outputs.clone(),
        sizes: enc.sizes.clone(),
        lets,
        spans: Vec::new(),
    };
    decode(&fin, |id| {
        // a constant class is its literal (folding may have put a node and its operand in
        // one class: `(+ 3 0)` and `3`)
        if let Some(l) = fin.egraph[id].data.constant {
            return ArrayLang::Lit(l);
        }
        chosen.get(&fin.egraph.find(id)).cloned().unwrap_or_else(|| fin.egraph[id].data.best.clone())
    })
}
