//! A Rust API that builds `.eqf` programs: the same [`Program`] the parser makes from the
//! equivalent text, so `builder.build()? == parse(text)?` (equality ignores spans and types).
//!
//! # Overview
//!
//! A [`Builder`] collects the top-level items in the order its methods are called:
//! [`Builder::input_array`], [`Builder::input_scalar`], [`Builder::let_arr`],
//! [`Builder::let_sc`], [`Builder::let_fn1`] (a named scalar function), [`Builder::output`].
//! [`Builder::build`] checks the names and returns the [`Program`].
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

use crate::ast::{is_builtin, BinOp, Expr, ExprKind, Item, Limits, Lit, Program, UnOp, KEYWORDS};
use crate::error::{Code, Error, Result, Span};
use crate::types::{Dim, ElemType, Type};
use std::collections::HashSet;
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
lit_from!(i64, v => Lit::Int(v));
lit_from!(i32, v => Lit::Int(i64::from(v)));
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

// ---------------------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------------------

macro_rules! bin_ops {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl<R: Into<Sc>> std::ops::$trait<R> for Sc {
            type Output = Sc;
            fn $method(self, rhs: R) -> Sc {
                Sc::new(binary(BinOp::$op, self.expr, rhs.into().expr))
            }
        }
        impl<R: Into<Sc>> std::ops::$trait<R> for &Sc {
            type Output = Sc;
            fn $method(self, rhs: R) -> Sc {
                Sc::new(binary(BinOp::$op, self.expr.clone(), rhs.into().expr))
            }
        }
        bin_ops!(@lhs $trait $method $op; f64 i64 i32);
    )*};
    (@lhs $trait:ident $method:ident $op:ident; $($t:ty)*) => {$(
        impl std::ops::$trait<Sc> for $t {
            type Output = Sc;
            fn $method(self, rhs: Sc) -> Sc {
                Sc::new(binary(BinOp::$op, Sc::from(self).expr, rhs.expr))
            }
        }
        impl std::ops::$trait<&Sc> for $t {
            type Output = Sc;
            fn $method(self, rhs: &Sc) -> Sc {
                Sc::new(binary(BinOp::$op, Sc::from(self).expr, rhs.expr.clone()))
            }
        }
    )*};
}
bin_ops! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
    Div div Div;
    Rem rem Rem;
}

/// `-e`, folding a non-negative numeric literal into a negative one as the parser does.
fn negate(e: Expr) -> Expr {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) if v >= 0 => node(ExprKind::Lit(Lit::Int(-v))),
        ExprKind::Lit(Lit::Float(v)) if v.is_sign_positive() => node(ExprKind::Lit(Lit::Float(-v))),
        _ => node(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(e) }),
    }
}

impl std::ops::Neg for Sc {
    type Output = Sc;
    fn neg(self) -> Sc {
        Sc::new(negate(self.expr))
    }
}

impl std::ops::Neg for &Sc {
    type Output = Sc;
    fn neg(self) -> Sc {
        Sc::new(negate(self.expr.clone()))
    }
}

impl std::ops::Not for Sc {
    type Output = Sc;
    fn not(self) -> Sc {
        Sc::new(node(ExprKind::Unary { op: UnOp::Not, operand: Box::new(self.expr) }))
    }
}

impl std::ops::Not for &Sc {
    type Output = Sc;
    fn not(self) -> Sc {
        !self.clone()
    }
}

// ---------------------------------------------------------------------------------------
// Operators of reductions, scans and permutes
// ---------------------------------------------------------------------------------------

/// The combining operator of [`reduce`], [`reduce_rows`], [`scan`], [`scan_exclusive`] and
/// [`permute`]: a section, `min`/`max`, or a binary lambda ([`Op::lambda`]) or named
/// function (`Op::from(&f)`).
#[derive(Clone, Debug)]
pub enum Op {
    /// `(+)`
    Add,
    /// `(*)`
    Mul,
    /// `(&&)`
    And,
    /// `(||)`
    Or,
    /// `min`
    Min,
    /// `max`
    Max,
    /// A binary lambda or a named function; make it with [`Op::lambda`] or `Op::from(&f)`.
    Custom(OpFn),
}

/// The function of an [`Op::Custom`]: a binary lambda or a named function.
#[derive(Clone, Debug)]
pub struct OpFn(Expr);

impl Op {
    /// A binary lambda `\x0 x1 -> f x0 x1` as the operator.
    ///
    /// ```
    /// use eqfuse_ir::builder::{scan, Arr, Op};
    /// let s = scan(Op::lambda(|a, b| a.max(b)), 0, &Arr::var("xs"));
    /// assert_eq!(
    ///     s.to_expr().unwrap(),
    ///     eqfuse_ir::parse::parse_expr("scan (\\x0 x1 -> max x0 x1) 0 xs").unwrap()
    /// );
    /// ```
    pub fn lambda<R: Into<Sc>>(f: impl FnOnce(Sc, Sc) -> R) -> Op {
        Op::Custom(OpFn(lambda(2, |a| f(a[0].clone(), a[1].clone()).into())))
    }

