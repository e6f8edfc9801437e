//! # eqfuse-exec-cpu
//!
//! The CPU executor: runs an [`eqfuse_ir::plan::Plan`] on rayon threads with a blocked
//! register VM (numexpr's design), and as native C kernels (module `native`).
//!
//! Each kernel's element function is compiled once into a flat program over typed
//! registers (module `compile`) and run over **blocks** of elements (module `vm`): a register is a
//! column of a block's elements, an instruction one typed loop over its columns, so the
//! dispatch costs once per block and the loops vectorise. Lazy `if`s run each branch only on
//! the elements that take it; `iterate` loops run per-element counts in phases. A loop whose
//! body cannot fail runs instead on small groups of elements whose registers stay in L1,
//! each group stopping as soon as its elements reach a fixed point (module `lanes`).
//!
//! rayon splits each kernel's space into blocks (module `kernel`): generate lanes write their
//! slice of the output, reductions reduce per block (rows in parallel, or chunks of long
//! rows) and combine, scans scan per block and fix up with the carries, filters keep per
//! block and concatenate in order, permutes combine into per-thread partial results merged
//! with the operator. Host steps (scalars, asserts, `if`s over arrays) run as the plan
//! interpreter runs them.
//!
//! Results equal the plan interpreter's ([`eqfuse_ir::plan::eval`]), bit for bit except
//! for the order of float reductions and scans (which the language leaves free), and errors
//! carry its codes and messages: the first failing element of a kernel is found by re-running
//! the failing block element by element, so that the same element fails first.
//!
//! ```
//! use eqfuse_exec_cpu::{run, RunOptions};
//! use eqfuse_ir::plan::{Arg, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueInfo, Block};
//! use eqfuse_ir::types::ElemType;
//! use eqfuse_ir::value::{Scalar, Value};
//! use eqfuse_ir::ast::BinOp;
//!
//! // out[i] = xs[i] * 2.0 over [n]
//! let v = |name: &str, rank, origin, elem| ValueInfo { name: name.into(), elem, rank, origin, span: None };
//! let plan = Plan {
//!     values: vec![
//!         v("xs", 1, Origin::Input, ElemType::F64),
//!         v("n", 0, Origin::Size, ElemType::I64),
//!         v("out", 1, Origin::Computed, ElemType::F64),
//!     ],
//!     steps: vec![Step::Kernel(Kernel {
//!         kind: KernelKind::Map,
//!         space: vec![Arg::Value(1)],
//!         elem: Func {
//!             params: vec![ElemType::I64],
//!             reg_types: vec![ElemType::I64, ElemType::F64, ElemType::F64, ElemType::F64],
//!             body: Block { insts: vec![
//!                 Inst::Read { dst: 1, array: 0, index: vec![0] },
//!                 Inst::Const { dst: 2, value: Scalar::F64(2.0) },
//!                 Inst::Binary { dst: 3, op: BinOp::Mul, a: 1, b: 2 },
//!             ] },
//!             ret: vec![3],
//!             spans: Vec::new(),
//!         },
//!         lanes: vec![Lane { dst: 2, op: LaneOp::Generate }],
//!         span: None,
//!         contraction: None,
//!         view_of: None,
//!     })],
//!     outputs: vec![("out".into(), 2)],
//! };
//! let mut inputs = indexmap::IndexMap::new();
//! inputs.insert("xs".to_string(), Value::F64(ndarray::arr1(&[1.0, 2.5]).into_dyn()));
//! let mut sizes = indexmap::IndexMap::new();
//! sizes.insert("n".to_string(), 2);
//! let out = run(&plan, &inputs, &sizes, &RunOptions::default()).unwrap();
//! assert_eq!(out["out"], Value::F64(ndarray::arr1(&[2.0, 5.0]).into_dyn()));
//! ```

