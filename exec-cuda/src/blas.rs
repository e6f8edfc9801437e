//! Contractions ([`eqfuse_ir::plan::contract`]) as cuBLAS calls: the row-major
//! [`Layout`] of a product turned into the column-major `gemmStridedBatched` calls cuBLAS
//! takes, without copying an operand.
//!
//! cuBLAS reads column-major matrices with one unit stride each: an operand is passed as it
//! is (`N`) when its rows are contiguous in the column-major sense, or transposed (`T`) when
//! its columns are. A row-major result `C = A B` (`m × n`) is, read column-major, `Cᵀ`
//! (`n × m`), so the call computes `Cᵀ = Bᵀ Aᵀ`: cuBLAS's first operand is our `B`, its
//! second our `A`. Where an operand has no unit stride (a read such as `a[2 i, p]` never
//! reaches here, but a sub-block of a sub-block might), or an extent does not fit cuBLAS's
//! 32-bit integers, there is no call ([`calls`] gives `None`) and the kernel runs as the
//! reduction it is.
//!
//! Batch points whose offsets step evenly (one batch dimension, or several that are
//! contiguous in every operand) become one strided-batched call; others a call per point.

use eqfuse_ir::plan::contract::Layout;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// One cuBLAS operand: where it starts (in elements), its leading dimension, and whether it
/// is read transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Operand {
    pub off: usize,
    pub ld: i32,
    pub trans: bool,
}

/// One `gemmStridedBatched` call as cuBLAS defines it (column-major):
/// `C[z] = alpha · op(X[z]) · op(Y[z])` for `z` in `0 .. batch`, `op(X)` of `m × k`,
/// `op(Y)` of `k × n`, `C` of `m × n` with leading dimension `ldc`, operand `z` starting
/// `z · stride` elements after the first. `X` is the contraction's right operand `B`, `Y`
/// its left operand `A` (module docs).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GemmCall {
    pub m: i32,
    pub n: i32,
    pub k: i32,
    /// The scale, of the operands' element type ([`GemmCall::elem`]).
    pub alpha: Scalar,
    pub x: Operand,
    pub y: Operand,
    pub c_off: usize,
    pub ldc: i32,
    pub batch: i32,
    /// Strides between batch points of `X`, `Y` and `C`, in elements.
    pub strides: (i64, i64, i64),
}

impl GemmCall {
    /// The element type of the operands and the result: `alpha`'s.
    pub(crate) fn elem(&self) -> ElemType {
        self.alpha.elem_type()
    }

    /// How many elements `X`, `Y` and `C` must hold for every element the call addresses to
    /// be inside them (`None` on overflow): what the runtime checks before a call.
    pub(crate) fn needs(&self) -> Option<(usize, usize, usize)> {
        let u = |x: i32| usize::try_from(x).ok();
        let (m, n, k, batch) = (u(self.m)?, u(self.n)?, u(self.k)?, u(self.batch)?);
        if m == 0 || n == 0 || k == 0 || batch == 0 {
            return Some((0, 0, 0));
        }
        // the last element of a `rows × cols` operand stored with leading dimension `ld`,
        // plus one, over every batch point
        let end = |off: usize, stride: i64, rows: usize, cols: usize, ld: i32| -> Option<usize> {
            let last = (rows - 1).checked_add((cols - 1).checked_mul(u(ld)?)?)?;
            let step = usize::try_from(stride).ok()?.checked_mul(batch - 1)?;
            off.checked_add(step)?.checked_add(last)?.checked_add(1)
        };
        let stored =
            |o: &Operand, rows: usize, cols: usize| if o.trans { (cols, rows) } else { (rows, cols) };
        let (xr, xc) = stored(&self.x, m, k);
        let (yr, yc) = stored(&self.y, k, n);
        Some((
            end(self.x.off, self.strides.0, xr, xc, self.x.ld)?,
            end(self.y.off, self.strides.1, yr, yc, self.y.ld)?,
            end(self.c_off, self.strides.2, m, n, self.ldc)?,
        ))
    }
}

/// How cuBLAS reads a column-major `rows × cols` matrix whose element `(r, c)` is at
/// `r · rs + c · cs`: as it is (`trans` false, leading dimension `cs`) or transposed (`ld`
/// `rs`); `None` when neither stride is a unit one. An extent of 1 leaves its stride free.
fn operand(rows: usize, cols: usize, rs: isize, cs: isize) -> Option<(bool, i32)> {
    let fits = |x: usize| i32::try_from(x.max(1)).ok();
    let pos = |s: isize| usize::try_from(s).ok();
    if rs == 1 || rows <= 1 {
        let ld = if cols <= 1 { rows.max(1) } else { pos(cs)? };
        if ld >= rows.max(1) {
            return Some((false, fits(ld)?));
        }
    }
    if cs == 1 || cols <= 1 {
        let ld = if rows <= 1 { cols.max(1) } else { pos(rs)? };
        if ld >= cols.max(1) {
            return Some((true, fits(ld)?));
        }
    }
    None
}

