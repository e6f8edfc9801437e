//! Tuples and groups, encoded by component.
//!
//! ```text
//! \(a, i) (b, j) -> body       (lam <t,i64,t,i64> body)          a tuple parameter is one per component
//! let (a, b) = v in body       a, b bound to components 0, 1 of v
//! (e0, e1)                     components e0, e1
//! if c then t else e           components (if c t_k e_k)
//! map f xs   (f returns w)     components (map f_k xs), f_k returning component k of f's body
//! generate sh f                components (generate sh f_k)
//! f x ..     (f returns w)     f's body with its parameters bound to the arguments
//! iterate n f (i0, i1)         components (proj k (iterate n f (tuple i0 i1)))
//! reduce op ne (a0, a1)        components (proj k (greduce op ne sh (lam (tuple a0[ix] a1[ix])) 0))
//! scan op ne (a0, a1)          components (proj k (gscan op ne sh (lam ..) false)), `scan_exclusive`: true
//! argmin xs                    (proj 1 (greduce argmin-op (worst, i64 max) sh (lam (tuple xs[ix] $0)) 1))
//! ```
//!
//! A group's members are read through the index function of the `greduce`/`gscan`, so that
//! the rules fuse what makes them (`iota`, `map`, `generate`) into the one pass.

use super::{internal, unsupported, Enc, Env, Local};
use crate::lang::{ArrayLang, DeBruijn, Literal, SizeName};
use egg::Id;
use eqfuse_ir::ast::{is_builtin, Expr, ExprKind};
use eqfuse_ir::error::{Result, Span};
use eqfuse_ir::types::{Dim, ElemType, Type};

/// Whether `e` is a tuple of scalars or a group of arrays.
pub(super) fn is_tuple_typed(e: &Expr) -> bool {
    matches!(e.ty, Some(Type::Tuple(_) | Type::Group(_)))
}

/// Whether a pattern's name binds nothing (`_`).
pub(super) fn is_wildcard(name: &str) -> bool {
    name == "_"
}

/// A parameter of a function type: a scalar, or a tuple of scalars.
fn param_parts(p: &Type, span: Span) -> Result<Vec<ElemType>> {
    match p {
        Type::Scalar(t) => Ok(vec![*t]),
        Type::Tuple(ts) => Ok(ts.clone()),
        other => Err(unsupported(format!("a function parameter of type {other}"), span)),
    }
}

impl<'p> Enc<'p> {
    /// Binds a lambda's parameters at binder depth `d`: its flat parameter types, the
    /// environment of its body and the body's depth.
    pub(super) fn bind_params(
        &mut self,
        f: &'p Expr,
        params: &'p [String],
        env: &Env<'p>,
        d: u32,
    ) -> Result<(Vec<ElemType>, Env<'p>, u32)> {
        let Some(Type::Func { params: ptys, .. }) = &f.ty else {
            return Err(internal(format!("a function has type {:?}", f.ty)));
        };
        if ptys.len() != params.len() {
            return Err(internal("lambda arity and type disagree"));
        }
        let mut inner = env.clone();
        let mut tys = Vec::new();
        let mut level = d;
        for (p, pt) in params.iter().zip(ptys) {
            let parts = param_parts(pt, f.span)?;
            inner = match pt {
                Type::Tuple(_) => inner.push(p, Local::TupleParam { level, tys: parts.clone() }),
                _ => inner.push(p, Local::Param { level, ty: parts[0] }),
            };
            level += parts.len() as u32;
            tys.extend(parts);
        }
        Ok((tys, inner, level))
    }

