//! Checking expressions: names and scopes, operators, `if`, indexing, lambdas, application.

use super::arity::{arity, arity_text};
use super::hints::Arg;
use super::text::{err, internal, plural, show};
use super::unify::{Clash, Class, Vars, IT, V};
use crate::ast::{is_builtin, BinOp, Expr, ExprKind, Lit, UnOp, ARRAY_BUILTINS, SCALAR_BUILTINS};
use crate::error::{Error, Result};
use crate::types::{Dim, ElemType};
use indexmap::IndexMap;
use std::collections::HashMap;

/// The inference type of one node and of its children, in [`ExprKind::children`] order.
#[derive(Debug)]
pub(crate) struct TNode {
    /// The node's type.
    pub it: IT,
    /// The children's nodes.
    pub kids: Vec<TNode>,
}

impl TNode {
    pub(crate) fn leaf(it: IT) -> TNode {
        TNode { it, kids: Vec::new() }
    }
}

/// Where an expression stands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cx {
    /// Inside a lambda body: array operations and loops are refused.
    pub in_lambda: bool,
}

impl Cx {
    /// Top level of an item.
    pub const TOP: Cx = Cx { in_lambda: false };
}

/// How a function expression is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FnPos {
    /// The `op` of reduce / scan / scan_exclusive / permute: lambdas, named functions,
    /// sections, `min`, `max`.
    Op,
    /// Another function argument of a builtin: lambdas and named functions.
    Arg,
    /// The head of an application: lambdas, named functions, sections.
    Applied,
}

/// A top-level name.
#[derive(Debug)]
pub(crate) struct Global {
    /// Its type.
    pub it: IT,
    /// `input`, `let` or `output`.
    pub kind: &'static str,
    /// Line of its definition.
    pub line: u32,
}

/// What a name refers to at some point.
pub(crate) enum Found {
    /// A local or top-level binding.
    Value(IT),
    /// A size name (an `i64`).
    Size,
    /// An unshadowed builtin.
    Builtin,
    /// Nothing.
    Unbound,
}

/// The checker's state: type variables and scopes.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    /// Element-type variables.
    pub vars: Vars,
    /// Top-level names defined so far.
    pub globals: IndexMap<String, Global>,
    /// Size names, with the line of the first input that declares each.
    pub sizes: IndexMap<String, u32>,
    /// Every top-level name with the line of its first definition (for "used before").
    pub item_lines: HashMap<String, u32>,
    /// Lambda parameters and local `let`s in scope, innermost last.
    pub(crate) locals: Vec<(String, IT)>,
    /// How many of `locals` are named as a builtin is: where none is, a builtin's name
    /// needs no search of them (a program of `n` nested `let`s applies `map` `n` times).
    builtin_locals: usize,
}

/// `E-TYPE` for a failed unification.
pub(crate) fn clash_err(c: Clash, e: &Expr, m: String) -> Error {
    if c.float_lit_as_int {
        err(e, format!("float literal where an integer is expected: {m}"))
    } else {
        err(e, m)
    }
}

/// The result type of a function type.
pub(crate) fn fn_ret(it: &IT) -> IT {
    match it {
        IT::Func { ret, .. } => (**ret).clone(),
        other => other.clone(),
    }
}

impl Checker {
    /// Unifies `a` and `b`; on failure an error at `e` whose text `msg` makes from both
    /// types' descriptions.
    pub fn unify_at(&mut self, a: V, b: V, e: &Expr, msg: impl FnOnce(&str, &str) -> String) -> Result<()> {
        match self.vars.unify(a, b) {
            Ok(()) => Ok(()),
            Err(c) => {
                let (da, db) = (self.vars.describe(a), self.vars.describe(b));
                Err(clash_err(c, e, msg(&da, &db)))
            }
        }
    }

    /// Requires `v` to be of `class`.
    pub fn constrain_at(
        &mut self,
        v: V,
        class: Class,
        e: &Expr,
        msg: impl FnOnce(&str) -> String,
    ) -> Result<()> {
        match self.vars.constrain(v, class) {
            Ok(()) => Ok(()),
            Err(c) => {
                let d = self.vars.describe(v);
                Err(clash_err(c, e, msg(&d)))
            }
        }
    }

