//! Version-2 forms: tuples (destructuring, groups, tuple-returning `map`/`generate`,
//! `iterate` with a tuple state), loops over arrays, segmented reductions and scans, `slice`
//! of any rank, `argmin`/`argmax`, the prelude (`sum prod mean all any dot`), bitwise
//! operators, `popcount`/`clz`/`isnan`/`isinf` and builtins passed as functions.

use super::syntax::{
    app, bin, bounds_of, commit, float, ifx, int, lam, let_tuple, loop_x, not, shape, tuple, var, zero_of,
};
use super::{ArrT, Gen, OpNe, D, S};
use crate::ast::{BinOp, Expr, Item, LoopForm};
use crate::error::Span;
use crate::types::ElemType;

impl Gen<'_> {
    /// A top-level `let (a, b) = ...`: a tuple-returning `map`/`generate`, a reduction over
    /// a group, a loop with a tuple state, or `iterate` with a tuple state. `false` when
    /// nothing fits.
    pub(super) fn tuple_item(&mut self) -> bool {
        let d = self.cfg.max_expr_depth;
        let ops = self.ops();
        let w = |on: bool, w: u32| if on { w } else { 0 };
        match self.src.weighted(&[3, w(ops.reductions, 2), w(ops.control, 2), w(ops.control, 1)]) {
            0 => {
                let (e, at, elems) = self.tuple_map(d);
                let names: Vec<String> = elems.iter().map(|_| self.fresh("t")).collect();
                self.push_tuple_item(names.clone(), e);
                for (n, t) in names.into_iter().zip(elems) {
                    self.arrays.push((n, ArrT { elem: t, dims: at.dims.clone() }));
                }
                true
            }
            1 => {
                let Some((e, elems)) = self.group_reduce(d) else { return false };
                let names: Vec<String> = elems.iter().map(|_| self.fresh("t")).collect();
                self.push_tuple_item(names.clone(), e);
                self.scalars.extend(names.into_iter().zip(elems));
                true
            }
            2 => {
                let Some((e, at)) = self.loop_tuple(d) else { return false };
                let (x, c) = (self.fresh("t"), self.fresh("t"));
                self.push_tuple_item(vec![x.clone(), c.clone()], e);
                self.arrays.push((x, at));
                self.scalars.push((c, ElemType::I64));
                true
            }
            _ => {
                let (e, elems) = self.iterate_tuple(d);
                let names: Vec<String> = elems.iter().map(|_| self.fresh("t")).collect();
                self.push_tuple_item(names.clone(), e);
                self.scalars.extend(names.into_iter().zip(elems));
                true
            }
        }
    }

    fn push_tuple_item(&mut self, names: Vec<String>, value: Expr) {
        self.let_names.extend(names.iter().cloned());
        self.items.push(Item::LetTuple { names, value, span: Span::default() });
    }

    /// Two or three element types for a tuple.
    fn tuple_elems(&mut self) -> Vec<ElemType> {
        let n = 2 + usize::from(self.src.chance(1, 4));
        (0..n).map(|_| self.elem()).collect()
    }

    /// `\x.. -> (e1, e2, ..)`, each part of its type.
    fn tuple_lambda(&mut self, params: &[ElemType], rets: &[ElemType], d: u32) -> Expr {
        let names: Vec<String> = params.iter().map(|_| self.fresh("x")).collect();
        let base = self.locals.len();
        for (p, t) in names.iter().zip(params) {
            self.locals.push((p.clone(), *t, true));
        }
        self.in_lambda += 1;
        let parts: Vec<Expr> = rets
            .iter()
            .map(|t| {
                let s = self.sc(*t, d);
                commit(*t, s)
            })
            .collect();
        self.in_lambda -= 1;
        self.locals.truncate(base);
        lam(names, tuple(parts))
    }

    /// A group: `map (\x -> (..)) xs` or `generate [..] (\i -> (..))`.
    fn tuple_map(&mut self, d: u32) -> (Expr, ArrT, Vec<ElemType>) {
        let rets = self.tuple_elems();
        if self.ops().construct && self.src.chance(1, 3) || self.arrays.is_empty() {
            let rank = if self.src.chance(1, 3) { 2 } else { 1 };
            let dims: Vec<D> = (0..rank).map(|_| self.dim()).collect();
            let f = self.index_lambda(rank, |g, _| {
                let parts: Vec<Expr> = rets
                    .iter()
                    .map(|t| {
                        let s = g.sc(*t, d);
                        commit(*t, s)
                    })
                    .collect();
                tuple(parts)
            });
            let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
            let at = ArrT { elem: rets[0], dims };
            return (app("generate", vec![sh, f]), at, rets);
        }
        let (a, at) = match self.arg_arr(d, |_| true) {
            Some(x) => x,
            None => (var(&self.arrays[0].0), self.arrays[0].1.clone()),
        };
        let f = self.tuple_lambda(&[at.elem], &rets, d);
        (app("map", vec![f, a]), at, rets)
    }

    /// `reduce (\p q -> let (a, i) = p in let (b, j) = q in ..) (ne1, ne2) (xs, iota n)`:
    /// the first (or last) smallest or largest element and its index, or a sum and the
    /// largest index.
    fn group_reduce(&mut self, d: u32) -> Option<(Expr, Vec<ElemType>)> {
        let (xs, at) = self.arg_arr(d, |a| a.dims.len() == 1 && a.elem != ElemType::Bool)?;
        let t = at.elem;
        let len = at.dims[0].e.clone();
        let (p, q) = (self.fresh("x"), self.fresh("x"));
        let (a, i, b, j) = (self.fresh("v"), self.fresh("v"), self.fresh("v"), self.fresh("v"));
        let (lo, hi) = bounds_of(t);
        let (body, ne) = match self.src.below(3) {
            k @ (0 | 1) => {
                // ties to the lower index: (extreme, n) loses every comparison and tie
                let better = if k == 0 { BinOp::Lt } else { BinOp::Gt };
                let c = bin(
                    BinOp::Or,
                    bin(better, var(&b), var(&a)),
                    bin(BinOp::And, bin(BinOp::Eq, var(&b), var(&a)), bin(BinOp::Lt, var(&j), var(&i))),
                );
                let body = ifx(c, tuple(vec![var(&b), var(&j)]), tuple(vec![var(&a), var(&i)]));
                (body, tuple(vec![if k == 0 { hi } else { lo }, len.clone()]))
            }
            _ => {
                let body = tuple(vec![bin(BinOp::Add, var(&a), var(&b)), app("max", vec![var(&i), var(&j)])]);
                (body, tuple(vec![zero_of(t), int(-1)]))
            }
        };
        let op = lam(
            vec![p.clone(), q.clone()],
            let_tuple(vec![a, i], var(&p), let_tuple(vec![b, j], var(&q), body)),
        );
        let group = tuple(vec![xs, app("iota", vec![len])]);
        Some((app("reduce", vec![op, ne, group]), vec![t, ElemType::I64]))
    }

    /// How many times a `for` loop runs: a small literal, a size, or a clamped scalar input.
    fn loop_count(&mut self) -> Expr {
        match self.src.below(4) {
            1 if !self.size_names.is_empty() => {
                let s = self.size_names[self.src.below(self.size_names.len())].clone();
                app("min", vec![var(&s), int(3)])
            }
            2 => {
                let ins: Vec<String> = self
                    .scalars
                    .iter()
                    .filter(|(n, t)| *t == ElemType::I64 && n.starts_with('s'))
                    .map(|(n, _)| n.clone())
                    .collect();
                if ins.is_empty() {
                    int(2)
                } else {
                    app("min", vec![var(&ins[self.src.below(ins.len())]), int(4)])
                }
            }
            _ => int([2, 0, 1, 3][self.src.below(4)]),
        }
    }

    /// The next state of a loop over `state` (an array of type `at`): an operation that
    /// keeps its shape and element type, which may read `scalars` (the counter, the loop
    /// variable).
    fn loop_body(&mut self, state: &str, at: &ArrT, scalars: &[(String, ElemType)], d: u32) -> Expr {
        self.arrays.push((state.to_string(), at.clone()));
        self.scalars.extend(scalars.iter().cloned());
        let (e, _) = self.wrap(var(state), at.clone(), d);
        self.scalars.truncate(self.scalars.len() - scalars.len());
        self.arrays.pop();
        e
    }

    /// `loop (x, c) = (init, 0) for i < k do (body, c + 1)`, or `... while c < k do ...`.
    fn loop_tuple(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (init, at) = self.arg_arr(d, |_| true)?;
        let (x, c) = (self.fresh("y"), self.fresh("c"));
        let while_ = self.src.chance(1, 3);
        let (form, mut vars) = if while_ {
            let k = int(self.src.below(4) as i64);
            (LoopForm::While { cond: Box::new(bin(BinOp::Lt, var(&c), k)) }, vec![])
        } else {
            let i = self.fresh("it");
            let count = self.loop_count();
            (LoopForm::For { var: i.clone(), count: Box::new(count) }, vec![(i, ElemType::I64)])
        };
        vars.push((c.clone(), ElemType::I64));
        let body = self.loop_body(&x, &at, &vars, d.saturating_sub(1));
        let next = tuple(vec![body, bin(BinOp::Add, var(&c), int(1))]);
        let e = loop_x(vec![x, c], tuple(vec![init, int(0)]), form, next);
        Some((e, at))
    }

    /// `loop x = init for i < k do body` (an array expression).
    pub(super) fn loop_arr(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        if self.src.chance(1, 2) {
            // a tuple state, the counter dropped
            let (e, at) = self.loop_tuple(d)?;
            let (x, c) = (self.fresh("y"), self.fresh("c"));
            return Some((let_tuple(vec![x.clone(), c], e, var(&x)), at));
        }
        let (init, at) = self.arg_arr(d, |_| true)?;
        let x = self.fresh("y");
        let i = self.fresh("it");
        let count = self.loop_count();
        let body = self.loop_body(&x, &at, &[(i.clone(), ElemType::I64)], d.saturating_sub(1));
        let e = loop_x(vec![x], init, LoopForm::For { var: i, count: Box::new(count) }, body);
        Some((e, at))
    }

    /// `let (a, b) = <group> in map (\x y -> ..) a b` (an array expression).
    pub(super) fn let_tuple_arr(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (value, at, elems) = self.tuple_map(d.saturating_sub(1));
        let names: Vec<String> = elems.iter().map(|_| self.fresh("a")).collect();
        let base = self.arrays.len();
        for (n, t) in names.iter().zip(&elems) {
            self.arrays.push((n.clone(), ArrT { elem: *t, dims: at.dims.clone() }));
        }
        let ret = if self.src.chance(1, 2) { elems[0] } else { self.elem() };
        let f = self.lambda(&elems, ret, d.saturating_sub(1));
        self.arrays.truncate(base);
        let mut args = vec![f];
        args.extend(names.iter().map(|n| var(n)));
        let body = app("map", args);
        Some((let_tuple(names, value, body), ArrT { elem: ret, dims: at.dims }))
    }

    /// `iterate k (\s -> let (a, b) = s in (.., ..)) (a0, b0)`: a tuple of scalars.
    fn iterate_tuple(&mut self, d: u32) -> (Expr, Vec<ElemType>) {
        let elems = self.tuple_elems();
        let count = int([2, 0, 1, 3][self.src.below(4)]);
        let init: Vec<Expr> = elems
            .iter()
            .map(|t| {
                let s = self.sc(*t, d.saturating_sub(1));
                commit(*t, s)
            })
            .collect();
        let s = self.fresh("x");
        let names: Vec<String> = elems.iter().map(|_| self.fresh("v")).collect();
        let base = self.locals.len();
        for (n, t) in names.iter().zip(&elems) {
            self.locals.push((n.clone(), *t, true));
        }
        self.in_lambda += 1;
        let parts: Vec<Expr> = elems
            .iter()
            .map(|t| {
                let s = self.sc(*t, d.saturating_sub(1));
                commit(*t, s)
            })
            .collect();
        self.in_lambda -= 1;
        self.locals.truncate(base);
        let f = lam(vec![s.clone()], let_tuple(names, var(&s), tuple(parts)));
        (app("iterate", vec![count, f, tuple(init)]), elems)
    }

    /// A local `let (a, b) = (e1, e2) in body` or `let (a, b) = iterate .. in body`.
    pub(super) fn let_tuple_sc(&mut self, t: ElemType, d: u32) -> S {
        let (value, elems) = if self.ops().control && self.src.chance(1, 2) {
            self.iterate_tuple(d)
        } else {
            let elems = self.tuple_elems();
            let parts: Vec<Expr> = elems
                .iter()
                .map(|t| {
                    let s = self.sc(*t, d);
                    commit(*t, s)
                })
                .collect();
            (tuple(parts), elems)
        };
        let names: Vec<String> = elems.iter().map(|_| self.fresh("v")).collect();
        let base = self.locals.len();
        for (n, t) in names.iter().zip(&elems) {
            self.locals.push((n.clone(), *t, true));
        }
        let body = self.sc(t, d);
        self.locals.truncate(base);
        S { pinned: body.pinned, e: let_tuple(names, value, body.e) }
    }

    /// `reduce_segments op ne offsets a` or `scan_segments op ne offsets a` over an array
    /// whose length the offsets of an input describe.
    pub(super) fn segments(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        if self.segment_inputs.is_empty() {
            return None;
        }
        let k = self.src.below(self.segment_inputs.len());
        let (off, count, len) = {
            let s = &self.segment_inputs[k];
            (s.name.clone(), s.count.clone(), s.len.clone())
        };
        let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1 && a.dims[0].key == len)?;
        let OpNe { op, ne } = self.op_ne(at.elem);
        if self.src.chance(1, 2) {
            Some((app("scan_segments", vec![op, ne, var(&off), a]), at))
        } else {
            let dims = vec![D { key: count.clone(), e: var(&count) }];
            Some((app("reduce_segments", vec![op, ne, var(&off), a]), ArrT { elem: at.elem, dims }))
        }
    }

    /// `slice a [s1, ..] [l1, ..]` of any rank, in range for every size.
    pub(super) fn slice_any(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let unguarded = self.unguarded();
        let mut starts = Vec::new();
        let mut lens = Vec::new();
        let mut dims = Vec::new();
        for dim in &at.dims {
            let l = dim.e.clone();
            let (s0, l0) = (int(self.src.below(3) as i64), int(self.src.below(4) as i64));
            let (start, len) = if unguarded {
                (s0, l0)
            } else {
                let start = app("min", vec![s0, l.clone()]);
                let len = app("min", vec![l0, bin(BinOp::Sub, l, start.clone())]);
                (start, len)
            };
            let key = self.fresh("#");
            dims.push(D { key, e: len.clone() });
            starts.push(start);
            lens.push(len);
        }
        Some((app("slice", vec![a, shape(starts), shape(lens)]), ArrT { elem: at.elem, dims }))
    }

    /// `argmin`/`argmax` of the rows of a rank-2 array, guarded against empty rows.
    pub(super) fn argm_rows(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |a| a.dims.len() == 2 && a.elem != ElemType::Bool)?;
        let f = if self.src.chance(1, 2) { "argmax" } else { "argmin" };
        let dims = at.dims[..1].to_vec();
        let empty = bin(BinOp::Eq, at.dims[1].e.clone(), int(0));
        let zeros = app("fill", vec![shape(vec![dims[0].e.clone()]), int(0)]);
        Some((ifx(empty, zeros, app(f, vec![a])), ArrT { elem: ElemType::I64, dims }))
    }

    /// A prelude reduction of the rows of `a` (`sum prod mean all any`), when one fits.
    pub(super) fn prelude_rows(&mut self, a: Expr, at: &ArrT) -> Option<Expr> {
        let f = match at.elem {
            ElemType::Bool => ["all", "any"][self.src.below(2)],
            t if t.is_float() => ["sum", "prod", "mean"][self.src.below(3)],
            _ => ["sum", "prod"][self.src.below(2)],
        };
        Some(app(f, vec![a]))
    }

    /// A reduction to a scalar of type `t` through the prelude, `dot`, or `argmin`/`argmax`.
    pub(super) fn prelude_scalar(&mut self, t: ElemType, d: u32) -> Option<Expr> {
        if t == ElemType::I64 && self.src.chance(1, 3) {
            let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1 && a.elem != ElemType::Bool)?;
            let f = if self.src.chance(1, 2) { "argmax" } else { "argmin" };
            let empty = bin(BinOp::Eq, at.dims[0].e.clone(), int(0));
            return Some(ifx(empty, int(0), app(f, vec![a])));
        }
        let (a, at) = self.arg_arr(d, |a| a.elem == t && a.dims.len() == 1)?;
        if t != ElemType::Bool && self.src.chance(1, 3) {
            let key = at.dims[0].key.clone();
            let others: Vec<String> = self
                .arrays
                .iter()
                .filter(|(_, b)| b.elem == t && b.dims.len() == 1 && b.dims[0].key == key)
                .map(|(n, _)| n.clone())
                .collect();
            let b = if others.is_empty() { a.clone() } else { var(&others[self.src.below(others.len())]) };
            return Some(app("dot", vec![a, b]));
        }
        self.prelude_rows(a, &at)
    }

    /// `a & b`, `a | b`, `a ^ b`, `a << b`, `a >> b` or `!a` on integers of type `t`.
    pub(super) fn bits_sc(&mut self, t: ElemType, d: u32) -> S {
        let a = self.sc(t, d);
        if self.src.chance(1, 5) {
            return S { pinned: a.pinned, e: not(a.e) };
        }
        let op = [BinOp::BitAnd, BinOp::BitOr, BinOp::BitXor, BinOp::Shl, BinOp::Shr][self.src.below(5)];
        let b = self.sc(t, d);
        S { pinned: a.pinned || b.pinned, e: self.binary(op, a.e, b.e) }
    }

    /// `popcount x` or `clz x` (an `i32`) of an integer of any type.
    pub(super) fn count_bits_sc(&mut self, d: u32) -> S {
        let t = self.int_elem();
        let x = self.sc(t, d);
        let f = if self.src.chance(1, 2) { "clz" } else { "popcount" };
        S { e: app(f, vec![commit(t, x)]), pinned: true }
    }

    /// `isnan x` or `isinf x` of a float, sometimes of one that may be NaN or infinite.
    pub(super) fn float_class_sc(&mut self, d: u32) -> S {
        let t = if self.src.chance(1, 2) { ElemType::F64 } else { ElemType::F32 };
        let x = self.sc(t, d);
        let x = commit(t, x);
        let x = match self.src.below(3) {
            1 => app("sqrt", vec![x]),
            2 => bin(BinOp::Div, x, zero_of(t)),
            _ => x,
        };
        let f = if self.src.chance(1, 2) { "isinf" } else { "isnan" };
        S { e: app(f, vec![x]), pinned: true }
    }

    /// An integer element type.
    pub(super) fn int_elem(&mut self) -> ElemType {
        use ElemType::*;
        [I64, I32, I8, I16, U8, U16, U32, U64][self.src.below(8)]
    }

    /// A builtin function of this signature (`sqrt`, `max`, `f32`, ...), if one fits.
    pub(super) fn builtin_fn(&mut self, params: &[ElemType], ret: ElemType) -> Option<Expr> {
        let cands: Vec<&str> = match params {
            [p] if *p == ret && p.is_float() => {
                vec!["abs", "floor", "ceil", "round", "sin", "cos", "tanh", "erf", "sqrt"]
            }
            [p] if *p == ret && p.is_int() => vec!["abs", ret.name()],
            [p] if ret == ElemType::I32 && p.is_int() => vec!["popcount", "clz", "i32"],
            [p] if ret == ElemType::Bool && p.is_float() => vec!["isnan", "isinf"],
            [_] if ret != ElemType::Bool => vec![ret.name()],
            [p, q] if p == q && *p == ret && ret != ElemType::Bool => vec!["min", "max"],
            _ => vec![],
        };
        if cands.is_empty() {
            return None;
        }
        Some(var(cands[self.src.below(cands.len())]))
    }

    /// `pi`, sometimes scaled.
    pub(super) fn pi(&mut self, t: ElemType) -> S {
        let e = if self.src.chance(1, 2) { var("pi") } else { bin(BinOp::Mul, float(0.5), var("pi")) };
        S { e, pinned: t == ElemType::F64 }
    }

    /// Registers an offsets input `name : i64[count + 1]` for arrays of length `len`.
    pub(super) fn segment_input(&mut self, len: &str) {
        let name = self.fresh("off");
        let count = super::SIZE_NAMES[self.src.below(super::SIZE_NAMES.len())].to_string();
        if !self.size_names.contains(&count) {
            self.size_names.push(count.clone());
        }
        let dim = crate::types::Dim::Affine { name: count.clone(), mul: 1, add: 1 };
        self.items.push(Item::Input {
            name: name.clone(),
            ty: crate::types::Type::Array { elem: ElemType::I64, shape: vec![dim] },
            span: Span::default(),
        });
        let d = D { key: format!("{count}+1"), e: bin(BinOp::Add, var(&count), int(1)) };
        self.arrays.push((name.clone(), ArrT { elem: ElemType::I64, dims: vec![d] }));
        self.segment_inputs.push(super::SegInput { name, count, len: len.to_string() });
    }
}
