//! Lowering an extracted term to an [`ir::plan::Plan`](eqfuse_ir::plan::Plan).
//!
//! Every array operation of the term is one kernel (a `multi` is one kernel with a lane per
//! result); every scalar the host needs (an output, a computed extent) is a host step.
//! Array operations become index-space passes:
//!
//! | term | kernel |
//! | --- | --- |
//! | `map f a..`, `generate sh f`, `iota`, `fill`, `gather`, `backpermute`, `transpose`, `reverse`, `slice`, `concat`, `reshape` | a `Generate` lane whose element function reads its operands by index |
//! | `reduce`, `redomap` | a `Reduce` lane (`multi` lanes: `Generate`/`Reduce`) |
//! | `scan`, `scan_ex`, `scanomap`, `scanexomap` | a `Scan` lane |
//! | `filter`, `filtermap` | a `Filter` lane |
//! | `permute`, `permutemap` | a `Permute` lane |
//!
//! Where each node is computed is decided first, on the whole term, by [`crate::place`]:
//! the kernels the host runs on every run are lowered up front in term order; a kernel
//! under a lazy form (a branch of an `if`, the right operand of `&&` / `||`, an argument a
//! `let` body uses only there) is lowered where it is first needed, inside the host `if`
//! step of its branch when there is one, else inside a `Step::If` on a test of its guard
//! that cannot fail (an element function's `if c then x + s else x` with `s` a kernel:
//! the host tests `c`, runs `s`'s kernel only when it holds, and the element function
//! tests `c` again and reads `s` only then).
//!
//! Element functions are straight-line code: each term node becomes one register per
//! distinct environment of the parameters it mentions, so a subterm used twice in one
//! kernel is computed once. `&&`, `||`, `if` and `iterate` become nested blocks (lazy, and
//! loops stay loops). Checks the reference interpreter makes on whole arrays (`map` over
//! arrays of one shape, `reshape`'s element count, `slice`'s range) become `Assert` steps
//! where the shapes are not known to agree.
//!
//! Equal terms lower to the same code, so that the predicted cost does not depend on which
//! of them the extraction picked (the confluence properties):
//! - an application's argument (a `let`) is computed where the body first uses it, as if
//!   substituted, and not at all if it does not; one used inside a loop body is computed
//!   once, before the loop;
//! - a value every path of a block computes (`strict.rs`: both branches of an `if`
//!   need it, or the code after it does) is computed once, before the `if`;
//! - constants go to the function's outermost block, once each;
//! - a `map` reads only the operands its function uses, each array once.

use crate::kernels::kernel_kind;
use crate::place::{Guard, Lit, Place, Placement};
use crate::strict::{Strict, View};
use crate::term::TermFacts;
use egg::{Id, Language, RecExpr};
use eqfuse_egraph::analysis::{Facts, Kind, SymDim};
use eqfuse_egraph::lang::{ArrayLang, Literal};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::{Code, Error, Result, Span};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{
    Arg, Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, PermuteDest, Plan, Reg, Step, ValueId,
    ValueInfo,
};
use eqfuse_ir::types::{ElemType, Type};
use eqfuse_ir::value::Scalar;
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
use std::time::Instant;

/// What lowering needs besides the term.
pub struct Signature<'a> {
    /// The program's inputs with their declared types, in order.
    pub inputs: &'a IndexMap<String, Type>,
    /// The program's size names.
    pub sizes: &'a [String],
    /// The program's outputs, in order (the children of the term's `outputs` root).
    pub outputs: &'a [String],
}

fn internal(what: impl std::fmt::Display) -> Error {
    eqfuse_ir::error::internal(format!("in lowering: {what}"))
}

/// Lowers `term` (its last node the `outputs` root) to a plan. `names` are the source `let`
/// names of term nodes (by node index). The plan knows no source positions
/// ([`lower_spanned`] gives them).
pub fn lower(
    term: &RecExpr<ArrayLang>,
    facts: &Facts,
    names: &HashMap<usize, String>,
    sig: &Signature<'_>,
) -> Result<Plan> {
    lower_spanned(term, facts, names, &HashMap::new(), sig)
}

/// [`lower`], with the source positions of term nodes (by node index): the plan's kernels,
/// checks and the instructions that can fail (reads, `size`, integer division) carry the
/// position of the node they come from, for run-time errors.
pub fn lower_spanned(
    term: &RecExpr<ArrayLang>,
    facts: &Facts,
    names: &HashMap<usize, String>,
    spans: &HashMap<usize, Span>,
    sig: &Signature<'_>,
) -> Result<Plan> {
    match lower_by(term, facts, names, spans, sig, None)? {
        Lowered::Plan(p) | Lowered::Unrolled(p) => Ok(p),
        Lowered::Late => Err(internal("stopped by a deadline it was not given")),
    }
}

/// What [`lower_by`] made by its deadline.
#[derive(Clone, Debug)]
pub enum Lowered {
    /// The whole plan, its recurrences rolled.
    Plan(Plan),
    /// The whole plan, but the deadline passed before loop rolling ([`crate::roll`]): the
    /// recurrences stay unrolled (the plan computes the same values).
    Unrolled(Plan),
    /// The deadline passed before every kernel was lowered: no plan.
    Late,
}

/// [`lower_spanned`] under a deadline: it checks the deadline before each kernel and
/// before loop rolling, and past it stops with what it has ([`Lowered`]).
pub fn lower_by(
    term: &RecExpr<ArrayLang>,
    facts: &Facts,
    names: &HashMap<usize, String>,
    spans: &HashMap<usize, Span>,
    sig: &Signature<'_>,
    deadline: Option<Instant>,
) -> Result<Lowered> {
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(Lowered::Late);
    }
    eqfuse_egraph::with_big_stack(|| {
        let mut l = Lowerer::new(term, facts, names, spans, sig);
        l.deadline = deadline;
        l.run()
    })
}

struct Lowerer<'a> {
    nodes: &'a [ArrayLang],
    kinds: Vec<Kind>,
    /// Free parameters of each node (over the term).
    free: Vec<Vec<u32>>,
    names: HashMap<usize, String>,
    /// Source positions of nodes.
    spans: &'a HashMap<usize, Span>,
    sig: &'a Signature<'a>,
    plan: Plan,
    /// The value each materialised node became.
    value_of: HashMap<usize, ValueId>,
    inputs: HashMap<String, ValueId>,
    sizes: HashMap<String, ValueId>,
    /// Host scalars made for extents: `Dim(value, axis)` and scalar nodes.
    dim_memo: HashMap<(ValueId, usize), Arg>,
    /// The lane (`proj` node) of a `multi` asked for now: lowered with the lanes needed
    /// wherever this step runs, not with lanes needed only under a guard that does not hold
    /// here (horizontal fusion may group a lazy kernel with a strict one).
    lane_wanted: Option<usize>,
    /// The lazy nodes whose guarded steps are being written (innermost last).
    guarding: Vec<usize>,
    /// The host conditionals (lowered to `Step::If`): [`Placement::is_host_if`].
    branching: std::collections::HashSet<usize>,
    /// Where each node is computed ([`crate::place`]).
    placement: Placement,
    /// What the host steps being written know to hold (the branches of host `if`s and
    /// guarded steps entered): a lazy node whose guard they imply is lowered as it is.
    context: Vec<Guard>,
    fresh: usize,
    /// Free parameters of each node that occur inside a lambda in it (not one applied on
    /// the spot): an argument for such a parameter is computed before the body, once.
    deep: Vec<Vec<u32>>,
    /// Whether the term has a conditional (`if`, `&&`, `||`): only then are strict sets
    /// needed.
    has_cond: bool,
    /// The strict sets of nodes ([`crate::strict`]).
    strict: Strict,
    /// Past it, lowering stops ([`lower_by`]).
    deadline: Option<Instant>,
    /// Constant `fill`s that only a permute's destination reads: the permute makes them
    /// itself ([`PermuteDest::Fill`]), so they get no kernel of their own.
    fill_dests: HashSet<usize>,
}

