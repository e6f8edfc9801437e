//! Index-set splitting of the innermost dimension: a stencil's element function tests the
//! innermost index against the edges (`j == 0`, `j == w - 1`, `j < 2`), so every point
//! takes a branch and no compiler vectorises the loop. Away from the edges those tests
//! have one answer. [`Func::edge_split`] finds them: how many points at each end of the
//! dimension the tests can hold at, and the element function for the points between, with
//! the tests replaced by their answer there. An executor runs the edges with the function
//! as it is and the interior with the specialised one, so the interior's loop is
//! straight-line code (the row's own tests, the same for the whole row, are hoisted by the
//! compiler).

use super::{Arg, Block, Func, Inst, Reg};
use crate::ast::BinOp;
use crate::value::Scalar;
use std::collections::HashMap;

/// The widest edge split: tests against an offset from an end beyond this are left alone.
const MAX_EDGE: i64 = 8;

/// The result of [`Func::edge_split`].
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeSplit {
    /// How many points at the start of the dimension run the function as it is.
    pub head: usize,
    /// How many points at the end run it as it is.
    pub tail: usize,
    /// The function for the points `[head, len - tail)`: every edge test replaced by its
    /// answer there.
    pub interior: Func,
}

/// What a register is, as far as an edge test needs: the innermost index, a constant, or
/// the innermost extent minus a constant.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Term {
    Index,
    Const(i64),
    /// `len - k`.
    FromEnd(i64),
}

impl Func {
    /// The edge split of this element function over a space whose innermost dimension is
    /// parameter `inner` with extent `len`: `None` when it tests the innermost index against
    /// no edge.
    ///
    /// ```
    /// use eqfuse_ir::plan::fixtures::edge_stencil;
    /// let (elem, len) = edge_stencil();
    /// let s = elem.edge_split(1, len).unwrap();
    /// assert_eq!((s.head, s.tail), (1, 1));
    /// ```
    pub fn edge_split(&self, inner: usize, len: Arg) -> Option<EdgeSplit> {
        let defs = definitions(&self.body);
        let term = |r: Reg| -> Option<Term> {
            if r as usize == inner && inner < self.params.len() {
                return Some(Term::Index);
            }
            match defs.get(&r)? {
                Inst::Const { value: Scalar::I64(k), .. } => Some(Term::Const(*k)),
                Inst::Binary { op: BinOp::Sub, a, b, .. } => {
                    let k = match defs.get(b)? {
                        Inst::Const { value: Scalar::I64(k), .. } => *k,
                        _ => return None,
                    };
                    let is_len = match (defs.get(a)?, len) {
                        (Inst::Load { value, .. }, Arg::Value(v)) => *value == v,
                        _ => false,
                    };
                    is_len.then_some(Term::FromEnd(k))
                }
                _ => None,
            }
        };
        let (mut head, mut tail) = (0i64, 0i64);
        let mut answers: HashMap<Reg, bool> = HashMap::new();
        self.body.visit(&mut |i| {
            let Inst::Binary { dst, op, a, b } = i else { return };
            let (Some(ta), Some(tb)) = (term(*a), term(*b)) else { return };
            // written `index op other`
            let (op, other) = match (ta, tb) {
                (Term::Index, t) if t != Term::Index => (*op, t),
                (t, Term::Index) if t != Term::Index => (flip(*op), t),
                _ => return,
            };
            if let Some((h, t, answer)) = edge_test(op, other) {
                head = head.max(h);
                tail = tail.max(t);
                answers.insert(*dst, answer);
            }
        });
        if answers.is_empty() {
            return None;
        }
        let mut interior = self.clone();
        replace(&mut interior.body, &answers);
        Some(EdgeSplit { head: head as usize, tail: tail as usize, interior })
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
        Term::FromEnd(k) if (1..=MAX_EDGE).contains(&k) => match op {
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
    let mut stack: Vec<&mut Block> = vec![b];
    while let Some(b) = stack.pop() {
        for i in &mut b.insts {
            if let Inst::Binary { dst, .. } = i {
                if let Some(&v) = answers.get(dst) {
                    *i = Inst::Const { dst: *dst, value: Scalar::Bool(v) };
                    continue;
                }
            }
            match i {
                Inst::If { then_block, else_block, .. } => {
                    stack.push(then_block);
                    stack.push(else_block);
                }
                Inst::Loop { body, .. } => stack.push(body),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::plan::fixtures::edge_stencil;

    #[test]
    fn a_stencils_edge_tests_are_answered_in_the_interior() {
        let (elem, len) = edge_stencil();
        let s = elem.edge_split(1, len).unwrap();
        assert_eq!((s.head, s.tail), (1, 1));
        // the tests of j are constants now; the tests of i are not
        let mut consts = 0;
        s.interior.body.visit(&mut |i| {
            if matches!(i, Inst::Const { value: Scalar::Bool(false), .. }) {
                consts += 1;
            }
        });
        assert_eq!(consts, 2);
        // against the outer index nothing is split
        assert_eq!(elem.edge_split(5, len), None);
    }

    #[test]
    fn each_test_says_where_it_may_hold() {
        // j < 3 holds at 0, 1, 2; j >= len - 2 at the last two
        assert_eq!(edge_test(BinOp::Lt, Term::Const(3)), Some((3, 0, false)));
        assert_eq!(edge_test(BinOp::Ge, Term::FromEnd(2)), Some((0, 2, false)));
        assert_eq!(edge_test(BinOp::Ne, Term::FromEnd(1)), Some((0, 1, true)));
        assert_eq!(edge_test(BinOp::Eq, Term::Const(MAX_EDGE)), None);
        assert_eq!(edge_test(BinOp::Add, Term::Const(0)), None);
    }
}
