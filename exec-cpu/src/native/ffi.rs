//! The only unsafe module of the native path: loading a compiled plan, looking up its
//! entry points, and calling them. How a kernel's calls are split over rayon threads is
//! [`super::launch`]'s, which calls the entry points through the methods here.
//!
//! The entry points' contract (declared in `eqfuse_codegen::c::abi`): `run(A, r0, r1, j0,
//! j1, red)` reads the arrays the argument block `A` points to, writes element `row * L + j`
//! of each generate lane's output for `row` in `[r0, r1)` and `j` in `[j0, j1)`, and writes
//! each reduce lane's result of row `row` to `red[lane][row - r0]`; `combine(A, lane, parts,
//! n, dst)` reads `n` partial results and writes one; the other skeletons' entry points
//! likewise write only the elements of their range and the slots they are given. Nothing
//! else is written, so calls over disjoint rows (or disjoint segments of a row with their
//! own partial slots) may run at once.
//!
//! Each calling method is safe to call within the crate on this condition, which its
//! callers keep (and say so where they call): the argument block is the kernel's, filled
//! by `arg_block` with pointers to arrays that live for the call and hold the kernel's
//! space, the pointers passed hold the elements the call reads or writes, and no other
//! thread touches what the call writes while it runs.

#![allow(unsafe_code)]

use crate::col::Col;
use eqfuse_codegen::c::abi::{
    CombineFn, CountFn, FoldFn, MergeFn, PermuteFn, PrefixFn, RunFn, ScanFn, SharedFn, WriteFn,
};
use eqfuse_codegen::c::{Entries, KernelCode};
use std::path::Path;

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
                Entries::Lanes { run, combine, .. } => unsafe {
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
pub(super) fn mark_written(c: &mut Col, n: usize) {
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
            Col::I8(v) => v.set_len(n),
            Col::I16(v) => v.set_len(n),
            Col::I32(v) => v.set_len(n),
            Col::I64(v) => v.set_len(n),
            Col::U8(v) => v.set_len(n),
            Col::U16(v) => v.set_len(n),
            Col::U32(v) => v.set_len(n),
            Col::U64(v) => v.set_len(n),
            Col::F32(v) => v.set_len(n),
            Col::F64(v) => v.set_len(n),
        }
    }
}

/// A column's first element, for the argument block.
pub(crate) fn col_ptr(c: &mut Col) -> u64 {
    let p: *mut u8 = match c {
        Col::Bool(v) => v.as_mut_ptr().cast(),
        Col::I8(v) => v.as_mut_ptr().cast(),
        Col::I16(v) => v.as_mut_ptr().cast(),
        Col::I32(v) => v.as_mut_ptr().cast(),
        Col::I64(v) => v.as_mut_ptr().cast(),
        Col::U8(v) => v.as_mut_ptr().cast(),
        Col::U16(v) => v.as_mut_ptr().cast(),
        Col::U32(v) => v.as_mut_ptr().cast(),
        Col::U64(v) => v.as_mut_ptr().cast(),
        Col::F32(v) => v.as_mut_ptr().cast(),
        Col::F64(v) => v.as_mut_ptr().cast(),
    };
    p as u64
}

/// What a kernel's entry points are, by skeleton ([`Entries`]), with its optional ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `run`, and `combine` when the kernel has reduce lanes.
    Lanes { combine: bool },
    /// `scan`, `fold` and `prefix`.
    Scan,
    /// `count` and `write`.
    Filter,
    /// `permute` and `merge`, and `shared` where the operator allows it.
    Permute { shared: bool },
}

impl Entry {
    /// Which entry points the kernel has.
    pub(crate) fn kind(&self) -> Kind {
        match self.fns {
            Fns::Lanes { combine, .. } => Kind::Lanes { combine: combine.is_some() },
            Fns::Scan { .. } => Kind::Scan,
            Fns::Filter { .. } => Kind::Filter,
            Fns::Permute { shared, .. } => Kind::Permute { shared: shared.is_some() },
        }
    }

