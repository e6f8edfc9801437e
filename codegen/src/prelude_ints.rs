//! The prelude's helpers for the integer types of language version 2 (`i8 i16 u8 u16 u32
//! u64`) and the bit operations of all eight integer types (`<< >> popcount clz`), with
//! `isnan`/`isinf`: written once for both dialects, like [`crate::prelude::SCALAR_HELPERS`]
//! (after which they come). Arithmetic wraps (computed in unsigned types: no undefined
//! behaviour), shift amounts are masked to the width without a branch, conversions from
//! float saturate with NaN to 0, `clz 0` is the width.

/// The two 64-bit bit counts each dialect has its own way to compute (before
/// [`SCALAR_INTS`]): CUDA's intrinsics, else the compiler's builtins with `clz 0` defined.
pub const BIT_COUNTS: &str = r#"#ifdef __CUDACC__
static __device__ __forceinline__ int eq_popc64(unsigned long long x) { return __popcll(x); }
static __device__ __forceinline__ int eq_clz64(unsigned long long x) { return __clzll((long long)x); }
#else
static __device__ __forceinline__ int eq_popc64(unsigned long long x) { return __builtin_popcountll(x); }
// __builtin_clzll(0) is undefined: count the zeros of x | 1 and add one when x is 0
static __device__ __forceinline__ int eq_clz64(unsigned long long x) {
  return __builtin_clzll(x | 1ull) + (x == 0);
}
#endif
"#;

