//! Programs that run block by block with halos: stencils and elementwise maps over inputs
//! chunked along one or several size names (`eqfuse.dask` runs them through Dask's overlap).
//!
//! A program qualifies when each of its outputs is an array over the chunked size names
//! whose element at an index reads the inputs only at that index moved by constants:
//!
//! - an input, `map f a b ...`, `fill [..] x`, or `generate [..] (\i j -> body)` where every
//!   read of such an array in `body` indexes each chunked dimension `s` with the parameter
//!   `p` of the generate's dimension `s`, as `p`, `p + c`, `p - c`, clamped
//!   (`clamp (p + c) 0 (s - 1)`, `min (max (p + c) 0) (s - 1)`) or wrapped (`(p + c) % s`,
//!   `(p + c + s) % s`), `c` an integer literal;
//! - `let`s of such arrays, in any depth: their reaches add up.
//!
//! Each block then runs the whole program on its rows and columns with a *halo* of
//! `halo` elements of its neighbours on each side of each chunked dimension, and keeps the
//! part that is its own. That is exact: inside a block, a read moved by `c` reads the
//! neighbour's element itself; at the edge of the whole array a clamped or unchecked read
//! sees the same edge (no halo there: `boundary` `none`), and a wrapped read sees the other
//! end of the array (`periodic`). Forms whose result would depend on the block (the index or
//! a chunked size used as a number, a reduction, a scan or a move of elements along a chunked
//! dimension, clamped and wrapped reads along one dimension) are refused with `E-INPUT`,
//! naming the value and why.

use super::names::{builtin, free_vars};
use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, Lit, UnOp};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::print::print_expr;
use eqfuse_ir::types::{Dim, Type};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

/// How a program runs block by block with halos: see the module docs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HaloPlan {
    /// Each chunked size name, in the order given.
    pub axes: Vec<HaloAxis>,
}

/// One chunked size name of a [`HaloPlan`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HaloAxis {
    /// The size name.
    pub size: String,
    /// The elements of each neighbour a block needs on each side along it.
    pub halo: u64,
    /// Whether the program wraps around it (the halo at the array's ends is the other end),
    /// else the array's ends have no halo.
    pub periodic: bool,
}

/// A blocked array's dimensions (the chunked ones named) and reach per chunked size name.
type Blocks = (Vec<Option<String>>, BTreeMap<String, u64>);

/// What a name is, for the analysis.
#[derive(Clone, Debug)]
enum Kind {
    /// The same in every block: a scalar or an array made without the chunked values.
    Whole,
    /// An array over chunked size names: its dimensions (the chunked ones named) and how far
    /// along each chunked size name its element reads the inputs.
    Blocked { dims: Vec<Option<String>>, reach: BTreeMap<String, u64> },
}

/// How a read moves along one chunked dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Edge {
    /// `p + c` as it is, or clamped to the array: the array's ends need no halo.
    Clamp,
    /// Wrapped by `%`: the halo at the array's ends is the other end.
    Wrap,
}

struct Analysis<'a> {
    chunked: &'a [String],
    env: HashMap<String, Kind>,
    /// Per chunked size name: the largest reach, and the read forms seen (with one example).
    halo: BTreeMap<String, u64>,
    edges: BTreeMap<String, Vec<(Edge, String)>>,
    item: String,
}

