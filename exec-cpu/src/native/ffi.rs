//! The only unsafe module of the native path: loading a compiled plan and calling its
//! entry points from rayon threads.
//!
//! The entry points' contract (see `eqfuse_codegen::c`): `run(A, r0, r1, j0, j1, red)`
//! reads the arrays the argument block `A` points to, writes element `row * L + j` of each
//! generate lane's output for `row` in `[r0, r1)` and `j` in `[j0, j1)`, and writes each
//! reduce lane's result of row `row` to `red[lane][row - r0]`; `combine(A, lane, parts, n,
//! dst)` reads `n` partial results and writes one. Nothing else is written, so calls over
//! disjoint rows (or disjoint segments of a row with their own partial slots) may run at
//! once.

#![allow(unsafe_code)]

use crate::col::Col;
// shared by the calls: the entry points' contract keeps what each call writes disjoint
use crate::ptr::Ptr;
use eqfuse_codegen::c::{Entries, KernelCode};
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// `int run(const EqArgs*, long long r0, long long r1, long long j0, long long j1, void* const* red)`.
type RunFn = unsafe extern "C" fn(*const u64, i64, i64, i64, i64, *const *mut u8) -> i32;
/// `int combine(const EqArgs*, long long lane, const void* parts, long long n, void* dst)`.
type CombineFn = unsafe extern "C" fn(*const u64, i64, *const u8, i64, *mut u8) -> i32;
/// `int scan(const EqArgs*, long long r0, long long r1, long long j0, long long j1, const void* carry)`.
type ScanFn = unsafe extern "C" fn(*const u64, i64, i64, i64, i64, *const u8) -> i32;
/// `int fold(const EqArgs*, long long row, long long j0, long long j1, void* part)`.
type FoldFn = unsafe extern "C" fn(*const u64, i64, i64, i64, *mut u8) -> i32;
/// `int count(const EqArgs*, long long j0, long long j1, long long* n)`.
type CountFn = unsafe extern "C" fn(*const u64, i64, i64, *mut i64) -> i32;
/// `int write(const EqArgs*, long long j0, long long j1, void* dst)`.
type WriteFn = unsafe extern "C" fn(*const u64, i64, i64, *mut u8) -> i32;
/// `int permute(const EqArgs*, long long j0, long long j1, void* dst, unsigned char* touched)`.
type PermuteFn = unsafe extern "C" fn(*const u64, i64, i64, *mut u8, *mut u8) -> i32;
/// `int shared(const EqArgs*, long long j0, long long j1, void* dst)`.
type SharedFn = unsafe extern "C" fn(*const u64, i64, i64, *mut u8) -> i32;
/// `int merge(const EqArgs*, void* dst, const void* part, const unsigned char* touched, long long n)`.
type MergeFn = unsafe extern "C" fn(*const u64, *mut u8, *const u8, *const u8, i64) -> i32;
/// `int prefix(const EqArgs*, const void* parts, long long n, void* carries)`.
type PrefixFn = unsafe extern "C" fn(*const u64, *const u8, i64, *mut u8) -> i32;

/// A loaded plan: the shared object and its kernels' entry points.
///
/// It holds nothing of the plan but what its source determines: plans whose generated C is
/// the same share one module (the in-memory cache is keyed by the source), yet may differ
/// in what the source does not spell (a permute's fill is made by the host, and its value
/// is not in the C). Each plan pairs the module's entry points with its own
/// [`KernelCode`] ([`Module::entries`]).
pub(crate) struct Module {
    /// The entry points point into it: it lives as long as they do.
    _lib: libloading::Library,
    /// Per kernel of the plan: its entry points, or `None` when it runs on the VM.
    fns: Vec<Option<Fns>>,
}

/// One kernel's entry points, as its skeleton has them ([`Entries`]).
#[derive(Clone, Copy)]
enum Fns {
    Lanes { run: RunFn, combine: Option<CombineFn> },
    Scan { scan: ScanFn, fold: FoldFn, prefix: PrefixFn },
    Filter { count: CountFn, write: WriteFn },
    Permute { permute: PermuteFn, merge: MergeFn, shared: Option<SharedFn> },
}

/// One kernel's entry points, and what was generated for it in the plan being run.
pub(crate) struct Entry {
    fns: Fns,
    /// What was generated.
    pub code: KernelCode,
}