    fn expr(&self) -> Expr {
        match self {
            Op::Add => node(ExprKind::Section(BinOp::Add)),
            Op::Mul => node(ExprKind::Section(BinOp::Mul)),
            Op::And => node(ExprKind::Section(BinOp::And)),
            Op::Or => node(ExprKind::Section(BinOp::Or)),
            Op::Min => var("min"),
            Op::Max => var("max"),
            Op::Custom(OpFn(e)) => e.clone(),
        }
    }
}

impl From<&Func> for Op {
    fn from(f: &Func) -> Op {
        Op::Custom(OpFn(var(&f.name)))
    }
}

// ---------------------------------------------------------------------------------------
// Array operations
// ---------------------------------------------------------------------------------------

fn arr_op(func: &str, args: Vec<Expr>, rank: Option<usize>) -> Arr {
    Arr::new(apply(func, args), rank)
}

/// `map f a1 ... ak` with `f` given as a closure over a slice of `k` parameters, for any
/// number of arrays (`map1` to `map5` are the same with plain parameters).
///
/// ```
/// use eqfuse_ir::builder::{map, Arr};
/// let (a, b, c) = (Arr::var("a"), Arr::var("b"), Arr::var("c"));
/// let m = map(|p| &p[0] * &p[1] + &p[2], &[&a, &b, &c]);
/// assert_eq!(
///     m.to_expr().unwrap(),
///     eqfuse_ir::parse::parse_expr("map (\\x0 x1 x2 -> x0 * x1 + x2) a b c").unwrap()
/// );
/// ```
pub fn map<R: Into<Sc>>(f: impl FnOnce(&[Sc]) -> R, arrays: &[&Arr]) -> Arr {
    let f = lambda(arrays.len(), |a| f(a).into());
    let mut args = vec![f];
    args.extend(arrays.iter().map(|a| a.expr.clone()));
    arr_op("map", args, arrays.first().and_then(|a| a.rank))
}

/// `map (\x0 -> f x0) a`
///
/// ```
/// use eqfuse_ir::builder::{map1, Arr};
/// let m = map1(|x| (x + 1).abs().sqrt(), &Arr::var("xs"));
/// assert_eq!(
///     m.to_expr().unwrap(),
///     eqfuse_ir::parse::parse_expr("map (\\x0 -> sqrt (abs (x0 + 1))) xs").unwrap()
/// );
/// ```
pub fn map1<R: Into<Sc>>(f: impl FnOnce(Sc) -> R, a: &Arr) -> Arr {
    map(|p| f(p[0].clone()), &[a])
}

/// `map (\x0 x1 -> f x0 x1) a b`
pub fn map2<R: Into<Sc>>(f: impl FnOnce(Sc, Sc) -> R, a: &Arr, b: &Arr) -> Arr {
    map(|p| f(p[0].clone(), p[1].clone()), &[a, b])
}

/// `map (\x0 x1 x2 -> f x0 x1 x2) a b c`
pub fn map3<R: Into<Sc>>(f: impl FnOnce(Sc, Sc, Sc) -> R, a: &Arr, b: &Arr, c: &Arr) -> Arr {
    map(|p| f(p[0].clone(), p[1].clone(), p[2].clone()), &[a, b, c])
}

/// `map (\x0 x1 x2 x3 -> f x0 x1 x2 x3) a b c d`
pub fn map4<R: Into<Sc>>(f: impl FnOnce(Sc, Sc, Sc, Sc) -> R, a: &Arr, b: &Arr, c: &Arr, d: &Arr) -> Arr {
    map(|p| f(p[0].clone(), p[1].clone(), p[2].clone(), p[3].clone()), &[a, b, c, d])
}

/// `map (\x0 x1 x2 x3 x4 -> f x0 x1 x2 x3 x4) a b c d e`
pub fn map5<R: Into<Sc>>(
    f: impl FnOnce(Sc, Sc, Sc, Sc, Sc) -> R,
    a: &Arr,
    b: &Arr,
    c: &Arr,
    d: &Arr,
    e: &Arr,
) -> Arr {
    map(|p| f(p[0].clone(), p[1].clone(), p[2].clone(), p[3].clone(), p[4].clone()), &[a, b, c, d, e])
}

/// `map f a1 ... ak` with a named function `f`.
pub fn map_fn(f: &Func, arrays: &[&Arr]) -> Arr {
    let mut args = vec![var(&f.name)];
    args.extend(arrays.iter().map(|a| a.expr.clone()));
    arr_op("map", args, arrays.first().and_then(|a| a.rank))
}