    /// Requires `v` to be `t`.
    pub fn expect_at(&mut self, v: V, t: ElemType, e: &Expr, msg: impl FnOnce(&str) -> String) -> Result<()> {
        let k = self.vars.known(t);
        match self.vars.unify(v, k) {
            Ok(()) => Ok(()),
            Err(c) => {
                let d = self.vars.describe(v);
                Err(clash_err(c, e, msg(&d)))
            }
        }
    }

    /// A scalar's variable, or an error saying `what` must be a scalar.
    pub fn scalar_of(&mut self, it: &IT, e: &Expr, what: &str) -> Result<V> {
        match it {
            IT::Scalar(v) => Ok(*v),
            other => {
                let s = self.vars.show(other);
                Err(err(e, format!("{what} must be a scalar, found {s}")))
            }
        }
    }

    fn is_local(&self, name: &str) -> bool {
        self.local(name).is_some()
    }

    /// The innermost local named `name`.
    fn local(&self, name: &str) -> Option<&IT> {
        if self.builtin_locals == 0 && is_builtin(name) {
            return None;
        }
        self.locals.iter().rev().find(|(n, _)| n == name).map(|(_, it)| it)
    }

    /// Brings a local into scope.
    pub(crate) fn push_local(&mut self, name: &str, it: IT) {
        self.builtin_locals += usize::from(is_builtin(name));
        self.locals.push((name.to_string(), it));
    }

    /// Drops the locals brought into scope after the first `base`.
    pub(crate) fn drop_locals(&mut self, base: usize) {
        for (n, _) in self.locals.drain(base.min(self.locals.len())..) {
            self.builtin_locals -= usize::from(is_builtin(&n));
        }
    }

    /// What `name` refers to here.
    pub fn lookup(&self, name: &str) -> Found {
        if let Some(it) = self.local(name) {
            return Found::Value(it.clone());
        }
        if let Some(g) = self.globals.get(name) {
            return Found::Value(g.it.clone());
        }
        if self.sizes.contains_key(name) {
            return Found::Size;
        }
        if is_builtin(name) {
            return Found::Builtin;
        }
        Found::Unbound
    }

    /// The error for an unbound `name` at `e`, applied to `args` (of kinds `kinds`, for the
    /// help on NumPy names: `where c a b`, and the nearest name: `mapp`).
    pub fn unbound(&self, e: &Expr, name: &str, args: &[&Expr], kinds: &[Arg]) -> Error {
        match self.item_lines.get(name) {
            Some(line) => Error::ty(e.span, format!("`{name}` is used before its definition on line {line}")),
            None => {
                let error = Error::ty(e.span, format!("unbound name `{name}`"));
                let scope = self.locals.iter().rev().map(|(n, _)| n.as_str());
                let names = scope
                    .chain(self.globals.keys().map(String::as_str))
                    .chain(self.sizes.keys().map(String::as_str))
                    .chain(ARRAY_BUILTINS.iter().copied())
                    .chain(SCALAR_BUILTINS.iter().copied());
                match super::hints::unbound(name, args, kinds, names) {
                    Some(help) => error.with_note(help),
                    None => error,
                }
            }
        }
    }

    /// What a hint needs to know of each of `args`, checked one by one (`Unknown` where one
    /// does not check).
    pub(crate) fn arg_kinds(&mut self, args: &[&Expr], cx: Cx) -> Vec<Arg> {
        args.iter()
            .map(|a| match self.check_expr(a, cx) {
                Ok(n) => self.arg_kind(&n.it),
                Err(_) => Arg::Unknown,
            })
            .collect()
    }

    /// What a hint needs to know of a value of type `it`.
    pub(crate) fn arg_kind(&mut self, it: &IT) -> Arg {
        let mut float = |v: V| {
            matches!(self.vars.describe(v).as_str(), "f32" | "f64" | "a float type" | "a float literal")
        };
        match it {
            IT::Scalar(v) => Arg::Scalar { float: float(*v) },
            IT::Array { elem, shape } => Arg::Array { rank: shape.len(), float: float(*elem) },
            _ => Arg::Unknown,
        }
    }

