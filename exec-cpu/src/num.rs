//! The scalar semantics of `eqfuse_ir::interp::scalar`, as generic per-type operations for
//! the VM's typed loops: integers wrap on `+ - *` and unary `-`, `MIN / -1` is `MIN`,
//! `MIN % -1` is `0`, float `min`/`max` give NaN when either operand is NaN (`a + b`, as the
//! reference computes it) and order `-0.0` below `0.0`.
//!
//! Division by zero is checked by the caller before a loop runs; `div`/`rem` by zero here
//! return 0 so that no loop can panic.

use crate::col::Elem;

/// Float minimum exactly as the reference: NaN if either is NaN; `-0.0` below `0.0`.
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

/// Float maximum exactly as the reference: NaN if either is NaN; `0.0` above `-0.0`.
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

/// Numeric element types (the eight integer types, `f32`, `f64`).
pub(crate) trait Num: Elem {
    /// Integer type (division by zero is an error; floats are IEEE).
    const INT: bool;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    /// `self / b` (integers: wrapping, 0 when `b` is 0 — the caller checks first).
    fn div(self, b: Self) -> Self;
    /// `self % b` (integers: wrapping, 0 when `b` is 0 — the caller checks first).
    fn rem(self, b: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn vmin(self, b: Self) -> Self;
    fn vmax(self, b: Self) -> Self;
    /// Zero (an integer divisor that fails).
    fn is_zero(self) -> bool;
}

macro_rules! int_impl {
    ($t:ty, $abs:expr) => {
        impl Num for $t {
            const INT: bool = true;
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    self.wrapping_div(b)
                }
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                if b == 0 {
                    0
                } else {
                    self.wrapping_rem(b)
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                let f: fn($t) -> $t = $abs;
                f(self)
            }
            #[inline(always)]
            fn vmin(self, b: Self) -> Self {
                Ord::min(self, b)
            }
            #[inline(always)]
            fn vmax(self, b: Self) -> Self {
                Ord::max(self, b)
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self == 0
            }
        }
    };
}
int_impl!(i8, i8::wrapping_abs);
int_impl!(i16, i16::wrapping_abs);
int_impl!(i32, i32::wrapping_abs);
int_impl!(i64, i64::wrapping_abs);
int_impl!(u8, |x| x);
int_impl!(u16, |x| x);
int_impl!(u32, |x| x);
int_impl!(u64, |x| x);

/// Integer element types: the bit operations, exactly the reference's (shift amounts
/// masked to the width, `>>` arithmetic on signed and logical on unsigned types, `popcount`
/// and `clz` over the type's width).
pub(crate) trait Int: Num {
    fn band(self, b: Self) -> Self;
    fn bor(self, b: Self) -> Self;
    fn bxor(self, b: Self) -> Self;
    fn shl(self, b: Self) -> Self;
    fn shr(self, b: Self) -> Self;
    /// `!x`: the bitwise complement.
    fn bnot(self) -> Self;
    fn popcount(self) -> i32;
    fn clz(self) -> i32;
}

macro_rules! bits_impl {
    ($t:ty) => {
        impl Int for $t {
            #[inline(always)]
            fn band(self, b: Self) -> Self {
                self & b
            }
            #[inline(always)]
            fn bor(self, b: Self) -> Self {
                self | b
            }
            #[inline(always)]
            fn bxor(self, b: Self) -> Self {
                self ^ b
            }
            #[inline(always)]
            fn shl(self, b: Self) -> Self {
                // `wrapping_shl` masks the amount to the width; the low bits of `b` are
                // those of `b as u32`
                self.wrapping_shl(b as u32)
            }
            #[inline(always)]
            fn shr(self, b: Self) -> Self {
                self.wrapping_shr(b as u32)
            }
            #[inline(always)]
            fn bnot(self) -> Self {
                !self
            }
            #[inline(always)]
            fn popcount(self) -> i32 {
                self.count_ones() as i32
            }
            #[inline(always)]
            fn clz(self) -> i32 {
                self.leading_zeros() as i32
            }
        }
    };
}
bits_impl!(i8);
bits_impl!(i16);
bits_impl!(i32);
bits_impl!(i64);
bits_impl!(u8);
bits_impl!(u16);
bits_impl!(u32);
bits_impl!(u64);

