//! Index-set splitting: a stencil's element function tests its indices against the edges
//! of the space (`i == 0`, `j == w - 1`, `j < 2`), so every point takes a branch and no
//! compiler vectorises the loop. Away from the edges those tests have one answer.
//! [`Func::edge_split`] finds them: per dimension, how many points at each end the tests
//! can hold at, and the element function for the points inside those margins, with the
//! tests replaced by their answer there. An executor runs the margins with the function as
//! it is and the interior with the specialised one, whose loop is straight-line code; and
//! a read there at an index within the margins of a parameter (`t[i - 1, j + 1]`) is in
//! bounds wherever a read at the parameter itself is.

use super::{Arg, Block, Func, Inst, Reg, ValueId};
use crate::ast::BinOp;
use crate::interp::scalar::ScalarFn;
use crate::value::Scalar;
use std::collections::HashMap;

/// The widest edge split: tests against an offset from an end beyond this are left alone.
const MAX_EDGE: i64 = 8;

/// The result of [`Func::edge_split`].
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeSplit {
    /// Per dimension of the space: how many points at its start and at its end the element
    /// function's edge tests may hold at (`(0, 0)`: none tested).
    pub margins: Vec<(usize, usize)>,
    /// The function for the points inside every dimension's margins: every edge test
    /// replaced by its answer there.
    pub interior: Func,
}

/// What a register is, as far as an edge test needs: a parameter (an index of the space),
/// a constant, or a host value minus a constant (an extent minus `k`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Term {
    Index(usize),
    Const(i64),
    /// `value - k`.
    FromEnd(ValueId, i64),
}

