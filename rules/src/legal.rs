//! Legality: when a fusion may fire. Kept apart from the rewrites themselves.
//!
//! - **Reads in bounds.** Fusing a read `a[j]` of `a = generate sh f` into `f j` is only
//!   sound when `j` is inside `sh`: out of bounds, the program reports `E-INDEX` while `f j`
//!   would quietly compute a value. [`in_bounds`] proves it for the index forms fusion meets:
//!   an index parameter whose range is the same dimension, a constant inside a known
//!   dimension, `clamp x 0 (d - 1)` and `d - 1 - i` for such an `i`.
//! - **Neutral elements.** `reduce op ne (filter p a)` becomes a reduction over `a` that
//!   folds `ne` for the dropped elements: sound (bit for bit) only when `ne` is neutral for
//!   `op`, which [`neutral_pair`] recognises for the operators of the language reference (docs/language-reference.md).

use crate::build::{const_i64, same_dim};
use crate::cond::{is_bottom, is_false, is_neg_zero, is_one, is_pos_zero, is_top, is_true};
use crate::EG;
use egg::Id;
use eqfuse_egraph::analysis::dim_of;
use eqfuse_egraph::{ArrayLang, Kind, SymDim};

/// The index space a lambda body is evaluated over: `dims[k]` is the range of source
/// parameter `k` of the outermost index lambda (`$(r-1-k)` at depth 0).
pub struct IndexSpace<'a> {
    /// The dimensions, outermost first.
    pub dims: &'a [SymDim],
}

impl IndexSpace<'_> {
    /// Whether a dimension is certainly 0 (the space has no point).
    fn is_empty(&self, eg: &EG) -> bool {
        self.dims.iter().any(|d| match d {
            SymDim::Const(c) => *c == 0,
            SymDim::Class(c) => const_i64(eg, *c) == Some(0),
            _ => false,
        })
    }

    /// The range of parameter `$index` seen at binder depth `depth`, if it is an index
    /// parameter of this space.
    fn range_of(&self, index: u32, depth: u32) -> Option<&SymDim> {
        let rel = index.checked_sub(depth)? as usize;
        let r = self.dims.len();
        (rel < r).then(|| &self.dims[r - 1 - rel])
    }

    /// Whether `d` is one of the space's dimensions (so it is at least 1 wherever the body
    /// runs).
    fn nonempty(&self, eg: &EG, d: &SymDim) -> bool {
        matches!(d, SymDim::Const(v) if *v >= 1) || self.dims.iter().any(|x| same_dim(eg, x, d))
    }

    fn is_param_over(&self, eg: &EG, j: Id, d: &SymDim, depth: u32) -> bool {
        eg[j].nodes.iter().any(|n| match n {
            ArrayLang::Param(p) => self.range_of(p.index, depth).is_some_and(|r| same_dim(eg, r, d)),
            _ => false,
        })
    }
}

/// Whether class `x` is `d - 1`.
fn is_last(eg: &EG, x: Id, d: &SymDim) -> bool {
    if let (Some(v), SymDim::Const(c)) = (const_i64(eg, x), d) {
        return c.checked_sub(1) == Some(v);
    }
    eg[x].nodes.iter().any(|n| match n {
        ArrayLang::Sub([a, one]) => const_i64(eg, *one) == Some(1) && same_dim(eg, &dim_of(eg, *a), d),
        _ => false,
    })
}

/// Whether index `j` (a class seen at binder `depth` inside a body over `space`) is
/// certainly in `[0, d)` wherever the body is evaluated.
pub fn in_bounds(eg: &EG, j: Id, d: &SymDim, space: &IndexSpace<'_>, depth: u32) -> bool {
    in_bounds_within(eg, j, d, space, depth, IN_BOUNDS_NESTING)
}

/// How deep [`in_bounds`] looks through `(d - 1) - i` (a bound: e-graphs can be cyclic).
const IN_BOUNDS_NESTING: u32 = 4;

