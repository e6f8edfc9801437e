//! Sharing-aware extraction (docs/design-decisions.md, decision 4): which arrays to materialise.
//!
//! A tree cost cannot see sharing: an array used by two kernels is one kernel when it is
//! materialised, and its work twice when it is fused into both. So the decision variables
//! here are the *materialised set* `S`: the classes holding a kernel (an array operation,
//! or a reduction to a scalar) whose result is written to memory.
//!
//! - **Given `S`**, extraction is a tree extraction ([`eqfuse_egraph::extract::choose`]) in which a
//!   kernel node may only be chosen in a class of `S`, and a child in `S` costs nothing to
//!   its parent (it is paid once, on its own). Every array a kernel reads is then in `S`.
//! - **The true cost** of the result is the physical model's ([`crate::model::plan_cost`])
//!   on the plan it lowers to: each materialised array written once and read by each
//!   consumer, each fused producer's work paid in every kernel it is fused into, common
//!   subterms of one kernel computed once.
//! - **The search over `S`** starts from the fully fused choice (the tree extraction with no
//!   restriction) and takes the best single change (materialise one more class, or fuse one
//!   away) while that lowers the true cost: greedy with local improvement. Where there are
//!   at most [`EXACT_CANDIDATES`] candidates, every subset is tried instead, so the choice is
//!   the best over the sets however the classes are numbered; [`Search::Exact`] raises that
//!   bound (the tests check the greedy result against it).
//!
//! The output classes are always in `S`: outputs are written to memory.

use crate::lower::{lower_by, Lowered, Signature};
use crate::model::{plan_cost, CostParams, Extents, DEFAULT_SIZE};
use egg::{EGraph, Id, Language, RecExpr};
use eqfuse_egraph::analysis::ParamSet;
use eqfuse_egraph::analysis::{Facts, Kind, SymDim};
use eqfuse_egraph::extract::{choose, choose_with, needed, term_of, Choice};
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_egraph::{IdMap, Term};
use eqfuse_ir::error::{Error, Result};
use eqfuse_ir::plan::KernelKind;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// Up to this many candidates, [`Search::Greedy`] tries every materialised set instead (at
/// most 2^6 = 64 lowerings, a few milliseconds): the extraction is then exact over the sets,
/// whatever order the rules put the e-graph's classes in.
pub const EXACT_CANDIDATES: usize = 6;

/// How to search the materialised sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// Greedy with local improvement (the default), or every set where there are at most
    /// [`EXACT_CANDIDATES`] candidates.
    Greedy,
    /// Every subset of the candidates, when there are at most this many (else greedy).
    Exact(usize),
    /// The fully fused choice, not improved (where it is feasible; else greedy), in which
    /// the outputs are computed again where other kernels that horizontal fusion can join
    /// with them use them (a scan, a filter or a permute reads them; an output that is
    /// itself a scan, a filter or a permute is read, and so is one only its size is asked
    /// of). The
    /// runner follows it beside the greedy choice through the later phases, where horizontal
    /// fusion may make fusing everything the better plan after all.
    Fused,
}

/// The cost context of an extraction.
#[derive(Clone, Debug)]
pub struct CostContext {
    /// The model's parameters.
    pub params: CostParams,
    /// Sizes to assume for size names (others: [`DEFAULT_SIZE`]).
    pub sizes: HashMap<String, u64>,
    /// Extents to assume for array inputs, by name (others: [`DEFAULT_SIZE`] elements);
    /// the optimiser fills those of the signature's inputs from `sizes`
    /// ([`crate::model::input_extents`]).
    pub inputs: HashMap<String, Vec<u64>>,
    /// How to search.
    pub search: Search,
    /// Wall-clock budget for the search (it stops with the best set found so far).
    pub budget: Duration,
    /// The whole optimisation's deadline: the search stops there too.
    pub deadline: Option<Instant>,
}

