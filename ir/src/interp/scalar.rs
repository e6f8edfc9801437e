//! Scalar semantics: the binary and unary operators, the scalar builtins and conversions,
//! exactly as docs/language-reference.md "Scalar operations" defines them.
//!
//! Integers wrap on `+ - *` and unary `-`; `/` truncates toward zero with `MIN / -1 = MIN`
//! and `MIN % -1 = 0`; division by zero is an `E-DIV-ZERO` error. Float arithmetic is the
//! machine's IEEE-754 arithmetic, `f32` computed in `f32`. `min`/`max` on floats give NaN
//! when either operand is NaN.

use crate::ast::{BinOp, UnOp};
use crate::error::{Error, Result, Span};
use crate::types::ElemType;
use crate::value::Scalar;

pub(crate) use super::fail::internal;

/// The scalar builtin functions: everything in docs/language-reference.md's scalar table that takes and
/// returns scalars only (`iterate`, `length` and `size` are handled by the evaluator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarFn {
    /// `min a b`
    Min,
    /// `max a b`
    Max,
    /// `abs a`
    Abs,
    /// `sqrt a`
    Sqrt,
    /// `exp a`
    Exp,
    /// `log a`
    Log,
    /// `sin a`
    Sin,
    /// `cos a`
    Cos,
    /// `tan a`
    Tan,
    /// `tanh a`
    Tanh,
    /// `floor a`
    Floor,
    /// `ceil a`
    Ceil,
    /// `round a`
    Round,
    /// `pow a b`
    Pow,
    /// `atan2 a b`
    Atan2,
    /// `clamp x lo hi`
    Clamp,
    /// `f32 x`, `f64 x`, `i32 x`, `i64 x`.
    Convert(ElemType),
    /// `log2 a`
    Log2,
    /// `log10 a`
    Log10,
    /// `exp2 a`
    Exp2,
    /// `expm1 a`
    Expm1,
    /// `log1p a`
    Log1p,
    /// `erf a`
    Erf,
    /// `erfc a`
    Erfc,
    /// `lgamma a`
    Lgamma,
    /// `popcount a`
    Popcount,
    /// `clz a`
    Clz,
    /// `isnan a`
    IsNan,
    /// `isinf a`
    IsInf,
}

impl ScalarFn {
    /// The scalar builtin called `name`, if any.
    pub fn from_name(name: &str) -> Option<ScalarFn> {
        Some(match name {
            "min" => ScalarFn::Min,
            "max" => ScalarFn::Max,
            "abs" => ScalarFn::Abs,
            "sqrt" => ScalarFn::Sqrt,
            "exp" => ScalarFn::Exp,
            "log" => ScalarFn::Log,
            "sin" => ScalarFn::Sin,
            "cos" => ScalarFn::Cos,
            "tan" => ScalarFn::Tan,
            "tanh" => ScalarFn::Tanh,
            "floor" => ScalarFn::Floor,
            "ceil" => ScalarFn::Ceil,
            "round" => ScalarFn::Round,
            "pow" => ScalarFn::Pow,
            "atan2" => ScalarFn::Atan2,
            "clamp" => ScalarFn::Clamp,
            "f32" => ScalarFn::Convert(ElemType::F32),
            "f64" => ScalarFn::Convert(ElemType::F64),
            "i32" => ScalarFn::Convert(ElemType::I32),
            "i64" => ScalarFn::Convert(ElemType::I64),
            "log2" => ScalarFn::Log2,
            "log10" => ScalarFn::Log10,
            "exp2" => ScalarFn::Exp2,
            "expm1" => ScalarFn::Expm1,
            "log1p" => ScalarFn::Log1p,
            "erf" => ScalarFn::Erf,
            "erfc" => ScalarFn::Erfc,
            "lgamma" => ScalarFn::Lgamma,
            "popcount" => ScalarFn::Popcount,
            "clz" => ScalarFn::Clz,
            "isnan" => ScalarFn::IsNan,
            "isinf" => ScalarFn::IsInf,
            other => ScalarFn::Convert(ElemType::from_name(other).filter(|t| *t != ElemType::Bool)?),
        })
    }

