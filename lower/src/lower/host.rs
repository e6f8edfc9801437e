//! Host steps and values: the inputs, the host scalars (outputs, extents), the extents of
//! arrays, the host `if`s whose branches hold kernels, and the value of an array node,
//! lowered where it is first needed.

use super::elem::FuncBuilder;
use super::{internal, Lowerer};
use crate::place::{Guard, Lit, Place};
use egg::Id;
use eqfuse_egraph::analysis::{Kind, SymDim};
use eqfuse_egraph::lang::{ArrayLang, Literal};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Arg, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Reg, Step, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// The value of an output node: a kernel's result, a host scalar, or a copy of an input.
    pub(super) fn output_value(&mut self, o: usize, name: &str) -> Result<ValueId> {
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
                    view_of: None,
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
    pub(super) fn branch_if(&mut self, i: usize) -> Result<ValueId> {
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

    /// A host step computing scalar node `i` once.
    pub(super) fn host_scalar(&mut self, i: usize, name: String) -> Result<ValueId> {
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
            n => {
                // `length a` as a host value: the one host value of that extent
                if let Some((a, k)) = self.constant_axis(n) {
                    if let Some(Arg::Value(v)) = self.axis_extent(a, k, Some(&name))? {
                        self.value_of.insert(i, v);
                        return Ok(v);
                    }
                }
            }
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

    /// The array and constant axis of a `length a` or `size a k` node.
    pub(super) fn constant_axis(&self, n: &ArrayLang) -> Option<(Id, i64)> {
        match n {
            ArrayLang::Length([a]) => Some((*a, 0)),
            ArrayLang::Dim([a, k]) => match self.nodes[usize::from(*k)] {
                ArrayLang::Lit(Literal::I64(c)) => Some((*a, c)),
                _ => None,
            },
            _ => None,
        }
    }

    /// An extent: a constant, a size, or a host scalar computed from node `i`.
    pub(super) fn extent(&mut self, i: usize) -> Result<Arg> {
        match &self.nodes[i] {
            ArrayLang::Lit(Literal::I64(v)) => Ok(Arg::Const(*v)),
            n => {
                if let Some((a, k)) = self.constant_axis(n) {
                    if let Some(e) = self.axis_extent(a, k, None)? {
                        return Ok(e);
                    }
                }
                let name = format!("d{}", self.plan.values.len());
                Ok(Arg::Value(self.host_scalar(i, name)?))
            }
        }
    }

    /// The extents of a `shape` node.
    pub(super) fn shape_extents(&mut self, sh: Id) -> Result<Vec<Arg>> {
        let ArrayLang::Shape(ds) = &self.nodes[usize::from(sh)] else {
            return Err(internal("a shape argument that is not a `shape` node"));
        };
        let ds: Vec<usize> = ds.iter().map(|d| usize::from(*d)).collect();
        ds.into_iter().map(|d| self.extent(d)).collect()
    }

    /// The extents of materialised value `v` (of term node `node`), from the analysis when
    /// it knows them, else read at run time.
    pub(super) fn dims_of_value(&mut self, v: ValueId, node: usize) -> Result<Vec<Arg>> {
        let shape = match &self.kinds[node] {
            Kind::Array { shape, .. } => shape.clone(),
            _ => return Ok(Vec::new()),
        };
        (0..shape.len()).map(|k| self.dim_of_value(v, &shape[k], k, None)).collect()
    }

    /// Extent `k` of materialised value `v`, whose analysed extent is `d`: a constant, a
    /// size, or read at run time once (one host step per array and axis, shared by every
    /// kernel and extent that asks, named `name` when it is made here, else `{array}_d{k}`).
    fn dim_of_value(&mut self, v: ValueId, d: &SymDim, k: usize, name: Option<&str>) -> Result<Arg> {
        match d {
            SymDim::Const(c) => Ok(Arg::Const(*c)),
            SymDim::Size(s) => match self.sizes.get(s.as_str()) {
                Some(&sv) => Ok(Arg::Value(sv)),
                None => self.dim_at_run_time(v, k, name),
            },
            _ => self.dim_at_run_time(v, k, name),
        }
    }

    /// Extent `k` (a constant) of array node `a`, where `a` has that axis: what
    /// [`Self::dims_of_value`] gives for it, so that `length t` written in the source, the
    /// extent a rule gave a `reverse t`, and a kernel over `t` read one host value. `None`
    /// where the axis is not one of `a`'s (the `Dim` instruction then fails at run time as
    /// it should).
    pub(super) fn axis_extent(&mut self, a: Id, k: i64, name: Option<&str>) -> Result<Option<Arg>> {
        let node = usize::from(a);
        let d = match &self.kinds[node] {
            Kind::Array { shape, .. } => match usize::try_from(k).ok().and_then(|k| shape.get(k)) {
                Some(d) => d.clone(),
                None => return Ok(None),
            },
            _ => return Ok(None),
        };
        let v = self.array(a)?;
        self.dim_of_value(v, &d, k as usize, name).map(Some)
    }

    pub(super) fn dim_at_run_time(&mut self, v: ValueId, axis: usize, name: Option<&str>) -> Result<Arg> {
        if let Some(a) = self.dim_memo.get(&(v, axis)) {
            return Ok(*a);
        }
        let mut fb = FuncBuilder::new(Vec::new());
        let ax = fb.konst(Scalar::I64(axis as i64));
        let r = fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax });
        let body = fb.finish(vec![r]);
        let name = name.map_or_else(|| format!("{}_d{axis}", self.plan.values[v].name), str::to_string);
        let dst = self.new_value(name, ElemType::I64, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst, body });
        let a = Arg::Value(dst);
        self.dim_memo.insert((v, axis), a);
        Ok(a)
    }

    /// The value of an array (or kernel-result) node: lowered already (a strict kernel, in
    /// term order), or lowered now, under its guard where the steps being written do not
    /// imply it ([`crate::place`]).
    pub(super) fn array(&mut self, a: Id) -> Result<ValueId> {
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

    /// The value of array (or kernel-result) node `i`, lowered here if it is not yet.
    pub(super) fn array_here(&mut self, i: usize) -> Result<ValueId> {
        if let Some(&v) = self.value_of.get(&i) {
            return Ok(v);
        }
        match &self.nodes[i] {
            ArrayLang::Input(s) => self.input(s.as_str()),
            _ if self.branching.contains(&i) => self.branch_if(i),
            ArrayLang::Proj([_, m]) if self.nodes[usize::from(*m)].has_results() => {
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
}