impl CostContext {
    /// The sizes and input extents the model prices plans at.
    pub fn extents(&self) -> Extents<'_> {
        Extents { sizes: &self.sizes, inputs: &self.inputs }
    }

    /// This context at the signature `inputs`: every size name they use sized
    /// ([`crate::model::default_sizes`]) and every array input's extent derived from those
    /// sizes ([`crate::model::input_extents`]); the sizes and extents already given win.
    /// The optimiser prices every plan of a program, and a program with loops its
    /// assembled plan, at these.
    pub fn at_signature(&self, inputs: &indexmap::IndexMap<String, eqfuse_ir::types::Type>) -> CostContext {
        let sizes = crate::model::default_sizes(inputs, &self.sizes);
        let mut extents = crate::model::extents_at(inputs, &sizes);
        extents.extend(self.inputs.iter().map(|(k, v)| (k.clone(), v.clone())));
        CostContext { sizes, inputs: extents, ..self.clone() }
    }
}

impl Default for CostContext {
    fn default() -> CostContext {
        CostContext {
            params: CostParams::cpu_default(),
            sizes: HashMap::new(),
            inputs: HashMap::new(),
            search: Search::Greedy,
            budget: Duration::from_millis(300),
            deadline: None,
        }
    }
}

/// The result of [`extract`].
#[derive(Clone, Debug)]
pub struct Extracted {
    /// The term (a DAG, its last node `root`'s).
    pub term: RecExpr<ArrayLang>,
    /// The node index of each extracted class.
    pub index: IdMap<usize>,
    /// Its predicted cost, seconds.
    pub cost: f64,
    /// How many materialised sets were evaluated.
    pub evaluated: usize,
}

/// Whether `n` is a kernel node: its result is computed by a pass of its own.
pub fn is_kernel_node(n: &ArrayLang) -> bool {
    n.array_op().is_some()
}

/// Whether horizontal fusion can make a kernel of `n`'s kind a lane beside its operand's
/// kernel (or a node within a kernel: not a kernel itself). Scans, filters and permutes
/// never join a group (`horizontal-fuse` groups generates and reductions).
fn joins_horizontally(n: &ArrayLang) -> bool {
    !matches!(
        crate::kernels::kernel_kind(n, false),
        Some(KernelKind::Scan | KernelKind::Filter | KernelKind::Permute)
    )
}

/// A materialised set's true cost, with the term it extracts and the term's index.
type Evaluated = (f64, RecExpr<ArrayLang>, IdMap<usize>);

struct Ctx<'a> {
    eg: &'a EGraph<ArrayLang, Facts>,
    root: Id,
    sig: &'a Signature<'a>,
    cost: &'a CostContext,
    kernel_class: IdMap<bool>,
    evaluated: usize,
    /// Why the last term could not be lowered (for the error when none can).
    last_error: Option<Error>,
    /// Whether the deadline stopped a lowering.
    late: bool,
    /// The parameters each class needs (the same for every materialised set).
    need: IdMap<ParamSet>,
    /// Outputs that other kernels compute again rather than read ([`Search::Fused`]: the
    /// fully fused choice; empty otherwise).
    recompute: BTreeSet<Id>,
}

