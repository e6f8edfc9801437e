//! A Rust API that builds `.eqf` programs: the same [`Program`](crate::ast::Program) the
//! parser makes from the equivalent text, so `builder.build()? == parse(text)?` (equality
//! ignores spans and types).
//!
//! # Overview
//!
//! A [`Builder`] collects the top-level items in the order its methods are called:
//! [`Builder::input_array`], [`Builder::input_scalar`], [`Builder::let_arr`],
//! [`Builder::let_sc`], [`Builder::let_fn1`] (a named scalar function), [`Builder::output`].
//! [`Builder::build`] checks the names and returns the [`Program`](crate::ast::Program).
//!
//! Expressions are made with two typed handles, each wrapping an [`Expr`]:
//!
//! * [`Arr`], an array expression, made by the array operations of this module: [`map1`],
//!   [`map2`], ..., [`generate`], [`iota`], [`fill`], [`reduce_rows`], [`scan`], [`filter`],
//!   [`gather`], [`backpermute`], [`permute`], [`transpose`], [`reverse`], [`reshape`],
//!   [`slice()`], [`concat()`];
//! * [`Sc`], a scalar expression, with the operators `+ - * / %`, unary `-` and `!` of
//!   [`std::ops`], methods for comparisons ([`Sc::lt`], [`Sc::eq_`], ...), logic
//!   ([`Sc::and`], [`Sc::or`]) and the scalar builtins ([`Sc::exp`], [`Sc::max`],
//!   [`Sc::to_f32`], ...), and the free functions [`lit`], [`inf`], [`if_`], [`iterate`],
//!   [`let_in`], and [`reduce`] (the reduction of a rank-1 array, a scalar).
//!
//! Operators take their operands by value or by reference (`&a * &b` clones the
//! expressions, `a * b` moves them), and Rust numbers stand for literals: `x * 2.0`,
//! `1 - &y`. An integer literal (`2`, `lit(2)`) is [`Lit::Int`], a float literal (`2.0`) is
//! [`Lit::Float`], exactly as in the text. A unary `-` directly on a numeric literal is
//! folded into a negative literal, as the parser folds `-5`: `-lit(5)` is `Lit::Int(-5)`.
//!
//! # Lambdas and their parameter names
//!
//! Lambdas are Rust closures: `map1(|x| x * 2.0, &xs)` is `map (\x0 -> x0 * 2.0) xs`. While a
//! program is being built, every lambda parameter is a unique placeholder that no name can
//! spell (it starts with `#`). [`Builder::build`] (and [`Arr::to_expr`] / [`Sc::to_expr`])
//! then renames them deterministically by *lambda nesting depth* and *position*:
//!
//! * parameter `k` of a lambda nested inside `d` other lambdas is named `x{k}` for `d = 0`,
//!   `y{k}` for `d = 1`, `z{k}`, `u{k}`, `v{k}`, `w{k}` for `d = 2..=5`, and `p{d}_{k}` deeper;
//! * a name that the same top-level expression uses for anything else (an input, a `let`,
//!   a size name, a local `let`, a hand-written lambda parameter) gets `_` appended until it
//!   is free: `x0` becomes `x0_` next to an input named `x0`.
//!
//! So `map (\x0 x1 -> x0 * x1) xs ys` for `map2(|a, b| a * b, &xs, &ys)`, and
//! `map (\x0 -> iterate 40 (\y0 -> ...) x0) xs` for an [`iterate`] inside a map. Inner
//! lambdas never capture outer parameters (they are at another depth), sibling lambdas reuse
//! names (their scopes are disjoint), and the names do not depend on the order or the number
//! of builders made before. Names given by hand ([`let_in`], [`Builder::size`]) are used as
//! given: a [`let_in`] that rebinds a name hides the outer binding, as in the text.
//!
//! # Errors
//!
//! Handle methods never fail and never panic. [`Builder::build`] reports, as `E-TYPE`
//! errors: a top-level name that is not a valid name, is a keyword or a builtin, or is used
//! twice; a size name or local `let` name that is not a valid name; a NaN literal; a negative
//! literal dimension; a lambda parameter used outside its lambda; a node the text cannot
//! spell (a lambda of no parameters, as from [`map`] of no arrays, an empty shape or index
//! list, an index function returning an empty tuple). An expression nested deeper
//! than [`Limits::max_depth`] is an `E-LIMIT` error. Types and shapes are the checker's job
//! ([`crate::check::check`]).
//!
//! # Example: dot product
//!
//! ```
//! use eqfuse_ir::builder::{map2, reduce, Builder, Op};
//! use eqfuse_ir::ElemType;
//!
//! let mut b = Builder::new();
//! let xs = b.input_array("xs", ElemType::F32, &["n"]);
//! let ys = b.input_array("ys", ElemType::F32, &["n"]);
//! b.output("dot", &reduce(Op::Add, 0, &map2(|x, y| x * y, &xs, &ys)));
//! let p = b.build().unwrap();
//!
//! let text = "input xs : f32[n]\n\
//!             input ys : f32[n]\n\
//!             output dot = reduce (+) 0 (map (\\x0 x1 -> x0 * x1) xs ys)\n";
//! assert_eq!(p, eqfuse_ir::parse::parse(text).unwrap());
//!
//! // Check it and run it on the reference interpreter.
//! use eqfuse_ir::Value;
//! use ndarray::{arr0, arr1};
//! let checked = eqfuse_ir::check::check(&p).unwrap();
//! let mut inputs = indexmap::IndexMap::new();
//! inputs.insert("xs".to_string(), Value::F32(arr1(&[1.0, 2.0, 3.0]).into_dyn()));
//! inputs.insert("ys".to_string(), Value::F32(arr1(&[4.0, 5.0, 6.0]).into_dyn()));
//! let out = eqfuse_ir::interp::interpret(&checked, &inputs).unwrap();
//! assert_eq!(out["dot"], Value::F32(arr0(32.0).into_dyn()));
//! ```

