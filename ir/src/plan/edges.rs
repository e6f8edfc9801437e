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
        let defs = definitions(&self.body);
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
        if answers.is_empty() {
            return None;
        }
        let mut interior = self.clone();
        replace(&mut interior.body, &answers);
        let margins = margins.into_iter().map(|(h, t)| (h as usize, t as usize)).collect();
        Some(EdgeSplit { margins, interior })
    }
}

/// The instruction that writes each register, nested blocks included.
fn definitions(b: &Block) -> HashMap<Reg, &Inst> {
    b.all_insts().into_iter().flat_map(|i| i.dsts().into_iter().map(move |d| (d, i))).collect()
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
    fn each_test_says_where_it_may_hold() {
        // j < 3 holds at 0, 1, 2; j >= len - 2 at the last two
        assert_eq!(edge_test(BinOp::Lt, Term::Const(3)), Some((3, 0, false)));
        assert_eq!(edge_test(BinOp::Ge, Term::FromEnd(0, 2)), Some((0, 2, false)));
        assert_eq!(edge_test(BinOp::Ne, Term::FromEnd(0, 1)), Some((0, 1, true)));
        assert_eq!(edge_test(BinOp::Eq, Term::Const(MAX_EDGE)), None);
        assert_eq!(edge_test(BinOp::Add, Term::Const(0)), None);
    }
}