/// `generate [d1, ..., dr] (\x0 ... x{r-1} -> f ix)`: the closure gets the `r` indices.
/// Dimensions are scalars: a size name ([`Builder::size`]), a literal (`16`), any `i64`
/// expression.
///
/// # Example: matrix-vector product
///
/// ```
/// use eqfuse_ir::builder::{generate, reduce_rows, Builder, Op};
/// use eqfuse_ir::ElemType;
///
/// let mut b = Builder::new();
/// let m = b.input_array("m", ElemType::F32, &["r", "c"]);
/// let v = b.input_array("v", ElemType::F32, &["c"]);
/// let prods = generate([b.size("r"), b.size("c")], |ix| m.at(ix) * v.at1(&ix[1]));
/// b.output("y", &reduce_rows(Op::Add, 0, &prods));
/// let p = b.build().unwrap();
///
/// let text = "input m : f32[r, c]\n\
///             input v : f32[c]\n\
///             output y = reduce (+) 0 (generate [r, c] (\\x0 x1 -> m[x0, x1] * v[x1]))\n";
/// assert_eq!(p, eqfuse_ir::parse::parse(text).unwrap());
///
/// use eqfuse_ir::Value;
/// let checked = eqfuse_ir::check::check(&p).unwrap();
/// let mut inputs = indexmap::IndexMap::new();
/// inputs.insert("m".to_string(), Value::F32(ndarray::arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn()));
/// inputs.insert("v".to_string(), Value::F32(ndarray::arr1(&[10.0, 1.0]).into_dyn()));
/// let out = eqfuse_ir::interp::interpret(&checked, &inputs).unwrap();
/// assert_eq!(out["y"], Value::F32(ndarray::arr1(&[12.0, 34.0]).into_dyn()));
/// ```
pub fn generate<I, R>(dims: I, f: impl FnOnce(&[Sc]) -> R) -> Arr
where
    I: IntoIterator,
    I::Item: Into<Sc>,
    R: Into<Sc>,
{
    let shape = shape(dims);
    let rank = shape.kind.children().count();
    let f = lambda(rank, |a| f(a).into());
    arr_op("generate", vec![shape, f], Some(rank))
}

/// `generate [d] (\x0 -> f x0)`
pub fn generate1<R: Into<Sc>>(d: impl Into<Sc>, f: impl FnOnce(Sc) -> R) -> Arr {
    generate([d.into()], |ix| f(ix[0].clone()))
}

/// `generate [d1, d2] (\x0 x1 -> f x0 x1)`
pub fn generate2<R: Into<Sc>>(d1: impl Into<Sc>, d2: impl Into<Sc>, f: impl FnOnce(Sc, Sc) -> R) -> Arr {
    generate([d1.into(), d2.into()], |ix| f(ix[0].clone(), ix[1].clone()))
}

/// `iota n`: `0, 1, ..., n-1`.
pub fn iota(n: impl Into<Sc>) -> Arr {
    arr_op("iota", vec![n.into().expr], Some(1))
}

/// `fill [d1, ..., dr] x`
pub fn fill<I>(dims: I, x: impl Into<Sc>) -> Arr
where
    I: IntoIterator,
    I::Item: Into<Sc>,
{
    let shape = shape(dims);
    let rank = shape.kind.children().count();
    arr_op("fill", vec![shape, x.into().expr], Some(rank))
}

/// `reduce op ne a` for a rank-1 `a`: a scalar. For a higher rank, see [`reduce_rows`].
pub fn reduce(op: impl Into<Op>, ne: impl Into<Sc>, a: &Arr) -> Sc {
    Sc::new(apply("reduce", vec![op.into().expr(), ne.into().expr, a.expr.clone()]))
}

/// `reduce op ne a` for `a` of rank 2 or more: reduces the innermost dimension, giving an
/// array of rank one less.
pub fn reduce_rows(op: impl Into<Op>, ne: impl Into<Sc>, a: &Arr) -> Arr {
    let rank = a.rank.map(|r| r.saturating_sub(1));
    arr_op("reduce", vec![op.into().expr(), ne.into().expr, a.expr.clone()], rank)
}

/// `scan op ne a`: inclusive scan along the innermost dimension.
pub fn scan(op: impl Into<Op>, ne: impl Into<Sc>, a: &Arr) -> Arr {
    arr_op("scan", vec![op.into().expr(), ne.into().expr, a.expr.clone()], a.rank)
}

/// `scan_exclusive op ne a`: exclusive scan along the innermost dimension.
pub fn scan_exclusive(op: impl Into<Op>, ne: impl Into<Sc>, a: &Arr) -> Arr {
    arr_op("scan_exclusive", vec![op.into().expr(), ne.into().expr, a.expr.clone()], a.rank)
}

/// `filter (\x0 -> p x0) a`: the elements of rank-1 `a` for which `p` holds.
pub fn filter<R: Into<Sc>>(p: impl FnOnce(Sc) -> R, a: &Arr) -> Arr {
    let f = lambda(1, |x| p(x[0].clone()).into());
    arr_op("filter", vec![f, a.expr.clone()], Some(1))
}

