//! How a native kernel's calls are split over rayon threads: rows into tasks of whole
//! rows or long rows into segments (with their partial results combined in order), a
//! filter's two passes, a permute's partials or shared result, and the blocks of a row
//! block or a segment block, each block through every phase. The entry points are called
//! through [`super::ffi`]'s methods, the only unsafe code of the native path; each call
//! here says why what it writes is its own.
//!
//! The cancel flag ([`Cancel`]) is polled before each call, so a run stops within one
//! block's time of it.

use super::carry::Carries;
use super::ffi::{col_ptr, mark_written, Entry, Kind};
use crate::cancel::Cancel;
use crate::col::Col;
// shared by the calls: the entry points' contract keeps what each call writes disjoint
use crate::ptr::Ptr;
use eqfuse_codegen::c::Entries;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether `cancel` is set, and if so the launch marked failed (`ok`): a call that sees it
/// makes none of its own, and the launch gives up as after a failed element (its later
/// passes check `ok` before reading what the skipped calls would have written, or read only
/// numbers of their own size); the step that ran it then ends the run (`E-LIMIT:
/// interrupted`), so the unfinished results are never read. Polled before each call, which
/// is at most one block of elements, so a run stops within one block's time of the flag.
fn stopped(cancel: &Cancel, ok: &AtomicBool) -> bool {
    let stop = cancel.is_cancelled();
    if stop {
        ok.store(false, Ordering::Relaxed);
    }
    stop
}

/// How a kernel's rows are split into calls.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Split {
    /// Whole rows, `per_task` rows a call; reduce results go straight to the outputs.
    Rows { per_task: usize },
    /// Each row in `segs` segments of `seg` elements; partial results, then combined.
    Segments { seg: usize, segs: usize },
    /// Groups of `group` rows in each call (a kernel that folds its rows side by side:
    /// `Order::Columns`), the innermost dimension in `segs` segments of
    /// `seg` elements; partial results, then combined.
    Columns { seg: usize, segs: usize, group: usize },
    /// Blocks of `rows_per` rows by `seg` inner indices, one call each (a kernel of
    /// generate lanes that walks tiles: `Order::Tiles`).
    Tiles { rows_per: usize, seg: usize },
}