/// The conversion table (Rust's `as`, exactly the reference's casts), written once for the
/// VM and for the lane groups: `$cv!(Source, Dest, f)` for each pair of element types.
macro_rules! conversions {
    ($from:expr, $to:expr, $cv:ident) => {{
        use eqfuse_ir::types::ElemType::{Bool as B, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8};
        match ($from, $to) {
            (B, B) => $cv!(bool, bool, |x| x),
            (B, I8) => $cv!(bool, i8, |x| u8::from(x) as i8),
            (B, I16) => $cv!(bool, i16, |x| u8::from(x) as i16),
            (B, I32) => $cv!(bool, i32, |x| u8::from(x) as i32),
            (B, I64) => $cv!(bool, i64, |x| u8::from(x) as i64),
            (B, U8) => $cv!(bool, u8, u8::from),
            (B, U16) => $cv!(bool, u16, |x| u8::from(x) as u16),
            (B, U32) => $cv!(bool, u32, |x| u8::from(x) as u32),
            (B, U64) => $cv!(bool, u64, |x| u8::from(x) as u64),
            (B, F32) => $cv!(bool, f32, |x| u8::from(x) as f32),
            (B, F64) => $cv!(bool, f64, |x| u8::from(x) as f64),
            (I8, B) => $cv!(i8, bool, |x| x != 0),
            (I8, I8) => $cv!(i8, i8, |x| x),
            (I8, I16) => $cv!(i8, i16, |x| x as i16),
            (I8, I32) => $cv!(i8, i32, |x| x as i32),
            (I8, I64) => $cv!(i8, i64, |x| x as i64),
            (I8, U8) => $cv!(i8, u8, |x| x as u8),
            (I8, U16) => $cv!(i8, u16, |x| x as u16),
            (I8, U32) => $cv!(i8, u32, |x| x as u32),
            (I8, U64) => $cv!(i8, u64, |x| x as u64),
            (I8, F32) => $cv!(i8, f32, |x| x as f32),
            (I8, F64) => $cv!(i8, f64, |x| x as f64),
            (I16, B) => $cv!(i16, bool, |x| x != 0),
            (I16, I8) => $cv!(i16, i8, |x| x as i8),
            (I16, I16) => $cv!(i16, i16, |x| x),
            (I16, I32) => $cv!(i16, i32, |x| x as i32),
            (I16, I64) => $cv!(i16, i64, |x| x as i64),
            (I16, U8) => $cv!(i16, u8, |x| x as u8),
            (I16, U16) => $cv!(i16, u16, |x| x as u16),
            (I16, U32) => $cv!(i16, u32, |x| x as u32),
            (I16, U64) => $cv!(i16, u64, |x| x as u64),
            (I16, F32) => $cv!(i16, f32, |x| x as f32),
            (I16, F64) => $cv!(i16, f64, |x| x as f64),
            (I32, B) => $cv!(i32, bool, |x| x != 0),
            (I32, I8) => $cv!(i32, i8, |x| x as i8),
            (I32, I16) => $cv!(i32, i16, |x| x as i16),
            (I32, I32) => $cv!(i32, i32, |x| x),
            (I32, I64) => $cv!(i32, i64, |x| x as i64),
            (I32, U8) => $cv!(i32, u8, |x| x as u8),
            (I32, U16) => $cv!(i32, u16, |x| x as u16),
            (I32, U32) => $cv!(i32, u32, |x| x as u32),
            (I32, U64) => $cv!(i32, u64, |x| x as u64),
            (I32, F32) => $cv!(i32, f32, |x| x as f32),
            (I32, F64) => $cv!(i32, f64, |x| x as f64),
            (I64, B) => $cv!(i64, bool, |x| x != 0),
            (I64, I8) => $cv!(i64, i8, |x| x as i8),
            (I64, I16) => $cv!(i64, i16, |x| x as i16),
            (I64, I32) => $cv!(i64, i32, |x| x as i32),
            (I64, I64) => $cv!(i64, i64, |x| x),
            (I64, U8) => $cv!(i64, u8, |x| x as u8),
            (I64, U16) => $cv!(i64, u16, |x| x as u16),
            (I64, U32) => $cv!(i64, u32, |x| x as u32),
            (I64, U64) => $cv!(i64, u64, |x| x as u64),
            (I64, F32) => $cv!(i64, f32, |x| x as f32),
            (I64, F64) => $cv!(i64, f64, |x| x as f64),
            (U8, B) => $cv!(u8, bool, |x| x != 0),
            (U8, I8) => $cv!(u8, i8, |x| x as i8),
            (U8, I16) => $cv!(u8, i16, |x| x as i16),
            (U8, I32) => $cv!(u8, i32, |x| x as i32),
            (U8, I64) => $cv!(u8, i64, |x| x as i64),
            (U8, U8) => $cv!(u8, u8, |x| x),
            (U8, U16) => $cv!(u8, u16, |x| x as u16),
            (U8, U32) => $cv!(u8, u32, |x| x as u32),
            (U8, U64) => $cv!(u8, u64, |x| x as u64),
            (U8, F32) => $cv!(u8, f32, |x| x as f32),
            (U8, F64) => $cv!(u8, f64, |x| x as f64),
            (U16, B) => $cv!(u16, bool, |x| x != 0),
            (U16, I8) => $cv!(u16, i8, |x| x as i8),
            (U16, I16) => $cv!(u16, i16, |x| x as i16),
            (U16, I32) => $cv!(u16, i32, |x| x as i32),
            (U16, I64) => $cv!(u16, i64, |x| x as i64),
            (U16, U8) => $cv!(u16, u8, |x| x as u8),
            (U16, U16) => $cv!(u16, u16, |x| x),
            (U16, U32) => $cv!(u16, u32, |x| x as u32),
            (U16, U64) => $cv!(u16, u64, |x| x as u64),
            (U16, F32) => $cv!(u16, f32, |x| x as f32),
            (U16, F64) => $cv!(u16, f64, |x| x as f64),
            (U32, B) => $cv!(u32, bool, |x| x != 0),
            (U32, I8) => $cv!(u32, i8, |x| x as i8),
            (U32, I16) => $cv!(u32, i16, |x| x as i16),
            (U32, I32) => $cv!(u32, i32, |x| x as i32),
            (U32, I64) => $cv!(u32, i64, |x| x as i64),
            (U32, U8) => $cv!(u32, u8, |x| x as u8),
            (U32, U16) => $cv!(u32, u16, |x| x as u16),
            (U32, U32) => $cv!(u32, u32, |x| x),
            (U32, U64) => $cv!(u32, u64, |x| x as u64),
            (U32, F32) => $cv!(u32, f32, |x| x as f32),
            (U32, F64) => $cv!(u32, f64, |x| x as f64),
            (U64, B) => $cv!(u64, bool, |x| x != 0),
            (U64, I8) => $cv!(u64, i8, |x| x as i8),
            (U64, I16) => $cv!(u64, i16, |x| x as i16),
            (U64, I32) => $cv!(u64, i32, |x| x as i32),
            (U64, I64) => $cv!(u64, i64, |x| x as i64),
            (U64, U8) => $cv!(u64, u8, |x| x as u8),
            (U64, U16) => $cv!(u64, u16, |x| x as u16),
            (U64, U32) => $cv!(u64, u32, |x| x as u32),
            (U64, U64) => $cv!(u64, u64, |x| x),
            (U64, F32) => $cv!(u64, f32, |x| x as f32),
            (U64, F64) => $cv!(u64, f64, |x| x as f64),
            (F32, B) => $cv!(f32, bool, |x| x != 0.0),
            (F32, I8) => $cv!(f32, i8, |x| x as i8),
            (F32, I16) => $cv!(f32, i16, |x| x as i16),
            (F32, I32) => $cv!(f32, i32, |x| x as i32),
            (F32, I64) => $cv!(f32, i64, |x| x as i64),
            (F32, U8) => $cv!(f32, u8, |x| x as u8),
            (F32, U16) => $cv!(f32, u16, |x| x as u16),
            (F32, U32) => $cv!(f32, u32, |x| x as u32),
            (F32, U64) => $cv!(f32, u64, |x| x as u64),
            (F32, F32) => $cv!(f32, f32, |x| x),
            (F32, F64) => $cv!(f32, f64, |x| x as f64),
            (F64, B) => $cv!(f64, bool, |x| x != 0.0),
            (F64, I8) => $cv!(f64, i8, |x| x as i8),
            (F64, I16) => $cv!(f64, i16, |x| x as i16),
            (F64, I32) => $cv!(f64, i32, |x| x as i32),
            (F64, I64) => $cv!(f64, i64, |x| x as i64),
            (F64, U8) => $cv!(f64, u8, |x| x as u8),
            (F64, U16) => $cv!(f64, u16, |x| x as u16),
            (F64, U32) => $cv!(f64, u32, |x| x as u32),
            (F64, U64) => $cv!(f64, u64, |x| x as u64),
            (F64, F32) => $cv!(f64, f32, |x| x as f32),
            (F64, F64) => $cv!(f64, f64, |x| x),
        }
    }};
}

