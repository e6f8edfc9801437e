//! Operators the runtime recognises: commutative ones it may apply in any order (and, for
//! a permute, with a hardware atomic).

use super::{Func, Inst, Reg};
use crate::ast::BinOp;
use crate::interp::scalar::ScalarFn;

/// A binary operator the runtime knows to be commutative (and, for permute, to have a
/// hardware atomic for some types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnownOp {
    /// `a + b`
    Add,
    /// `a * b`
    Mul,
    /// `min a b`
    Min,
    /// `max a b`
    Max,
}

/// Recognises `op(a, b) = a + b` (either order), `a * b`, `min a b`, `max a b`.
pub fn known_op(op: &Func) -> Option<KnownOp> {
    if op.params.len() != 2 || op.ret.len() != 1 {
        return None;
    }
    let [inst] = op.body.insts.as_slice() else { return None };
    let both = |a: Reg, b: Reg| (a, b) == (0, 1) || (a, b) == (1, 0);
    let (dst, k) = match inst {
        Inst::Binary { dst, op: BinOp::Add, a, b } if both(*a, *b) => (*dst, KnownOp::Add),
        Inst::Binary { dst, op: BinOp::Mul, a, b } if both(*a, *b) => (*dst, KnownOp::Mul),
        Inst::Call { dst, f: ScalarFn::Min, args } if args.len() == 2 && both(args[0], args[1]) => {
            (*dst, KnownOp::Min)
        }
        Inst::Call { dst, f: ScalarFn::Max, args } if args.len() == 2 && both(args[0], args[1]) => {
            (*dst, KnownOp::Max)
        }
        _ => return None,
    };
    (op.ret == [dst]).then_some(k)
}