mod array;
mod names;
mod operators;
mod program;

use crate::ast::{BinOp, Expr, ExprKind, Limits, Lit};
use crate::error::{Result, Span};
pub use array::{
    backpermute, concat, fill, filter, gather, generate, generate1, generate2, iota, map, map1, map2, map3,
    map4, map5, map_fn, permute, permute_rank, reduce, reduce_rows, reshape, reverse, scan, scan_exclusive,
    slice, transpose, Op, OpFn, Target,
};
use names::{check_depth, finish_expr};
pub use program::{Builder, Handle, IntoDim};
use std::sync::atomic::{AtomicU64, Ordering};

// ---------------------------------------------------------------------------------------
// Node helpers
// ---------------------------------------------------------------------------------------

fn node(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

fn var(name: &str) -> Expr {
    node(ExprKind::Var(name.to_string()))
}

fn apply(func: &str, args: Vec<Expr>) -> Expr {
    node(ExprKind::Apply { func: Box::new(var(func)), args })
}

fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
    node(ExprKind::Binary { op, lhs: Box::new(lhs), rhs: Box::new(rhs) })
}

fn shape<I>(dims: I) -> Expr
where
    I: IntoIterator,
    I::Item: Into<Sc>,
{
    node(ExprKind::Shape(dims.into_iter().map(|d| d.into().expr).collect()))
}

/// The placeholder prefix: no `.eqf` name can start with `#`.
const PLACEHOLDER: char = '#';

fn is_placeholder(name: &str) -> bool {
    name.starts_with(PLACEHOLDER)
}

