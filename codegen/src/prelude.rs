//! The scalar helpers every generated file holds, CUDA or C: the error codes, the union
//! that carries a host scalar, integer arithmetic that wraps instead of overflowing (no
//! undefined behaviour), conversions that saturate, NaN-propagating `min`/`max`.
//!
//! The text is written once, in the subset of C that CUDA C++ and C11 share: functions are
//! declared `static __device__ __forceinline__`, and the C prelude ([`crate::c`]) defines
//! `__device__` as nothing, `__forceinline__` as an always-inlined `inline`, and the two
//! bit casts (`__float_as_int`, `__double_as_longlong`) CUDA has as intrinsics. So both
//! backends compute every helper with the same code.

/// Error codes and the host-scalar union (before the dialect's error writer).
pub const SCALAR_HEAD: &str = r#"#ifdef __CUDACC_RTC__
// NVRTC compiles with no standard header: the fixed-width integer types of `cty`.
typedef signed char int8_t;
typedef short int16_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#endif

// Error codes of the error record (decoded on the host into E-INDEX / E-DIV-ZERO).
#define EQ_ERR_INDEX 1
#define EQ_ERR_DIM 2
#define EQ_ERR_DIV 3
#define EQ_ERR_REM 4
#define EQ_ERR_TARGET 5
#define EQ_REC_IX 8

#define EQ_I32_MIN (-2147483647 - 1)
#define EQ_I32_MAX 2147483647
#define EQ_I64_MIN (-9223372036854775807LL - 1LL)
#define EQ_I64_MAX 9223372036854775807LL

// A host scalar passed by value in an 8-byte slot of the kernel's argument block.
union EqScalar {
  long long i64;
  double f64;
  int i32;
  float f32;
  bool b;
  signed char i8;
  short i16;
  unsigned char u8;
  unsigned short u16;
  unsigned int u32;
  unsigned long long u64;
};

"#;

/// Integer, `min`/`max` and conversion helpers (after the dialect's error writer).
pub const SCALAR_HELPERS: &str = r#"// Integers wrap (two's complement): the arithmetic is done in unsigned types.
static __device__ __forceinline__ int eq_add_i32(int a, int b) { return (int)((unsigned int)a + (unsigned int)b); }
static __device__ __forceinline__ int eq_sub_i32(int a, int b) { return (int)((unsigned int)a - (unsigned int)b); }
static __device__ __forceinline__ int eq_mul_i32(int a, int b) { return (int)((unsigned int)a * (unsigned int)b); }
static __device__ __forceinline__ int eq_neg_i32(int a) { return (int)(0u - (unsigned int)a); }
static __device__ __forceinline__ int eq_abs_i32(int a) { return a < 0 ? eq_neg_i32(a) : a; }
// b != 0 here; MIN / -1 == MIN and MIN % -1 == 0.
static __device__ __forceinline__ int eq_div_i32(int a, int b) { return b == -1 ? eq_neg_i32(a) : a / b; }
static __device__ __forceinline__ int eq_rem_i32(int a, int b) { return b == -1 ? 0 : a % b; }
// With EQ_WRAPV (the CPU build: -fwrapv makes signed overflow wrap) the plain operators,
// which the vectoriser sees as affine in an index (`t[i, j + 1]` a contiguous load, not a
// gather); the same bits as the unsigned form either way.
static __device__ __forceinline__ long long eq_add_i64(long long a, long long b) {
#ifdef EQ_WRAPV
  return a + b;
#else
  return (long long)((unsigned long long)a + (unsigned long long)b);
#endif
}
static __device__ __forceinline__ long long eq_sub_i64(long long a, long long b) {
#ifdef EQ_WRAPV
  return a - b;
#else
  return (long long)((unsigned long long)a - (unsigned long long)b);
#endif
}
static __device__ __forceinline__ long long eq_mul_i64(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}
static __device__ __forceinline__ long long eq_neg_i64(long long a) { return (long long)(0ull - (unsigned long long)a); }
static __device__ __forceinline__ long long eq_abs_i64(long long a) { return a < 0 ? eq_neg_i64(a) : a; }
static __device__ __forceinline__ long long eq_div_i64(long long a, long long b) { return b == -1 ? eq_neg_i64(a) : a / b; }
static __device__ __forceinline__ long long eq_rem_i64(long long a, long long b) { return b == -1 ? 0 : a % b; }
static __device__ __forceinline__ int eq_i64_to_i32(long long a) { return (int)(unsigned int)(unsigned long long)a; }
// Integer to float. The sign bit is cleared when the integer is 0: the value is the same,
// but a C compiler that may assume no floating-point traps (`-fno-trapping-math`) turns
// `(double)(long long)x` into `trunc(x)`, which keeps the sign of -0.0 where the integer has
// none; the mask, a function of the integer, undoes that whatever the compiler did.
static __device__ __forceinline__ float eq_i32_to_f32(int i) {
  return __int_as_float(__float_as_int((float)i) & (i == 0 ? 0x7fffffff : -1));
}
static __device__ __forceinline__ float eq_i64_to_f32(long long i) {
  return __int_as_float(__float_as_int((float)i) & (i == 0 ? 0x7fffffff : -1));
}
static __device__ __forceinline__ double eq_i32_to_f64(int i) {
  return __longlong_as_double(__double_as_longlong((double)i) & (i == 0 ? 0x7fffffffffffffffLL : -1LL));
}
static __device__ __forceinline__ double eq_i64_to_f64(long long i) {
  return __longlong_as_double(__double_as_longlong((double)i) & (i == 0 ? 0x7fffffffffffffffLL : -1LL));
}
static __device__ __forceinline__ int eq_min_i32(int a, int b) { return a < b ? a : b; }
static __device__ __forceinline__ int eq_max_i32(int a, int b) { return a > b ? a : b; }
static __device__ __forceinline__ long long eq_min_i64(long long a, long long b) { return a < b ? a : b; }
static __device__ __forceinline__ long long eq_max_i64(long long a, long long b) { return a > b ? a : b; }
static __device__ __forceinline__ bool eq_min_bool(bool a, bool b) { return a && b; }
static __device__ __forceinline__ bool eq_max_bool(bool a, bool b) { return a || b; }