impl<'a> Lowerer<'a> {
    fn new(
        term: &'a RecExpr<ArrayLang>,
        facts: &Facts,
        names: &HashMap<usize, String>,
        spans: &'a HashMap<usize, Span>,
        sig: &'a Signature<'a>,
    ) -> Lowerer<'a> {
        let nodes = term.as_ref();
        let tf = TermFacts::new(term, facts);
        let placement = Placement::compute(nodes, &tf);
        let TermFacts { kinds, free, deep } = tf;
        let mut all_names = names.clone();
        if let Some(ArrayLang::Outputs(outs)) = nodes.last() {
            let mut named: HashSet<Id> = HashSet::new();
            for (k, o) in outs.iter().enumerate() {
                let first = named.insert(*o);
                if let Some(name) = sig.outputs.get(k) {
                    // an output name wins over a let name; the first output over later ones
                    if first {
                        all_names.insert(usize::from(*o), name.clone());
                    }
                }
            }
        }
        let branching = (0..nodes.len()).filter(|&i| placement.is_host_if(i)).collect();
        Lowerer {
            nodes,
            kinds,
            free,
            names: all_names,
            spans,
            sig,
            plan: Plan { values: Vec::new(), steps: Vec::new(), outputs: Vec::new() },
            value_of: HashMap::new(),
            inputs: HashMap::new(),
            sizes: HashMap::new(),
            dim_memo: HashMap::new(),
            lane_wanted: None,
            guarding: Vec::new(),
            branching,
            placement,
            context: Vec::new(),
            fresh: 0,
            deep,
            has_cond: nodes
                .iter()
                .any(|n| matches!(n, ArrayLang::If(_) | ArrayLang::And(_) | ArrayLang::Or(_))),
            strict: Strict::default(),
            deadline: None,
            fill_dests: fill_dests(nodes),
        }
    }

    fn late(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn run(mut self) -> Result<Lowered> {
        for (name, ty) in self.sig.inputs {
            let (elem, rank) = match ty {
                Type::Scalar(e) => (*e, 0),
                Type::Array { elem, shape } => (*elem, shape.len()),
                other => return Err(internal(format!("input `{name}` of type {other}"))),
            };
            let v = self.new_value(name.clone(), elem, rank, Origin::Input);
            self.inputs.insert(name.clone(), v);
        }
        for s in self.sig.sizes {
            let v = self.new_value(s.clone(), ElemType::I64, 0, Origin::Size);
            self.sizes.insert(s.clone(), v);
        }
        let Some(ArrayLang::Outputs(outs)) = self.nodes.last() else {
            return Err(internal("the term has no outputs root"));
        };
        let outs: Vec<usize> = outs.iter().map(|o| usize::from(*o)).collect();
        // the kernels the host computes on every run, in term order (children first); the
        // lazy ones are lowered where first needed, under their guard ([`crate::place`])
        let strict: Vec<usize> = self
            .placement
            .strict_nodes()
            .filter(|&i| self.is_kernel(i) && !self.fill_dests.contains(&i))
            .collect();
        for i in strict {
            if self.late() {
                return Ok(Lowered::Late);
            }
            self.kernel(i)?;
        }
        for (k, &o) in outs.iter().enumerate() {
            let name = self.sig.outputs.get(k).cloned().unwrap_or_else(|| format!("out{k}"));
            let v = self.output_value(o, &name)?;
            self.plan.outputs.push((name, v));
        }
        let outputs: HashSet<ValueId> = self.plan.outputs.iter().map(|(_, v)| *v).collect();
        drop_unread_lanes(&mut self.plan.steps, &outputs);
        if self.late() {
            crate::contract::mark(&mut self.plan);
            crate::rowblock::group(&mut self.plan);
            crate::segblock::group(&mut self.plan);
            return Ok(Lowered::Unrolled(self.plan));
        }
        roll_kernels(&mut self.plan.steps);
        crate::contract::mark(&mut self.plan);
        crate::rowblock::group(&mut self.plan);
        crate::segblock::group(&mut self.plan);
        Ok(Lowered::Plan(self.plan))
    }

    /// Whether the map `c` (function, operands) needs operand `j` computed
    /// ([`TermFacts::map_operand_needed`]).
    fn map_operand_needed(&self, c: &[Id], j: usize) -> bool {
        crate::term::map_operand_needed(self.nodes, &self.kinds, &self.free, c, j)
    }

    fn is_kernel(&self, i: usize) -> bool {
        let n = &self.nodes[i];
        n.array_op().is_some()
    }

    fn new_value(&mut self, name: String, elem: ElemType, rank: usize, origin: Origin) -> ValueId {
        self.plan.values.push(ValueInfo { name, elem, rank, origin, span: None });
        self.plan.values.len() - 1
    }

    fn name_for(&mut self, i: usize) -> String {
        if let Some(n) = self.names.get(&i) {
            return n.clone();
        }
        let n = format!("t{}", self.fresh);
        self.fresh += 1;
        n
    }

    fn elem_rank(&self, i: usize) -> Result<(ElemType, usize)> {
        match &self.kinds[i] {
            Kind::Array { elem, shape } => Ok((*elem, shape.len())),
            Kind::Scalar(e) => Ok((*e, 0)),
            k => Err(internal(format!("node {i} is {k:?}, not a value"))),
        }
    }

    /// The value of an output node: a kernel's result, a host scalar, or a copy of an input.
    fn output_value(&mut self, o: usize, name: &str) -> Result<ValueId> {
        if let Some(&v) = self.value_of.get(&o) {
            return Ok(v);
        }
        match &self.nodes[o] {
            ArrayLang::Input(s) if self.kinds[o].is_array() => {
                // an output that is an input: a copy
                let src = self.input(s.as_str())?;
                let (elem, rank) = self.elem_rank(o)?;
                let dst = self.new_value(name.to_string(), elem, rank, Origin::Computed);
                let space = self.dims_of_value(src, o)?;
                let mut fb = FuncBuilder::new(vec![ElemType::I64; rank]);
                let ix: Vec<Reg> = (0..rank as Reg).collect();
                let r = fb.emit(elem, |dst| Inst::Read { dst, array: src, index: ix });
                let elem = fb.finish(vec![r]);
                self.plan.steps.push(Step::Kernel(Kernel {
                    kind: KernelKind::Copy,
                    space,
                    elem,
                    lanes: vec![Lane { dst, op: LaneOp::Generate }],
                    span: self.spans.get(&o).copied(),
                    contraction: None,
                }));
                self.value_of.insert(o, dst);
                Ok(dst)
            }
            _ if self.kinds[o].is_array() => self.array(Id::from(o)),
            _ => self.host_scalar(o, name.to_string()),
        }
    }

    /// A lazy `if` of the host (its branches hold kernels), or a lazy `&&` / `||`: a
    /// `Step::If` whose branches compute their value in steps of their own.
    fn branch_if(&mut self, i: usize) -> Result<ValueId> {
        if let Some(&v) = self.value_of.get(&i) {
            return Ok(v);
        }
        // the condition, and each branch: a node, or the constant that decides `&&` / `||`
        let (c, t, e) = match self.nodes[i] {
            ArrayLang::If([c, t, e]) => (c, Ok(t), Ok(e)),
            ArrayLang::And([a, b]) => (a, Ok(b), Err(false)),
            ArrayLang::Or([a, b]) => (a, Err(true), Ok(b)),
            _ => return Err(internal("not an if")),
        };
        let cname = format!("c{}", self.plan.values.len());
        let cond = self.host_scalar(usize::from(c), cname)?;
        let ci = usize::from(c);
        let branch =
            |me: &mut Self, b: std::result::Result<Id, bool>, holds: bool| -> Result<(Vec<Step>, ValueId)> {
                // what a branch lowers is its own: forgotten outside it
                let (saved_values, saved_dims) = (me.value_of.clone(), me.dim_memo.clone());
                let outer = std::mem::take(&mut me.plan.steps);
                me.context.push(Guard::always().and(Lit { cond: ci, holds }));
                let v = match b {
                    Err(k) => {
                        let mut fb = FuncBuilder::new(Vec::new());
                        let r = fb.konst(Scalar::Bool(k));
                        let body = fb.finish(vec![r]);
                        let dst = me.new_value(
                            format!("b{}", me.plan.values.len()),
                            ElemType::Bool,
                            0,
                            Origin::Computed,
                        );
                        me.plan.steps.push(Step::Scalar { dst, body });
                        Ok(dst)
                    }
                    Ok(b) if me.kinds[usize::from(b)].is_array() => me.array(b),
                    Ok(b) => {
                        let name = format!("b{}", me.plan.values.len());
                        me.host_scalar(usize::from(b), name)
                    }
                };
                me.context.pop();
                let steps = std::mem::replace(&mut me.plan.steps, outer);
                me.value_of = saved_values;
                me.dim_memo = saved_dims;
                Ok((steps, v?))
            };
        let (then_steps, then_value) = branch(self, t, true)?;
        let (else_steps, else_value) = branch(self, e, false)?;
        let (elem, rank) = self.elem_rank(i)?;
        let name = self.name_for(i);
        let dst = self.new_value(name, elem, rank, Origin::Computed);
        self.plan.steps.push(Step::If { cond, then_steps, then_value, else_steps, else_value, dst });
        self.value_of.insert(i, dst);
        Ok(dst)
    }

    fn input(&self, name: &str) -> Result<ValueId> {
        self.inputs.get(name).copied().ok_or_else(|| internal(format!("unknown input `{name}`")))
    }

    /// A host step computing scalar node `i` once.
    fn host_scalar(&mut self, i: usize, name: String) -> Result<ValueId> {
        if let Some(&v) = self.value_of.get(&i) {
            return Ok(v);
        }
        if self.branching.contains(&i) {
            return self.array(Id::from(i));
        }
        match &self.nodes[i] {
            ArrayLang::Input(s) => return self.input(s.as_str()),
            ArrayLang::Size(s) => {
                return self
                    .sizes
                    .get(s.as_str())
                    .copied()
                    .ok_or_else(|| internal(format!("unknown size {s}")))
            }
            _ => {}
        }
        let (elem, _) = self.elem_rank(i)?;
        let mut fb = FuncBuilder::new(Vec::new());
        let r = self.scalar(&mut fb, i, &[])?;
        let body = fb.finish(vec![r]);
        let dst = self.new_value(name, elem, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst, body });
        self.value_of.insert(i, dst);
        Ok(dst)
    }

    /// An extent: a constant, a size, or a host scalar computed from node `i`.
    fn extent(&mut self, i: usize) -> Result<Arg> {
        match &self.nodes[i] {
            ArrayLang::Lit(Literal::I64(v)) => Ok(Arg::Const(*v)),
            _ => {
                let name = format!("d{}", self.plan.values.len());
                Ok(Arg::Value(self.host_scalar(i, name)?))
            }
        }
    }

    /// The extents of a `shape` node.
    fn shape_extents(&mut self, sh: Id) -> Result<Vec<Arg>> {
        let ArrayLang::Shape(ds) = &self.nodes[usize::from(sh)] else {
            return Err(internal("a shape argument that is not a `shape` node"));
        };
        let ds: Vec<usize> = ds.iter().map(|d| usize::from(*d)).collect();
        ds.into_iter().map(|d| self.extent(d)).collect()
    }

    /// The extents of materialised value `v` (of term node `node`), from the analysis when
    /// it knows them, else read at run time.
    fn dims_of_value(&mut self, v: ValueId, node: usize) -> Result<Vec<Arg>> {
        let shape = match &self.kinds[node] {
            Kind::Array { shape, .. } => shape.clone(),
            _ => return Ok(Vec::new()),
        };
        let mut out = Vec::with_capacity(shape.len());
        for (k, d) in shape.iter().enumerate() {
            out.push(match d {
                SymDim::Const(c) => Arg::Const(*c),
                SymDim::Size(s) => match self.sizes.get(s.as_str()) {
                    Some(&sv) => Arg::Value(sv),
                    None => self.dim_at_run_time(v, k)?,
                },
                _ => self.dim_at_run_time(v, k)?,
            });
        }
        Ok(out)
    }

    fn dim_at_run_time(&mut self, v: ValueId, axis: usize) -> Result<Arg> {
        if let Some(a) = self.dim_memo.get(&(v, axis)) {
            return Ok(*a);
        }
        let mut fb = FuncBuilder::new(Vec::new());
        let ax = fb.konst(Scalar::I64(axis as i64));
        let r = fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax });
        let body = fb.finish(vec![r]);
        let name = format!("{}_d{axis}", self.plan.values[v].name);
        let dst = self.new_value(name, ElemType::I64, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst, body });
        let a = Arg::Value(dst);
        self.dim_memo.insert((v, axis), a);
        Ok(a)
    }

    /// The value of an array (or kernel-result) node: lowered already (a strict kernel, in
    /// term order), or lowered now, under its guard where the steps being written do not
    /// imply it ([`crate::place`]).
    fn array(&mut self, a: Id) -> Result<ValueId> {
        let i = usize::from(a);
        if let Some(&v) = self.value_of.get(&i) {
            return Ok(v);
        }
        // (a node whose guard never holds, under contradictory conditions, is placed as
        // unused: an element function may still hold code for it, which never runs)
        let g = match self.placement.place(i) {
            Place::HostLazy(g) => Some(g.clone()),
            Place::Unused => Some(Guard::never()),
            Place::HostStrict | Place::Element => None,
        };
        if let Some(g) = g {
            let testable = g.conjunctions().iter().flatten().all(|l| self.placement.testable(l.cond));
            // a guard whose test reads the node itself (`if c then s else (if (if c then t
            // else s[0]) ..)`: the second alternative's condition reads `s`) cannot be tested
            // before it: the node is computed here, as it was before placement
            let circular = g.conjunctions().iter().flatten().any(|l| self.reaches(l.cond, i));
            if !self.needed_here(i)
                && testable
                && !circular
                && !self.guarding.contains(&i)
                && !matches!(self.nodes[i], ArrayLang::Input(_))
            {
                self.guarding.push(i);
                let r = self.guarded(i, &g);
                self.guarding.pop();
                return r;
            }
        }
        self.array_here(i)
    }

    /// A permute's destination `d`: a constant `fill` that only this permute reads is made
    /// by the permute ([`fill_dests`]); any other array is lowered and copied.
    fn permute_dest(&mut self, d: Id) -> Result<PermuteDest> {
        let i = usize::from(d);
        if self.fill_dests.contains(&i) {
            if let ArrayLang::Fill([sh, x]) = self.nodes[i] {
                if let ArrayLang::Lit(l) = self.nodes[usize::from(x)] {
                    let shape = self.shape_extents(sh)?;
                    let span = self.spans.get(&i).copied();
                    return Ok(PermuteDest::Fill { shape, value: l.to_scalar(), span });
                }
            }
        }
        Ok(PermuteDest::Array(self.array(d)?))
    }

    /// Whether node `to` is in the term of node `from`.
    fn reaches(&self, from: usize, to: usize) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            // a node's children come before it in the term
            if n < to || !seen.insert(n) {
                continue;
            }
            stack.extend(self.nodes[n].children().iter().map(|c| usize::from(*c)));
        }
        false
    }

    /// Whether node `i` is needed wherever the steps being written run: it is strict, or
    /// its guard is implied by what they know.
    fn needed_here(&self, i: usize) -> bool {
        match self.placement.place(i) {
            Place::HostStrict => true,
            Place::HostLazy(g) => {
                self.context.iter().any(|c| g.implied_by_guard(c)) || g.implied_by(&self.context_lits())
            }
            Place::Element | Place::Unused => false,
        }
    }

    /// The literals the steps being written know to hold.
    fn context_lits(&self) -> Vec<Lit> {
        self.context
            .iter()
            .filter_map(|g| match g.conjunctions() {
                [c] => Some(c.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Lazy node `i` under guard `g`: a `Step::If` on a test of `g` that computes it when
    /// `g` holds (and a placeholder of its type otherwise, which nothing reads: every use
    /// of `i` is under `g`).
    fn guarded(&mut self, i: usize, g: &Guard) -> Result<ValueId> {
        let cond = self.guard_test(g)?;
        let (saved_values, saved_dims) = (self.value_of.clone(), self.dim_memo.clone());
        let outer = std::mem::take(&mut self.plan.steps);
        self.context.push(g.clone());
        let v = self.array_here(i);
        self.context.pop();
        let then_steps = std::mem::take(&mut self.plan.steps);
        self.value_of = saved_values;
        self.dim_memo = saved_dims;
        let then_value = v?;
        let (elem, rank) = self.elem_rank(i)?;
        let else_value = self.new_value(format!("u{}", self.plan.values.len()), elem, rank, Origin::Computed);
        let mut fb = FuncBuilder::new(vec![ElemType::I64; rank]);
        let r = fb.konst(zero_of(elem));
        let body = fb.finish(vec![r]);
        let else_step = if rank == 0 {
            Step::Scalar { dst: else_value, body }
        } else {
            // an empty array of its rank
            Step::Kernel(Kernel {
                kind: KernelKind::Generate,
                space: vec![Arg::Const(0); rank],
                elem: body,
                lanes: vec![Lane { dst: else_value, op: LaneOp::Generate }],
                span: None,
                contraction: None,
            })
        };
        self.plan.steps = outer;
        let name = format!("{}_if", self.plan.values[then_value].name);
        let dst = self.new_value(name, elem, rank, Origin::Computed);
        self.plan.steps.push(Step::If {
            cond,
            then_steps,
            then_value,
            else_steps: vec![else_step],
            else_value,
            dst,
        });
        self.value_of.insert(i, dst);
        Ok(dst)
    }

    /// A host `bool` that holds when guard `g` does, computed without failing: a read out
    /// of bounds or an integer division by zero in a condition gives some value instead of
    /// an error. (Where a condition fails, the program fails when it tests it, or computes
    /// what the guard protects anyway: a kernel under a lambda is a `let`'s.)
    fn guard_test(&mut self, g: &Guard) -> Result<ValueId> {
        let mut fb = FuncBuilder::new(Vec::new());
        fb.safe = true;
        let r = self.any_of(&mut fb, g.conjunctions())?;
        let body = fb.finish(vec![r]);
        let dst = self.new_value(format!("g{}", self.plan.values.len()), ElemType::Bool, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst, body });
        Ok(dst)
    }

    /// `c0 || c1 || ..` of conjunctions, each tested only when the ones before fail.
    fn any_of(&mut self, fb: &mut FuncBuilder, cs: &[Vec<Lit>]) -> Result<Reg> {
        let Some((first, rest)) = cs.split_first() else { return Ok(fb.konst(Scalar::Bool(false))) };
        let a = self.all_of(fb, first)?;
        if rest.is_empty() {
            return Ok(a);
        }
        let (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
        let (else_block, else_ret) = fb.try_block(|fb| self.any_of(fb, rest))?;
        Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: a,
            then_block,
            then_ret,
            else_block,
            else_ret,
        }))
    }

    /// `l0 && l1 && ..`, each literal tested only when the ones before hold.
    fn all_of(&mut self, fb: &mut FuncBuilder, ls: &[Lit]) -> Result<Reg> {
        let Some((first, rest)) = ls.split_first() else { return Ok(fb.konst(Scalar::Bool(true))) };
        let mut c = self.scalar(fb, first.cond, &[])?;
        if !first.holds {
            c = fb.emit(ElemType::Bool, |dst| Inst::Unary { dst, op: UnOp::Not, a: c });
        }
        if rest.is_empty() {
            return Ok(c);
        }
        let (then_block, then_ret) = fb.try_block(|fb| self.all_of(fb, rest))?;
        let (else_block, else_ret) = fb.block(|fb| fb.konst(Scalar::Bool(false)));
        Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: c,
            then_block,
            then_ret,
            else_block,
            else_ret,
        }))
    }

    /// The value of array (or kernel-result) node `i`, lowered here if it is not yet.
    fn array_here(&mut self, i: usize) -> Result<ValueId> {
        if let Some(&v) = self.value_of.get(&i) {
            return Ok(v);
        }
        match &self.nodes[i] {
            ArrayLang::Input(s) => self.input(s.as_str()),
            _ if self.branching.contains(&i) => self.branch_if(i),
            ArrayLang::Proj([_, m]) if matches!(self.nodes[usize::from(*m)], ArrayLang::Multi(_)) => {
                let m = usize::from(*m);
                let before = self.lane_wanted.replace(i);
                let r = self.kernel(m);
                self.lane_wanted = before;
                r?;
                self.value_of.get(&i).copied().ok_or_else(|| internal("a multi lane without a result"))
            }
            _ if self.is_kernel(i) => {
                self.kernel(i)?;
                self.value_of.get(&i).copied().ok_or_else(|| internal("a kernel without a result"))
            }
            n => Err(internal(format!("an array that is neither an input nor a kernel: {n:?}"))),
        }
    }

    /// The lambda node `f`: its parameter types and body.
    fn lam(&self, f: Id) -> Result<(Vec<ElemType>, usize)> {
        match &self.nodes[usize::from(f)] {
            ArrayLang::Lam([p, b]) => match &self.nodes[usize::from(*p)] {
                ArrayLang::Params(t) => Ok((t.0.clone(), usize::from(*b))),
                _ => Err(internal("a lambda without parameter types")),
            },
            n => Err(internal(format!("a function that is not a lambda: {n:?}"))),
        }
    }

    /// A closed lambda as a function of its parameters.
    fn func(&mut self, f: Id) -> Result<Func> {
        let (tys, body) = self.lam(f)?;
        let mut fb = FuncBuilder::new(tys.clone());
        let env: Vec<Reg> = (0..tys.len() as Reg).collect();
        let r = self.result(&mut fb, body, &env)?;
        Ok(fb.finish(r))
    }

    /// A closed scalar node as a function of no parameters.
    fn konst_func(&mut self, ne: Id) -> Result<Func> {
        let mut fb = FuncBuilder::new(Vec::new());
        let r = self.scalar(&mut fb, usize::from(ne), &[])?;
        Ok(fb.finish(vec![r]))
    }

    /// A function of `r` index parameters: `f` applied to them.
    fn index_func(&mut self, f: Id, r: usize) -> Result<Func> {
        let (tys, _) = self.lam(f)?;
        if tys.len() != r {
            return Err(internal("an index function of the wrong arity"));
        }
        self.func(f)
    }

    /// An element function of `r` index parameters built by `body` from the index registers.
    fn elem_func(
        &mut self,
        r: usize,
        body: impl FnOnce(&mut Self, &mut FuncBuilder, &[Reg]) -> Result<Reg>,
    ) -> Result<Func> {
        let mut fb = FuncBuilder::new(vec![ElemType::I64; r]);
        let ix: Vec<Reg> = (0..r as Reg).collect();
        let out = body(self, &mut fb, &ix)?;
        Ok(fb.finish(vec![out]))
    }

    fn read(&self, fb: &mut FuncBuilder, v: ValueId, ix: Vec<Reg>) -> Reg {
        let elem = self.plan.values[v].elem;
        fb.emit(elem, |dst| Inst::Read { dst, array: v, index: ix })
    }

    /// Loads extent `a` into a register.
    fn load_arg(fb: &mut FuncBuilder, a: Arg) -> Reg {
        match a {
            Arg::Const(c) => fb.konst(Scalar::I64(c)),
            Arg::Value(v) => fb.emit(ElemType::I64, |dst| Inst::Load { dst, value: v }),
        }
    }

    fn push_kernel(&mut self, i: usize, space: Vec<Arg>, elem: Func, op: LaneOp) -> Result<()> {
        let (e, rank) = self.elem_rank(i)?;
        let name = self.name_for(i);
        let dst = self.new_value(name, e, rank, Origin::Computed);
        let kind = kernel_kind(&self.nodes[i], false).unwrap_or(KernelKind::Copy);
        let span = self.spans.get(&i).copied();
        self.plan.values[dst].span = span;
        self.plan.steps.push(Step::Kernel(Kernel {
            kind,
            space,
            elem,
            lanes: vec![Lane { dst, op }],
            span,
            contraction: None,
        }));
        self.value_of.insert(i, dst);
        Ok(())
    }

    /// An array operand as a run-time error names it: `` `xs` `` for an input or a named
    /// value, else "the array" (as the reference interpreter says).
    fn describe(&self, v: ValueId, n: usize) -> String {
        let info = &self.plan.values[v];
        if info.origin == Origin::Input || self.names.contains_key(&n) {
            format!("`{}`", info.name)
        } else {
            "the array".to_string()
        }
    }

    /// Node `n`'s shape as a run-time `E-SHAPE` shows it, `{k}` standing for its extents
    /// ([`eqfuse_ir::plan::named_shape`]).
    fn shape_shown(&self, n: usize, k: usize) -> String {
        let symbolic: Option<Vec<String>> = match &self.kinds[n] {
            Kind::Array { shape, .. } => shape
                .iter()
                .map(|d| match d {
                    SymDim::Const(c) => Some(c.to_string()),
                    SymDim::Size(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        eqfuse_ir::plan::named_shape(symbolic.as_deref(), &format!("{{{k}}}"))
    }

    /// Adds `Assert`s that arrays `vs` (term nodes `ns`) have one shape, where the analysis
    /// does not already know it (`at`: the operation's node).
    fn assert_same_shape(&mut self, op: &str, at: usize, vs: &[(ValueId, usize)]) -> Result<()> {
        let Some(&(v0, n0)) = vs.first() else { return Ok(()) };
        let d0 = self.dims_of_value(v0, n0)?;
        for &(v, n) in &vs[1..] {
            let d = self.dims_of_value(v, n)?;
            if d == d0 {
                continue;
            }
            let mut fb = FuncBuilder::new(Vec::new());
            let mut all = fb.konst(Scalar::Bool(d.len() == d0.len()));
            for (x, y) in d0.iter().zip(&d) {
                let (rx, ry) = (Self::load_arg(&mut fb, *x), Self::load_arg(&mut fb, *y));
                let eq = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: rx, b: ry });
                all = fb.and(all, eq);
            }
            let cond = fb.finish(vec![all]);
            let message = format!(
                "`{op}`: {} has shape {} but {} has shape {}",
                self.describe(v0, n0),
                self.shape_shown(n0, 0),
                self.describe(v, n),
                self.shape_shown(n, 1)
            );
            self.plan.steps.push(Step::Assert {
                cond,
                code: Code::Shape,
                message,
                shown: vec![d0.clone(), d],
                span: self.spans.get(&at).copied(),
            });
        }
        Ok(())
    }

    /// Lowers kernel node `i` (its operands are lowered already: term order).
    fn kernel(&mut self, i: usize) -> Result<()> {
        if self.value_of.contains_key(&i) {
            return Ok(());
        }
        let node = self.nodes[i].clone();
        use ArrayLang as L;
        match node {
            L::Map(c) => {
                let (f, arrays) = c.split_first().ok_or_else(|| internal("map without a function"))?;
                // an operand the function does not use, of the shape the analysis knows for
                // the first, is not computed for the map (as in the map's index form)
                let mut vs = Vec::new();
                for (j, a) in arrays.iter().enumerate() {
                    if self.map_operand_needed(&c, j) {
                        vs.push(Some((self.array(*a)?, usize::from(*a))));
                    } else {
                        vs.push(None);
                    }
                }
                let needed: Vec<(ValueId, usize)> = vs.iter().flatten().copied().collect();
                let &(v0, n0) = needed.first().ok_or_else(|| internal("map without arrays"))?;
                self.assert_same_shape("map", i, &needed)?;
                let space = self.dims_of_value(v0, n0)?;
                let (_, body) = self.lam(*f)?;
                let r = space.len();
                let k = vs.len();
                let elem = self.elem_func(r, |me, fb, ix| {
                    // operand `j` is parameter `k - 1 - j`: one the function does not use is not
                    // read (it is in bounds: no error is lost), and an array is read once
                    let mut read: HashMap<ValueId, Reg> = HashMap::new();
                    let mut args = Vec::with_capacity(k);
                    for (j, v) in vs.iter().enumerate() {
                        let Some((v, _)) = v.filter(|_| me.free[body].contains(&((k - 1 - j) as u32))) else {
                            args.push(Reg::MAX);
                            continue;
                        };
                        let reg = match read.get(&v) {
                            Some(&reg) => reg,
                            None => me.read(fb, v, ix.to_vec()),
                        };
                        read.insert(v, reg);
                        args.push(reg);
                    }
                    me.scalar(fb, body, &args)
                })?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Generate([sh, f]) => {
                let space = self.shape_extents(sh)?;
                let elem = self.index_func(f, space.len())?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Iota([n]) => {
                let space = vec![self.extent(usize::from(n))?];
                let elem = self.elem_func(1, |_, _, ix| Ok(ix[0]))?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Fill([sh, x]) => {
                let space = self.shape_extents(sh)?;
                let elem = self.elem_func(space.len(), |me, fb, _| me.scalar(fb, usize::from(x), &[]))?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Reduce([op, ne, a]) | L::Scan([op, ne, a]) | L::ScanEx([op, ne, a]) => {
                let v = self.array(a)?;
                let space = self.dims_of_value(v, usize::from(a))?;
                let elem = self.elem_func(space.len(), |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
                let (op, ne) = (self.func(op)?, self.konst_func(ne)?);
                let lane = match node {
                    L::Reduce(_) => LaneOp::Reduce { op, ne },
                    L::Scan(_) => LaneOp::Scan { op, ne, exclusive: false },
                    _ => LaneOp::Scan { op, ne, exclusive: true },
                };
                self.push_kernel(i, space, elem, lane)
            }
            L::Redomap([op, ne, sh, f]) | L::Scanomap([op, ne, sh, f]) | L::Scanexomap([op, ne, sh, f]) => {
                let space = self.shape_extents(sh)?;
                let elem = self.index_func(f, space.len())?;
                let (op, ne) = (self.func(op)?, self.konst_func(ne)?);
                let lane = match node {
                    L::Redomap(_) => LaneOp::Reduce { op, ne },
                    L::Scanomap(_) => LaneOp::Scan { op, ne, exclusive: false },
                    _ => LaneOp::Scan { op, ne, exclusive: true },
                };
                self.push_kernel(i, space, elem, lane)
            }
            L::Filter([p, a]) => {
                let v = self.array(a)?;
                let space = self.dims_of_value(v, usize::from(a))?;
                let elem = self.elem_func(1, |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
                let pred = self.func(p)?;
                self.push_kernel(i, space, elem, LaneOp::Filter { pred })
            }
            L::Filtermap([p, sh, f]) => {
                let space = self.shape_extents(sh)?;
                let elem = self.index_func(f, space.len())?;
                let pred = self.func(p)?;
                self.push_kernel(i, space, elem, LaneOp::Filter { pred })
            }
            L::Permute([op, d, g, a]) => {
                let dest = self.permute_dest(d)?;
                let v = self.array(a)?;
                let space = self.dims_of_value(v, usize::from(a))?;
                let elem = self.elem_func(space.len(), |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
                let (op, target) = (self.func(op)?, self.index_func(g, space.len())?);
                self.push_kernel(i, space, elem, LaneOp::Permute { op, dest, target })
            }
            L::Permutemap([op, d, g, sh, f]) => {
                let dest = self.permute_dest(d)?;
                let space = self.shape_extents(sh)?;
                let elem = self.index_func(f, space.len())?;
                let (op, target) = (self.func(op)?, self.index_func(g, space.len())?);
                self.push_kernel(i, space, elem, LaneOp::Permute { op, dest, target })
            }
            L::Gather([a, idx]) => {
                let (va, vi) = (self.array(a)?, self.array(idx)?);
                let space = self.dims_of_value(vi, usize::from(idx))?;
                let elem = self.elem_func(space.len(), |me, fb, ix| {
                    let j = me.read(fb, vi, ix.to_vec());
                    Ok(me.read(fb, va, vec![j]))
                })?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Backpermute([sh, f, a]) => {
                let va = self.array(a)?;
                let space = self.shape_extents(sh)?;
                let (tys, body) = self.lam(f)?;
                if tys.len() != space.len() {
                    return Err(internal("a backpermute function of the wrong arity"));
                }
                let elem = self.elem_func(space.len(), |me, fb, ix| {
                    let t = me.result(fb, body, ix)?;
                    Ok(me.read(fb, va, t))
                })?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Transpose([a]) => {
                let va = self.array(a)?;
                let d = self.dims_of_value(va, usize::from(a))?;
                let [d0, d1] = d[..] else { return Err(internal("transpose of an array not of rank 2")) };
                let elem = self.elem_func(2, |me, fb, ix| Ok(me.read(fb, va, vec![ix[1], ix[0]])))?;
                self.push_kernel(i, vec![d1, d0], elem, LaneOp::Generate)
            }
            L::Reverse([a]) => {
                let va = self.array(a)?;
                let space = self.dims_of_value(va, usize::from(a))?;
                let last = *space.last().ok_or_else(|| internal("reverse of a scalar"))?;
                let r = space.len();
                let elem = self.elem_func(r, |me, fb, ix| {
                    // the last index, `length - 1` (folded when the length is known)
                    let top = match last {
                        Arg::Const(n) => fb.konst(Scalar::I64(n.wrapping_sub(1))),
                        Arg::Value(_) => {
                            let d = Self::load_arg(fb, last);
                            let one = fb.konst(Scalar::I64(1));
                            fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: d, b: one })
                        }
                    };
                    let j = ix[r - 1];
                    let flipped =
                        fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: top, b: j });
                    let mut at = ix.to_vec();
                    at[r - 1] = flipped;
                    Ok(me.read(fb, va, at))
                })?;
                self.push_kernel(i, space, elem, LaneOp::Generate)
            }
            L::Slice([a, s, l]) => {
                let va = self.array(a)?;
                let len_a = self.dims_of_value(va, usize::from(a))?;
                let start = self.extent(usize::from(s))?;
                let len = self.extent(usize::from(l))?;
                let na = *len_a.first().ok_or_else(|| internal("slice of a scalar"))?;
                // 0 <= start, 0 <= len, start + len <= length a (no overflow: len <= n - start)
                let mut fb = FuncBuilder::new(Vec::new());
                let (rs, rl, rn) = (
                    Self::load_arg(&mut fb, start),
                    Self::load_arg(&mut fb, len),
                    Self::load_arg(&mut fb, na),
                );
                let zero = fb.konst(Scalar::I64(0));
                let c1 = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: rs, b: zero });
                let c2 = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: rl, b: zero });
                let c3 = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Le, a: rs, b: rn });
                let room = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: rn, b: rs });
                let c4 = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Le, a: rl, b: room });
                let mut all = fb.and(c1, c2);
                all = fb.and(all, c3);
                all = fb.and(all, c4);
                let cond = fb.finish(vec![all]);
                self.plan.steps.push(Step::Assert {
                    cond,
                    code: Code::Index,
                    message: format!(
                        "slice: start {{0!}} and length {{1!}} out of range for {} of length {{2!}}",
                        self.describe(va, usize::from(a))
                    ),
                    shown: vec![vec![start], vec![len], vec![na]],
                    span: self.spans.get(&i).copied(),
                });
                let elem = self.elem_func(1, |me, fb, ix| {
                    let rs = Self::load_arg(fb, start);
                    let at =
                        fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Add, a: rs, b: ix[0] });
                    Ok(me.read(fb, va, vec![at]))
                })?;
                self.push_kernel(i, vec![len], elem, LaneOp::Generate)
            }
            L::Concat([a, b]) => {
                let (va, vb) = (self.array(a)?, self.array(b)?);
                let la = self.dims_of_value(va, usize::from(a))?[0];
                let lb = self.dims_of_value(vb, usize::from(b))?[0];
                let mut fb = FuncBuilder::new(Vec::new());
                let (ra, rb) = (Self::load_arg(&mut fb, la), Self::load_arg(&mut fb, lb));
                let t = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Add, a: ra, b: rb });
                let body = fb.finish(vec![t]);
                let total = self.new_value(
                    format!("d{}", self.plan.values.len()),
                    ElemType::I64,
                    0,
                    Origin::Computed,
                );
                self.plan.steps.push(Step::Scalar { dst: total, body });
                let elem = self.elem_func(1, |me, fb, ix| {
                    let ra = Self::load_arg(fb, la);
                    let c =
                        fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: ix[0], b: ra });
                    let elem = me.plan.values[va].elem;
                    let (then_block, then_ret) = fb.block(|fb| me.read(fb, va, vec![ix[0]]));
                    let (else_block, else_ret) = fb.block(|fb| {
                        let ra = Self::load_arg(fb, la);
                        let off = fb.emit(ElemType::I64, |dst| Inst::Binary {
                            dst,
                            op: BinOp::Sub,
                            a: ix[0],
                            b: ra,
                        });
                        me.read(fb, vb, vec![off])
                    });
                    Ok(fb.emit(elem, |dst| Inst::If {
                        dst,
                        cond: c,
                        then_block,
                        then_ret,
                        else_block,
                        else_ret,
                    }))
                })?;
                self.push_kernel(i, vec![Arg::Value(total)], elem, LaneOp::Generate)
            }
            L::Reshape([sh, a]) => {
                let va = self.array(a)?;
                let src = self.dims_of_value(va, usize::from(a))?;
                let out = self.shape_extents(sh)?;
                if !same_count(&src, &out) {
                    let mut fb = FuncBuilder::new(Vec::new());
                    let p = Self::product(&mut fb, &src);
                    let q = Self::product(&mut fb, &out);
                    let eq = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: p, b: q });
                    // a shape with a negative size or an overflowing count is left to the
                    // kernel over it (`E-SHAPE` / `E-LIMIT`, as the reference reports it)
                    let invalid = Self::invalid_shape(&mut fb, &out);
                    let ok = Self::or(&mut fb, eq, invalid);
                    let cond = fb.finish(vec![ok]);
                    self.plan.steps.push(Step::Assert {
                        cond,
                        code: Code::Shape,
                        message: format!(
                            "`reshape` to {{0}} ({{0#}} elements) of {} of shape {{1}} ({{1#}} elements): the element counts differ",
                            self.describe(va, usize::from(a))
                        ),
                        shown: vec![out.clone(), src.clone()],
                        span: self.spans.get(&i).copied(),
                    });
                }
                let r = out.len();
                let elem = self.elem_func(r, |me, fb, ix| {
                    // flat = ((i0 * D1 + i1) * D2 + i2) ...
                    let mut flat = ix[0];
                    for k in 1..r {
                        let d = Self::load_arg(fb, out[k]);
                        let m =
                            fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: flat, b: d });
                        flat = fb.emit(ElemType::I64, |dst| Inst::Binary {
                            dst,
                            op: BinOp::Add,
                            a: m,
                            b: ix[k],
                        });
                    }
                    // index k = (flat / (A[k+1] * ..)) % A[k]  (no % for the outermost)
                    let m = src.len();
                    let mut at = Vec::with_capacity(m);
                    for k in 0..m {
                        let mut q = flat;
                        if k + 1 < m {
                            let stride = Self::product(fb, &src[k + 1..]);
                            q = fb.emit(ElemType::I64, |dst| Inst::Binary {
                                dst,
                                op: BinOp::Div,
                                a: q,
                                b: stride,
                            });
                        }
                        if k > 0 {
                            let d = Self::load_arg(fb, src[k]);
                            q = fb.emit(ElemType::I64, |dst| Inst::Binary {
                                dst,
                                op: BinOp::Rem,
                                a: q,
                                b: d,
                            });
                        }
                        at.push(q);
                    }
                    Ok(me.read(fb, va, at))
                })?;
                self.push_kernel(i, out, elem, LaneOp::Generate)
            }
            L::Multi(c) => {
                let (sh, lanes) = c.split_first().ok_or_else(|| internal("multi without a shape"))?;
                let space = self.shape_extents(*sh)?;
                // the result nodes: proj k m
                let mut results: HashMap<i64, usize> = HashMap::new();
                for (j, n) in self.nodes.iter().enumerate() {
                    if let L::Proj([k, m]) = n {
                        if usize::from(*m) == i {
                            if let L::Lit(Literal::I64(k)) = self.nodes[usize::from(*k)] {
                                results.entry(k).or_insert(j);
                            }
                        }
                    }
                }
                // one element function for all lanes: what they share is computed once
                let r = space.len();
                let mut fb = FuncBuilder::new(vec![ElemType::I64; r]);
                let ix: Vec<Reg> = (0..r as Reg).collect();
                let mut out = Vec::new();
                let mut rets = Vec::new();
                let mut reduces = false;
                // the lanes not lowered yet that are needed here: the one asked for, and those
                // needed wherever this step runs
                let wanted: Vec<usize> = results
                    .values()
                    .copied()
                    .filter(|j| !self.value_of.contains_key(j))
                    .filter(|&j| Some(j) == self.lane_wanted || self.needed_here(j))
                    .collect();
                if wanted.is_empty() {
                    return Ok(());
                }
                for (k, lane) in lanes.iter().enumerate() {
                    let Some(&j) = results.get(&(k as i64)) else { continue };
                    if !wanted.contains(&j) {
                        continue;
                    }
                    let (f, op) = match self.nodes[usize::from(*lane)].clone() {
                        L::LaneGen([f]) => (f, LaneOp::Generate),
                        L::LaneRed([op, ne, f]) => {
                            reduces = true;
                            (f, LaneOp::Reduce { op: self.func(op)?, ne: self.konst_func(ne)? })
                        }
                        n => return Err(internal(format!("a multi lane that is {n:?}"))),
                    };
                    let (tys, body) = self.lam(f)?;
                    if tys.len() != r {
                        return Err(internal("a lane function of the wrong arity"));
                    }
                    rets.push(self.scalar(&mut fb, body, &ix)?);
                    let (e, rank) = self.elem_rank(j)?;
                    let name = self.name_for(j);
                    let dst = self.new_value(name, e, rank, Origin::Computed);
                    self.plan.values[dst].span = self.spans.get(&j).copied();
                    self.value_of.insert(j, dst);
                    out.push(Lane { dst, op });
                }
                let elem = fb.finish(rets);
                let kind = if reduces { KernelKind::Reduce } else { KernelKind::Generate };
                let span = self.spans.get(&i).copied();
                self.plan.steps.push(Step::Kernel(Kernel {
                    kind,
                    space,
                    elem,
                    lanes: out,
                    span,
                    contraction: None,
                }));
                Ok(())
            }
            n => Err(internal(format!("not a kernel: {n:?}"))),
        }
    }

    fn product(fb: &mut FuncBuilder, ds: &[Arg]) -> Reg {
        let mut p = fb.konst(Scalar::I64(1));
        for d in ds {
            let r = Self::load_arg(fb, *d);
            p = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: p, b: r });
        }
        p
    }

    /// Whether a size in `ds` is negative or their running product overflows `i64`,
    /// checked size by size as the reference interpreter checks a shape.
    fn invalid_shape(fb: &mut FuncBuilder, ds: &[Arg]) -> Reg {
        let (zero, one) = (fb.konst(Scalar::I64(0)), fb.konst(Scalar::I64(1)));
        let mut p = one;
        let mut bad = fb.konst(Scalar::Bool(false));
        for d in ds {
            let r = Self::load_arg(fb, *d);
            let q = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: p, b: r });
            // for r > 0 the product overflowed iff q / r != p (the wrapped q is at least 2^64
            // away from p * r); for r = 0 it cannot; r < 0 is bad anyway
            let div = fb.emit(ElemType::I64, |dst| Inst::Call { dst, f: ScalarFn::Max, args: vec![r, one] });
            let back = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Div, a: q, b: div });
            let unit = fb.emit(ElemType::I64, |dst| Inst::Call { dst, f: ScalarFn::Min, args: vec![r, one] });
            let want = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: p, b: unit });
            let wrong = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ne, a: back, b: want });
            let neg = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: r, b: zero });
            let step = Self::or(fb, neg, wrong);
            bad = Self::or(fb, bad, step);
            p = q;
        }
        bad
    }

    /// `a || b` for two registers already computed.
    fn or(fb: &mut FuncBuilder, a: Reg, b: Reg) -> Reg {
        let (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
        let (else_block, else_ret) = fb.block(|fb| {
            let t = fb.konst(Scalar::Bool(true));
            fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: b, b: t })
        });
        fb.emit(ElemType::Bool, |dst| Inst::If { dst, cond: a, then_block, then_ret, else_block, else_ret })
    }

    /// The registers of node `i`'s result (several for a tuple), under environment `env`
    /// (`env[len-1-k]` holds `$k`).
    fn result(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) -> Result<Vec<Reg>> {
        match &self.nodes[i] {
            ArrayLang::Tuple(es) => {
                let es: Vec<usize> = es.iter().map(|e| usize::from(*e)).collect();
                es.into_iter().map(|e| self.scalar(fb, e, env)).collect()
            }
            // an application whose body is a tuple (an index function's, substituted)
            ArrayLang::App(c) if matches!(self.kinds[i], Kind::Tuple(_)) => {
                let (body, inner) = self.app_env(fb, &c.clone(), env)?;
                self.result(fb, body, &inner)
            }
            _ => Ok(vec![self.scalar(fb, i, env)?]),
        }
    }

    /// The body of application `c` (`(\.. -> body) args`) and the environment it runs in.
    /// Argument `j` is parameter `k - 1 - j` of the body. One used inside a lambda of the
    /// body (an `iterate`'s) is computed now, once; the others where the body first uses
    /// them (not at all if it does not), as if substituted: an application and its
    /// beta-reduced form lower alike.
    fn app_env(&mut self, fb: &mut FuncBuilder, c: &[Id], env: &[Reg]) -> Result<(usize, Vec<Reg>)> {
        let (f, args) = c.split_first().ok_or_else(|| internal("app without a function"))?;
        let (tys, body) = self.lam(*f)?;
        if tys.len() != args.len() {
            return Err(internal("an application of the wrong arity"));
        }
        let mut inner = env.to_vec();
        for (j, a) in args.iter().enumerate() {
            let p = (args.len() - 1 - j) as u32;
            let a = usize::from(*a);
            if self.deep[body].contains(&p) {
                inner.push(self.scalar(fb, a, env)?);
            } else {
                let key =
                    key_of(&self.free, a, env).ok_or_else(|| internal("a free parameter out of scope"))?;
                inner.push(fb.placeholder(key, env));
            }
        }
        Ok((body, inner))
    }

    /// The register holding scalar node `i` under `env` (computed once per block and
    /// environment of its free parameters).
    fn scalar(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) -> Result<Reg> {
        let key = key_of(&self.free, i, env).ok_or_else(|| internal("a free parameter out of scope"))?;
        if let Some(r) = fb.lookup(&key) {
            return Ok(r);
        }
        self.note_strict(fb, i, env);
        let r = self.scalar_uncached(fb, i, env)?;
        fb.remember(key, r);
        if let Some(&span) = self.spans.get(&i) {
            let fails = match &self.nodes[i] {
                ArrayLang::Index(_) | ArrayLang::Length(_) | ArrayLang::Dim(_) => true,
                n => matches!(n.bin_op(), Some((BinOp::Div | BinOp::Rem, _))),
            };
            if fails {
                fb.mark(r, span);
            }
        }
        Ok(r)
    }

    /// Notes that the block being written computes `strict(i)` under `env` (and, through a
    /// parameter whose argument is not computed yet, the argument's strict subterms).
    fn note_strict(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) {
        if !self.has_cond {
            return;
        }
        let FuncBuilder { strict, lazy, .. } = fb;
        let Some(will) = strict.last_mut() else { return };
        let view =
            View { nodes: self.nodes, kinds: &self.kinds, free: &self.free, branching: &self.branching };
        let (free, nodes) = (&self.free, self.nodes);
        let mut work = vec![(i, env.to_vec())];
        while let Some((root, e)) = work.pop() {
            self.strict.walk(&view, root, &mut |n| {
                let Some(k) = key_of(free, n, &e) else { return false };
                if !will.insert(k) {
                    return false;
                }
                if let Some(arg) = lazy_arg(nodes, lazy, n, &e) {
                    work.push(arg);
                }
                true
            });
        }
    }

    /// `strict(b)` under `env` as (node, environment) pairs, through the arguments of
    /// parameters not computed yet.
    fn strict_pairs(&mut self, fb: &FuncBuilder, b: usize, env: &[Reg]) -> HashMap<MemoKey, Vec<Reg>> {
        let view =
            View { nodes: self.nodes, kinds: &self.kinds, free: &self.free, branching: &self.branching };
        let mut out = HashMap::new();
        let mut work = vec![(b, env.to_vec())];
        while let Some((root, e)) = work.pop() {
            for &n in self.strict.of(&view, root).iter() {
                let Some(k) = key_of(&self.free, n, &e) else { continue };
                if out.contains_key(&k) {
                    continue;
                }
                if let Some(arg) = lazy_arg(self.nodes, &fb.lazy, n, &e) {
                    work.push(arg);
                }
                out.insert(k, e.clone());
            }
        }
        out
    }

    /// Before the branches `bs` of a conditional: computes the values they need that the
    /// block computes on every path anyway ([`crate::strict`]: all of them need it, or
    /// the block does), once, here.
    fn hoist(&mut self, fb: &mut FuncBuilder, bs: &[usize], env: &[Reg]) -> Result<()> {
        if !self.has_cond {
            return Ok(());
        }
        let sets: Vec<_> = bs.iter().map(|&b| self.strict_pairs(fb, b, env)).collect();
        let mut want: Vec<(&MemoKey, &Vec<Reg>)> = sets.iter().flat_map(|s| s.iter()).collect();
        want.sort();
        want.dedup();
        for (key, e) in want {
            let n = key.0;
            let scalar =
                matches!(self.kinds[n], Kind::Scalar(_)) && !matches!(self.nodes[n], ArrayLang::Lit(_));
            let everywhere = sets.len() > 1 && sets.iter().all(|s| s.contains_key(key));
            let anyway = fb.strict.last().is_some_and(|w| w.contains(key));
            if scalar && (everywhere || anyway) && fb.lookup(key).is_none() {
                self.scalar(fb, n, e)?;
            }
        }
        Ok(())
    }

    fn ty(&self, i: usize) -> Result<ElemType> {
        match &self.kinds[i] {
            Kind::Scalar(e) => Ok(*e),
            k => Err(internal(format!("node {i} is {k:?}, not a scalar"))),
        }
    }

    fn scalar_uncached(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) -> Result<Reg> {
        use ArrayLang as L;
        let node = self.nodes[i].clone();
        let kid = |c: Id| usize::from(c);
        if self.branching.contains(&i) {
            let v = self.array(Id::from(i))?;
            let t = self.ty(i)?;
            return Ok(fb.emit(t, |dst| Inst::Load { dst, value: v }));
        }
        if let Some((op, [a, b])) = node.bin_op() {
            if matches!(op, BinOp::And | BinOp::Or) {
                let ra = self.scalar(fb, kid(a), env)?;
                self.hoist(fb, &[kid(b)], env)?;
                let (then_block, then_ret, else_block, else_ret);
                if op == BinOp::And {
                    (then_block, then_ret) = fb.try_block(|fb| self.scalar(fb, kid(b), env))?;
                    (else_block, else_ret) = fb.block(|fb| fb.konst(Scalar::Bool(false)));
                } else {
                    (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
                    (else_block, else_ret) = fb.try_block(|fb| self.scalar(fb, kid(b), env))?;
                }
                return Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
                    dst,
                    cond: ra,
                    then_block,
                    then_ret,
                    else_block,
                    else_ret,
                }));
            }
            let (ra, mut rb) = (self.scalar(fb, kid(a), env)?, self.scalar(fb, kid(b), env)?);
            let t = self.ty(i)?;
            if fb.safe && matches!(op, BinOp::Div | BinOp::Rem) && t.is_int() {
                rb = fb.nonzero(t, rb);
            }
            return Ok(fb.emit(t, |dst| Inst::Binary { dst, op, a: ra, b: rb }));
        }
        let call = |f: ScalarFn| Some(f);
        let builtin = match &node {
            L::Min(_) => call(ScalarFn::Min),
            L::Max(_) => call(ScalarFn::Max),
            L::Abs(_) => call(ScalarFn::Abs),
            L::Sqrt(_) => call(ScalarFn::Sqrt),
            L::Exp(_) => call(ScalarFn::Exp),
            L::Log(_) => call(ScalarFn::Log),
            L::Sin(_) => call(ScalarFn::Sin),
            L::Cos(_) => call(ScalarFn::Cos),
            L::Tan(_) => call(ScalarFn::Tan),
            L::Tanh(_) => call(ScalarFn::Tanh),
            L::Floor(_) => call(ScalarFn::Floor),
            L::Ceil(_) => call(ScalarFn::Ceil),
            L::Round(_) => call(ScalarFn::Round),
            L::Pow(_) => call(ScalarFn::Pow),
            L::Atan2(_) => call(ScalarFn::Atan2),
            L::Clamp(_) => call(ScalarFn::Clamp),
            L::ToI32(_) => call(ScalarFn::Convert(ElemType::I32)),
            L::ToI64(_) => call(ScalarFn::Convert(ElemType::I64)),
            L::ToF32(_) => call(ScalarFn::Convert(ElemType::F32)),
            L::ToF64(_) => call(ScalarFn::Convert(ElemType::F64)),
            _ => None,
        };
        if let Some(f) = builtin {
            let mut args = Vec::new();
            for c in node.children() {
                args.push(self.scalar(fb, kid(*c), env)?);
            }
            let t = self.ty(i)?;
            return Ok(fb.emit(t, |dst| Inst::Call { dst, f, args }));
        }
        Ok(match node {
            L::Lit(l) => fb.konst(l.to_scalar()),
            L::Param(p) => {
                let at = env
                    .len()
                    .checked_sub(1 + p.index as usize)
                    .ok_or_else(|| internal("a parameter out of scope"))?;
                match fb.lazy.get(&env[at]).cloned() {
                    Some((a, outer)) => self.scalar(fb, a, &outer)?,
                    None => env[at],
                }
            }
            L::Size(s) => {
                let v = *self.sizes.get(s.as_str()).ok_or_else(|| internal(format!("unknown size {s}")))?;
                fb.emit(ElemType::I64, |dst| Inst::Load { dst, value: v })
            }
            L::Input(s) if !self.kinds[i].is_array() => {
                let v = self.input(s.as_str())?;
                let t = self.ty(i)?;
                fb.emit(t, |dst| Inst::Load { dst, value: v })
            }
            L::Neg([a]) | L::Not([a]) => {
                let ra = self.scalar(fb, kid(a), env)?;
                let op = if matches!(node, L::Neg(_)) { UnOp::Neg } else { UnOp::Not };
                let t = self.ty(i)?;
                fb.emit(t, |dst| Inst::Unary { dst, op, a: ra })
            }
            L::If([c, t, e]) => {
                let rc = self.scalar(fb, kid(c), env)?;
                self.hoist(fb, &[kid(t), kid(e)], env)?;
                let (then_block, then_ret) = fb.try_block(|fb| self.scalar(fb, kid(t), env))?;
                let (else_block, else_ret) = fb.try_block(|fb| self.scalar(fb, kid(e), env))?;
                let ty = self.ty(i)?;
                fb.emit(ty, |dst| Inst::If { dst, cond: rc, then_block, then_ret, else_block, else_ret })
            }
            L::Iterate([n, f, init]) => {
                let count = self.scalar(fb, kid(n), env)?;
                let rinit = self.scalar(fb, kid(init), env)?;
                let (tys, body) = self.lam(f)?;
                let [t] = tys[..] else { return Err(internal("iterate of a function that is not unary")) };
                let var = fb.new_reg(t);
                let mut inner = env.to_vec();
                inner.push(var);
                let (block, next) = fb.try_block(|fb| self.scalar(fb, body, &inner))?;
                let dst = fb.new_reg(t);
                fb.push(Inst::Loop {
                    dsts: vec![dst],
                    count,
                    inits: vec![rinit],
                    vars: vec![var],
                    body: block,
                    nexts: vec![next],
                });
                dst
            }
            L::Index(c) => {
                let (a, ix) = c.split_first().ok_or_else(|| internal("index without an array"))?;
                let v = self.array(*a)?;
                let mut regs = Vec::with_capacity(ix.len());
                for j in ix {
                    regs.push(self.scalar(fb, kid(*j), env)?);
                }
                if !fb.safe {
                    return Ok(self.read(fb, v, regs));
                }
                // a guard's test: a read out of bounds gives 0
                let elem = self.plan.values[v].elem;
                let zero = fb.konst(Scalar::I64(0));
                let mut inside = fb.konst(Scalar::Bool(true));
                for (k, &r) in regs.iter().enumerate() {
                    let ax = fb.konst(Scalar::I64(k as i64));
                    let d = fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax });
                    let lo =
                        fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: r, b: zero });
                    let hi = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: r, b: d });
                    inside = fb.and(inside, lo);
                    inside = fb.and(inside, hi);
                }
                let (then_block, then_ret) = fb.block(|fb| self.read(fb, v, regs));
                let nothing = fb.konst(zero_of(elem));
                fb.emit(elem, |dst| Inst::If {
                    dst,
                    cond: inside,
                    then_block,
                    then_ret,
                    else_block: Block::default(),
                    else_ret: nothing,
                })
            }
            L::Length([a]) => {
                let v = self.array(a)?;
                let ax = fb.konst(Scalar::I64(0));
                fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax })
            }
            L::Dim([a, k]) => {
                let v = self.array(a)?;
                let mut ax = self.scalar(fb, kid(k), env)?;
                if fb.safe {
                    // a guard's test: an axis out of range is axis 0
                    let rank = fb.konst(Scalar::I64(self.plan.values[v].rank as i64));
                    let zero = fb.konst(Scalar::I64(0));
                    let lo =
                        fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: ax, b: zero });
                    let hi =
                        fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: ax, b: rank });
                    let ok = fb.and(lo, hi);
                    ax = fb.emit(ElemType::I64, |dst| Inst::If {
                        dst,
                        cond: ok,
                        then_block: Block::default(),
                        then_ret: ax,
                        else_block: Block::default(),
                        else_ret: zero,
                    });
                }
                fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax })
            }
            L::App(c) => {
                let (body, inner) = self.app_env(fb, &c, env)?;
                self.scalar(fb, body, &inner)?
            }
            // a scalar lane of a multi-output kernel (a reduction grouped with others)
            L::Proj([_, m]) if matches!(self.nodes[kid(m)], L::Multi(_)) => {
                let v = self.array(Id::from(i))?;
                let t = self.ty(i)?;
                fb.emit(t, |dst| Inst::Load { dst, value: v })
            }
            L::Proj([k, t]) => {
                let Some(Literal::I64(k)) = (match &self.nodes[kid(k)] {
                    L::Lit(l) => Some(*l),
                    _ => None,
                }) else {
                    return Err(internal("a projection by a non-constant"));
                };
                let rs = self.result(fb, kid(t), env)?;
                *usize::try_from(k)
                    .ok()
                    .and_then(|k| rs.get(k))
                    .ok_or_else(|| internal("a projection out of range"))?
            }
            // a kernel's scalar result (a reduction to a scalar) read inside another kernel
            _ if self.is_kernel(i) => {
                let v = self.array(Id::from(i))?;
                let t = self.ty(i)?;
                fb.emit(t, |dst| Inst::Load { dst, value: v })
            }
            n => return Err(internal(format!("not a scalar: {n:?}"))),
        })
    }
}

