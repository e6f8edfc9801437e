//! The device helpers every generated file starts with: the error record, integer
//! arithmetic that wraps instead of overflowing (no undefined behaviour), conversions that
//! saturate, NaN-propagating `min`/`max`, warp and block reductions and scans that keep the
//! operands in order, and compare-and-swap loops for `permute`.
//!
//! Everything here is plain CUDA C++ with no `#include`: NVRTC compiles each file on its own.

/// The prelude's first lines (placed after the file's `#define EQ_BLOCK ...` line).
pub const HEAD: &str = r#"// ---- eqfuse prelude ----
#define EQ_WARPS (EQ_BLOCK / 32)
#define EQ_FULL_MASK 0xffffffffu

"#;

/// The error record's writer (after [`crate::prelude::SCALAR_HEAD`]): the first failure wins.
pub const FAIL: &str = r#"// The error record: [code, kernel, what, element, count, index0 .. index7]. The first
// failure wins (atomicCAS on the code); the host reads it back after the launches. The code
// may carry the failing instruction's source line and column above its low 8 bits.
static __device__ __noinline__ void eq_fail(long long* rec, long long kernel, long long code, long long what,
                                            long long elem, int n, const long long* ix) {
  if (atomicCAS((unsigned long long*)rec, 0ull, (unsigned long long)code) == 0ull) {
    rec[1] = kernel;
    rec[2] = what;
    rec[3] = elem;
    rec[4] = n;
    for (int k = 0; k < n && k < EQ_REC_IX; ++k) rec[5 + k] = ix[k];
    __threadfence();
  }
}

"#;

/// The warp and block primitives (after [`crate::prelude::SCALAR_HELPERS`]).
pub const TAIL: &str = r#"// Warp shuffles of every element type (bool through int).
template <typename T> __device__ __forceinline__ T eq_shfl_down(T v, int d) { return __shfl_down_sync(EQ_FULL_MASK, v, d); }
template <> __device__ __forceinline__ bool eq_shfl_down<bool>(bool v, int d) {
  return __shfl_down_sync(EQ_FULL_MASK, (int)v, d) != 0;
}
template <typename T> __device__ __forceinline__ T eq_shfl_up(T v, int d) { return __shfl_up_sync(EQ_FULL_MASK, v, d); }
template <> __device__ __forceinline__ bool eq_shfl_up<bool>(bool v, int d) {
  return __shfl_up_sync(EQ_FULL_MASK, (int)v, d) != 0;
}

// A load that bypasses the (non-coherent) L1 cache: partial results of other blocks.
template <typename T> __device__ __forceinline__ T eq_load_volatile(const T* p) { return *(const volatile T*)p; }

// Warp reduction that keeps the operands in order (the operator need not commute): at
// step `off`, lane i (a multiple of 2*off) combines its range with the next one. The
// result is in lane 0.
template <typename T, typename Op> __device__ __forceinline__ T eq_warp_reduce(T v, const Op& op) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    T o = eq_shfl_down(v, off);
    if ((lane & (2 * off - 1)) == 0) v = op(v, o);
  }
  return v;
}

// Block reduction in thread order (threads hold consecutive ranges); the result is in
// thread 0. Every thread of the block must call it; `sh` holds EQ_WARPS values.
template <typename T, typename Op> __device__ __forceinline__ T eq_block_reduce(T v, T ne, const Op& op, T* sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = eq_warp_reduce(v, op);
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  T r = ne;
  if (warp == 0) {
    r = lane < EQ_WARPS ? sh[lane] : ne;
    r = eq_warp_reduce(r, op);
  }
  __syncthreads();
  return r;
}

