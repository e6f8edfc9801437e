//! `reduce_segments` and `scan_segments` over CSR offsets, encoded in forms every later
//! stage and backend already takes (`a` one array or a group of `g` arrays, `op` of `g`
//! results):
//!
//! ```text
//! chk = (segcheck offsets (shape n) which)       the offsets, checked (E-INDEX names the first bad one)
//! reduce_segments op ne offsets a
//!   = generate [m] (\s -> proj c (iterate (chk[s+1] - chk[s])
//!                                  (\k acc.. -> (k + 1, op acc.. a[k]..)) (chk[s], ne..)))
//! scan_segments op ne offsets a
//!   = proj (1 + c) (gscan seg (false, ne..) [n] (\i -> (heads[i], a[i]..)) false)
//!     heads = permute (||) (fill [n] false) (\s -> if chk[s] < chk[s+1] then chk[s] else -1)
//!                      (fill [m] true)                      the first element of each segment
//!     seg (f1, v1..) (f2, v2..) = (f1 || f2, if f2 then v2 else op v1 v2)
//! ```
//!
//! A segmented reduction is one pass over the values: segment `s` is folded by one loop
//! whose count is its length, reading `a`'s producers in place (the rules fuse `a[k]`).
//! A segmented scan is the classic scan of (head flag, value) pairs: associative, so the
//! parallel scans of every backend run it.

use super::{internal, unsupported, Enc, Env};
use crate::lang::{ArrayLang, Literal};
use egg::Id;
use eqfuse_ir::ast::{Expr, ExprKind};
use eqfuse_ir::error::Result;
use eqfuse_ir::types::{Dim, ElemType, Type};

impl<'p> Enc<'p> {
    /// `reduce_segments` (`scan`: `scan_segments`) applied to `args`: one term per component
    /// of the result.
    pub(super) fn segments(
        &mut self,
        scan: bool,
        args: &'p [Expr],
        env: &Env<'p>,
        d: u32,
    ) -> Result<Vec<Id>> {
        let [op, ne, offsets, a] = args else {
            return Err(internal("a segmented operation without four arguments"));
        };
        let s = Seg { op, ne, offsets, a, tys: member_types(a)? };
        self.group_shape(a)?;
        if scan {
            self.scan_segments(&s, env, d)
        } else {
            self.reduce_segments(&s, env, d)
        }
    }

    /// `[n]`, the shape of the values, at depth `d`.
    fn value_shape(&mut self, s: &Seg<'p>, env: &Env<'p>, d: u32) -> Result<Id> {
        let a0 = self.flat_arrays(s.a, env, d)?[0];
        let n = self.add(ArrayLang::Length([a0]));
        Ok(self.add(ArrayLang::Shape(vec![n].into_boxed_slice())))
    }

    /// The checked offsets at depth `d` (`scan`: of `scan_segments`, for the messages).
    fn checked_offsets(&mut self, scan: bool, s: &Seg<'p>, env: &Env<'p>, d: u32) -> Result<Id> {
        let off = self.expr(s.offsets, env, d)?;
        let shn = self.value_shape(s, env, d)?;
        let which = self.add(ArrayLang::Lit(Literal::I64(i64::from(scan))));
        let chk = self.add(ArrayLang::SegCheck([off, shn, which]));
        if !s.offsets.span.is_dummy() {
            self.spans.push((chk, s.offsets.span));
        }
        Ok(chk)
    }

    /// `[m]`: one less than the number of offsets.
    fn segment_count(&mut self, offsets: &'p Expr, env: &Env<'p>, d: u32) -> Result<Id> {
        let off = self.expr(offsets, env, d)?;
        let len = self.add(ArrayLang::Length([off]));
        let one = self.lit_i64(1);
        let m = self.add(ArrayLang::Sub([len, one]));
        Ok(self.add(ArrayLang::Shape(vec![m].into_boxed_slice())))
    }

    /// `(app f args..)`, the arguments in order.
    fn apply(&mut self, f: Id, args: &[&[Id]]) -> Id {
        let ch: Vec<Id> = std::iter::once(f).chain(args.iter().flat_map(|a| a.iter().copied())).collect();
        self.add(ArrayLang::App(ch.into_boxed_slice()))
    }

    fn lit_i64(&mut self, v: i64) -> Id {
        self.add(ArrayLang::Lit(Literal::I64(v)))
    }

    /// `chk[s]` and `chk[s + 1]`.
    fn bounds(&mut self, chk: Id, s: Id) -> (Id, Id) {
        let lo = self.add(ArrayLang::Index(vec![chk, s].into_boxed_slice()));
        let one = self.lit_i64(1);
        let s1 = self.add(ArrayLang::Add([s, one]));
        let hi = self.add(ArrayLang::Index(vec![chk, s1].into_boxed_slice()));
        (lo, hi)
    }