/// The `fill`s of a literal whose one use in the term is a permute's destination: a
/// permute can start from such a fill without reading it from memory, so lowering gives it
/// no kernel (and no pass over memory, no copy). A fill used anywhere else, an output
/// among them, is an array like any other.
fn fill_dests(nodes: &[ArrayLang]) -> HashSet<usize> {
    let mut uses = vec![0usize; nodes.len()];
    for n in nodes {
        for c in n.children() {
            if let Some(u) = uses.get_mut(usize::from(*c)) {
                *u += 1;
            }
        }
    }
    let constant_fill = |d: Id| {
        let d = usize::from(d);
        matches!(nodes.get(d), Some(ArrayLang::Fill([_, x])) if matches!(nodes.get(usize::from(*x)), Some(ArrayLang::Lit(_))))
            && uses.get(d) == Some(&1)
    };
    nodes
        .iter()
        .filter_map(|n| match n {
            ArrayLang::Permute([_, d, _, _]) | ArrayLang::Permutemap([_, d, _, _, _])
                if constant_fill(*d) =>
            {
                Some(usize::from(*d))
            }
            _ => None,
        })
        .collect()
}

/// Rolls unrolled recurrences in the element functions of single-result kernels
/// ([`crate::roll`]).
fn roll_kernels(steps: &mut [Step]) {
    for st in steps {
        match st {
            Step::Kernel(k) if k.lanes.len() == 1 => crate::roll::roll(&mut k.elem),
            Step::If { then_steps, else_steps, .. } => {
                roll_kernels(then_steps);
                roll_kernels(else_steps);
            }
            _ => {}
        }
    }
}