/// Decides whether `checked` can run block by block with halos when the inputs are chunked
/// along the size names `chunked`, and with what halo. `E-INPUT` naming the value and why
/// when it cannot.
///
/// ```
/// let checked = eqfuse::check(&eqfuse::parse("
///     input a : f64[n]
///     output b = generate [n] (\\i -> a[clamp (i - 1) 0 (n - 1)] + a[i] + a[(i + 2) % n])
/// ")?)?;
/// let err = eqfuse::chunks::halo_plan(&checked, &["n".to_string()]).expect_err("refused");
/// assert!(err.message.contains("clamped and wrapped"));
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn halo_plan(checked: &Checked, chunked: &[String]) -> Result<HaloPlan> {
    if let Some(why) = super::version_2_form(checked) {
        return Err(Error::input(format!(
            "the program cannot be computed in blocks with halos: {why}; give the chunked inputs as one chunk"
        )));
    }
    let mut a = Analysis {
        chunked,
        env: HashMap::new(),
        halo: BTreeMap::new(),
        edges: BTreeMap::new(),
        item: String::new(),
    };
    for (name, ty) in &checked.inputs {
        a.item = name.clone();
        let kind = match ty {
            Type::Array { shape, .. } => {
                let dims: Vec<Option<String>> = shape
                    .iter()
                    .map(|d| match d {
                        Dim::Size(s) if chunked.contains(s) => Some(s.clone()),
                        _ => None,
                    })
                    .collect();
                a.blocked(dims, BTreeMap::new(), None)?
            }
            _ => Kind::Whole,
        };
        a.env.insert(name.clone(), kind);
    }
    for item in &checked.program.items {
        let (name, value, output) = match item {
            Item::Input { .. } => continue,
            Item::LetTuple { names, .. } => {
                return Err(Error::input(format!(
                    "`({})` cannot be computed in blocks with halos: a tuple pattern is not split yet",
                    names.join(", ")
                )))
            }
            Item::Let { name, value, .. } => (name, Some(value), false),
            Item::Output { name, value, .. } => (name, value.as_ref(), true),
        };
        a.item = name.clone();
        let kind = match value {
            Some(v) => a.array(v)?,
            None => a.env.get(name).cloned().unwrap_or(Kind::Whole),
        };
        if output && matches!(kind, Kind::Whole) {
            let mut e = Error::input(format!(
                "output `{name}` cannot be computed in blocks with halos: it does not lie along the chunked sizes {}",
                names(chunked)
            ));
            e.span = value.map(|v| v.span).filter(|s| *s != Span::default());
            return Err(e);
        }
        a.env.insert(name.clone(), kind);
    }
    let mut axes = Vec::with_capacity(chunked.len());
    for s in chunked {
        let edges = a.edges.get(s).map(Vec::as_slice).unwrap_or_default();
        let wrap = edges.iter().find(|(e, _)| *e == Edge::Wrap);
        let clamp = edges.iter().find(|(e, _)| *e == Edge::Clamp);
        if let (Some((_, w)), Some((_, c))) = (wrap, clamp) {
            return Err(Error::input(format!(
                "the program cannot be computed in blocks with halos: it reads along `{s}` both clamped \
                 and wrapped (`{c}`, `{w}`), which need different ends; give the inputs along `{s}` as one chunk"
            )));
        }
        axes.push(HaloAxis {
            size: s.clone(),
            halo: a.halo.get(s).copied().unwrap_or(0),
            periodic: wrap.is_some(),
        });
    }
    Ok(HaloPlan { axes })
}

fn names(sizes: &[String]) -> String {
    sizes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
}