    /// `run(A, r0, r1, j0, j1, red)`: rows `[r0, r1)`, innermost indices `[j0, j1)`, a
    /// reduce lane's row results to `red[lane]` (one pointer per lane, null for a generate
    /// lane). `false` when an element failed or the kernel has no `run`. The caller keeps
    /// the module's condition: the rows' elements and `red`'s `r1 - r0` slots are this
    /// call's alone.
    pub(crate) fn run(
        &self,
        a: *const u64,
        r0: usize,
        r1: usize,
        j0: usize,
        j1: usize,
        red: &[*mut u8],
    ) -> bool {
        let Fns::Lanes { run, .. } = self.fns else { return false };
        if red.len() < self.code.reduce.len() {
            return false;
        }
        // SAFETY: the module's condition, kept by the caller; `red` has a pointer per lane.
        unsafe { run(a, r0 as i64, r1 as i64, j0 as i64, j1 as i64, red.as_ptr()) != 0 }
    }

    /// `combine(A, lane, parts, n, dst)`: the `n` partial results of the reduction headed
    /// by lane `lane` (`parts[l]`: lane `l`'s) folded in order into `dst[l]`, every lane of
    /// a reduction over a group (a part lane's call does nothing). `false` when an element
    /// failed or the kernel has no `combine`. The caller keeps the module's condition:
    /// `parts` and `dst` have a pointer per lane, each of the reduction's `parts[l]` holds
    /// `n` elements and each `dst[l]` one, this call's alone.
    pub(crate) fn combine(
        &self,
        a: *const u64,
        lane: usize,
        parts: &[*const u8],
        n: usize,
        dst: &[*mut u8],
    ) -> bool {
        let Fns::Lanes { combine: Some(combine), .. } = self.fns else { return false };
        if parts.len() < self.code.reduce.len() || dst.len() < self.code.reduce.len() {
            return false;
        }
        // SAFETY: the module's condition, kept by the caller.
        unsafe { combine(a, lane as i64, parts.as_ptr(), n as i64, dst.as_ptr()) != 0 }
    }

    /// How many components a scan's carry has (one per lane; 0 for a kernel that is no
    /// scan).
    fn scan_width(&self) -> usize {
        match (&self.fns, &self.code.entries) {
            (Fns::Scan { .. }, Entries::Scan(sc)) => sc.tys.len(),
            _ => 0,
        }
    }

    /// `scan(A, r0, r1, j0, j1, carry, stored)`: the scan over rows `rows`, innermost indices
    /// `[j0, j1)`, from the carry whose component `l` is `*carry[l]` (the neutral element
    /// where `carry` is `None`). `false` when an element failed, the kernel is no scan or
    /// `carry` has not a pointer per component. With `stored`, the elements are read from
    /// the outputs, where [`Entry::fold`] kept them. The caller keeps the module's condition:
    /// the range's elements of the outputs are this call's alone, and each pointer of
    /// `carry` holds its component.
    pub(crate) fn scan(
        &self,
        a: *const u64,
        rows: std::ops::Range<usize>,
        j0: usize,
        j1: usize,
        carry: Option<&[*const u8]>,
        stored: bool,
    ) -> bool {
        let Fns::Scan { scan, .. } = self.fns else { return false };
        let c = match carry {
            Some(c) if c.len() != self.scan_width() => return false,
            Some(c) => c.as_ptr(),
            None => std::ptr::null(),
        };
        // SAFETY: the module's condition, kept by the caller; `carry` is null or has a
        // pointer per component.
        unsafe {
            scan(a, rows.start as i64, rows.end as i64, j0 as i64, j1 as i64, c, i32::from(stored)) != 0
        }
    }

    /// `fold(A, row, j0, j1, part)`: the total of a scan's segment `[j0, j1)` of row `row`,
    /// component `l` into `*part[l]`; with `keep`, each element also into the outputs at
    /// its place (for a later `scan` of the segment with `stored`). `false` when an element failed, the kernel is no scan
    /// or `part` has not a pointer per component. The caller keeps the module's condition:
    /// `part`'s slots are this call's alone.
    pub(crate) fn fold(
        &self,
        a: *const u64,
        row: usize,
        j0: usize,
        j1: usize,
        part: &[*mut u8],
        keep: bool,
    ) -> bool {
        let Fns::Scan { fold, .. } = self.fns else { return false };
        if part.len() != self.scan_width() {
            return false;
        }
        // SAFETY: the module's condition, kept by the caller; a pointer per component.
        unsafe { fold(a, row as i64, j0 as i64, j1 as i64, part.as_ptr(), i32::from(keep)) != 0 }
    }

