//! Checking applications of the builtins of docs/language-reference.md.

use super::arity::{arity, arity_text};
use super::expr::{Checker, Cx, FnPos, TNode};
use super::scalar_fns::is_scalar_fn;
use super::text::{err, internal, show};
use super::unify::{IT, V};
use crate::ast::{Expr, ExprKind, Lit, ARRAY_BUILTINS};
use crate::error::{Error, Result};
use crate::types::{Dim, ElemType};

pub(crate) fn ordinal(i: usize) -> &'static str {
    ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]
        .get(i)
        .copied()
        .unwrap_or("next")
}

/// One builtin application being checked: its argument nodes are filled in as they are
/// checked, in whatever order gives the best messages.
pub(crate) struct Call<'e> {
    pub e: &'e Expr,
    pub name: &'e str,
    pub args: &'e [Expr],
    kids: Vec<Option<TNode>>,
    pub cx: Cx,
}

impl<'e> Call<'e> {
    pub fn arg(&self, i: usize) -> Result<&'e Expr> {
        self.args.get(i).ok_or_else(|| internal("builtin argument out of range"))
    }

    pub fn put(&mut self, i: usize, n: TNode) {
        if let Some(slot) = self.kids.get_mut(i) {
            *slot = Some(n);
        }
    }

    pub fn who(&self) -> String {
        format!("`{}`", self.name)
    }
}

fn product(shape: &[Dim]) -> Option<i64> {
    shape.iter().try_fold(1i64, |acc, d| match d {
        Dim::Known(k) => acc.checked_mul(*k),
        _ => None,
    })
}

/// How informative a dimension is, for choosing among dimensions that must agree.
fn dim_rank(d: &Dim) -> u8 {
    match d {
        Dim::Known(_) => 3,
        Dim::Size(_) | Dim::Affine { .. } => 2,
        Dim::Expr(_) => 1,
        Dim::Dynamic => 0,
    }
}

