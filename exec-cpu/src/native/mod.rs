//! Native kernels: a plan's kernels as C (`eqfuse_codegen::c`), compiled by the system C
//! compiler ([`compile`]), loaded and called on rayon threads ([`ffi`]).
//!
//! [`prepare`] generates, compiles (or finds in the cache) and loads a plan once per
//! process and source; [`run_kernel`] runs one kernel natively, or says that the VM must:
//! a kernel the generator leaves out (a scan or permute beside other lanes, a filter of
//! rank above 1), or one where an
//! element failed, whose error the VM then reports exactly. When no C compiler works, a
//! line on stderr says so (once) and every kernel runs on the VM.

mod build;
mod cache;
mod carry;
mod compile;
mod ffi;
mod launch;
mod rowblock;
mod segblock;

/// A row block's phases natively, block by block: each phase's results, or `None` when the
/// caller must run them one by one.
pub(crate) use rowblock::run as run_row_block;
/// A segment block's phases (a scan block or a filter block) natively, segment by segment:
/// each phase's results, or `None` when the caller must run them one by one.
pub(crate) use segblock::run as run_segment_block;

pub use build::abort_compilers;
pub use cache::default_cache_dir;
pub(crate) use compile::{compiler, FLAGS};

use crate::cancel::Cancel;
use crate::col::Col;
use crate::internal;
use crate::store::permute_start;
use crate::store::Store;
use crate::store::{check_alloc, Results};
use eqfuse_codegen::c::{Entries, KernelCode, Order, Shared};
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_codegen::Slot;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Kernel, KernelId, Plan};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// Kernels run natively, kernels of a native plan that ran on the VM (not generated, a
/// shape check that failed, an element that failed), segment blocks run segment by
/// segment, and row blocks run block by block, since the process started.
pub(crate) static COUNTS: [std::sync::atomic::AtomicUsize; 4] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

fn count(native: bool) {
    COUNTS[usize::from(!native)].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The first phase of a native block and its shape with its point count, or `None` where
/// the block has no phase. (Whether a block runs natively at all is the caller's:
/// [`crate::RunOptions::row_blocks`], [`crate::RunOptions::segment_blocks`].)
fn block_start<'k>(
    store: &Store<'_>,
    kernels: &'k [Kernel],
) -> Result<Option<(&'k Kernel, Vec<usize>, usize)>> {
    let Some(first) = kernels.first() else { return Ok(None) };
    let (shape, n) = first.shape(|v| store.load(v), |v| store.name(v))?;
    Ok(Some((first, shape, n)))
}

/// A plan ready to run natively.
pub(crate) struct Prepared {
    /// The loaded library, shared with every plan of the same source; `entries` point into
    /// it.
    _module: Arc<ffi::Module>,
    /// Per kernel, by its [`KernelId`]: its entry points with the code generated for this
    /// plan.
    entries: Vec<Option<ffi::Entry>>,
}

impl Prepared {
    /// Kernel `id`'s entry points, where it was generated.
    fn entry(&self, id: KernelId) -> Option<&ffi::Entry> {
        self.entries.get(id.index())?.as_ref()
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("kernels", &self.entries.len()).finish()
    }
}

/// Where compiled plans are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CacheOpts {
    /// The directory, or `None` for no disk cache (compiled into a temporary directory,
    /// removed once loaded).
    pub dir: Option<PathBuf>,
    /// When the C compiler must have finished (`None`: no limit): it is then killed and the
    /// plan's kernels run on the VM ([`crate::RunOptions::compile_deadline`]).
    pub deadline: Option<std::time::Instant>,
}

/// Says `why` on stderr, once per process and reason, with what follows from it.
fn notice(why: &str) {
    eqfuse_codegen::cache::say(&format!(
        "{why}; the CPU backend runs these kernels on its interpreter (slower)"
    ));
}