    /// `env` with `names` bound to the components of `value` (a tuple pattern).
    pub(super) fn bind_pattern(&mut self, names: &'p [String], value: &'p Expr, env: &Env<'p>) -> Env<'p> {
        let inst = self.next_inst;
        self.next_inst += 1;
        let mut inner = env.clone();
        for (k, name) in names.iter().enumerate() {
            inner = inner.push(name, Local::Part { inst, value, env: env.clone(), k });
        }
        inner
    }

    /// Component `k` of a pattern's value at use depth `d`.
    pub(super) fn part_value(
        &mut self,
        inst: usize,
        value: &'p Expr,
        cenv: &Env<'p>,
        d: u32,
        k: usize,
    ) -> Result<Id> {
        let ps = self.let_parts(inst, value, cenv, d)?;
        ps.get(k).copied().ok_or_else(|| internal(format!("component {k} of a tuple of {}", ps.len())))
    }

    /// The components of a tuple-valued binding at use depth `d` (memoised).
    fn let_parts(&mut self, inst: usize, value: &'p Expr, cenv: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        if let Some(ps) = self.parts_memo.get(&(inst, d)) {
            return Ok(ps.clone());
        }
        let ps = self.parts(value, cenv, d)?;
        self.parts_memo.insert((inst, d), ps.clone());
        Ok(ps)
    }