/// `gather a idx`: `out[j..] = a[idx[j..]]`.
pub fn gather(a: &Arr, idx: &Arr) -> Arr {
    arr_op("gather", vec![a.expr.clone(), idx.expr.clone()], idx.rank)
}

/// The result of an index function: one index (a rank-1 target) or several (a tuple).
/// Made from an [`Sc`], a `Vec<Sc>` or an array `[Sc; N]`.
#[derive(Clone, Debug)]
pub struct Target(Vec<Sc>);

impl Target {
    fn into_expr(self) -> Expr {
        let mut es: Vec<Expr> = self.0.into_iter().map(|s| s.expr).collect();
        if es.len() == 1 {
            if let Some(e) = es.pop() {
                return e;
            }
        }
        node(ExprKind::Tuple(es))
    }
}

impl From<Sc> for Target {
    fn from(s: Sc) -> Target {
        Target(vec![s])
    }
}

impl From<Vec<Sc>> for Target {
    fn from(v: Vec<Sc>) -> Target {
        Target(v)
    }
}

impl<const N: usize> From<[Sc; N]> for Target {
    fn from(v: [Sc; N]) -> Target {
        Target(v.into())
    }
}

/// `backpermute [d1..dr] (\x0 ... -> f ix) a`: `out[ix] = a[f ix]`. The closure gets `r`
/// indices and returns one index per dimension of `a` (a single [`Sc`] when `a` has rank 1,
/// else a `Vec` or array, printed as a tuple).
///
/// ```
/// use eqfuse_ir::builder::{backpermute, Builder};
/// use eqfuse_ir::ElemType;
///
/// let mut b = Builder::new();
/// let xs = b.input_array("xs", ElemType::F32, &["n"]);
/// let n = b.size("n");
/// b.output("rev", &backpermute([&n], |ix| &n - 1 - &ix[0], &xs));
/// let m = b.input_array("m", ElemType::F32, &["r", "c"]);
/// b.output("t", &backpermute([b.size("c"), b.size("r")], |ix| [ix[1].clone(), ix[0].clone()], &m));
/// let text = "input xs : f32[n]\n\
///             output rev = backpermute [n] (\\x0 -> n - 1 - x0) xs\n\
///             input m : f32[r, c]\n\
///             output t = backpermute [c, r] (\\x0 x1 -> (x1, x0)) m\n";
/// assert_eq!(b.build().unwrap(), eqfuse_ir::parse::parse(text).unwrap());
/// ```
pub fn backpermute<I, R>(dims: I, f: impl FnOnce(&[Sc]) -> R, a: &Arr) -> Arr
where
    I: IntoIterator,
    I::Item: Into<Sc>,
    R: Into<Target>,
{
    let shape = shape(dims);
    let rank = shape.kind.children().count();
    let f = lambda_target(rank, f);
    arr_op("backpermute", vec![shape, f, a.expr.clone()], Some(rank))
}

fn lambda_target<R: Into<Target>>(arity: usize, f: impl FnOnce(&[Sc]) -> R) -> Expr {
    let params: Vec<String> = (0..arity).map(|_| placeholder()).collect();
    let args: Vec<Sc> = params.iter().map(|p| Sc::new(var(p))).collect();
    let body = f(&args).into().into_expr();
    node(ExprKind::Lambda { params, body: Box::new(body) })
}

/// `permute op dest (\x0 ... -> f ix) a`: starting from `dest`, combine every element of `a`
/// into `out[f ix]` with `op` (a target `-1` drops the element, for a rank-1 `dest`). The
/// closure gets one index per dimension of `a`: `a`'s rank where the builder knows it
/// ([`Arr::rank`]), else 1; use [`permute_rank`] to say it.
///
/// # Example: a histogram
///
/// ```
/// use eqfuse_ir::builder::{fill, permute, Builder, Op};
/// use eqfuse_ir::ElemType;
///
/// let mut b = Builder::new();
/// let bins = b.input_array("bins", ElemType::I64, &["k"]);
/// let h = permute(Op::Add, &fill([16], 0), |ix| bins.at1(&ix[0]), &fill([b.size("k")], 1));
/// b.output("h", &h);
/// let p = b.build().unwrap();
///
/// let text = "input bins : i64[k]\n\
///             output h = permute (+) (fill [16] 0) (\\x0 -> bins[x0]) (fill [k] 1)\n";
/// assert_eq!(p, eqfuse_ir::parse::parse(text).unwrap());
///
/// use eqfuse_ir::Value;
/// let checked = eqfuse_ir::check::check(&p).unwrap();
/// let bins = Value::I64(ndarray::arr1(&[0, 3, 3, -1, 15]).into_dyn());
/// let inputs = indexmap::IndexMap::from([("bins".to_string(), bins)]);
/// let out = eqfuse_ir::interp::interpret(&checked, &inputs).unwrap();
/// let mut want = [0i64; 16];
/// (want[0], want[3], want[15]) = (1, 2, 1); // -1 drops its element
/// assert_eq!(out["h"], Value::I64(ndarray::arr1(&want).into_dyn()));
/// ```
pub fn permute<R: Into<Target>>(op: impl Into<Op>, dest: &Arr, f: impl FnOnce(&[Sc]) -> R, a: &Arr) -> Arr {
    permute_rank(op, dest, a.rank.unwrap_or(1), f, a)
}