// Float min/max: NaN when either operand is NaN; -0.0 below 0.0. Branch-free, with `|` and
// `&` rather than `||` and `&&`, so that loops calling them vectorise.
static __device__ __forceinline__ float eq_min_f32(float a, float b) {
  const float s = a + b;
  const float m = ((a < b) | ((a == b) & (__float_as_int(a) < 0))) ? a : b;
  return ((a != a) | (b != b)) ? s : m;
}
static __device__ __forceinline__ float eq_max_f32(float a, float b) {
  const float s = a + b;
  const float m = ((a > b) | ((a == b) & (__float_as_int(a) >= 0))) ? a : b;
  return ((a != a) | (b != b)) ? s : m;
}
static __device__ __forceinline__ double eq_min_f64(double a, double b) {
  const double s = a + b;
  const double m = ((a < b) | ((a == b) & (__double_as_longlong(a) < 0))) ? a : b;
  return ((a != a) | (b != b)) ? s : m;
}
static __device__ __forceinline__ double eq_max_f64(double a, double b) {
  const double s = a + b;
  const double m = ((a > b) | ((a == b) & (__double_as_longlong(a) >= 0))) ? a : b;
  return ((a != a) | (b != b)) ? s : m;
}

// Float to integer: truncation toward zero, saturating at the bounds, NaN to 0.
// Branch-free (selects of computed values) so that loops calling them vectorise.
static __device__ __forceinline__ int eq_f32_to_i32(float x) {
  const bool nan = x != x;
  const bool lo = x <= -2147483648.0f;
  const bool hi = x >= 2147483648.0f;
  const int v = (int)((nan | lo | hi) ? 0.0f : x);
  return nan ? 0 : (lo ? EQ_I32_MIN : (hi ? EQ_I32_MAX : v));
}
static __device__ __forceinline__ long long eq_f32_to_i64(float x) {
  const bool nan = x != x;
  const bool lo = x <= -9223372036854775808.0f;
  const bool hi = x >= 9223372036854775808.0f;
  const long long v = (long long)((nan | lo | hi) ? 0.0f : x);
  return nan ? 0 : (lo ? EQ_I64_MIN : (hi ? EQ_I64_MAX : v));
}
static __device__ __forceinline__ int eq_f64_to_i32(double x) {
  const bool nan = x != x;
  const bool lo = x <= -2147483648.0;
  const bool hi = x >= 2147483648.0;
  const int v = (int)((nan | lo | hi) ? 0.0 : x);
  return nan ? 0 : (lo ? EQ_I32_MIN : (hi ? EQ_I32_MAX : v));
}
static __device__ __forceinline__ long long eq_f64_to_i64(double x) {
  const bool nan = x != x;
  const bool lo = x <= -9223372036854775808.0;
  const bool hi = x >= 9223372036854775808.0;
  const long long v = (long long)((nan | lo | hi) ? 0.0 : x);
  return nan ? 0 : (lo ? EQ_I64_MIN : (hi ? EQ_I64_MAX : v));
}

"#;