/// What preparing a plan for native code did ([`crate::compile_plan`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompileReport {
    /// Kernels (numbered as `Plan::kernels` lists them) that run as native code.
    pub native: Vec<usize>,
    /// Kernels that run on the VM, and why.
    pub vm: Vec<(usize, String)>,
    /// Seconds spent in the C compiler (0 when the plan was in the cache).
    pub compile_seconds: f64,
    /// Whether the compiled plan came from the cache (in memory or on disk).
    pub cached: bool,
    /// Why no kernel runs natively, when the compiler could not be used.
    pub failure: Option<String>,
}

/// Generates, compiles and loads `plan`'s kernels; `None` when none can run natively (a
/// notice on stderr says why, unless the plan simply has no kernel the generator takes).
pub(crate) fn prepare(plan: &Plan, cache: &CacheOpts) -> Option<Prepared> {
    let (p, report) = prepare_reporting(plan, cache);
    if let Some(why) = &report.failure {
        notice(why);
    }
    p
}

/// [`prepare`], and what it did.
pub(crate) fn prepare_reporting(plan: &Plan, cache: &CacheOpts) -> (Option<Prepared>, CompileReport) {
    type Modules = Mutex<HashMap<String, Arc<ffi::Module>>>;
    static MODULES: OnceLock<Modules> = OnceLock::new();
    let code = eqfuse_codegen::c::generate(plan);
    let mut report = CompileReport::default();
    for (i, k) in code.kernels.iter().enumerate() {
        match k {
            Ok(_) => report.native.push(i),
            Err(why) => report.vm.push((i, why.clone())),
        }
    }
    if !code.any() {
        return (None, report);
    }
    let fail = |mut report: CompileReport, why: String| {
        report.vm.extend(report.native.drain(..).map(|i| (i, "no native code".to_string())));
        report.vm.sort_by_key(|(i, _)| *i);
        report.failure = Some(why);
        (None, report)
    };
    let cc = compile::compiler();
    let key = match compile::key(&code.source, &cc) {
        Ok(k) => k,
        Err(why) => return fail(report, why),
    };
    let modules = MODULES.get_or_init(Default::default);
    if let Some(m) = modules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&key) {
        report.cached = true;
        let entries = m.entries(&code.kernels);
        return (Some(Prepared { _module: Arc::clone(m), entries }), report);
    }
    // a private directory (a temporary one is removed once the plan is loaded); what is
    // loaded from it is checked first (`cache.rs`)
    let loaded = cache::open(cache.dir.as_deref()).and_then(|dir| {
        cache::load_or_compile(
            &dir,
            &key,
            |work| {
                compile::compile(&code.source, &cc, &key, work, cache.deadline).map(|c| (c.path, c.seconds))
            },
            |so| ffi::Module::load(so, &code.kernels),
        )
    });
    let loaded = match loaded {
        Ok(l) => l,
        Err(why) => return fail(report, why),
    };
    report.compile_seconds = loaded.seconds;
    report.cached = loaded.cached;
    let module = Arc::new(loaded.module);
    modules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(key, Arc::clone(&module));
    let entries = module.entries(&code.kernels);
    (Some(Prepared { _module: module, entries }), report)
}

use eqfuse_codegen::layout::scalar_bits;

/// Runs kernel `k`, number `id`, natively: `Ok(None)` when the VM must run it (not
/// generated, or an element failed).
///
/// `segment` elements make one call: rows shorter than that go several to a call, longer
/// ones are cut into segments of that many, whose partial results are combined in order
/// (the split depends on the shape and `segment` alone, not on the thread count).
pub(crate) fn run_kernel(
    prep: &Prepared,
    store: &Store<'_>,
    id: KernelId,
    k: &Kernel,
    max_bytes: u64,
    segment: usize,
    cancel: &Cancel,
) -> Result<Option<Results>> {
    let r = run_native(prep, store, id, k, max_bytes, segment.max(1), cancel);
    if let Ok(done) = &r {
        count(done.is_some());
    }
    r
}

