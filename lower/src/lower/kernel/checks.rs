//! The run-time checks kernels add where the analysis does not know they pass: operands of
//! one shape (`map`), a slice in range, a reshape's element count; and how their
//! messages name arrays and shapes.

use super::super::elem::FuncBuilder;
use super::super::Lowerer;
use eqfuse_egraph::analysis::{Kind, SymDim};
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Code, Result};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Arg, Inst, Origin, Reg, Step, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// An array operand as a run-time error names it: `` `xs` `` for an input or a named
    /// value, else "the array" (as the reference interpreter says).
    pub(super) fn describe(&self, v: ValueId, n: usize) -> String {
        let info = &self.plan.values[v];
        if info.origin == Origin::Input || self.names.contains_key(&n) {
            format!("`{}`", info.name)
        } else {
            "the array".to_string()
        }
    }

    /// Node `n`'s shape as a run-time `E-SHAPE` shows it, `{k}` standing for its extents
    /// ([`eqfuse_ir::plan::named_shape`]).
    pub(super) fn shape_shown(&self, n: usize, k: usize) -> String {
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
    pub(super) fn assert_same_shape(&mut self, op: &str, at: usize, vs: &[(ValueId, usize)]) -> Result<()> {
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

    pub(super) fn product(fb: &mut FuncBuilder, ds: &[Arg]) -> Reg {
        let mut p = fb.konst(Scalar::I64(1));
        for d in ds {
            let r = Self::load_arg(fb, *d);
            p = fb.emit(ElemType::I64, |dst| Inst::Binary { dst, op: BinOp::Mul, a: p, b: r });
        }
        p
    }

    /// Whether a size in `ds` is negative or their running product overflows `i64`,
    /// checked size by size as the reference interpreter checks a shape.
    pub(super) fn invalid_shape(fb: &mut FuncBuilder, ds: &[Arg]) -> Reg {
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
    pub(super) fn or(fb: &mut FuncBuilder, a: Reg, b: Reg) -> Reg {
        let (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
        let (else_block, else_ret) = fb.block(|fb| {
            let t = fb.konst(Scalar::Bool(true));
            fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: b, b: t })
        });
        fb.emit(ElemType::Bool, |dst| Inst::If { dst, cond: a, then_block, then_ret, else_block, else_ret })
    }
}

/// Whether two lists of extents are certainly of one product (equal as multisets).
pub(super) fn same_count(a: &[Arg], b: &[Arg]) -> bool {
    let mut x: Vec<String> = a.iter().filter(|d| **d != Arg::Const(1)).map(|d| format!("{d:?}")).collect();
    let mut y: Vec<String> = b.iter().filter(|d| **d != Arg::Const(1)).map(|d| format!("{d:?}")).collect();
    x.sort();
    y.sort();
    x == y
}