impl Module {
    /// Loads the shared object at `path`, compiled from source generated with `kernels`.
    pub(crate) fn load(path: &Path, kernels: &[Result<KernelCode, String>]) -> Result<Module, String> {
        // SAFETY: the library is one we generated and compiled; loading it runs no
        // initialisers (the generated C defines none).
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        let mut fns = Vec::with_capacity(kernels.len());
        for k in kernels {
            let Ok(code) = k else {
                fns.push(None);
                continue;
            };
            // SAFETY (every `symbol` call below): the symbols are defined by the generated C
            // with exactly these signatures (codegen's `c::skeleton`: the entries of
            // generate/reduce kernels, `scan_entries`, `filter_entries`, `permute_entries`).
            let f = match &code.entries {
                // SAFETY: as above.
                Entries::Lanes { run, combine } => unsafe {
                    Fns::Lanes {
                        run: symbol::<RunFn>(&lib, run, path)?,
                        combine: match combine {
                            Some(c) => Some(symbol::<CombineFn>(&lib, c, path)?),
                            None => None,
                        },
                    }
                },
                // SAFETY: as above.
                Entries::Scan(sc) => unsafe {
                    Fns::Scan {
                        scan: symbol::<ScanFn>(&lib, &sc.scan, path)?,
                        fold: symbol::<FoldFn>(&lib, &sc.fold, path)?,
                        prefix: symbol::<PrefixFn>(&lib, &sc.prefix, path)?,
                    }
                },
                // SAFETY: as above.
                Entries::Filter(fc) => unsafe {
                    Fns::Filter {
                        count: symbol::<CountFn>(&lib, &fc.count, path)?,
                        write: symbol::<WriteFn>(&lib, &fc.write, path)?,
                    }
                },
                // SAFETY: as above.
                Entries::Permute(pc) => unsafe {
                    Fns::Permute {
                        permute: symbol::<PermuteFn>(&lib, &pc.permute, path)?,
                        merge: symbol::<MergeFn>(&lib, &pc.merge, path)?,
                        shared: match &pc.shared {
                            Some((name, _)) => Some(symbol::<SharedFn>(&lib, name, path)?),
                            None => None,
                        },
                    }
                },
            };
            fns.push(Some(f));
        }
        Ok(Module { _lib: lib, fns })
    }

    /// Its entry points, each with the code `kernels` (generated for the plan to run, from
    /// the source this module was compiled from) says it has; `None` where a kernel runs on
    /// the VM, and for every kernel when `kernels` is not of this module's shape.
    pub(crate) fn entries(&self, kernels: &[Result<KernelCode, String>]) -> Vec<Option<Entry>> {
        if kernels.len() != self.fns.len() {
            return kernels.iter().map(|_| None).collect();
        }
        self.fns
            .iter()
            .zip(kernels)
            .map(|(f, k)| match (f, k) {
                (Some(fns), Ok(code)) if same_skeleton(fns, &code.entries) => {
                    Some(Entry { fns: *fns, code: code.clone() })
                }
                _ => None,
            })
            .collect()
    }
}

/// Whether entry points `f` are of the skeleton `e` names.
fn same_skeleton(f: &Fns, e: &Entries) -> bool {
    matches!(
        (f, e),
        (Fns::Lanes { .. }, Entries::Lanes { .. })
            | (Fns::Scan { .. }, Entries::Scan(_))
            | (Fns::Filter { .. }, Entries::Filter(_))
            | (Fns::Permute { .. }, Entries::Permute(_))
    )
}

/// The entry point `name` of the library loaded from `path`.
///
/// # Safety
///
/// `T` must be the type of the function the library defines under `name`.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, name: &str, path: &Path) -> Result<T, String> {
    // SAFETY: the caller's contract: `T` is the symbol's type.
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("`{name}` is missing from {}: {e}", path.display()))
}

/// After a launch that succeeded, over a space of `n` points: a generate lane's column
/// made by [`Col::unwritten`] holds the `n` elements the kernel wrote (the entry points
/// write every point of their range; the launches cover the whole space). A column already
/// `n` long (zeros) is left as it is.
fn mark_written(c: &mut Col, n: usize) {
    if c.len() >= n || c.capacity() < n {
        return;
    }
    // SAFETY: `n` is within the capacity (checked above), and the launch that just
    // succeeded wrote each of the first `n` elements through `col_ptr` (the contract of the
    // entry points: a generate lane writes every point of its range, a scan every element
    // of its rows), each a valid value of its type: generated C writes a `bool` as 0 or 1.
    unsafe {
        match c {
            Col::Bool(v) => v.set_len(n),
            Col::I32(v) => v.set_len(n),
            Col::I64(v) => v.set_len(n),
            Col::F32(v) => v.set_len(n),
            Col::F64(v) => v.set_len(n),
        }
    }
}

/// A column's first element, for the argument block.
pub(crate) fn col_ptr(c: &mut Col) -> u64 {
    let p: *mut u8 = match c {
        Col::Bool(v) => v.as_mut_ptr().cast(),
        Col::I32(v) => v.as_mut_ptr().cast(),
        Col::I64(v) => v.as_mut_ptr().cast(),
        Col::F32(v) => v.as_mut_ptr().cast(),
        Col::F64(v) => v.as_mut_ptr().cast(),
    };
    p as u64
}