// Block scan of one element per thread, in thread order, after `carry` (everything before
// this tile): `inc` = carry op x0 op .. op x_t, `exc` = carry op x0 op .. op x_{t-1},
// `total` = carry op (the whole tile). Every thread of the block must call it.
template <typename T, typename Op>
__device__ __forceinline__ void eq_block_scan(T x, T carry, T ne, const Op& op, T* sh, T& inc, T& exc, T& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    T y = eq_shfl_up(x, off);
    if (lane >= off) x = op(y, x);
  }
  if (lane == 31) sh[warp] = x;
  __syncthreads();
  if (warp == 0) {
    T w = lane < EQ_WARPS ? sh[lane] : ne;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      T y = eq_shfl_up(w, off);
      if (lane >= off) w = op(y, w);
    }
    if (lane < EQ_WARPS) sh[lane] = w;
  }
  __syncthreads();
  const T prefix = warp > 0 ? op(carry, sh[warp - 1]) : carry;
  const T xe = eq_shfl_up(x, 1);
  inc = op(prefix, x);
  exc = lane > 0 ? op(prefix, xe) : prefix;
  total = op(carry, sh[EQ_WARPS - 1]);
  __syncthreads();
}

// Decoupled look-back (single-pass scan and compaction; Merrill and Garland): called by
// the 32 lanes of warp 0 of tile `tile` (tiles numbered in the order their blocks started)
// with the tile's aggregate; returns the tile's exclusive prefix in lane 0. Lane 0
// publishes the aggregate (flag 1); the warp then inspects the 32 predecessors below
// `base` at once: lane l waits for tile base - 32 + l to publish anything, the highest lane
// whose tile has published its inclusive prefix (flag 2) takes it, the lanes above take
// the aggregates, the lanes below the neutral element, and an ordered warp reduction folds
// them; when no lane found an inclusive prefix the window moves 32 tiles down. Lane 0
// then publishes the tile's inclusive prefix. A value is written before its flag with a
// fence between; a reader fences between the flag and the value. A predecessor started
// earlier and publishes its aggregate without waiting for anyone, so the waits end. Tests
// define EQ_LOOKBACK_SPARSE: only every fortieth tile publishes an inclusive prefix, so that
// the look-back crosses aggregates and moves its window.
template <typename T, typename Op>
__device__ __forceinline__ T eq_lookback(long long tile, T agg, T ne, const Op& op, unsigned int* flags, T* aggs, T* incs) {
  const int lane = threadIdx.x & 31;
  T prefix = ne;
  if (tile > 0) {
    if (lane == 0) {
      aggs[tile] = agg;
      __threadfence();
      *(volatile unsigned int*)&flags[tile] = 1u;
    }
    for (long long base = tile; base > 0; base -= 32) {
      const long long p = base - 32 + lane;
      unsigned int fl = 2u;
      if (p >= 0) {
        do { fl = *(volatile unsigned int*)&flags[p]; } while (fl == 0u);
      }
      __threadfence();
      // the highest lane holding an inclusive prefix (lanes below 0 hold the start: 2)
      int k = (fl == 2u && p >= 0) || p < 0 ? lane : -1;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const int o = __shfl_down_sync(EQ_FULL_MASK, k, off);
        k = o > k ? o : k;
      }
      k = __shfl_sync(EQ_FULL_MASK, k, 0);
      T v = ne;
      if (p >= 0 && lane > k) v = eq_load_volatile(&aggs[p]);
      if (p >= 0 && lane == k) v = eq_load_volatile(&incs[p]);
      v = eq_warp_reduce(v, op);
      prefix = op(v, prefix);
      if (k >= 0) break;
    }
  }
#ifdef EQ_LOOKBACK_SPARSE
  if (tile % 40 != 0) return prefix;
#endif
  if (lane == 0) {
    incs[tile] = op(prefix, agg);
    __threadfence();
    *(volatile unsigned int*)&flags[tile] = 2u;
  }
  return prefix;
}

struct EqAddI64 {
  __device__ __forceinline__ long long operator()(long long a, long long b) const { return a + b; }
};