/// Drops the lanes of multi-output kernels whose results nothing after them reads (`live`:
/// what is read after `steps`). Horizontal fusion groups the kernels of both branches of
/// a host `if` in one class, and each branch then lowers the whole group though it needs
/// only its own lane. A kernel none of whose lanes is read stays as it is.
fn drop_unread_lanes(steps: &mut [Step], live: &HashSet<ValueId>) {
    let mut live = live.clone();
    for st in steps.iter_mut().rev() {
        match st {
            Step::Kernel(k) if k.lanes.len() > 1 && k.lanes.len() == k.elem.ret.len() => {
                let keep: Vec<bool> = k.lanes.iter().map(|l| live.contains(&l.dst)).collect();
                if keep.contains(&true) && keep.contains(&false) {
                    let mut it = keep.iter();
                    k.lanes.retain(|_| *it.next().unwrap_or(&true));
                    let mut it = keep.iter();
                    k.elem.ret.retain(|_| *it.next().unwrap_or(&true));
                    k.elem = crate::roll::dead_code(k.elem.clone());
                }
            }
            Step::If { then_steps, then_value, else_steps, else_value, .. } => {
                for (branch, v) in [(then_steps, *then_value), (else_steps, *else_value)] {
                    let mut after = live.clone();
                    after.insert(v);
                    drop_unread_lanes(branch, &after);
                }
            }
            _ => {}
        }
        live.extend(st.reads());
    }
}