macro_rules! float_impl {
    ($t:ty) => {
        impl Num for $t {
            const INT: bool = false;
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self + b
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self - b
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self * b
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                self / b
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                self % b
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn vmin(self, b: Self) -> Self {
                fmin!(self, b)
            }
            #[inline(always)]
            fn vmax(self, b: Self) -> Self {
                fmax!(self, b)
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                false
            }
        }

        impl Float for $t {
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                eqfuse_ir::math::EqMath::eq_exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                eqfuse_ir::math::EqMath::eq_ln(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                eqfuse_ir::math::EqMath::eq_sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                eqfuse_ir::math::EqMath::eq_cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                eqfuse_ir::math::EqMath::eq_tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                eqfuse_ir::math::EqMath::eq_tanh(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn round(self) -> Self {
                <$t>::round(self)
            }
            #[inline(always)]
            fn powf(self, b: Self) -> Self {
                eqfuse_ir::math::EqMath::eq_pow(self, b)
            }
            #[inline(always)]
            fn atan2(self, b: Self) -> Self {
                eqfuse_ir::math::EqMath::eq_atan2(self, b)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                <$t>::is_infinite(self)
            }
        }
    };
}

/// Float element types: the float builtins.
pub(crate) trait Float: Num {
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn powf(self, b: Self) -> Self;
    fn atan2(self, b: Self) -> Self;
    fn is_nan(self) -> bool;
    fn is_inf(self) -> bool;
}

float_impl!(f32);
float_impl!(f64);

/// The operators of reductions, scans and permutes that run as typed loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OpKind {
    Add,
    Mul,
    Min,
    Max,
    And,
    Or,
}

/// Every element type's combining operators. An operator that does not apply to the type
/// (`+` on `bool`, `&&` on numbers) is never selected: [`crate::ops`] recognises an
/// operator only for the types it applies to.
pub(crate) trait Comb: Elem {
    /// Reductions of this type may use several accumulators (floats: the reduction order is
    /// free, and a single accumulator's dependency chain cannot be vectorised).
    const MULTI_ACC: bool;
    fn comb(k: OpKind, a: Self, b: Self) -> Self;
}

macro_rules! comb_num {
    ($t:ty, $multi:expr) => {
        impl Comb for $t {
            const MULTI_ACC: bool = $multi;
            #[inline(always)]
            fn comb(k: OpKind, a: Self, b: Self) -> Self {
                match k {
                    OpKind::Add => Num::add(a, b),
                    OpKind::Mul => Num::mul(a, b),
                    OpKind::Min => Num::vmin(a, b),
                    OpKind::Max => Num::vmax(a, b),
                    // never selected for numbers
                    OpKind::And | OpKind::Or => a,
                }
            }
        }
    };
}
comb_num!(i8, false);
comb_num!(i16, false);
comb_num!(i32, false);
comb_num!(i64, false);
comb_num!(u8, false);
comb_num!(u16, false);
comb_num!(u32, false);
comb_num!(u64, false);
comb_num!(f32, true);
comb_num!(f64, true);

impl Comb for bool {
    const MULTI_ACC: bool = false;
    #[inline(always)]
    fn comb(k: OpKind, a: Self, b: Self) -> Self {
        match k {
            OpKind::Min | OpKind::And => a & b,
            OpKind::Max | OpKind::Or => a | b,
            // never selected for bool
            OpKind::Add | OpKind::Mul => a,
        }
    }
}

/// `acc op x0 op x1 ...` for a known operator, with the operator's match hoisted out of
/// the loop (one monomorphised loop per operator).
pub(crate) fn fold<T: Comb>(k: OpKind, acc: T, xs: &[T]) -> T {
    match k {
        OpKind::Add => fold_with(acc, xs, |a, b| T::comb(OpKind::Add, a, b)),
        OpKind::Mul => fold_with(acc, xs, |a, b| T::comb(OpKind::Mul, a, b)),
        OpKind::Min => fold_with(acc, xs, |a, b| T::comb(OpKind::Min, a, b)),
        OpKind::Max => fold_with(acc, xs, |a, b| T::comb(OpKind::Max, a, b)),
        OpKind::And => fold_with(acc, xs, |a, b| T::comb(OpKind::And, a, b)),
        OpKind::Or => fold_with(acc, xs, |a, b| T::comb(OpKind::Or, a, b)),
    }
}

/// The fold itself: sequential for short runs and for integers (which the compiler
/// vectorises on its own, integer operators being associative), eight accumulators for long
/// float runs. Every accumulator starts from `acc`, the neutral element or a partial result.
#[inline(always)]
fn fold_with<T: Comb>(acc: T, xs: &[T], f: impl Fn(T, T) -> T) -> T {
    if !T::MULTI_ACC || xs.len() < 64 {
        return xs.iter().fold(acc, |a, &x| f(a, x));
    }
    let mut accs = [acc; 8];
    let chunks = xs.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &x) in accs.iter_mut().zip(c) {
            *a = f(*a, x);
        }
    }
    let mut out = accs[0];
    for &a in &accs[1..] {
        out = f(out, a);
    }
    rest.iter().fold(out, |a, &x| f(a, x))
}