/// [`permute`] with the rank of `a` (the index function's number of parameters) given.
pub fn permute_rank<R: Into<Target>>(
    op: impl Into<Op>,
    dest: &Arr,
    rank: usize,
    f: impl FnOnce(&[Sc]) -> R,
    a: &Arr,
) -> Arr {
    let f = lambda_target(rank, f);
    arr_op("permute", vec![op.into().expr(), dest.expr.clone(), f, a.expr.clone()], dest.rank)
}

/// `transpose a` (rank 2).
pub fn transpose(a: &Arr) -> Arr {
    arr_op("transpose", vec![a.expr.clone()], Some(2))
}

/// `reverse a`: reverses the innermost dimension.
pub fn reverse(a: &Arr) -> Arr {
    arr_op("reverse", vec![a.expr.clone()], a.rank)
}

/// `reshape [d1..dr] a`
pub fn reshape<I>(dims: I, a: &Arr) -> Arr
where
    I: IntoIterator,
    I::Item: Into<Sc>,
{
    let shape = shape(dims);
    let rank = shape.kind.children().count();
    arr_op("reshape", vec![shape, a.expr.clone()], Some(rank))
}

/// `slice a start len` (rank-1 `a`).
pub fn slice(a: &Arr, start: impl Into<Sc>, len: impl Into<Sc>) -> Arr {
    arr_op("slice", vec![a.expr.clone(), start.into().expr, len.into().expr], Some(1))
}

/// `concat a b` (rank-1 arrays).
pub fn concat(a: &Arr, b: &Arr) -> Arr {
    arr_op("concat", vec![a.expr.clone(), b.expr.clone()], Some(1))
}

// ---------------------------------------------------------------------------------------
// The builder
// ---------------------------------------------------------------------------------------

/// A dimension of an input's declared type: a size name (`"n"`) or a literal size (`16`).
pub trait IntoDim {
    /// The dimension.
    fn into_dim(self) -> Dim;
}

impl IntoDim for &str {
    fn into_dim(self) -> Dim {
        Dim::Size(self.to_string())
    }
}
impl IntoDim for &&str {
    fn into_dim(self) -> Dim {
        Dim::Size((*self).to_string())
    }
}
impl IntoDim for String {
    fn into_dim(self) -> Dim {
        Dim::Size(self)
    }
}
impl IntoDim for i64 {
    fn into_dim(self) -> Dim {
        Dim::Known(self)
    }
}
impl IntoDim for &i64 {
    fn into_dim(self) -> Dim {
        Dim::Known(*self)
    }
}
impl IntoDim for i32 {
    fn into_dim(self) -> Dim {
        Dim::Known(i64::from(self))
    }
}
impl IntoDim for &i32 {
    fn into_dim(self) -> Dim {
        Dim::Known(i64::from(*self))
    }
}
impl IntoDim for Dim {
    fn into_dim(self) -> Dim {
        self
    }
}
impl IntoDim for &Dim {
    fn into_dim(self) -> Dim {
        self.clone()
    }
}

/// Something that can be a top-level value: an [`Arr`] or an [`Sc`].
pub trait Handle {
    /// The expression.
    fn value_expr(&self) -> Expr;
}

impl Handle for Arr {
    fn value_expr(&self) -> Expr {
        self.expr.clone()
    }
}

impl Handle for Sc {
    fn value_expr(&self) -> Expr {
        self.expr.clone()
    }
}