/// A fresh lambda parameter placeholder. Only uniqueness matters: placeholders are renamed
/// deterministically before any expression leaves this module.
fn placeholder() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{PLACEHOLDER}{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A lambda of `arity` parameters whose body is `f` applied to the parameters.
fn lambda(arity: usize, f: impl FnOnce(&[Sc]) -> Sc) -> Expr {
    let params: Vec<String> = (0..arity).map(|_| placeholder()).collect();
    let args: Vec<Sc> = params.iter().map(|p| Sc::new(var(p))).collect();
    let body = f(&args).expr;
    node(ExprKind::Lambda { params, body: Box::new(body) })
}

// ---------------------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------------------

/// A scalar expression: a literal, a scalar input or `let`, a lambda parameter, a size name,
/// or any scalar operation of them. See the [module docs](self) for the operators.
///
/// ```
/// use eqfuse_ir::builder::{lit, Sc};
///
/// let x = Sc::var("x");
/// let e = (&x * 2 + 1.5).max(-lit(3));
/// assert_eq!(e.to_expr().unwrap(), eqfuse_ir::parse::parse_expr("max (x * 2 + 1.5) (-3)").unwrap());
/// ```
#[derive(Clone, Debug)]
pub struct Sc {
    expr: Expr,
}

/// An array expression: an array input or `let`, or an array operation. `rank` is known
/// for arrays made by this module and is used by [`permute`] to give its index function one
/// parameter per dimension.
#[derive(Clone, Debug)]
pub struct Arr {
    expr: Expr,
    rank: Option<usize>,
}

/// A named scalar function: a top-level `let` bound to a lambda ([`Builder::let_fn1`]).
/// Call it inside lambdas with [`Func::call`], map it with [`map_fn`], or use a binary one as
/// a reduction operator (`Op::from(&f)`).
#[derive(Clone, Debug)]
pub struct Func {
    name: String,
    arity: usize,
}

/// Wraps an expression and renames its lambda parameters (see the [module docs](self)),
/// failing on a too-deep expression or a bad name.
fn finished(expr: &Expr) -> Result<Expr> {
    let limits = Limits::default();
    check_depth(expr, &limits)?;
    finish_expr(expr.clone(), &limits)
}

impl Sc {
    fn new(expr: Expr) -> Sc {
        Sc { expr }
    }

    /// A scalar made from any expression (for example one from [`crate::parse::parse_expr`]).
    pub fn from_expr(expr: Expr) -> Sc {
        Sc { expr }
    }

    /// A reference to a scalar by name: a size name, a top-level scalar, a builtin constant.
    pub fn var(name: &str) -> Sc {
        Sc::new(var(name))
    }

    /// The expression, with lambda parameters renamed as [`Builder::build`] names them.
    /// Fails (`E-LIMIT`, `E-TYPE`) where [`Builder::build`] would.
    pub fn to_expr(&self) -> Result<Expr> {
        finished(&self.expr)
    }

    fn call(&self, func: &str, rest: Vec<Expr>) -> Sc {
        let mut args = vec![self.expr.clone()];
        args.extend(rest);
        Sc::new(apply(func, args))
    }

    fn bin(&self, op: BinOp, rhs: impl Into<Sc>) -> Sc {
        Sc::new(binary(op, self.expr.clone(), rhs.into().expr))
    }

    /// `self < rhs`
    pub fn lt(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Lt, rhs)
    }
    /// `self <= rhs`
    pub fn le(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Le, rhs)
    }
    /// `self > rhs`
    pub fn gt(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Gt, rhs)
    }
    /// `self >= rhs`
    pub fn ge(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Ge, rhs)
    }
    /// `self == rhs`
    pub fn eq_(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Eq, rhs)
    }
    /// `self != rhs`
    pub fn ne_(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Ne, rhs)
    }
    /// `self && rhs`
    pub fn and(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::And, rhs)
    }
    /// `self || rhs`
    pub fn or(&self, rhs: impl Into<Sc>) -> Sc {
        self.bin(BinOp::Or, rhs)
    }

    /// `exp self`
    pub fn exp(&self) -> Sc {
        self.call("exp", vec![])
    }
    /// `sqrt self`
    pub fn sqrt(&self) -> Sc {
        self.call("sqrt", vec![])
    }
    /// `log self`
    pub fn log(&self) -> Sc {
        self.call("log", vec![])
    }
    /// `sin self`
    pub fn sin(&self) -> Sc {
        self.call("sin", vec![])
    }
    /// `cos self`
    pub fn cos(&self) -> Sc {
        self.call("cos", vec![])
    }
    /// `tan self`
    pub fn tan(&self) -> Sc {
        self.call("tan", vec![])
    }
    /// `tanh self`
    pub fn tanh(&self) -> Sc {
        self.call("tanh", vec![])
    }
    /// `abs self`
    pub fn abs(&self) -> Sc {
        self.call("abs", vec![])
    }
    /// `floor self`
    pub fn floor(&self) -> Sc {
        self.call("floor", vec![])
    }
    /// `ceil self`
    pub fn ceil(&self) -> Sc {
        self.call("ceil", vec![])
    }
    /// `round self`
    pub fn round(&self) -> Sc {
        self.call("round", vec![])
    }
    /// `min self rhs`
    pub fn min(&self, rhs: impl Into<Sc>) -> Sc {
        self.call("min", vec![rhs.into().expr])
    }
    /// `max self rhs`
    pub fn max(&self, rhs: impl Into<Sc>) -> Sc {
        self.call("max", vec![rhs.into().expr])
    }
    /// `pow self rhs`
    pub fn pow(&self, rhs: impl Into<Sc>) -> Sc {
        self.call("pow", vec![rhs.into().expr])
    }
    /// `atan2 self rhs`
    pub fn atan2(&self, rhs: impl Into<Sc>) -> Sc {
        self.call("atan2", vec![rhs.into().expr])
    }
    /// `clamp self lo hi`
    pub fn clamp(&self, lo: impl Into<Sc>, hi: impl Into<Sc>) -> Sc {
        self.call("clamp", vec![lo.into().expr, hi.into().expr])
    }
    /// `f32 self`
    pub fn to_f32(&self) -> Sc {
        self.call("f32", vec![])
    }
    /// `f64 self`
    pub fn to_f64(&self) -> Sc {
        self.call("f64", vec![])
    }
    /// `i32 self`
    pub fn to_i32(&self) -> Sc {
        self.call("i32", vec![])
    }
    /// `i64 self`
    pub fn to_i64(&self) -> Sc {
        self.call("i64", vec![])
    }
}

