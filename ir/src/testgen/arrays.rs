//! Array expressions and reduction operators: dimensions, lambdas, and every array
//! operation, with indices and targets kept in bounds for every size.

use super::syntax::{
    app, bin, bounds_of, clamp_to, commit, ifx, int, lam, minus1, mk, one_of, product, shape, tuple, var,
    zero_of,
};
use super::{ArrT, Gen, OpNe, D};
use crate::ast::{BinOp, Expr, ExprKind, Item, Lit};
use crate::error::Span;
use crate::types::ElemType;

impl Gen<'_> {
    pub(super) fn op_ne(&mut self, t: ElemType) -> OpNe {
        let use_fn = self.ops().functions && self.src.chance(1, 6);
        if t == ElemType::Bool {
            let and = self.src.chance(1, 2);
            let (op, ne) = if and { (BinOp::And, true) } else { (BinOp::Or, false) };
            let ne = mk(ExprKind::Lit(Lit::Bool(ne)));
            let opx = match self.src.below(2) {
                0 => mk(ExprKind::Section(op)),
                _ => self.op_lambda(usize::from(and), t, |a, b| bin(op, a, b), use_fn),
            };
            return OpNe { op: opx, ne };
        }
        let (lo, hi) = bounds_of(t);
        if t.is_int() && self.src.chance(1, 6) {
            // a bitwise section: all ones is `&`'s neutral element
            let (op, ne) = match self.src.below(3) {
                0 => (BinOp::BitAnd, if t.is_unsigned() { hi } else { int(-1) }),
                1 => (BinOp::BitOr, int(0)),
                _ => (BinOp::BitXor, int(0)),
            };
            return OpNe { op: mk(ExprKind::Section(op)), ne };
        }
        match self.src.below(4) {
            0 => {
                let op = if self.src.chance(1, 2) { BinOp::Mul } else { BinOp::Add };
                let ne = if op == BinOp::Add { zero_of(t) } else { one_of(t) };
                let opx = if self.src.chance(1, 3) {
                    self.op_lambda(2 + usize::from(op == BinOp::Mul), t, |a, b| bin(op, a, b), use_fn)
                } else {
                    mk(ExprKind::Section(op))
                };
                OpNe { op: opx, ne }
            }
            1 => OpNe { op: var("min"), ne: hi },
            2 => OpNe { op: var("max"), ne: lo },
            _ => {
                let is_max = self.src.chance(1, 2);
                let f = if is_max { "max" } else { "min" };
                let opx = self.op_lambda(4 + usize::from(is_max), t, |a, b| app(f, vec![a, b]), use_fn);
                OpNe { op: opx, ne: if is_max { lo } else { hi } }
            }
        }
    }

    /// An operator as a lambda `\a b -> body`, or as a named function defined on first use.
    pub(super) fn op_lambda(
        &mut self,
        form: usize,
        t: ElemType,
        body: impl Fn(Expr, Expr) -> Expr,
        named: bool,
    ) -> Expr {
        let (a, b) = (self.fresh("x"), self.fresh("x"));
        let l = lam(vec![a.clone(), b.clone()], body(var(&a), var(&b)));
        if !named {
            return l;
        }
        if let Some((_, _, name)) = self.op_funcs.iter().find(|(f, e, _)| *f == form && *e == t) {
            return var(name);
        }
        let name = self.fresh("op");
        self.items.push(Item::Let { name: name.clone(), value: l, span: Span::default() });
        self.op_funcs.push((form, t, name.clone()));
        var(&name)
    }

    // ------------------------------------------------------------ arrays

    /// A dimension for a new array: a size name, a small literal, or a dimension of an
    /// existing array.
    pub(super) fn dim(&mut self) -> D {
        match self.src.weighted(&[4, 2, 3]) {
            0 if !self.size_names.is_empty() => {
                let s = self.size_names[self.src.below(self.size_names.len())].clone();
                D { key: s.clone(), e: var(&s) }
            }
            2 if !self.arrays.is_empty() => {
                let i = self.src.below(self.arrays.len());
                let at = &self.arrays[i].1;
                let j = self.src.below(at.dims.len());
                at.dims[j].clone()
            }
            _ => {
                let k = self.src.below(4) as i64;
                D { key: k.to_string(), e: int(k) }
            }
        }
    }

    /// An array argument satisfying `pred`: a named array (the latest one half the time),
    /// sometimes wrapped in an operation that keeps its shape.
    pub(super) fn arg_arr(&mut self, d: u32, pred: impl Fn(&ArrT) -> bool) -> Option<(Expr, ArrT)> {
        let cands: Vec<(String, ArrT)> = self.arrays.iter().filter(|(_, a)| pred(a)).cloned().collect();
        let last = cands.len().checked_sub(1)?;
        let i = if self.src.chance(1, 2) { last } else { self.src.below(cands.len()) };
        let (name, at) = cands[i].clone();
        let e = var(&name);
        if d > 0 && self.src.chance(1, 4) {
            return Some(self.wrap(e, at, d - 1));
        }
        Some((e, at))
    }

    /// An operation on `a` that keeps its element type and shape.
    pub(super) fn wrap(&mut self, a: Expr, at: ArrT, d: u32) -> (Expr, ArrT) {
        let ops = self.ops();
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let e = match self.src.weighted(&[3, w(ops.reshaping, 1), w(ops.reductions, 2)]) {
            1 => app("reverse", vec![a]),
            2 => {
                let OpNe { op, ne } = self.op_ne(at.elem);
                let f = if self.src.chance(1, 2) { "scan_exclusive" } else { "scan" };
                app(f, vec![op, ne, a])
            }
            _ => {
                let f = self.lambda(&[at.elem], at.elem, d);
                app("map", vec![f, a])
            }
        };
        (e, at)
    }

    /// A lambda (or sometimes a named function of that signature) taking `params` to `ret`.
    pub(super) fn lambda(&mut self, params: &[ElemType], ret: ElemType, d: u32) -> Expr {
        if self.ops().functions && self.src.chance(1, 4) {
            let cands: Vec<String> = self
                .funcs
                .iter()
                .filter(|f| f.params == params && f.ret == ret)
                .map(|f| f.name.clone())
                .collect();
            if !cands.is_empty() {
                return var(&cands[self.src.below(cands.len())]);
            }
        }
        if self.ops().math && self.src.chance(1, 8) {
            if let Some(f) = self.builtin_fn(params, ret) {
                return f;
            }
        }
        let names: Vec<String> = params.iter().map(|_| self.fresh("x")).collect();
        let base = self.locals.len();
        for (p, t) in names.iter().zip(params) {
            self.locals.push((p.clone(), *t, true));
        }
        self.in_lambda += 1;
        let body = self.sc(ret, d);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        lam(names, commit(ret, body))
    }

    /// A lambda of index parameters whose body `body` builds from the parameter names.
    pub(super) fn index_lambda(
        &mut self,
        rank: usize,
        body: impl FnOnce(&mut Self, &[String]) -> Expr,
    ) -> Expr {
        let names: Vec<String> = (0..rank).map(|_| self.fresh("j")).collect();
        let base = self.locals.len();
        for p in &names {
            self.locals.push((p.clone(), ElemType::I64, true));
        }
        self.in_lambda += 1;
        let b = body(self, &names);
        self.in_lambda -= 1;
        self.locals.truncate(base);
        lam(names, b)
    }

    /// The value of a top-level array item named `name`.
    pub(super) fn top_array(&mut self, name: &str) -> (Expr, ArrT) {
        let d = self.cfg.max_expr_depth;
        for _ in 0..4 {
            if let Some(r) = self.array_op(name, d) {
                return r;
            }
        }
        // a map of the first input always works
        let (a, at) = (var(&self.arrays[0].0), self.arrays[0].1.clone());
        self.map_of(a, at, d)
    }

    pub(super) fn map_of(&mut self, a: Expr, at: ArrT, d: u32) -> (Expr, ArrT) {
        let ret = if self.src.chance(1, 2) { at.elem } else { self.elem() };
        let f = self.lambda(&[at.elem], ret, d);
        (app("map", vec![f, a]), ArrT { elem: ret, dims: at.dims })
    }

    pub(super) fn array_op(&mut self, name: &str, d: u32) -> Option<(Expr, ArrT)> {
        let ops = self.ops();
        let w = |on: bool, w: u32| if on { w } else { 0 };
        let has_rank = |g: &Gen<'_>, r: usize| g.arrays.iter().any(|(_, a)| a.dims.len() == r);
        let r1 = has_rank(self, 1);
        let r2 = has_rank(self, 2);
        let k = self.src.weighted(&[
            8,                          // 0 map
            w(ops.construct, 2),        // 1 generate
            w(ops.construct, 1),        // 2 iota
            w(ops.construct, 1),        // 3 fill
            w(ops.reductions && r2, 2), // 4 reduce rows
            w(ops.reductions, 2),       // 5 scan / scan_exclusive
            w(ops.filter && r1, 2),     // 6 filter
            w(ops.indexing && r1, 2),   // 7 gather
            w(ops.indexing, 2),         // 8 backpermute
            w(ops.indexing, 2),         // 9 permute
            w(ops.reshaping && r2, 1),  // 10 transpose
            w(ops.reshaping, 1),        // 11 reverse
            w(ops.reshaping, 1),        // 12 reshape
            w(ops.reshaping && r1, 1),  // 13 slice
            w(ops.reshaping && r1, 1),  // 14 concat
            w(ops.control, 1),          // 15 if
            w(ops.control, 2),          // 16 loop
            w(ops.control, 1),          // 17 local let of a group
            w(ops.segments, 2),         // 18 segments
            w(ops.reshaping, 1),        // 19 slice of any rank
            w(ops.reductions && r2, 1), // 20 argmin / argmax of rows
        ]);
        match k {
            0 => self.map_n(d),
            1 => {
                let rank = if self.src.chance(1, 3) { 2 } else { 1 };
                let dims: Vec<D> = (0..rank).map(|_| self.dim()).collect();
                let t = self.elem();
                let f = self.index_lambda(rank, |g, _| {
                    let s = g.sc(t, d);
                    commit(t, s)
                });
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("generate", vec![sh, f]), ArrT { elem: t, dims }))
            }
            2 => {
                let dim = self.dim();
                Some((app("iota", vec![dim.e.clone()]), ArrT { elem: ElemType::I64, dims: vec![dim] }))
            }
            3 => {
                let rank = if self.src.chance(1, 3) { 2 } else { 1 };
                let dims: Vec<D> = (0..rank).map(|_| self.dim()).collect();
                let t = self.elem();
                let x = self.top_scalar(t);
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("fill", vec![sh, x]), ArrT { elem: t, dims }))
            }
            4 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 2)?;
                let dims = at.dims[..1].to_vec();
                if self.src.chance(1, 3) {
                    let e = self.prelude_rows(a, &at)?;
                    return Some((e, ArrT { elem: at.elem, dims }));
                }
                let OpNe { op, ne } = self.op_ne(at.elem);
                Some((app("reduce", vec![op, ne, a]), ArrT { elem: at.elem, dims }))
            }
            5 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let OpNe { op, ne } = self.op_ne(at.elem);
                let f = if self.src.chance(1, 2) { "scan_exclusive" } else { "scan" };
                Some((app(f, vec![op, ne, a]), at))
            }
            6 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let p = self.lambda(&[at.elem], ElemType::Bool, d);
                let key = self.fresh("#");
                let dims = vec![D { key, e: app("length", vec![var(name)]) }];
                Some((app("filter", vec![p, a]), ArrT { elem: at.elem, dims }))
            }
            7 => self.gather(d),
            8 => self.backpermute(d),
            9 => self.permute(d),
            10 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 2)?;
                let dims = vec![at.dims[1].clone(), at.dims[0].clone()];
                Some((app("transpose", vec![a]), ArrT { elem: at.elem, dims }))
            }
            11 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                Some((app("reverse", vec![a]), at))
            }
            12 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let dims = match at.dims.as_slice() {
                    [x, y] if self.src.chance(1, 2) => vec![y.clone(), x.clone()],
                    [x, y] => vec![product(x, y)],
                    [x] if self.src.chance(1, 2) => vec![x.clone(), D { key: "1".into(), e: int(1) }],
                    [x] => vec![D { key: "1".into(), e: int(1) }, x.clone()],
                    _ => return None,
                };
                let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
                Some((app("reshape", vec![sh, a]), ArrT { elem: at.elem, dims }))
            }
            13 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let l = at.dims[0].e.clone();
                let (s0, l0) = (int(self.src.below(3) as i64), int(self.src.below(4) as i64));
                let (start, len) = if self.unguarded() {
                    (s0, l0)
                } else {
                    let start = app("min", vec![s0, l.clone()]);
                    let len = app("min", vec![l0, bin(BinOp::Sub, l, start.clone())]);
                    (start, len)
                };
                let key = self.fresh("#");
                let dims = vec![D { key, e: len.clone() }];
                Some((app("slice", vec![a, start, len]), ArrT { elem: at.elem, dims }))
            }
            14 => {
                let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
                let (b, bt) = self.arg_arr(d, |b| b.dims.len() == 1 && b.elem == at.elem)?;
                let key = format!("({})+({})", at.dims[0].key, bt.dims[0].key);
                let dims = vec![D { key, e: bin(BinOp::Add, at.dims[0].e.clone(), bt.dims[0].e.clone()) }];
                Some((app("concat", vec![a, b]), ArrT { elem: at.elem, dims }))
            }
            15 => {
                let (a, at) = self.arg_arr(d, |_| true)?;
                let keys: Vec<String> = at.keys().iter().map(|k| k.to_string()).collect();
                let others: Vec<String> = self
                    .arrays
                    .iter()
                    .filter(|(_, b)| b.elem == at.elem && b.keys() == keys)
                    .map(|(n, _)| n.clone())
                    .collect();
                let other = if !others.is_empty() && self.src.chance(1, 2) {
                    var(&others[self.src.below(others.len())])
                } else {
                    app("reverse", vec![a.clone()])
                };
                let c = self.sc(ElemType::Bool, d);
                Some((ifx(c.e, a, other), at))
            }
            16 => self.loop_arr(d),
            17 => self.let_tuple_arr(d),
            18 => self.segments(d),
            19 => self.slice_any(d),
            20 => self.argm_rows(d),
            _ => None,
        }
    }

    /// `map f a1 .. ak` over 1 to 3 arrays of one shape.
    pub(super) fn map_n(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let keys: Vec<String> = at.keys().iter().map(|k| k.to_string()).collect();
        let mut args = vec![a];
        let mut elems = vec![at.elem];
        for _ in 0..self.src.below(3) {
            let same: Vec<(String, ArrT)> =
                self.arrays.iter().filter(|(_, b)| b.keys() == keys).cloned().collect();
            if same.is_empty() {
                break;
            }
            let (n, bt) = same[self.src.below(same.len())].clone();
            args.push(var(&n));
            elems.push(bt.elem);
        }
        let ret = if self.src.chance(1, 2) { at.elem } else { self.elem() };
        let f = self.lambda(&elems, ret, d);
        args.insert(0, f);
        Some((app("map", args), ArrT { elem: ret, dims: at.dims }))
    }

    pub(super) fn gather(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |a| a.dims.len() == 1)?;
        let l = at.dims[0].clone();
        if self.unguarded() {
            if let Some((idx, it)) = self.arg_arr(d, |b| b.elem == ElemType::I64) {
                return Some((app("gather", vec![a, idx]), ArrT { elem: at.elem, dims: it.dims }));
            }
        }
        // indices whose outer dimension is `l`: never evaluated when `a` is empty
        let (idx, dims) = match self.src.below(4) {
            0 => (app("iota", vec![l.e.clone()]), vec![l.clone()]),
            1 => {
                let second = if self.src.chance(1, 3) { Some(self.dim()) } else { None };
                let rank = 1 + usize::from(second.is_some());
                let le = l.e.clone();
                let f = self.index_lambda(rank, |g, _| {
                    let h = g.sc(ElemType::I64, d).e;
                    in_range(g, h, &le)
                });
                let mut dims = vec![l.clone()];
                dims.extend(second);
                (app("generate", vec![shape(dims.iter().map(|x| x.e.clone()).collect()), f]), dims)
            }
            _ => {
                let same: Vec<(String, ArrT)> = self
                    .arrays
                    .iter()
                    .filter(|(_, b)| b.dims.first().is_some_and(|x| x.key == l.key))
                    .cloned()
                    .collect();
                if same.is_empty() {
                    (app("reverse", vec![app("iota", vec![l.e.clone()])]), vec![l.clone()])
                } else {
                    let (n, bt) = same[self.src.below(same.len())].clone();
                    let p = self.fresh("x");
                    self.locals.push((p.clone(), bt.elem, true));
                    self.in_lambda += 1;
                    let h = self.sc(ElemType::I64, d).e;
                    let body = in_range(self, h, &l.e);
                    self.in_lambda -= 1;
                    self.locals.pop();
                    (app("map", vec![lam(vec![p], body), var(&n)]), bt.dims)
                }
            }
        };
        Some((app("gather", vec![a, idx]), ArrT { elem: at.elem, dims }))
    }

    pub(super) fn backpermute(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let (dims, f) = match at.dims.as_slice() {
            [l] if self.unguarded() => {
                let f = self.index_lambda(1, |_, p| bin(BinOp::Add, var(&p[0]), int(1)));
                (vec![l.clone()], f)
            }
            [l] => match self.src.below(4) {
                0 => {
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |_, p| bin(BinOp::Sub, minus1(&le), var(&p[0])));
                    (vec![l.clone()], f)
                }
                1 => {
                    let c = int([1, -1, 2][self.src.below(3)]);
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |_, p| clamp_to(bin(BinOp::Add, var(&p[0]), c), &le));
                    (vec![l.clone()], f)
                }
                2 => {
                    let second = self.dim();
                    let f = self.index_lambda(2, |_, p| var(&p[0]));
                    (vec![l.clone(), second], f)
                }
                _ => {
                    let le = l.e.clone();
                    let f = self.index_lambda(1, |g, p| {
                        let h = g.sc(ElemType::I64, d).e;
                        let h = bin(BinOp::Add, h, var(&p[0]));
                        in_range(g, h, &le)
                    });
                    (vec![l.clone()], f)
                }
            },
            [x, y] => match self.src.below(3) {
                0 => {
                    let f = self.index_lambda(2, |_, p| tuple(vec![var(&p[1]), var(&p[0])]));
                    (vec![y.clone(), x.clone()], f)
                }
                1 => {
                    let ye = y.e.clone();
                    let f = self.index_lambda(1, |_, p| {
                        tuple(vec![
                            bin(BinOp::Div, var(&p[0]), ye.clone()),
                            bin(BinOp::Rem, var(&p[0]), ye.clone()),
                        ])
                    });
                    (vec![product(x, y)], f)
                }
                _ => {
                    let ye = y.e.clone();
                    let f = self.index_lambda(2, |_, p| {
                        tuple(vec![var(&p[0]), bin(BinOp::Sub, minus1(&ye), var(&p[1]))])
                    });
                    (vec![x.clone(), y.clone()], f)
                }
            },
            _ => return None,
        };
        let sh = shape(dims.iter().map(|x| x.e.clone()).collect());
        Some((app("backpermute", vec![sh, f, a]), ArrT { elem: at.elem, dims }))
    }

    pub(super) fn permute(&mut self, d: u32) -> Option<(Expr, ArrT)> {
        let (a, at) = self.arg_arr(d, |_| true)?;
        let OpNe { op, ne } = self.op_ne(at.elem);
        let rank = at.dims.len();
        if rank == 2 && self.src.chance(1, 3) {
            // a rank-2 destination of the source's shape
            let dest = app("fill", vec![shape(at.dims.iter().map(|x| x.e.clone()).collect()), ne]);
            let ye = at.dims[1].e.clone();
            let flip = self.src.chance(1, 2);
            let f = self.index_lambda(2, |_, p| {
                let j = if flip { bin(BinOp::Sub, minus1(&ye), var(&p[1])) } else { var(&p[1]) };
                tuple(vec![var(&p[0]), j])
            });
            return Some((app("permute", vec![op, dest, f, a]), at));
        }
        // a rank-1 destination
        let existing: Vec<(String, ArrT)> =
            self.arrays.iter().filter(|(_, b)| b.elem == at.elem && b.dims.len() == 1).cloned().collect();
        let (dest, dl) = if !existing.is_empty() && self.src.chance(1, 3) {
            let (n, bt) = existing[self.src.below(existing.len())].clone();
            (var(&n), bt.dims[0].clone())
        } else {
            let dl = self.dim();
            (app("fill", vec![shape(vec![dl.e.clone()]), ne]), dl)
        };
        let unguarded = self.unguarded();
        let le = dl.e.clone();
        let f = self.index_lambda(rank, |g, p| {
            let h = g.sc(ElemType::I64, d).e;
            let h = bin(BinOp::Add, h, var(&p[0]));
            if unguarded {
                return h;
            }
            let target = ifx(bin(BinOp::Eq, le.clone(), int(0)), int(-1), clamp_to(h, &le));
            if g.src.chance(1, 3) {
                let c = g.sc(ElemType::Bool, d).e;
                ifx(c, int(-1), target)
            } else {
                target
            }
        });
        Some((app("permute", vec![op, dest, f, a]), ArrT { elem: at.elem, dims: vec![dl] }))
    }
}

/// An index into an array of length `len` (> 0 wherever it is evaluated) from any `h`:
/// `clamp h 0 (len - 1)` or a non-negative remainder.
fn in_range(g: &mut Gen<'_>, h: Expr, len: &Expr) -> Expr {
    if g.src.chance(1, 2) {
        clamp_to(h, len)
    } else {
        // ((h % len) + len) % len
        bin(BinOp::Rem, bin(BinOp::Add, bin(BinOp::Rem, h, len.clone()), len.clone()), len.clone())
    }
}
