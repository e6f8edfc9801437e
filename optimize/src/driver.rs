//! The optimiser's driver, the phased runner (docs/design-decisions.md, decision 6): simplify → fuse (repeated until its term
//! settles) → loops → horizontal, each phase a fresh e-graph built from the term the previous phase extracted, each with node,
//! iteration and time limits and the backoff scheduler. On hitting a limit a phase still
//! extracts the best term found so far, and the report says which limit stopped it.
//!
//! Top-level `let` names follow the classes from phase to phase, so the final program and
//! `explain` name intermediate arrays as the source did. Source positions follow them the
//! same way (a class made by substitution from another takes that one's position when it
//! has none), so that run-time errors of the optimised plan point into the program.

use crate::stop::{Stage, StopReason};
use crate::Named;
use egg::{Id, Language, RecExpr};
use eqfuse_egraph::{decode, ArrayLang, Encoded, Facts, IdMap, TreeCost};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::Plan;
use eqfuse_ir::Program;
use eqfuse_lower::dag::{CostContext, Search};
use eqfuse_lower::lower::{Lowered, Signature};
use eqfuse_lower::model::{plan_cost, PlanCost};
pub use eqfuse_rules::saturate::Variant;
use eqfuse_rules::saturate::{horizontal_prep, load, saturate, Limits};
use eqfuse_rules::{fusion, horizontal, simplify_rules, Gas, Rewrite, RuleSets, EG};
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
    /// The final extracted term (a DAG; its last node is the `outputs` root).
    pub term: RecExpr<ArrayLang>,
    /// Names of the term's nodes that were top-level `let`s in the source (by node index).
    pub names: HashMap<usize, String>,
    /// Source positions of the term's nodes (by node index), where known.
    pub spans: HashMap<usize, Span>,
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
    /// The source program's own term (one operation per kernel, nothing fused) and its
    /// `let` names: the baseline `explain` compares with.
    pub source: (RecExpr<ArrayLang>, HashMap<usize, String>),
    /// The source positions of the nodes of [`Optimized::source`]'s term.
    pub source_spans: HashMap<usize, Span>,
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