/// Inclusive (`exclusive: false`) or exclusive scan of `xs` into `out` starting from `acc`;
/// returns the total (`acc op x0 op ... op x_last`).
pub(crate) fn scan<T: Comb>(k: OpKind, acc: T, xs: &[T], out: &mut [T], exclusive: bool) -> T {
    macro_rules! go {
        ($k:expr) => {
            if exclusive {
                scan_with(acc, xs, out, |a, b| T::comb($k, a, b), true)
            } else {
                scan_with(acc, xs, out, |a, b| T::comb($k, a, b), false)
            }
        };
    }
    match k {
        OpKind::Add => go!(OpKind::Add),
        OpKind::Mul => go!(OpKind::Mul),
        OpKind::Min => go!(OpKind::Min),
        OpKind::Max => go!(OpKind::Max),
        OpKind::And => go!(OpKind::And),
        OpKind::Or => go!(OpKind::Or),
    }
}

#[inline(always)]
fn scan_with<T: Comb>(mut acc: T, xs: &[T], out: &mut [T], f: impl Fn(T, T) -> T, exclusive: bool) -> T {
    for (o, &x) in out.iter_mut().zip(xs) {
        if exclusive {
            *o = acc;
            acc = f(acc, x);
        } else {
            acc = f(acc, x);
            *o = acc;
        }
    }
    acc
}

/// `out[i] = carry op out[i]` (a scan's fix-up with the carry of the blocks before).
pub(crate) fn fix_up<T: Comb>(k: OpKind, carry: T, out: &mut [T]) {
    macro_rules! go {
        ($k:expr) => {
            for o in out.iter_mut() {
                *o = T::comb($k, carry, *o);
            }
        };
    }
    match k {
        OpKind::Add => go!(OpKind::Add),
        OpKind::Mul => go!(OpKind::Mul),
        OpKind::Min => go!(OpKind::Min),
        OpKind::Max => go!(OpKind::Max),
        OpKind::And => go!(OpKind::And),
        OpKind::Or => go!(OpKind::Or),
    }
}

/// Which of `a * b` and `c` is added to or subtracted from which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MulAdd {
    /// `a * b + c`
    ProdPlus,
    /// `c + a * b`
    PlusProd,
    /// `a * b - c`
    ProdMinus,
    /// `c - a * b`
    MinusProd,
}

/// `c ? t : e` without a branch (selects are often unpredictable): both are loaded, one is
/// picked by index, which compiles to a conditional move or a blend.
#[inline(always)]
pub(crate) fn pick<T: Copy>(c: bool, t: T, e: T) -> T {
    [e, t][usize::from(c)]
}