impl Entry {
    /// Runs a filter kernel over `len` elements in segments of `seg`: the kept elements, in
    /// order, or `None` when an element failed.
    pub(crate) fn launch_filter(&self, args: &[u64], len: usize, seg: usize, cancel: &Cancel) -> Option<Col> {
        self.launch_filter_with(args, len, seg, &|_, _, _| true, cancel)
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
        cancel: &Cancel,
    ) -> Option<Col> {
        let (Kind::Filter, Entries::Filter(fc)) = (self.kind(), &self.code.entries) else {
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
                if stopped(cancel, &ok) {
                    return n;
                }
                let (j0, j1) = (s * seg, ((s + 1) * seg).min(len));
                // `n` is this call's own
                if !self.count(a.get() as *const u64, j0, j1, &mut n) || !beside(s, j0, j1) {
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
            if stopped(cancel, &ok) {
                return;
            }
            let (j0, j1) = (s * seg, ((s + 1) * seg).min(len));
            // segment `s` writes `counts[s]` elements from its offset, inside `out` and
            // disjoint from the other segments'
            if !self.write(a.get() as *const u64, j0, j1, ob.get().wrapping_add(offsets[s] * sz)) {
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
    pub(crate) fn launch_permute(
        &self,
        args: &[u64],
        out: &mut Col,
        total: usize,
        tasks: usize,
        cancel: &Cancel,
    ) -> bool {
        let Kind::Permute { .. } = self.kind() else { return false };
        if cancel.is_cancelled() {
            return false;
        }
        let a = Ptr(args.as_ptr() as *mut u8);
        let n = out.len();
        let dst = col_ptr(out) as *mut u8;
        if tasks <= 1 || total < 2 {
            // `out` is `n` entries (every target is checked against the destination's shape,
            // whose `n` entries `out` copies), and a null mask is allowed
            return self.permute(a.get() as *const u64, 0, total, dst, std::ptr::null_mut());
        }
        let ty = out.ty();
        let per = total.div_ceil(tasks);
        let parts: Vec<Option<(Col, Vec<u8>)>> = (0..tasks)
            .into_par_iter()
            .map(|t| {
                if cancel.is_cancelled() {
                    return None;
                }
                let (j0, j1) = (t * per, ((t + 1) * per).min(total));
                let mut part = Col::zeros(ty, n);
                let mut touched = vec![0u8; n];
                // as above, into this task's own partial and mask of `n` entries
                let r = self.permute(
                    a.get() as *const u64,
                    j0,
                    j1,
                    col_ptr(&mut part) as *mut u8,
                    touched.as_mut_ptr(),
                );
                r.then_some((part, touched))
            })
            .collect();
        for p in parts {
            let Some((mut part, touched)) = p else { return false };
            // `out`, `part` and `touched` are `n` entries each
            if !self.merge(a.get() as *const u64, dst, col_ptr(&mut part) as *const u8, touched.as_ptr(), n) {
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
        cancel: &Cancel,
    ) -> bool {
        let Kind::Permute { shared: true } = self.kind() else { return false };
        let a = Ptr(args.as_ptr() as *mut u8);
        let dst = Ptr(col_ptr(out) as *mut u8);
        let seg = seg.max(1);
        let ok = AtomicBool::new(true);
        (0..total.div_ceil(seg)).into_par_iter().for_each(|c| {
            if stopped(cancel, &ok) {
                return;
            }
            let (j0, j1) = (c * seg, ((c + 1) * seg).min(total));
            // `out` (borrowed mutably for the whole launch, so nothing else touches it)
            // holds the destination's entries, and the calls that run at once write it only
            // through `shared`
            if !self.shared(a.get() as *const u64, j0, j1, dst.get()) {
                ok.store(false, Ordering::Relaxed);
            }
        });
        ok.load(Ordering::Relaxed)
    }

    /// Runs a scan kernel (one lane, or a group) over `rows` rows of `len` elements into
    /// `outs` (one column per component, `rows * len` elements each), which `args`' output
    /// fields point into: they are borrowed mutably so that nothing else reads or writes
    /// them while the calls write through those pointers. `false` when an element failed.
    pub(crate) fn launch_scan(
        &self,
        args: &[u64],
        outs: &mut [Col],
        rows: usize,
        len: usize,
        split: Split,
        cancel: &Cancel,
    ) -> bool {
        let (Kind::Scan, Entries::Scan(sc)) = (self.kind(), &self.code.entries) else {
            return false;
        };
        if outs.len() != sc.tys.len() {
            return false;
        }
        let ok = AtomicBool::new(true);
        let fail = |r: bool| {
            if !r {
                ok.store(false, Ordering::Relaxed);
            }
        };
        let a = Ptr(args.as_ptr() as *mut u8);
        match split {
            // a scan does not walk tiles: their rows, whole
            Split::Rows { per_task } | Split::Tiles { rows_per: per_task, .. } => {
                let per_task = per_task.max(1);
                (0..rows.div_ceil(per_task)).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (r0, r1) = (t * per_task, ((t + 1) * per_task).min(rows));
                    // rows [r0, r1) are this call's alone
                    fail(self.scan(a.get() as *const u64, r0..r1, 0, len, None, false));
                });
            }
            // a scan is never split by columns (only kernels of reductions are)
            Split::Segments { seg, segs } | Split::Columns { seg, segs, .. } => {
                let carry = Carries::new(&sc.tys, rows * segs);
                let seg_range = |t: usize| {
                    let (row, s) = (t / segs, t % segs);
                    (row, s * seg, ((s + 1) * seg).min(len))
                };
                (0..rows * segs).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (row, j0, j1) = seg_range(t);
                    // partial slot `t` of each component, and segment `t` of the outputs (the
                    // elements kept for the scan below, which reads them back), are this
                    // call's alone
                    fail(self.fold(a.get() as *const u64, row, j0, j1, &carry.parts_at(t), true));
                });
                (0..rows).into_par_iter().for_each(|row| {
                    // row `row`'s partials are read and its carries written by this call alone
                    let at = row * segs;
                    fail(self.prefix(
                        a.get() as *const u64,
                        &carry.parts_read(at),
                        segs,
                        &carry.carries_at(at),
                    ));
                });
                (0..rows * segs).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (row, j0, j1) = seg_range(t);
                    // segment `t` of the outputs is this call's alone; its carry was written
                    fail(self.scan(
                        a.get() as *const u64,
                        row..row + 1,
                        j0,
                        j1,
                        Some(&carry.carry_at(t)),
                        true,
                    ));
                });
                carry.release();
            }
        }
        let ok = ok.load(Ordering::Relaxed);
        if ok {
            for out in outs.iter_mut() {
                mark_written(out, rows * len);
            }
        }
        ok
    }