/// How a kernel's rows are split into calls.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Split {
    /// Whole rows, `per_task` rows a call; reduce results go straight to the outputs.
    Rows { per_task: usize },
    /// Each row in `segs` segments of `seg` elements; partial results, then combined.
    Segments { seg: usize, segs: usize },
}

impl Entry {
    /// Runs a filter kernel over `len` elements in segments of `seg`: the kept elements, in
    /// order, or `None` when an element failed.
    pub(crate) fn launch_filter(&self, args: &[u64], len: usize, seg: usize) -> Option<Col> {
        self.launch_filter_with(args, len, seg, &|_, _, _| true)
    }

    /// [`Entry::launch_filter`], calling `beside(s, j0, j1)` for each segment `s` of
    /// elements `[j0, j1)` in the counting pass, on the thread that counts it, right after it
    /// (a filter block's other kernels: [`Segmented::run`]); `None` when an element failed
    /// there too.
    pub(crate) fn launch_filter_with(
        &self,
        args: &[u64],
        len: usize,
        seg: usize,
        beside: &(dyn Fn(usize, usize, usize) -> bool + Sync),
    ) -> Option<Col> {
        let (Fns::Filter { count, write }, Entries::Filter(fc)) = (self.fns, &self.code.entries) else {
            return None;
        };
        let ty = fc.ty;
        let seg = seg.max(1);
        let segs = len.div_ceil(seg);
        let ok = AtomicBool::new(true);
        let a = Ptr(args.as_ptr() as *mut u8);
        let counts: Vec<i64> = (0..segs)
            .into_par_iter()
            .map(|s| {
                let mut n = 0i64;
                let (j0, j1) = (s * seg, ((s + 1) * seg).min(len));
                // SAFETY: the contract; `n` is this call's own.
                if unsafe { count(a.get() as *const u64, j0 as i64, j1 as i64, &mut n) } == 0
                    || !beside(s, j0, j1)
                {
                    ok.store(false, Ordering::Relaxed);
                }
                n
            })
            .collect();
        if !ok.load(Ordering::Relaxed) {
            return None;
        }
        let mut offsets = Vec::with_capacity(segs);
        let mut total = 0usize;
        for &n in &counts {
            offsets.push(total);
            total += usize::try_from(n).ok()?;
        }
        let mut out = Col::zeros(ty, total);
        let ob = Ptr(col_ptr(&mut out) as *mut u8);
        let sz = ty.size_bytes();
        (0..segs).into_par_iter().for_each(|s| {
            let (j0, j1) = (s * seg, ((s + 1) * seg).min(len));
            // SAFETY: the contract; segment `s` writes `counts[s]` elements from its offset,
            // inside `out` and disjoint from the other segments'.
            if unsafe { write(a.get() as *const u64, j0 as i64, j1 as i64, ob.get().add(offsets[s] * sz)) }
                == 0
            {
                ok.store(false, Ordering::Relaxed);
            }
        });
        ok.load(Ordering::Relaxed).then_some(out)
    }

    /// Runs a permute kernel over the `total` elements of its space into `out` (a copy of
    /// its destination, `n` entries): on one task straight into `out`; on `tasks` tasks
    /// (contiguous element ranges) each into a partial of its own with a mask of the
    /// entries it touched, merged into `out` in task order. `false` when an element failed
    /// (a target out of bounds among them).
    pub(crate) fn launch_permute(&self, args: &[u64], out: &mut Col, total: usize, tasks: usize) -> bool {
        let Fns::Permute { permute, merge, .. } = self.fns else { return false };
        let a = Ptr(args.as_ptr() as *mut u8);
        let n = out.len();
        let dst = col_ptr(out) as *mut u8;
        if tasks <= 1 || total < 2 {
            // SAFETY: the contract; `out` is `n` entries, every target is checked against
            // the destination's shape (whose `n` entries `out` copies) before it is written,
            // and a null mask is allowed.
            return unsafe { permute(a.get() as *const u64, 0, total as i64, dst, std::ptr::null_mut()) }
                != 0;
        }
        let ty = out.ty();
        let per = total.div_ceil(tasks);
        let parts: Vec<Option<(Col, Vec<u8>)>> = (0..tasks)
            .into_par_iter()
            .map(|t| {
                let (j0, j1) = (t * per, ((t + 1) * per).min(total));
                let mut part = Col::zeros(ty, n);
                let mut touched = vec![0u8; n];
                // SAFETY: as above, into this task's own partial and mask of `n` entries.
                let r = unsafe {
                    permute(
                        a.get() as *const u64,
                        j0 as i64,
                        j1 as i64,
                        col_ptr(&mut part) as *mut u8,
                        touched.as_mut_ptr(),
                    )
                };
                (r != 0).then_some((part, touched))
            })
            .collect();
        for p in parts {
            let Some((mut part, touched)) = p else { return false };
            // SAFETY: `out`, `part` and `touched` are `n` entries each.
            let r = unsafe {
                merge(a.get() as *const u64, dst, col_ptr(&mut part) as *const u8, touched.as_ptr(), n as i64)
            };
            if r == 0 {
                return false;
            }
        }
        true
    }