    /// `prefix(A, parts, n, carries)`: the exclusive prefix of `n` segment totals, in
    /// order (`parts[l]`, `carries[l]`: component `l`'s). `false` when the kernel is no
    /// scan or either has not a pointer per component. The caller keeps the module's
    /// condition: each of `parts` and `carries` holds `n` elements, `carries` this call's
    /// alone.
    pub(crate) fn prefix(&self, a: *const u64, parts: &[*const u8], n: usize, carries: &[*mut u8]) -> bool {
        let Fns::Scan { prefix, .. } = self.fns else { return false };
        let w = self.scan_width();
        if parts.len() != w || carries.len() != w {
            return false;
        }
        // SAFETY: the module's condition, kept by the caller; a pointer per component.
        unsafe { prefix(a, parts.as_ptr(), n as i64, carries.as_ptr()) != 0 }
    }

    /// `count(A, j0, j1, n)`: how many of a filter's elements `[j0, j1)` are kept, into
    /// `n`. `false` when an element failed or the kernel is no filter.
    pub(crate) fn count(&self, a: *const u64, j0: usize, j1: usize, n: &mut i64) -> bool {
        let Fns::Filter { count, .. } = self.fns else { return false };
        // SAFETY: the module's condition, kept by the caller; `n` is this call's own.
        unsafe { count(a, j0 as i64, j1 as i64, n) != 0 }
    }

    /// `write(A, j0, j1, dst)`: a filter's kept elements of `[j0, j1)`, in order, from
    /// `dst` on. The caller keeps the module's condition: `dst` holds as many elements as
    /// `count` said are kept, this call's alone.
    pub(crate) fn write(&self, a: *const u64, j0: usize, j1: usize, dst: *mut u8) -> bool {
        let Fns::Filter { write, .. } = self.fns else { return false };
        // SAFETY: the module's condition, kept by the caller.
        unsafe { write(a, j0 as i64, j1 as i64, dst) != 0 }
    }

    /// `permute(A, j0, j1, dst, touched)`: a permute's elements `[j0, j1)` combined into
    /// `dst` (where `touched` is not null, a partial with a mask of the entries touched).
    /// The caller keeps the module's condition: `dst` (and `touched`, unless null) hold the
    /// destination's entries, this call's alone; every target is checked against the
    /// destination's shape before it is written.
    pub(crate) fn permute(
        &self,
        a: *const u64,
        j0: usize,
        j1: usize,
        dst: *mut u8,
        touched: *mut u8,
    ) -> bool {
        let Fns::Permute { permute, .. } = self.fns else { return false };
        // SAFETY: the module's condition, kept by the caller; a null mask is allowed.
        unsafe { permute(a, j0 as i64, j1 as i64, dst, touched) != 0 }
    }

    /// `merge(A, dst, part, touched, n)`: the touched entries of a permute's partial
    /// merged into `dst`. The caller keeps the module's condition: `dst`, `part` and
    /// `touched` are `n` entries each.
    pub(crate) fn merge(
        &self,
        a: *const u64,
        dst: *mut u8,
        part: *const u8,
        touched: *const u8,
        n: usize,
    ) -> bool {
        let Fns::Permute { merge, .. } = self.fns else { return false };
        // SAFETY: the module's condition, kept by the caller.
        unsafe { merge(a, dst, part, touched, n as i64) != 0 }
    }

    /// `shared(A, j0, j1, dst)`: a permute's elements `[j0, j1)` combined atomically into
    /// `dst`, which other calls write at the same time. `false` when an element failed or
    /// the kernel has no such entry. The caller keeps the module's condition: `dst` holds
    /// the destination's entries and is written only through `shared` while the calls run
    /// (codegen's `permute_entries` writes it only by atomic operations, at targets it has
    /// checked).
    pub(crate) fn shared(&self, a: *const u64, j0: usize, j1: usize, dst: *mut u8) -> bool {
        let Fns::Permute { shared: Some(shared), .. } = self.fns else { return false };
        // SAFETY: the module's condition, kept by the caller.
        unsafe { shared(a, j0 as i64, j1 as i64, dst) != 0 }
    }
}