mod caches;
mod cancel;
mod col;
mod compile;
mod gemm;
mod group;
mod kernel;
mod lanes;
mod native;
mod num;
mod pages;
mod program;
mod ptr;
mod steps;
mod store;
mod vm;

use eqfuse_ir::error::{Error, Result};
use eqfuse_ir::plan::Plan;
use eqfuse_ir::value::{AsValueView, Value};
use indexmap::IndexMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

pub use caches::private_cache_bytes;
pub use cancel::{Cancel, INTERRUPTED};
pub use gemm::rate as gemm_rate;
pub use native::{abort_compilers, default_cache_dir, CompileReport};

/// How the CPU runs kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Codegen {
    /// Native code: the plan's kernels as C compiled by the system C compiler (`$CC`, else
    /// `cc`), cached on disk. Kernels the generator does not take yet (scans, filters,
    /// permutes), and every kernel when no compiler works (said once on stderr), run on the
    /// VM.
    #[default]
    C,
    /// The blocked register VM only.
    Vm,
}

/// How a plan runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Elements per block: the VM's register length and rayon's unit of work, and the
    /// elements of one call of a native kernel (at least 1;
    /// functions with many registers use shorter blocks so that a block's registers stay in
    /// cache). The default, 8192, was measured with `eqfuse bench`: on streaming kernels
    /// (saxpy, map_chain) 2048-element blocks cost 20% more per run in per-block overhead.
    pub block_size: usize,
    /// The most bytes one array of the plan may take, checked before it is allocated
    /// (`E-LIMIT`).
    pub max_array_bytes: u64,
    /// Native code or the VM.
    pub codegen: Codegen,
    /// Where compiled plans are cached ([`default_cache_dir`]); `None`: no disk cache (each
    /// process compiles into a private temporary directory). A directory that is a symlink,
    /// another user's, or writable by a group or others is not used (said on stderr).
    pub cache_dir: Option<PathBuf>,
    /// A flag that stops the run when another thread sets it ([`Cancel`]): polled between
    /// steps, VM blocks and native calls; the run then ends with `E-LIMIT: interrupted`.
    /// The default has no flag.
    pub cancel: Cancel,
    /// When compiling native code must have finished (`None`, the default: no limit). A C
    /// compiler still running then is killed (its whole process group, its temporary files
    /// removed) and the plan's kernels run on the VM, said once on stderr. The facade sets
    /// it to the optimiser's deadline (`--time-limit-ms` covers optimisation and
    /// compilation together).
    pub compile_deadline: Option<std::time::Instant>,
    /// Whether a row block runs natively block by block, every phase over a block's rows
    /// while they are in cache (`false`: its phases one after the other, as kernels of their
    /// own, for comparison). The default is `true` unless the environment variable
    /// `EQFUSE_NO_ROWBLOCK` is set.
    pub row_blocks: bool,
    /// Whether a segment block (a scan or a filter and the kernels riding along its passes)
    /// runs natively segment by segment (`false`: its phases one after the other). The
    /// default is `true` unless the environment variable `EQFUSE_NO_SEGBLOCK` is set.
    pub segment_blocks: bool,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            threads: 0,
            block_size: 8192,
            max_array_bytes: eqfuse_ir::ast::default_memory_limit(),
            codegen: Codegen::C,
            cache_dir: default_cache_dir(),
            cancel: Cancel::default(),
            compile_deadline: None,
            row_blocks: std::env::var_os("EQFUSE_NO_ROWBLOCK").is_none(),
            segment_blocks: std::env::var_os("EQFUSE_NO_SEGBLOCK").is_none(),
        }
    }
}