impl Ctx<'_> {
    /// The elements of a class's array (1 for a scalar), with the context's sizes.
    fn points(&self, c: Id) -> f64 {
        dims_points(&self.eg[c].data.kind, &self.cost.sizes)
    }

    /// The tree extraction given materialised set `s` (`None`: no restriction).
    fn choose(&self, s: Option<&BTreeSet<Id>>) -> Choice {
        let eg = self.eg;
        choose(eg, |_, n, child| {
            let kernel = is_kernel_node(n);
            let kid = |c: Id| {
                let c = eg.find(c);
                match s {
                    Some(s) if s.contains(&c) => 0.0,
                    _ => child(c),
                }
            };
            node_cost(self, n, kernel, &kid)
        })
    }

    /// The choice for set `s`, with kernel nodes outside `s` forbidden.
    fn choose_within(&self, s: &BTreeSet<Id>) -> Choice {
        let eg = self.eg;
        // a child in `s` costs its parent nothing: a parent can be cheaper than its child
        // (a `proj` of a `multi`), which the settling order does not see, so local
        // improvement follows
        choose_with(eg, &self.need, true, |class, n, child| {
            // kernel nodes only in the classes of `s`
            if is_kernel_node(n) && !s.contains(&class) {
                return f64::INFINITY;
            }
            // the outputs node reads its outputs, and so does a kernel that horizontal
            // fusion cannot join with them: recomputing an output gains only where the
            // consumer can become a lane of the output's kernel
            // (a size, `length o`, reads no element: the output is not computed for it)
            let reads = matches!(n, ArrayLang::Outputs(_) | ArrayLang::Length(_) | ArrayLang::Dim(_))
                || !joins_horizontally(n);
            let kid = |c: Id| {
                let c = eg.find(c);
                if s.contains(&c) && (reads || !self.recompute.contains(&c)) {
                    0.0
                } else {
                    child(c)
                }
            };
            node_cost(self, n, is_kernel_node(n), &kid)
        })
    }

    /// The true cost of the term set `s` extracts, with the term.
    fn evaluate(&mut self, s: &BTreeSet<Id>) -> Option<Evaluated> {
        if late(self.cost) {
            self.late = true;
            return None;
        }
        self.evaluated += 1;
        let choice = self.choose_within(s);
        let root = self.eg.find(self.root);
        let (term, index) = term_of(self.eg, &choice, root).ok()?;
        // every class of the term has a finite choice (a class of `s` costs its parents
        // nothing, so the root's cost alone does not say its kernels are allowed)
        if !index.keys().all(|c| choice.classes.get(&c).is_some_and(|x| x.cost.is_finite())) {
            return None;
        }
        // priced with no names or positions: neither changes what a plan costs
        let term = Term::bare(term);
        let plan = match lower_by(&term, &self.eg.analysis, self.sig, self.cost.deadline) {
            Ok(Lowered::Plan(p) | Lowered::Unrolled(p)) => p,
            Ok(Lowered::Late) => {
                self.late = true;
                return None;
            }
            Err(e) => {
                self.last_error = Some(e);
                return None;
            }
        };
        let c = plan_cost(&plan, &self.cost.params, self.cost.extents()).total;
        c.is_finite().then_some((c, term.expr, index))
    }

    /// The kernel classes a choice uses as children (what it materialises).
    fn used(&self, choice: &Choice) -> BTreeSet<Id> {
        let mut out = BTreeSet::new();
        let root = self.eg.find(self.root);
        let mut stack = vec![root];
        let mut seen = std::collections::HashSet::new();
        while let Some(c) = stack.pop() {
            if !seen.insert(c) {
                continue;
            }
            let Some(s) = choice.classes.get(&c) else { continue };
            for k in s.node.children() {
                let k = self.eg.find(*k);
                if self.kernel_class.get(&k) == Some(&true) {
                    out.insert(k);
                }
                stack.push(k);
            }
        }
        out
    }
}

/// Whether the optimisation's deadline has passed.
fn late(cost: &CostContext) -> bool {
    cost.deadline.is_some_and(|d| Instant::now() >= d)
}

/// The elements of an array kind (1 for a scalar).
fn dims_points(kind: &Kind, sizes: &HashMap<String, u64>) -> f64 {
    match kind {
        Kind::Array { shape, .. } | Kind::Shape(shape) => shape
            .iter()
            .map(|d| match d {
                SymDim::Const(c) => (*c).max(0) as f64,
                SymDim::Size(s) => sizes.get(s.as_str()).copied().unwrap_or(DEFAULT_SIZE) as f64,
                _ => DEFAULT_SIZE as f64,
            })
            .product(),
        _ => 1.0,
    }
}

/// The mean trip count of a segment's loop (`reduce_segments`), whose count is
/// `chk[s + 1] - chk[s]` over the offsets of a `segcheck`: the values per segment, `n / m`.
fn segment_trips(eg: &EGraph<ArrayLang, Facts>, k: Id, sizes: &HashMap<String, u64>) -> Option<f64> {
    use ArrayLang as L;
    let (hi, lo) = eg[k].nodes.iter().find_map(|n| match n {
        L::Sub([a, b]) => Some((*a, *b)),
        _ => None,
    })?;
    let read_of = |x: Id| {
        eg[x].nodes.iter().find_map(|n| match n {
            L::Index(c) if c.len() == 2 => Some(eg.find(c[0])),
            _ => None,
        })
    };
    let chk = read_of(hi)?;
    if read_of(lo)? != chk {
        return None;
    }
    let [off, shn, _] = eg[chk].nodes.iter().find_map(|n| match n {
        L::SegCheck(c) => Some(*c),
        _ => None,
    })?;
    let n = dims_points(&eg[shn].data.kind, sizes);
    let m = (dims_points(&eg[off].data.kind, sizes) - 1.0).max(1.0);
    Some((n / m).max(1e-3))
}