impl Analysis<'_> {
    fn refuse(&self, why: &str, at: &Expr) -> Error {
        let mut e = Error::input(format!(
            "`{}` cannot be computed in blocks with halos: {why} (in `{}`); give the chunked inputs as one chunk",
            self.item,
            print_expr(at)
        ));
        e.span = Some(at.span).filter(|s| *s != Span::default());
        e
    }

    /// A blocked array's kind, after checking that no chunked size name repeats.
    fn blocked(
        &self,
        dims: Vec<Option<String>>,
        reach: BTreeMap<String, u64>,
        at: Option<&Expr>,
    ) -> Result<Kind> {
        let named: Vec<&String> = dims.iter().flatten().collect();
        if named.is_empty() {
            return Ok(Kind::Whole);
        }
        if let Some(s) = named.iter().enumerate().find(|(k, s)| named[..*k].contains(s)).map(|(_, s)| s) {
            let why = format!("the chunked size `{s}` is two of its dimensions");
            return Err(match at {
                Some(e) => self.refuse(&why, e),
                None => {
                    Error::input(format!("`{}` cannot be computed in blocks with halos: {why}", self.item))
                }
            });
        }
        Ok(Kind::Blocked { dims, reach })
    }

    fn is_blocked(&self, n: &str, bound: &HashSet<String>) -> bool {
        !bound.contains(n) && matches!(self.env.get(n), Some(Kind::Blocked { .. }))
    }

    /// Does `e` use nothing that differs between blocks (a chunked size, a blocked array)?
    fn is_whole(&self, e: &Expr) -> bool {
        free_vars(e)
            .iter()
            .all(|n| !self.chunked.contains(n) && !matches!(self.env.get(n), Some(Kind::Blocked { .. })))
    }

    /// The kind of an array-level (or top-level) expression.
    fn array(&mut self, e: &Expr) -> Result<Kind> {
        if self.is_whole(e) {
            return Ok(Kind::Whole);
        }
        match &e.kind {
            ExprKind::Var(n) => return Ok(self.env.get(n).cloned().unwrap_or(Kind::Whole)),
            ExprKind::Let { name, value, body } => {
                let k = self.array(value)?;
                let saved = self.env.insert(name.clone(), k);
                let r = self.array(body);
                match saved {
                    Some(s) => self.env.insert(name.clone(), s),
                    None => self.env.remove(name),
                };
                return r;
            }
            _ => {}
        }
        let Some((f, args)) = builtin(e) else {
            return Err(self.refuse("its value depends on the block", e));
        };
        match (f, args) {
            ("map", [func, arrays @ ..]) if !arrays.is_empty() => self.map(e, func, arrays),
            ("fill", [shape, x]) => {
                if !self.is_whole(x) {
                    return Err(self.refuse("the value of `fill` depends on the block", e));
                }
                let dims = self.shape_dims(shape, e)?;
                self.blocked(dims, BTreeMap::new(), Some(e))
            }
            ("generate", [shape, Expr { kind: ExprKind::Lambda { params, body }, .. }]) => {
                let dims = self.shape_dims(shape, e)?;
                let mut reach = BTreeMap::new();
                let index: HashMap<String, String> = params
                    .iter()
                    .zip(&dims)
                    .filter_map(|(p, d)| d.as_ref().map(|s| (s.clone(), p.clone())))
                    .collect();
                let mut bound = HashSet::new();
                self.body(body, &index, &mut bound, &mut reach)?;
                self.blocked(dims, reach, Some(e))
            }
            _ => Err(self.refuse(
                &format!("`{f}` of an array along the chunked sizes needs elements of other blocks, or depends on the block"),
                e,
            )),
        }
    }

    fn map(&mut self, e: &Expr, func: &Expr, arrays: &[Expr]) -> Result<Kind> {
        if !self.is_whole(func) {
            return Err(self.refuse("the function of `map` reads values that differ between blocks", e));
        }
        let mut out: Option<Blocks> = None;
        for a in arrays {
            match self.array(a)? {
                Kind::Whole => return Err(self.refuse("`map` joins a whole array with a chunked one", e)),
                Kind::Blocked { dims, reach } => match &mut out {
                    None => out = Some((dims, reach)),
                    Some((d, r)) => {
                        if *d != dims {
                            return Err(self.refuse("`map` joins arrays chunked along different sizes", e));
                        }
                        for (s, v) in reach {
                            let x = r.entry(s).or_insert(0);
                            *x = (*x).max(v);
                        }
                    }
                },
            }
        }
        let (dims, reach) = out.unwrap_or_default();
        self.blocked(dims, reach, Some(e))
    }

    /// The dimensions of a builtin's shape argument: a chunked size name written as itself,
    /// or a size every block shares.
    fn shape_dims(&self, shape: &Expr, at: &Expr) -> Result<Vec<Option<String>>> {
        let ExprKind::Shape(dims) = &shape.kind else {
            return Err(self.refuse("its shape is not written out", at));
        };
        dims.iter()
            .map(|d| match &d.kind {
                ExprKind::Var(s) if self.chunked.contains(s) => Ok(Some(s.clone())),
                _ if self.is_whole(d) => Ok(None),
                _ => Err(self.refuse("a dimension of its shape is computed from a chunked size", at)),
            })
            .collect()
    }

    /// Checks the body of a generate whose chunked dimensions have the parameters `index`
    /// (size name to parameter), and records how far it reads.
    fn body(
        &mut self,
        e: &Expr,
        index: &HashMap<String, String>,
        bound: &mut HashSet<String>,
        reach: &mut BTreeMap<String, u64>,
    ) -> Result<()> {
        match &e.kind {
            ExprKind::Var(n) if !bound.contains(n) => {
                if index.values().any(|p| p == n) {
                    return Err(self.refuse(
                        &format!("it uses the index `{n}` as a number, which differs between blocks"),
                        e,
                    ));
                }
                if self.chunked.contains(n) {
                    return Err(self
                        .refuse(&format!("it uses the size `{n}` as a number, and a block has its own"), e));
                }
                if self.is_blocked(n, bound) {
                    return Err(self.refuse(
                        &format!("it uses the chunked array `{n}` other than by reading it at an index"),
                        e,
                    ));
                }
                Ok(())
            }
            ExprKind::Index { array, indices } => {
                if let ExprKind::Var(n) = &array.kind {
                    if let (false, Some(Kind::Blocked { dims, reach: r })) =
                        (bound.contains(n), self.env.get(n))
                    {
                        let (dims, r) = (dims.clone(), r.clone());
                        for (ix, d) in indices.iter().zip(&dims) {
                            match d {
                                Some(s) => self.read(ix, s, index, &r, reach)?,
                                None => self.body(ix, index, bound, reach)?,
                            }
                        }
                        return Ok(());
                    }
                }
                self.body(array, index, bound, reach)?;
                indices.iter().try_for_each(|i| self.body(i, index, bound, reach))
            }
            ExprKind::Let { name, value, body } => {
                self.body(value, index, bound, reach)?;
                let fresh = bound.insert(name.clone());
                let r = self.body(body, index, bound, reach);
                if fresh {
                    bound.remove(name);
                }
                r
            }
            ExprKind::Lambda { params, body } => {
                let fresh: Vec<String> =
                    params.iter().filter(|p| bound.insert((*p).clone())).cloned().collect();
                let r = self.body(body, index, bound, reach);
                for p in fresh {
                    bound.remove(&p);
                }
                r
            }
            kind => kind.children().try_for_each(|c| self.body(c, index, bound, reach)),
        }
    }

    /// A read along the chunked size `s` at `ix`: it must be the generate's own index of `s`
    /// moved by a constant, as it is, clamped or wrapped.
    fn read(
        &mut self,
        ix: &Expr,
        s: &str,
        index: &HashMap<String, String>,
        array_reach: &BTreeMap<String, u64>,
        reach: &mut BTreeMap<String, u64>,
    ) -> Result<()> {
        let Some(p) = index.get(s) else {
            return Err(self.refuse(
                &format!(
                    "it reads along the chunked size `{s}` in a `generate` that does not run along `{s}`"
                ),
                ix,
            ));
        };
        let Some((c, edge)) = relative(ix, p, s) else {
            return Err(self.refuse(
                &format!(
                    "it reads along `{s}` at `{}`, not at `{p}` moved by a constant (as it is, clamped to 0 and `{s} - 1`, or wrapped by `% {s}`)",
                    print_expr(ix)
                ),
                ix,
            ));
        };
        let total = c.unsigned_abs().saturating_add(array_reach.get(s).copied().unwrap_or(0));
        let r = reach.entry(s.to_string()).or_insert(0);
        *r = (*r).max(total);
        let h = self.halo.entry(s.to_string()).or_insert(0);
        *h = (*h).max(total);
        if c != 0 || edge == Edge::Wrap {
            self.edges.entry(s.to_string()).or_default().push((edge, print_expr(ix)));
        }
        Ok(())
    }
}

