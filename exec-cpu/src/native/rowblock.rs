//! A row block ([`eqfuse_ir::plan::Step::RowBlock`]) as native code: every phase's results
//! allocated first, then blocks of rows on rayon threads, each block running every phase
//! over its rows before the next block starts, so a block's rows stay in cache between the
//! phases and cross main memory once.
//!
//! What the block keeps per block (the step's `local`: results only its later phases read,
//! each on its own row) is not allocated whole: each block writes and reads its rows of it
//! in a scratch buffer of the block's size, so it never reaches main memory (softmax's
//! `exp (x - max)`). Its result in the store is then absent; nothing after the block reads
//! it.
//!
//! A block's size aims at half the cache a core has to itself (its L2, as the system
//! reports it; 256 KiB when it does not) of the arrays its rows touch, with
//! at least four blocks per thread. Where anything stands in the way (a phase with no native
//! code, a read the host cannot prove in bounds, an element that failed) the caller runs the
//! phases one after the other instead, as kernels of their own, which also gives a failing
//! element's exact error.

use super::{alloc_results, arg_block_with, block_start, count, ffi, launch, Prepared};
use crate::cancel::Cancel;
use crate::col::Col;
use crate::store::Results;
use crate::store::Store;
use eqfuse_codegen::c::Entries;
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_codegen::Slot;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::exec::Phases;
use eqfuse_ir::plan::{Kernel, ValueId};
use std::collections::HashMap;

/// Bytes of rows one block aims at where the system does not say how big a core's own
/// cache is (else half of it: [`crate::caches`]).
const BLOCK_BYTES: usize = 256 << 10;

/// Runs the phases of a row block natively: each phase's results, or `None` when the caller
/// must run them one by one. A result in `local` comes back empty (zero
/// elements): it was kept per block.
pub(crate) fn run(
    prep: &Prepared,
    store: &Store<'_>,
    phases: Phases<'_>,
    max_bytes: u64,
    cancel: &Cancel,
) -> Result<Option<Vec<Results>>> {
    let Phases { first, kernels, local } = phases;
    let Some((_, first_shape, _)) = block_start(store, kernels)? else {
        return Ok(None);
    };
    let outer = first_shape[..first_shape.len() - 1].to_vec();
    let Some(rows) = outer.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) else { return Ok(None) };
    // the phases, their shapes and entry points, and every result allocated
    let mut entries = Vec::with_capacity(kernels.len());
    let mut shapes = Vec::with_capacity(kernels.len());
    let mut outs: Vec<Vec<Col>> = Vec::with_capacity(kernels.len());
    let mut result_shapes: Vec<Vec<Vec<usize>>> = Vec::with_capacity(kernels.len());
    let mut made: HashMap<ValueId, (u64, Vec<usize>)> = HashMap::new();
    // each kept result: its element size and row length, by its place in `local`
    let mut kept: Vec<Option<(usize, usize)>> = vec![None; local.len()];
    let mut widest = 1usize;
    for (i, k) in kernels.iter().enumerate() {
        let Some(entry) = prep.entry(first.offset(i)) else { return Ok(None) };
        let c = &entry.code;
        // generate and reduce lanes, or one row scan
        if !matches!(c.entries, Entries::Lanes { .. } | Entries::Scan(_)) {
            return Ok(None);
        }
        let (shape, _) = k.shape(|v| store.load(v), |v| store.name(v))?;
        // a row phase over `outer ++ [inner]`, or an outer phase over `outer` (one dimension)
        let row_phase = shape.len() == outer.len() + 1 && shape[..outer.len()] == outer[..];
        let scan = matches!(c.entries, Entries::Scan(_));
        if !(row_phase || outer.len() == 1 && shape == outer && !scan) {
            return Ok(None);
        }
        widest = widest.max(if row_phase { shape[shape.len() - 1] } else { 1 });
        let keep: Vec<bool> = k.lanes.iter().map(|l| local.contains(&l.dst)).collect();
        let (mut cols, shs) = alloc_results(store, k, c, &shape, &keep, max_bytes, false)?;
        for (((lane, col), sh), red) in k.lanes.iter().zip(&mut cols).zip(&shs).zip(&c.reduce) {
            made.insert(lane.dst, (ffi::col_ptr(col), sh.clone()));
            if let Some(at) = local.iter().position(|v| *v == lane.dst) {
                // only a row phase's generate or scan lane is kept (the plan's pass says so)
                if !row_phase || red.is_some() {
                    return Ok(None);
                }
                kept[at] = Some((store.elem(lane.dst)?.size_bytes(), shape[shape.len() - 1]));
            }
        }
        entries.push((entry, row_phase));
        shapes.push(shape);
        outs.push(cols);
        result_shapes.push(shs);
    }
    // the reads the generated code does not check must be in bounds
    for ((entry, _), shape) in entries.iter().zip(&shapes) {
        let dims = |v| match made.get(&v) {
            Some((_, d)) => Ok(d.clone()),
            None => Ok(store.get(v)?.shape.clone()),
        };
        if !reads_fit(&entry.code.in_space, shape, dims)? {
            return Ok(None);
        }
    }
    let mut args = Vec::with_capacity(kernels.len());
    let mut patches = Vec::with_capacity(kernels.len());
    for ((((entry, _), shape), cols), k) in entries.iter().zip(&shapes).zip(&mut outs).zip(kernels) {
        args.push(arg_block_with(store, &entry.code.slots, shape, cols, &made)?);
        patches.push(kept_fields(&entry.code.slots, k, local));
    }
    let Some(kept) = kept.into_iter().collect::<Option<Vec<_>>>() else { return Ok(None) };
    let phases: Vec<launch::Phase<'_>> = entries
        .iter()
        .zip(&args)
        .zip(&mut outs)
        .zip(&shapes)
        .zip(patches)
        .map(|(((((entry, row_phase), args), cols), shape), kept)| launch::Phase {
            entry,
            args,
            kept,
            red: cols
                .iter_mut()
                .zip(&entry.code.reduce)
                .map(|(col, red)| red.map(|t| (ffi::col_ptr(col), t.size_bytes())))
                .collect(),
            row_phase: *row_phase,
            len: shape[shape.len() - 1],
        })
        .collect();
    let threads = rayon::current_num_threads().max(1);
    let row_bytes = widest.saturating_mul(8).saturating_mul(kernels.len());
    let aim = crate::caches::private_cache_bytes().map_or(BLOCK_BYTES, |c| c / 2);
    let per_block = (aim / row_bytes.max(1)).clamp(1, rows.div_ceil(threads * 4).max(1));
    if !launch::launch_row_blocks(&phases, &kept, rows, per_block, cancel) {
        return Ok(None);
    }
    for _ in kernels {
        count(true);
    }
    super::COUNTS[3].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok(Some(
        outs.into_iter().zip(result_shapes).map(|(cols, shs)| shs.into_iter().zip(cols).collect()).collect(),
    ))
}

/// The fields of a phase's argument block that hold a kept result's address (an array it
/// reads, or a lane's output), each with the result's place in `local`.
pub(super) fn kept_fields(slots: &[Slot], k: &Kernel, local: &[ValueId]) -> Vec<(usize, usize)> {
    let at = |v: ValueId| local.iter().position(|x| *x == v);
    slots
        .iter()
        .enumerate()
        .filter_map(|(i, slot)| match slot {
            Slot::Array(v) => at(*v).map(|p| (i, p)),
            Slot::Out(l) => k.lanes.get(*l).and_then(|lane| at(lane.dst)).map(|p| (i, p)),
            _ => None,
        })
        .collect()
}
