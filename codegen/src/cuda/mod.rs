//! CUDA C generation: one self-contained `.cu` file per [`Kernel`] of a plan.
//!
//! A file holds the [`prelude`] (error record, wrapping integer arithmetic,
//! saturating conversions, NaN-propagating `min`/`max`, ordered warp/block reductions and
//! scans, compare-and-swap loops), the kernel's argument block `EqArgs`, its element
//! function and lane functions as `__device__` functions of straight-line C
//! ([`crate::scalar`]), and
//! one or more `extern "C" __global__` entry points from a small set of skeletons
//! (module `skeleton`):
//!
//! | kernel | skeleton | entry points |
//! | --- | --- | --- |
//! | generate lanes only (`map`, `gather`, `copy`, ...) | grid-stride loop, multi-index from the flat index | `_map` |
//! | reduce over a 1-d space (plus generate lanes) | one launch: each thread folds a chunk, block tree with warp shuffles, the last block (atomic counter) combines the per-block partials | `_reduce` |
//! | reduce over rank >= 2 (rows) | a warp per row or a block per row, chosen at launch by the row length | `_reduce_warp`, `_reduce_block` |
//! | scan over a 1-d space | one pass: a block per tile, `EQ_ITEMS` consecutive elements per thread, the tile's prefix by decoupled look-back | `_scan` |
//! | scan over rank >= 2 | a block per row, tiles with a carry | `_scan_rows` |
//! | filter | one pass as the scan, on counts: each tile writes its kept elements from its offset; the count is read after the pass | `_filter` |
//! | permute | grid-stride loop, atomics (`atomicAdd`, `atomicMin`/`Max`, compare-and-swap loops) | `_permute` |
//! | a row block's phases ([`rowblock`]) | a block per row, the phases one after the other over it | `_rowblock` |
//!
//! Every entry point takes one parameter, `const EqArgs A`: a struct of 8-byte fields
//! (pointers, `long long` extents and dimensions, host scalars in an 8-byte union), listed in
//! [`KernelCode::slots`] in order, which the runtime fills and passes as one blob. Reductions
//! and scans keep their operands in order (the language requires only associativity);
//! when the operator is a recognised commutative one (`+`, `*`, `min`, `max`) the elements
//! are dealt to threads in strides (coalesced), otherwise in contiguous chunks.
//!
//! A reduction or scan over a group (version 2's `argmin`, Welford, `reduce`/`scan` over a
//! tuple: a head lane and its [`LaneOp::Part`](eqfuse_ir::plan::LaneOp::Part)s) takes the
//! same skeletons (full and row reductions, beside other lanes; 1-d and row scans) on the
//! group's value, a struct of its components that lives in registers only; every component
//! has its own shared array, scratch buffer and output. Its operator never commutes for
//! the skeletons (contiguous chunks, lower index on the left), and the primitives over
//! groups ([`prelude::GROUPS`]) are in the files of such kernels only.

pub mod prelude;
pub mod rowblock;
mod skeleton;

pub use crate::{host_known, Slot};
use eqfuse_ir::plan::{Kernel, Plan, ValueId};
use std::collections::HashSet;
use std::fmt::Write as _;

/// A scratch buffer a skeleton needs: `fixed + per_block * blocks` bytes, zeroed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scratch {
    /// Bytes whatever the grid.
    pub fixed: usize,
    /// Bytes per block of the launch grid.
    pub per_block: usize,
}

/// The launch protocol of a kernel: which entry points run, in which order, on what grid.
#[derive(Clone, Debug, PartialEq)]
pub enum Skeleton {
    /// Generate lanes only: `entry` over the space in a grid-stride loop.
    Map { entry: String },
    /// Reduce (and generate) lanes over a 1-d space, one launch. Scratch 0 is the block
    /// counter; scratch `1 + k` the partials of the `k`-th reduce lane.
    FullReduce { entry: String },
    /// Reduce (and generate) lanes over rank >= 2: a warp or a block per row.
    RowReduce { warp: String, block: String },
    /// A scan over a 1-d space in one pass: a block per tile of `tile` elements, each tile
    /// taking its prefix from its predecessors by decoupled look-back. Scratch 0 is the
    /// tile counter; 1, 2 and 3 the tiles' flags, aggregates and inclusive prefixes.
    Scan1d { entry: String, tile: usize },
    /// A scan along rows (rank >= 2): a block per row.
    ScanRows { entry: String },
    /// A filter in one pass, into an output with room for every element: a block per tile
    /// of `tile` elements, whose offset comes from its predecessors' counts by decoupled
    /// look-back; the last tile writes the number kept into scratch 4 (the host reads it
    /// after the pass). Scratch 0 to 3 as for [`Skeleton::Scan1d`], on counts.
    Filter { entry: String, tile: usize },
    /// A permute: the output starts as `dest` (a copy of an array, or a fill the host
    /// makes), then `entry` combines atomically.
    Permute { entry: String, dest: eqfuse_ir::plan::PermuteDest },
    /// The phases of a row block in one kernel ([`rowblock`]): a block per row, in a
    /// grid-stride loop over the rows; every phase's results are the values' own buffers.
    RowBlock { entry: String },
}