    /// How many arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            ScalarFn::Min | ScalarFn::Max | ScalarFn::Pow | ScalarFn::Atan2 => 2,
            ScalarFn::Clamp => 3,
            _ => 1,
        }
    }

    /// Whether it is one of eqfuse's own transcendental functions (`exp`, `log`, `sin`, `cos`,
    /// `tan`, `tanh`, `pow`, `atan2`, `ir/src/math.rs`): each costs tens of instructions an
    /// element and is inlined as a body of hundreds in generated code.
    pub fn is_transcendental(self) -> bool {
        matches!(
            self,
            ScalarFn::Exp
                | ScalarFn::Log
                | ScalarFn::Sin
                | ScalarFn::Cos
                | ScalarFn::Tan
                | ScalarFn::Tanh
                | ScalarFn::Pow
                | ScalarFn::Atan2
                | ScalarFn::Log2
                | ScalarFn::Log10
                | ScalarFn::Exp2
                | ScalarFn::Expm1
                | ScalarFn::Log1p
                | ScalarFn::Erf
                | ScalarFn::Erfc
                | ScalarFn::Lgamma
        )
    }

    /// The builtin's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ScalarFn::Min => "min",
            ScalarFn::Max => "max",
            ScalarFn::Abs => "abs",
            ScalarFn::Sqrt => "sqrt",
            ScalarFn::Exp => "exp",
            ScalarFn::Log => "log",
            ScalarFn::Sin => "sin",
            ScalarFn::Cos => "cos",
            ScalarFn::Tan => "tan",
            ScalarFn::Tanh => "tanh",
            ScalarFn::Floor => "floor",
            ScalarFn::Ceil => "ceil",
            ScalarFn::Round => "round",
            ScalarFn::Pow => "pow",
            ScalarFn::Atan2 => "atan2",
            ScalarFn::Clamp => "clamp",
            ScalarFn::Convert(t) => t.name(),
            ScalarFn::Log2 => "log2",
            ScalarFn::Log10 => "log10",
            ScalarFn::Exp2 => "exp2",
            ScalarFn::Expm1 => "expm1",
            ScalarFn::Log1p => "log1p",
            ScalarFn::Erf => "erf",
            ScalarFn::Erfc => "erfc",
            ScalarFn::Lgamma => "lgamma",
            ScalarFn::Popcount => "popcount",
            ScalarFn::Clz => "clz",
            ScalarFn::IsNan => "isnan",
            ScalarFn::IsInf => "isinf",
        }
    }

    /// Applies the builtin to exactly `arity()` arguments (public so that the e-graph's
    /// constant folding computes exactly what the interpreter computes).
    pub fn apply(self, args: &[Scalar], span: Span) -> Result<Scalar> {
        match (self, args) {
            (ScalarFn::Min, &[a, b]) => min(a, b, span),
            (ScalarFn::Max, &[a, b]) => max(a, b, span),
            (ScalarFn::Clamp, &[x, lo, hi]) => min(max(x, lo, span)?, hi, span),
            (ScalarFn::Pow, &[a, b]) => float2(a, b, span, "pow", crate::math::pow_f32, crate::math::pow_f64),
            (ScalarFn::Atan2, &[a, b]) => {
                float2(a, b, span, "atan2", crate::math::atan2_f32, crate::math::atan2_f64)
            }
            (ScalarFn::Convert(t), &[a]) => Ok(convert(a, t)),
            (ScalarFn::Popcount, &[a]) => bits(a, span, "popcount", |v, _| v.count_ones()),
            (ScalarFn::Clz, &[a]) => bits(a, span, "clz", |v, w| v.leading_zeros() - (64 - w)),
            (ScalarFn::IsNan, &[a]) => match a {
                Scalar::F32(v) => Ok(Scalar::Bool(v.is_nan())),
                Scalar::F64(v) => Ok(Scalar::Bool(v.is_nan())),
                _ => Err(internal(span, "`isnan` on a non-float")),
            },
            (ScalarFn::IsInf, &[a]) => match a {
                Scalar::F32(v) => Ok(Scalar::Bool(v.is_infinite())),
                Scalar::F64(v) => Ok(Scalar::Bool(v.is_infinite())),
                _ => Err(internal(span, "`isinf` on a non-float")),
            },
            (ScalarFn::Abs, &[a]) => Ok(match a {
                Scalar::I32(v) => Scalar::I32(v.wrapping_abs()),
                Scalar::I64(v) => Scalar::I64(v.wrapping_abs()),
                Scalar::I8(v) => Scalar::I8(v.wrapping_abs()),
                Scalar::I16(v) => Scalar::I16(v.wrapping_abs()),
                Scalar::U8(_) | Scalar::U16(_) | Scalar::U32(_) | Scalar::U64(_) => a,
                Scalar::F32(v) => Scalar::F32(v.abs()),
                Scalar::F64(v) => Scalar::F64(v.abs()),
                Scalar::Bool(_) => return Err(internal(span, "`abs` on a bool")),
            }),
            (f, &[a]) => {
                let (g32, g64): FloatFns = match f {
                    ScalarFn::Sqrt => (f32::sqrt, f64::sqrt),
                    ScalarFn::Exp => (crate::math::exp_f32, crate::math::exp_f64),
                    ScalarFn::Log => (crate::math::log_f32, crate::math::log_f64),
                    ScalarFn::Sin => (crate::math::sin_f32, crate::math::sin_f64),
                    ScalarFn::Cos => (crate::math::cos_f32, crate::math::cos_f64),
                    ScalarFn::Tan => (crate::math::tan_f32, crate::math::tan_f64),
                    ScalarFn::Tanh => (crate::math::tanh_f32, crate::math::tanh_f64),
                    ScalarFn::Log2 => (crate::math::log2_f32, crate::math::log2_f64),
                    ScalarFn::Log10 => (crate::math::log10_f32, crate::math::log10_f64),
                    ScalarFn::Exp2 => (crate::math::exp2_f32, crate::math::exp2_f64),
                    ScalarFn::Expm1 => (crate::math::expm1_f32, crate::math::expm1_f64),
                    ScalarFn::Log1p => (crate::math::log1p_f32, crate::math::log1p_f64),
                    ScalarFn::Erf => (crate::math::erf_f32, crate::math::erf_f64),
                    ScalarFn::Erfc => (crate::math::erfc_f32, crate::math::erfc_f64),
                    ScalarFn::Lgamma => (crate::math::lgamma_f32, crate::math::lgamma_f64),
                    ScalarFn::Floor => (f32::floor, f64::floor),
                    ScalarFn::Ceil => (f32::ceil, f64::ceil),
                    ScalarFn::Round => (f32::round, f64::round),
                    _ => return Err(arity_error(f, args.len(), span)),
                };
                match a {
                    Scalar::F32(v) => Ok(Scalar::F32(g32(v))),
                    Scalar::F64(v) => Ok(Scalar::F64(g64(v))),
                    other => Err(internal(span, format!("`{}` on {}", f.name(), other.elem_type()))),
                }
            }
            (f, _) => Err(arity_error(f, args.len(), span)),
        }
    }
}