    /// The dimension that a shape element, `iota`'s or `slice`'s length `e` denotes.
    pub fn dim_of(&self, e: &Expr) -> Dim {
        match &e.kind {
            ExprKind::Lit(Lit::Int(v)) if *v >= 0 && *v <= i128::from(i64::MAX) => Dim::Known(*v as i64),
            ExprKind::Lit(_) => Dim::Dynamic,
            ExprKind::Var(name)
                if !self.is_local(name)
                    && !self.globals.contains_key(name)
                    && self.sizes.contains_key(name) =>
            {
                Dim::Size(name.clone())
            }
            _ if self.mentions_local(e) => Dim::Dynamic,
            _ => {
                let text = crate::print::print_expr(e);
                if text.is_empty() {
                    Dim::Dynamic
                } else {
                    Dim::Expr(text)
                }
            }
        }
    }

    fn mentions_local(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Var(n) => self.is_local(n),
            k => k.children().any(|c| self.mentions_local(c)),
        }
    }

    /// Checks a value expression: a scalar, an array, a tuple of scalars or a group.
    ///
    /// Every form has its own function so that this one, which every level of recursion
    /// passes through, keeps a small stack frame.
    pub fn check_expr(&mut self, e: &Expr, cx: Cx) -> Result<TNode> {
        let node = match &e.kind {
            ExprKind::Lit(Lit::Int(_)) => TNode::leaf(IT::Scalar(self.vars.int_lit())),
            ExprKind::Lit(Lit::Hex(_)) => TNode::leaf(IT::Scalar(self.vars.hex_lit())),
            ExprKind::Lit(Lit::Float(_)) => TNode::leaf(IT::Scalar(self.vars.float_lit())),
            ExprKind::Lit(Lit::Bool(_)) => TNode::leaf(IT::Scalar(self.vars.known(ElemType::Bool))),
            ExprKind::Var(name) => TNode::leaf(self.check_var(e, name)?),
            ExprKind::Let { name, value, body } => self.check_let(name, value, body, cx)?,
            ExprKind::LetTuple { names, value, body } => self.check_let_tuple(e, names, value, body, cx)?,
            ExprKind::Loop { pat, tuple, init, form, body } => {
                self.check_loop(e, LoopParts { pat, tuple: *tuple, init, form, body }, cx)?
            }
            ExprKind::If { cond, then_, else_ } => self.check_if(e, cond, then_, else_, cx)?,
            ExprKind::Binary { op, lhs, rhs } => self.check_binary(e, *op, lhs, rhs, cx)?,
            ExprKind::Unary { op, operand } => self.check_unary(e, *op, operand, cx)?,
            ExprKind::Apply { func, args } => self.check_apply(e, func, args, cx)?,
            ExprKind::Index { array, indices } => self.check_index(e, array, indices, cx)?,
            ExprKind::Tuple(es) => self.check_tuple(e, es, cx)?,
            ExprKind::Lambda { .. } | ExprKind::Section(_) | ExprKind::Shape(_) => return Err(misplaced(e)),
        };
        Ok(node)
    }

    #[inline(never)]
    fn check_let(&mut self, name: &str, value: &Expr, body: &Expr, cx: Cx) -> Result<TNode> {
        let v = self.check_binding(value, cx)?;
        let base = self.locals.len();
        self.push_local(name, v.it.clone());
        let b = self.check_expr(body, cx);
        self.drop_locals(base);
        let b = b?;
        Ok(TNode { it: b.it.clone(), kids: vec![v, b] })
    }

    #[inline(never)]
    fn check_if(&mut self, e: &Expr, cond: &Expr, then_: &Expr, else_: &Expr, cx: Cx) -> Result<TNode> {
        let c = self.check_expr(cond, cx)?;
        let cv = self.scalar_of(&c.it, cond, "the condition of `if`")?;
        self.expect_at(cv, ElemType::Bool, e, |d| format!("the condition of `if` must be bool, found {d}"))?;
        let t = self.check_expr(then_, cx)?;
        let f = self.check_expr(else_, cx)?;
        let it = self.join_branches(e, &t.it, &f.it)?;
        Ok(TNode { it, kids: vec![c, t, f] })
    }

    #[inline(never)]
    fn check_binary(&mut self, e: &Expr, op: BinOp, lhs: &Expr, rhs: &Expr, cx: Cx) -> Result<TNode> {
        if op == BinOp::Sub {
            self.negative_argument(lhs, rhs)?;
        }
        let l = self.check_expr(lhs, cx)?;
        let r = self.check_expr(rhs, cx)?;
        let sym = op.symbol();
        let what = format!("the operands of `{sym}`");
        let (la, ra) = (matches!(l.it, IT::Array { .. }), matches!(r.it, IT::Array { .. }));
        let scalars =
            self.scalar_of(&l.it, e, &what).and_then(|lv| Ok((lv, self.scalar_of(&r.it, e, &what)?)));
        let (lv, rv) = match scalars {
            Ok(vs) => vs,
            Err(error) if (la || ra) && cx.in_lambda => return Err(error.with_note(super::hints::IN_LAMBDA)),
            Err(error) if la || ra => {
                let (kl, kr) = (self.arg_kind(&l.it), self.arg_kind(&r.it));
                let big = match (&l.it, &r.it) {
                    (IT::Array { shape: a, .. }, IT::Array { shape: b, .. }) if b.len() > a.len() => {
                        b.clone()
                    }
                    (IT::Array { shape, .. }, _) | (_, IT::Array { shape, .. }) => shape.clone(),
                    _ => Vec::new(),
                };
                return Err(match super::hints::array_operands(sym, (lhs, kl), (rhs, kr), &big) {
                    Some(help) => error.with_note(help),
                    None => error,
                });
            }
            Err(error) => return Err(error),
        };
        let (dl, dr) = (self.vars.describe(lv), self.vars.describe(rv));
        let it = self.binary_type(op, lv, rv, e).map_err(|error| {
            match super::hints::int_and_float(sym, lhs, &dl, rhs, &dr) {
                Some(help) => error.with_note(help),
                None => error,
            }
        })?;
        Ok(TNode { it, kids: vec![l, r] })
    }

    /// `reduce max -inf xs` parses as `(reduce max) - (inf xs)`: a builtin short of arguments
    /// on the left of `-` is refused with the parenthesised form.
    #[inline(never)]
    fn negative_argument(&mut self, lhs: &Expr, rhs: &Expr) -> Result<()> {
        let ExprKind::Apply { func, args } = &lhs.kind else { return Ok(()) };
        let ExprKind::Var(name) = &func.kind else { return Ok(()) };
        if !matches!(self.lookup(name), Found::Builtin) {
            return Ok(());
        }
        let short = match arity(name) {
            Some(k) => args.len() < k,
            None => args.len() < 2,
        };
        if !short {
            return Ok(());
        }
        let n = args.len();
        Err(err(lhs, format!("`{name}` takes {}, given {n}", arity_text(name)))
            .with_note(super::hints::negative_argument(lhs, rhs)))
    }

    #[inline(never)]
    fn check_unary(&mut self, e: &Expr, op: UnOp, operand: &Expr, cx: Cx) -> Result<TNode> {
        let o = self.check_expr(operand, cx)?;
        let what = format!("the operand of unary `{}`", op.symbol());
        let v = match self.scalar_of(&o.it, e, &what) {
            Ok(v) => v,
            Err(error) if matches!(o.it, IT::Array { .. }) && cx.in_lambda => {
                return Err(error.with_note(super::hints::IN_LAMBDA))
            }
            Err(error) if matches!(o.it, IT::Array { .. }) => {
                return Err(error.with_note(super::hints::array_operand(op.symbol(), operand)))
            }
            Err(error) => return Err(error),
        };
        match op {
            UnOp::Neg => self.constrain_at(v, Class::Numeric, e, |d| {
                format!("unary `-` needs a numeric operand, found {d}")
            })?,
            UnOp::Not => self.constrain_at(v, Class::IntOrBool, e, |d| {
                format!("`!` needs a bool or integer operand, found {d}")
            })?,
        }
        Ok(TNode { it: IT::Scalar(v), kids: vec![o] })
    }

    #[inline(never)]
    fn check_index(&mut self, e: &Expr, array: &Expr, indices: &[Expr], cx: Cx) -> Result<TNode> {
        let a = self.check_expr(array, cx)?;
        let (elem, rank) = match &a.it {
            IT::Array { elem, shape } => (*elem, shape.len()),
            other => {
                let s = self.vars.show(other);
                return Err(err(e, format!("indexing needs an array, found {s}")));
            }
        };
        if indices.len() != rank {
            let s = self.vars.show(&a.it);
            return Err(err(
                e,
                format!(
                    "an array of type {s} (rank {rank}) needs {rank} {}, found {}",
                    plural(rank, "index", "indices"),
                    indices.len()
                ),
            ));
        }
        let mut kids = vec![a];
        for ix in indices {
            let n = self.check_expr(ix, cx)?;
            let v = self.scalar_of(&n.it, ix, "an index")?;
            self.expect_at(v, ElemType::I64, ix, |d| format!("an index must be i64, found {d}"))?;
            kids.push(n);
        }
        Ok(TNode { it: IT::Scalar(elem), kids })
    }

    /// Checks the value of a `let` (top-level or local): a lambda (a named function) or a value.
    pub fn check_binding(&mut self, value: &Expr, cx: Cx) -> Result<TNode> {
        if matches!(value.kind, ExprKind::Lambda { .. }) {
            self.check_lambda(value, None)
        } else {
            self.check_expr(value, cx)
        }
    }

    fn check_var(&mut self, e: &Expr, name: &str) -> Result<IT> {
        match self.lookup(name) {
            Found::Value(IT::Func { .. }) => Err(err(
                e,
                format!(
                    "`{name}` is a function; a function can only be applied or passed to a builtin such as map, \
                     not used as a value"
                ),
            )),
            Found::Value(it) => Ok(it),
            Found::Size => Ok(IT::Scalar(self.vars.known(ElemType::I64))),
            Found::Builtin if name == "pi" => Ok(IT::Scalar(self.vars.float_lit())),
            Found::Builtin => Err(err(
                e,
                format!("the builtin `{name}` must be applied to {}", arity_text(name)),
            )),
            Found::Unbound => Err(self.unbound(e, name, &[], &[])),
        }
    }

    fn join_branches(&mut self, e: &Expr, a: &IT, b: &IT) -> Result<IT> {
        let msg = |x: &str, y: &str| format!("the branches of `if` have different types, {x} and {y}");
        match (a, b) {
            (IT::Scalar(x), IT::Scalar(y)) => {
                self.unify_at(*x, *y, e, msg)?;
                Ok(IT::Scalar(*x))
            }
            (IT::Array { elem: x, shape: sa }, IT::Array { elem: y, shape: sb }) if sa.len() == sb.len() => {
                self.unify_at(*x, *y, e, msg)?;
                let shape = sa
                    .iter()
                    .zip(sb)
                    .map(
                        |(p, q)| if super::dims::same(p, q) == Some(true) { p.clone() } else { Dim::Dynamic },
                    )
                    .collect();
                Ok(IT::Array { elem: *x, shape })
            }
            (IT::Tuple(xs), IT::Tuple(ys)) if xs.len() == ys.len() => {
                for (x, y) in xs.iter().zip(ys) {
                    self.unify_at(*x, *y, e, msg)?;
                }
                Ok(a.clone())
            }
            (IT::Group(xs), IT::Group(ys)) if xs.len() == ys.len() => {
                let mut parts = Vec::with_capacity(xs.len());
                for (x, y) in xs.iter().zip(ys) {
                    parts.push(self.join_branches(e, x, y)?);
                }
                Ok(IT::Group(parts))
            }
            _ => {
                let (x, y) = (self.vars.show(a), self.vars.show(b));
                Err(err(e, msg(&x, &y)))
            }
        }
    }

    /// The type of `l op r` for scalar operands (also the type of a section).
    pub fn binary_type(&mut self, op: BinOp, l: V, r: V, e: &Expr) -> Result<IT> {
        let sym = op.symbol();
        if op.is_logical() {
            self.expect_at(l, ElemType::Bool, e, |d| format!("`{sym}` needs bool operands, found {d}"))?;
            self.expect_at(r, ElemType::Bool, e, |d| format!("`{sym}` needs bool operands, found {d}"))?;
            return Ok(IT::Scalar(l));
        }
        if op.is_bitwise() {
            for x in [l, r] {
                self.constrain_at(x, Class::Int, e, |d| {
                    format!("`{sym}` needs integer operands, found {d}")
                })?;
            }
        }
        if op.is_arithmetic() {
            self.constrain_at(l, Class::Numeric, e, |d| {
                format!("`{sym}` needs numeric operands, found {d}")
            })?;
            self.constrain_at(r, Class::Numeric, e, |d| {
                format!("`{sym}` needs numeric operands, found {d}")
            })?;
        }
        self.unify_at(l, r, e, |a, b| format!("`{sym}` needs operands of one type, found {a} and {b}"))?;
        if op.is_comparison() {
            Ok(IT::Scalar(self.vars.known(ElemType::Bool)))
        } else {
            Ok(IT::Scalar(l))
        }
    }

    fn check_apply(&mut self, e: &Expr, func: &Expr, args: &[Expr], cx: Cx) -> Result<TNode> {
        if args.is_empty() {
            return Err(err(e, "an application needs at least one argument"));
        }
        if let ExprKind::Var(name) = &func.kind {
            match self.lookup(name) {
                Found::Builtin => return self.check_builtin(e, func, name, args, cx),
                Found::Unbound => {
                    let args: Vec<&Expr> = args.iter().collect();
                    let kinds = self.arg_kinds(&args, cx);
                    return Err(self.unbound(func, name, &args, &kinds));
                }
                Found::Size => return Err(err(e, format!("`{name}` is a size (an i64), not a function"))),
                Found::Value(IT::Func { .. }) => {}
                Found::Value(it) if is_builtin(name) => return Err(self.shadowed(e, name, &it)),
                Found::Value(_) => {}
            }
        }
        let mut kids = Vec::with_capacity(args.len() + 1);
        let mut vs = Vec::with_capacity(args.len());
        for a in args {
            let n = self.check_expr(a, cx)?;
            vs.push(self.fn_arg(&n.it, a, "a function's argument")?);
            kids.push(n);
        }
        let f = self.check_fn(func, &vs, FnPos::Applied, e, "this application")?;
        let ret = fn_ret(&f.it);
        kids.insert(0, f);
        Ok(TNode { it: ret, kids })
    }

    /// Checks a function expression `f` that is given arguments of types `want`; `site` is the
    /// enclosing expression and `who` names the consumer in messages. The node's type is a
    /// `Func` whose parameters are unified with `want`.
    pub fn check_fn(&mut self, f: &Expr, want: &[IT], pos: FnPos, site: &Expr, who: &str) -> Result<TNode> {
        let n = want.len();
        match &f.kind {
            ExprKind::Lambda { params, .. } => {
                if params.len() != n {
                    return Err(err(
                        site,
                        format!(
                            "{who} passes {n} {} to its function, but the lambda takes {}",
                            plural(n, "argument", "arguments"),
                            params.len()
                        ),
                    ));
                }
                self.check_lambda(f, Some(want))
            }
            ExprKind::Var(name) => match self.lookup(name) {
                Found::Value(IT::Func { params, ret }) => {
                    if params.len() != n {
                        return Err(err(
                            site,
                            format!(
                                "{who} passes {n} {} to `{name}`, which takes {}",
                                plural(n, "argument", "arguments"),
                                params.len()
                            ),
                        ));
                    }
                    for (i, (p, w)) in params.iter().zip(want).enumerate() {
                        self.unify_part(p, w, site, |dp, dw| {
                            format!(
                                "argument {} of `{name}` has type {dp}, but {who} gives it {dw} (a named function \
                                 has one type)",
                                i + 1
                            )
                        })?;
                    }
                    Ok(TNode::leaf(IT::Func { params, ret }))
                }
                Found::Builtin => {
                    let ret = self.builtin_as_fn(name, want, site, who)?;
                    Ok(TNode::leaf(IT::Func { params: want.to_vec(), ret: Box::new(ret) }))
                }
                Found::Value(it) if is_builtin(name) => Err(self.shadowed(site, name, &it)),
                Found::Value(it) => {
                    let s = self.vars.show(&it);
                    Err(err(site, format!("`{name}` is not a function (it is {s})")))
                }
                Found::Size => Err(err(site, format!("`{name}` is a size (an i64), not a function"))),
                Found::Unbound => Err(self.unbound(f, name, &[], &[])),
            },
            ExprKind::Section(op) if pos != FnPos::Arg => {
                let [IT::Scalar(a), IT::Scalar(b)] = want else {
                    return Err(err(
                        site,
                        format!(
                            "the operator section `({})` takes 2 scalar arguments, given {n}",
                            op.symbol()
                        ),
                    ));
                };
                let ret = self.binary_type(*op, *a, *b, site)?;
                Ok(TNode::leaf(IT::Func { params: want.to_vec(), ret: Box::new(ret) }))
            }
            _ => Err(err(
                site,
                format!(
                    "{who} needs a function of {n} {} (a lambda or a named function), found `{}`",
                    plural(n, "argument", "arguments"),
                    show(f)
                ),
            )),
        }
    }

    /// Checks a lambda; its parameters take the types `want` or, if `None`, fresh variables
    /// that its uses decide. Its result is a scalar or a tuple.
    pub fn check_lambda(&mut self, f: &Expr, want: Option<&[IT]>) -> Result<TNode> {
        let ExprKind::Lambda { params, body } = &f.kind else {
            return Err(internal("check_lambda on a non-lambda"));
        };
        if params.is_empty() {
            return Err(err(f, "a lambda needs at least one parameter"));
        }
        for (i, p) in params.iter().enumerate() {
            if params[..i].contains(p) {
                return Err(err(f, format!("the parameter `{p}` appears twice")));
            }
        }
        let vs: Vec<IT> = match want {
            Some(w) if w.len() == params.len() => w.to_vec(),
            Some(_) => return Err(internal("lambda arity")),
            None => params.iter().map(|p| self.fresh_param(p, body)).collect(),
        };
        let base = self.locals.len();
        for (p, v) in params.iter().zip(&vs) {
            self.push_local(p, v.clone());
        }
        let b = self.check_expr(body, Cx { in_lambda: true });
        self.drop_locals(base);
        let b = b?;
        let ret = match &b.it {
            IT::Scalar(_) | IT::Tuple(_) => b.it.clone(),
            other => {
                let s = self.vars.show(other);
                return Err(err(
                    f,
                    format!("a lambda must return a scalar or a tuple of scalars, but its body is {s}"),
                ));
            }
        };
        Ok(TNode { it: IT::Func { params: vs, ret: Box::new(ret) }, kids: vec![b] })
    }

    /// The scalar result of a checked function node, or an error: `who`'s function must
    /// return a scalar.
    pub fn scalar_ret(&mut self, f: &TNode, site: &Expr, who: &str) -> Result<V> {
        match fn_ret(&f.it) {
            IT::Scalar(v) => Ok(v),
            other => {
                let s = self.vars.show(&other);
                Err(err(site, format!("the function of {who} must return a scalar, found {s}")))
            }
        }
    }

    /// Requires an index function's result to address an array of `rank`: one `i64` for rank
    /// 1, else a tuple of `rank` `i64`s.
    pub fn index_ret(&mut self, f: &TNode, rank: usize, site: &Expr, who: &str) -> Result<()> {
        let msg = |d: &str| format!("the index function of {who} must return i64 indices, found {d}");
        match (fn_ret(&f.it), rank) {
            (IT::Scalar(v), 1) => self.expect_at(v, ElemType::I64, site, msg),
            (IT::Tuple(vs), r) if vs.len() == r && r > 1 => {
                for v in vs {
                    self.expect_at(v, ElemType::I64, site, msg)?;
                }
                Ok(())
            }
            (other, _) => {
                let s = self.vars.show(&other);
                let want = if rank == 1 {
                    "a single i64 index".to_string()
                } else {
                    format!("a tuple of {rank} i64 indices")
                };
                Err(err(site, format!("the index function of {who} must return {want} (for an array of rank {rank}), found {s}")))
            }
        }
    }
}

/// The error for a lambda, a section or a shape where a value is expected.
#[inline(never)]
fn misplaced(e: &Expr) -> Error {
    match &e.kind {
        ExprKind::Lambda { .. } => err(
            e,
            "a lambda is only allowed as a function argument of a builtin, as the value of a `let`, or applied to \
             arguments; functions are not values",
        ),
        ExprKind::Section(op) => err(
            e,
            format!(
                "the operator section `({})` is only allowed as the op of reduce, scan, scan_exclusive or permute, \
                 or applied to two arguments",
                op.symbol()
            ),
        ),
        _ => err(e, "a shape `[...]` is only allowed as the shape argument of generate, fill, backpermute or reshape"),
    }
}

/// The parts of an [`crate::ast::ExprKind::Loop`].
pub(crate) struct LoopParts<'e> {
    /// The state's names.
    pub pat: &'e [String],
    /// Whether the pattern is a tuple pattern.
    pub tuple: bool,
    /// The initial state.
    pub init: &'e Expr,
    /// `for` or `while`.
    pub form: &'e crate::ast::LoopForm,
    /// The next state.
    pub body: &'e Expr,
}