/// The step of `xs` when it is an arithmetic sequence (0 for one element).
fn step(xs: &[isize]) -> Option<isize> {
    let d = match xs {
        [a, b, ..] => b - a,
        _ => 0,
    };
    xs.windows(2).all(|w| w[1] - w[0] == d).then_some(d)
}

/// The calls that compute the product `l` (scaled by `alpha`, of its element type) into a row-major
/// result, or `None` when cuBLAS cannot take it as it is (module docs). No call for an empty
/// result; a `k` of 0 still gives calls (the caller zeroes the result instead).
pub(crate) fn calls(l: &Layout, alpha: Scalar) -> Option<Vec<GemmCall>> {
    if !matches!(alpha.elem_type(), ElemType::F32 | ElemType::F64) {
        return None;
    }
    let (m, n, k) = (l.m, l.n, l.k);
    // C as cuBLAS sees it: n × m, (j, i) at j · c.1 + i · c.0
    let (c_trans, ldc) = operand(n, m, l.c.1, l.c.0)?;
    if c_trans {
        return None;
    }
    // X = B read as n × k: (j, p) at j · b.1 + p · b.0; Y = A as k × m: (p, i) at p · a.1 + i · a.0
    let (xt, ldx) = operand(n, k, l.b.1, l.b.0)?;
    let (yt, ldy) = operand(k, m, l.a.1, l.a.0)?;
    let (m32, n32, k32) = (i32::try_from(n).ok()?, i32::try_from(m).ok()?, i32::try_from(k).ok()?);
    let at = |base: isize, off: isize| usize::try_from(base.checked_add(off)?).ok();
    let points = l.batch_offsets();
    let call = |(oa, ob, oc): (isize, isize, isize), batch: usize, strides: (i64, i64, i64)| {
        Some(GemmCall {
            m: m32,
            n: n32,
            k: k32,
            alpha,
            x: Operand { off: at(l.base.1, ob)?, ld: ldx, trans: xt },
            y: Operand { off: at(l.base.0, oa)?, ld: ldy, trans: yt },
            c_off: at(0, oc)?,
            ldc,
            batch: i32::try_from(batch).ok()?,
            strides,
        })
    };
    let (sa, sb, sc): (Vec<isize>, Vec<isize>, Vec<isize>) = (
        points.iter().map(|p| p.0).collect(),
        points.iter().map(|p| p.1).collect(),
        points.iter().map(|p| p.2).collect(),
    );
    if let (Some(da), Some(db), Some(dc), Some(&first)) = (step(&sa), step(&sb), step(&sc), points.first()) {
        if da >= 0 && db >= 0 && dc >= 0 && i32::try_from(points.len()).is_ok() {
            return Some(vec![call(first, points.len(), (db as i64, da as i64, dc as i64))?]);
        }
    }
    points.into_iter().map(|p| call(p, 1, (0, 0, 0))).collect()
}

/// Runs `g` on host slices, as cuBLAS defines it: the reference the emulator runs, and the
/// unit tests' check of [`calls`]. `None` when an element it addresses is outside a slice.
#[cfg(test)]
pub(crate) fn reference<T>(g: &GemmCall, x: &[T], y: &[T], c: &mut [T]) -> Option<()>
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + Default + From<f32> + 'static,
{
    let alpha: T = match g.alpha {
        Scalar::F32(a) => T::from(a),
        Scalar::F64(a) => from_f64::<T>(a)?,
        _ => return None,
    };
    let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
    let get = |o: &Operand, z: usize, stride: i64, r: usize, col: usize, s: &[T]| -> Option<T> {
        let ld = o.ld as usize;
        let at = if o.trans { col + r * ld } else { r + col * ld };
        let base = o.off.checked_add(usize::try_from(stride).ok()?.checked_mul(z)?)?;
        s.get(base.checked_add(at)?).copied()
    };
    for z in 0..g.batch as usize {
        for j in 0..n {
            for i in 0..m {
                let mut acc = T::default();
                for p in 0..k {
                    acc = acc + get(&g.x, z, g.strides.0, i, p, x)? * get(&g.y, z, g.strides.1, p, j, y)?;
                }
                let at = g.c_off + usize::try_from(g.strides.2).ok()? * z + i + j * g.ldc as usize;
                *c.get_mut(at)? = alpha * acc;
            }
        }
    }
    Some(())
}

