//! `(segcheck offsets (shape n) which)`: the CSR offsets of `reduce_segments` (`which` 0) or
//! `scan_segments` (1), checked before anything reads them. The offsets need one element at
//! least (else `E-SHAPE`), the first `0`, none decreasing, none past `n` and the last `n`;
//! the first position where that fails is found by one reduction over the offsets (the
//! smallest bad position) and named by an `E-INDEX`, as the reference interpreter does. The
//! node's value is the offsets themselves: no copy.

use super::super::elem::FuncBuilder;
use super::super::{internal, Lowerer};
use egg::Id;
use eqfuse_egraph::lang::{ArrayLang as L, Literal};
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Code, Result};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Arg, Block, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Reg, Step};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// What a position where the offsets are fine contributes to the smallest bad position.
const FINE: i64 = i64::MAX;

impl Lowerer<'_> {
    /// `segcheck` node `i`: the checks, then the offsets as its value.
    pub(super) fn segcheck(&mut self, i: usize, [off, sh, which]: [Id; 3]) -> Result<()> {
        let v = self.array(off)?;
        let dims = self.dims_of_value(v, usize::from(off))?;
        let [len] = dims[..] else { return Err(internal("segment offsets that are not of rank 1")) };
        let [n] = self.shape_extents(sh)?[..] else {
            return Err(internal("a segment check whose length is not one extent"));
        };
        let op = match self.nodes[usize::from(which)] {
            L::Lit(Literal::I64(1)) => "scan_segments",
            _ => "reduce_segments",
        };
        let span = self.spans.get(&i).or_else(|| self.spans.get(&usize::from(off))).copied();
        let what = self.describe(v, usize::from(off));
        // at least one offset
        let mut fb = FuncBuilder::new(Vec::new());
        let l = Self::load_arg(&mut fb, len);
        let zero = fb.konst(Scalar::I64(0));
        let some = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Gt, a: l, b: zero });
        self.plan.steps.push(Step::Assert {
            cond: fb.finish(vec![some]),
            code: Code::Shape,
            message: format!("`{op}`: the offsets {what} are empty; they need at least one element (0)"),
            shown: Vec::new(),
            span,
        });
        // the smallest bad position
        let elem = Self::bad_position(v, len, n);
        let mut fb = FuncBuilder::new(vec![ElemType::I64, ElemType::I64]);
        let m = fb.emit(ElemType::I64, |dst| Inst::Call { dst, f: ScalarFn::Min, args: vec![0, 1] });
        let min = fb.finish(vec![m]);
        let mut fb = FuncBuilder::new(Vec::new());
        let fine = fb.konst(Scalar::I64(FINE));
        let ne = fb.finish(vec![fine]);
        let name = format!("{}_bad", self.plan.values[v].name);
        let bad = self.new_value(name, ElemType::I64, 0, Origin::Computed);
        self.plan.steps.push(Step::Kernel(Kernel {
            kind: KernelKind::Reduce,
            space: vec![len],
            elem,
            lanes: vec![Lane { dst: bad, op: LaneOp::Reduce { op: min, ne } }],
            span,
            contraction: None,
            view_of: None,
        }));
        let mut fb = FuncBuilder::new(Vec::new());
        let b = fb.emit(ElemType::I64, |dst| Inst::Load { dst, value: bad });
        let fine = fb.konst(Scalar::I64(FINE));
        let ok = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: b, b: fine });
        self.plan.steps.push(Step::Assert {
            cond: fb.finish(vec![ok]),
            code: Code::Index,
            message: format!(
                "`{op}`: bad offset at position {{0!}} of {what}: the offsets must start at 0, never decrease, \
                 and end at the length {{1!}} of the array"
            ),
            shown: vec![vec![Arg::Value(bad)], vec![n]],
            span,
        });
        self.value_of.insert(i, v);
        Ok(())
    }

    /// The element function over the offsets' positions `s`: `s` where the offsets go wrong
    /// (`s = 0` and `off[0] != 0`; `off[s] < off[s - 1]`; `off[s] > n`; `s` the last and
    /// `off[s] != n`), else [`FINE`].
    fn bad_position(v: usize, len: Arg, n: Arg) -> eqfuse_ir::plan::Func {
        let mut fb = FuncBuilder::new(vec![ElemType::I64]);
        let s: Reg = 0;
        let bin = |fb: &mut FuncBuilder, t: ElemType, op: BinOp, a: Reg, b: Reg| {
            fb.emit(t, |dst| Inst::Binary { dst, op, a, b })
        };
        let o = fb.emit(ElemType::I64, |dst| Inst::Read { dst, array: v, index: vec![s] });
        let zero = fb.konst(Scalar::I64(0));
        let one = fb.konst(Scalar::I64(1));
        let first = bin(&mut fb, ElemType::Bool, BinOp::Eq, s, zero);
        // the offset before (0 before the first): read only where there is one
        let (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::I64(0)));
        let (else_block, else_ret) = fb.block(|fb| {
            let p = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Sub, a: s, b: one });
            fb.emit(ElemType::I64, |dst| Inst::Read { dst, array: v, index: vec![p] })
        });
        let prev = fb.emit(ElemType::I64, |dst| Inst::If {
            dst,
            cond: first,
            then_block,
            then_ret,
            else_block,
            else_ret,
        });
        let nr = Self::load_arg(&mut fb, n);
        let last = Self::load_arg(&mut fb, len);
        let last = bin(&mut fb, ElemType::I64, BinOp::Sub, last, one);
        let nonzero = bin(&mut fb, ElemType::Bool, BinOp::Ne, o, zero);
        let bad_first = fb.and(first, nonzero);
        let falls = bin(&mut fb, ElemType::Bool, BinOp::Lt, o, prev);
        let past = bin(&mut fb, ElemType::Bool, BinOp::Gt, o, nr);
        let is_last = bin(&mut fb, ElemType::Bool, BinOp::Eq, s, last);
        let short = bin(&mut fb, ElemType::Bool, BinOp::Ne, o, nr);
        let bad_last = fb.and(is_last, short);
        let bad = Self::or(&mut fb, bad_first, falls);
        let bad = Self::or(&mut fb, bad, past);
        let bad = Self::or(&mut fb, bad, bad_last);
        let fine = fb.konst(Scalar::I64(FINE));
        let at = fb.emit(ElemType::I64, |dst| Inst::If {
            dst,
            cond: bad,
            then_block: Block::default(),
            then_ret: s,
            else_block: Block::default(),
            else_ret: fine,
        });
        fb.finish(vec![at])
    }
}