impl RunOptions {
    /// The thread count `threads` stands for.
    pub fn thread_count(&self) -> usize {
        // the standard library reads the cgroup's CPU quota from /proc and /sys on every
        // call: once per process is enough
        static CORES: OnceLock<usize> = OnceLock::new();
        if self.threads > 0 {
            self.threads
        } else {
            *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        }
    }
}

/// Runs `plan` on `inputs` (by name, as checked by [`eqfuse_ir::bind::bind_inputs`]) and the
/// size names bound from them. Returns the outputs in the plan's order; scalars are
/// 0-dimensional values. Errors are the plan interpreter's: `E-INPUT` for an input that is
/// missing or of the wrong type, `E-INDEX`, `E-DIV-ZERO`, `E-SHAPE` at run time, `E-LIMIT`
/// for an array over the memory limit (before it is allocated).
///
/// The usual way in: optimise a checked program, bind its inputs, run the plan.
///
/// ```
/// use eqfuse_exec_cpu::{run, RunOptions};
/// use eqfuse_ir::value::Value;
///
/// let src = "input xs : f32[n]\nlet ys = map (\\x -> x * x) xs\noutput s = reduce (+) 0 ys\noutput m = reduce max (-inf) ys";
/// let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src)?)?;
/// let plan = eqfuse_optimize::optimize(&checked, &Default::default())?.plan;
///
/// let mut inputs = indexmap::IndexMap::new();
/// inputs.insert("xs".to_string(), Value::F32(ndarray::Array1::from_vec(vec![1.0, -2.0, 3.0]).into_dyn()));
/// // checks the inputs against the program and binds `n`
/// let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &Default::default())?;
/// let out = run(&plan, &inputs, &bound.sizes, &RunOptions { threads: 2, ..RunOptions::default() })?;
/// assert_eq!(out["s"], Value::F32(ndarray::arr0(14.0).into_dyn()));
/// assert_eq!(out["m"], Value::F32(ndarray::arr0(9.0).into_dyn()));
/// // the plan interpreter, the executor's oracle, agrees
/// assert_eq!(out, eqfuse_ir::plan::eval::eval(&plan, &inputs, &bound.sizes)?);
/// # Ok::<(), eqfuse_ir::Error>(())
/// ```
pub fn run<V: AsValueView + Sync>(
    plan: &Plan,
    inputs: &IndexMap<String, V>,
    sizes: &IndexMap<String, i64>,
    opts: &RunOptions,
) -> Result<IndexMap<String, Value>> {
    run_native(plan, prepare_native(plan, opts), inputs, sizes, opts, &opts.cancel)
}