// Compare-and-swap loops for permute: `op.apply(old, x, &new)` (false: it failed and
// recorded an error). 4- and 8-byte types swap their bits; bool swaps its byte inside the
// aligned 32-bit word that holds it (buffers are padded to a multiple of 8 bytes).
__device__ __forceinline__ unsigned int eq_bits32(int v) { return (unsigned int)v; }
__device__ __forceinline__ unsigned int eq_bits32(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned long long eq_bits64(long long v) { return (unsigned long long)v; }
__device__ __forceinline__ unsigned long long eq_bits64(double v) { return (unsigned long long)__double_as_longlong(v); }
template <typename T> __device__ __forceinline__ T eq_from_bits32(unsigned int u);
template <> __device__ __forceinline__ int eq_from_bits32<int>(unsigned int u) { return (int)u; }
template <> __device__ __forceinline__ float eq_from_bits32<float>(unsigned int u) { return __uint_as_float(u); }
template <typename T> __device__ __forceinline__ T eq_from_bits64(unsigned long long u);
template <> __device__ __forceinline__ long long eq_from_bits64<long long>(unsigned long long u) { return (long long)u; }
template <> __device__ __forceinline__ double eq_from_bits64<double>(unsigned long long u) {
  return __longlong_as_double((long long)u);
}

// The unsigned 32- and 64-bit types swap their bits as they are (`uint64_t` is `unsigned
// long` under some compilers, `unsigned long long` under others: both are here, before the
// loops that call them).
__device__ __forceinline__ unsigned int eq_bits32(unsigned int v) { return v; }
__device__ __forceinline__ unsigned long long eq_bits64(unsigned long long v) { return v; }
__device__ __forceinline__ unsigned long long eq_bits64(unsigned long v) { return (unsigned long long)v; }
template <> __device__ __forceinline__ unsigned int eq_from_bits32<unsigned int>(unsigned int u) { return u; }
template <> __device__ __forceinline__ unsigned long long eq_from_bits64<unsigned long long>(unsigned long long u) {
  return u;
}
template <> __device__ __forceinline__ unsigned long eq_from_bits64<unsigned long>(unsigned long long u) {
  return (unsigned long)u;
}

template <typename T, typename Op> __device__ __forceinline__ void eq_atomic_cas32(T* p, T x, const Op& op) {
  unsigned int* w = (unsigned int*)p;
  unsigned int old = *(volatile unsigned int*)w, assumed;
  do {
    assumed = old;
    T nv;
    if (!op.apply(eq_from_bits32<T>(assumed), x, &nv)) return;
    old = atomicCAS(w, assumed, eq_bits32(nv));
  } while (old != assumed);
}

template <typename T, typename Op> __device__ __forceinline__ void eq_atomic_cas64(T* p, T x, const Op& op) {
  unsigned long long* w = (unsigned long long*)p;
  unsigned long long old = *(volatile unsigned long long*)w, assumed;
  do {
    assumed = old;
    T nv;
    if (!op.apply(eq_from_bits64<T>(assumed), x, &nv)) return;
    old = atomicCAS(w, assumed, eq_bits64(nv));
  } while (old != assumed);
}

template <typename Op> __device__ __forceinline__ void eq_atomic_cas_bool(bool* p, bool x, const Op& op) {
  const unsigned long long addr = (unsigned long long)p;
  unsigned int* w = (unsigned int*)(addr & ~3ull);
  const int sh = (int)(addr & 3ull) * 8;
  unsigned int old = *(volatile unsigned int*)w, assumed;
  do {
    assumed = old;
    bool nv;
    if (!op.apply(((assumed >> sh) & 0xffu) != 0u, x, &nv)) return;
    const unsigned int nw = (assumed & ~(0xffu << sh)) | ((nv ? 1u : 0u) << sh);
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
}

// 1- and 2-byte integers swap themselves inside the aligned 32-bit word that holds them,
// as bool does.
template <typename T, typename Op> __device__ __forceinline__ void eq_atomic_cas_small(T* p, T x, const Op& op) {
  const unsigned long long addr = (unsigned long long)p;
  unsigned int* w = (unsigned int*)(addr & ~3ull);
  const int sh = (int)(addr & 3ull) * 8;
  const unsigned int mask = sizeof(T) == 1 ? 0xffu : 0xffffu;
  unsigned int old = *(volatile unsigned int*)w, assumed;
  do {
    assumed = old;
    T nv;
    if (!op.apply((T)((assumed >> sh) & mask), x, &nv)) return;
    const unsigned int nw = (assumed & ~(mask << sh)) | (((unsigned int)nv & mask) << sh);
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
}

// ---- end of prelude ----
"#;

/// The warp and block primitives over groups, placed before the prelude's last line in the
/// files of kernels with a reduction or scan over a group: [`TAIL`]'s reductions, scan and
/// look-back for a group's value `V`, a struct of its components that lives in registers
/// and brings its own shuffles (`V::shfl_down`, `V::shfl_up`: one per component), with
/// storage `S`, a view of one array per component (`get`, `put`, `get_volatile`), in shared
/// or global memory: a group never reaches memory as a struct. The operands stay in order
/// (the lower index on the left), as in [`TAIL`].
pub const GROUPS: &str = r#"// ---- reductions and scans over groups ----
template <typename V, typename Op> __device__ __forceinline__ V eq_gwarp_reduce(V v, const Op& op) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    V o = V::shfl_down(v, off);
    if ((lane & (2 * off - 1)) == 0) v = op(v, o);
  }
  return v;
}

template <typename V, typename Op, typename S>
__device__ __forceinline__ V eq_gblock_reduce(V v, V ne, const Op& op, const S& sh) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = eq_gwarp_reduce(v, op);
  if (lane == 0) sh.put(warp, v);
  __syncthreads();
  V r = ne;
  if (warp == 0) {
    r = lane < EQ_WARPS ? sh.get(lane) : ne;
    r = eq_gwarp_reduce(r, op);
  }
  __syncthreads();
  return r;
}