    /// Runs the kernel over `rows` rows of `len` elements. `args` is the argument block,
    /// whose array fields point to buffers that live for the call and whose generate-lane
    /// fields point into `outs`; `outs` holds one column per lane: a generate lane's of
    /// `rows * len` elements, a reduce lane's of `rows`. Returns `false` when an element
    /// failed (the outputs are then partly written).
    /// Runs a kernel of generate lanes over one row cut at `bounds` (`0 = b0 < .. < bk`, the
    /// row's length last: [`eqfuse_ir::plan::balanced_bounds`]), one call per piece on rayon
    /// threads: a segmented reduction split by its work, not by its point count. `outs` as
    /// for [`Entry::launch`]; `false` when an element failed or a lane reduces.
    pub(crate) fn launch_bounds(
        &self,
        args: &[u64],
        outs: &mut [Col],
        bounds: &[usize],
        cancel: &Cancel,
    ) -> bool {
        let Kind::Lanes { .. } = self.kind() else { return false };
        if self.code.reduce.iter().any(Option::is_some) {
            return false;
        }
        let ok = AtomicBool::new(true);
        let a = Ptr(args.as_ptr() as *mut u8);
        let lanes = self.code.reduce.len();
        (0..bounds.len().saturating_sub(1)).into_par_iter().for_each(|t| {
            if stopped(cancel, &ok) {
                return;
            }
            let red: Vec<*mut u8> = vec![std::ptr::null_mut(); lanes];
            // points [bounds[t], bounds[t + 1]) of the row are this call's alone
            if !self.run(a.get() as *const u64, 0, 1, bounds[t], bounds[t + 1], &red) {
                ok.store(false, Ordering::Relaxed);
            }
        });
        let ok = ok.load(Ordering::Relaxed);
        if ok {
            let len = bounds.last().copied().unwrap_or(0);
            for c in outs.iter_mut() {
                mark_written(c, len);
            }
        }
        ok
    }