/// Where a segment kernel ([`Kernel::segment_offsets`]: a segmented reduction) of one row
/// of `len` points is cut into calls of about `segment` units of work: by its segments'
/// lengths, so that a giant segment is a call of its own while the others share theirs.
/// `None` for any other kernel, or offsets that are not its `len + 1` (checked before).
fn segment_bounds(
    store: &Store<'_>,
    k: &Kernel,
    rows: usize,
    len: usize,
    segment: usize,
) -> Option<Vec<usize>> {
    let off = k.segment_offsets()?;
    if rows != 1 {
        return None;
    }
    let crate::col::Data::I64(offsets) = &*store.get(off).ok()?.data else { return None };
    eqfuse_ir::plan::balanced_bounds(offsets, len, segment)
}

fn run_native(
    prep: &Prepared,
    store: &Store<'_>,
    id: KernelId,
    k: &Kernel,
    max_bytes: u64,
    segment: usize,
    cancel: &Cancel,
) -> Result<Option<Results>> {
    let Some(entry) = prep.entry(id) else { return Ok(None) };
    let (shape, total) = k.shape(|v| store.load(v), |v| store.name(v))?;
    let rank = shape.len();
    let len = shape[rank - 1];
    let rows = shape[..rank - 1].iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let Some(rows) = rows else { return Ok(None) };
    if !reads_fit(&entry.code.in_space, &shape, |v| Ok(store.get(v)?.shape.clone()))? {
        return Ok(None);
    }
    if let Entries::Permute(pc) = &entry.code.entries {
        let t = store.elem(k.lanes[0].dst)?;
        if pc.ty != t {
            return Ok(None);
        }
        let (dshape, mut out) = permute_start(store, k.kind.as_str(), t, &pc.dest, max_bytes)?;
        let args = arg_block(store, &entry.code.slots, &shape, &mut [])?;
        let blocks = total.div_ceil(segment.max(1));
        let threads = rayon::current_num_threads();
        let tasks = if threads > 1 && blocks > 1 { threads.min(blocks) } else { 1 };
        let ok = match permute_split(pc.shared.as_ref().map(|s| s.1), out.len(), total, tasks) {
            PermuteSplit::Shared => entry.launch_permute_shared(&args, &mut out, total, segment, cancel),
            PermuteSplit::Partials => {
                for _ in 1..tasks {
                    check_alloc(k.kind.as_str(), t, out.len(), max_bytes)?;
                }
                entry.launch_permute(&args, &mut out, total, tasks, cancel)
            }
            PermuteSplit::One => entry.launch_permute(&args, &mut out, total, 1, cancel),
        };
        // an element that failed (a target out of bounds among them): the VM reruns the
        // kernel from the start and reports the first failing element
        if !ok {
            return Ok(None);
        }
        return Ok(Some(vec![(dshape, out)]));
    }
    if matches!(entry.code.entries, Entries::Filter(_)) {
        let args = arg_block(store, &entry.code.slots, &shape, &mut [])?;
        return Ok(entry.launch_filter(&args, len, segment, cancel).map(|col| vec![(vec![col.len()], col)]));
    }
    let (mut outs, result_shapes) = alloc_results(store, k, &entry.code, &shape, &[], max_bytes, true)?;
    let args = arg_block(store, &entry.code.slots, &shape, &mut outs)?;
    let order = match &entry.code.entries {
        Entries::Lanes { order, .. } => *order,
        _ => Order::Rows,
    };
    let columns = eqfuse_codegen::c::COLUMNS;
    // whole rows to a call of up to `8 * segment` points
    let whole = (8 * segment / len.max(1)).clamp(1, columns);
    let split = if order == Order::Columns && rows > 1 && whole >= rows.min(64) {
        // short rows: whole rows, at least 64 of them (or all) side by side in a call (no
        // partial results)
        launch::Split::Rows { per_task: whole }
    } else if order == Order::Columns && rows > 1 {
        // groups of up to `COLUMNS` rows in each call, so that a step of the walk reads a long
        // run of neighbours; the innermost dimension split so that a call has about `segment`
        // points, and at least 64 steps (each call's partials are written, transposed and
        // folded again; a last group of one row walks as a row)
        let group = rows.min(columns);
        let seg = (segment / group).max(64);
        launch::Split::Columns { seg, segs: len.div_ceil(seg).max(1), group }
    } else if order == Order::Tiles && rows > 1 {
        // blocks of the space: many rows and many inner indices to a call
        let rows_per = rows.min(eqfuse_codegen::c::TILE_ROWS);
        let seg = (segment * eqfuse_codegen::c::TILE_COLUMNS / rows_per).max(eqfuse_codegen::c::TILE_COLUMNS);
        launch::Split::Tiles { rows_per, seg }
    } else if len <= segment {
        launch::Split::Rows { per_task: (segment / len.max(1)).max(1) }
    } else {
        launch::Split::Segments { seg: segment, segs: len.div_ceil(segment) }
    };
    let bounds = segment_bounds(store, k, rows, len, segment);
    let ok = if let Some(bounds) = bounds {
        entry.launch_bounds(&args, &mut outs, &bounds, cancel)
    } else if matches!(entry.code.entries, Entries::Scan(_)) {
        entry.launch_scan(&args, &mut outs, rows, len, split, cancel)
    } else {
        entry.launch(&args, &mut outs, rows, len, split, cancel)
    };
    // a result the launch did not fill (never, by the entry points' contract): the VM
    // runs the kernel instead
    if !ok || outs.iter().zip(&result_shapes).any(|(c, sh)| c.len() != sh.iter().product::<usize>()) {
        return Ok(None);
    }
    Ok(Some(result_shapes.into_iter().zip(outs).collect()))
}