/// Where `opts` keeps compiled plans, and by when they must be compiled.
fn cache_opts(opts: &RunOptions) -> native::CacheOpts {
    native::CacheOpts { dir: opts.cache_dir.clone(), deadline: opts.compile_deadline }
}

/// The plan's native code as `opts` asks (none with the VM, or where none can be made).
fn prepare_native(plan: &Plan, opts: &RunOptions) -> Option<Arc<native::Prepared>> {
    match opts.codegen {
        Codegen::C => native::prepare(plan, &cache_opts(opts)).map(Arc::new),
        Codegen::Vm => None,
    }
}

/// A plan with its native code made once ([`CompiledPlan::new`]), to run many times: a run
/// neither generates nor looks up its C again (what [`run`] does every time, about 0.2 ms
/// for a small plan).
///
/// ```
/// use eqfuse_exec_cpu::{CompiledPlan, RunOptions};
/// use eqfuse_ir::value::Value;
///
/// let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse("input xs : f64[n]\noutput s = reduce (+) 0 xs")?)?;
/// let plan = eqfuse_optimize::optimize(&checked, &Default::default())?.plan;
/// let compiled = CompiledPlan::new(plan, &RunOptions::default());
/// for k in 1..4 {
///     let mut inputs = indexmap::IndexMap::new();
///     inputs.insert("xs".to_string(), Value::F64(ndarray::Array1::from_elem(k, 1.5).into_dyn()));
///     let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &Default::default())?;
///     let out = compiled.run(&inputs, &bound.sizes)?;
///     assert_eq!(out["s"], Value::F64(ndarray::arr0(1.5 * k as f64).into_dyn()));
/// }
/// # Ok::<(), eqfuse_ir::Error>(())
/// ```
pub struct CompiledPlan {
    plan: Plan,
    native: Option<Arc<native::Prepared>>,
    opts: RunOptions,
}