/// `p + c`, `c + p`, `p - c` or `p`: `c`.
fn moved(e: &Expr, p: &str) -> Option<i64> {
    let lit = |e: &Expr| match &e.kind {
        ExprKind::Lit(Lit::Int(c)) => i64::try_from(*c).ok(),
        ExprKind::Unary { op: UnOp::Neg, operand } => match &operand.kind {
            ExprKind::Lit(Lit::Int(c)) => i64::try_from(*c).ok().map(|c| -c),
            _ => None,
        },
        _ => None,
    };
    let is_p = |e: &Expr| matches!(&e.kind, ExprKind::Var(n) if n == p);
    match &e.kind {
        ExprKind::Var(n) if n == p => Some(0),
        ExprKind::Binary { op: BinOp::Add, lhs, rhs } if is_p(lhs) => lit(rhs),
        ExprKind::Binary { op: BinOp::Add, lhs, rhs } if is_p(rhs) => lit(lhs),
        ExprKind::Binary { op: BinOp::Sub, lhs, rhs } if is_p(lhs) => lit(rhs).and_then(i64::checked_neg),
        _ => None,
    }
}

/// A read index along `s` relative to the generate's index `p`: how far it moves and how it
/// meets the array's ends.
fn relative(e: &Expr, p: &str, s: &str) -> Option<(i64, Edge)> {
    if let Some(c) = moved(e, p) {
        return Some((c, Edge::Clamp));
    }
    let is_s = |e: &Expr| matches!(&e.kind, ExprKind::Var(n) if n == s);
    let is_zero = |e: &Expr| matches!(&e.kind, ExprKind::Lit(Lit::Int(0)));
    let is_last = |e: &Expr| {
        matches!(&e.kind, ExprKind::Binary { op: BinOp::Sub, lhs, rhs }
            if is_s(lhs) && matches!(rhs.kind, ExprKind::Lit(Lit::Int(1))))
    };
    match &e.kind {
        ExprKind::Binary { op: BinOp::Rem, lhs, rhs } if is_s(rhs) => {
            let inner = match &lhs.kind {
                ExprKind::Binary { op: BinOp::Add, lhs: a, rhs: b } if is_s(b) => a,
                ExprKind::Binary { op: BinOp::Add, lhs: a, rhs: b } if is_s(a) => b,
                _ => lhs,
            };
            moved(inner, p).map(|c| (c, Edge::Wrap))
        }
        _ => {
            let (f, args) = builtin(e)?;
            match (f, args) {
                ("clamp", [x, lo, hi]) if is_zero(lo) && is_last(hi) => moved(x, p).map(|c| (c, Edge::Clamp)),
                ("min", [m, hi]) if is_last(hi) => match builtin(m)? {
                    ("max", [x, lo]) if is_zero(lo) => moved(x, p).map(|c| (c, Edge::Clamp)),
                    _ => None,
                },
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(src: &str, sizes: &[&str]) -> Result<HaloPlan> {
        let checked = crate::check(&crate::parse(src)?)?;
        halo_plan(&checked, &sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn axis(size: &str, halo: u64, periodic: bool) -> HaloAxis {
        HaloAxis { size: size.into(), halo, periodic }
    }

    const JACOBI: &str = "input a : f64[h, w]
output b = generate [h, w] (\\i j -> (a[i, j] + a[clamp (i - 1) 0 (h - 1), j] + a[clamp (i + 1) 0 (h - 1), j]
  + a[i, clamp (j - 1) 0 (w - 1)] + a[i, min (max (j + 1) 0) (w - 1)]) / 5.0)";

    #[test]
    fn a_clamped_stencil_has_a_halo_of_its_offsets_along_each_size() {
        let p = plan(JACOBI, &["h", "w"]).expect("a plan");
        assert_eq!(p.axes, vec![axis("h", 1, false), axis("w", 1, false)]);
        assert_eq!(plan(JACOBI, &["w"]).expect("a plan").axes, vec![axis("w", 1, false)]);
    }

    #[test]
    fn reaches_add_up_through_lets_and_maps() {
        let src = "input a : f32[n]
input s : f32
let b = generate [n] (\\i -> a[clamp (i - 1) 0 (n - 1)] + a[i] + a[clamp (i + 2) 0 (n - 1)])
let c = map (\\x -> x * s) b
output d = generate [n] (\\i -> c[clamp (i - 3) 0 (n - 1)] - c[i])
output e = map (\\x y -> x + y) a c";
        assert_eq!(plan(src, &["n"]).expect("a plan").axes, vec![axis("n", 5, false)]);
    }

    #[test]
    fn wrapped_reads_are_periodic() {
        let src = "input a : i64[n]\noutput b = generate [n] (\\i -> a[(i + 1) % n] - a[(i - 2 + n) % n])";
        assert_eq!(plan(src, &["n"]).expect("a plan").axes, vec![axis("n", 2, true)]);
    }

    #[test]
    fn what_depends_on_the_block_is_refused_and_named() {
        for (src, why) in [
            ("input a : f64[n]\noutput b = generate [n] (\\i -> a[i] * f64 i)", "uses the index `i` as a number"),
            ("input a : f64[n]\noutput b = map (\\x -> x / f64 n) a", "reads values that differ"),
            ("input a : f64[n]\noutput s = reduce (+) 0 a", "`reduce` of an array along"),
            ("input a : f64[n]\ninput k : f64\noutput s = k + 1.0", "does not lie along"),
            ("input a : f64[n]\noutput b = generate [n] (\\i -> a[n - 1 - i])", "not at `i` moved by a constant"),
            ("input a : f64[n]\noutput b = scan (+) 0 a", "`scan` of an array along"),
            ("input a : f64[n, n]\noutput b = map abs a", "two of its dimensions"),
            (
                "input a : f64[n]\noutput b = generate [n] (\\i -> a[(i + 1) % n] + a[clamp (i - 1) 0 (n - 1)])",
                "both clamped and wrapped",
            ),
            ("input a : f64[h, w]\noutput b = generate [h] (\\i -> a[i, 0])", "does not run along `w`"),
        ] {
            let e = plan(src, &["n", "h", "w"]).expect_err("refused");
            assert_eq!(e.code, crate::Code::Input, "{src}");
            assert!(e.message.contains(why), "{src}: {}", e.message);
        }
    }

    #[test]
    fn sizes_not_chunked_may_be_used_as_numbers() {
        let src = "input a : f64[h, w]\noutput b = generate [h, w] (\\i j -> a[clamp (i + 1) 0 (h - 1), j] * f64 j / f64 w)";
        assert_eq!(plan(src, &["h"]).expect("a plan").axes, vec![axis("h", 1, false)]);
        assert!(plan(src, &["h", "w"]).is_err());
    }
}
