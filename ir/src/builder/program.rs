//! The [`Builder`]: the top-level items of a program, in order, checked and with their
//! lambda parameters named when it is built.

use super::names::{check_input_type, check_name, finish_expr};
use super::{lambda, var, Arr, Func, Sc};
use crate::ast::{Expr, Item, Limits, Program};
use crate::error::{Code, Error, Result, Span};
use crate::types::{Dim, ElemType, Type};
use std::collections::HashSet;

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

/// Builds a [`Program`] item by item; see the [module docs](super) for the expression
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

    /// `let name = \x0 x1 -> body`, a named binary function (usable as an [`Op`](super::Op)).
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
    /// every expression (see the [module docs](super#errors)), and renames lambda parameters.
    pub fn build_with(self, limits: &Limits) -> Result<Program> {
        let mut seen: HashSet<String> = HashSet::new();
        let mut items = Vec::with_capacity(self.items.len());
        for item in self.items {
            let name = item.name().to_string();
            // a builtin's name may be taken (version 2): within its scope it is the program's
            check_name(&name, "top-level name")?;
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
                Item::LetTuple { names, value, span } => {
                    Item::LetTuple { names, value: finish_expr(value, limits)?, span }
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