/// Builds a [`Program`] item by item; see the [module docs](self) for the expression
/// handles and the naming of lambda parameters.
///
/// Each method appends one item, in call order, and returns a handle that refers to the
/// new name. [`Builder::build`] checks the names and returns the program.
///
/// # Example: saxpy, with a scalar input
///
/// ```
/// use eqfuse_ir::builder::{map2, Builder};
/// use eqfuse_ir::ElemType;
///
/// let mut b = Builder::new();
/// let alpha = b.input_scalar("alpha", ElemType::F32);
/// let xs = b.input_array("xs", ElemType::F32, &["n"]);
/// let ys = b.input_array("ys", ElemType::F32, &["n"]);
/// b.output("zs", &map2(|x, y| &alpha * x + y, &xs, &ys));
/// let p = b.build().unwrap();
///
/// let text = "input alpha : f32\n\
///             input xs : f32[n]\n\
///             input ys : f32[n]\n\
///             output zs = map (\\x0 x1 -> alpha * x0 + x1) xs ys\n";
/// assert_eq!(p, eqfuse_ir::parse::parse(text).unwrap());
///
/// use eqfuse_ir::Value;
/// use ndarray::{arr0, arr1};
/// let checked = eqfuse_ir::check::check(&p).unwrap();
/// let inputs = indexmap::IndexMap::from([
///     ("alpha".to_string(), Value::F32(arr0(2.0).into_dyn())),
///     ("xs".to_string(), Value::F32(arr1(&[1.0, 2.0]).into_dyn())),
///     ("ys".to_string(), Value::F32(arr1(&[10.0, 20.0]).into_dyn())),
/// ]);
/// let out = eqfuse_ir::interp::interpret(&checked, &inputs).unwrap();
/// assert_eq!(out["zs"], Value::F32(arr1(&[12.0, 24.0]).into_dyn()));
/// ```
///
/// # Example: a named function (Black-Scholes' cumulative normal distribution)
///
/// ```
/// use eqfuse_ir::builder::{if_, let_in, lit, map1, Builder};
/// use eqfuse_ir::ElemType;
///
/// let mut b = Builder::new();
/// let d = b.input_array("d", ElemType::F32, &["n"]);
/// let cnd = b.let_fn1("cnd", |x| {
///     let_in("k", 1.0 / (1.0 + 0.2316419 * x.abs()), |k| {
///         let c = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
///         // k * (c0 + k * (c1 + k * (c2 + k * (c3 + k * c4)))), negative ones as `-lit(..)`
///         let poly = c.iter().rev().skip(1).fold(lit(c[4]), |acc, &ci| {
///             let ci = if ci < 0.0 { -lit(-ci) } else { lit(ci) };
///             ci + &k * acc
///         });
///         let poly = &k * poly;
///         let_in("w", 0.3989422804014327 * (-lit(0.5) * &x * &x).exp() * poly, |w| {
///             if_(x.gt(0), 1.0 - &w, w)
///         })
///     })
/// });
/// b.output("p", &map1(|x| cnd.call(x), &d));
/// let p = b.build().unwrap();
///
/// let text = "input d : f32[n]\n\
///     let cnd = \\x0 -> let k = 1.0 / (1.0 + 0.2316419 * abs x0) in\n\
///       let w = 0.3989422804014327 * exp (-0.5 * x0 * x0)\n\
///               * (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937\n\
///                  + k * (-1.821255978 + k * 1.330274429))))) in\n\
///       if x0 > 0 then 1.0 - w else w\n\
///     output p = map (\\x0 -> cnd x0) d\n";
/// assert_eq!(p, eqfuse_ir::parse::parse(text).unwrap());
///
/// use eqfuse_ir::Value;
/// let checked = eqfuse_ir::check::check(&p).unwrap();
/// let d = Value::F32(ndarray::arr1(&[-1.0, 0.0, 1.0]).into_dyn());
/// let out = eqfuse_ir::interp::interpret(&checked, &indexmap::IndexMap::from([("d".to_string(), d)])).unwrap();
/// let Value::F32(p) = &out["p"] else { panic!("f32 expected") };
/// // The normal cumulative distribution at -1, 0 and 1.
/// for (got, want) in p.iter().zip([0.158655f32, 0.5, 0.841345]) {
///     assert!((got - want).abs() < 1e-4, "{got} vs {want}");
/// }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Builder {
    items: Vec<Item>,
}

impl Builder {
    /// An empty program.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// `input name : elem[d1, ..., dr]`. Dimensions are size names (`&["n", "m"]`), literal
    /// sizes (`&[16]`), or [`Dim`]s (`&[Dim::Size("n".into()), Dim::Known(3)]`).
    pub fn input_array<I>(&mut self, name: &str, elem: ElemType, dims: I) -> Arr
    where
        I: IntoIterator,
        I::Item: IntoDim,
    {
        let shape: Vec<Dim> = dims.into_iter().map(IntoDim::into_dim).collect();
        let rank = shape.len();
        let ty = if shape.is_empty() { Type::Scalar(elem) } else { Type::Array { elem, shape } };
        self.items.push(Item::Input { name: name.to_string(), ty, span: Span::default() });
        Arr::new(var(name), Some(rank))
    }

    /// `input name : elem`, a scalar input.
    pub fn input_scalar(&mut self, name: &str, elem: ElemType) -> Sc {
        self.items.push(Item::Input {
            name: name.to_string(),
            ty: Type::Scalar(elem),
            span: Span::default(),
        });
        Sc::var(name)
    }

    /// A size name as an `i64` scalar (`n` in `generate [n] ...`, `n - 1 - i`).
    pub fn size(&self, name: &str) -> Sc {
        Sc::var(name)
    }

    /// `let name = value`, an array; returns a reference to `name`.
    pub fn let_arr(&mut self, name: &str, value: &Arr) -> Arr {
        self.push_let(name, value.expr.clone());
        Arr::new(var(name), value.rank)
    }