/// The helpers (after [`crate::prelude::SCALAR_HELPERS`] and [`BIT_COUNTS`]).
pub const SCALAR_INTS: &str = r#"// The integer types of version 2 and the bit operations of all eight integer types.
// Arithmetic wraps: it is done in an unsigned type at least as wide as `int` (so that the
// promotion of 8- and 16-bit operands to `int` never overflows) and converted back.
static __device__ __forceinline__ int8_t eq_add_i8(int8_t a, int8_t b) { return (int8_t)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ int8_t eq_sub_i8(int8_t a, int8_t b) { return (int8_t)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ int8_t eq_mul_i8(int8_t a, int8_t b) { return (int8_t)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ int8_t eq_neg_i8(int8_t a) { return (int8_t)((unsigned int)0 - (unsigned int)a); }
static __device__ __forceinline__ int8_t eq_abs_i8(int8_t a) { return a < 0 ? eq_neg_i8(a) : a; }
// b != 0 here; MIN / -1 == MIN and MIN % -1 == 0.
static __device__ __forceinline__ int8_t eq_div_i8(int8_t a, int8_t b) { return b == -1 ? eq_neg_i8(a) : (int8_t)(a / b); }
static __device__ __forceinline__ int8_t eq_rem_i8(int8_t a, int8_t b) { return b == -1 ? (int8_t)0 : (int8_t)(a % b); }
static __device__ __forceinline__ int8_t eq_min_i8(int8_t a, int8_t b) { return a < b ? a : b; }
static __device__ __forceinline__ int8_t eq_max_i8(int8_t a, int8_t b) { return a > b ? a : b; }
static __device__ __forceinline__ int8_t eq_shl_i8(int8_t a, int8_t b) { return (int8_t)((unsigned int)a << (b & 7)); }
static __device__ __forceinline__ int8_t eq_shr_i8(int8_t a, int8_t b) { return (int8_t)(a >> (b & 7)); }
static __device__ __forceinline__ int eq_popcount_i8(int8_t a) { return eq_popc64((unsigned long long)(uint8_t)a); }
static __device__ __forceinline__ int eq_clz_i8(int8_t a) { return eq_clz64((unsigned long long)(uint8_t)a) - 56; }
static __device__ __forceinline__ int16_t eq_add_i16(int16_t a, int16_t b) { return (int16_t)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ int16_t eq_sub_i16(int16_t a, int16_t b) { return (int16_t)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ int16_t eq_mul_i16(int16_t a, int16_t b) { return (int16_t)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ int16_t eq_neg_i16(int16_t a) { return (int16_t)((unsigned int)0 - (unsigned int)a); }
static __device__ __forceinline__ int16_t eq_abs_i16(int16_t a) { return a < 0 ? eq_neg_i16(a) : a; }
// b != 0 here; MIN / -1 == MIN and MIN % -1 == 0.
static __device__ __forceinline__ int16_t eq_div_i16(int16_t a, int16_t b) { return b == -1 ? eq_neg_i16(a) : (int16_t)(a / b); }
static __device__ __forceinline__ int16_t eq_rem_i16(int16_t a, int16_t b) { return b == -1 ? (int16_t)0 : (int16_t)(a % b); }
static __device__ __forceinline__ int16_t eq_min_i16(int16_t a, int16_t b) { return a < b ? a : b; }
static __device__ __forceinline__ int16_t eq_max_i16(int16_t a, int16_t b) { return a > b ? a : b; }
static __device__ __forceinline__ int16_t eq_shl_i16(int16_t a, int16_t b) { return (int16_t)((unsigned int)a << (b & 15)); }
static __device__ __forceinline__ int16_t eq_shr_i16(int16_t a, int16_t b) { return (int16_t)(a >> (b & 15)); }
static __device__ __forceinline__ int eq_popcount_i16(int16_t a) { return eq_popc64((unsigned long long)(uint16_t)a); }
static __device__ __forceinline__ int eq_clz_i16(int16_t a) { return eq_clz64((unsigned long long)(uint16_t)a) - 48; }
static __device__ __forceinline__ int eq_shl_i32(int a, int b) { return (int)((unsigned int)a << (b & 31)); }
static __device__ __forceinline__ int eq_shr_i32(int a, int b) { return (int)(a >> (b & 31)); }
static __device__ __forceinline__ int eq_popcount_i32(int a) { return eq_popc64((unsigned long long)(unsigned int)a); }
static __device__ __forceinline__ int eq_clz_i32(int a) { return eq_clz64((unsigned long long)(unsigned int)a) - 32; }
static __device__ __forceinline__ long long eq_shl_i64(long long a, long long b) { return (long long)((unsigned long long)a << (b & 63)); }
static __device__ __forceinline__ long long eq_shr_i64(long long a, long long b) { return (long long)(a >> (b & 63)); }
static __device__ __forceinline__ int eq_popcount_i64(long long a) { return eq_popc64((unsigned long long)(unsigned long long)a); }
static __device__ __forceinline__ int eq_clz_i64(long long a) { return eq_clz64((unsigned long long)(unsigned long long)a) - 0; }
static __device__ __forceinline__ uint8_t eq_add_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ uint8_t eq_sub_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ uint8_t eq_mul_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ uint8_t eq_neg_u8(uint8_t a) { return (uint8_t)((unsigned int)0 - (unsigned int)a); }
static __device__ __forceinline__ uint8_t eq_abs_u8(uint8_t a) { return a; }
static __device__ __forceinline__ uint8_t eq_div_u8(uint8_t a, uint8_t b) { return (uint8_t)(a / b); }
static __device__ __forceinline__ uint8_t eq_rem_u8(uint8_t a, uint8_t b) { return (uint8_t)(a % b); }
static __device__ __forceinline__ uint8_t eq_min_u8(uint8_t a, uint8_t b) { return a < b ? a : b; }
static __device__ __forceinline__ uint8_t eq_max_u8(uint8_t a, uint8_t b) { return a > b ? a : b; }
static __device__ __forceinline__ uint8_t eq_shl_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned int)a << (b & 7)); }
static __device__ __forceinline__ uint8_t eq_shr_u8(uint8_t a, uint8_t b) { return (uint8_t)(a >> (b & 7)); }
static __device__ __forceinline__ int eq_popcount_u8(uint8_t a) { return eq_popc64((unsigned long long)(uint8_t)a); }
static __device__ __forceinline__ int eq_clz_u8(uint8_t a) { return eq_clz64((unsigned long long)(uint8_t)a) - 56; }
static __device__ __forceinline__ uint16_t eq_add_u16(uint16_t a, uint16_t b) { return (uint16_t)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ uint16_t eq_sub_u16(uint16_t a, uint16_t b) { return (uint16_t)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ uint16_t eq_mul_u16(uint16_t a, uint16_t b) { return (uint16_t)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ uint16_t eq_neg_u16(uint16_t a) { return (uint16_t)((unsigned int)0 - (unsigned int)a); }
static __device__ __forceinline__ uint16_t eq_abs_u16(uint16_t a) { return a; }
static __device__ __forceinline__ uint16_t eq_div_u16(uint16_t a, uint16_t b) { return (uint16_t)(a / b); }
static __device__ __forceinline__ uint16_t eq_rem_u16(uint16_t a, uint16_t b) { return (uint16_t)(a % b); }
static __device__ __forceinline__ uint16_t eq_min_u16(uint16_t a, uint16_t b) { return a < b ? a : b; }
static __device__ __forceinline__ uint16_t eq_max_u16(uint16_t a, uint16_t b) { return a > b ? a : b; }
static __device__ __forceinline__ uint16_t eq_shl_u16(uint16_t a, uint16_t b) { return (uint16_t)((unsigned int)a << (b & 15)); }
static __device__ __forceinline__ uint16_t eq_shr_u16(uint16_t a, uint16_t b) { return (uint16_t)(a >> (b & 15)); }
static __device__ __forceinline__ int eq_popcount_u16(uint16_t a) { return eq_popc64((unsigned long long)(uint16_t)a); }
static __device__ __forceinline__ int eq_clz_u16(uint16_t a) { return eq_clz64((unsigned long long)(uint16_t)a) - 48; }
static __device__ __forceinline__ uint32_t eq_add_u32(uint32_t a, uint32_t b) { return (uint32_t)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ uint32_t eq_sub_u32(uint32_t a, uint32_t b) { return (uint32_t)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ uint32_t eq_mul_u32(uint32_t a, uint32_t b) { return (uint32_t)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ uint32_t eq_neg_u32(uint32_t a) { return (uint32_t)((unsigned int)0 - (unsigned int)a); }
static __device__ __forceinline__ uint32_t eq_abs_u32(uint32_t a) { return a; }
static __device__ __forceinline__ uint32_t eq_div_u32(uint32_t a, uint32_t b) { return (uint32_t)(a / b); }
static __device__ __forceinline__ uint32_t eq_rem_u32(uint32_t a, uint32_t b) { return (uint32_t)(a % b); }
static __device__ __forceinline__ uint32_t eq_min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static __device__ __forceinline__ uint32_t eq_max_u32(uint32_t a, uint32_t b) { return a > b ? a : b; }
static __device__ __forceinline__ uint32_t eq_shl_u32(uint32_t a, uint32_t b) { return (uint32_t)((unsigned int)a << (b & 31)); }
static __device__ __forceinline__ uint32_t eq_shr_u32(uint32_t a, uint32_t b) { return (uint32_t)(a >> (b & 31)); }
static __device__ __forceinline__ int eq_popcount_u32(uint32_t a) { return eq_popc64((unsigned long long)(unsigned int)a); }
static __device__ __forceinline__ int eq_clz_u32(uint32_t a) { return eq_clz64((unsigned long long)(unsigned int)a) - 32; }
static __device__ __forceinline__ uint64_t eq_add_u64(uint64_t a, uint64_t b) { return (uint64_t)((unsigned long long)a + (unsigned long long)b); }
static __device__ __forceinline__ uint64_t eq_sub_u64(uint64_t a, uint64_t b) { return (uint64_t)((unsigned long long)a - (unsigned long long)b); }
static __device__ __forceinline__ uint64_t eq_mul_u64(uint64_t a, uint64_t b) { return (uint64_t)((unsigned long long)a * (unsigned long long)b); }
static __device__ __forceinline__ uint64_t eq_neg_u64(uint64_t a) { return (uint64_t)((unsigned long long)0 - (unsigned long long)a); }
static __device__ __forceinline__ uint64_t eq_abs_u64(uint64_t a) { return a; }
static __device__ __forceinline__ uint64_t eq_div_u64(uint64_t a, uint64_t b) { return (uint64_t)(a / b); }
static __device__ __forceinline__ uint64_t eq_rem_u64(uint64_t a, uint64_t b) { return (uint64_t)(a % b); }
static __device__ __forceinline__ uint64_t eq_min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static __device__ __forceinline__ uint64_t eq_max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static __device__ __forceinline__ uint64_t eq_shl_u64(uint64_t a, uint64_t b) { return (uint64_t)((unsigned long long)a << (b & 63)); }
static __device__ __forceinline__ uint64_t eq_shr_u64(uint64_t a, uint64_t b) { return (uint64_t)(a >> (b & 63)); }
static __device__ __forceinline__ int eq_popcount_u64(uint64_t a) { return eq_popc64((unsigned long long)(unsigned long long)a); }
static __device__ __forceinline__ int eq_clz_u64(uint64_t a) { return eq_clz64((unsigned long long)(unsigned long long)a) - 0; }
static __device__ __forceinline__ float eq_i8_to_f32(int8_t i) { return eq_i32_to_f32((int)i); }
static __device__ __forceinline__ double eq_i8_to_f64(int8_t i) { return eq_i32_to_f64((int)i); }
static __device__ __forceinline__ float eq_i16_to_f32(int16_t i) { return eq_i32_to_f32((int)i); }
static __device__ __forceinline__ double eq_i16_to_f64(int16_t i) { return eq_i32_to_f64((int)i); }
static __device__ __forceinline__ float eq_u8_to_f32(uint8_t i) { return eq_i32_to_f32((int)i); }
static __device__ __forceinline__ double eq_u8_to_f64(uint8_t i) { return eq_i32_to_f64((int)i); }
static __device__ __forceinline__ float eq_u16_to_f32(uint16_t i) { return eq_i32_to_f32((int)i); }
static __device__ __forceinline__ double eq_u16_to_f64(uint16_t i) { return eq_i32_to_f64((int)i); }
static __device__ __forceinline__ float eq_u32_to_f32(uint32_t i) { return eq_i64_to_f32((long long)i); }
static __device__ __forceinline__ double eq_u32_to_f64(uint32_t i) { return eq_i64_to_f64((long long)i); }
static __device__ __forceinline__ float eq_u64_to_f32(uint64_t i) {
  return __int_as_float(__float_as_int((float)i) & (i == 0 ? 0x7fffffff : -1));
}
static __device__ __forceinline__ double eq_u64_to_f64(uint64_t i) {
  return __longlong_as_double(__double_as_longlong((double)i) & (i == 0 ? 0x7fffffffffffffffLL : -1LL));
}
// Float to the new integer types: truncation toward zero, saturating, NaN to 0.
static __device__ __forceinline__ int8_t eq_f32_to_i8(float x) {
  const bool nan = x != x;
  const bool lo = x <= -128.0f;
  const bool hi = x >= 128.0f;
  const int8_t v = (int8_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (int8_t)0 : (lo ? (int8_t)-128 : (hi ? (int8_t)127 : v));
}
static __device__ __forceinline__ int8_t eq_f64_to_i8(double x) {
  const bool nan = x != x;
  const bool lo = x <= -128.0;
  const bool hi = x >= 128.0;
  const int8_t v = (int8_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (int8_t)0 : (lo ? (int8_t)-128 : (hi ? (int8_t)127 : v));
}
static __device__ __forceinline__ int16_t eq_f32_to_i16(float x) {
  const bool nan = x != x;
  const bool lo = x <= -32768.0f;
  const bool hi = x >= 32768.0f;
  const int16_t v = (int16_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (int16_t)0 : (lo ? (int16_t)-32768 : (hi ? (int16_t)32767 : v));
}
static __device__ __forceinline__ int16_t eq_f64_to_i16(double x) {
  const bool nan = x != x;
  const bool lo = x <= -32768.0;
  const bool hi = x >= 32768.0;
  const int16_t v = (int16_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (int16_t)0 : (lo ? (int16_t)-32768 : (hi ? (int16_t)32767 : v));
}
static __device__ __forceinline__ uint8_t eq_f32_to_u8(float x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0f;
  const bool hi = x >= 256.0f;
  const uint8_t v = (uint8_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (uint8_t)0 : (lo ? (uint8_t)0 : (hi ? (uint8_t)255 : v));
}
static __device__ __forceinline__ uint8_t eq_f64_to_u8(double x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0;
  const bool hi = x >= 256.0;
  const uint8_t v = (uint8_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (uint8_t)0 : (lo ? (uint8_t)0 : (hi ? (uint8_t)255 : v));
}
static __device__ __forceinline__ uint16_t eq_f32_to_u16(float x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0f;
  const bool hi = x >= 65536.0f;
  const uint16_t v = (uint16_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (uint16_t)0 : (lo ? (uint16_t)0 : (hi ? (uint16_t)65535 : v));
}
static __device__ __forceinline__ uint16_t eq_f64_to_u16(double x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0;
  const bool hi = x >= 65536.0;
  const uint16_t v = (uint16_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (uint16_t)0 : (lo ? (uint16_t)0 : (hi ? (uint16_t)65535 : v));
}
static __device__ __forceinline__ uint32_t eq_f32_to_u32(float x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0f;
  const bool hi = x >= 4294967296.0f;
  const uint32_t v = (uint32_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (uint32_t)0 : (lo ? (uint32_t)0u : (hi ? (uint32_t)4294967295u : v));
}
static __device__ __forceinline__ uint32_t eq_f64_to_u32(double x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0;
  const bool hi = x >= 4294967296.0;
  const uint32_t v = (uint32_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (uint32_t)0 : (lo ? (uint32_t)0u : (hi ? (uint32_t)4294967295u : v));
}
static __device__ __forceinline__ uint64_t eq_f32_to_u64(float x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0f;
  const bool hi = x >= 18446744073709551616.0f;
  const uint64_t v = (uint64_t)((nan | lo | hi) ? 0.0f : x);
  return nan ? (uint64_t)0 : (lo ? (uint64_t)0ULL : (hi ? (uint64_t)18446744073709551615ULL : v));
}
static __device__ __forceinline__ uint64_t eq_f64_to_u64(double x) {
  const bool nan = x != x;
  const bool lo = x <= -1.0;
  const bool hi = x >= 18446744073709551616.0;
  const uint64_t v = (uint64_t)((nan | lo | hi) ? 0.0 : x);
  return nan ? (uint64_t)0 : (lo ? (uint64_t)0ULL : (hi ? (uint64_t)18446744073709551615ULL : v));
}
// isnan / isinf by the bits (whatever the compiler assumes of NaNs).
static __device__ __forceinline__ bool eq_isnan_f32(float x) { return (__float_as_int(x) & 0x7fffffff) > 0x7f800000; }
static __device__ __forceinline__ bool eq_isinf_f32(float x) { return (__float_as_int(x) & 0x7fffffff) == 0x7f800000; }
static __device__ __forceinline__ bool eq_isnan_f64(double x) { return (__double_as_longlong(x) & 0x7fffffffffffffffLL) > 0x7ff0000000000000LL; }
static __device__ __forceinline__ bool eq_isinf_f64(double x) { return (__double_as_longlong(x) & 0x7fffffffffffffffLL) == 0x7ff0000000000000LL; }

"#;

/// The unsigned C type of an integer type's width (`uint8_t` for `i8` and `u8`), through
/// which integer conversions keep the low bits.
pub fn unsigned_cty(t: eqfuse_ir::types::ElemType) -> &'static str {
    match t.int_bits() {
        Some(8) => "uint8_t",
        Some(16) => "uint16_t",
        Some(32) => "unsigned int",
        _ => "unsigned long long",
    }
}

/// The code an integer division by zero records for its type (the error record's `what`):
/// the width for the signed types (32 and 64 as in version 1), 100 more for the unsigned
/// ones; [`type_of_code`] reads it back.
pub fn type_code(t: eqfuse_ir::types::ElemType) -> i64 {
    let bits = i64::from(t.int_bits().unwrap_or(64));
    if t.is_unsigned() {
        100 + bits
    } else {
        bits
    }
}

/// The integer type of a [`type_code`] (`i64` for an unknown code).
pub fn type_of_code(code: i64) -> eqfuse_ir::types::ElemType {
    use eqfuse_ir::types::ElemType;
    ElemType::INTS.into_iter().find(|t| type_code(*t) == code).unwrap_or(ElemType::I64)
}

/// The CUDA vector type of `w` elements of `t` (not `bool`).
pub(crate) fn vec_type(t: eqfuse_ir::types::ElemType, w: usize) -> String {
    let base = match t {
        eqfuse_ir::types::ElemType::F32 => "float",
        eqfuse_ir::types::ElemType::F64 => "double",
        eqfuse_ir::types::ElemType::I32 => "int",
        eqfuse_ir::types::ElemType::I64 | eqfuse_ir::types::ElemType::Bool => "longlong",
        eqfuse_ir::types::ElemType::I8 => "char",
        eqfuse_ir::types::ElemType::I16 => "short",
        eqfuse_ir::types::ElemType::U8 => "uchar",
        eqfuse_ir::types::ElemType::U16 => "ushort",
        eqfuse_ir::types::ElemType::U32 => "uint",
        eqfuse_ir::types::ElemType::U64 => "ulonglong",
    };
    format!("{base}{w}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::{convert, literal};
    use crate::Dialect;
    use eqfuse_ir::types::ElemType;
    use eqfuse_ir::value::Scalar;

    /// Every helper the scalar emitter names for an integer type is defined, once.
    #[test]
    fn every_integer_helper_is_defined() {
        // a definition: the name before the body's brace, on a line of the prelude
        let defs = |text: &str, name: &str| {
            let head = format!(" {name}(");
            text.lines()
                .filter(|l| {
                    l.starts_with("static __device__")
                        && l.split('{').next().is_some_and(|h| h.contains(&head))
                })
                .count()
        };
        let defined = |name: &str| defs(SCALAR_INTS, name);
        for t in ElemType::INTS {
            for op in [
                "shl", "shr", "popcount", "clz", "add", "sub", "mul", "neg", "div", "rem", "abs", "min",
                "max",
            ] {
                let name = format!("eq_{op}_{t}");
                let n = defined(&name) + defs(crate::prelude::SCALAR_HELPERS, &name);
                assert_eq!(n, 1, "{name}");
            }
            for f in ["f32", "f64"] {
                for name in [format!("eq_{f}_to_{t}"), format!("eq_{t}_to_{f}")] {
                    let n = defined(&name) + defs(crate::prelude::SCALAR_HELPERS, &name);
                    assert_eq!(n, 1, "{name}");
                }
            }
        }
    }

    /// Shifts mask their amount with no branch, in the type's working unsigned type;
    /// `clz` is defined at 0; 8- and 16-bit arithmetic cannot overflow `int`.
    #[test]
    fn integer_helpers_as_written() {
        for line in [
            "eq_shl_u8(uint8_t a, uint8_t b) { return (uint8_t)((unsigned int)a << (b & 7)); }",
            "eq_shr_i16(int16_t a, int16_t b) { return (int16_t)(a >> (b & 15)); }",
            "eq_shl_i64(long long a, long long b) { return (long long)((unsigned long long)a << (b & 63)); }",
            "eq_shr_u64(uint64_t a, uint64_t b) { return (uint64_t)(a >> (b & 63)); }",
            "eq_mul_u16(uint16_t a, uint16_t b) { return (uint16_t)((unsigned int)a * (unsigned int)b); }",
            "eq_clz_u8(uint8_t a) { return eq_clz64((unsigned long long)(uint8_t)a) - 56; }",
            "eq_div_i8(int8_t a, int8_t b) { return b == -1 ? eq_neg_i8(a) : (int8_t)(a / b); }",
            "eq_div_u32(uint32_t a, uint32_t b) { return (uint32_t)(a / b); }",
        ] {
            assert!(SCALAR_INTS.contains(line), "{line}");
        }
        assert!(BIT_COUNTS.contains("__builtin_clzll(x | 1ull) + (x == 0)"));
        assert!(BIT_COUNTS.contains("__popcll(x)") && BIT_COUNTS.contains("__clzll((long long)x)"));
    }

    /// Conversions: integers keep their low bits through the target's unsigned type,
    /// floats saturate through the helpers, bools are 0 or 1.
    #[test]
    fn conversions_as_written() {
        use ElemType::*;
        assert_eq!(convert("x", I64, U8), "((uint8_t)(uint8_t)(x))");
        assert_eq!(convert("x", U64, I16), "((int16_t)(uint16_t)(x))");
        assert_eq!(convert("x", I8, U64), "((uint64_t)(unsigned long long)(x))");
        assert_eq!(convert("x", F64, U32), "eq_f64_to_u32(x)");
        assert_eq!(convert("x", U64, F32), "eq_u64_to_f32(x)");
        assert_eq!(convert("x", Bool, U16), "(x ? (uint16_t)1 : (uint16_t)0)");
        assert_eq!(convert("x", I32, I64), "((long long)x)");
        assert!(SCALAR_INTS.contains("const bool hi = x >= 256.0f;"));
        assert!(
            SCALAR_INTS.contains("return nan ? (uint8_t)0 : (lo ? (uint8_t)0 : (hi ? (uint8_t)255 : v));")
        );
    }

    /// Literals of the new types are typed and exact.
    #[test]
    fn literals_as_written() {
        assert_eq!(literal(Scalar::U64(u64::MAX), Dialect::C), "18446744073709551615ULL");
        assert_eq!(literal(Scalar::I8(-128), Dialect::Cuda), "((int8_t)(-128))");
        assert_eq!(literal(Scalar::U32(7), Dialect::C), "7u");
        assert_eq!(literal(Scalar::U8(255), Dialect::C), "((uint8_t)255u)");
    }

    #[test]
    fn type_codes_read_back() {
        for t in ElemType::INTS {
            assert_eq!(type_of_code(type_code(t)), t);
        }
        assert_eq!(type_code(ElemType::I32), 32);
        assert_eq!(type_code(ElemType::I64), 64);
    }
}