fn in_bounds_within(eg: &EG, j: Id, d: &SymDim, space: &IndexSpace<'_>, depth: u32, fuel: u32) -> bool {
    // over an empty space the body is evaluated nowhere: no read runs
    if space.is_empty(eg) || space.is_param_over(eg, j, d, depth) {
        return true;
    }
    if let Some(v) = const_i64(eg, j) {
        return match d {
            SymDim::Const(c) => 0 <= v && v < *c,
            _ => v == 0 && space.nonempty(eg, d),
        };
    }
    eg[j].nodes.iter().any(|n| match n {
        // clamp x 0 (d - 1) is in [0, d - 1] when d >= 1
        ArrayLang::Clamp([_, lo, hi]) => {
            const_i64(eg, *lo) == Some(0) && is_last(eg, *hi, d) && space.nonempty(eg, d)
        }
        // (d - 1) - i is in [0, d) when i is (a reversal of a parameter, of a clamp, ..)
        ArrayLang::Sub([a, i]) => {
            is_last(eg, *a, d)
                && (space.is_param_over(eg, *i, d, depth)
                    || fuel > 0
                        && space.nonempty(eg, d)
                        && in_bounds_within(eg, *i, d, space, depth, fuel - 1))
        }
        _ => false,
    })
}

/// The binary operator a two-parameter `op` class computes, when its body is `$1 op $0` or
/// `$0 op $1` (or `min`/`max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    /// `+`
    Add,
    /// `*`
    Mul,
    /// `min`
    Min,
    /// `max`
    Max,
    /// `&&`
    And,
    /// `||`
    Or,
}

fn op_kind(eg: &EG, op: Id) -> Option<OpKind> {
    let body = eg[op].nodes.iter().find_map(|n| match n {
        ArrayLang::Lam([p, b]) if matches!(eg[*p].data.kind, Kind::Params(2)) => Some(*b),
        _ => None,
    })?;
    let is_params = |a: &Id, b: &Id| {
        let idx = |c: &Id| {
            eg[*c].nodes.iter().find_map(|n| match n {
                ArrayLang::Param(p) => Some(p.index),
                _ => None,
            })
        };
        matches!((idx(a), idx(b)), (Some(1), Some(0)) | (Some(0), Some(1)))
    };
    eg[body].nodes.iter().find_map(|n| match n {
        ArrayLang::Add([a, b]) if is_params(a, b) => Some(OpKind::Add),
        ArrayLang::Mul([a, b]) if is_params(a, b) => Some(OpKind::Mul),
        ArrayLang::Min([a, b]) if is_params(a, b) => Some(OpKind::Min),
        ArrayLang::Max([a, b]) if is_params(a, b) => Some(OpKind::Max),
        ArrayLang::And([a, b]) if is_params(a, b) => Some(OpKind::And),
        ArrayLang::Or([a, b]) if is_params(a, b) => Some(OpKind::Or),
        _ => None,
    })
}

/// Whether `ne` is a neutral element of `op`: `op acc ne == acc` bit for bit for every
/// accumulator a reduction starting from `ne` can reach.
///
/// `+` takes `0` and `-0.0` (a float sum that starts at `+0.0` never becomes `-0.0`, so
/// adding `+0.0` changes nothing), `*` takes `1`, `min` `+inf` or the type's largest value,
/// `max` `-inf` or the smallest, `&&` `true`, `||` `false`.
pub fn neutral_pair(eg: &EG, op: Id, ne: Id) -> bool {
    match op_kind(eg, op) {
        Some(OpKind::Add) => is_pos_zero(eg, ne) || is_neg_zero(eg, ne),
        Some(OpKind::Mul) => is_one(eg, ne),
        Some(OpKind::Min) => is_top(eg, ne),
        Some(OpKind::Max) => is_bottom(eg, ne),
        Some(OpKind::And) => is_true(eg, ne),
        Some(OpKind::Or) => is_false(eg, ne),
        None => false,
    }
}