impl Arr {
    fn new(expr: Expr, rank: Option<usize>) -> Arr {
        Arr { expr, rank }
    }

    /// An array made from any expression (for example one from
    /// [`crate::parse::parse_expr`]); its rank is unknown to the builder.
    pub fn from_expr(expr: Expr) -> Arr {
        Arr { expr, rank: None }
    }

    /// A reference to an array by name, of unknown rank.
    pub fn var(name: &str) -> Arr {
        Arr::new(var(name), None)
    }

    /// The rank, where the builder knows it.
    pub fn rank(&self) -> Option<usize> {
        self.rank
    }

    /// The expression, with lambda parameters renamed as [`Builder::build`] names them.
    /// Fails (`E-LIMIT`, `E-TYPE`) where [`Builder::build`] would.
    pub fn to_expr(&self) -> Result<Expr> {
        finished(&self.expr)
    }

    /// `self[i1, ..., ir]`: one index per dimension.
    pub fn at<I>(&self, indices: I) -> Sc
    where
        I: IntoIterator,
        I::Item: Into<Sc>,
    {
        let indices = indices.into_iter().map(|i| i.into().expr).collect();
        Sc::new(node(ExprKind::Index { array: Box::new(self.expr.clone()), indices }))
    }

    /// `self[i]`, for a rank-1 array.
    pub fn at1(&self, i: impl Into<Sc>) -> Sc {
        self.at([i.into()])
    }

    /// `length self`: the outermost size.
    pub fn length(&self) -> Sc {
        Sc::new(apply("length", vec![self.expr.clone()]))
    }

    /// `size self k`: the size of dimension `k`.
    pub fn size(&self, k: impl Into<Sc>) -> Sc {
        Sc::new(apply("size", vec![self.expr.clone(), k.into().expr]))
    }
}

impl Func {
    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of parameters.
    pub fn arity(&self) -> usize {
        self.arity
    }

    /// `f x`: a call of a unary function.
    pub fn call(&self, x: impl Into<Sc>) -> Sc {
        self.call_n(vec![x.into()])
    }

    /// `f x y`: a call of a binary function.
    pub fn call2(&self, x: impl Into<Sc>, y: impl Into<Sc>) -> Sc {
        self.call_n(vec![x.into(), y.into()])
    }

    /// `f a1 ... ak` with any number of arguments (an empty list gives the bare name,
    /// which the checker rejects where a scalar is expected).
    pub fn call_n(&self, args: Vec<Sc>) -> Sc {
        if args.is_empty() {
            return Sc::new(var(&self.name));
        }
        Sc::new(apply(&self.name, args.into_iter().map(|a| a.expr).collect()))
    }
}

// ---------------------------------------------------------------------------------------
// Literals and conversions
// ---------------------------------------------------------------------------------------

impl From<&Sc> for Sc {
    fn from(s: &Sc) -> Sc {
        s.clone()
    }
}

macro_rules! lit_from {
    ($t:ty, $v:ident => $lit:expr) => {
        impl From<$t> for Sc {
            fn from($v: $t) -> Sc {
                Sc::new(node(ExprKind::Lit($lit)))
            }
        }
    };
}
lit_from!(f64, v => Lit::Float(v));
lit_from!(i64, v => Lit::Int(i128::from(v)));
lit_from!(i32, v => Lit::Int(i128::from(v)));
lit_from!(bool, v => Lit::Bool(v));

/// A literal: `lit(2)` is the integer literal `2`, `lit(2.0)` the float literal `2.0`,
/// `lit(true)` is `true`. A NaN float is rejected by [`Builder::build`].
pub fn lit(v: impl Into<Sc>) -> Sc {
    v.into()
}

/// `inf`, positive infinity (a float literal). `-inf()` is the literal `-inf`.
pub fn inf() -> Sc {
    Sc::from(f64::INFINITY)
}