/// Runs one phase on `term`; returns the extracted term, its names, and the report.
#[allow(clippy::too_many_arguments)]
fn phase(
    name: &'static str,
    sig: &Signature<'_>,
    facts: &Facts,
    term: &RecExpr<ArrayLang>,
    names: &HashMap<usize, String>,
    spans: &HashMap<usize, Span>,
    stages: &[&[Rewrite]],
    opts: &OptimizeOptions,
    deadline: Instant,
    modes: &[Search],
) -> Result<(Vec<Named>, PhaseReport)> {
    let started = Instant::now();
    let loaded = load(facts, term);
    let root = *loaded.ids.last().ok_or_else(|| eqfuse_ir::error::internal("empty term"))?;
    let mut egraph = loaded.egraph;
    let mut fired: IndexMap<String, usize> = IndexMap::new();
    let mut iterations = 0;
    let mut stop: Option<StopReason> = None;
    // each stage saturates the e-graph the previous one left
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
    let eg = &egraph;
    let mut outs = Vec::new();
    // where no rule fired and the e-graph is the term as loaded (one node per class, none
    // added), every extraction gives the term back: every kernel class has only its
    // kernel node, so it is materialised whatever the search
    let unchanged = fired.values().all(|n| *n == 0)
        && eg.total_number_of_nodes() == term.as_ref().len()
        && eg.number_of_classes() == term.as_ref().len();
    if unchanged {
        outs.push((term.clone(), names.clone(), spans.clone()));
    }
    for mode in modes.iter().filter(|_| !unchanged) {
        // past the deadline, one extraction (its search stops at once) and no other
        if !outs.is_empty() && Instant::now() >= deadline {
            stop = first_stop(stop, StopReason::TimeLimit(Stage::Extraction));
            break;
        }
        let ctx = CostContext { search: *mode, deadline: Some(deadline), ..opts.cost.clone() };
        let t = Instant::now();
        let x = eqfuse_lower::dag::extract(eg, root, sig, &ctx)?;
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
        if outs.iter().any(|(t, _, _)| *t == x.term) {
            continue;
        }
        // carry the names: source node -> class -> extracted node
        let mut new_names = HashMap::new();
        // in source order, so that of two names for one value the first always wins
        let mut ordered: Vec<(&usize, &String)> = names.iter().collect();
        ordered.sort();
        for (i, n) in ordered {
            if let Some(&c) = loaded.ids.get(*i) {
                if let Some(&j) = x.index.get(&eg.find(c)) {
                    new_names.entry(j).or_insert_with(|| n.clone());
                }
            }
        }
        let new_spans = carry_spans(eg, &loaded.ids, spans, &x.index);
        outs.push((x.term, new_names, new_spans));
    }
    if outs.is_empty() {
        // nothing extracted by the deadline: the phase's own term (a valid program, the one
        // the previous phase chose, at worst the source's)
        outs.push((term.clone(), names.clone(), spans.clone()));
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
    // substitution and decoding recurse over term depth: give them a large stack
    eqfuse_egraph::with_big_stack(|| optimize_here(checked, opts))
}

/// The most rounds of one optimisation: the first, from the source's term, and the rounds
/// that start again from the decoded program of the one before, each kept only where its
/// plan prices lower.
const MAX_ROUNDS: usize = 3;

/// A candidate term: the term, its names, its positions, the reports of the phases that
/// made it.
type Branch = (RecExpr<ArrayLang>, HashMap<usize, String>, HashMap<usize, Span>, Vec<PhaseReport>);

/// The rule sets of one optimisation, built once: every round applies the same rules (and
/// spends the one fusion budget).
struct Pipeline {
    simplify: Vec<Rewrite>,
    fuse: Vec<Rewrite>,
    loops: Vec<Rewrite>,
    horiz_prep: Vec<Rewrite>,
    horiz: Vec<Rewrite>,
    no_fusion: bool,
    merge_phases: bool,
}

impl Pipeline {
    fn new(opts: &OptimizeOptions, gas: &Gas) -> Pipeline {
        let simplify = simplify_rules(RuleSets { fast_math: opts.fast_math });
        // the fuse phase simplifies too: a fusion can open a simplification (`x - x` once
        // two reads of one array are one class) and a simplification can make a fusion
        // legal (a shape's arithmetic folded), in either order
        let mut fuse: Vec<Rewrite> = simplify.clone();
        for r in fusion::rules(gas) {
            if !fuse.iter().any(|m| m.name == r.name) {
                fuse.push(r);
            }
        }
        // the horizontal phase in two stages on one e-graph: first every map gets its index
        // form (and the beta rule finishes it), then the kernels are grouped, so the groups
        // do not depend on whether a map was recast before or after the grouping rule fired
        let horiz_prep = horizontal_prep();
        let mut horiz = horizontal::rules();
        horiz.extend(horiz_prep.iter().cloned());
        Pipeline {
            simplify,
            fuse,
            loops: eqfuse_rules::loops::rules(),
            horiz_prep,
            horiz,
            no_fusion: opts.no_fusion,
            merge_phases: opts.variant.merge_phases,
        }
    }

    /// The phases: (name, stages, whether it repeats until its term settles); a first
    /// simplification alone keeps the fuse phase's e-graph small (the merged variant skips it).
    fn phases(&self) -> Vec<(&'static str, Vec<&[Rewrite]>, bool)> {
        let mut plan: Vec<(&'static str, Vec<&[Rewrite]>, bool)> = Vec::new();
        if self.no_fusion {
            plan.push(("simplify", vec![&self.simplify], false));
            return plan;
        }
        if !self.merge_phases {
            plan.push(("simplify", vec![&self.simplify], false));
        }
        plan.push(("fuse", vec![&self.fuse], true));
        plan.push(("loops", vec![&self.loops], false));
        plan.push(("horizontal", vec![&self.horiz_prep, &self.horiz], false));
        plan
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
fn explore(pipeline: &Pipeline, round: &Round<'_>, start: Named, start_plan: &Plan) -> Result<Chosen> {
    let (sig, facts, opts) = (&round.sig, round.facts, round.opts);
    let (phases_deadline, deadline) = (round.phases_deadline, round.deadline);
    let started = Instant::now();
    let run = |name: &'static str, rules: &[&[Rewrite]], modes: &[Search], branches: Vec<Branch>| {
        let mut next: Vec<Branch> = Vec::new();
        for (term, names, spans, reports) in branches {
            let (outs, report) =
                phase(name, sig, facts, &term, &names, &spans, rules, opts, phases_deadline, modes)?;
            for (t, n, sp) in outs {
                if next.iter().any(|(t2, _, _, _)| *t2 == t) {
                    continue;
                }
                let mut r = reports.clone();
                r.push(report.clone());
                next.push((t, n, sp, r));
            }
        }
        Ok::<_, Error>(next)
    };
    // each branch: a term, its names, the reports of the phases that made it. Each fuse
    // round extracts twice (the sharing-aware choice and the fully fused one):
    // horizontal fusion, later, can make fusing everything the better plan (shared work
    // computed once in a multi-output kernel), which the fuse phase cannot see.
    // long chains of one map rolled into loops first: the phases would build an e-graph of
    // tens of nodes per map to reach the same form (`preroll.rs`)
    let t_roll = Instant::now();
    let (term0, names0, spans0) = start;
    let first: Branch = match crate::preroll::roll(&term0, &names0, &spans0) {
        Some(((t, n, sp), folded)) => {
            let report = PhaseReport {
                name: "preroll",
                stop_reason: StopReason::Saturated,
                iterations: 1,
                nodes: t.as_ref().len(),
                classes: t.as_ref().len(),
                seconds: t_roll.elapsed().as_secs_f64(),
                rules_fired: IndexMap::from([("loop-chain".to_string(), folded)]),
            };
            (t, n, sp, vec![report])
        }
        None => (term0.clone(), names0.clone(), spans0.clone(), Vec::new()),
    };
    let mut branches: Vec<Branch> = vec![first];
    // past the deadline no phase starts: the branches so far are kept (at worst the
    // start's own term)
    let mut late: Option<StopReason> = None;
    for (name, rules, repeats) in pipeline.phases() {
        if Instant::now() >= phases_deadline {
            late = Some(StopReason::TimeLimit(Stage::Saturation));
            break;
        }
        if !repeats {
            branches = run(name, &rules, &[opts.cost.search], branches)?;
            continue;
        }
        // the fuse phase repeats until its term stops changing: a phase extracts one term
        // and the next starts from it alone, and what the extraction dropped (a map form
        // beside its index form) can hide a rewrite the next run finds
        let mut settled: Vec<Branch> = Vec::new();
        for round in 0..MAX_FUSION_ROUNDS {
            if round > 0 && Instant::now() >= phases_deadline {
                late = Some(StopReason::TimeLimit(Stage::Saturation));
                break;
            }
            let before: Vec<RecExpr<ArrayLang>> = branches.iter().map(|b| b.0.clone()).collect();
            // every round extracts both ways: a fully fused branch re-extracted greedily
            // alone would go back to reading the outputs (`fuse-read` keeps that form too)
            let modes = vec![opts.cost.search, Search::Fused];
            let name = if round == 0 { name } else { "fuse-again" };
            let (done, open): (Vec<Branch>, Vec<Branch>) = run(name, &rules, &modes, branches)?
                .into_iter()
                .partition(|b| before.contains(&b.0) || round + 1 == MAX_FUSION_ROUNDS);
            for b in done {
                if !settled.iter().any(|s| s.0 == b.0) {
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
    crate::trace::note("phases", "done", started, String::new);
    let t = Instant::now();
    // the cheapest branch (past the deadline, the first: each is lowered to be priced);
    // one whose lowering the deadline stopped is not a candidate, and with none lowered
    // the plan is the start's
    let mut best: Option<(f64, Branch, Plan)> = None;
    let mut first_phases: Option<Vec<PhaseReport>> = None;
    for b in branches {
        if best.is_some() && Instant::now() >= deadline {
            late = first_stop(late, StopReason::TimeLimit(Stage::Choice));
            break;
        }
        first_phases.get_or_insert_with(|| b.3.clone());
        let plan = if b.0 == term0 {
            start_plan.clone()
        } else {
            match eqfuse_lower::lower::lower_by(&b.0, facts, &b.1, &b.2, sig, Some(deadline))? {
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
        let c = plan_cost(&plan, &opts.cost.params, &opts.cost.sizes).total;
        if best.as_ref().is_none_or(|(bc, _, _)| c < *bc) {
            best = Some((c, b, plan));
        }
    }
    crate::trace::note("choice", "lower", t, String::new);
    // never a plan priced above the start's: the terms are chosen by the e-graph's costs,
    // and the plan's price knows what the lowering adds (a row block keeps its
    // intermediates per block of rows, unpriced in the e-graph), so a rule order that
    // extracted only a fully fused term could otherwise keep it over the source's own
    // term, lowered to a cheaper row block (seeds 70, 84, 106 and 121 of the confluence
    // property); a tie keeps the optimised plan
    let start_cost = plan_cost(start_plan, &opts.cost.params, &opts.cost.sizes).total;
    let (branch, plan) = match best {
        Some((c, b, plan)) if c <= start_cost => (b, plan),
        Some((_, b, _)) => ((term0, names0, spans0, b.3), start_plan.clone()),
        None => ((term0, names0, spans0, first_phases.unwrap_or_default()), start_plan.clone()),
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
    let (term0, names0, spans0) = source_term(&enc)?;
    let source = (term0.clone(), names0.clone());
    let source_spans = spans0.clone();
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    // the unfused plan: reported beside the optimised one, and the plan kept when the
    // deadline leaves no other
    let unfused_plan = eqfuse_lower::lower::lower_spanned(&source.0, &facts, &source.1, &source_spans, &sig)?;
    crate::trace::note("start", "encode, source term, unfused plan", started, String::new);
    // the phases stop early enough to leave the stages after them (lowering the chosen
    // term, decoding it) about the time encoding and lowering the source took: at most a
    // quarter of the limit
    let reserve = started.elapsed().min(opts.time_limit / 4);
    let phases_deadline = deadline.checked_sub(reserve).unwrap_or(deadline).max(started);
    let gas = opts.fuse_gas.map_or_else(Gas::unlimited, Gas::limited);
    let pipeline = Pipeline::new(opts, &gas);
    let sized = OptimizeOptions {
        cost: CostContext {
            sizes: eqfuse_lower::model::default_sizes(&enc.inputs, &opts.cost.sizes),
            ..opts.cost.clone()
        },
        ..opts.clone()
    };
    let opts = &sized;
    let first = Round { sig, facts: &facts, opts, phases_deadline, deadline };
    let chosen = explore(&pipeline, &first, (term0, names0, spans0), &unfused_plan)?;
    let ((mut term, mut names, mut spans, mut phases), mut plan) = (chosen.branch, chosen.plan);
    let mut stop_reason = first_limit(&phases);
    if let Some(l) = chosen.late {
        stop_reason = first_stop(stop_reason, l);
    }
    // the decoded program (past the deadline, the source program: the same values)
    let t = Instant::now();
    let mut program = if stop_reason.as_ref().is_some_and(|r| r.stage().is_some()) && term == source.0 {
        // the deadline left the source's own term: its program is the source program
        checked.program.clone()
    } else if Instant::now() >= deadline {
        stop_reason = first_stop(stop_reason, StopReason::TimeLimit(Stage::Decoding));
        checked.program.clone()
    } else {
        decode_term(&enc, &facts, &term, &names)?
    };
    crate::trace::note("final", "decode", t, String::new);
    let mut facts = facts;
    let mut cost = plan_cost(&plan, &opts.cost.params, &opts.cost.sizes);
    let mut made = phases.len();
    // later rounds: the decoded program encoded again and optimised again, as a second
    // optimisation of the optimised program would, kept where it prices lower, until one
    // finds nothing cheaper (or the rounds or the time run out). The encoder shares what
    // the chosen term keeps apart (a scan that recomputes an output's element prints as a
    // scan of the output's own `generate`: seed 10 of the idempotence property), and a
    // phase starts from one extracted term, so a rewrite hidden by what an extraction
    // dropped can show in the next round; optimising the result again then finds nothing
    // cheaper, whatever order the rules ran in. A first round that left the kernels as
    // they were (what each reads and writes; it changed scalar code only) is not followed
    // by another: there is no fused form for an extraction to have dropped (a wide program
    // of independent `map`s spent 45% more time in a second round that found nothing)
    let unchanged = kernel_structure(&plan) == kernel_structure(&unfused_plan);
    for round in 1..MAX_ROUNDS {
        if term == source.0 || Instant::now() >= phases_deadline {
            break;
        }
        let t = Instant::now();
        let Some((enc2, (t2, n2, s2), f2, p2)) = round_trip(&program, &facts, &term, &spans) else {
            break;
        };
        crate::trace::note("again", "round trip", t, String::new);
        // the decoded program as written is what a second optimisation starts from
        let c2 = plan_cost(&p2, &opts.cost.params, &opts.cost.sizes);
        if c2.total < cost.total {
            (term, names, spans, plan, cost) = (t2.clone(), n2.clone(), s2.clone(), p2.clone(), c2);
            facts = f2.clone();
        }
        if round == 1 && unchanged {
            break;
        }
        let sig2 = Signature { inputs: &enc2.inputs, sizes: &enc2.sizes, outputs: &enc2.outputs };
        let again = Round { sig: sig2, facts: &f2, opts, phases_deadline, deadline };
        let t = Instant::now();
        let chosen = explore(&pipeline, &again, (t2, n2, s2), &p2)?;
        let report = round_report(&chosen.branch.3, t.elapsed().as_secs_f64());
        if let Some(l) = chosen.late {
            stop_reason = first_stop(stop_reason, l);
        }
        if !report.stop_reason.is_saturated() {
            stop_reason = first_stop(stop_reason, report.stop_reason.clone());
        }
        let c3 = plan_cost(&chosen.plan, &opts.cost.params, &opts.cost.sizes);
        let better = c3.total < cost.total;
        phases.push(report);
        if !better || Instant::now() >= deadline {
            break;
        }
        made = phases.len();
        let (t3, n3, s3, _) = chosen.branch;
        program = decode_term(&enc2, &f2, &t3, &n3)?;
        (term, names, spans, plan, cost, facts) = (t3, n3, s3, chosen.plan, c3, f2);
    }
    // the rules that made the chosen term (not those of a round that found nothing cheaper)
    let mut rules_fired = rules_fired(&phases[..made]);
    rules_fired.sort_keys();
    let unfused_cost = plan_cost(&unfused_plan, &opts.cost.params, &opts.cost.sizes);
    let stop_reason = stop_reason.unwrap_or(StopReason::Saturated);
    Ok(Optimized {
        plan,
        cost,
        unfused_plan,
        unfused_cost,
        cost_model: opts.cost.params.name.clone(),
        term,
        names,
        spans,
        program,
        phases,
        rules_fired,
        stop_reason,
        optimize_ms: started.elapsed().as_secs_f64() * 1e3,
        gas_left: gas.left(),
        facts,
        source,
        source_spans,
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

/// `program` (decoded from `term`) checked, encoded and lowered as written: its encoding, term, names,
/// positions (carried over from `term`'s nodes that it shares: the decoded program has
/// none of its own), facts and plan; `None` where any step fails (the optimised plan stands).
fn round_trip(
    program: &Program,
    facts: &Facts,
    term: &RecExpr<ArrayLang>,
    spans: &HashMap<usize, Span>,
) -> Option<(Encoded, Named, Facts, Plan)> {
    let checked = eqfuse_ir::check::check(program).ok()?;
    let enc = eqfuse_egraph::encode(&checked).ok()?;
    let (t2, n2, _) = source_term(&enc).ok()?;
    // positions: the new term's nodes that are nodes of the old one, found by loading both
    // into one e-graph
    let mut loaded = load(facts, term);
    let mut ids: Vec<Id> = Vec::with_capacity(t2.as_ref().len());
    let mut index: IdMap<usize> = IdMap::default();
    for (j, n) in t2.as_ref().iter().enumerate() {
        let id = loaded.egraph.add(n.clone().map_children(|c| ids[usize::from(c)]));
        ids.push(id);
        if !index.contains_key(&id) {
            index.insert(id, j);
        }
    }
    let s2 = carry_spans(&loaded.egraph, &loaded.ids, spans, &index);
    let f2 = enc.egraph.analysis.clone();
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    let plan = eqfuse_lower::lower::lower_spanned(&t2, &f2, &n2, &s2, &sig).ok()?;
    Some((enc, (t2, n2, s2), f2, plan))
}

/// The encoded program's own term (extracted with no rule run), its `let` names and the
/// source positions of its nodes.
fn source_term(enc: &Encoded) -> Result<Named> {
    let (term, index) = extract(&enc.egraph, enc.root)?;
    let mut names = HashMap::new();
    for (id, n) in &enc.lets {
        if let Some(&j) = index.get(&enc.egraph.find(*id)) {
            names.entry(j).or_insert_with(|| n.clone());
        }
    }
    let mut spans = HashMap::new();
    for (id, s) in &enc.spans {
        if let Some(&j) = index.get(&enc.egraph.find(*id)) {
            spans.entry(j).or_insert(*s);
        }
    }
    Ok((term, names, spans))
}

/// The source positions of an extracted term's nodes: each class takes the position of the
/// first node (in the loaded term's order) it holds, else that of the class a substitution
/// built it from ([`Facts::derived`]), else none.
fn carry_spans(
    eg: &EG,
    loaded: &[Id],
    spans: &HashMap<usize, Span>,
    index: &IdMap<usize>,
) -> HashMap<usize, Span> {
    let mut by_class: HashMap<Id, Span> = HashMap::new();
    let mut ordered: Vec<(&usize, &Span)> = spans.iter().collect();
    ordered.sort_by_key(|(i, _)| **i);
    for (i, s) in ordered {
        if let Some(&c) = loaded.get(*i) {
            by_class.entry(eg.find(c)).or_insert(*s);
        }
    }
    for &(made, from) in &eg.analysis.derived {
        let (made, from) = (eg.find(made), eg.find(from));
        if let Some(&s) = by_class.get(&from) {
            by_class.entry(made).or_insert(s);
        }
    }
    let mut out = HashMap::new();
    for (c, &j) in index.iter() {
        if let Some(&s) = by_class.get(&eg.find(c)) {
            out.insert(j, s);
        }
    }
    out
}

fn decode_term(
    enc: &Encoded,
    facts: &Facts,
    term: &RecExpr<ArrayLang>,
    names: &HashMap<usize, String>,
) -> Result<Program> {
    let loaded = load(facts, term);
    let root = *loaded.ids.last().ok_or_else(|| eqfuse_ir::error::internal("empty term"))?;
    let lets: Vec<(Id, String)> = {
        let mut v: Vec<(usize, &String)> = names.iter().map(|(i, n)| (*i, n)).collect();
        v.sort();
        v.into_iter().filter_map(|(i, n)| loaded.ids.get(i).map(|c| (*c, n.clone()))).collect()
    };
    // each class holds the node the term chose for it (hash-consing: one per class)
    let chosen: HashMap<Id, ArrayLang> = term
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