impl Func {
    /// The edge split of this element function over `space` (its parameters are the
    /// space's indices): `None` when it tests no index against an edge.
    ///
    /// ```
    /// use eqfuse_ir::plan::fixtures::edge_stencil;
    /// let (elem, space) = edge_stencil();
    /// let s = elem.edge_split(&space).unwrap();
    /// assert_eq!(s.margins, [(1, 0), (1, 1)]);
    /// ```
    pub fn edge_split(&self, space: &[Arg]) -> Option<EdgeSplit> {
        let defs = self.body.definitions();
        let dims = space.len().min(self.params.len());
        let term = |r: Reg| -> Option<Term> {
            if (r as usize) < dims {
                return Some(Term::Index(r as usize));
            }
            match defs.get(&r)? {
                Inst::Const { value: Scalar::I64(k), .. } => Some(Term::Const(*k)),
                Inst::Binary { op: BinOp::Sub, a, b, .. } => match (defs.get(a)?, defs.get(b)?) {
                    (Inst::Load { value, .. }, Inst::Const { value: Scalar::I64(k), .. }) => {
                        Some(Term::FromEnd(*value, *k))
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let mut margins = vec![(0i64, 0i64); dims];
        let mut answers: HashMap<Reg, bool> = HashMap::new();
        self.body.visit(&mut |i| {
            let Inst::Binary { dst, op, a, b } = i else { return };
            let (Some(ta), Some(tb)) = (term(*a), term(*b)) else { return };
            // written `index op other`
            let (d, op, other) = match (ta, tb) {
                (Term::Index(d), t) if !matches!(t, Term::Index(_)) => (d, *op, t),
                (t, Term::Index(d)) if !matches!(t, Term::Index(_)) => (d, flip(*op), t),
                _ => return,
            };
            // an end is the extent of the index's own dimension
            let other = match other {
                Term::FromEnd(v, _) if space[d] != Arg::Value(v) => return,
                t => t,
            };
            if let Some((h, t, answer)) = edge_test(op, other) {
                margins[d] = (margins[d].0.max(h), margins[d].1.max(t));
                answers.insert(*dst, answer);
            }
        });
        // a clamp of an index moved by a constant into its dimension (`clamp (j + 1) 0
        // (w - 1)`) and a wrap-around (`(j + w - 1) % w`) are the index moved, away from
        // the edges: no answer to replace, but the margins let the emitter drop them there
        // (`codegen/src/scalar/range.rs`)
        let mut clamps = false;
        self.body.visit(&mut |i| {
            if let Some((d, h, t)) = moved_edge(i, &defs, dims, space) {
                margins[d] = (margins[d].0.max(h), margins[d].1.max(t));
                clamps = true;
            }
        });
        if answers.is_empty() && !clamps {
            return None;
        }
        let mut interior = self.clone();
        replace(&mut interior.body, &answers);
        let margins = margins.into_iter().map(|(h, t)| (h as usize, t as usize)).collect();
        Some(EdgeSplit { margins, interior })
    }
}

/// `index + extent + c` as far as [`moved_edge`] needs: the index (if any), the value of
/// the extent added (if any), and the constant.
type Moved = (Option<usize>, Option<ValueId>, i64);

/// Register `r` as a sum of at most one index, one loaded value and constants, following
/// `+` and `-` of constants at most `depth` definitions deep.
fn moved(r: Reg, defs: &HashMap<Reg, &Inst>, dims: usize, depth: usize) -> Option<Moved> {
    if (r as usize) < dims {
        return Some((Some(r as usize), None, 0));
    }
    match defs.get(&r)? {
        Inst::Const { value: Scalar::I64(k), .. } => Some((None, None, *k)),
        Inst::Load { value, .. } => Some((None, Some(*value), 0)),
        Inst::Binary { op: op @ (BinOp::Add | BinOp::Sub), a, b, .. } if depth > 0 => {
            let (x, y) = (moved(*a, defs, dims, depth - 1)?, moved(*b, defs, dims, depth - 1)?);
            if *op == BinOp::Sub {
                // only a constant is subtracted
                return matches!(y, (None, None, _)).then_some((x.0, x.1, x.2.checked_sub(y.2)?));
            }
            let one = |p: Option<usize>, q: Option<usize>| {
                if p.is_some() && q.is_some() {
                    None
                } else {
                    Some(p.or(q))
                }
            };
            let ext = if x.1.is_some() && y.1.is_some() { return None } else { x.1.or(y.1) };
            Some((one(x.0, y.0)?, ext, x.2.checked_add(y.2)?))
        }
        _ => None,
    }
}

/// For `clamp (p + c) 0 (extent_p - 1)`, `max (p + c) 0`, `min (p + c) (extent_p - 1)`
/// and `(p + c) % extent_p` or `(p + extent_p + c) % extent_p` (`p` an index, `c` a
/// constant within [`MAX_EDGE`]): the dimension `p` and the points at its start and its end
/// where the result may not be `p + c`.
fn moved_edge(i: &Inst, defs: &HashMap<Reg, &Inst>, dims: usize, space: &[Arg]) -> Option<(usize, i64, i64)> {
    let konst = |r: &Reg| match defs.get(r) {
        Some(Inst::Const { value: Scalar::I64(k), .. }) => Some(*k),
        _ => None,
    };
    let (d, c) = match i {
        Inst::Call { f: ScalarFn::Clamp, args, .. } => {
            let [x, lo, hi] = args.as_slice() else { return None };
            let (Some(d), None, c) = moved(*x, defs, dims, 4)? else { return None };
            let end = match moved(*hi, defs, dims, 2)? {
                (None, Some(v), -1) => v,
                _ => return None,
            };
            (konst(lo)? == 0 && space.get(d) == Some(&Arg::Value(end))).then_some((d, c))?
        }
        // `max (p + c) 0` (either order), `c < 0`: a clamp at the start (also around a
        // clamp at the end, `max (min (p + c) (extent_p - 1)) 0`)
        Inst::Call { f: ScalarFn::Max, args, .. } => {
            let (x, zero) = at_zero(args, &konst)?;
            let x = match defs.get(&x) {
                Some(Inst::Call { f: ScalarFn::Min, args, .. }) => {
                    at_end(args, defs, dims).map_or(x, |e| e.0)
                }
                _ => x,
            };
            let (Some(d), None, c) = moved(x, defs, dims, 4)? else { return None };
            (konst(&zero)? == 0 && c < 0).then_some((d, c))?
        }
        // `min (p + c) (extent_p - 1)` (either order), `c > 0`: a clamp at the end (also
        // around a clamp at the start, `min (max (p + c) 0) (extent_p - 1)`)
        Inst::Call { f: ScalarFn::Min, args, .. } => {
            let (x, v) = at_end(args, defs, dims)?;
            let x = match defs.get(&x) {
                Some(Inst::Call { f: ScalarFn::Max, args, .. }) => at_zero(args, &konst).map_or(x, |z| z.0),
                _ => x,
            };
            let (Some(d), None, c) = moved(x, defs, dims, 4)? else { return None };
            (c > 0 && space.get(d) == Some(&Arg::Value(v))).then_some((d, c))?
        }
        Inst::Binary { op: BinOp::Rem, a, b, .. } => {
            let Some(Inst::Load { value: n, .. }) = defs.get(b) else { return None };
            let (Some(d), ext, c) = moved(*a, defs, dims, 4)? else { return None };
            (ext.is_none_or(|v| v == *n) && space.get(d) == Some(&Arg::Value(*n))).then_some((d, c))?
        }
        _ => return None,
    };
    (-MAX_EDGE..=MAX_EDGE).contains(&c).then_some((d, (-c).max(0), c.max(0)))
}

/// The arguments of a two-argument `max x 0` (either order): `x` and the zero's register.
fn at_zero(args: &[Reg], konst: &dyn Fn(&Reg) -> Option<i64>) -> Option<(Reg, Reg)> {
    let [x, y] = args else { return None };
    if konst(y) == Some(0) {
        Some((*x, *y))
    } else {
        (konst(x) == Some(0)).then_some((*y, *x))
    }
}

/// The arguments of a two-argument `min x (v - 1)` (either order, `v` a loaded value): `x`
/// and `v`.
fn at_end(args: &[Reg], defs: &HashMap<Reg, &Inst>, dims: usize) -> Option<(Reg, ValueId)> {
    let [x, y] = args else { return None };
    let end = |r: &Reg| match moved(*r, defs, dims, 2) {
        Some((None, Some(v), -1)) => Some(v),
        _ => None,
    };
    match (end(y), end(x)) {
        (Some(v), _) => Some((*x, v)),
        (_, Some(v)) => Some((*y, v)),
        _ => None,
    }
}

/// `a op b` as `b op' a`.
fn flip(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    }
}

/// For the test `index op other`: the points at the start and the end where it may differ
/// from its answer in between, and that answer.
fn edge_test(op: BinOp, other: Term) -> Option<(i64, i64, bool)> {
    match other {
        Term::Const(k) if (0..MAX_EDGE).contains(&k) => match op {
            // j == k, j != k: points 0..=k at the start
            BinOp::Eq => Some((k + 1, 0, false)),
            BinOp::Ne => Some((k + 1, 0, true)),
            // j < k, j <= k, j > k, j >= k
            BinOp::Lt => Some((k, 0, false)),
            BinOp::Le => Some((k + 1, 0, false)),
            BinOp::Gt => Some((k + 1, 0, true)),
            BinOp::Ge => Some((k, 0, true)),
            _ => None,
        },
        Term::FromEnd(_, k) if (1..=MAX_EDGE).contains(&k) => match op {
            // j == len - k: the last k points
            BinOp::Eq => Some((0, k, false)),
            BinOp::Ne => Some((0, k, true)),
            BinOp::Lt => Some((0, k, true)),
            BinOp::Le => Some((0, k, true)),
            BinOp::Gt => Some((0, k, false)),
            BinOp::Ge => Some((0, k, false)),
            _ => None,
        },
        _ => None,
    }
}

/// Every instruction writing a register of `answers` made the constant answer.
fn replace(b: &mut Block, answers: &HashMap<Reg, bool>) {
    b.visit_mut(&mut |i| {
        if let Inst::Binary { dst, .. } = *i {
            if let Some(&v) = answers.get(&dst) {
                *i = Inst::Const { dst, value: Scalar::Bool(v) };
            }
        }
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::fixtures::edge_stencil;

    #[test]
    fn a_stencils_edge_tests_are_answered_in_the_interior() {
        let (elem, space) = edge_stencil();
        let s = elem.edge_split(&space).unwrap();
        assert_eq!(s.margins, [(1, 0), (1, 1)]);
        // the tests of j and of i are constants now
        let mut consts = 0;
        s.interior.body.visit(&mut |i| {
            if matches!(i, Inst::Const { value: Scalar::Bool(false), .. }) {
                consts += 1;
            }
        });
        assert_eq!(consts, 3);
        // over a space of one dimension `i` alone is tested; an end that is not its
        // dimension's extent is not an edge
        assert_eq!(elem.edge_split(&space[..1]).unwrap().margins, [(1, 0)]);
        assert_eq!(elem.edge_split(&[space[1], space[0]]).unwrap().margins, [(1, 0), (1, 0)]);
    }

    #[test]
    fn a_clamped_or_wrapped_index_has_margins() {
        // clamp (i + 2) 0 (n - 1) over [n]: the last two points; clamp (i - 1): the first
        let body = |c: i64, end: Reg| Block {
            insts: vec![
                Inst::Const { dst: 1, value: Scalar::I64(c) },
                Inst::Binary { dst: 2, op: BinOp::Add, a: 0, b: 1 },
                Inst::Const { dst: 3, value: Scalar::I64(0) },
                Inst::Load { dst: 4, value: 7 },
                Inst::Const { dst: 5, value: Scalar::I64(1) },
                Inst::Binary { dst: 6, op: BinOp::Sub, a: end, b: 5 },
                Inst::Call { dst: 8, f: ScalarFn::Clamp, args: vec![2, 3, 6] },
            ],
        };
        let func = |b: Block| Func {
            params: vec![crate::types::ElemType::I64],
            reg_types: vec![crate::types::ElemType::I64; 9],
            body: b,
            ret: vec![8],
            spans: vec![],
        };
        let space = [Arg::Value(7)];
        assert_eq!(func(body(2, 4)).edge_split(&space).unwrap().margins, [(0, 2)]);
        assert_eq!(func(body(-1, 4)).edge_split(&space).unwrap().margins, [(1, 0)]);
        // clamped to an end that is not the extent's: no edge
        assert!(func(body(2, 1)).edge_split(&space).is_none());
        // (i + n - 1) % n: the first point
        let wrap = Block {
            insts: vec![
                Inst::Load { dst: 1, value: 7 },
                Inst::Binary { dst: 2, op: BinOp::Add, a: 0, b: 1 },
                Inst::Const { dst: 3, value: Scalar::I64(1) },
                Inst::Binary { dst: 4, op: BinOp::Sub, a: 2, b: 3 },
                Inst::Binary { dst: 8, op: BinOp::Rem, a: 4, b: 1 },
            ],
        };
        assert_eq!(func(wrap).edge_split(&space).unwrap().margins, [(1, 0)]);
        // max (i - 2) 0: the first two points; min (i + 1) (n - 1): the last one
        let one_sided = |f: ScalarFn, c: i64, bound: Vec<Inst>, other: Reg| Block {
            insts: [
                vec![
                    Inst::Const { dst: 1, value: Scalar::I64(c) },
                    Inst::Binary { dst: 2, op: BinOp::Add, a: 0, b: 1 },
                ],
                bound,
                vec![Inst::Call { dst: 8, f, args: vec![other, 2] }],
            ]
            .concat(),
        };
        let zero = vec![Inst::Const { dst: 3, value: Scalar::I64(0) }];
        let end = vec![
            Inst::Load { dst: 4, value: 7 },
            Inst::Const { dst: 5, value: Scalar::I64(1) },
            Inst::Binary { dst: 6, op: BinOp::Sub, a: 4, b: 5 },
        ];
        assert_eq!(
            func(one_sided(ScalarFn::Max, -2, zero.clone(), 3)).edge_split(&space).unwrap().margins,
            [(2, 0)]
        );
        assert_eq!(
            func(one_sided(ScalarFn::Min, 1, end.clone(), 6)).edge_split(&space).unwrap().margins,
            [(0, 1)]
        );
        // the wrong side: max (i + 1) 0, min (i - 1) (n - 1) are no edges
        assert!(func(one_sided(ScalarFn::Max, 1, zero, 3)).edge_split(&space).is_none());
        assert!(func(one_sided(ScalarFn::Min, -1, end, 6)).edge_split(&space).is_none());
    }

    #[test]
    fn each_test_says_where_it_may_hold() {
        // j < 3 holds at 0, 1, 2; j >= len - 2 at the last two
        assert_eq!(edge_test(BinOp::Lt, Term::Const(3)), Some((3, 0, false)));
        assert_eq!(edge_test(BinOp::Ge, Term::FromEnd(0, 2)), Some((0, 2, false)));
        assert_eq!(edge_test(BinOp::Ne, Term::FromEnd(0, 1)), Some((0, 1, true)));
        assert_eq!(edge_test(BinOp::Eq, Term::Const(MAX_EDGE)), None);
        assert_eq!(edge_test(BinOp::Add, Term::Const(0)), None);
    }
}