/// `x` as `T` when `T` is `f64` (the only type an `f64` alpha comes with).
#[cfg(test)]
fn from_f64<T: Copy + 'static>(x: f64) -> Option<T> {
    (&x as &dyn std::any::Any).downcast_ref::<T>().copied()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A row-major product with the given strides, computed directly.
    fn direct(l: &Layout, a: &[f64], b: &[f64], len: usize) -> Vec<f64> {
        let mut c = vec![f64::NAN; len];
        for (oa, ob, oc) in l.batch_offsets() {
            for i in 0..l.m {
                for j in 0..l.n {
                    let mut s = 0.0;
                    for p in 0..l.k {
                        let ai = l.base.0 + oa + i as isize * l.a.0 + p as isize * l.a.1;
                        let bi = l.base.1 + ob + p as isize * l.b.0 + j as isize * l.b.1;
                        s += a[ai as usize] * b[bi as usize];
                    }
                    c[(oc + i as isize * l.c.0 + j as isize * l.c.1) as usize] = s;
                }
            }
        }
        c
    }

    fn check(l: &Layout, a_len: usize, b_len: usize, c_len: usize) -> usize {
        let a: Vec<f64> = (0..a_len).map(|x| (x % 13) as f64 - 6.0).collect();
        let b: Vec<f64> = (0..b_len).map(|x| (x % 7) as f64 * 0.5).collect();
        let calls = calls(l, Scalar::F64(1.0)).expect("cuBLAS takes it");
        let mut c = vec![f64::NAN; c_len];
        for g in &calls {
            let (nx, ny, nc) = g.needs().expect("no overflow");
            assert!(nx <= b_len && ny <= a_len && nc <= c_len, "{g:?} needs {:?}", (nx, ny, nc));
            reference(g, &b, &a, &mut c).expect("in bounds");
        }
        assert_eq!(c, direct(l, &a, &b, c_len), "{l:?} -> {calls:?}");
        calls.len()
    }

    #[test]
    fn a_plain_product_is_one_call_with_no_transpose() {
        // a: 3 × 4, b: 4 × 5, c: 3 × 5
        let l = Layout { m: 3, n: 5, k: 4, a: (4, 1), b: (5, 1), c: (5, 1), batch: vec![], base: (0, 0) };
        assert_eq!(check(&l, 12, 20, 15), 1);
        let g = &calls(&l, Scalar::F64(1.0)).unwrap()[0];
        assert!(!g.x.trans && !g.y.trans);
        assert_eq!((g.m, g.n, g.k, g.ldc), (5, 3, 4, 5));
    }

    #[test]
    fn transposed_operands_are_read_transposed_not_copied() {
        // a read as a[p, i] (a: 4 × 3), b as b[j, p] (b: 5 × 4)
        let l = Layout { m: 3, n: 5, k: 4, a: (1, 3), b: (1, 4), c: (5, 1), batch: vec![], base: (0, 0) };
        assert_eq!(check(&l, 12, 20, 15), 1);
        let g = &calls(&l, Scalar::F64(1.0)).unwrap()[0];
        assert!(g.x.trans && g.y.trans);
    }

    #[test]
    fn even_batches_are_one_strided_call_and_others_a_call_each() {
        // [2, 3] batch points over a: [2, 3, 2, 4], b: [2, 3, 4, 2], c: [2, 3, 2, 2]
        let even = Layout {
            m: 2,
            n: 2,
            k: 4,
            a: (4, 1),
            b: (2, 1),
            c: (2, 1),
            batch: vec![(2, 24, 24, 12), (3, 8, 8, 4)],
            base: (0, 0),
        };
        assert_eq!(check(&even, 48, 48, 24), 1);
        // the batch read through a sub-block of a larger a: uneven steps
        let uneven = Layout { batch: vec![(2, 40, 24, 12), (3, 8, 8, 4)], ..even.clone() };
        assert_eq!(check(&uneven, 80, 48, 24), 6);
    }

    #[test]
    fn a_sub_block_starts_at_its_offset() {
        // a: 5 × 6 read at a[i + 1, p + 2], m = 3, k = 4; b: 4 × 2
        let l = Layout { m: 3, n: 2, k: 4, a: (6, 1), b: (2, 1), c: (2, 1), batch: vec![], base: (8, 0) };
        assert_eq!(check(&l, 30, 8, 6), 1);
    }

    #[test]
    fn vectors_and_unit_extents_leave_their_strides_free() {
        // n = 1 (a matrix–vector product) and m = 1
        let mv = Layout { m: 3, n: 1, k: 4, a: (4, 1), b: (1, 0), c: (1, 0), batch: vec![], base: (0, 0) };
        assert_eq!(check(&mv, 12, 4, 3), 1);
        let vm = Layout { m: 1, n: 3, k: 4, a: (0, 1), b: (3, 1), c: (0, 1), batch: vec![], base: (0, 0) };
        assert_eq!(check(&vm, 4, 12, 3), 1);
    }

    #[test]
    fn no_unit_stride_or_other_types_give_no_call() {
        // a read with both strides above 1 (every other row and column)
        let l = Layout { m: 2, n: 2, k: 2, a: (8, 2), b: (2, 1), c: (2, 1), batch: vec![], base: (0, 0) };
        assert!(calls(&l, Scalar::F64(1.0)).is_none());
        let ok = Layout { a: (2, 1), ..l };
        assert!(calls(&ok, Scalar::F64(1.0)).is_some());
        assert!(calls(&ok, Scalar::I64(1)).is_none());
    }
}
