//! The start of every generated C translation unit: the headers, the spellings that let the
//! shared scalar helpers ([`crate::prelude`]) compile as C11, and the bit casts.

/// The dialect's definitions, before [`crate::prelude::SCALAR_HEAD`].
pub const HEAD: &str = r#"// ---- eqfuse prelude (C) ----
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

// The shared helpers are written as CUDA declares them; in C they are inlined functions.
#define __device__
#define __forceinline__ inline __attribute__((always_inline))
#define EQ_EXPORT __attribute__((visibility("default")))

static inline __attribute__((always_inline)) int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline __attribute__((always_inline)) long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline __attribute__((always_inline)) float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline __attribute__((always_inline)) double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline __attribute__((always_inline)) float eq_f32_from_bits(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline __attribute__((always_inline)) double eq_f64_from_bits(long long u) { double f; memcpy(&f, &u, 8); return f; }

"#;

/// After [`crate::prelude::SCALAR_HELPERS`].
pub const TAIL: &str = r#"typedef union EqScalar EqScalar;
// ---- end of prelude ----
"#;