    pub(crate) fn launch(
        &self,
        args: &[u64],
        outs: &mut [Col],
        rows: usize,
        len: usize,
        split: Split,
        cancel: &Cancel,
    ) -> bool {
        let Kind::Lanes { combine } = self.kind() else { return false };
        let ok = AtomicBool::new(true);
        let a = Ptr(args.as_ptr() as *mut u8);
        let red_base: Vec<Ptr> = outs.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
        match split {
            Split::Rows { per_task } => {
                let per_task = per_task.max(1);
                let tasks = rows.div_ceil(per_task);
                (0..tasks).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let r0 = t * per_task;
                    let r1 = (r0 + per_task).min(rows);
                    // a reduce lane's column holds `rows` elements
                    let red = self.slots(&red_base, r0);
                    // rows [r0, r1) are this call's alone, and `red` points to their slots
                    if !self.run(a.get() as *const u64, r0, r1, 0, len, &red) {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
            }
            Split::Tiles { rows_per, seg } => {
                let (rows_per, seg) = (rows_per.max(1), seg.max(1));
                let (bands, segs) = (rows.div_ceil(rows_per), len.div_ceil(seg).max(1));
                (0..bands * segs).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (r0, j0) = ((t / segs) * rows_per, (t % segs) * seg);
                    let (r1, j1) = ((r0 + rows_per).min(rows), (j0 + seg).min(len));
                    // a kernel that walks tiles has no reduce lanes
                    let red = self.slots(&red_base, r0);
                    // the block [r0, r1) x [j0, j1) is this call's alone
                    if !self.run(a.get() as *const u64, r0, r1, j0, j1, &red) {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
            }
            Split::Segments { seg, segs } => {
                let mut parts: Vec<Col> = self.partials(rows * segs);
                let part_base: Vec<Ptr> = parts.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
                (0..rows * segs).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (row, s) = (t / segs, t % segs);
                    let j0 = s * seg;
                    let j1 = (j0 + seg).min(len);
                    // the partials hold `rows * segs` elements
                    let red = self.slots(&part_base, row * segs + s);
                    // segment `s` of row `row` and its partial slots are this call's alone
                    if !self.run(a.get() as *const u64, row, row + 1, j0, j1, &red) {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
                if combine && ok.load(Ordering::Relaxed) {
                    self.combine_rows(a, &part_base, &red_base, rows, segs, &ok);
                }
                drop(parts);
            }
            Split::Columns { seg, segs, group } => {
                // the call of segment `s` and group `g` writes its rows' partials at
                // `s * rows + [g * group, (g + 1) * group)`
                let mut parts: Vec<Col> = self.partials(rows * segs);
                let part_base: Vec<Ptr> = parts.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
                let groups = rows.div_ceil(group.max(1));
                (0..segs * groups).into_par_iter().for_each(|t| {
                    if stopped(cancel, &ok) {
                        return;
                    }
                    let (s, g) = (t / groups, t % groups);
                    let j0 = s * seg;
                    let j1 = (j0 + seg).min(len);
                    let (r0, r1) = (g * group, ((g + 1) * group).min(rows));
                    let red = self.slots(&part_base, s * rows + r0);
                    // segment `s` of rows `[r0, r1)`, and their partial slots, are this call's
                    // alone
                    if !self.run(a.get() as *const u64, r0, r1, j0, j1, &red) {
                        ok.store(false, Ordering::Relaxed);
                    }
                });
                if ok.load(Ordering::Relaxed) {
                    // each row's partials next to each other, in order, for `combine`
                    let mut by_row: Vec<Col> = parts.iter().map(|c| transposed(c, segs, rows)).collect();
                    let row_base: Vec<Ptr> = by_row.iter_mut().map(|c| Ptr(col_ptr(c) as *mut u8)).collect();
                    self.combine_rows(a, &row_base, &red_base, rows, segs, &ok);
                    drop(by_row);
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

impl Entry {
    /// Per lane, a column of `n` partial results for a reduce lane (empty for the others).
    fn partials(&self, n: usize) -> Vec<Col> {
        self.code
            .reduce
            .iter()
            .map(|t| match t {
                Some(t) => Col::zeros(*t, n),
                None => Col::zeros(eqfuse_ir::types::ElemType::Bool, 0),
            })
            .collect()
    }

    /// Per lane, where element `at` of a reduce lane's column starting at `base[lane]` is
    /// (null for the other lanes): the `red` argument of a `run` call.
    fn slots(&self, base: &[Ptr], at: usize) -> Vec<*mut u8> {
        (self.code.reduce.iter().zip(base))
            .map(|(t, b)| match t {
                Some(t) => b.get().wrapping_add(at * t.size_bytes()),
                None => std::ptr::null_mut(),
            })
            .collect()
    }

    /// Folds each of `rows` rows' `segs` partial results (`parts[l]`: lane `l`'s, row by
    /// row) into its slot of `outs` (`outs[l]`: lane `l`'s results), in order; clears `ok`
    /// where an operator failed.
    fn combine_rows(&self, a: Ptr, parts: &[Ptr], outs: &[Ptr], rows: usize, segs: usize, ok: &AtomicBool) {
        let nlanes = self.code.reduce.len();
        let sizes: Vec<usize> = self.code.reduce.iter().map(|t| t.map_or(0, |t| t.size_bytes())).collect();
        for l in (0..nlanes).filter(|&l| self.code.reduce[l].is_some()) {
            (0..rows).into_par_iter().for_each(|row| {
                // row `row`'s partials (of every lane) are read and its result slots written
                // by this call alone
                let ps: Vec<*const u8> = (0..nlanes)
                    .map(|m| parts[m].get().wrapping_add(row * segs * sizes[m]) as *const u8)
                    .collect();
                let ds: Vec<*mut u8> =
                    (0..nlanes).map(|m| outs[m].get().wrapping_add(row * sizes[m])).collect();
                if !self.combine(a.get() as *const u64, l, &ps, segs, &ds) {
                    ok.store(false, Ordering::Relaxed);
                }
            });
        }
    }
}

/// The `n x m` matrix `c` (row-major) transposed: `m x n` (an empty column stays empty).
fn transposed(c: &Col, n: usize, m: usize) -> Col {
    let mut out = Col::new(c.ty());
    if c.len() == n * m {
        for j in 0..m {
            for i in 0..n {
                if let Some(v) = c.get(i * m + j) {
                    out.push(v);
                }
            }
        }
    }
    out
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
/// The caller guarantees the entry points' contract ([`super::ffi`]) for every phase over the
/// whole of `rows`: its argument block points to arrays that hold its space and results that
/// hold one element per point (generate lanes) or per row (`red`), a phase reads what an
/// earlier phase wrote only on the rows of its own call, and a kept result is written and
/// read only by row phases, at their own points.
pub(crate) fn launch_row_blocks(
    phases: &[Phase<'_>],
    kept: &[(usize, usize)],
    rows: usize,
    per_block: usize,
    cancel: &Cancel,
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
            if !ok.load(Ordering::Relaxed) || stopped(cancel, &ok) {
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
            // the contract above: rows [r0, r1) (for an outer phase, elements [r0, r1) of its
            // one row) and their result slots are this call's alone, and the earlier phases
            // of this block wrote the rows it reads. A kept result's field points `r0` rows
            // before this block's scratch buffer, which holds `per_block` rows: the call
            // touches only rows [r0, r1) of it, inside the buffer (the address is computed
            // in integers; the C code only ever forms in-bounds ones). A row block's phases
            // are generate and reduce kernels, or row scans (`rowblock.rs` checks).
            let r = match (p.entry.kind(), p.row_phase) {
                (Kind::Lanes { .. }, true) => p.entry.run(a, r0, r1, 0, p.len, &red),
                (Kind::Lanes { .. }, false) => p.entry.run(a, 0, 1, r0, r1, &red),
                (Kind::Scan, true) => p.entry.scan(a, r0..r1, 0, p.len, None, false),
                _ => false,
            };
            if !r {
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
/// The caller guarantees the entry points' contract ([`super::ffi`]) for every phase over the
/// whole space of `n` points: its argument block points to arrays that hold its space and
/// to results that hold one element per point, a phase reads what an earlier phase wrote
/// only at its own point, a kept result is written and read only at the phases' own
/// points, and a permute's `dst` holds its destination and is written only through its
/// `shared` entry (atomically).
pub(crate) fn launch_scan_block(
    phases: &[SegPhase<'_>],
    kept: &[usize],
    n: usize,
    seg: usize,
    cancel: &Cancel,
) -> bool {
    let Some(first) = phases.first() else { return false };
    let (Kind::Scan, Entries::Scan(sc)) = (first.entry.kind(), &first.entry.code.entries) else {
        return false;
    };
    let seg = seg.max(1);
    let segs = n.div_ceil(seg);
    let ok = AtomicBool::new(true);
    let fail = |r: bool| {
        if !r {
            ok.store(false, Ordering::Relaxed);
        }
    };
    let range = |t: usize| (t * seg, ((t + 1) * seg).min(n));
    let carry = Carries::new(&sc.tys, segs);
    let a0 = Ptr(first.args.as_ptr() as *mut u8);
    (0..segs).into_par_iter().for_each(|t| {
        if stopped(cancel, &ok) {
            return;
        }
        let (j0, j1) = range(t);
        // partial slot `t` of each component is this call's alone
        fail(first.entry.fold(a0.get() as *const u64, 0, j0, j1, &carry.parts_at(t), false));
    });
    if !ok.load(Ordering::Relaxed) {
        return false;
    }
    // `segs` partials are read and `segs` carries written
    fail(first.entry.prefix(a0.get() as *const u64, &carry.parts_read(0), segs, &carry.carries_at(0)));
    if !ok.load(Ordering::Relaxed) {
        return false;
    }
    // 8-byte words of scratch for each kept result of a segment
    let words: Vec<usize> = kept.iter().map(|&size| (seg * size).div_ceil(8)).collect();
    let scratch = || -> Vec<Vec<u64>> { words.iter().map(|&w| vec![0u64; w]).collect() };
    (0..segs).into_par_iter().for_each_init(scratch, |bufs, t| {
        let (j0, j1) = range(t);
        for p in phases {
            if !ok.load(Ordering::Relaxed) || stopped(cancel, &ok) {
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
            // the contract above: points [j0, j1) of every result are this call's alone (a
            // permute's destination is written atomically by its `shared` entry), the
            // earlier phases of this segment wrote the points it reads, and the carry of
            // segment `t` is the fold of the segments before it. A kept result's field
            // points `j0` elements before this segment's scratch buffer, which holds `seg`:
            // the call touches only points [j0, j1) of it (the address is computed in
            // integers; the C code only ever forms in-bounds ones).
            let r = match (p.entry.kind(), p.dst) {
                (Kind::Scan, None) => p.entry.scan(a, 0..1, j0, j1, Some(&carry.carry_at(t)), false),
                (Kind::Lanes { .. }, None) => p.entry.run(a, 0, 1, j0, j1, &nulls),
                (Kind::Permute { shared: true }, Some(dst)) => p.entry.shared(a, j0, j1, dst.get()),
                _ => false,
            };
            if !r {
                ok.store(false, Ordering::Relaxed);
                return;
            }
        }
    });
    carry.release();
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
        let Kind::Lanes { .. } = entry.kind() else { return None };
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
        let red: Vec<*mut u8> = self
            .entry
            .code
            .reduce
            .iter()
            .zip(&self.part_base)
            .map(|(r, base)| match r {
                // the partials hold one element per segment, and `s` is a segment
                Some(t) => base.get().wrapping_add(s * t.size_bytes()),
                None => std::ptr::null_mut(),
            })
            .collect();
        // elements [j0, j1) of the one row and partial slot `s` are this call's alone
        self.entry.run(self.args.as_ptr(), 0, 1, j0, j1, &red)
    }

    /// After every segment ran: each reduce lane's partials combined, in order, into its
    /// result in `outs` (one column per lane), and each generate lane's result marked
    /// written; `false` when an element failed.
    pub(crate) fn finish(self, outs: &mut [Col]) -> bool {
        let Kind::Lanes { combine } = self.entry.kind() else { return false };
        // an empty space ran no segment: its one partial is the neutral element
        if self.len == 0 && !self.run(0, 0, 0) {
            return false;
        }
        let segs = self.len.div_ceil(self.seg).max(1);
        let ds: Vec<*mut u8> = outs.iter_mut().map(|c| col_ptr(c) as *mut u8).collect();
        let ps: Vec<*const u8> = self.part_base.iter().map(|p| p.get() as *const u8).collect();
        for (l, (r, out)) in self.entry.code.reduce.iter().zip(outs.iter_mut()).enumerate() {
            match r {
                Some(_) => {
                    // the lanes' `segs` partials are read and their one result slot each (a
                    // reduce lane's column of one row) written
                    if !combine || !self.entry.combine(self.args.as_ptr(), l, &ps, segs, &ds) {
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