    /// The components of tuple or group `e` at binder depth `d`: scalars for a tuple,
    /// arrays for a group.
    pub(super) fn parts(&mut self, e: &'p Expr, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        match &e.kind {
            ExprKind::Tuple(es) => es
                .iter()
                .map(|x| {
                    if is_tuple_typed(x) {
                        Err(unsupported("a tuple inside a tuple", x.span))
                    } else {
                        self.expr(x, env, d)
                    }
                })
                .collect(),
            ExprKind::Var(name) => match env.lookup(name) {
                Some(Local::TupleParam { level, tys }) => {
                    let (level, tys) = (*level, tys.clone());
                    Ok(tys
                        .into_iter()
                        .enumerate()
                        .map(|(k, ty)| {
                            self.add(ArrayLang::Param(DeBruijn { index: d - 1 - (level + k as u32), ty }))
                        })
                        .collect())
                }
                Some(Local::Let { inst, value, env: cenv }) => {
                    let (inst, value, cenv) = (*inst, *value, cenv.clone());
                    self.let_parts(inst, value, &cenv, d)
                }
                Some(Local::Part { .. }) => Err(unsupported("a tuple inside a tuple", e.span)),
                Some(Local::Param { .. }) => Err(internal(format!("`{name}` is not a tuple"))),
                None => self
                    .global_parts
                    .get(name.as_str())
                    .cloned()
                    .ok_or_else(|| internal(format!("`{name}` unbound"))),
            },
            ExprKind::If { cond, then_, else_ } => {
                let c = self.expr(cond, env, d)?;
                let t = self.parts(then_, env, d)?;
                let f = self.parts(else_, env, d)?;
                if t.len() != f.len() {
                    return Err(internal("the branches of an `if` of different widths"));
                }
                Ok(t.into_iter().zip(f).map(|(t, f)| self.add(ArrayLang::If([c, t, f]))).collect())
            }
            ExprKind::Let { name, value, body } => {
                let inst = self.next_inst;
                self.next_inst += 1;
                let inner = env.push(name, Local::Let { inst, value, env: env.clone() });
                self.parts(body, &inner, d)
            }
            ExprKind::LetTuple { names, value, body } => {
                let inner = self.bind_pattern(names, value, env);
                self.parts(body, &inner, d)
            }
            ExprKind::Apply { func, args } => {
                if let ExprKind::Var(name) = &func.kind {
                    if is_builtin(name) && !self.is_bound(name, env) {
                        return self.builtin_parts(name, args, env, d, e);
                    }
                }
                self.apply_parts(func, args, env, d)
            }
            _ => Err(unsupported("this tuple form", e.span)),
        }
    }

    /// The lambda a function expression names: its parameters, body, the expression that
    /// carries its type, and the environment of its definition.
    fn resolve_lambda(
        &self,
        f: &'p Expr,
        env: &Env<'p>,
    ) -> Option<(&'p [String], &'p Expr, &'p Expr, Env<'p>)> {
        match &f.kind {
            ExprKind::Lambda { params, body } => Some((params, body, f, env.clone())),
            ExprKind::Var(name) => match env.lookup(name) {
                Some(Local::Let { value, env: cenv, .. }) => {
                    let (value, cenv) = (*value, cenv.clone());
                    self.resolve_lambda(value, &cenv)
                }
                Some(_) => None,
                None => {
                    let value = *self.global_funcs.get(name.as_str())?;
                    self.resolve_lambda(value, &Env::default())
                }
            },
            _ => None,
        }
    }

    /// `f args` where `f` returns a tuple: `f`'s body with its parameters bound to the
    /// arguments (a tuple argument to a tuple parameter).
    fn apply_parts(&mut self, func: &'p Expr, args: &'p [Expr], env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        let (params, body, _, def_env) = self
            .resolve_lambda(func, env)
            .ok_or_else(|| unsupported("a function returning a tuple that is not a lambda", func.span))?;
        if params.len() != args.len() {
            return Err(unsupported("a function returning a tuple applied partially", func.span));
        }
        let mut inner = def_env;
        for (p, a) in params.iter().zip(args) {
            let inst = self.next_inst;
            self.next_inst += 1;
            inner = inner.push(p, Local::Let { inst, value: a, env: env.clone() });
        }
        self.parts(body, &inner, d)
    }

    /// The components of function `f`'s body, each as a `lam` of `f`'s flat parameters.
    pub(super) fn component_lams(&mut self, f: &'p Expr, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        let (params, body, typed, def_env) = self
            .resolve_lambda(f, env)
            .ok_or_else(|| unsupported("a function returning a tuple that is not a lambda", f.span))?;
        let (tys, inner, depth) = self.bind_params(typed, params, &def_env, d)?;
        let ps = self.parts(body, &inner, depth)?;
        Ok(ps.into_iter().map(|b| self.lam(tys.clone(), b)).collect())
    }

    /// An array operand that may be a group: its arrays.
    pub(super) fn flat_arrays(&mut self, a: &'p Expr, env: &Env<'p>, d: u32) -> Result<Vec<Id>> {
        if is_tuple_typed(a) {
            self.parts(a, env, d)
        } else {
            Ok(vec![self.expr(a, env, d)?])
        }
    }

    fn builtin_parts(
        &mut self,
        name: &str,
        args: &'p [Expr],
        env: &Env<'p>,
        d: u32,
        e: &'p Expr,
    ) -> Result<Vec<Id>> {
        let w = match &e.ty {
            Some(Type::Tuple(ts)) => ts.len(),
            Some(Type::Group(ts)) => ts.len(),
            _ => return Err(internal("a tuple builtin without a tuple type")),
        };
        match (name, args) {
            ("iterate", [n, f, init]) => {
                let n = self.expr(n, env, d)?;
                let f = self.func(f, env, d)?;
                let ps = self.parts(init, env, d)?;
                let init = self.add(ArrayLang::Tuple(ps.into_boxed_slice()));
                let it = self.add(ArrayLang::Iterate([n, f, init]));
                Ok(self.projections(it, w))
            }
            ("reduce" | "scan" | "scan_exclusive", [op, ne, grp]) if is_tuple_typed(grp) => {
                let op = self.func(op, env, d)?;
                let ps = self.parts(ne, env, d)?;
                let ne = self.add(ArrayLang::Tuple(ps.into_boxed_slice()));
                let (sh, f) = self.index_function(grp, env, d, |_, members, _| members)?;
                let g = if name == "reduce" {
                    let check = self.add(ArrayLang::Lit(Literal::I64(0)));
                    self.add(ArrayLang::GReduce([op, ne, sh, f, check]))
                } else {
                    let exclusive = self.add(ArrayLang::Lit(Literal::Bool(name == "scan_exclusive")));
                    self.add(ArrayLang::GScan([op, ne, sh, f, exclusive]))
                };
                Ok(self.projections(g, w))
            }
            ("reduce_segments" | "scan_segments", _) => self.segments(name == "scan_segments", args, env, d),
            ("map", [f, arrays @ ..]) if !arrays.is_empty() => {
                let lams = self.component_lams(f, env, d)?;
                let mut flat = Vec::new();
                for a in arrays {
                    flat.extend(self.flat_arrays(a, env, d)?);
                }
                Ok(lams
                    .into_iter()
                    .map(|l| {
                        let mut ch = vec![l];
                        ch.extend(&flat);
                        self.add(ArrayLang::Map(ch.into_boxed_slice()))
                    })
                    .collect())
            }
            ("generate", [sh, f]) => {
                let sh = self.expr(sh, env, d)?;
                let lams = self.component_lams(f, env, d)?;
                Ok(lams.into_iter().map(|l| self.add(ArrayLang::Generate([sh, l]))).collect())
            }
            _ => Err(unsupported(format!("`{name}` over a tuple or a group"), e.span)),
        }
    }

    /// `(proj k x)` for `k < w`.
    fn projections(&mut self, x: Id, w: usize) -> Vec<Id> {
        (0..w)
            .map(|k| {
                let k = self.add(ArrayLang::Lit(Literal::I64(k as i64)));
                self.add(ArrayLang::Proj([k, x]))
            })
            .collect()
    }

    /// The shape of `grp` (a group, or one array): its members' shape, which must be known
    /// to agree (else refused).
    pub(super) fn group_shape(&self, grp: &'p Expr) -> Result<&'p Vec<Dim>> {
        let shapes: Vec<&'p Vec<Dim>> = match &grp.ty {
            Some(Type::Group(ms)) => ms
                .iter()
                .map(|m| match m {
                    Type::Array { shape, .. } => Ok(shape),
                    _ => Err(unsupported("a group with a scalar member", grp.span)),
                })
                .collect::<Result<_>>()?,
            Some(Type::Array { shape, .. }) => vec![shape],
            _ => return Err(internal("an index function over a value that is not an array")),
        };
        let first = shapes[0];
        let agree = |s: &&Vec<Dim>| {
            s.len() == first.len()
                && s.iter().zip(first).all(|(a, b)| match (a, b) {
                    (Dim::Known(x), Dim::Known(y)) => x == y,
                    (Dim::Size(x), Dim::Size(y)) | (Dim::Expr(x), Dim::Expr(y)) => x == y,
                    _ => false,
                })
        };
        if !shapes.iter().all(agree) {
            return Err(unsupported("a group whose members' shapes are not known to agree", grp.span));
        }
        Ok(first)
    }

    /// The shape of `grp` (a group, or one array) and an index function over it whose body
    /// is `body(enc, members, index params)` as a `(tuple ..)`: the members (arrays) read at
    /// the function's indices. Members whose shapes are not known to agree are refused.
    fn index_function(
        &mut self,
        grp: &'p Expr,
        env: &Env<'p>,
        d: u32,
        body: impl FnOnce(&mut Self, Vec<Id>, &[Id]) -> Vec<Id>,
    ) -> Result<(Id, Id)> {
        let first = self.group_shape(grp)?;
        let r = first.len();
        let mut dims = Vec::with_capacity(r);
        let mut here: Option<Id> = None;
        for (j, dim) in first.iter().enumerate() {
            dims.push(match dim {
                Dim::Known(k) => self.add(ArrayLang::Lit(Literal::I64(*k))),
                Dim::Size(s) => self.add(ArrayLang::Size(SizeName::new(s))),
                _ => {
                    let a = match here {
                        Some(a) => a,
                        None => {
                            let a = self.flat_arrays(grp, env, d)?[0];
                            here = Some(a);
                            a
                        }
                    };
                    let k = self.add(ArrayLang::Lit(Literal::I64(j as i64)));
                    self.add(ArrayLang::Dim([a, k]))
                }
            });
        }
        let sh = self.add(ArrayLang::Shape(dims.into_boxed_slice()));
        let inner = d + r as u32;
        let members = self.flat_arrays(grp, env, inner)?;
        let ix: Vec<Id> = (0..r)
            .map(|j| self.add(ArrayLang::Param(DeBruijn { index: (r - 1 - j) as u32, ty: ElemType::I64 })))
            .collect();
        let reads: Vec<Id> = members
            .into_iter()
            .map(|a| {
                let mut ch = vec![a];
                ch.extend(&ix);
                self.add(ArrayLang::Index(ch.into_boxed_slice()))
            })
            .collect();
        let comps = body(self, reads, &ix);
        let b = self.add(ArrayLang::Tuple(comps.into_boxed_slice()));
        let f = self.lam(vec![ElemType::I64; r], b);
        Ok((sh, f))
    }

    /// `argmin a` / `argmax a` (`max`): the index of the first smallest (largest) element of
    /// the innermost dimension, NaN smaller (larger) than everything; one pass over the
    /// group `(a, index)`, and `E-SHAPE` for an empty dimension.
    pub(super) fn argminmax(&mut self, max: bool, a: &'p Expr, env: &Env<'p>, d: u32) -> Result<Id> {
        let t = match &a.ty {
            Some(Type::Array { elem, .. }) => *elem,
            other => return Err(internal(format!("`argmin` of {other:?}"))),
        };
        let i64t = ElemType::I64;
        let p = |enc: &mut Self, index: u32, ty: ElemType| enc.add(ArrayLang::Param(DeBruijn { index, ty }));
        let (va, ia, vb, jb) = (p(self, 3, t), p(self, 2, i64t), p(self, 1, t), p(self, 0, i64t));
        let beats = if max { self.add(ArrayLang::Gt([vb, va])) } else { self.add(ArrayLang::Lt([vb, va])) };
        let float = matches!(t, ElemType::F32 | ElemType::F64);
        let (better, same) = if float {
            let nan_a = self.add(ArrayLang::IsNan([va]));
            let nan_b = self.add(ArrayLang::IsNan([vb]));
            let not_nan_a = self.add(ArrayLang::Not([nan_a]));
            let b_only = self.add(ArrayLang::And([nan_b, not_nan_a]));
            let better = self.add(ArrayLang::Or([beats, b_only]));
            let eq = self.add(ArrayLang::Eq([vb, va]));
            let both = self.add(ArrayLang::And([nan_a, nan_b]));
            (better, self.add(ArrayLang::Or([eq, both])))
        } else {
            (beats, self.add(ArrayLang::Eq([vb, va])))
        };
        let earlier = self.add(ArrayLang::Lt([jb, ia]));
        let tie = self.add(ArrayLang::And([same, earlier]));
        let take = self.add(ArrayLang::Or([better, tie]));
        let v = self.add(ArrayLang::If([take, vb, va]));
        let i = self.add(ArrayLang::If([take, jb, ia]));
        let body = self.add(ArrayLang::Tuple(vec![v, i].into_boxed_slice()));
        let op = self.lam(vec![t, i64t, t, i64t], body);
        let worst = worst(t, max).ok_or_else(|| internal(format!("`argmin` of {t}")))?;
        let wv = self.add(ArrayLang::Lit(worst));
        let wi = self.add(ArrayLang::Lit(Literal::I64(i64::MAX)));
        let ne = self.add(ArrayLang::Tuple(vec![wv, wi].into_boxed_slice()));
        let (sh, f) = self.index_function(a, env, d, |_, mut reads, ix| {
            reads.push(ix[ix.len() - 1]);
            reads
        })?;
        let check = self.add(ArrayLang::Lit(Literal::I64(if max { 2 } else { 1 })));
        let g = self.add(ArrayLang::GReduce([op, ne, sh, f, check]));
        Ok(self.projections(g, 2)[1])
    }
}

/// The value every element beats or ties under `argmin` (`max`: `argmax`).
fn worst(t: ElemType, max: bool) -> Option<Literal> {
    use eqfuse_ir::value::Scalar;
    let s = match (t, max) {
        (ElemType::F32, false) => Scalar::F32(f32::INFINITY),
        (ElemType::F32, true) => Scalar::F32(f32::NEG_INFINITY),
        (ElemType::F64, false) => Scalar::F64(f64::INFINITY),
        (ElemType::F64, true) => Scalar::F64(f64::NEG_INFINITY),
        (t, _) if t.is_int() => {
            let (lo, hi) = t.int_range()?;
            Scalar::from_i128_wrapping(t, if max { lo } else { hi })
        }
        (ElemType::Bool, max) => Scalar::Bool(!max),
        _ => return None,
    };
    Some(Literal::from_scalar(s))
}