/// `if cond then then_ else else_` on scalars (lazy: only the taken branch is evaluated).
pub fn if_(cond: impl Into<Sc>, then_: impl Into<Sc>, else_: impl Into<Sc>) -> Sc {
    Sc::new(node(ExprKind::If {
        cond: Box::new(cond.into().expr),
        then_: Box::new(then_.into().expr),
        else_: Box::new(else_.into().expr),
    }))
}

/// Another name for [`if_`].
pub fn select(cond: impl Into<Sc>, then_: impl Into<Sc>, else_: impl Into<Sc>) -> Sc {
    if_(cond, then_, else_)
}

/// `let name = value in body`, where `body` gets a reference to `name`.
///
/// ```
/// use eqfuse_ir::builder::{let_in, Sc};
/// let x = Sc::var("x");
/// let e = let_in("d2", &x * &x + 1, |d2| &d2 * d2.sqrt());
/// assert_eq!(
///     e.to_expr().unwrap(),
///     eqfuse_ir::parse::parse_expr("let d2 = x * x + 1 in d2 * sqrt d2").unwrap()
/// );
/// ```
pub fn let_in<R: Into<Sc>>(name: &str, value: impl Into<Sc>, body: impl FnOnce(Sc) -> R) -> Sc {
    let body = body(Sc::var(name)).into();
    Sc::new(node(ExprKind::Let {
        name: name.to_string(),
        value: Box::new(value.into().expr),
        body: Box::new(body.expr),
    }))
}

/// `iterate n (\z -> body) init`: `body` applied `n` times to `init`.
///
/// ```
/// use eqfuse_ir::builder::{iterate, Sc};
/// let e = iterate(40, |z| 0.5 * &z + 0.25 * z.sin(), Sc::var("x"));
/// assert_eq!(
///     e.to_expr().unwrap(),
///     eqfuse_ir::parse::parse_expr("iterate 40 (\\x0 -> 0.5 * x0 + 0.25 * sin x0) x").unwrap()
/// );
/// ```
pub fn iterate<R: Into<Sc>>(n: impl Into<Sc>, body: impl FnOnce(Sc) -> R, init: impl Into<Sc>) -> Sc {
    let f = lambda(1, |a| body(a[0].clone()).into());
    Sc::new(apply("iterate", vec![n.into().expr, f, init.into().expr]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::UnOp;
    use crate::error::Code;

    #[test]
    fn negation_folds_literals_only() {
        assert_eq!((-lit(5)).expr.kind, ExprKind::Lit(Lit::Int(-5)));
        assert_eq!((-lit(0.5)).expr.kind, ExprKind::Lit(Lit::Float(-0.5)));
        assert_eq!((-inf()).expr.kind, ExprKind::Lit(Lit::Float(f64::NEG_INFINITY)));
        assert!(matches!((-lit(-5)).expr.kind, ExprKind::Unary { op: UnOp::Neg, .. }));
        assert!(matches!((-Sc::var("x")).expr.kind, ExprKind::Unary { op: UnOp::Neg, .. }));
    }

    #[test]
    fn params_are_named_by_depth_and_position() -> Result<()> {
        let m = map2(|a, b| iterate(3, |z| &z * &a + &b, a.clone()), &Arr::var("xs"), &Arr::var("ys"));
        let e = m.to_expr()?;
        let ExprKind::Apply { args, .. } = &e.kind else { panic!("not an apply") };
        let ExprKind::Lambda { params, body } = &args[0].kind else { panic!("not a lambda") };
        assert_eq!(params, &["x0", "x1"]);
        let ExprKind::Apply { args, .. } = &body.kind else { panic!("not an apply") };
        let ExprKind::Lambda { params, .. } = &args[1].kind else { panic!("not a lambda") };
        assert_eq!(params, &["y0"]);
        Ok(())
    }

    #[test]
    fn params_avoid_user_names() -> Result<()> {
        let e = map1(|x| x + Sc::var("x0"), &Arr::var("xs")).to_expr()?;
        let ExprKind::Apply { args, .. } = &e.kind else { panic!("not an apply") };
        let ExprKind::Lambda { params, .. } = &args[0].kind else { panic!("not a lambda") };
        assert_eq!(params, &["x0_"]);
        Ok(())
    }

    #[test]
    fn escaped_parameter_is_an_error() {
        let mut leaked = None;
        let _ = map1(
            |x| {
                leaked = Some(x.clone());
                x
            },
            &Arr::var("xs"),
        );
        let leaked = leaked.unwrap_or_else(|| lit(0));
        let err = (leaked + 1).to_expr().err().map(|e| e.code);
        assert_eq!(err, Some(Code::Type));
    }
}