    /// `let name = value`, a scalar; returns a reference to `name`.
    pub fn let_sc(&mut self, name: &str, value: &Sc) -> Sc {
        self.push_let(name, value.expr.clone());
        Sc::var(name)
    }

    /// `let name = \x0 -> body`, a named unary function.
    pub fn let_fn1<R: Into<Sc>>(&mut self, name: &str, body: impl FnOnce(Sc) -> R) -> Func {
        self.let_fn(name, 1, |p| body(p[0].clone()))
    }

    /// `let name = \x0 x1 -> body`, a named binary function (usable as an [`Op`]).
    pub fn let_fn2<R: Into<Sc>>(&mut self, name: &str, body: impl FnOnce(Sc, Sc) -> R) -> Func {
        self.let_fn(name, 2, |p| body(p[0].clone(), p[1].clone()))
    }

    /// `let name = \x0 ... x{arity-1} -> body`, a named function of any arity.
    pub fn let_fn<R: Into<Sc>>(&mut self, name: &str, arity: usize, body: impl FnOnce(&[Sc]) -> R) -> Func {
        self.push_let(name, lambda(arity, |p| body(p).into()));
        Func { name: name.to_string(), arity }
    }

    fn push_let(&mut self, name: &str, value: Expr) {
        self.items.push(Item::Let { name: name.to_string(), value, span: Span::default() });
    }

    /// `output name = value`, an array or a scalar.
    pub fn output(&mut self, name: &str, value: &impl Handle) {
        let value = Some(value.value_expr());
        self.items.push(Item::Output { name: name.to_string(), value, span: Span::default() });
    }

    /// `output name`: outputs an earlier `let` under its own name.
    pub fn output_binding(&mut self, name: &str) {
        self.items.push(Item::Output { name: name.to_string(), value: None, span: Span::default() });
    }

    /// The program, with the default [`Limits`]. See [`Builder::build_with`].
    pub fn build(self) -> Result<Program> {
        self.build_with(&Limits::default())
    }

    /// The program: checks every top-level name (valid, not a keyword or builtin, not used
    /// twice; an `output name` must name an earlier `let` or input), every size name, and
    /// every expression (see the [module docs](self#errors)), and renames lambda parameters.
    pub fn build_with(self, limits: &Limits) -> Result<Program> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut items = Vec::with_capacity(self.items.len());
        for item in self.items {
            let name = item.name().to_string();
            check_name(&name, "top-level name")?;
            if is_builtin(name.as_str()) {
                return Err(Error::new(Code::Type, format!("`{name}` is a builtin and cannot be redefined")));
            }
            if let Item::Output { value: None, .. } = &item {
                if !seen.contains(&name) {
                    return Err(Error::new(Code::Type, format!("`output {name}` names no earlier binding")));
                }
                items.push(item);
                continue;
            }
            if !seen.insert(name.clone()) {
                return Err(Error::new(Code::Type, format!("the name `{name}` is defined twice")));
            }
            items.push(match item {
                Item::Input { name, ty, span } => {
                    check_input_type(&name, &ty)?;
                    Item::Input { name, ty, span }
                }
                Item::Let { name, value, span } => {
                    Item::Let { name, value: finish_expr(value, limits)?, span }
                }
                Item::Output { name, value, span } => {
                    let value = value.map(|v| finish_expr(v, limits)).transpose()?;
                    Item::Output { name, value, span }
                }
            });
        }
        Ok(Program { items })
    }
}

// ---------------------------------------------------------------------------------------
// Validation and parameter naming
// ---------------------------------------------------------------------------------------

fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\'') && !KEYWORDS.contains(&name)
}

fn check_name(name: &str, what: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else if KEYWORDS.contains(&name) {
        Err(Error::new(Code::Type, format!("`{name}` is a keyword and cannot be used as a {what}")))
    } else {
        Err(Error::new(Code::Type, format!("`{name}` is not a valid {what}")))
    }
}

fn check_input_type(name: &str, ty: &Type) -> Result<()> {
    let Type::Array { shape, .. } = ty else { return Ok(()) };
    for d in shape {
        match d {
            Dim::Known(k) if *k < 0 => {
                return Err(Error::new(Code::Type, format!("input `{name}` has a negative dimension {k}")))
            }
            Dim::Known(_) => {}
            Dim::Size(s) => check_name(s, "size name")?,
            Dim::Expr(_) | Dim::Dynamic => {
                return Err(Error::new(
                    Code::Type,
                    format!(
                        "input `{name}` must declare its dimensions as size names or literals, not `{d}`"
                    ),
                ))
            }
        }
    }
    Ok(())
}

fn check_depth(e: &Expr, limits: &Limits) -> Result<()> {
    if e.depth > limits.max_depth {
        return Err(Error::limit(format!(
            "an expression is nested {} deep, deeper than the limit of {}",
            e.depth, limits.max_depth
        )));
    }
    Ok(())
}

