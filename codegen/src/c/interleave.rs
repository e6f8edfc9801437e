//! Whether a reduction over a group may fold a row into independent accumulators, element
//! `j` into accumulator `j mod W`, combined in order at the end: that is the in-order fold
//! only when the operator commutes on the elements it meets (the language asks `reduce`'s
//! operator to be associative, not commutative). A known commutative operator does; so
//! does a *keyed selection* ([`keyed_selection`]), the form of `argmin`, `argmax` and the
//! reductions over `(a, iota n)` written by hand: a group of a value and a key, the key the
//! element's innermost index (distinct for every element of a row), and an operator that
//! keeps one whole element or the other by comparisons only. Such an operator commutes on
//! elements of distinct keys when it does so on one representative of every way two values
//! and two distinct keys can compare, which is checked by evaluating it on them.

use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Block, Func, Inst, Reg};
use eqfuse_ir::types::ElemType;

/// A value while the operator is evaluated: a `bool`, an integer, or a float with its bits
/// (which tell `-0.0` from `0.0` and one NaN from another).
#[derive(Clone, Copy, Debug, PartialEq)]
enum V {
    Bool(bool),
    Int(i128),
    Float(f64, u64),
}

impl V {
    /// The same element, bit for bit.
    fn same(self, o: V) -> bool {
        match (self, o) {
            (V::Float(_, a), V::Float(_, b)) => a == b,
            (a, b) => a == b,
        }
    }
}

/// Whether the reduction over the group of two lanes `head`, `head + 1` of a kernel whose
/// element function is `elem`, by operator `op` from neutral element `ne`, is a keyed
/// selection: one component (the key, `i64`) is the element function's last parameter (the
/// innermost index) itself, and `op` reads its parameters only through comparisons of a
/// component's two sides, `isnan`, the `bool` operators and `if`s (a non-`bool` `if`
/// choosing between a component's two sides), and commutes on a representative of every
/// order of two values and two distinct keys.
///
/// Or it commutes on every order of two values that are not NaN, keeps its left side
/// whenever that is not NaN and the right one is (`if b < a || (b == a && j < i) then (b, j)
/// else (a, i)`: a comparison with NaN is false), and `ne`'s value is a constant that is
/// not NaN: then no accumulator is ever NaN (each starts at `ne`, and keeps itself against
/// a NaN), a NaN element changes none, and on the others the operator commutes, so the
/// accumulators fold what the in-order fold folds, NaNs skipped alike.
pub(crate) fn keyed_selection(op: &Func, ne: &Func, elem: &Func, head: usize) -> bool {
    let w = 2;
    let Some(last) = elem.params.len().checked_sub(1) else { return false };
    if elem.params[last] != ElemType::I64 {
        return false;
    }
    let key = (0..w).find(|&c| elem.ret.get(head + c).is_some_and(|&r| r as usize == last));
    let Some(key) = key else { return false };
    let value = 1 - key;
    let tys = [op.params.first().copied(), op.params.get(1).copied()];
    let (Some(t0), Some(t1)) = (tys[0], tys[1]) else { return false };
    if op.params != [t0, t1, t0, t1] || op.ret.len() != w || [t0, t1][key] != ElemType::I64 {
        return false;
    }
    if !allowed(&op.body, op, w) {
        return false;
    }
    let reps = representatives([t0, t1][value]);
    // `op` on values `u` and `v` with keys `i` and `j`, both ways round
    let pair = |u: V, v: V, (i, j): (i128, i128)| {
        let mut a = [V::Int(0); 2];
        let mut x = [V::Int(0); 2];
        (a[value], a[key], x[value], x[key]) = (u, V::Int(i), v, V::Int(j));
        Some((a, apply(op, a, x)?, apply(op, x, a)?))
    };
    let keys = [(1i128, 2i128), (2, 1)];
    let commutes = |reps: &[V]| {
        reps.iter().all(|&u| {
            reps.iter().all(|&v| {
                keys.iter().all(|&k| {
                    pair(u, v, k).is_some_and(|(_, l, r)| l.iter().zip(&r).all(|(p, q)| p.same(*q)))
                })
            })
        })
    };
    if commutes(&reps) {
        return true;
    }
    let nan = |v: &V| matches!(v, V::Float(f, _) if f.is_nan());
    let (nans, ordered): (Vec<V>, Vec<V>) = reps.iter().partition(|v| nan(v));
    let skips_nan = ordered.iter().all(|&u| {
        nans.iter().all(|&v| {
            keys.iter()
                .all(|&k| pair(u, v, k).is_some_and(|(a, l, _)| a.iter().zip(&l).all(|(p, q)| p.same(*q))))
        })
    });
    !nans.is_empty() && ordered_constant(ne, value) && skips_nan && commutes(&ordered)
}

/// Whether component `c` of what `ne` returns is a floating-point constant that is not NaN.
fn ordered_constant(ne: &Func, c: usize) -> bool {
    let Some(&r) = ne.ret.get(c) else { return false };
    ne.body.insts.iter().any(|i| match i {
        Inst::Const { dst, value } => *dst == r && value.elem_type().is_float() && !value.as_f64().is_nan(),
        _ => false,
    })
}

