//! Integer semantics of all eight integer types (`i8 i16 i32 i64 u8 u16 u32 u64`), as
//! docs/language-reference.md "Scalar operations" defines them: `+ - *` and unary `-` wrap;
//! `/` truncates toward zero and `%` takes the dividend's sign, with `MIN / -1 = MIN`,
//! `MIN % -1 = 0` and `E-DIV-ZERO` on a zero divisor; unsigned `/ % < >>` are unsigned;
//! `& | ^`; shifts take their amount modulo the width (`a << (b & (w - 1))`, negative amounts
//! too), `>>` is arithmetic on signed types and logical on unsigned ones; `!` is the bitwise
//! complement.

use super::fail::internal;
use crate::ast::{BinOp, UnOp};
use crate::error::{Error, Result, Span};
use crate::value::Scalar;

/// The operations one integer type supports, each with the language's wrapping meaning.
trait Int: Copy + PartialOrd + std::fmt::Display {
    /// Zero of the type.
    const ZERO: Self;
    /// The type's name, for messages.
    const NAME: &'static str;
    /// Wraps a value of the type as a [`Scalar`].
    fn wrap(self) -> Scalar;
    /// Wrapping `+`.
    fn add(self, o: Self) -> Self;
    /// Wrapping `-`.
    fn sub(self, o: Self) -> Self;
    /// Wrapping `*`.
    fn mul(self, o: Self) -> Self;
    /// Wrapping `/` (the divisor is not zero).
    fn div(self, o: Self) -> Self;
    /// Wrapping `%` (the divisor is not zero).
    fn rem(self, o: Self) -> Self;
    /// `&`
    fn and(self, o: Self) -> Self;
    /// `|`
    fn or(self, o: Self) -> Self;
    /// `^`
    fn xor(self, o: Self) -> Self;
    /// `<<` with the amount masked to the width.
    fn shl(self, o: Self) -> Self;
    /// `>>` with the amount masked to the width (arithmetic when signed).
    fn shr(self, o: Self) -> Self;
    /// Wrapping unary `-`.
    fn neg(self) -> Self;
    /// Bitwise complement.
    fn not(self) -> Self;
}

