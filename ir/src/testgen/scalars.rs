//! Scalar expressions of an intended type: leaves, literals, operators, `if`, local `let`,
//! indexing, calls of named functions, `iterate`, float math and reductions to a scalar.

use super::syntax::{app, app_e, bin, clamp_to, float, ifx, index, int, lam, mk, neg, not, one_of, var};
use super::{ArrT, Func, Gen, OpNe, S};
use crate::ast::{BinOp, Expr, ExprKind, Lit};
use crate::types::ElemType;

impl Gen<'_> {
    /// A scalar expression of intended type `t` within a depth budget.
    pub(super) fn sc(&mut self, t: ElemType, depth: u32) -> S {
        if depth == 0 {
            return self.leaf(t);
        }
        let ops = self.ops();
        let d = depth - 1;
        let arrays_of_t = self.arrays.iter().any(|(_, a)| a.elem == t);
        let funcs_to_t = self.funcs.iter().any(|f| f.ret == t);
        let top = self.in_lambda == 0;
        let w = |on: bool, w: u32| if on { w } else { 0 };
        if t == ElemType::Bool {
            let k = self.src.weighted(&[
                4,
                5,
                3,
                1,
                w(ops.control, 2),
                w(ops.control, 1),
                w(ops.indexing && arrays_of_t, 2),
                w(ops.functions && funcs_to_t, 2),
                w(ops.reductions && top, 1),
                w(ops.math, 1),
                w(ops.control, 1),
            ]);
            return match k {
                1 => {
                    let s = self.elem();
                    let ops_ok: &[BinOp] = if s == ElemType::Bool {
                        &[BinOp::Eq, BinOp::Ne]
                    } else {
                        &[BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge, BinOp::Eq, BinOp::Ne]
                    };
                    let op = ops_ok[self.src.below(ops_ok.len())];
                    let (a, b) = (self.sc(s, d), self.sc(s, d));
                    S { e: bin(op, a.e, b.e), pinned: true }
                }
                2 => {
                    let op = if self.src.chance(1, 2) { BinOp::Or } else { BinOp::And };
                    let (a, b) = (self.sc(t, d), self.sc(t, d));
                    S { e: self.binary(op, a.e, b.e), pinned: true }
                }
                3 => S { e: not(self.sc(t, d).e), pinned: true },
                4 => self.if_sc(t, d),
                5 => self.let_sc(t, d),
                6 => self.index_sc(t, d),
                7 => self.call_sc(t, d),
                8 => match self.reduce_scalar(t, d) {
                    Some(e) => S { e, pinned: true },
                    None => self.leaf(t),
                },
                9 => self.float_class_sc(d),
                10 => self.let_tuple_sc(t, d),
                _ => self.leaf(t),
            };
        }
        let float = t.is_float();
        let k = self.src.weighted(&[
            4,
            6,
            2,
            1,
            w(ops.math, 2),
            w(ops.control, 2),
            w(ops.control, 1),
            w(ops.math, 1),
            w(ops.indexing && arrays_of_t, 2),
            w(ops.functions && funcs_to_t, 2),
            w(ops.control, 1),
            w(ops.math && float, 4),
            w(t == ElemType::I64, 1),
            w(ops.reductions && top, 1),
            w(t.is_int(), 3),
            w(ops.math && t == ElemType::I32, 1),
            w(ops.control, 1),
        ]);
        match k {
            1 => {
                let op = [BinOp::Add, BinOp::Sub, BinOp::Mul][self.src.below(3)];
                let (a, b) = (self.sc(t, d), self.sc(t, d));
                S { pinned: a.pinned || b.pinned, e: self.binary(op, a.e, b.e) }
            }
            2 => {
                let op = if self.src.chance(1, 2) { BinOp::Rem } else { BinOp::Div };
                let (a, b) = (self.sc(t, d), self.sc(t, d));
                let pinned = a.pinned || b.pinned;
                let divisor = if self.unguarded() {
                    b.e
                } else {
                    ifx(bin(BinOp::Eq, b.e.clone(), int(0)), one_of(t), b.e)
                };
                S { e: bin(op, a.e, divisor), pinned }
            }
            3 => {
                let a = self.sc(t, d);
                if t.is_unsigned() && matches!(a.e.kind, ExprKind::Lit(_)) {
                    // a negative literal is not a `u8`: `0 - x` wraps
                    return S { e: bin(BinOp::Sub, int(0), a.e), pinned: a.pinned };
                }
                S { e: neg(a.e), pinned: a.pinned }
            }
            4 => {
                let f = ["min", "max", "abs", "clamp"][self.src.below(4)];
                let n = match f {
                    "abs" => 1,
                    "clamp" => 3,
                    _ => 2,
                };
                let args: Vec<S> = (0..n).map(|_| self.sc(t, d)).collect();
                let pinned = args.iter().any(|a| a.pinned);
                S { e: app(f, args.into_iter().map(|a| a.e).collect()), pinned }
            }
            5 => self.if_sc(t, d),
            6 => self.let_sc(t, d),
            7 => {
                // convert a local (a lambda's argument) of another type, or anything
                let s = if !self.locals.is_empty() && self.src.chance(1, 2) {
                    self.locals[self.src.below(self.locals.len())].1
                } else {
                    self.elem()
                };
                let a = self.sc(s, d);
                S { e: app(t.name(), vec![a.e]), pinned: true }
            }
            8 => self.index_sc(t, d),
            9 => self.call_sc(t, d),
            10 => self.iterate_sc(t, d),
            11 => self.float_math(t, d),
            12 => self.length_sc(),
            13 => match self.reduce_scalar(t, d) {
                Some(e) => S { e, pinned: true },
                None => self.leaf(t),
            },
            14 => self.bits_sc(t, d),
            15 => self.count_bits_sc(d),
            16 => self.let_tuple_sc(t, d),
            _ => self.leaf(t),
        }
    }

    /// `a op b`, sometimes written as an applied section `(op) a b`.
    pub(super) fn binary(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        if self.src.chance(1, 12) {
            app_e(mk(ExprKind::Section(op)), vec![a, b])
        } else {
            bin(op, a, b)
        }
    }

    pub(super) fn leaf(&mut self, t: ElemType) -> S {
        // lambda parameters and local lets first: lambdas should read their arguments
        let locals: Vec<(String, bool)> =
            self.locals.iter().filter(|l| l.1 == t).map(|l| (l.0.clone(), l.2)).collect();
        if !locals.is_empty() && self.src.chance(1, 2) {
            let (name, pinned) = locals[self.src.below(locals.len())].clone();
            return S { e: var(&name), pinned };
        }
        let mut cands: Vec<(String, bool)> =
            self.locals.iter().filter(|l| l.1 == t).map(|l| (l.0.clone(), l.2)).collect();
        cands.extend(self.scalars.iter().filter(|s| s.1 == t).map(|s| (s.0.clone(), true)));
        if t == ElemType::I64 {
            cands.extend(self.size_names.iter().map(|s| (s.clone(), true)));
        }
        if !cands.is_empty() && self.src.chance(2, 3) {
            let (name, pinned) = cands[self.src.below(cands.len())].clone();
            return S { e: var(&name), pinned };
        }
        self.literal(t)
    }

    pub(super) fn literal(&mut self, t: ElemType) -> S {
        match t {
            ElemType::Bool => S { e: mk(ExprKind::Lit(Lit::Bool(self.src.chance(1, 2)))), pinned: true },
            ElemType::F32 | ElemType::F64 => {
                if self.src.chance(1, 6) {
                    // an integer literal where a float is expected
                    let v = [0, 1, 2, -1][self.src.below(4)];
                    return S { e: int(v), pinned: false };
                }
                if self.src.chance(1, 12) {
                    return self.pi(t);
                }
                let v = [0.0, 1.0, 0.5, 2.0, -1.5, 0.25, -0.75, 1.25, 3.0][self.src.below(9)];
                S { e: float(v), pinned: t == ElemType::F64 }
            }
            _ => {
                let v = if t.is_unsigned() {
                    [0, 1, 2, 3, 4, 5, 7, 8, 10][self.src.below(9)]
                } else {
                    [0, 1, 2, 3, -1, 5, 7, -3, 10][self.src.below(9)]
                };
                S { e: int(v), pinned: t == ElemType::I64 }
            }
        }
    }

    pub(super) fn if_sc(&mut self, t: ElemType, d: u32) -> S {
        let c = self.sc(ElemType::Bool, d);
        let (a, b) = (self.sc(t, d), self.sc(t, d));
        S { pinned: a.pinned || b.pinned, e: ifx(c.e, a.e, b.e) }
    }

    pub(super) fn let_sc(&mut self, t: ElemType, d: u32) -> S {
        let name = self.fresh("v");
        let vt = self.elem();
        let v = self.sc(vt, d);
        self.locals.push((name.clone(), vt, v.pinned));
        let body = self.sc(t, d);
        self.locals.pop();
        S { pinned: body.pinned, e: mk(ExprKind::Let { name, value: Box::new(v.e), body: Box::new(body.e) }) }
    }

    /// `a[i..]` of a global array with elements `t`, guarded against empty arrays.
    pub(super) fn index_sc(&mut self, t: ElemType, d: u32) -> S {
        let cands: Vec<(String, ArrT)> = self.arrays.iter().filter(|(_, a)| a.elem == t).cloned().collect();
        if cands.is_empty() {
            return self.leaf(t);
        }
        let (name, at) = cands[self.src.below(cands.len())].clone();
        let raw: Vec<Expr> = at.dims.iter().map(|_| self.sc(ElemType::I64, d).e).collect();
        if self.unguarded() {
            return S { e: index(&name, raw), pinned: true };
        }
        let ix: Vec<Expr> = raw.into_iter().zip(&at.dims).map(|(i, dim)| clamp_to(i, &dim.e)).collect();
        let mut empty: Option<Expr> = None;
        for dim in &at.dims {
            let c = bin(BinOp::Eq, dim.e.clone(), int(0));
            empty = Some(match empty {
                None => c,
                Some(p) => bin(BinOp::Or, p, c),
            });
        }
        let fallback = self.leaf(t).e;
        let e = match empty {
            Some(c) => ifx(c, fallback, index(&name, ix)),
            None => index(&name, ix),
        };
        S { e, pinned: true }
    }

    pub(super) fn call_sc(&mut self, t: ElemType, d: u32) -> S {
        let cands: Vec<Func> = self.funcs.iter().filter(|f| f.ret == t).cloned().collect();
        if cands.is_empty() {
            return self.leaf(t);
        }
        let f = cands[self.src.below(cands.len())].clone();
        let args: Vec<Expr> = f.params.iter().map(|p| self.sc(*p, d).e).collect();
        S { e: app(&f.name, args), pinned: true }
    }

    pub(super) fn iterate_sc(&mut self, t: ElemType, d: u32) -> S {
        let count = [2, 0, 1, 3, -1][self.src.below(5)];
        let init = self.sc(t, d);
        let p = self.fresh("x");
        self.locals.push((p.clone(), t, init.pinned));
        self.in_lambda += 1;
        let body = self.sc(t, d);
        self.in_lambda -= 1;
        self.locals.pop();
        S {
            pinned: init.pinned || body.pinned,
            e: app("iterate", vec![int(count), lam(vec![p], body.e), init.e]),
        }
    }

    pub(super) fn float_math(&mut self, t: ElemType, d: u32) -> S {
        let x = self.sc(t, d);
        let p = x.pinned;
        let abs1 = |x: Expr| bin(BinOp::Add, app("abs", vec![x]), float(1.0));
        let e = match self.src.below(21) {
            0 => app("sin", vec![x.e]),
            1 => app("sqrt", vec![abs1(x.e)]),
            2 => app("exp", vec![app(if self.src.chance(1, 2) { "sin" } else { "tanh" }, vec![x.e])]),
            3 => app("log", vec![abs1(x.e)]),
            4 => app("cos", vec![x.e]),
            5 => app("tan", vec![app("tanh", vec![x.e])]),
            6 => app("tanh", vec![x.e]),
            7 => app("floor", vec![x.e]),
            8 => app("ceil", vec![x.e]),
            9 => app("round", vec![x.e]),
            10 => {
                let y = if self.src.chance(1, 2) {
                    float([2.0, 0.5, 3.0, -1.0][self.src.below(4)])
                } else {
                    app("cos", vec![self.sc(t, d).e])
                };
                app("pow", vec![abs1(x.e), y])
            }
            11 => {
                let y = self.sc(t, d);
                return S { pinned: p || y.pinned, e: app("atan2", vec![x.e, y.e]) };
            }
            13 => app(["log2", "log10"][self.src.below(2)], vec![abs1(x.e)]),
            14 => app(["exp2", "expm1"][self.src.below(2)], vec![app("tanh", vec![x.e])]),
            15 => app("log1p", vec![app("abs", vec![x.e])]),
            16 => app("erf", vec![x.e]),
            17 => app("erfc", vec![x.e]),
            18 => app("lgamma", vec![abs1(app("tanh", vec![x.e]))]),
            19 => bin(BinOp::Mul, x.e, app("sin", vec![var("pi")])),
            _ => app("clamp", vec![x.e, float(-1.0), float(1.0)]),
        };
        S { e, pinned: p }
    }

    pub(super) fn length_sc(&mut self) -> S {
        if self.arrays.is_empty() {
            return self.leaf(ElemType::I64);
        }
        let i = self.src.below(self.arrays.len());
        let (name, at) = self.arrays[i].clone();
        let e = if self.src.chance(1, 2) {
            app("length", vec![var(&name)])
        } else {
            let k = self.src.below(at.dims.len());
            app("size", vec![var(&name), int(k as i64)])
        };
        S { e, pinned: true }
    }

    /// `reduce op ne a` of a rank-1 array with elements `t` (top level only).
    pub(super) fn reduce_scalar(&mut self, t: ElemType, d: u32) -> Option<Expr> {
        if self.in_lambda > 0 {
            return None;
        }
        if self.src.chance(1, 3) {
            if let Some(e) = self.prelude_scalar(t, d) {
                return Some(e);
            }
        }
        let (a, _) = self.arg_arr(d, |a| a.elem == t && a.dims.len() == 1)?;
        let OpNe { op, ne } = self.op_ne(t);
        Some(app("reduce", vec![op, ne, a]))
    }
}