/// The zero of `elem` (`false` for `bool`).
fn zero_of(elem: ElemType) -> Scalar {
    match elem {
        ElemType::Bool => Scalar::Bool(false),
        ElemType::I32 => Scalar::I32(0),
        ElemType::I64 => Scalar::I64(0),
        ElemType::F32 => Scalar::F32(0.0),
        ElemType::F64 => Scalar::F64(0.0),
    }
}

/// Whether two lists of extents are certainly of one product (equal as multisets).
fn same_count(a: &[Arg], b: &[Arg]) -> bool {
    let mut x: Vec<String> = a.iter().filter(|d| **d != Arg::Const(1)).map(|d| format!("{d:?}")).collect();
    let mut y: Vec<String> = b.iter().filter(|d| **d != Arg::Const(1)).map(|d| format!("{d:?}")).collect();
    x.sort();
    y.sort();
    x == y
}

/// The argument (node, environment) of parameter node `n` under `env` when it is not
/// computed yet.
fn lazy_arg(
    nodes: &[ArrayLang],
    lazy: &HashMap<Reg, (usize, Vec<Reg>)>,
    n: usize,
    env: &[Reg],
) -> Option<(usize, Vec<Reg>)> {
    let ArrayLang::Param(p) = &nodes[n] else { return None };
    let r = env.get(env.len().checked_sub(1 + p.index as usize)?)?;
    lazy.get(r).cloned()
}