    /// The neutral element's components at depth `d`.
    fn ne_parts(&mut self, ne: &'p Expr, g: usize, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        if g == 1 {
            Ok(vec![self.expr(ne, env, d)?])
        } else {
            self.parts(ne, env, d)
        }
    }

    /// The operator's components at depth `d`: each a function of `2g` parameters.
    fn op_parts(&mut self, op: &'p Expr, g: usize, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        if g == 1 {
            Ok(vec![self.func(op, env, d)?])
        } else {
            self.component_lams(op, env, d)
        }
    }

    fn reduce_segments(&mut self, seg: &Seg<'p>, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        let Seg { op, ne, offsets, a, ref tys } = *seg;
        let g = tys.len();
        let shm = self.segment_count(offsets, env, d)?;
        // inside `\s ->`
        let d1 = d + 1;
        let s = self.param(0, ElemType::I64);
        let chk = self.checked_offsets(false, seg, env, d1)?;
        let (lo, hi) = self.bounds(chk, s);
        let count = self.add(ArrayLang::Sub([hi, lo]));
        let mut init = vec![lo];
        init.extend(self.ne_parts(ne, g, env, d1)?);
        let init = self.add(ArrayLang::Tuple(init.into_boxed_slice()));
        // inside `\k acc.. ->`
        let d2 = d1 + 1 + g as u32;
        let k = self.param(g as u32, ElemType::I64);
        let accs: Vec<Id> = (0..g).map(|c| self.param((g - 1 - c) as u32, tys[c])).collect();
        let xs: Vec<Id> = match &a.kind {
            ExprKind::Tuple(ms) if g > 1 => {
                ms.iter().map(|m| self.element_at(m, k, env, d2)).collect::<Result<_>>()?
            }
            _ if g == 1 => vec![self.element_at(a, k, env, d2)?],
            _ => self
                .flat_arrays(a, env, d2)?
                .into_iter()
                .map(|m| self.add(ArrayLang::Index(vec![m, k].into_boxed_slice())))
                .collect(),
        };
        let ops = self.op_parts(op, g, env, d2)?;
        let one = self.lit_i64(1);
        let mut next = vec![self.add(ArrayLang::Add([k, one]))];
        for f in ops {
            next.push(self.apply(f, &[&accs, &xs]));
        }
        let body = self.add(ArrayLang::Tuple(next.into_boxed_slice()));
        let mut state = vec![ElemType::I64];
        state.extend(tys);
        let step = self.lam(state, body);
        let it = self.add(ArrayLang::Iterate([count, step, init]));
        Ok((0..g)
            .map(|c| {
                let c = self.lit_i64(1 + c as i64);
                let body = self.add(ArrayLang::Proj([c, it]));
                let f = self.lam(vec![ElemType::I64], body);
                self.add(ArrayLang::Generate([shm, f]))
            })
            .collect())
    }

    /// Element `k` of the rank-1 array `a` at depth `d`, with the producers written in the
    /// argument (`map`, `fill`, `iota`, `generate`) computed in place rather than read: the
    /// fusion rules cannot prove a segment loop's index in bounds (it is, once the offsets
    /// are checked), and a segmented reduction reads each element once, so computing it
    /// where it is read is what fusion would choose. A `map` whose operands are not known
    /// to be of one shape (a run-time `E-SHAPE`) and anything else stay reads.
    fn element_at(&mut self, a: &'p Expr, k: Id, env: &Env<'p>, d: u32) -> Result<Id> {
        if let ExprKind::Apply { func, args } = &a.kind {
            if let ExprKind::Var(f) = &func.kind {
                if !self.is_bound(f, env) {
                    match (f.as_str(), &args[..]) {
                        ("map", [g, xs @ ..]) if !xs.is_empty() && same_rank1_shapes(xs) => {
                            let mut ch = vec![self.func(g, env, d)?];
                            for x in xs {
                                ch.push(self.element_at(x, k, env, d)?);
                            }
                            return Ok(self.add(ArrayLang::App(ch.into_boxed_slice())));
                        }
                        ("fill", [_, x]) => return self.expr(x, env, d),
                        ("iota", [_]) => return Ok(k),
                        ("generate", [_, g]) => {
                            let g = self.func(g, env, d)?;
                            return Ok(self.add(ArrayLang::App(vec![g, k].into_boxed_slice())));
                        }
                        _ => {}
                    }
                }
            }
        }
        let arr = self.expr(a, env, d)?;
        Ok(self.add(ArrayLang::Index(vec![arr, k].into_boxed_slice())))
    }

    /// The head flags of the segments at depth `d`: `true` at each non-empty segment's first
    /// element.
    fn segment_heads(&mut self, seg: &Seg<'p>, env: &Env<'p>, d: u32) -> Result<Id> {
        let shn = self.value_shape(seg, env, d)?;
        let shm = self.segment_count(seg.offsets, env, d)?;
        let or = self.binary_lam(|x, y| ArrayLang::Or([x, y]), &[ElemType::Bool, ElemType::Bool])?;
        let no = self.add(ArrayLang::Lit(Literal::Bool(false)));
        let dest = self.add(ArrayLang::Fill([shn, no]));
        let s = self.param(0, ElemType::I64);
        let chk = self.checked_offsets(true, seg, env, d + 1)?;
        let (lo, hi) = self.bounds(chk, s);
        let nonempty = self.add(ArrayLang::Lt([lo, hi]));
        let drop = self.lit_i64(-1);
        let t = self.add(ArrayLang::If([nonempty, lo, drop]));
        let target = self.lam(vec![ElemType::I64], t);
        let yes = self.add(ArrayLang::Lit(Literal::Bool(true)));
        let src = self.add(ArrayLang::Fill([shm, yes]));
        Ok(self.add(ArrayLang::Permute([or, dest, target, src])))
    }

    fn scan_segments(&mut self, s: &Seg<'p>, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        let Seg { op, ne, a, ref tys, .. } = *s;
        let g = tys.len();
        let shn = self.value_shape(s, env, d)?;
        // the group's index function: \i -> (heads[i], a[i]..)
        let i = self.param(0, ElemType::I64);
        let heads = self.segment_heads(s, env, d + 1)?;
        let mut elem = vec![self.add(ArrayLang::Index(vec![heads, i].into_boxed_slice()))];
        for m in self.flat_arrays(a, env, d + 1)? {
            elem.push(self.add(ArrayLang::Index(vec![m, i].into_boxed_slice())));
        }
        let body = self.add(ArrayLang::Tuple(elem.into_boxed_slice()));
        let f = self.lam(vec![ElemType::I64], body);
        // the segmented operator: \(f1, v1..) (f2, v2..) -> (f1 || f2, if f2 then v2 else op v1 v2)
        let w = (g + 1) as u32;
        let d3 = d + 2 * w;
        let f1 = self.param(2 * w - 1, ElemType::Bool);
        let v1: Vec<Id> = (0..g).map(|c| self.param(2 * w - 2 - c as u32, tys[c])).collect();
        let f2 = self.param(w - 1, ElemType::Bool);
        let v2: Vec<Id> = (0..g).map(|c| self.param(w - 2 - c as u32, tys[c])).collect();
        let mut out = vec![self.add(ArrayLang::Or([f1, f2]))];
        for (c, f) in self.op_parts(op, g, env, d3)?.into_iter().enumerate() {
            let r = self.apply(f, &[&v1, &v2]);
            out.push(self.add(ArrayLang::If([f2, v2[c], r])));
        }
        let body = self.add(ArrayLang::Tuple(out.into_boxed_slice()));
        let mut ptys = vec![ElemType::Bool];
        ptys.extend(tys);
        let ptys = [ptys.clone(), ptys].concat();
        let seg = self.lam(ptys, body);
        let mut ne_t = vec![self.add(ArrayLang::Lit(Literal::Bool(false)))];
        ne_t.extend(self.ne_parts(ne, g, env, d)?);
        let ne_t = self.add(ArrayLang::Tuple(ne_t.into_boxed_slice()));
        let inclusive = self.add(ArrayLang::Lit(Literal::Bool(false)));
        let gs = self.add(ArrayLang::GScan([seg, ne_t, shn, f, inclusive]));
        Ok((1..=g)
            .map(|c| {
                let c = self.lit_i64(c as i64);
                self.add(ArrayLang::Proj([c, gs]))
            })
            .collect())
    }
}