    /// Runs a permute kernel's `shared` entry over the `total` elements of its space into
    /// `out` (what the result starts as), in calls of `seg` elements on rayon threads that
    /// all write `out`: the entry writes it only by atomic operations, at targets it has
    /// checked. `false` when an element failed (a target out of bounds among them) or the
    /// kernel has no such entry.
    pub(crate) fn launch_permute_shared(
        &self,
        args: &[u64],
        out: &mut Col,
        total: usize,
        seg: usize,
    ) -> bool {
        let Fns::Permute { shared: Some(shared), .. } = self.fns else { return false };
        let a = Ptr(args.as_ptr() as *mut u8);
        let dst = Ptr(col_ptr(out) as *mut u8);
        let seg = seg.max(1);
        let ok = AtomicBool::new(true);
        (0..total.div_ceil(seg)).into_par_iter().for_each(|c| {
            let (j0, j1) = (c * seg, ((c + 1) * seg).min(total));
            // SAFETY: the contract; `out` (borrowed mutably for the whole launch, so nothing
            // else touches it) holds the destination's entries, every target is checked
            // against the destination's shape before it is written, and the calls that run
            // at once write it only by atomic operations (codegen's `permute_entries`).
            if unsafe { shared(a.get() as *const u64, j0 as i64, j1 as i64, dst.get()) } == 0 {
                ok.store(false, Ordering::Relaxed);
            }
        });
        ok.load(Ordering::Relaxed)
    }

    /// Runs a scan kernel over `rows` rows of `len` elements into `_out` (`rows * len`
    /// elements), which `args`' output field points into: it is borrowed mutably so that
    /// nothing else reads or writes it while the calls write through that pointer. `false`
    /// when an element failed.
    pub(crate) fn launch_scan(
        &self,
        args: &[u64],
        out: &mut Col,
        rows: usize,
        len: usize,
        split: Split,
    ) -> bool {
        let (Fns::Scan { scan, fold, prefix }, Entries::Scan(sc)) = (self.fns, &self.code.entries) else {
            return false;
        };
        let ok = AtomicBool::new(true);
        let fail = |r: i32| {
            if r == 0 {
                ok.store(false, Ordering::Relaxed);
            }
        };
        let a = Ptr(args.as_ptr() as *mut u8);
        match split {
            Split::Rows { per_task } => {
                let per_task = per_task.max(1);
                (0..rows.div_ceil(per_task)).into_par_iter().for_each(|t| {
                    let (r0, r1) = (t * per_task, ((t + 1) * per_task).min(rows));
                    // SAFETY: the contract; rows [r0, r1) are this call's alone.
                    fail(unsafe {
                        scan(a.get() as *const u64, r0 as i64, r1 as i64, 0, len as i64, std::ptr::null())
                    });
                });
            }
            Split::Segments { seg, segs } => {
                let sz = sc.ty.size_bytes();
                let mut parts = Col::zeros(sc.ty, rows * segs);
                let mut carries = Col::zeros(sc.ty, rows * segs);
                let (pb, cb) = (Ptr(col_ptr(&mut parts) as *mut u8), Ptr(col_ptr(&mut carries) as *mut u8));
                let seg_range = |t: usize| {
                    let (row, s) = (t / segs, t % segs);
                    (row, s, s * seg, ((s + 1) * seg).min(len))
                };
                (0..rows * segs).into_par_iter().for_each(|t| {
                    let (row, _, j0, j1) = seg_range(t);
                    // SAFETY: the contract; partial slot `t` is this call's alone.
                    fail(unsafe {
                        fold(a.get() as *const u64, row as i64, j0 as i64, j1 as i64, pb.get().add(t * sz))
                    });
                });
                (0..rows).into_par_iter().for_each(|row| {
                    // SAFETY: the contract; row `row`'s partials are read and its carries
                    // written by this call alone.
                    fail(unsafe {
                        prefix(
                            a.get() as *const u64,
                            pb.get().add(row * segs * sz),
                            segs as i64,
                            cb.get().add(row * segs * sz),
                        )
                    });
                });
                (0..rows * segs).into_par_iter().for_each(|t| {
                    let (row, _, j0, j1) = seg_range(t);
                    // SAFETY: the contract; segment `t` of the output is this call's alone.
                    fail(unsafe {
                        scan(
                            a.get() as *const u64,
                            row as i64,
                            row as i64 + 1,
                            j0 as i64,
                            j1 as i64,
                            cb.get().add(t * sz),
                        )
                    });
                });
                drop((parts, carries));
            }
        }
        let ok = ok.load(Ordering::Relaxed);
        if ok {
            mark_written(out, rows * len);
        }
        ok
    }