/// A node and the registers of its free parameters: what [`FuncBuilder`] memoises.
type MemoKey = (usize, Vec<Reg>);

/// The memo key of node `i` under `env`: the node and the registers of its free
/// parameters (`None`: a parameter out of scope).
fn key_of(free: &[Vec<u32>], i: usize, env: &[Reg]) -> Option<MemoKey> {
    let mut regs = Vec::with_capacity(free[i].len());
    for &p in &free[i] {
        regs.push(env[env.len().checked_sub(1 + p as usize)?]);
    }
    Some((i, regs))
}

/// Builds one [`Func`]: registers, the block being written, and the registers each
/// (node, environment) already has in the enclosing blocks.
struct FuncBuilder {
    params: Vec<ElemType>,
    reg_types: Vec<ElemType>,
    blocks: Vec<Block>,
    memo: Vec<HashMap<MemoKey, Reg>>,
    consts: HashMap<String, Reg>,
    /// Per block: the (node, environment) pairs it computes on every path.
    strict: Vec<HashSet<MemoKey>>,
    /// The arguments of applications not computed yet: a parameter's placeholder register
    /// (counting down from `Reg::MAX`, never an instruction's) -> the argument and its
    /// environment. A parameter is computed where it is first used, as if substituted.
    lazy: HashMap<Reg, (usize, Vec<Reg>)>,
    /// The placeholder of each argument (node, environment): one per value, so that two
    /// applications of one function to one value share their work.
    placeholders: HashMap<MemoKey, Reg>,
    /// A guard's test: reads out of bounds and integer divisions by zero give some value
    /// instead of failing.
    safe: bool,
    /// Source positions of the registers written by instructions that can fail.
    spans: Vec<(Reg, Span)>,
}

