//! Contractions ([`eqfuse_ir::plan::contract`]) run as GEMM calls: `matrixmultiply`'s
//! `sgemm`/`dgemm`, which take any row and column strides, so transposed operands and
//! operands read through a sub-block are passed as they are, never copied.
//!
//! The work is split on the executor's rayon pool (so `RunOptions::threads` holds): batch
//! points across threads when there are enough of them, else the rows (or, for a wide and
//! short product, the columns) of each product in one panel per thread.
//!
//! `matrixmultiply` was chosen over `gemm` (faer's, used by candle) by measurement on this
//! machine (2 cores, AVX2; docs/contractions.md): the two ran within 10% of each other and
//! of NumPy's OpenBLAS at 512³ and 2048³, f32 and f64, and `matrixmultiply` is already in
//! the dependency tree (through `ndarray`) and builds in seconds.

#![allow(unsafe_code)]

use crate::col::{Col, ColMut, ColRef};
use crate::internal;
use crate::ptr::Ptr;
use crate::store::check_alloc;
use crate::store::Store;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::contract::{Contraction, Layout};
use eqfuse_ir::plan::Kernel;
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;

/// The float types GEMM runs on.
trait Float: Copy + Send + Sync + 'static {
    /// `C = alpha A B + beta C`, as `matrixmultiply::sgemm`/`dgemm`.
    ///
    /// # Safety
    /// As `matrixmultiply::sgemm`: every element addressed by the extents and strides is
    /// inside the allocation of its pointer, and `c`'s are written by this call only.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: *const Self,
        a_s: (isize, isize),
        b: *const Self,
        b_s: (isize, isize),
        c: *mut Self,
        c_s: (isize, isize),
    );
}

/// `Float` for a type through its `matrixmultiply` function.
macro_rules! float_gemm {
    ($t:ty, $f:path) => {
        impl Float for $t {
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                alpha: $t,
                a: *const $t,
                a_s: (isize, isize),
                b: *const $t,
                b_s: (isize, isize),
                c: *mut $t,
                c_s: (isize, isize),
            ) {
                // SAFETY: the caller's contract is the GEMM function's.
                unsafe { $f(m, k, n, alpha, a, a_s.0, a_s.1, b, b_s.0, b_s.1, 0.0, c, c_s.0, c_s.1) }
            }
        }
    };
}

float_gemm!(f32, matrixmultiply::sgemm);
float_gemm!(f64, matrixmultiply::dgemm);

/// Runs contraction `c` of kernel `k`: its result's shape and elements, or `None` when a
/// read of the reduction would be out of bounds (the caller then runs the kernel, whose
/// error is the one to report).
pub(crate) fn run(
    store: &Store<'_>,
    k: &Kernel,
    c: &Contraction,
    threads: usize,
    max_bytes: u64,
) -> Result<Option<(Vec<usize>, Col)>> {
    let (space, _) = k.shape(|v| store.load(v), |v| store.name(v))?;
    let (a, b) = (store.get(c.a.array)?, store.get(c.b.array)?);
    let (oa, ob) = c.offsets(|v| store.load(v))?;
    let Some(layout) = c.layout(&space, (&a.shape, &oa), (&b.shape, &ob)) else { return Ok(None) };
    let dst = k.lanes.first().ok_or_else(|| internal("a contraction with no lane"))?.dst;
    let elem = store.elem(dst)?;
    let shape = space[..space.len() - 1].to_vec();
    let len: usize = shape.iter().product();
    check_alloc(k.kind.as_str(), elem, len, max_bytes)?;
    let mut out = Col::zeros(elem, len);
    if len == 0 || layout.k == 0 {
        // no products: every element is the neutral element, +0.0
        return Ok(Some((shape, out)));
    }
    let alpha = c.alpha(elem, |v| store.load(v))?;
    match (a.elems(), b.elems(), out.as_mut(), alpha) {
        (ColRef::F32(x), ColRef::F32(y), ColMut::F32(z), Scalar::F32(s)) => {
            products(&layout, s, x, y, z, threads)
        }
        (ColRef::F64(x), ColRef::F64(y), ColMut::F64(z), Scalar::F64(s)) => {
            products(&layout, s, x, y, z, threads)
        }
        _ => return Err(internal("a contraction over arrays of another type")),
    }
    Ok(Some((shape, out)))
}

/// Every product of `l`: `z = alpha · x · y` per batch point.
fn products<T: Float>(l: &Layout, alpha: T, x: &[T], y: &[T], z: &mut [T], threads: usize) {
    let starts = l.batch_offsets();
    // each task writes its own part of the result: distinct batch points, or distinct rows
    // or columns of one product
    let out = Ptr(z.as_mut_ptr());
    let (xp, yp) = (x.as_ptr() as usize, y.as_ptr() as usize);
    // SAFETY (every call below): `Contraction::layout` built `l` from the operands' own
    // shapes and checked that every axis holds its dimension's extent from its offset on,
    // so each element the extents and strides address, from `base` plus each batch point's
    // offsets, is inside `x`, `y` and `z` (row-major arrays whose lengths are their shapes'
    // products); the result's strides are row-major over its own shape, so distinct batch
    // points, and distinct row (column) ranges of one product, are disjoint elements of `z`.
    let call = |(oa, ob, oc): (isize, isize, isize), rows: (usize, usize), cols: (usize, usize)| {
        let (r0, r1) = rows;
        let (c0, c1) = cols;
        let a = (xp as *const T).wrapping_offset(l.base.0 + oa + r0 as isize * l.a.0);
        let b = (yp as *const T).wrapping_offset(l.base.1 + ob + c0 as isize * l.b.1);
        let c = out.get().wrapping_offset(oc + r0 as isize * l.c.0 + c0 as isize * l.c.1);
        // SAFETY: the extents and strides stay inside `x`, `y` and this task's part of `z` (above).
        unsafe { T::gemm(r1 - r0, l.k, c1 - c0, alpha, a, l.a, b, l.b, c, l.c) };
    };
    let threads = threads.max(1);
    if starts.len() >= threads || threads == 1 {
        starts.into_par_iter().for_each(|o| call(o, (0, l.m), (0, l.n)));
        return;
    }
    // few batch points: split each product in panels, along its longer side
    let split = |len: usize| -> Vec<(usize, usize)> {
        let parts = threads.min(len.div_ceil(16)).max(1);
        (0..parts).map(|p| (p * len / parts, (p + 1) * len / parts)).filter(|(a, b)| a < b).collect()
    };
    for o in starts {
        if l.m >= l.n {
            split(l.m).into_par_iter().for_each(|rows| call(o, rows, (0, l.n)));
        } else {
            split(l.n).into_par_iter().for_each(|cols| call(o, (0, l.m), cols));
        }
    }
}

/// `f32` multiply-adds per second (two operations each) of an `n³` product on the current
/// rayon pool, the best of `reps` runs: what `eqfuse calibrate` stores as the GEMM rate.
pub fn rate(n: usize, reps: usize) -> Option<f64> {
    let threads = rayon::current_num_threads();
    let x: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 * 0.25).collect();
    let mut z = vec![0f32; n * n];
    let s = n as isize;
    let l = Layout { m: n, n, k: n, a: (s, 1), b: (s, 1), c: (s, 1), batch: Vec::new(), base: (0, 0) };
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        let t = std::time::Instant::now();
        products(&l, 1.0, &x, &x, &mut z, threads);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let flops = 2.0 * (n as f64).powi(3) / best;
    (flops.is_finite() && flops > 0.0).then_some(flops)
}