/// What a `map` pays in the tree cost for each operand its function ignores (see
/// [`node_cost`]): more than the picosecond ties, less than any work.
const IGNORED_OPERAND: f64 = 1e-9;

/// The tree cost of one node in seconds: a scalar node per evaluation, a kernel node its
/// whole pass (its element functions times its points).
fn node_cost(ctx: &Ctx<'_>, n: &ArrayLang, kernel: bool, child: &dyn Fn(Id) -> f64) -> f64 {
    use ArrayLang as L;
    let (eg, p, sizes, need) = (ctx.eg, &ctx.cost.params, &ctx.cost.sizes, &ctx.need);
    let points = |c: Id| ctx.points(c);
    let elem_bytes = |c: Id| eg[c].data.kind.elem().map_or(4, |e| e.size_bytes()) as f64;
    if !kernel {
        let own = match n {
            L::Lit(_) | L::Param(_) | L::Input(_) | L::Size(_) | L::Params(_) | L::Lam(_) | L::Shape(_) => {
                0.0
            }
            L::LaneGen(_) | L::LaneRed(_) | L::Outputs(_) | L::Tuple(_) | L::Proj(_) | L::App(_) => 0.0,
            L::Exp(_)
            | L::Log(_)
            | L::Sin(_)
            | L::Cos(_)
            | L::Tan(_)
            | L::Tanh(_)
            | L::Pow(_)
            | L::Atan2(_) => 1.0 / p.transcendental,
            L::Sqrt(_) => 1.0 / p.sqrt,
            L::Div(_) | L::Rem(_) => 1.0 / p.div,
            // a read through computed indices pays the scattered access (as the model does);
            // one by the index parameters themselves does not
            L::Index(c) => {
                let direct = c[1..].iter().all(|i| eg[*i].nodes.iter().any(|n| matches!(n, L::Param(_))));
                elem_bytes(c[0]) / p.bandwidth + if direct { 0.0 } else { 1.0 / p.gather }
            }
            L::If(_)
            | L::Eq(_)
            | L::Ne(_)
            | L::Lt(_)
            | L::Le(_)
            | L::Gt(_)
            | L::Ge(_)
            | L::And(_)
            | L::Or(_) => 1.0 / p.compare,
            _ => 1.0 / p.flop,
        };
        // a loop's body counts its trips; one that never runs still has its code (the
        // model charges code size), a little, so that of two loops with no trips the one
        // with the smaller body wins rather than whichever was found first
        if let L::Iterate([k, f, init]) = n {
            let trips = match eg[*k].data.constant {
                Some(l) => l.to_scalar().as_f64().max(1e-3),
                None => segment_trips(eg, *k, sizes).unwrap_or(crate::model::UNKNOWN_TRIPS),
            };
            return 1e-12 + child(*k) + child(*init) + trips * child(*f);
        }
        // an `if` between arrays runs one branch's kernels: its dearer branch (as the
        // model prices a plan's `if`)
        if let L::If([c, t, e]) = n {
            if matches!(eg[*t].data.kind, Kind::Array { .. }) {
                return own + 1e-12 + child(*c) + child(*t).max(child(*e));
            }
        }
        // a child named twice (`a[clamp x 0 k, clamp x 0 k]`) is one value of the kernel,
        // computed once: counted once, so that the form whose operands merged into one class
        // is not dearer than a form that still names them apart
        return own + 1e-12 + distinct_children(eg, n).into_iter().map(child).sum::<f64>();
    }
    // a kernel: launch, its result written, its element functions at every point, its
    // array operands read at every point
    let lambda = |c: Id| matches!(eg[c].data.kind, Kind::Func { .. });
    let (space, operands): (f64, Vec<Id>) = match n {
        L::Map(c) => (c.get(1).map_or(1.0, |a| points(*a)), map_operands_read(eg, c, need)),
        L::Reduce([_, _, a]) | L::Scan([_, _, a]) | L::ScanEx([_, _, a]) | L::Filter([_, a]) => {
            (points(*a), vec![*a])
        }
        L::Permute([_, d, _, a]) => (points(*a), vec![*a, *d]),
        L::SegCheck([off, _, _]) => (points(*off), vec![*off]),
        L::Gather([a, idx]) => (points(*idx), vec![*a, *idx]),
        L::Generate([sh, _])
        | L::Fill([sh, _])
        | L::Redomap([_, _, sh, _])
        | L::Scanomap([_, _, sh, _])
        | L::Scanexomap([_, _, sh, _])
        | L::Filtermap([_, sh, _])
        | L::Backpermute([sh, _, _])
        | L::Reshape([sh, _]) => (dims_points(&eg[*sh].data.kind, sizes), Vec::new()),
        L::Permutemap([_, d, _, sh, _]) => (dims_points(&eg[*sh].data.kind, sizes), vec![*d]),
        L::Multi(c) => (c.first().map_or(1.0, |sh| dims_points(&eg[*sh].data.kind, sizes)), Vec::new()),
        L::GReduce([_, _, sh, _, _]) | L::GScan([_, _, sh, _, _]) => {
            (dims_points(&eg[*sh].data.kind, sizes), Vec::new())
        }
        L::Iota(_) | L::Transpose(_) | L::Reverse(_) | L::Slice(_) | L::Concat(_) => (1.0, Vec::new()),
        _ => (1.0, Vec::new()),
    };
    // a little per child too: of two equal kernels the one with fewer children wins (a
    // `map` without the operands its function ignores), not whichever was found first
    let mut c = p.launch + 1e-12 * (1 + n.children().len()) as f64;
    for k in n.children() {
        let k = eg.find(*k);
        if lambda(k) || matches!(eg[k].data.kind, Kind::Lane { .. }) {
            // over an empty space the code is still there (the model charges code size): a
            // little, so that the smaller body wins rather than whichever was found first
            c += space.max(1e-3) * child(k);
        } else {
            c += child(k);
        }
    }
    // a `map` whose function ignores an operand still names it, and the lowering computes
    // it where the map takes its shape from it; the `generate` over that shape computes only
    // its elements. A little more than the ties above, so that the `generate` wins also
    // where the operand is materialised (a child in the set costs its parent nothing): an
    // `if` whose `else` was `map (\x -> 7) (scan ..)` computed the scan on both branches
    if let L::Map(kids) = n {
        let ignored = kids.iter().skip(1).filter(|a| !operands.contains(&eg.find(**a))).count();
        c += IGNORED_OPERAND * ignored as f64;
    }
    for a in operands {
        c += points(a).min(space) * elem_bytes(a) / p.bandwidth;
    }
    c
}