/// One value of every way two values of type `t` compare: below, equal (the same bits and,
/// for floats, `-0.0` and `0.0`), above, infinities and NaNs of two payloads.
fn representatives(t: ElemType) -> Vec<V> {
    match t {
        ElemType::Bool => vec![V::Bool(false), V::Bool(true)],
        ElemType::F32 => [f32::NEG_INFINITY, -1.0, -0.0, 0.0, 1.0, f32::INFINITY, f32::NAN, -f32::NAN]
            .iter()
            .map(|&f| V::Float(f64::from(f), u64::from(f.to_bits())))
            .collect(),
        ElemType::F64 => [f64::NEG_INFINITY, -1.0, -0.0, 0.0, 1.0, f64::INFINITY, f64::NAN, -f64::NAN]
            .iter()
            .map(|&f| V::Float(f, f.to_bits()))
            .collect(),
        t => match t.int_range() {
            Some((lo, hi)) => {
                let mut v = vec![lo, lo + 1, 0, 1, hi - 1, hi];
                v.sort_unstable();
                v.dedup();
                v.into_iter().map(V::Int).collect()
            }
            None => Vec::new(),
        },
    }
}

/// Whether every instruction of `b` (nested blocks included) is one [`keyed_selection`]
/// allows, for an operator of `w` components.
fn allowed(b: &Block, f: &Func, w: usize) -> bool {
    let ty = |r: Reg| f.reg_types.get(r as usize).copied();
    let is_bool = |r: Reg| ty(r) == Some(ElemType::Bool);
    let np = 2 * w as Reg;
    // the two sides of one component: parameters `c` and `w + c`
    let sides = |a: Reg, b: Reg| a < np && b < np && a % w as Reg == b % w as Reg;
    b.insts.iter().all(|i| match i {
        Inst::Const { dst, value } => is_bool(*dst) && value.elem_type() == ElemType::Bool,
        Inst::Unary { dst, op: UnOp::Not, a } => is_bool(*dst) && is_bool(*a),
        Inst::Binary { dst, op, a, b } => {
            is_bool(*dst)
                && match op {
                    BinOp::And | BinOp::Or => is_bool(*a) && is_bool(*b),
                    BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => sides(*a, *b),
                    _ => false,
                }
        }
        Inst::Call { dst, f: ScalarFn::IsNan, args } => {
            is_bool(*dst) && matches!(args.as_slice(), [a] if *a < np)
        }
        Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
            is_bool(*cond)
                && if is_bool(*dst) {
                    allowed(then_block, f, w) && allowed(else_block, f, w)
                } else {
                    then_block.insts.is_empty() && else_block.insts.is_empty() && sides(*then_ret, *else_ret)
                }
        }
        _ => false,
    })
}

/// `op(a, x)` on the allowed instructions; `None` where a register is read before it is
/// written or an operand is of the wrong kind.
fn apply(op: &Func, a: [V; 2], x: [V; 2]) -> Option<Vec<V>> {
    let mut regs: Vec<Option<V>> = vec![None; op.reg_types.len()];
    for (k, v) in a.iter().chain(&x).enumerate() {
        *regs.get_mut(k)? = Some(*v);
    }
    run(&op.body, &mut regs)?;
    op.ret.iter().map(|&r| regs.get(r as usize).copied().flatten()).collect()
}

fn run(b: &Block, regs: &mut [Option<V>]) -> Option<()> {
    for i in &b.insts {
        let get = |regs: &[Option<V>], r: Reg| regs.get(r as usize).copied().flatten();
        let (dst, v) = match i {
            Inst::Const { dst, value: eqfuse_ir::value::Scalar::Bool(p) } => (*dst, V::Bool(*p)),
            Inst::Unary { dst, a, .. } => match get(regs, *a)? {
                V::Bool(p) => (*dst, V::Bool(!p)),
                _ => return None,
            },
            Inst::Binary { dst, op, a, b } => (*dst, V::Bool(binary(*op, get(regs, *a)?, get(regs, *b)?)?)),
            Inst::Call { dst, args, .. } => match get(regs, *args.first()?)? {
                V::Float(f, _) => (*dst, V::Bool(f.is_nan())),
                _ => (*dst, V::Bool(false)),
            },
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                let V::Bool(c) = get(regs, *cond)? else { return None };
                let (blk, r) = if c { (then_block, then_ret) } else { (else_block, else_ret) };
                run(blk, regs)?;
                (*dst, get(regs, *r)?)
            }
            _ => return None,
        };
        *regs.get_mut(dst as usize)? = Some(v);
    }
    Some(())
}

/// A comparison (as C compares: NaN unordered, `-0.0 == 0.0`) or a `bool` operator.
fn binary(op: BinOp, a: V, b: V) -> Option<bool> {
    use std::cmp::Ordering;
    let ord = match (a, b) {
        (V::Bool(p), V::Bool(q)) => match op {
            BinOp::And => return Some(p && q),
            BinOp::Or => return Some(p || q),
            _ => Some(p.cmp(&q)),
        },
        (V::Int(p), V::Int(q)) => Some(p.cmp(&q)),
        (V::Float(p, _), V::Float(q, _)) => p.partial_cmp(&q),
        _ => return None,
    };
    Some(match op {
        BinOp::Eq => ord == Some(Ordering::Equal),
        BinOp::Ne => ord != Some(Ordering::Equal),
        BinOp::Lt => ord == Some(Ordering::Less),
        BinOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        BinOp::Gt => ord == Some(Ordering::Greater),
        BinOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
        _ => return None,
    })
}
