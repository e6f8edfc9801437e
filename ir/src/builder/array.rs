//! The array operations ([`map1`], [`generate`], [`reduce_rows`], [`permute`], ...) and
//! the combining operators ([`Op`]) of reductions, scans and permutes.

use super::{apply, lambda, node, placeholder, shape, var, Arr, Func, Sc};
use crate::ast::{BinOp, Expr, ExprKind};

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
/// Dimensions are scalars: a size name ([`Builder::size`](super::Builder::size)), a literal
/// (`16`), any `i64` expression.
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
