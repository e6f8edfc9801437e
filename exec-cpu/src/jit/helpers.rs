//! The Rust functions compiled loops call for operations with no exact instruction: the
//! very functions of [`crate::num`] the lane groups and the VM use, so the bits are theirs.

use crate::num::{Float, Num};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::ElemType;

macro_rules! helpers {
    ($t:ty, $un:ident, $bin:ident) => {
        /// The one-operand float functions of this type.
        pub(super) fn $un(f: ScalarFn) -> Option<extern "C" fn($t) -> $t> {
            Some(match f {
                ScalarFn::Exp => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::exp(x)
                    }
                    h
                }
                ScalarFn::Log => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::ln(x)
                    }
                    h
                }
                ScalarFn::Sin => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::sin(x)
                    }
                    h
                }
                ScalarFn::Cos => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::cos(x)
                    }
                    h
                }
                ScalarFn::Tan => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::tan(x)
                    }
                    h
                }
                ScalarFn::Tanh => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::tanh(x)
                    }
                    h
                }
                ScalarFn::Floor => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::floor(x)
                    }
                    h
                }
                ScalarFn::Ceil => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::ceil(x)
                    }
                    h
                }
                ScalarFn::Round => {
                    extern "C" fn h(x: $t) -> $t {
                        Float::round(x)
                    }
                    h
                }
                _ => return None,
            })
        }

        /// The two-operand float functions of this type (`Rem`: the operator `%`, given as
        /// `None`).
        pub(super) fn $bin(f: Option<ScalarFn>) -> Option<extern "C" fn($t, $t) -> $t> {
            Some(match f {
                None => {
                    extern "C" fn h(x: $t, y: $t) -> $t {
                        Num::rem(x, y)
                    }
                    h
                }
                Some(ScalarFn::Min) => {
                    extern "C" fn h(x: $t, y: $t) -> $t {
                        Num::vmin(x, y)
                    }
                    h
                }
                Some(ScalarFn::Max) => {
                    extern "C" fn h(x: $t, y: $t) -> $t {
                        Num::vmax(x, y)
                    }
                    h
                }
                Some(ScalarFn::Pow) => {
                    extern "C" fn h(x: $t, y: $t) -> $t {
                        Float::powf(x, y)
                    }
                    h
                }
                Some(ScalarFn::Atan2) => {
                    extern "C" fn h(x: $t, y: $t) -> $t {
                        Float::atan2(x, y)
                    }
                    h
                }
                _ => return None,
            })
        }
    };
}
helpers!(f32, unary_f32, binary_f32);
helpers!(f64, unary_f64, binary_f64);

/// A helper's address and its operand count, for a float type.
pub(super) fn unary(t: ElemType, f: ScalarFn) -> Option<usize> {
    match t {
        ElemType::F32 => unary_f32(f).map(|h| h as usize),
        ElemType::F64 => unary_f64(f).map(|h| h as usize),
        _ => None,
    }
}

/// A two-operand helper's address, for a float type (`None`: `%`).
pub(super) fn binary(t: ElemType, f: Option<ScalarFn>) -> Option<usize> {
    match t {
        ElemType::F32 => binary_f32(f).map(|h| h as usize),
        ElemType::F64 => binary_f64(f).map(|h| h as usize),
        _ => None,
    }
}