impl std::fmt::Debug for CompiledPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledPlan").field("native", &self.native.is_some()).finish()
    }
}

impl CompiledPlan {
    /// Compiles `plan` as [`run`] would with `opts` (from the cache when it is there).
    pub fn new(plan: Plan, opts: &RunOptions) -> CompiledPlan {
        // the native code is keyed by the addresses of the plan's kernels: it is made for
        // the plan this value owns, which never moves its kernels
        let native = prepare_native(&plan, opts);
        CompiledPlan { plan, native, opts: opts.clone() }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs the plan as [`run`] does, with the code made once.
    pub fn run<V: AsValueView + Sync>(
        &self,
        inputs: &IndexMap<String, V>,
        sizes: &IndexMap<String, i64>,
    ) -> Result<IndexMap<String, Value>> {
        run_native(&self.plan, self.native.clone(), inputs, sizes, &self.opts, &self.opts.cancel)
    }

    /// [`CompiledPlan::run`] stopped by `cancel` (in place of the options' flag): each call
    /// can have a flag of its own, as Python's calls of one program on several threads do.
    ///
    /// ```
    /// use eqfuse_exec_cpu::{Cancel, CompiledPlan, RunOptions, INTERRUPTED};
    /// use eqfuse_ir::value::Value;
    ///
    /// let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse("input xs : f64[n]\noutput s = reduce (+) 0 xs")?)?;
    /// let compiled = CompiledPlan::new(eqfuse_optimize::optimize(&checked, &Default::default())?.plan, &RunOptions::default());
    /// let mut inputs = indexmap::IndexMap::new();
    /// inputs.insert("xs".to_string(), Value::F64(ndarray::Array1::from_elem(3, 1.5).into_dyn()));
    /// let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &Default::default())?;
    /// let cancel = Cancel::new();
    /// assert!(compiled.run_cancellable(&inputs, &bound.sizes, &cancel).is_ok());
    /// cancel.cancel();
    /// let err = compiled.run_cancellable(&inputs, &bound.sizes, &cancel).unwrap_err();
    /// assert_eq!((err.code, err.message.as_str()), (eqfuse_ir::Code::Limit, INTERRUPTED));
    /// # Ok::<(), eqfuse_ir::Error>(())
    /// ```
    pub fn run_cancellable<V: AsValueView + Sync>(
        &self,
        inputs: &IndexMap<String, V>,
        sizes: &IndexMap<String, i64>,
        cancel: &Cancel,
    ) -> Result<IndexMap<String, Value>> {
        run_native(&self.plan, self.native.clone(), inputs, sizes, &self.opts, cancel)
    }
}

fn run_native<V: AsValueView + Sync>(
    plan: &Plan,
    native: Option<Arc<native::Prepared>>,
    inputs: &IndexMap<String, V>,
    sizes: &IndexMap<String, i64>,
    opts: &RunOptions,
    cancel: &Cancel,
) -> Result<IndexMap<String, Value>> {
    let threads = opts.thread_count();
    let pool = pool(threads)?;
    let ctx = steps::Ctx {
        vm: kernel::Ctx {
            threads,
            block: opts.block_size.max(1),
            max_bytes: opts.max_array_bytes,
            cancel: cancel.clone(),
        },
        native,
        row_blocks: opts.row_blocks,
        segment_blocks: opts.segment_blocks,
    };
    pool.install(|| steps::run_plan(plan, inputs, sizes, &ctx))
}

/// What the native path has run so far in this process: for tests that check kernels run
/// natively. Compare the counts before and after.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeCounts {
    /// Kernels run as compiled C.
    pub native: usize,
    /// Kernels of a compiled plan that ran on the VM instead.
    pub vm: usize,
    /// Segment blocks run segment by segment (their kernels also count in `native`).
    pub segment_blocks: usize,
    /// Row blocks run block by block (their kernels also count in `native`).
    pub row_blocks: usize,
}