/// The generated code of one kernel.
#[derive(Clone, Debug)]
pub struct KernelCode {
    /// File name: `k<index>_<kind>.cu`.
    pub file: String,
    /// The CUDA C source.
    pub source: String,
    /// How it is launched.
    pub skeleton: Skeleton,
    /// The argument block's fields, in order.
    pub slots: Vec<Slot>,
    /// Scratch buffers.
    pub scratch: Vec<Scratch>,
    /// Arrays the element function reads without a bounds check, at indices of the space
    /// (with [`GenOptions::unchecked`]): before the launch the host checks that the space's
    /// extent along each axis that indexes the array is at most the array's dimension, and
    /// generates the kernel again with every read checked where one is not (that run
    /// reports the read that fails).
    pub in_space: Vec<crate::scalar::InSpace>,
}

/// Options that change the generated source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GenOptions {
    /// Threads per block (a multiple of 32, at most 1024).
    pub block: u32,
    /// Allow `atomicAdd` on `f32` (flushes subnormals) in permutes.
    pub fast_math: bool,
    /// Emit reads at indices of the space without a bounds check
    /// ([`KernelCode::in_space`]); off, every read is checked.
    pub unchecked: bool,
}

/// The kernel's file name: `k<index>_<kind>.cu`.
pub fn file_name(index: usize, kernel: &Kernel) -> String {
    let kind: String = kernel
        .kind
        .as_str()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
        .collect();
    format!("k{index}_{kind}.cu")
}

/// Generates kernel number `index` of `plan` (numbered as [`Plan::kernels`] lists them).
/// `Err` says why the plan is malformed.
pub fn generate(
    plan: &Plan,
    kernel: &Kernel,
    index: usize,
    opts: GenOptions,
    host: &HashSet<ValueId>,
) -> Result<KernelCode, String> {
    let mut g = skeleton::Gen::new(plan, kernel, index, opts, host)?;
    let skel = g.build()?;
    let (layout, funcs, kernels, scratch, in_space) = g.finish();
    let head = format!("kernel k{index}, {}", crate::describe(plan, kernel));
    let groups = kernel.lanes.iter().any(|l| l.op.width() > 1);
    Ok(KernelCode {
        file: file_name(index, kernel),
        source: assemble(&head, opts, groups, &layout, &funcs, &kernels),
        skeleton: skel,
        slots: layout.slots(),
        scratch,
        in_space,
    })
}

/// A file's source: the head comment, the options' defines, the prelude (with
/// [`prelude::GROUPS`] where the kernel reduces or scans over a group), the argument block,
/// the device functions and the entry points.
fn assemble(
    head: &str,
    opts: GenOptions,
    groups: bool,
    layout: &crate::Layout,
    funcs: &str,
    kernels: &str,
) -> String {
    let mut src = String::new();
    let _ = writeln!(src, "// eqfuse: {head}");
    let _ = writeln!(src, "// generated CUDA C; compiled by NVRTC on its own (no #include).");
    let _ = writeln!(src, "#define EQ_BLOCK {}", opts.block);
    let _ = writeln!(src, "#define EQ_ITEMS {}", skeleton::ITEMS);
    if opts.fast_math {
        src.push_str("#define EQ_FAST_MATH 1\n");
    }
    for part in [
        prelude::HEAD,
        crate::prelude::SCALAR_HEAD,
        prelude::FAIL,
        crate::prelude::SCALAR_HELPERS,
        crate::prelude_ints::BIT_COUNTS,
        crate::prelude_ints::SCALAR_INTS,
        eqfuse_ir::math::c_source(),
    ] {
        src.push_str(part);
    }
    let end = "// ---- end of prelude ----";
    let (tail, last) = prelude::TAIL.split_at(prelude::TAIL.rfind(end).unwrap_or(prelude::TAIL.len()));
    src.push_str(tail);
    if groups {
        src.push_str(prelude::GROUPS);
    }
    src.push_str(last);
    src.push('\n');
    src.push_str(&layout.declaration());
    src.push('\n');
    src.push_str(funcs);
    src.push_str(kernels);
    src
}

/// A file that does not compile, saying why the kernel could not be generated.
pub fn error_source(index: usize, why: &str) -> String {
    let why = why.replace(['\n', '\r', '"'], " ");
    format!("// eqfuse: kernel k{index} could not be generated\n#error \"eqfuse: {why}\"\n")
}