template <typename V, typename Op, typename S>
__device__ __forceinline__ void eq_gblock_scan(V x, V carry, V ne, const Op& op, const S& sh, V& inc, V& exc, V& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int off = 1; off < 32; off <<= 1) {
    V y = V::shfl_up(x, off);
    if (lane >= off) x = op(y, x);
  }
  if (lane == 31) sh.put(warp, x);
  __syncthreads();
  if (warp == 0) {
    V w = lane < EQ_WARPS ? sh.get(lane) : ne;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      V y = V::shfl_up(w, off);
      if (lane >= off) w = op(y, w);
    }
    if (lane < EQ_WARPS) sh.put(lane, w);
  }
  __syncthreads();
  const V prefix = warp > 0 ? op(carry, sh.get(warp - 1)) : carry;
  const V xe = V::shfl_up(x, 1);
  inc = op(prefix, x);
  exc = lane > 0 ? op(prefix, xe) : prefix;
  total = op(carry, sh.get(EQ_WARPS - 1));
  __syncthreads();
}

template <typename V, typename Op, typename S>
__device__ __forceinline__ V eq_glookback(long long tile, V agg, V ne, const Op& op, unsigned int* flags, const S& aggs, const S& incs) {
  const int lane = threadIdx.x & 31;
  V prefix = ne;
  if (tile > 0) {
    if (lane == 0) {
      aggs.put(tile, agg);
      __threadfence();
      *(volatile unsigned int*)&flags[tile] = 1u;
    }
    for (long long base = tile; base > 0; base -= 32) {
      const long long p = base - 32 + lane;
      unsigned int fl = 2u;
      if (p >= 0) {
        do { fl = *(volatile unsigned int*)&flags[p]; } while (fl == 0u);
      }
      __threadfence();
      int k = (fl == 2u && p >= 0) || p < 0 ? lane : -1;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const int o = __shfl_down_sync(EQ_FULL_MASK, k, off);
        k = o > k ? o : k;
      }
      k = __shfl_sync(EQ_FULL_MASK, k, 0);
      V v = ne;
      if (p >= 0 && lane > k) v = aggs.get_volatile(p);
      if (p >= 0 && lane == k) v = incs.get_volatile(p);
      v = eq_gwarp_reduce(v, op);
      prefix = op(v, prefix);
      if (k >= 0) break;
    }
  }
#ifdef EQ_LOOKBACK_SPARSE
  if (tile % 40 != 0) return prefix;
#endif
  if (lane == 0) {
    incs.put(tile, op(prefix, agg));
    __threadfence();
    *(volatile unsigned int*)&flags[tile] = 2u;
  }
  return prefix;
}

"#;