pub(crate) fn shape_text(s: &[Dim]) -> String {
    let d: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

impl Checker {
    pub(crate) fn arg_value(&mut self, c: &mut Call<'_>, i: usize) -> Result<IT> {
        let a = c.arg(i)?;
        let n = self.check_expr(a, c.cx)?;
        let it = n.it.clone();
        c.put(i, n);
        Ok(it)
    }

    pub(crate) fn arg_scalar(&mut self, c: &mut Call<'_>, i: usize) -> Result<V> {
        let it = self.arg_value(c, i)?;
        let what = format!("the {} argument of `{}`", ordinal(i), c.name);
        self.scalar_of(&it, c.arg(i)?, &what)
    }

    pub(crate) fn arg_i64(&mut self, c: &mut Call<'_>, i: usize) -> Result<V> {
        let v = self.arg_scalar(c, i)?;
        let (name, a) = (c.name, c.arg(i)?);
        self.expect_at(v, ElemType::I64, a, |d| {
            format!("the {} argument of `{name}` must be i64, found {d}", ordinal(i))
        })?;
        Ok(v)
    }

    pub(crate) fn arg_array(&mut self, c: &mut Call<'_>, i: usize) -> Result<(V, Vec<Dim>)> {
        match self.arg_value(c, i)? {
            IT::Array { elem, shape } => Ok((elem, shape)),
            other => {
                let s = self.vars.show(&other);
                Err(err(
                    c.e,
                    format!("the {} argument of `{}` must be an array, found {s}", ordinal(i), c.name),
                ))
            }
        }
    }

    pub(crate) fn arg_rank1(&mut self, c: &mut Call<'_>, i: usize) -> Result<(V, Dim)> {
        let (t, s) = self.arg_array(c, i)?;
        match s.as_slice() {
            [d] => Ok((t, d.clone())),
            _ => {
                let shown = self.vars.show(&IT::Array { elem: t, shape: s.clone() });
                Err(err(
                    c.e,
                    format!(
                        "the {} argument of `{}` must be an array of rank 1, found {shown}",
                        ordinal(i),
                        c.name
                    ),
                ))
            }
        }
    }

    pub(crate) fn arg_shape(&mut self, c: &mut Call<'_>, i: usize) -> Result<Vec<Dim>> {
        let a = c.arg(i)?;
        let ExprKind::Shape(ds) = &a.kind else {
            return Err(err(
                c.e,
                format!(
                    "the {} argument of `{}` must be a shape `[d1, ..., dr]`, found `{}`",
                    ordinal(i),
                    c.name,
                    show(a)
                ),
            ));
        };
        if ds.is_empty() {
            return Err(err(a, "a shape needs at least one dimension"));
        }
        let mut kids = Vec::with_capacity(ds.len());
        let mut dims = Vec::with_capacity(ds.len());
        for d in ds {
            let n = self.check_expr(d, c.cx)?;
            let v = self.scalar_of(&n.it, d, "a dimension")?;
            self.expect_at(v, ElemType::I64, d, |t| format!("a dimension must be i64, found {t}"))?;
            dims.push(self.dim_of(d));
            kids.push(n);
        }
        c.put(i, TNode { it: IT::Shape(ds.len()), kids });
        Ok(dims)
    }

    pub(crate) fn arg_fn(&mut self, c: &mut Call<'_>, i: usize, want: &[IT], pos: FnPos) -> Result<TNode> {
        let a = c.arg(i)?;
        let who = c.who();
        let n = self.check_fn(a, want, pos, c.e, &who)?;
        Ok(n)
    }

    /// A function argument that must return a scalar; returns the result's variable.
    pub(crate) fn arg_scalar_fn(&mut self, c: &mut Call<'_>, i: usize, want: &[V], pos: FnPos) -> Result<V> {
        let want: Vec<IT> = want.iter().map(|v| IT::Scalar(*v)).collect();
        let n = self.arg_fn(c, i, &want, pos)?;
        let who = c.who();
        let r = self.scalar_ret(&n, c.e, &who)?;
        c.put(i, n);
        Ok(r)
    }

    /// The `op` of reduce/scan/permute on elements `t`: `t t -> t`.
    fn arg_op(&mut self, c: &mut Call<'_>, i: usize, t: V) -> Result<()> {
        let r = self.arg_scalar_fn(c, i, &[t, t], FnPos::Op)?;
        let name = c.name;
        self.unify_at(r, t, c.e, |a, b| {
            format!("the op of `{name}` must return the element type {b}, found {a}")
        })
    }

    /// An index function taking `from` indices and addressing an array of rank `to`.
    fn arg_index_fn(&mut self, c: &mut Call<'_>, i: usize, from: usize, to: usize) -> Result<()> {
        let want: Vec<IT> = (0..from).map(|_| IT::Scalar(self.vars.known(ElemType::I64))).collect();
        let n = self.arg_fn(c, i, &want, FnPos::Arg)?;
        let who = c.who();
        self.index_ret(&n, to, c.e, &who)?;
        c.put(i, n);
        Ok(())
    }

    /// Checks `name args...` where `name` is an unshadowed builtin; `head` is the name's node.
    pub(crate) fn check_builtin(
        &mut self,
        e: &Expr,
        _head: &Expr,
        name: &str,
        args: &[Expr],
        cx: Cx,
    ) -> Result<TNode> {
        let n = args.len();
        if cx.in_lambda && ARRAY_BUILTINS.contains(&name) {
            return Err(err(
                e,
                format!(
                    "array operations such as `{name}` are not allowed inside a lambda (lambdas are scalar \
                     functions; compute the array outside and index it)"
                ),
            ));
        }
        match arity(name) {
            Some(k) if k != n => {
                let error = err(e, format!("`{name}` takes {}, given {n}", arity_text(name)));
                return Err(self.one_argument_hint(name, args, cx, error));
            }
            None if n < 2 => {
                return Err(err(e, format!("`{name}` takes {}, given {n}", arity_text(name))));
            }
            _ => {}
        }
        let mut c = Call { e, name, args, kids: (0..n).map(|_| None).collect(), cx };
        let result = match self.builtin_result(&mut c) {
            Ok(r) => r,
            Err(error) => return Err(self.count_true_hint(name, args, cx, error)),
        };
        let kids: Vec<TNode> = c
            .kids
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| internal("unchecked builtin argument"))?;
        let params: Vec<IT> = kids
            .iter()
            .filter_map(|k| match &k.it {
                IT::Scalar(v) | IT::Array { elem: v, .. } => Some(IT::Scalar(*v)),
                _ => None,
            })
            .collect();
        let head_node = TNode::leaf(IT::Func { params, ret: Box::new(result.clone()) });
        let mut all = Vec::with_capacity(n + 1);
        all.push(head_node);
        all.extend(kids);
        Ok(TNode { it: result, kids: all })
    }

    fn builtin_result(&mut self, c: &mut Call<'_>) -> Result<IT> {
        match c.name {
            "map" => self.b_map(c),
            "reduce" | "scan" | "scan_exclusive" | "reduce_segments" | "scan_segments" => self.b_reduce(c),
            "sum" | "prod" | "mean" | "all" | "any" | "argmin" | "argmax" | "dot" => self.b_summary(c),
            "slice" if matches!(c.args.get(1).map(|a| &a.kind), Some(ExprKind::Shape(_))) => {
                self.b_slice_nd(c)
            }
            "backpermute" | "permute" => self.b_permute(c),
            n if ARRAY_BUILTINS.contains(&n) => self.b_array(c),
            _ => self.b_scalar(c),
        }
    }

    #[inline(never)]
    fn b_scalar(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let (e, name) = (c.e, c.name);
        Ok(match name {
            // ---- scalar operations
            n if is_scalar_fn(n) => {
                let mut args = Vec::with_capacity(c.args.len());
                for i in 0..c.args.len() {
                    let it = self.arg_value(c, i)?;
                    let what = format!("the {} argument of `{name}`", ordinal(i));
                    match self.scalar_of(&it, c.arg(i)?, &what) {
                        Ok(v) => args.push(IT::Scalar(v)),
                        Err(error) => return Err(self.scalar_fn_hint(name, c.args, c.cx, error)),
                    }
                }
                let who = c.who();
                self.builtin_as_fn(name, &args, e, &who)?
            }
            "iterate" => {
                self.arg_i64(c, 0)?;
                let init = self.arg_value(c, 2)?;
                let t = self.fn_arg(&init, c.arg(2)?, "the initial value of `iterate`")?;
                let f = self.arg_fn(c, 1, std::slice::from_ref(&t), FnPos::Arg)?;
                let r = super::expr::fn_ret(&f.it);
                c.put(1, f);
                self.unify_part(&t, &r, e, |a, b| {
                    format!("the function of `iterate` must return its argument's type {a}, found {b}")
                })?;
                t
            }
            "length" => {
                self.arg_array(c, 0)?;
                IT::Scalar(self.vars.known(ElemType::I64))
            }
            "size" => {
                let (_, shape) = self.arg_array(c, 0)?;
                self.arg_i64(c, 1)?;
                if let ExprKind::Lit(Lit::Int(k)) = c.arg(1)?.kind {
                    if k < 0 || k as u64 >= shape.len() as u64 {
                        return Err(err(
                            e,
                            format!(
                                "`size` dimension {k} is out of range for an array of rank {} (dimensions 0 to {})",
                                shape.len(),
                                shape.len().saturating_sub(1)
                            ),
                        ));
                    }
                }
                IT::Scalar(self.vars.known(ElemType::I64))
            }
            other => return Err(internal(&format!("unknown builtin `{other}`"))),
        })
    }

    #[inline(never)]
    fn b_map(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let (e, name) = (c.e, c.name);
        Ok(match name {
            "map" => {
                let mut arrays: Vec<(V, Vec<Dim>)> = Vec::with_capacity(c.args.len());
                for i in 1..c.args.len() {
                    arrays.push(self.arg_array(c, i)?);
                }
                let first = arrays.first().map(|a| a.1.clone()).ok_or_else(|| internal("map arrays"))?;
                let mut shape = first.clone();
                for (i, (ti, si)) in arrays.iter().enumerate() {
                    for (j, (tj, sj)) in arrays.iter().enumerate().take(i) {
                        let certain_mismatch = si.len() != sj.len()
                            || si.iter().zip(sj).any(|(a, b)| super::dims::same(a, b) == Some(false));
                        if certain_mismatch {
                            let a = self.vars.show(&IT::Array { elem: *tj, shape: sj.clone() });
                            let b = self.vars.show(&IT::Array { elem: *ti, shape: si.clone() });
                            let (ej, ei) = (c.arg(j + 1)?, c.arg(i + 1)?);
                            let error = Error::shape(
                                e.span,
                                format!(
                                    "the arrays of `map` must have the same shape: `{}` is {a} but `{}` is {b}, in \
                                     `{}`",
                                    show(ej),
                                    show(ei),
                                    show(e)
                                ),
                            );
                            if si.len() == sj.len() {
                                return Err(error);
                            }
                            let f = c.arg(0)?;
                            let help = if sj.len() > si.len() {
                                super::hints::broadcast(f, (ej, sj), (ei, si), true)
                            } else {
                                super::hints::broadcast(f, (ei, si), (ej, sj), false)
                            };
                            return Err(error.with_note(help));
                        }
                    }
                    for (d, x) in shape.iter_mut().zip(si) {
                        if dim_rank(x) > dim_rank(d) {
                            *d = x.clone();
                        }
                    }
                }
                let elems: Vec<IT> = arrays.iter().map(|a| IT::Scalar(a.0)).collect();
                let f = match self.arg_fn(c, 0, &elems, FnPos::Arg) {
                    Ok(f) => f,
                    Err(error) => return Err(self.broadcast_in_lambda_hint(c.args, c.cx, &shape, error)),
                };
                let r = self.elementwise_result(&f, shape, c)?;
                c.put(0, f);
                r
            }
            other => return Err(internal(&format!("unknown builtin `{other}`"))),
        })
    }

    #[inline(never)]
    fn b_permute(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let (e, name) = (c.e, c.name);
        Ok(match name {
            "backpermute" => {
                let dims = self.arg_shape(c, 0)?;
                let (t, sa) = self.arg_array(c, 2)?;
                self.arg_index_fn(c, 1, dims.len(), sa.len())?;
                IT::Array { elem: t, shape: dims }
            }
            "permute" => {
                let (td, sd) = self.arg_array(c, 1)?;
                let (ta, sa) = self.arg_array(c, 3)?;
                self.unify_at(td, ta, e, |a, b| {
                    format!("the source of `permute` must have the destination's element type {a}, found {b}")
                })?;
                self.arg_op(c, 0, td)?;
                self.arg_index_fn(c, 2, sa.len(), sd.len())?;
                IT::Array { elem: td, shape: sd }
            }
            other => return Err(internal(&format!("unknown builtin `{other}`"))),
        })
    }

    #[inline(never)]
    fn b_array(&mut self, c: &mut Call<'_>) -> Result<IT> {
        let (e, name) = (c.e, c.name);
        Ok(match name {
            "generate" => {
                let dims = self.arg_shape(c, 0)?;
                let want: Vec<IT> = dims.iter().map(|_| IT::Scalar(self.vars.known(ElemType::I64))).collect();
                let f = self.arg_fn(c, 1, &want, FnPos::Arg)?;
                let r = self.elementwise_result(&f, dims, c)?;
                c.put(1, f);
                r
            }
            "iota" => {
                self.arg_i64(c, 0)?;
                let d = self.dim_of(c.arg(0)?);
                IT::Array { elem: self.vars.known(ElemType::I64), shape: vec![d] }
            }
            "fill" => {
                let dims = self.arg_shape(c, 0)?;
                let x = self.arg_scalar(c, 1)?;
                IT::Array { elem: x, shape: dims }
            }
            "filter" => {
                let (t, _) = self.arg_rank1(c, 1)?;
                let r = self.arg_scalar_fn(c, 0, &[t], FnPos::Arg)?;
                self.expect_at(r, ElemType::Bool, e, |d| {
                    format!("the predicate of `filter` must return bool, found {d}")
                })?;
                IT::Array { elem: t, shape: vec![Dim::Dynamic] }
            }
            "gather" => {
                let (t, _) = self.arg_rank1(c, 0)?;
                let (ti, si) = self.arg_array(c, 1)?;
                self.expect_at(ti, ElemType::I64, e, |d| {
                    format!("the indices of `gather` must be i64, found {d}")
                })?;
                IT::Array { elem: t, shape: si }
            }
            "transpose" => {
                let (t, s) = self.arg_array(c, 0)?;
                match s.as_slice() {
                    [a, b] => IT::Array { elem: t, shape: vec![b.clone(), a.clone()] },
                    _ => {
                        let shown = self.vars.show(&IT::Array { elem: t, shape: s.clone() });
                        return Err(err(e, format!("`transpose` needs an array of rank 2, found {shown}")));
                    }
                }
            }
            "reverse" => {
                let (t, s) = self.arg_array(c, 0)?;
                IT::Array { elem: t, shape: s }
            }
            "reshape" => {
                let dims = self.arg_shape(c, 0)?;
                let (t, s) = self.arg_array(c, 1)?;
                if let (Some(p), Some(q)) = (product(&dims), product(&s)) {
                    if p != q {
                        return Err(Error::shape(
                            e.span,
                            format!(
                                "`reshape` to {} ({p} elements) from an array of shape {} ({q} elements) in `{}`",
                                shape_text(&dims),
                                shape_text(&s),
                                show(e)
                            ),
                        ));
                    }
                }
                IT::Array { elem: t, shape: dims }
            }
            "slice" => {
                let (t, _) = self.arg_rank1(c, 0)?;
                self.arg_i64(c, 1)?;
                self.arg_i64(c, 2)?;
                let d = self.dim_of(c.arg(2)?);
                IT::Array { elem: t, shape: vec![d] }
            }
            "concat" => {
                let (ta, da) = self.arg_rank1(c, 0)?;
                let (tb, db) = self.arg_rank1(c, 1)?;
                self.unify_at(ta, tb, e, |a, b| {
                    format!("`concat` needs arrays of one element type, found {a} and {b}")
                })?;
                let d = super::dims::combine(&da, &db, 1);
                IT::Array { elem: ta, shape: vec![d] }
            }
            other => return Err(internal(&format!("unknown builtin `{other}`"))),
        })
    }
}