/// Checks the depth, then renames placeholders and validates names and literals.
fn finish_expr(mut e: Expr, limits: &Limits) -> Result<Expr> {
    check_depth(&e, limits)?;
    let mut avoid = HashSet::new();
    collect_names(&e, &mut avoid);
    let mut namer = Namer { avoid, scope: Vec::new(), error: None };
    if namer.fix(&mut e, 0) {
        return Ok(e);
    }
    Err(namer.error.unwrap_or_else(|| Error::new(Code::Type, "a malformed expression")))
}

/// Every name the user gave in `e` (not placeholders).
fn collect_names(e: &Expr, out: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Var(n) if !is_placeholder(n) => {
            out.insert(n.clone());
        }
        ExprKind::Let { name, .. } => {
            out.insert(name.clone());
        }
        ExprKind::Lambda { params, .. } => {
            out.extend(params.iter().filter(|p| !is_placeholder(p)).cloned());
        }
        _ => {}
    }
    for c in e.kind.children() {
        collect_names(c, out);
    }
}

/// A node the text cannot spell: a lambda without parameters, an empty shape, index list
/// or argument list, a tuple of fewer than two elements.
fn malformed(kind: &ExprKind) -> bool {
    match kind {
        ExprKind::Lambda { params, .. } => params.is_empty(),
        ExprKind::Shape(es) => es.is_empty(),
        ExprKind::Index { indices, .. } => indices.is_empty(),
        ExprKind::Apply { args, .. } => args.is_empty(),
        ExprKind::Tuple(es) => es.len() < 2,
        _ => false,
    }
}

fn malformed_message(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::Lambda { .. } => "a lambda needs at least one parameter (a map of no arrays?)",
        ExprKind::Shape(_) => "a shape needs at least one dimension",
        ExprKind::Index { .. } => "an index needs at least one index expression",
        ExprKind::Apply { .. } => "an application needs at least one argument",
        _ => "an index function returns one index or a tuple of at least two",
    }
}

/// The base name of parameter `k` of a lambda nested inside `depth` lambdas.
fn param_name(depth: usize, k: usize) -> String {
    const LETTERS: [&str; 6] = ["x", "y", "z", "u", "v", "w"];
    match LETTERS.get(depth) {
        Some(l) => format!("{l}{k}"),
        None => format!("p{depth}_{k}"),
    }
}

struct Namer {
    avoid: HashSet<String>,
    /// Placeholder -> final name, innermost last.
    scope: Vec<(String, String)>,
    /// The first error found.
    error: Option<Error>,
}

impl Namer {
    /// Renames and checks `e` and its children; `false` (with `self.error` set) on an error.
    /// Kept small: it recurses once per level of nesting.
    fn fix(&mut self, e: &mut Expr, depth: usize) -> bool {
        let mark = self.scope.len();
        let Some(inner) = self.visit(e, depth) else { return false };
        let mut ok = true;
        for c in e.kind.children_mut() {
            if !self.fix(c, inner) {
                ok = false;
                break;
            }
        }
        self.scope.truncate(mark);
        ok
    }

    /// The work on one node: renames a placeholder, names a lambda's parameters (pushing
    /// them on the scope), checks names and literals. Returns the lambda depth of the
    /// node's children, or `None` after recording an error.
    #[inline(never)]
    fn visit(&mut self, e: &mut Expr, depth: usize) -> Option<usize> {
        let r = match &mut e.kind {
            ExprKind::Var(n) if is_placeholder(n) => match self.scope.iter().rev().find(|(p, _)| p == n) {
                Some((_, name)) => {
                    *n = name.clone();
                    Ok(depth)
                }
                None => Err(Error::new(
                    Code::Type,
                    "a lambda parameter is used outside its lambda (a closure argument escaped)",
                )),
            },
            ExprKind::Var(n) => check_name(n, "name").map(|_| depth),
            ExprKind::Lit(Lit::Float(v)) if v.is_nan() => {
                Err(Error::new(Code::Type, "a float literal is NaN, which the language cannot write"))
            }
            kind if malformed(kind) => Err(Error::new(Code::Type, malformed_message(kind))),
            ExprKind::Lambda { params, .. } => {
                let mut r = Ok(depth + 1);
                for (k, p) in params.iter_mut().enumerate() {
                    if is_placeholder(p) {
                        let mut name = param_name(depth, k);
                        while self.avoid.contains(&name) {
                            name.push('_');
                        }
                        self.scope.push((std::mem::replace(p, name.clone()), name));
                    } else if let Err(err) = check_name(p, "lambda parameter") {
                        r = Err(err);
                    }
                }
                r
            }
            ExprKind::Let { name, .. } => check_name(name, "local `let` name").map(|_| depth),
            _ => Ok(depth),
        };
        match r {
            Ok(d) => Some(d),
            Err(err) => {
                self.error.get_or_insert(err);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