/// A segmented operation's arguments: the operator, the neutral element, the offsets, the
/// values (an array or a group), and the values' element types.
struct Seg<'p> {
    op: &'p Expr,
    ne: &'p Expr,
    offsets: &'p Expr,
    a: &'p Expr,
    tys: Vec<ElemType>,
}

/// Whether arrays `xs` are rank-1, of one element count known before the run.
fn same_rank1_shapes(xs: &[Expr]) -> bool {
    let dim = |x: &Expr| match &x.ty {
        Some(Type::Array { shape, .. }) if shape.len() == 1 && !super::tuples::is_tuple_typed(x) => {
            Some(shape[0].clone())
        }
        _ => None,
    };
    let Some(first) = dim(&xs[0]) else { return false };
    xs.iter().all(|x| {
        dim(x).is_some_and(|s| match (&s, &first) {
            (Dim::Known(a), Dim::Known(b)) => a == b,
            (Dim::Size(a), Dim::Size(b)) | (Dim::Expr(a), Dim::Expr(b)) => a == b,
            _ => false,
        })
    })
}

/// The element types of `a`'s members (one array, or a group).
fn member_types(a: &Expr) -> Result<Vec<ElemType>> {
    let elem = |t: &Type| match t {
        Type::Array { elem, shape } if shape.len() == 1 => Ok(*elem),
        _ => Err(unsupported(
            "a segmented operation over values that are not rank-1 arrays",
            Default::default(),
        )),
    };
    match &a.ty {
        Some(Type::Group(ms)) => ms.iter().map(elem).collect(),
        Some(t) => Ok(vec![elem(t)?]),
        None => Err(internal("a segmented operation's values without a type")),
    }
}