/// How a permute's elements are split among calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PermuteSplit {
    /// Calls on every thread write one shared result atomically (the `shared` entry).
    Shared,
    /// Each task combines a contiguous range of elements into a partial of its own, merged
    /// in task order (the VM's split, so that the two agree).
    Partials,
    /// One call, straight into the result, elements in order.
    One,
}

/// The split of a permute of `total` elements into a destination of `dlen` entries on
/// `tasks` tasks, whose operator allows a `shared` entry of kind `shared`.
///
/// An operator that keeps one side (`\a b -> b`, `\a b -> a`) always writes the shared
/// result: its partials would each be a copy of the whole destination, and merging them is
/// serial (a compaction into 2^23 entries spent most of its time there). A known
/// commutative operator writes it atomically unless the destination is small beside each
/// task's elements: private partials cost `tasks` copies of the destination (zeroed, then
/// merged) but no atomic operation per element and no contention on the few entries a
/// small destination has, so they win while the copies are a small part of the work —
/// `dlen` at most a quarter of the elements per task (a histogram's bins); past that the
/// copies and the serial merge cost more than the atomics. Other operators keep today's
/// rule, which the VM shares: partials where the destination is no bigger than the source.
pub(super) fn permute_split(shared: Option<Shared>, dlen: usize, total: usize, tasks: usize) -> PermuteSplit {
    if tasks <= 1 {
        return match shared {
            Some(Shared::KeepNew | Shared::KeepOld) => PermuteSplit::Shared,
            _ => PermuteSplit::One,
        };
    }
    match shared {
        Some(Shared::KeepNew | Shared::KeepOld) => PermuteSplit::Shared,
        Some(Shared::Atomic) if dlen > total / tasks / 4 => PermuteSplit::Shared,
        _ if dlen <= total => PermuteSplit::Partials,
        _ => PermuteSplit::One,
    }
}