/// The arrays a `map` reads (as the lowering does): those whose parameter its function
/// uses, each once. What the function uses is what its body needs (`need`: the
/// parameters every form of the body mentions), not the analysis's union over the forms,
/// which keeps a parameter that a simplification dropped (`if x == x then a else b[y]`
/// still mentions `y`, and with the phases merged the e-graph keeps the unsimplified form).
fn map_operands_read(eg: &EGraph<ArrayLang, Facts>, c: &[Id], need: &IdMap<ParamSet>) -> Vec<Id> {
    let Some((f, arrays)) = c.split_first() else { return Vec::new() };
    let k = arrays.len();
    let body_free = eg[*f].nodes.iter().find_map(|n| match n {
        ArrayLang::Lam([_, b]) => Some(need.get(&eg.find(*b)).unwrap_or(&eg[*b].data.free)),
        _ => None,
    });
    let mut out: Vec<Id> = Vec::new();
    for (j, a) in arrays.iter().enumerate() {
        let used = body_free.is_none_or(|fr| fr.contains((k - 1 - j) as u32));
        let a = eg.find(*a);
        if used && !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// Extracts `root` from `eg` choosing what to materialise by the physical cost of the plan
/// (see the module docs).
///
/// Under a deadline (`cost.deadline`) the search stops there with the best set found;
/// `None` when the deadline passed before any set was evaluated (then, or while the first
/// was lowered).
pub fn extract(
    eg: &EGraph<ArrayLang, Facts>,
    root: Id,
    sig: &Signature<'_>,
    cost: &CostContext,
) -> Result<Option<Extracted>> {
    let started = Instant::now();
    if late(cost) {
        return Ok(None);
    }
    let mut ctx = Ctx::new(eg, root, sig, cost);
    let (forced, candidates) = ctx.forced_and_candidates();
    let fusable = fusable_classes(eg);
    let (mut best_set, mut best, fused_feasible) = ctx.starts(&forced, &candidates);
    let exact = match cost.search {
        Search::Exact(k) => candidates.len() <= k,
        Search::Greedy => candidates.len() <= EXACT_CANDIDATES,
        Search::Fused => false,
    };
    let fused_only = cost.search == Search::Fused && fused_feasible;
    if fused_only {
        // the fully fused choice as it is
    } else if exact {
        ctx.exact(&forced, &candidates, &mut best_set, &mut best);
    } else {
        ctx.greedy(started, &candidates, &fusable, &mut best_set, &mut best);
    }
    let Some((cost_s, term, index)) = best else {
        if ctx.late || late(cost) {
            return Ok(None);
        }
        return Err(ctx
            .last_error
            .take()
            .unwrap_or_else(|| eqfuse_ir::error::internal("no plan could be extracted")));
    };
    let _ = best_set;
    Ok(Some(Extracted { term, index, cost: cost_s, evaluated: ctx.evaluated }))
}

impl<'a> Ctx<'a> {
    /// The search's context for `eg`, before any set is evaluated.
    fn new(
        eg: &'a EGraph<ArrayLang, Facts>,
        root: Id,
        sig: &'a Signature<'a>,
        cost: &'a CostContext,
    ) -> Ctx<'a> {
        let mut kernel_class = IdMap::default();
        for c in eg.classes() {
            kernel_class.insert(c.id, c.nodes.iter().any(is_kernel_node));
        }
        let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
        ids.sort();
        let need = needed(eg, &ids);
        Ctx {
            eg,
            root,
            sig,
            cost,
            kernel_class,
            evaluated: 0,
            last_error: None,
            late: false,
            need,
            recompute: BTreeSet::new(),
        }
    }

    /// The kernel classes the outputs are (always materialised) and the candidates: the
    /// other kernel classes some node uses as a child.
    fn forced_and_candidates(&self) -> (BTreeSet<Id>, Vec<Id>) {
        let (eg, root) = (self.eg, self.root);
        let root_c = eg.find(root);
        // outputs are always written
        let mut forced = BTreeSet::new();
        for k in eg[root_c].nodes.iter().flat_map(|n| n.children().to_vec()) {
            let k = eg.find(k);
            if self.kernel_class.get(&k) == Some(&true) {
                forced.insert(k);
            }
        }
        // candidates: kernel classes some node uses as a child
        let mut candidates = BTreeSet::new();
        for c in eg.classes() {
            for n in &c.nodes {
                for k in n.children() {
                    let k = eg.find(*k);
                    if self.kernel_class.get(&k) == Some(&true) && !forced.contains(&k) {
                        candidates.insert(k);
                    }
                }
            }
        }
        let candidates: Vec<Id> = candidates.into_iter().collect();
        (forced, candidates)
    }

    /// The two starts of the search (the fully fused choice and the tree extraction's),
    /// or, where neither is feasible, the unfused choice: the best set, its evaluation,
    /// and whether the fused start was feasible.
    fn starts(
        &mut self,
        forced: &BTreeSet<Id>,
        candidates: &[Id],
    ) -> (BTreeSet<Id>, Option<Evaluated>, bool) {
        let (eg, cost) = (self.eg, self.cost);
        // two starts: what the tree extraction materialises (a tree cost counts a subterm
        // used twice in one kernel twice, so it may materialise too much), and nothing but the
        // outputs (everything fused, where that is possible)
        // the fully fused choice computes the outputs again where other kernels use them
        // rather than read them (horizontal fusion, later, may then compute an output and its
        // users in one kernel: what [`Search::Fused`] is followed for)
        // (only an output that has a kernel others can join: a filter's result is read)
        if cost.search == Search::Fused {
            self.recompute = forced
                .iter()
                .copied()
                .filter(|c| eg[*c].nodes.iter().any(|n| is_kernel_node(n) && joins_horizontally(n)))
                .collect();
        }
        let fused_start = self.evaluate(forced);
        let fused_feasible = fused_start.is_some();
        let mut best_set = forced.clone();
        let mut best = fused_start;
        if (cost.search != Search::Fused || !fused_feasible) && !late(cost) {
            let tree_start: BTreeSet<Id> = {
                let free = self.choose(None);
                let mut s = self.used(&free);
                s.extend(forced.iter().copied());
                s
            };
            // (the same set as the fused start, as where every kernel is an output, would
            // lower to the same plan again: evaluated once)
            let again = tree_start == *forced;
            if let Some(r) = if again { None } else { self.evaluate(&tree_start) } {
                if best.as_ref().is_none_or(|b| r.0 < b.0) {
                    best = Some(r);
                    best_set = tree_start.clone();
                }
            }
        }
        if best.is_none() && !late(cost) {
            // neither start is feasible where a class cannot be fused away: materialise every
            // candidate (the unfused choice) and improve from there
            best_set = forced.iter().chain(candidates.iter()).copied().collect();
            best = self.evaluate(&best_set);
        }
        (best_set, best, fused_feasible)
    }

    /// Every subset of the candidates (with the forced classes), while the deadline allows.
    fn exact(
        &mut self,
        forced: &BTreeSet<Id>,
        candidates: &[Id],
        best_set: &mut BTreeSet<Id>,
        best: &mut Option<Evaluated>,
    ) {
        let cost = self.cost;
        for mask in 0u64..(1u64 << candidates.len()) {
            if late(cost) {
                break;
            }
            let mut s = forced.clone();
            for (b, c) in candidates.iter().enumerate() {
                if mask >> b & 1 == 1 {
                    s.insert(*c);
                }
            }
            if let Some(r) = self.evaluate(&s) {
                if best.as_ref().is_none_or(|b| r.0 < b.0) {
                    *best = Some(r);
                    *best_set = s;
                }
            }
        }
    }

    /// Greedy: the best single toggle of a candidate, while it improves (within the
    /// budget and the deadline).
    fn greedy(
        &mut self,
        started: Instant,
        candidates: &[Id],
        fusable: &IdMap<()>,
        best_set: &mut BTreeSet<Id>,
        best: &mut Option<Evaluated>,
    ) {
        let cost = self.cost;
        // greedy: the best single toggle, while it improves
        for _round in 0..64 {
            if started.elapsed() > cost.budget || late(cost) {
                break;
            }
            let current = best.as_ref().map_or(f64::INFINITY, |b| b.0);
            let mut improved: Option<(BTreeSet<Id>, Evaluated)> = None;
            for c in candidates {
                if started.elapsed() > cost.budget || late(cost) {
                    break;
                }
                if best_set.contains(c) && !fusable.contains_key(c) {
                    continue;
                }
                let mut s = best_set.clone();
                if !s.remove(c) {
                    s.insert(*c);
                }
                if let Some(r) = self.evaluate(&s) {
                    let bar = improved.as_ref().map_or(current * (1.0 - 1e-9), |(_, b)| b.0);
                    if r.0 < bar {
                        improved = Some((s, r));
                    }
                }
            }
            match improved {
                Some((s, r)) => {
                    *best_set = s;
                    *best = Some(r);
                }
                None => break,
            }
        }
    }
}

/// The classes of `n`'s children, canonical, each once, in order.
fn distinct_children(eg: &EGraph<ArrayLang, Facts>, n: &ArrayLang) -> Vec<Id> {
    let mut kids: Vec<Id> = n.children().iter().map(|c| eg.find(*c)).collect();
    kids.sort_unstable();
    kids.dedup();
    kids
}

/// The classes that can stop being materialised: some user of each has another way to
/// compute its value (a node that does not read it).
fn fusable_classes(eg: &EGraph<ArrayLang, Facts>) -> IdMap<()> {
    // a class can only stop being materialised where some user of it has another way to
    // compute its value (a node that does not read it)
    // (each node's children as a set, once: the `outputs` node has one child per output,
    // and a scan of its children per child was quadratic in the outputs)
    let mut fusable: IdMap<()> = IdMap::default();
    for c in eg.classes().filter(|c| c.nodes.len() > 1) {
        let kids: Vec<Vec<Id>> = c.nodes.iter().map(|n| distinct_children(eg, n)).collect();
        for k in kids.iter().flatten() {
            if kids.iter().any(|m| m.binary_search(k).is_err()) {
                fusable.insert(*k, ());
            }
        }
    }
    fusable
}
