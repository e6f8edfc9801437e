//! The index operations: `gather`, `backpermute`, `transpose`, `reverse`, `slice`,
//! `concat` and `reshape`, each a `Generate` lane that reads its operand at an index
//! computed from its own (with the run-time checks of `slice` and `reshape`).

use super::super::elem::FuncBuilder;
use super::super::{internal, Lowerer};
use super::checks::same_count;
use egg::Id;
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Code, Result};
use eqfuse_ir::plan::{Arg, Inst, LaneOp, Origin, Step};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// `gather a idx`: `a` at each element of `idx`.
    pub(super) fn gather(&mut self, i: usize, a: Id, idx: Id) -> Result<()> {
        let (va, vi) = (self.array(a)?, self.array(idx)?);
        let space = self.dims_of_value(vi, usize::from(idx))?;
        let elem = self.elem_func(space.len(), |me, fb, ix| {
            let j = me.read(fb, vi, ix.to_vec());
            Ok(me.read(fb, va, vec![j]))
        })?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }

    /// `backpermute sh f a`: `a` at `f` of each index.
    pub(super) fn backpermute(&mut self, i: usize, sh: Id, f: Id, a: Id) -> Result<()> {
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

    /// `transpose a`: `a` at the swapped index.
    pub(super) fn transpose(&mut self, i: usize, a: Id) -> Result<()> {
        let va = self.array(a)?;
        let d = self.dims_of_value(va, usize::from(a))?;
        let [d0, d1] = d[..] else { return Err(internal("transpose of an array not of rank 2")) };
        let elem = self.elem_func(2, |me, fb, ix| Ok(me.read(fb, va, vec![ix[1], ix[0]])))?;
        self.push_kernel(i, vec![d1, d0], elem, LaneOp::Generate)
    }

    /// `reverse a`: `a` with the innermost index flipped.
    pub(super) fn reverse(&mut self, i: usize, a: Id) -> Result<()> {
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
            let flipped = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: top, b: j });
            let mut at = ix.to_vec();
            at[r - 1] = flipped;
            Ok(me.read(fb, va, at))
        })?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }

    /// `slice a s l`: an `Assert` that the range is in `a`, then `a` from `s` on.
    pub(super) fn slice(&mut self, i: usize, a: Id, s: Id, l: Id) -> Result<()> {
        let va = self.array(a)?;
        let len_a = self.dims_of_value(va, usize::from(a))?;
        let start = self.extent(usize::from(s))?;
        let len = self.extent(usize::from(l))?;
        let na = *len_a.first().ok_or_else(|| internal("slice of a scalar"))?;
        // 0 <= start, 0 <= len, start + len <= length a (no overflow: len <= n - start)
        let mut fb = FuncBuilder::new(Vec::new());
        let (rs, rl, rn) =
            (Self::load_arg(&mut fb, start), Self::load_arg(&mut fb, len), Self::load_arg(&mut fb, na));
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
            let at = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Add, a: rs, b: ix[0] });
            Ok(me.read(fb, va, vec![at]))
        })?;
        self.push_kernel(i, vec![len], elem, LaneOp::Generate)
    }

    /// `concat a b`: a host step for the total length, then `a` or `b` by the index.
    pub(super) fn concat(&mut self, i: usize, a: Id, b: Id) -> Result<()> {
        let (va, vb) = (self.array(a)?, self.array(b)?);
        let la = self.dims_of_value(va, usize::from(a))?[0];
        let lb = self.dims_of_value(vb, usize::from(b))?[0];
        let mut fb = FuncBuilder::new(Vec::new());
        let (ra, rb) = (Self::load_arg(&mut fb, la), Self::load_arg(&mut fb, lb));
        let t = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Add, a: ra, b: rb });
        let body = fb.finish(vec![t]);
        let total =
            self.new_value(format!("d{}", self.plan.values.len()), ElemType::I64, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst: total, body });
        let elem = self.elem_func(1, |me, fb, ix| {
            let ra = Self::load_arg(fb, la);
            let c = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: ix[0], b: ra });
            let elem = me.plan.values[va].elem;
            let (then_block, then_ret) = fb.block(|fb| me.read(fb, va, vec![ix[0]]));
            let (else_block, else_ret) = fb.block(|fb| {
                let ra = Self::load_arg(fb, la);
                let off = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: ix[0], b: ra });
                me.read(fb, vb, vec![off])
            });
            Ok(fb.emit(elem, |dst| Inst::If { dst, cond: c, then_block, then_ret, else_block, else_ret }))
        })?;
        self.push_kernel(i, vec![Arg::Value(total)], elem, LaneOp::Generate)
    }

    /// `reshape sh a`: an `Assert` that the element counts agree (where not known), then
    /// `a` at the row-major position of the index.
    pub(super) fn reshape(&mut self, i: usize, sh: Id, a: Id) -> Result<()> {
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
                let m = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: flat, b: d });
                flat = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Add, a: m, b: ix[k] });
            }
            // index k = (flat / (A[k+1] * ..)) % A[k]  (no % for the outermost)
            let m = src.len();
            let mut at = Vec::with_capacity(m);
            for k in 0..m {
                let mut q = flat;
                if k + 1 < m {
                    let stride = Self::product(fb, &src[k + 1..]);
                    q = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Div, a: q, b: stride });
                }
                if k > 0 {
                    let d = Self::load_arg(fb, src[k]);
                    q = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Rem, a: q, b: d });
                }
                at.push(q);
            }
            Ok(me.read(fb, va, at))
        })?;
        self.push_kernel(i, out, elem, LaneOp::Generate)?;
        // its elements are `a`'s, in order: an executor may share `a`'s storage
        if let Some(Step::Kernel(k)) = self.plan.steps.last_mut() {
            k.view_of = Some(va);
        }
        Ok(())
    }
}
