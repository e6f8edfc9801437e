//! A segment block ([`eqfuse_ir::plan::Step::SegmentBlock`]) as native code.
//!
//! - A **scan block**: the scan's elements folded segment by segment, each segment's carry
//!   from the totals before it, then every segment on a rayon thread through every phase
//!   (the scan from its carry, then the kernels that read its result at their own point),
//!   so that what the block keeps (the step's `local`: a compaction's positions) lives in a
//!   scratch buffer of one segment and never reaches main memory. Its result in the store is
//!   then absent; nothing after the block reads it.
//! - A **filter block**: the filter's counting pass runs the other kernels (generate and
//!   reduce lanes: the sums and counts of the same input) over each segment right after
//!   counting it, while the segment is in cache; their reduce results are combined from one
//!   partial per segment in order, as their own segmented launch would (the same results,
//!   bit for bit); then the filter writes the kept elements.
//!
//! A segment is the executor's block of elements (`RunOptions::block_size`): a few
//! thousand points of every phase stay in a core's own cache between the phases. Where
//! anything stands in the way (a phase with no native code, a phase other than a generate
//! kernel or a permute whose operator writes one shared result after a scan, or a kernel of
//! generate and reduce lanes after a filter, a read the host cannot prove in bounds, an
//! element that failed) the caller runs the phases one after the other instead, as kernels
//! of their own, which also gives a failing element's exact error.

use super::{
    alloc_results, arg_block_with, block_start, count, ffi, launch, permute_split, PermuteSplit, Prepared,
};
use crate::cancel::Cancel;
use crate::col::Col;
use crate::ptr::Ptr;
use crate::store::{permute_start, Results, Store};
use eqfuse_codegen::c::Entries;
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::exec::Phases;
use eqfuse_ir::plan::{Kernel, ValueId};
use std::collections::HashMap;

/// Runs the phases `kernels` of a scan block natively in segments of `seg` points: each
/// phase's results, or `None` when the caller must run them one by one. A result in `local`
/// comes back empty (zero elements): it was kept per segment.
pub(crate) fn run(
    prep: &Prepared,
    store: &Store<'_>,
    phases: Phases<'_>,
    max_bytes: u64,
    seg: usize,
    cancel: &Cancel,
) -> Result<Option<Vec<Results>>> {
    let Phases { first: first_id, kernels, local } = phases;
    let Some((_, first_shape, n)) = block_start(store, kernels)? else {
        return Ok(None);
    };
    if first_shape.len() != 1 {
        return Ok(None);
    }
    if prep.entry(first_id).is_some_and(|e| matches!(e.code.entries, Entries::Filter(_))) {
        return filter_block(prep, store, phases, &first_shape, max_bytes, seg, cancel);
    }
    let threads = rayon::current_num_threads().max(1);
    let mut entries = Vec::with_capacity(kernels.len());
    let mut outs: Vec<Vec<Col>> = Vec::with_capacity(kernels.len());
    let mut result_shapes: Vec<Vec<Vec<usize>>> = Vec::with_capacity(kernels.len());
    let mut made: HashMap<ValueId, (u64, Vec<usize>)> = HashMap::new();
    // each kept result's element size, by its place in `local`
    let mut kept: Vec<Option<usize>> = vec![None; local.len()];
    for (i, k) in kernels.iter().enumerate() {
        let Some(entry) = prep.entry(first_id.offset(i)) else { return Ok(None) };
        let c = &entry.code;
        let (shape, _) = k.shape(|v| store.load(v), |v| store.name(v))?;
        if shape != first_shape {
            return Ok(None);
        }
        match &c.entries {
            Entries::Scan(_) if i == 0 => {}
            Entries::Lanes { .. } if i > 0 && c.reduce.iter().all(Option::is_none) => {}
            Entries::Permute(pc) if i > 0 => {
                let t = store.elem(k.lanes[0].dst)?;
                if pc.ty != t || local.contains(&k.lanes[0].dst) {
                    return Ok(None);
                }
                let (dshape, out) = permute_start(store, k.kind.as_str(), t, &pc.dest, max_bytes)?;
                // every segment writes the one result: an operator that keeps one side, or
                // atomics where the destination is not small (a histogram's private
                // partials are the permute kernel's own path)
                if permute_split(pc.shared.as_ref().map(|s| s.1), out.len(), n, threads)
                    != PermuteSplit::Shared
                {
                    return Ok(None);
                }
                entries.push(entry);
                outs.push(vec![out]);
                result_shapes.push(vec![dshape]);
                continue;
            }
            _ => return Ok(None),
        }
        let keep: Vec<bool> = k.lanes.iter().map(|l| local.contains(&l.dst)).collect();
        let (mut cols, shs) = alloc_results(store, k, c, &shape, &keep, max_bytes, false)?;
        for (lane, col) in k.lanes.iter().zip(&mut cols) {
            made.insert(lane.dst, (ffi::col_ptr(col), shape.clone()));
            if let Some(at) = local.iter().position(|v| *v == lane.dst) {
                kept[at] = Some(store.elem(lane.dst)?.size_bytes());
            }
        }
        entries.push(entry);
        outs.push(cols);
        result_shapes.push(shs);
    }
    // the reads the generated code does not check must be in bounds
    for entry in &entries {
        let dims = |v| match made.get(&v) {
            Some((_, d)) => Ok(d.clone()),
            None => Ok(store.get(v)?.shape.clone()),
        };
        if !reads_fit(&entry.code.in_space, &first_shape, dims)? {
            return Ok(None);
        }
    }
    let Some(kept) = kept.into_iter().collect::<Option<Vec<usize>>>() else { return Ok(None) };
    let mut args = Vec::with_capacity(kernels.len());
    let mut dsts = Vec::with_capacity(kernels.len());
    for (entry, cols) in entries.iter().zip(&mut outs) {
        // a permute's result is not a field: its `shared` entry takes it
        if matches!(entry.code.entries, Entries::Permute(_)) {
            args.push(arg_block_with(store, &entry.code.slots, &first_shape, &mut [], &made)?);
            dsts.push(cols.first_mut().map(|c| Ptr(ffi::col_ptr(c) as *mut u8)));
        } else {
            args.push(arg_block_with(store, &entry.code.slots, &first_shape, cols, &made)?);
            dsts.push(None);
        }
    }
    let phases: Vec<launch::SegPhase<'_>> = entries
        .iter()
        .zip(&args)
        .zip(dsts)
        .zip(kernels)
        .map(|(((entry, args), dst), k)| launch::SegPhase {
            entry,
            args,
            kept: super::rowblock::kept_fields(&entry.code.slots, k, local),
            dst,
        })
        .collect();
    if !launch::launch_scan_block(&phases, &kept, n, seg, cancel) {
        return Ok(None);
    }
    ran_natively(kernels);
    Ok(Some(
        outs.into_iter().zip(result_shapes).map(|(cols, shs)| shs.into_iter().zip(cols).collect()).collect(),
    ))
}