/// The `f32` and `f64` versions of a unary float function.
type FloatFns = (fn(f32) -> f32, fn(f64) -> f64);

fn arity_error(f: ScalarFn, got: usize, span: Span) -> Error {
    internal(span, format!("`{}` takes {} arguments, got {got}", f.name(), f.arity()))
}

/// A binary float function of both float types.
fn float2(
    a: Scalar,
    b: Scalar,
    span: Span,
    name: &str,
    g32: fn(f32, f32) -> f32,
    g64: fn(f64, f64) -> f64,
) -> Result<Scalar> {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => Ok(Scalar::F32(g32(x, y))),
        (Scalar::F64(x), Scalar::F64(y)) => Ok(Scalar::F64(g64(x, y))),
        _ => Err(mismatch(name, a, b, span)),
    }
}

fn mismatch(op: &str, a: Scalar, b: Scalar, span: Span) -> Error {
    internal(span, format!("`{op}` on {} and {}", a.elem_type(), b.elem_type()))
}

/// Float minimum: NaN if either is NaN; `-0.0` is below `0.0`.
macro_rules! fmin {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        if a.is_nan() || b.is_nan() {
            a + b
        } else if a < b || (a == b && a.is_sign_negative()) {
            a
        } else {
            b
        }
    }};
}

/// Float maximum: NaN if either is NaN; `0.0` is above `-0.0`.
macro_rules! fmax {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        if a.is_nan() || b.is_nan() {
            a + b
        } else if a > b || (a == b && a.is_sign_positive()) {
            a
        } else {
            b
        }
    }};
}

/// `min a b`.
pub fn min(a: Scalar, b: Scalar, span: Span) -> Result<Scalar> {
    if let Some(r) = super::bits::min_max_int(a, b, false) {
        return Ok(r);
    }
    Ok(match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => Scalar::F32(fmin!(x, y)),
        (Scalar::F64(x), Scalar::F64(y)) => Scalar::F64(fmin!(x, y)),
        (Scalar::Bool(x), Scalar::Bool(y)) => Scalar::Bool(x & y),
        _ => return Err(mismatch("min", a, b, span)),
    })
}

/// `max a b`.
pub fn max(a: Scalar, b: Scalar, span: Span) -> Result<Scalar> {
    if let Some(r) = super::bits::min_max_int(a, b, true) {
        return Ok(r);
    }
    Ok(match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => Scalar::F32(fmax!(x, y)),
        (Scalar::F64(x), Scalar::F64(y)) => Scalar::F64(fmax!(x, y)),
        (Scalar::Bool(x), Scalar::Bool(y)) => Scalar::Bool(x | y),
        _ => return Err(mismatch("max", a, b, span)),
    })
}