    /// Runs the kernel over `rows` rows of `len` elements. `args` is the argument block,
    /// whose array fields point to buffers that live for the call and whose generate-lane
    /// fields point into `outs`; `outs` holds one column per lane: a generate lane's of
    /// `rows * len` elements, a reduce lane's of `rows`. Returns `false` when an element
    /// failed (the outputs are then partly written).
    pub(crate) fn launch(
        &self,
        args: &[u64],
        outs: &mut [Col],
        rows: usize,
        len: usize,
        split: Split,
    ) -> bool {
        let Fns::Lanes { run, combine } = self.fns else { return false };
        let ok = AtomicBool::new(true);
        let a = Ptr(args.as_ptr() as *mut u8);
        let nlanes = self.code.reduce.len();
        let red_base: Vec<Ptr> = outs.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
        match split {
            Split::Rows { per_task } => {
                let per_task = per_task.max(1);
                let tasks = rows.div_ceil(per_task);
                (0..tasks).into_par_iter().for_each(|t| {
                    let r0 = t * per_task;
                    let r1 = (r0 + per_task).min(rows);
                    let red: Vec<*mut u8> = (0..nlanes)
                        .map(|l| match self.code.reduce[l] {
                            // SAFETY: a reduce lane's column holds `rows` elements.
                            Some(t) => unsafe { red_base[l].get().add(r0 * t.size_bytes()) },
                            None => std::ptr::null_mut(),
                        })
                        .collect();
                    // SAFETY: the entry point's contract (module docs); rows [r0, r1) are
                    // this call's alone, and `red` points to their slots.
                    let r = unsafe {
                        run(a.get() as *const u64, r0 as i64, r1 as i64, 0, len as i64, red.as_ptr())
                    };
                    if r == 0 {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
            }
            Split::Segments { seg, segs } => {
                let mut parts: Vec<Col> = (0..nlanes)
                    .map(|l| match self.code.reduce[l] {
                        Some(t) => Col::zeros(t, rows * segs),
                        None => Col::zeros(eqfuse_ir::types::ElemType::Bool, 0),
                    })
                    .collect();
                let part_base: Vec<Ptr> = parts.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
                (0..rows * segs).into_par_iter().for_each(|t| {
                    let (row, s) = (t / segs, t % segs);
                    let j0 = s * seg;
                    let j1 = (j0 + seg).min(len);
                    let red: Vec<*mut u8> = (0..nlanes)
                        .map(|l| match self.code.reduce[l] {
                            // SAFETY: the partials hold `rows * segs` elements.
                            Some(t) => unsafe { part_base[l].get().add((row * segs + s) * t.size_bytes()) },
                            None => std::ptr::null_mut(),
                        })
                        .collect();
                    // SAFETY: the contract; segment `s` of row `row` and its partial slots
                    // are this call's alone.
                    let r = unsafe {
                        run(
                            a.get() as *const u64,
                            row as i64,
                            row as i64 + 1,
                            j0 as i64,
                            j1 as i64,
                            red.as_ptr(),
                        )
                    };
                    if r == 0 {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
                if let Some(combine) = combine {
                    for (l, t) in self.code.reduce.iter().enumerate() {
                        let Some(t) = t else { continue };
                        let sz = t.size_bytes();
                        let (pb, ob) = (part_base[l], red_base[l]);
                        (0..rows).into_par_iter().for_each(|row| {
                            // SAFETY: the contract; row `row`'s partials are read and its
                            // result slot written by this call alone.
                            let r = unsafe {
                                combine(
                                    a.get() as *const u64,
                                    l as i64,
                                    pb.get().add(row * segs * sz),
                                    segs as i64,
                                    ob.get().add(row * sz),
                                )
                            };
                            if r == 0 {
                                ok.store(false, Ordering::Relaxed);
                            }
                        });
                    }
                }
                drop(parts);
            }
        }
        let ok = ok.load(Ordering::Relaxed);
        if ok {
            for (c, red) in outs.iter_mut().zip(&self.code.reduce) {
                if red.is_none() {
                    mark_written(c, rows * len);
                }
            }
        }
        ok
    }
}

/// `args` with each kept result's field (`fields`: the field, and the result's place in
/// `bufs`) set to its scratch buffer moved back by `before(k)` bytes (the block's elements
/// before its first), so that the block's first element is the buffer's first: the
/// generated code indexes by the whole space, and only reaches the block's elements. The
/// address is computed in integers; `None` where a field or a buffer is missing.
fn with_scratch<'x>(
    args: &'x [u64],
    fields: &[(usize, usize)],
    bufs: &mut [Vec<u64>],
    before: impl Fn(usize) -> Option<usize>,
) -> Option<std::borrow::Cow<'x, [u64]>> {
    if fields.is_empty() {
        return Some(std::borrow::Cow::Borrowed(args));
    }
    let mut a = args.to_vec();
    for &(field, k) in fields {
        let (buf, back, f) = (bufs.get_mut(k)?, before(k)?, a.get_mut(field)?);
        *f = (buf.as_mut_ptr() as u64).wrapping_sub(back as u64);
    }
    Some(std::borrow::Cow::Owned(a))
}

/// One phase of a row block ([`launch_row_blocks`]).
pub(crate) struct Phase<'a> {
    /// Its entry points.
    pub entry: &'a Entry,
    /// Its argument block.
    pub args: &'a [u64],
    /// The fields of `args` that hold a kept result's address, each with the result's
    /// place in [`launch_row_blocks`]'s `kept`: set for each block to its scratch buffer.
    pub kept: Vec<(usize, usize)>,
    /// Per lane: a reduce lane's result column (one element per row) and its element size.
    pub red: Vec<Option<(u64, usize)>>,
    /// A row phase (its rows are the block's rows, each `len` long); else an outer phase
    /// (one row of `len` elements, the block's rows its elements).
    pub row_phase: bool,
    /// The innermost extent.
    pub len: usize,
}

/// Runs the phases of a row block over `rows` rows, in blocks of `per_block` rows on rayon
/// threads, every phase over a block's rows before the next phase; `false` when an element
/// failed (the results are then incomplete).
///
/// `kept` lists the results kept per block, each as its element size and row length: every
/// block gets a scratch buffer of its rows of each, and the phases' fields that name one
/// ([`Phase::kept`]) are set so that the block's rows `[r0, r1)` fall in it.
///
/// The caller guarantees the entry points' contract (module docs) for every phase over the
/// whole of `rows`: its argument block points to arrays that hold its space and results that
/// hold one element per point (generate lanes) or per row (`red`), a phase reads what an
/// earlier phase wrote only on the rows of its own call, and a kept result is written and
/// read only by row phases, at their own points.
pub(crate) fn launch_row_blocks(
    phases: &[Phase<'_>],
    kept: &[(usize, usize)],
    rows: usize,
    per_block: usize,
) -> bool {
    let ok = AtomicBool::new(true);
    let per_block = per_block.max(1);
    // 8-byte words of scratch for each kept result of a block
    let words: Vec<usize> = kept.iter().map(|&(size, len)| (per_block * len * size).div_ceil(8)).collect();
    let scratch = || -> Vec<Vec<u64>> { words.iter().map(|&w| vec![0u64; w]).collect() };
    (0..rows.div_ceil(per_block)).into_par_iter().for_each_init(scratch, |bufs, b| {
        let r0 = b * per_block;
        let r1 = (r0 + per_block).min(rows);
        for p in phases {
            if !ok.load(Ordering::Relaxed) {
                return;
            }
            // the rows before the block, in bytes of each kept result
            let before = |k: usize| kept.get(k).map(|&(size, len)| r0 * len * size);
            let Some(args) = with_scratch(p.args, &p.kept, bufs, before) else {
                ok.store(false, Ordering::Relaxed);
                return;
            };
            // a reduce lane's slots of rows [r0, r1): in bounds, the column holds `rows`
            let red: Vec<*mut u8> = p
                .red
                .iter()
                .map(|x| {
                    x.map_or(std::ptr::null_mut(), |(base, size)| (base as *mut u8).wrapping_add(r0 * size))
                })
                .collect();
            let a = args.as_ptr();
            // SAFETY: the contract above; rows [r0, r1) (for an outer phase, elements
            // [r0, r1) of its one row) and their result slots are this call's alone, and the
            // earlier phases of this block wrote the rows it reads. A kept result's field
            // points `r0` rows before this block's scratch buffer, which holds `per_block`
            // rows: the call touches only rows [r0, r1) of it, inside the buffer (the
            // address is computed in integers; the C code only ever forms in-bounds ones).
            let r = unsafe {
                // a row block's phases are generate and reduce kernels, or row scans
                // (`rowblock.rs` checks)
                match (p.entry.fns, p.row_phase) {
                    (Fns::Lanes { run, .. }, true) => {
                        run(a, r0 as i64, r1 as i64, 0, p.len as i64, red.as_ptr())
                    }
                    (Fns::Lanes { run, .. }, false) => run(a, 0, 1, r0 as i64, r1 as i64, red.as_ptr()),
                    (Fns::Scan { scan, .. }, true) => {
                        scan(a, r0 as i64, r1 as i64, 0, p.len as i64, std::ptr::null())
                    }
                    _ => 0,
                }
            };
            if r == 0 {
                ok.store(false, Ordering::Relaxed);
                return;
            }
        }
    });
    ok.load(Ordering::Relaxed)
}

/// One phase of a scan block ([`launch_scan_block`]).
pub(crate) struct SegPhase<'a> {
    /// Its entry points: the scan's (the first phase), then generate kernels' or permutes'
    /// with a `shared` entry.
    pub entry: &'a Entry,
    /// Its argument block.
    pub args: &'a [u64],
    /// The fields of `args` that hold a kept result's address, each with the result's
    /// place in [`launch_scan_block`]'s `kept`: set for each segment to its scratch buffer.
    pub kept: Vec<(usize, usize)>,
    /// A permute's result (a copy of its destination), which every segment writes through
    /// its `shared` entry.
    pub dst: Option<Ptr>,
}

/// Runs a scan block over `n` points in segments of `seg`: the scan's elements folded
/// segment by segment on rayon threads, the segments' carries from their totals, then each
/// segment on a rayon thread through every phase, the scan from its carry, before the next
/// segment of that thread; `false` when an element failed (the results are then
/// incomplete).
///
/// `kept` lists the element sizes of the results kept per segment: every segment gets a
/// scratch buffer of `seg` elements of each, and the phases' fields that name one
/// ([`SegPhase::kept`]) are set so that the segment's points `[j0, j1)` fall in it.
///
/// The caller guarantees the entry points' contract (module docs) for every phase over the
/// whole space of `n` points: its argument block points to arrays that hold its space and
/// to results that hold one element per point, a phase reads what an earlier phase wrote
/// only at its own point, a kept result is written and read only at the phases' own
/// points, and a permute's `dst` holds its destination and is written only through its
/// `shared` entry (atomically).
pub(crate) fn launch_scan_block(phases: &[SegPhase<'_>], kept: &[usize], n: usize, seg: usize) -> bool {
    let Some(first) = phases.first() else { return false };
    let (Fns::Scan { fold, prefix, .. }, Entries::Scan(sc)) = (first.entry.fns, &first.entry.code.entries)
    else {
        return false;
    };
    let seg = seg.max(1);
    let segs = n.div_ceil(seg);
    let sz = sc.ty.size_bytes();
    let ok = AtomicBool::new(true);
    let fail = |r: i32| {
        if r == 0 {
            ok.store(false, Ordering::Relaxed);
        }
    };
    let range = |t: usize| (t * seg, ((t + 1) * seg).min(n));
    let mut parts = Col::zeros(sc.ty, segs);
    let mut carries = Col::zeros(sc.ty, segs);
    let (pb, cb) = (Ptr(col_ptr(&mut parts) as *mut u8), Ptr(col_ptr(&mut carries) as *mut u8));
    let a0 = Ptr(first.args.as_ptr() as *mut u8);
    (0..segs).into_par_iter().for_each(|t| {
        let (j0, j1) = range(t);
        // SAFETY: the contract; partial slot `t` is this call's alone.
        fail(unsafe { fold(a0.get() as *const u64, 0, j0 as i64, j1 as i64, pb.get().add(t * sz)) });
    });
    if !ok.load(Ordering::Relaxed) {
        return false;
    }
    // SAFETY: the contract; `segs` partials are read and `segs` carries written.
    fail(unsafe { prefix(a0.get() as *const u64, pb.get(), segs as i64, cb.get()) });
    if !ok.load(Ordering::Relaxed) {
        return false;
    }
    // 8-byte words of scratch for each kept result of a segment
    let words: Vec<usize> = kept.iter().map(|&size| (seg * size).div_ceil(8)).collect();
    let scratch = || -> Vec<Vec<u64>> { words.iter().map(|&w| vec![0u64; w]).collect() };
    (0..segs).into_par_iter().for_each_init(scratch, |bufs, t| {
        let (j0, j1) = range(t);
        for p in phases {
            if !ok.load(Ordering::Relaxed) {
                return;
            }
            // the points before the segment, in bytes of each kept result
            let Some(args) = with_scratch(p.args, &p.kept, bufs, |k| kept.get(k).map(|&size| j0 * size))
            else {
                ok.store(false, Ordering::Relaxed);
                return;
            };
            let a = args.as_ptr();
            // a generate kernel's lanes have no reduce slot
            let nulls = vec![std::ptr::null_mut::<u8>(); p.entry.code.reduce.len()];
            // SAFETY: the contract above; points [j0, j1) of every result are this call's
            // alone (a permute's destination is written atomically by its `shared` entry),
            // the earlier phases of this segment wrote the points it reads, and the carry
            // of segment `t` is the fold of the segments before it. A kept result's field
            // points `j0` elements before this segment's scratch buffer, which holds `seg`:
            // the call touches only points [j0, j1) of it (the address is computed in
            // integers; the C code only ever forms in-bounds ones).
            let r = unsafe {
                match (p.entry.fns, p.dst) {
                    (Fns::Scan { scan, .. }, None) => {
                        scan(a, 0, 1, j0 as i64, j1 as i64, cb.get().add(t * sz) as *const u8)
                    }
                    (Fns::Lanes { run, .. }, None) => run(a, 0, 1, j0 as i64, j1 as i64, nulls.as_ptr()),
                    (Fns::Permute { shared: Some(shared), .. }, Some(dst)) => {
                        shared(a, j0 as i64, j1 as i64, dst.get())
                    }
                    _ => 0,
                }
            };
            if r == 0 {
                ok.store(false, Ordering::Relaxed);
                return;
            }
        }
    });
    drop((parts, carries));
    ok.load(Ordering::Relaxed)
}

/// A kernel of generate and reduce lanes over one row of `len` elements, run segment by
/// segment inside another kernel's pass (a filter block's other kernels: [`Entry::
/// launch_filter_with`]): each segment's reduce results go to partial slots of their own,
/// which [`Segmented::finish`] combines in order, as the kernel's own segmented launch
/// does; a generate lane writes its segment's elements straight into its result.
pub(crate) struct Segmented<'a> {
    entry: &'a Entry,
    args: &'a [u64],
    len: usize,
    seg: usize,
    /// Per lane: a reduce lane's partials (one per segment), else empty.
    parts: Vec<Col>,
    part_base: Vec<Ptr>,
}

impl<'a> Segmented<'a> {
    /// `entry` (generate and reduce lanes) with argument block `args`, whose generate lanes'
    /// fields point to results of `len` elements; `None` for another kind of kernel.
    pub(crate) fn new(entry: &'a Entry, args: &'a [u64], len: usize, seg: usize) -> Option<Segmented<'a>> {
        let Fns::Lanes { .. } = entry.fns else { return None };
        let seg = seg.max(1);
        // at least one segment, so that an empty space still reduces to the neutral element
        let segs = len.div_ceil(seg).max(1);
        let mut parts: Vec<Col> = entry
            .code
            .reduce
            .iter()
            .map(|r| match r {
                Some(t) => Col::zeros(*t, segs),
                None => Col::zeros(eqfuse_ir::types::ElemType::Bool, 0),
            })
            .collect();
        let part_base = parts.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
        Some(Segmented { entry, args, len, seg, parts, part_base })
    }

    /// Runs segment `s`, elements `[j0, j1)`; `false` when an element failed.
    pub(crate) fn run(&self, s: usize, j0: usize, j1: usize) -> bool {
        let Fns::Lanes { run, .. } = self.entry.fns else { return false };
        let red: Vec<*mut u8> = self
            .entry
            .code
            .reduce
            .iter()
            .zip(&self.part_base)
            .map(|(r, base)| match r {
                // SAFETY: the partials hold one element per segment, and `s` is a segment.
                Some(t) => unsafe { base.get().add(s * t.size_bytes()) },
                None => std::ptr::null_mut(),
            })
            .collect();
        // SAFETY: the contract (module docs); elements [j0, j1) of the one row and partial
        // slot `s` are this call's alone.
        unsafe { run(self.args.as_ptr(), 0, 1, j0 as i64, j1 as i64, red.as_ptr()) != 0 }
    }

    /// After every segment ran: each reduce lane's partials combined, in order, into its
    /// result in `outs` (one column per lane), and each generate lane's result marked
    /// written; `false` when an element failed.
    pub(crate) fn finish(self, outs: &mut [Col]) -> bool {
        let Fns::Lanes { combine, .. } = self.entry.fns else { return false };
        // an empty space ran no segment: its one partial is the neutral element
        if self.len == 0 && !self.run(0, 0, 0) {
            return false;
        }
        let segs = self.len.div_ceil(self.seg).max(1);
        for (l, (r, out)) in self.entry.code.reduce.iter().zip(outs.iter_mut()).enumerate() {
            match r {
                Some(_) => {
                    let Some(combine) = combine else { return false };
                    // SAFETY: the contract; the lane's `segs` partials are read and its one
                    // result slot (a reduce lane's column of one row) written.
                    let r = unsafe {
                        combine(
                            self.args.as_ptr(),
                            l as i64,
                            self.part_base[l].get(),
                            segs as i64,
                            col_ptr(out) as *mut u8,
                        )
                    };
                    if r == 0 {
                        return false;
                    }
                }
                None => mark_written(out, self.len),
            }
        }
        drop(self.parts);
        true
    }
}