/// Counts a segment block that ran segment by segment, and its kernels as native ones.
fn ran_natively(kernels: &[Kernel]) {
    for _ in kernels {
        count(true);
    }
    super::COUNTS[2].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A filter block: the filter (`kernels[0]`) counting each segment and the other kernels
/// (generate and reduce lanes, over the same `shape`) running over it in that pass; `None`
/// when the caller must run them one by one.
fn filter_block(
    prep: &Prepared,
    store: &Store<'_>,
    phases: Phases<'_>,
    shape: &[usize],
    max_bytes: u64,
    seg: usize,
    cancel: &Cancel,
) -> Result<Option<Vec<Results>>> {
    let Phases { first: first_id, kernels, .. } = phases;
    let mut entries = Vec::with_capacity(kernels.len());
    for (i, k) in kernels.iter().enumerate() {
        let Some(entry) = prep.entry(first_id.offset(i)) else { return Ok(None) };
        let (sh, _) = k.shape(|v| store.load(v), |v| store.name(v))?;
        let fits = match &entry.code.entries {
            Entries::Filter(_) => i == 0,
            Entries::Lanes { .. } => i > 0,
            _ => false,
        };
        // the later kernels read nothing the block makes (the plan's pass says so): every
        // array they read is in the store
        if !fits
            || sh != shape
            || !reads_fit(&entry.code.in_space, shape, |v| Ok(store.get(v)?.shape.clone()))?
        {
            return Ok(None);
        }
        entries.push(entry);
    }
    let fargs = super::arg_block(store, &entries[0].code.slots, shape, &mut [])?;
    let mut outs: Vec<Vec<Col>> = Vec::with_capacity(kernels.len());
    let mut result_shapes: Vec<Vec<Vec<usize>>> = Vec::with_capacity(kernels.len());
    let mut args = Vec::with_capacity(kernels.len());
    for (k, entry) in kernels.iter().zip(&entries).skip(1) {
        let (mut cols, shs) = alloc_results(store, k, &entry.code, shape, &[], max_bytes, true)?;
        args.push(super::arg_block(store, &entry.code.slots, shape, &mut cols)?);
        outs.push(cols);
        result_shapes.push(shs);
    }
    let n = shape[0];
    let mut sides = Vec::with_capacity(args.len());
    for (entry, a) in entries.iter().skip(1).zip(&args) {
        let Some(s) = launch::Segmented::new(entry, a, n, seg) else { return Ok(None) };
        sides.push(s);
    }
    let beside = |s: usize, j0: usize, j1: usize| sides.iter().all(|x| x.run(s, j0, j1));
    let Some(kept) = entries[0].launch_filter_with(&fargs, n, seg, &beside, cancel) else { return Ok(None) };
    for (side, cols) in sides.into_iter().zip(&mut outs) {
        if !side.finish(cols) {
            return Ok(None);
        }
    }
    ran_natively(kernels);
    let mut results: Vec<Results> = vec![vec![(vec![kept.len()], kept)]];
    results
        .extend(outs.into_iter().zip(result_shapes).map(|(cols, shs)| shs.into_iter().zip(cols).collect()));
    Ok(Some(results))
}