/// Compiles `plan` to native code as [`run`] would with `opts` (from the cache when it is
/// there), so that a later [`run`] does not compile, and says what it did: which kernels
/// run natively, which on the VM and why, and the compile time.
pub fn compile_plan(plan: &Plan, opts: &RunOptions) -> CompileReport {
    match opts.codegen {
        Codegen::C => native::prepare_reporting(plan, &cache_opts(opts)).1,
        Codegen::Vm => CompileReport {
            vm: (0..plan.kernels().len()).map(|i| (i, "--cpu-codegen vm".to_string())).collect(),
            ..CompileReport::default()
        },
    }
}

/// The C compiler and the flags native kernels are compiled with (for tests that compile
/// generated C themselves).
#[doc(hidden)]
pub fn c_compiler_and_flags() -> (String, &'static [&'static str]) {
    (native::compiler(), native::FLAGS)
}

/// How many inputs this process has copied because they were not row-major and contiguous
/// (every other input is read where it lies): for tests that check inputs are not copied.
#[doc(hidden)]
pub fn input_copies() -> usize {
    store::INPUT_COPIES.load(std::sync::atomic::Ordering::Relaxed)
}

/// How many result buffers native kernels have allocated in this process: a loop over
/// arrays reuses its state's buffers after its first iteration (double buffering), so the
/// count does not grow with the number of iterations. For tests and benchmarks.
#[doc(hidden)]
pub fn result_allocations() -> usize {
    store::RESULT_ALLOCATIONS.load(std::sync::atomic::Ordering::Relaxed)
}

/// See [`NativeCounts`].
#[doc(hidden)]
pub fn native_counts() -> NativeCounts {
    let at = |k: usize| native::COUNTS[k].load(std::sync::atomic::Ordering::Relaxed);
    NativeCounts { native: at(0), vm: at(1), segment_blocks: at(2), row_blocks: at(3) }
}

/// Stack size of the worker threads: nested blocks are run recursively.
const STACK_BYTES: usize = 64 << 20;

/// The thread pool of `threads` workers (made once per count, then reused).
fn pool(threads: usize) -> Result<Arc<rayon::ThreadPool>> {
    type Pools = Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let pools = POOLS.get_or_init(|| Mutex::new(Vec::new()));
    let mut pools = pools.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, p)) = pools.iter().find(|(t, _)| *t == threads) {
        return Ok(Arc::clone(p));
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(STACK_BYTES)
        .thread_name(|k| format!("eqfuse-cpu-{k}"))
        .build()
        .map_err(|e| Error::limit(format!("cannot start {threads} worker threads: {e}")))?;
    let p = Arc::new(p);
    pools.push((threads, Arc::clone(&p)));
    Ok(p)
}

/// An internal inconsistency of the plan (never the program's fault): `E-LIMIT`, as the
/// plan interpreter reports it.
pub(crate) use eqfuse_ir::error::internal;
