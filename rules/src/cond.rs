//! Conditions on the constants and types of matched classes, for `rewrite!(... if ...)`.

use crate::EG;
use egg::{Id, Subst, Var};
use eqfuse_egraph::{ArrayLang, Facts, Literal};
use eqfuse_ir::types::ElemType;

/// A condition on the class bound to one variable.
pub struct OnClass {
    var: Var,
    test: fn(&EG, Id) -> bool,
}

impl egg::Condition<ArrayLang, Facts> for OnClass {
    fn check(&self, egraph: &mut EG, _eclass: Id, subst: &Subst) -> bool {
        subst.get(self.var).is_some_and(|id| (self.test)(egraph, *id))
    }

    fn vars(&self) -> Vec<Var> {
        vec![self.var]
    }
}

/// `test` on the class bound to `var` (a pattern variable such as `"?c"`).
pub fn on(var: &str, test: fn(&EG, Id) -> bool) -> OnClass {
    match var.parse() {
        Ok(var) => OnClass { var, test },
        Err(e) => unreachable!("bad pattern variable {var}: {e}"),
    }
}

fn lit(eg: &EG, id: Id) -> Option<Literal> {
    eg[id].data.constant
}

fn float(l: Literal) -> Option<f64> {
    match l {
        Literal::F32(b) => Some(f64::from(f32::from_bits(b))),
        Literal::F64(b) => Some(f64::from_bits(b)),
        _ => None,
    }
}

/// The constant 1 (any numeric type).
pub fn is_one(eg: &EG, id: Id) -> bool {
    match lit(eg, id) {
        Some(l) if l.elem_type().is_int() => l.to_scalar().as_i128() == Some(1),
        Some(l) => float(l) == Some(1.0),
        None => false,
    }
}

/// The constant 2 (float).
pub fn is_float_two(eg: &EG, id: Id) -> bool {
    lit(eg, id).and_then(float) == Some(2.0)
}

/// The integer constant 0.
pub fn is_int_zero(eg: &EG, id: Id) -> bool {
    lit(eg, id).is_some_and(|l| l.elem_type().is_int() && l.to_scalar().as_i128() == Some(0))
}

/// A count constant `<= 0` (an `iterate` that runs no trip; counts are `i64`).
pub fn is_nonpositive(eg: &EG, id: Id) -> bool {
    crate::build::const_i64(eg, id).is_some_and(|n| n <= 0)
}

/// A count constant `>= 1` (an `iterate` that runs at least one trip).
pub fn is_positive(eg: &EG, id: Id) -> bool {
    crate::build::const_i64(eg, id).is_some_and(|n| n >= 1)
}

/// The float constant `-0.0`.
pub fn is_neg_zero(eg: &EG, id: Id) -> bool {
    lit(eg, id).and_then(float).is_some_and(|v| v == 0.0 && v.is_sign_negative())
}

/// The float constant `+0.0` or the integer 0.
pub fn is_pos_zero(eg: &EG, id: Id) -> bool {
    is_int_zero(eg, id) || lit(eg, id).and_then(float).is_some_and(|v| v == 0.0 && v.is_sign_positive())
}

/// `+inf`, or the largest value of an integer type.
pub fn is_top(eg: &EG, id: Id) -> bool {
    match lit(eg, id) {
        Some(l) if l.elem_type().is_int() => int_bound(l, |(_, hi)| hi),
        Some(l) => float(l) == Some(f64::INFINITY),
        None => false,
    }
}

/// `-inf`, or the smallest value of an integer type.
pub fn is_bottom(eg: &EG, id: Id) -> bool {
    match lit(eg, id) {
        Some(l) if l.elem_type().is_int() => int_bound(l, |(lo, _)| lo),
        Some(l) => float(l) == Some(f64::NEG_INFINITY),
        None => false,
    }
}

/// `true`.
pub fn is_true(eg: &EG, id: Id) -> bool {
    lit(eg, id) == Some(Literal::Bool(true))
}

/// `false`.
pub fn is_false(eg: &EG, id: Id) -> bool {
    lit(eg, id) == Some(Literal::Bool(false))
}

/// An integer-typed class.
pub fn is_int(eg: &EG, id: Id) -> bool {
    eg[id].data.kind.elem().is_some_and(ElemType::is_int)
}

/// Whether integer literal `l` is the bound of its type that `which` picks of the range.
fn int_bound(l: Literal, which: fn((i128, i128)) -> i128) -> bool {
    l.elem_type().int_range().is_some_and(|r| l.to_scalar().as_i128() == Some(which(r)))
}

/// A float-typed class.
pub fn is_float(eg: &EG, id: Id) -> bool {
    matches!(eg[id].data.kind.elem(), Some(ElemType::F32 | ElemType::F64))
}

/// A float constant `±2^k` whose reciprocal is exact and normal: `x / c == x * (1/c)` bit
/// for bit.
pub fn is_exact_reciprocal(eg: &EG, id: Id) -> bool {
    match lit(eg, id) {
        Some(Literal::F32(b)) => {
            let v = f32::from_bits(b);
            let r = 1.0 / v;
            v.is_normal() && r.is_normal() && v.abs().to_bits() & 0x007f_ffff == 0
        }
        Some(Literal::F64(b)) => {
            let v = f64::from_bits(b);
            let r = 1.0 / v;
            v.is_normal() && r.is_normal() && v.abs().to_bits() & 0x000f_ffff_ffff_ffff == 0
        }
        _ => false,
    }
}
