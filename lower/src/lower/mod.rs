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
//!
//! The lowerer is split by concern, one file each, so that a new operation edits one
//! family's file:
//! - this file: the `Lowerer` state, its construction, `Lowerer::run` and the plan
//!   passes run after it;
//! - `host.rs`: host steps and values (inputs, host scalars, extents, host `if`s, the
//!   value of an array node, lowered where it is needed);
//! - `guard.rs`: lazy kernels under their guard (`Step::If` on a test that cannot fail)
//!   and the reads such a test makes without failing;
//! - `kernel/`: one kernel per array operation, `kernel/mod.rs` dispatching to one function
//!   per family (`map.rs`, `reduce_scan.rs`, `filter.rs`, `permute.rs`, `index_ops.rs`,
//!   `multi.rs`), with the run-time shape checks in `checks.rs`;
//! - `elem/`: element functions: the register builder (`builder.rs`), `scalar` dispatching
//!   by family (`arith.rs`, `control.rs`, `access.rs`), and the hoisting of what every
//!   path of a block computes (`hoist.rs`).

mod elem;
mod guard;
mod host;
mod kernel;

use crate::place::{Guard, Placement};
use crate::strict::Strict;
use crate::term::TermFacts;
use egg::Id;
use eqfuse_egraph::analysis::{Facts, Kind};
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_egraph::{NodeMap, Term};
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::{Arg, Origin, Plan, Step, ValueId, ValueInfo};
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

/// Lowers `term` (its last node the `outputs` root) to a plan. The term's `let` names name
/// the plan's values; its source positions go to the plan's kernels, checks and the
/// instructions that can fail (reads, `size`, integer division), for run-time errors.
pub fn lower(term: &Term, facts: &Facts, sig: &Signature<'_>) -> Result<Plan> {
    match lower_by(term, facts, sig, None)? {
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

/// [`lower`] under a deadline: it checks the deadline before each kernel and before loop
/// rolling, and past it stops with what it has ([`Lowered`]).
pub fn lower_by(
    term: &Term,
    facts: &Facts,
    sig: &Signature<'_>,
    deadline: Option<Instant>,
) -> Result<Lowered> {
    if deadline.is_some_and(|d| Instant::now() >= d) {
        return Ok(Lowered::Late);
    }
    eqfuse_egraph::with_big_stack(|| {
        let mut l = Lowerer::new(term, facts, sig);
        l.deadline = deadline;
        l.run()
    })
}

struct Lowerer<'a> {
    nodes: &'a [ArrayLang],
    kinds: Vec<Kind>,
    /// Free parameters of each node (over the term).
    free: Vec<Vec<u32>>,
    /// The term's `let` names, and the output names (which win over them).
    names: NodeMap<String>,
    /// Source positions of nodes.
    spans: &'a NodeMap<Span>,
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
    /// itself ([`eqfuse_ir::plan::PermuteDest::Fill`]), so they get no kernel of their own.
    fill_dests: HashSet<usize>,
}

impl<'a> Lowerer<'a> {
    fn new(term: &'a Term, facts: &Facts, sig: &'a Signature<'a>) -> Lowerer<'a> {
        let nodes = term.expr.as_ref();
        let tf = TermFacts::new(&term.expr, facts);
        let placement = Placement::compute(nodes, &tf);
        let TermFacts { kinds, free, deep } = tf;
        let mut all_names = term.names.clone();
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
            spans: &term.spans,
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
            fill_dests: kernel::fill_dests(nodes),
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

    fn input(&self, name: &str) -> Result<ValueId> {
        self.inputs.get(name).copied().ok_or_else(|| internal(format!("unknown input `{name}`")))
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
                let mut keep: Vec<bool> = k.lanes.iter().map(|l| live.contains(&l.dst)).collect();
                // a group's lanes fold together: all or none
                for (h, w) in k.groups().unwrap_or_default() {
                    let any = keep[h..h + w].contains(&true);
                    keep[h..h + w].iter_mut().for_each(|x| *x = any);
                }
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
    Scalar::from_i128_wrapping(elem, 0)
}