/// Kernel `k`'s results over a space of `shape`, allocated lane by lane, and their shapes:
/// a reduce lane holds one element per row (zeros), a generate lane one per point — zeros,
/// or with `unwritten` room the launch fills ([`Col::unwritten`]; `ffi::Entry::launch` and
/// `launch_scan` give them their length when they succeed).
fn alloc_results(
    store: &Store<'_>,
    k: &Kernel,
    code: &KernelCode,
    shape: &[usize],
    kept: &[bool],
    max_bytes: u64,
    unwritten: bool,
) -> Result<(Vec<Col>, Vec<Vec<usize>>)> {
    let outer = &shape[..shape.len().saturating_sub(1)];
    let mut cols = Vec::with_capacity(k.lanes.len());
    let mut shapes = Vec::with_capacity(k.lanes.len());
    for (n, (lane, red)) in k.lanes.iter().zip(&code.reduce).enumerate() {
        let t = store.elem(lane.dst)?;
        let sh = if red.is_some() { outer.to_vec() } else { shape.to_vec() };
        // a result a row block keeps per block has no array of its own (`rowblock.rs`)
        let len = if kept.get(n).copied().unwrap_or(false) { 0 } else { sh.iter().product() };
        check_alloc(k.kind.as_str(), t, len, max_bytes)?;
        let fresh = unwritten && red.is_none();
        // a loop's state part: the buffer it held two iterations ago (`Store::rebind`)
        cols.push(match store.take_spare(lane.dst, t, len) {
            Some(mut c) => {
                c.reuse(len, fresh);
                c
            }
            None => {
                crate::store::RESULT_ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if fresh {
                    Col::unwritten(t, len)
                } else {
                    Col::zeros(t, len)
                }
            }
        });
        shapes.push(sh);
    }
    Ok((cols, shapes))
}

/// The argument block: every field's value, in order.
fn arg_block(store: &Store<'_>, slots: &[Slot], shape: &[usize], outs: &mut [Col]) -> Result<Vec<u64>> {
    arg_block_with(store, slots, shape, outs, &HashMap::new())
}

/// [`arg_block`] where the values in `local` (a row block's results, not yet in the store)
/// are at the given address, of the given shape.
fn arg_block_with(
    store: &Store<'_>,
    slots: &[Slot],
    shape: &[usize],
    outs: &mut [Col],
    local: &HashMap<usize, (u64, Vec<usize>)>,
) -> Result<Vec<u64>> {
    slots.iter().map(|slot| slot_value(store, *slot, shape, outs, local)).collect()
}

/// What the argument block's field `slot` holds.
fn slot_value(
    store: &Store<'_>,
    slot: Slot,
    shape: &[usize],
    outs: &mut [Col],
    local: &HashMap<usize, (u64, Vec<usize>)>,
) -> Result<u64> {
    Ok(match slot {
        Slot::Extent(d) => shape.get(d).map_or(0, |&e| e as u64),
        Slot::Array(v) => match local.get(&v) {
            Some((p, _)) => *p,
            None => data_ptr(store, v)?,
        },
        Slot::Dim(v, d) => match local.get(&v) {
            Some((_, dims)) => dims.get(d).map_or(0, |&e| e as u64),
            None => store.get(v)?.shape.get(d).map_or(0, |&e| e as u64),
        },
        Slot::HostScalar(v) => scalar_bits(store.load(v)?),
        Slot::Out(l) => {
            outs.get_mut(l).map(ffi::col_ptr).ok_or_else(|| internal("an output slot past the lanes"))?
        }
        other => return Err(internal(format!("the generated C asks for {other:?}"))),
    })
}

/// The first element of value `v`'s buffer.
fn data_ptr(store: &Store<'_>, v: usize) -> Result<u64> {
    use crate::col::ColRef;
    Ok(match store.get(v)?.elems() {
        ColRef::Bool(s) => s.as_ptr() as u64,
        ColRef::I8(s) => s.as_ptr() as u64,
        ColRef::I16(s) => s.as_ptr() as u64,
        ColRef::I32(s) => s.as_ptr() as u64,
        ColRef::I64(s) => s.as_ptr() as u64,
        ColRef::U8(s) => s.as_ptr() as u64,
        ColRef::U16(s) => s.as_ptr() as u64,
        ColRef::U32(s) => s.as_ptr() as u64,
        ColRef::U64(s) => s.as_ptr() as u64,
        ColRef::F32(s) => s.as_ptr() as u64,
        ColRef::F64(s) => s.as_ptr() as u64,
    })
}