macro_rules! impl_int {
    ($t:ty, $variant:ident) => {
        impl Int for $t {
            const ZERO: Self = 0;
            const NAME: &'static str = stringify!($t);
            fn wrap(self) -> Scalar {
                Scalar::$variant(self)
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Self {
                self.wrapping_div(o)
            }
            fn rem(self, o: Self) -> Self {
                self.wrapping_rem(o)
            }
            fn and(self, o: Self) -> Self {
                self & o
            }
            fn or(self, o: Self) -> Self {
                self | o
            }
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
            // `wrapping_shl`/`wrapping_shr` mask the amount to the width; `o as u32` keeps
            // the low bits of a negative amount, so it is masked as two's complement.
            fn shl(self, o: Self) -> Self {
                self.wrapping_shl(o as u32)
            }
            fn shr(self, o: Self) -> Self {
                self.wrapping_shr(o as u32)
            }
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            fn not(self) -> Self {
                !self
            }
        }
    };
}

impl_int!(i8, I8);
impl_int!(i16, I16);
impl_int!(i32, I32);
impl_int!(i64, I64);
impl_int!(u8, U8);
impl_int!(u16, U16);
impl_int!(u32, U32);
impl_int!(u64, U64);

/// `x op y` on one integer type.
fn int_binary<T: Int>(op: BinOp, x: T, y: T, span: Span) -> Result<Scalar> {
    let cmp = |r: bool| Ok(Scalar::Bool(r));
    let v = match op {
        BinOp::Eq => return cmp(x == y),
        BinOp::Ne => return cmp(x != y),
        BinOp::Lt => return cmp(x < y),
        BinOp::Le => return cmp(x <= y),
        BinOp::Gt => return cmp(x > y),
        BinOp::Ge => return cmp(x >= y),
        BinOp::Add => x.add(y),
        BinOp::Sub => x.sub(y),
        BinOp::Mul => x.mul(y),
        BinOp::Div | BinOp::Rem if y == T::ZERO => {
            let what = if op == BinOp::Div { "division" } else { "remainder" };
            return Err(Error::div_zero(
                span,
                format!("integer {what} by zero: `{x} {} 0` on {}", op.symbol(), T::NAME),
            ));
        }
        BinOp::Div => x.div(y),
        BinOp::Rem => x.rem(y),
        BinOp::BitAnd => x.and(y),
        BinOp::BitOr => x.or(y),
        BinOp::BitXor => x.xor(y),
        BinOp::Shl => x.shl(y),
        BinOp::Shr => x.shr(y),
        BinOp::And | BinOp::Or => {
            return Err(internal(span, format!("`{}` on {}", op.symbol(), T::NAME)));
        }
    };
    Ok(v.wrap())
}

/// `a op b` when `a` and `b` are integers of one type; `None` when they are not.
pub(crate) fn binary_int(op: BinOp, a: Scalar, b: Scalar, span: Span) -> Option<Result<Scalar>> {
    Some(match (a, b) {
        (Scalar::I8(x), Scalar::I8(y)) => int_binary(op, x, y, span),
        (Scalar::I16(x), Scalar::I16(y)) => int_binary(op, x, y, span),
        (Scalar::I32(x), Scalar::I32(y)) => int_binary(op, x, y, span),
        (Scalar::I64(x), Scalar::I64(y)) => int_binary(op, x, y, span),
        (Scalar::U8(x), Scalar::U8(y)) => int_binary(op, x, y, span),
        (Scalar::U16(x), Scalar::U16(y)) => int_binary(op, x, y, span),
        (Scalar::U32(x), Scalar::U32(y)) => int_binary(op, x, y, span),
        (Scalar::U64(x), Scalar::U64(y)) => int_binary(op, x, y, span),
        _ => return None,
    })
}

/// `-a` (wrapping; `0 - a` on unsigned types) or `!a` (the complement) when `a` is an
/// integer; `None` when it is not.
pub(crate) fn unary_int(op: UnOp, a: Scalar) -> Option<Scalar> {
    fn go<T: Int>(op: UnOp, x: T) -> Scalar {
        match op {
            UnOp::Neg => x.neg().wrap(),
            UnOp::Not => x.not().wrap(),
        }
    }
    Some(match a {
        Scalar::I8(x) => go(op, x),
        Scalar::I16(x) => go(op, x),
        Scalar::I32(x) => go(op, x),
        Scalar::I64(x) => go(op, x),
        Scalar::U8(x) => go(op, x),
        Scalar::U16(x) => go(op, x),
        Scalar::U32(x) => go(op, x),
        Scalar::U64(x) => go(op, x),
        _ => return None,
    })
}

/// `min a b` (`max` when `max`) of two integers of one type; `None` when they are not.
pub(crate) fn min_max_int(a: Scalar, b: Scalar, max: bool) -> Option<Scalar> {
    fn go<T: Int>(x: T, y: T, max: bool) -> Scalar {
        let take_y = if max { y > x } else { y < x };
        if take_y {
            y.wrap()
        } else {
            x.wrap()
        }
    }
    Some(match (a, b) {
        (Scalar::I8(x), Scalar::I8(y)) => go(x, y, max),
        (Scalar::I16(x), Scalar::I16(y)) => go(x, y, max),
        (Scalar::I32(x), Scalar::I32(y)) => go(x, y, max),
        (Scalar::I64(x), Scalar::I64(y)) => go(x, y, max),
        (Scalar::U8(x), Scalar::U8(y)) => go(x, y, max),
        (Scalar::U16(x), Scalar::U16(y)) => go(x, y, max),
        (Scalar::U32(x), Scalar::U32(y)) => go(x, y, max),
        (Scalar::U64(x), Scalar::U64(y)) => go(x, y, max),
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn sp() -> Span {
        Span::default()
    }

    fn bin(op: BinOp, a: Scalar, b: Scalar) -> Scalar {
        crate::interp::scalar::binary(op, a, b, sp()).unwrap()
    }

    #[test]
    fn wrapping_arithmetic_on_every_width() {
        assert_eq!(bin(BinOp::Add, Scalar::I8(127), Scalar::I8(1)), Scalar::I8(-128));
        assert_eq!(bin(BinOp::Sub, Scalar::U8(0), Scalar::U8(1)), Scalar::U8(255));
        assert_eq!(bin(BinOp::Mul, Scalar::I16(300), Scalar::I16(300)), Scalar::I16(24464));
        assert_eq!(bin(BinOp::Mul, Scalar::U16(300), Scalar::U16(300)), Scalar::U16(24464));
        assert_eq!(bin(BinOp::Add, Scalar::U32(u32::MAX), Scalar::U32(2)), Scalar::U32(1));
        assert_eq!(bin(BinOp::Mul, Scalar::U64(u64::MAX), Scalar::U64(3)), Scalar::U64(u64::MAX - 2));
        assert_eq!(bin(BinOp::Div, Scalar::I8(-128), Scalar::I8(-1)), Scalar::I8(-128));
        assert_eq!(bin(BinOp::Rem, Scalar::I8(-128), Scalar::I8(-1)), Scalar::I8(0));
        assert_eq!(bin(BinOp::Div, Scalar::I16(-7), Scalar::I16(2)), Scalar::I16(-3));
        assert_eq!(bin(BinOp::Rem, Scalar::I16(-7), Scalar::I16(2)), Scalar::I16(-1));
        // unsigned division and comparison are unsigned
        assert_eq!(bin(BinOp::Div, Scalar::U32(0xFFFF_FFFF), Scalar::U32(3)), Scalar::U32(0x5555_5555));
        assert_eq!(bin(BinOp::Gt, Scalar::U32(0x8000_0000), Scalar::U32(0x7FFF_FFFF)), Scalar::Bool(true));
        assert_eq!(bin(BinOp::Rem, Scalar::U64(u64::MAX), Scalar::U64(1000)), Scalar::U64(615));
    }

    #[test]
    fn division_by_zero_on_every_width() {
        for (a, z) in [
            (Scalar::U8(1), Scalar::U8(0)),
            (Scalar::I8(1), Scalar::I8(0)),
            (Scalar::U64(1), Scalar::U64(0)),
            (Scalar::I16(1), Scalar::I16(0)),
        ] {
            for op in [BinOp::Div, BinOp::Rem] {
                let e = crate::interp::scalar::binary(op, a, z, sp()).unwrap_err();
                assert_eq!(e.code, crate::error::Code::DivZero, "{op:?} {a:?}");
            }
        }
    }

    #[test]
    fn bitwise_and_shifts() {
        assert_eq!(bin(BinOp::BitAnd, Scalar::U8(0xF0), Scalar::U8(0x3C)), Scalar::U8(0x30));
        assert_eq!(bin(BinOp::BitOr, Scalar::I16(0x0F), Scalar::I16(0x30)), Scalar::I16(0x3F));
        assert_eq!(bin(BinOp::BitXor, Scalar::U64(u64::MAX), Scalar::U64(1)), Scalar::U64(u64::MAX - 1));
        // amounts masked to the width, negative ones too
        assert_eq!(bin(BinOp::Shl, Scalar::U32(1), Scalar::U32(33)), Scalar::U32(2));
        assert_eq!(bin(BinOp::Shl, Scalar::U8(1), Scalar::U8(9)), Scalar::U8(2));
        assert_eq!(bin(BinOp::Shl, Scalar::I32(1), Scalar::I32(-1)), Scalar::I32(i32::MIN));
        assert_eq!(bin(BinOp::Shl, Scalar::I8(1), Scalar::I8(-1)), Scalar::I8(i8::MIN));
        assert_eq!(bin(BinOp::Shr, Scalar::I32(-16), Scalar::I32(35)), Scalar::I32(-2));
        // arithmetic on signed, logical on unsigned
        assert_eq!(bin(BinOp::Shr, Scalar::I8(-128), Scalar::I8(7)), Scalar::I8(-1));
        assert_eq!(bin(BinOp::Shr, Scalar::U8(0x80), Scalar::U8(7)), Scalar::U8(1));
        assert_eq!(bin(BinOp::Shr, Scalar::U64(1 << 63), Scalar::U64(60)), Scalar::U64(8));
        assert_eq!(bin(BinOp::Shr, Scalar::I64(i64::MIN), Scalar::I64(127)), Scalar::I64(-1));
    }

    #[test]
    fn unary_min_max_and_abs() {
        let un = |op, a| crate::interp::scalar::unary(op, a, sp()).unwrap();
        assert_eq!(un(UnOp::Neg, Scalar::I8(-128)), Scalar::I8(-128));
        assert_eq!(un(UnOp::Neg, Scalar::U16(1)), Scalar::U16(u16::MAX));
        assert_eq!(un(UnOp::Not, Scalar::U8(0x0F)), Scalar::U8(0xF0));
        assert_eq!(un(UnOp::Not, Scalar::I32(0)), Scalar::I32(-1));
        let mm = |f: fn(Scalar, Scalar, Span) -> Result<Scalar>, a, b| f(a, b, sp()).unwrap();
        use crate::interp::scalar::{max, min};
        assert_eq!(mm(min, Scalar::U32(0x8000_0000), Scalar::U32(1)), Scalar::U32(1));
        assert_eq!(mm(max, Scalar::U32(0x8000_0000), Scalar::U32(1)), Scalar::U32(0x8000_0000));
        assert_eq!(mm(min, Scalar::I8(-3), Scalar::I8(2)), Scalar::I8(-3));
        assert_eq!(mm(max, Scalar::U64(u64::MAX), Scalar::U64(0)), Scalar::U64(u64::MAX));
        let abs = |a| super::super::scalar::ScalarFn::Abs.apply(&[a], sp()).unwrap();
        assert_eq!(abs(Scalar::I16(i16::MIN)), Scalar::I16(i16::MIN));
        assert_eq!(abs(Scalar::I8(-5)), Scalar::I8(5));
    }
}