impl FuncBuilder {
    fn new(params: Vec<ElemType>) -> FuncBuilder {
        FuncBuilder {
            reg_types: params.clone(),
            params,
            blocks: vec![Block::default()],
            memo: vec![HashMap::new()],
            consts: HashMap::new(),
            strict: vec![HashSet::new()],
            lazy: HashMap::new(),
            placeholders: HashMap::new(),
            safe: false,
            spans: Vec::new(),
        }
    }

    /// Notes that register `r` (written by an instruction that can fail) comes from the
    /// program text at `span`, unless it has a position already (an inner node's).
    fn mark(&mut self, r: Reg, span: Span) {
        if (r as usize) >= self.params.len()
            && (r as usize) < self.reg_types.len()
            && !self.spans.iter().any(|(x, _)| *x == r)
        {
            self.spans.push((r, span));
        }
    }

    /// `b`, or 1 where it is 0 (a divisor that cannot fail), of integer type `t`.
    fn nonzero(&mut self, t: ElemType, b: Reg) -> Reg {
        let (zero, one) = match t {
            ElemType::I32 => (Scalar::I32(0), Scalar::I32(1)),
            _ => (Scalar::I64(0), Scalar::I64(1)),
        };
        let (zero, one) = (self.konst(zero), self.konst(one));
        let is_zero = self.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: b, b: zero });
        self.emit(t, |dst| Inst::If {
            dst,
            cond: is_zero,
            then_block: Block::default(),
            then_ret: one,
            else_block: Block::default(),
            else_ret: b,
        })
    }

    /// The placeholder register of argument `key` (its node under `env`).
    fn placeholder(&mut self, key: MemoKey, env: &[Reg]) -> Reg {
        if let Some(&r) = self.placeholders.get(&key) {
            return r;
        }
        let r = Reg::MAX - self.placeholders.len() as Reg;
        self.lazy.insert(r, (key.0, env.to_vec()));
        self.placeholders.insert(key, r);
        r
    }

    fn new_reg(&mut self, t: ElemType) -> Reg {
        self.reg_types.push(t);
        (self.reg_types.len() - 1) as Reg
    }

    fn push(&mut self, i: Inst) {
        if let Some(b) = self.blocks.last_mut() {
            b.insts.push(i);
        }
    }

    fn emit(&mut self, t: ElemType, make: impl FnOnce(Reg) -> Inst) -> Reg {
        let r = self.new_reg(t);
        let i = make(r);
        self.push(i);
        r
    }

    /// A constant's register. Constants go to the function's outermost block, once each
    /// (computing one cannot fail): a constant a branch needs and the code after the
    /// branch needs too is one instruction, wherever it was first asked for.
    fn konst(&mut self, v: Scalar) -> Reg {
        let key = format!("{:?}", Literal::from_scalar(v));
        if let Some(r) = self.consts.get(&key) {
            return *r;
        }
        let r = self.new_reg(v.elem_type());
        if let Some(b) = self.blocks.first_mut() {
            b.insts.push(Inst::Const { dst: r, value: v });
        }
        self.consts.insert(key, r);
        r
    }

    /// `a && b` of two bools already evaluated (nothing left to be lazy about).
    fn and(&mut self, a: Reg, b: Reg) -> Reg {
        let f = self.konst(Scalar::Bool(false));
        self.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: a,
            then_block: Block::default(),
            then_ret: b,
            else_block: Block::default(),
            else_ret: f,
        })
    }

    fn lookup(&self, key: &MemoKey) -> Option<Reg> {
        self.memo.iter().rev().find_map(|m| m.get(key).copied())
    }

    fn remember(&mut self, key: MemoKey, r: Reg) {
        if let Some(m) = self.memo.last_mut() {
            m.insert(key, r);
        }
    }

    /// Runs `f` in a new nested block; the block and `f`'s result register.
    fn block(&mut self, f: impl FnOnce(&mut FuncBuilder) -> Reg) -> (Block, Reg) {
        self.blocks.push(Block::default());
        self.memo.push(HashMap::new());
        self.strict.push(HashSet::new());
        let r = f(self);
        self.memo.pop();
        self.strict.pop();
        (self.blocks.pop().unwrap_or_default(), r)
    }

    fn try_block(&mut self, f: impl FnOnce(&mut FuncBuilder) -> Result<Reg>) -> Result<(Block, Reg)> {
        let mut err = None;
        let (b, r) = self.block(|fb| match f(fb) {
            Ok(r) => r,
            Err(e) => {
                err = Some(e);
                0
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok((b, r)),
        }
    }

    fn finish(mut self, ret: Vec<Reg>) -> Func {
        let body = self.blocks.pop().unwrap_or_default();
        Func { params: self.params, reg_types: self.reg_types, body, ret, spans: self.spans }
    }
}
