//! The operators of [`Sc`]: `+ - * / %` with Rust numbers on either side, by value or by
//! reference, and unary `-` (folded into a numeric literal) and `!`.

use super::{binary, node, Sc};
use crate::ast::{BinOp, Expr, ExprKind, Lit, UnOp};

macro_rules! bin_ops {
    ($($trait:ident $method:ident $op:ident;)*) => {$(
        impl<R: Into<Sc>> std::ops::$trait<R> for Sc {
            type Output = Sc;
            fn $method(self, rhs: R) -> Sc {
                Sc::new(binary(BinOp::$op, self.expr, rhs.into().expr))
            }
        }
        impl<R: Into<Sc>> std::ops::$trait<R> for &Sc {
            type Output = Sc;
            fn $method(self, rhs: R) -> Sc {
                Sc::new(binary(BinOp::$op, self.expr.clone(), rhs.into().expr))
            }
        }
        bin_ops!(@lhs $trait $method $op; f64 i64 i32);
    )*};
    (@lhs $trait:ident $method:ident $op:ident; $($t:ty)*) => {$(
        impl std::ops::$trait<Sc> for $t {
            type Output = Sc;
            fn $method(self, rhs: Sc) -> Sc {
                Sc::new(binary(BinOp::$op, Sc::from(self).expr, rhs.expr))
            }
        }
        impl std::ops::$trait<&Sc> for $t {
            type Output = Sc;
            fn $method(self, rhs: &Sc) -> Sc {
                Sc::new(binary(BinOp::$op, Sc::from(self).expr, rhs.expr.clone()))
            }
        }
    )*};
}
bin_ops! {
    Add add Add;
    Sub sub Sub;
    Mul mul Mul;
    Div div Div;
    Rem rem Rem;
}

/// `-e`, folding a non-negative numeric literal into a negative one as the parser does.
fn negate(e: Expr) -> Expr {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) if v >= 0 => node(ExprKind::Lit(Lit::Int(-v))),
        ExprKind::Lit(Lit::Float(v)) if v.is_sign_positive() => node(ExprKind::Lit(Lit::Float(-v))),
        _ => node(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(e) }),
    }
}

impl std::ops::Neg for Sc {
    type Output = Sc;
    fn neg(self) -> Sc {
        Sc::new(negate(self.expr))
    }
}

impl std::ops::Neg for &Sc {
    type Output = Sc;
    fn neg(self) -> Sc {
        Sc::new(negate(self.expr.clone()))
    }
}

impl std::ops::Not for Sc {
    type Output = Sc;
    fn not(self) -> Sc {
        Sc::new(node(ExprKind::Unary { op: UnOp::Not, operand: Box::new(self.expr) }))
    }
}

impl std::ops::Not for &Sc {
    type Output = Sc;
    fn not(self) -> Sc {
        !self.clone()
    }
}