/// Converts `a` to element type `to`: float to int truncates toward zero, saturates and
/// maps NaN to 0 (exactly Rust's `as`); bools become 0 or 1; `f64` to `f32` rounds.
pub fn convert(a: Scalar, to: ElemType) -> Scalar {
    macro_rules! conv {
        ($x:expr) => {
            match to {
                ElemType::I32 => Scalar::I32($x as i32),
                ElemType::I64 => Scalar::I64($x as i64),
                ElemType::I8 => Scalar::I8($x as i8),
                ElemType::I16 => Scalar::I16($x as i16),
                ElemType::U8 => Scalar::U8($x as u8),
                ElemType::U16 => Scalar::U16($x as u16),
                ElemType::U32 => Scalar::U32($x as u32),
                ElemType::U64 => Scalar::U64($x as u64),
                ElemType::F32 => Scalar::F32($x as f32),
                ElemType::F64 => Scalar::F64($x as f64),
                ElemType::Bool => Scalar::Bool($x != (0 as _)),
            }
        };
    }
    match a {
        Scalar::Bool(b) => conv!(u8::from(b)),
        Scalar::I32(x) => conv!(x),
        Scalar::I64(x) => conv!(x),
        Scalar::I8(x) => conv!(x),
        Scalar::I16(x) => conv!(x),
        Scalar::U8(x) => conv!(x),
        Scalar::U16(x) => conv!(x),
        Scalar::U32(x) => conv!(x),
        Scalar::U64(x) => conv!(x),
        Scalar::F32(x) => conv!(x),
        Scalar::F64(x) => conv!(x),
    }
}

macro_rules! unreachable_arith {
    ($op:expr, $span:expr) => {
        return Err(internal($span, format!("`{}` is not arithmetic", $op.symbol())))
    };
}

/// Float arithmetic of one float type (IEEE-754; `%` is Rust's `%`).
macro_rules! float_arith {
    ($op:expr, $x:expr, $y:expr, $span:expr) => {{
        let (x, y) = ($x, $y);
        match $op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            _ => unreachable_arith!($op, $span),
        }
    }};
}

/// Comparison of two values of one type.
fn compare<T: PartialOrd>(op: BinOp, x: T, y: T) -> bool {
    match op {
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        _ => x >= y,
    }
}

/// `a op b` for a strict (non-short-circuit) operator; both operands of one type.
/// `&&` and `||` are accepted here too (on already evaluated operands). Public so that the
/// e-graph's constant folding shares the interpreter's semantics exactly.
pub fn binary(op: BinOp, a: Scalar, b: Scalar, span: Span) -> Result<Scalar> {
    if let Some(r) = super::bits::binary_int(op, a, b, span) {
        return r;
    }
    if op.is_comparison() {
        let r = match (a, b) {
            (Scalar::Bool(x), Scalar::Bool(y)) => compare(op, x, y),
            (Scalar::F32(x), Scalar::F32(y)) => compare(op, x, y),
            (Scalar::F64(x), Scalar::F64(y)) => compare(op, x, y),
            _ => return Err(mismatch(op.symbol(), a, b, span)),
        };
        return Ok(Scalar::Bool(r));
    }
    Ok(match (a, b) {
        (Scalar::Bool(x), Scalar::Bool(y)) => match op {
            BinOp::And => Scalar::Bool(x && y),
            BinOp::Or => Scalar::Bool(x || y),
            BinOp::BitAnd => Scalar::Bool(x & y),
            BinOp::BitOr => Scalar::Bool(x | y),
            BinOp::BitXor => Scalar::Bool(x ^ y),
            _ => return Err(mismatch(op.symbol(), a, b, span)),
        },
        _ if op.is_logical() || op.is_bitwise() => return Err(mismatch(op.symbol(), a, b, span)),
        (Scalar::F32(x), Scalar::F32(y)) => Scalar::F32(float_arith!(op, x, y, span)),
        (Scalar::F64(x), Scalar::F64(y)) => Scalar::F64(float_arith!(op, x, y, span)),
        _ => return Err(mismatch(op.symbol(), a, b, span)),
    })
}

/// `-a` (wrapping on integers) or `!a` (public, like [`binary`]).
pub fn unary(op: UnOp, a: Scalar, span: Span) -> Result<Scalar> {
    if let Some(r) = super::bits::unary_int(op, a) {
        return Ok(r);
    }
    Ok(match (op, a) {
        (UnOp::Neg, Scalar::F32(x)) => Scalar::F32(-x),
        (UnOp::Neg, Scalar::F64(x)) => Scalar::F64(-x),
        (UnOp::Not, Scalar::Bool(x)) => Scalar::Bool(!x),
        _ => return Err(internal(span, format!("`{}` on {}", op.symbol(), a.elem_type()))),
    })
}

/// `popcount` / `clz` of an integer scalar: `f` gets its bits zero-extended to 64 and the
/// type's width, and gives an `i32`.
fn bits(a: Scalar, span: Span, what: &str, f: impl Fn(u64, u32) -> u32) -> Result<Scalar> {
    let (Some(v), Some(w)) = (a.as_i128(), a.elem_type().int_bits()) else {
        return Err(internal(span, format!("`{what}` on a non-integer")));
    };
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    Ok(Scalar::I32(f((v as u64) & mask, w) as i32))
}
