//! The physical cost model (docs/design-decisions.md, decision 5): a plan's predicted run time in seconds.
//!
//! A kernel costs
//!
//! ```text
//! launch
//!   + bytes through main memory / bandwidth
//!   + Σ over operation classes (evaluations of that class / its throughput)
//!   + index arithmetic of non-contiguous reads (per element)
//! ```
//!
//! - **Bytes.** Every result element written once. Reads are counted per *read site* (a
//!   distinct `Read` of the element function, after common subexpressions are shared): a
//!   site touches `min(evaluations, elements of the array)` elements — an array of `n`
//!   read inside an `n × n` space (a broadcast) costs `n`, not `n²`, while a stencil's
//!   three sites cost three reads of the array; a site whose index is the same at every
//!   point (`a[clamp n 0 (n - 1)]`) touches one element. A materialised intermediate is
//!   therefore paid once when written, and once per kernel (per site) that reads it.
//! - **Operations** are counted per evaluation of the element function (the space's point
//!   count; the operator of a reduction or scan once more per point), each class at its own
//!   throughput: add/mul, divide, sqrt, transcendental, integer, compare/select. A loop's
//!   body counts its iteration count times (a count not known before the run counts
//!   [`UNKNOWN_TRIPS`]); both branches of an `if` count (the worst case: the generated
//!   code computes both and selects), except an `if` that branches the same way at every
//!   point ([`Func::uniform_ifs`]): the compiler takes it out of the loop, and its dearer
//!   arm counts, its decision once.
//! - **An array `if`** (a [`Step::If`]) costs its dearer branch.
//! - **Code size**: each instruction of a kernel's element functions costs
//!   [`CostParams::code`] once per kernel, so a loop beats its body unrolled.
//! - **Row blocks** ([`Step::RowBlock`]) are one launch; a phase's reads of what an earlier
//!   phase of the block read or wrote come from a core's own cache when a row of every
//!   phase fits there ([`CostParams::cache`]), at [`CACHE_SPEEDUP`] times memory's rate.
//!   **Segment blocks** ([`Step::SegmentBlock`]: scan and filter blocks) likewise on the CPU,
//!   whose segments are sized to fit; with the GPU's parameters (a cache of 0) their phases are kernels of their own.
//! - **Contractions** (kernels marked as matrix products) cost their multiply-adds at
//!   [`CostParams::gemm`], each operand read once and the result written once.
//! - **Sizes** are those of the run when known, else each size name's entry in the
//!   `sizes` map, else [`DEFAULT_SIZE`]; a length known only at run time (a filter's)
//!   counts as [`FILTER_KEPT`] of the array filtered, and a filter pays its compaction
//!   ([`CostParams::compact`] per element).
//! - **Access patterns**: a read at an index computed from data (a gather) from an array
//!   larger than a core's own cache ([`CostParams::cache`]) pays [`CostParams::gather`] per
//!   element; one that walks an array across its rows (its last
//!   index does not follow the space's last index, an earlier one does: a transpose)
//!   [`CostParams::strided`], unless the kernel is a reduction folded by the column walk;
//!   reads at indices computed from the space's own (`i + 1`, `clamp (i - 1) 0 (n - 1)`)
//!   pay their arithmetic only. A scan pays [`CostParams::scan`] per element (its running
//!   value), a permute [`CostParams::scatter`] per element written.
//!
//! Every term is counted in a [`Work`] and priced by [`Work::seconds`], so a predicted time
//! is linear in the inverse rates: `benches/model_fit.py` fits them to measured times.
//! Two parameter sets: [`CostParams::cpu_default`] (a few cores, tens of GB/s) and
//! [`CostParams::gpu_default`] (an H100-class device). `eqfuse calibrate` measures the CPU
//! set on the machine at hand.

use serde::{Deserialize, Serialize};

/// The element count the default sizes aim at: a size name that only rank-1 inputs use is
/// this; one used by a rank-`r` input is its `r`-th root (1024 for a matrix).
pub const DEFAULT_SIZE: u64 = 1 << 20;

/// A size for every size name of `inputs` not in `given`: [`DEFAULT_SIZE`] elements for
/// the input of highest rank that uses it.
pub fn default_sizes(
    inputs: &indexmap::IndexMap<String, eqfuse_ir::types::Type>,
    given: &HashMap<String, u64>,
) -> HashMap<String, u64> {
    let mut out = given.clone();
    let mut rank: HashMap<String, usize> = HashMap::new();
    for ty in inputs.values() {
        if let eqfuse_ir::types::Type::Array { shape, .. } = ty {
            for d in shape {
                if let eqfuse_ir::types::Dim::Size(name) = d {
                    let r = rank.entry(name.clone()).or_default();
                    *r = (*r).max(shape.len());
                }
            }
        }
    }
    for (name, r) in rank {
        out.entry(name).or_insert_with(|| (DEFAULT_SIZE as f64).powf(1.0 / r.max(1) as f64).round() as u64);
    }
    out
}

/// The extent of every array input of `inputs` whose dimensions are literal sizes or size
/// names, each name at its value in `sizes` ([`default_sizes`] fills those missing).
pub fn input_extents(
    inputs: &indexmap::IndexMap<String, eqfuse_ir::types::Type>,
    sizes: &HashMap<String, u64>,
) -> HashMap<String, Vec<u64>> {
    extents_at(inputs, &default_sizes(inputs, sizes))
}

/// [`input_extents`] with `sizes` already filled: an input with a size name `sizes` lacks
/// is left out (the model takes it at [`DEFAULT_SIZE`] elements).
pub(crate) fn extents_at(
    inputs: &indexmap::IndexMap<String, eqfuse_ir::types::Type>,
    sizes: &HashMap<String, u64>,
) -> HashMap<String, Vec<u64>> {
    use eqfuse_ir::types::{Dim, Type};
    let mut out = HashMap::new();
    for (name, ty) in inputs {
        let Type::Array { shape, .. } = ty else { continue };
        let dims: Option<Vec<u64>> = shape
            .iter()
            .map(|d| match d {
                Dim::Known(k) => Some((*k).max(0) as u64),
                Dim::Size(n) => sizes.get(n).copied(),
                _ => None,
            })
            .collect();
        if let Some(dims) = dims {
            out.insert(name.clone(), dims);
        }
    }
    out
}

/// What the model assumes of a run's inputs: the value of each size name and the extents
/// of each array input (by name). A size name or input not listed is taken at
/// [`DEFAULT_SIZE`] (an input: that many elements).
#[derive(Clone, Copy, Debug)]
pub struct Extents<'a> {
    /// Size names' values.
    pub sizes: &'a HashMap<String, u64>,
    /// Array inputs' extents, in the order of their axes.
    pub inputs: &'a HashMap<String, Vec<u64>>,
}

/// The fraction of its input a `filter` is estimated to keep: its length is known only at
/// run time, and a kernel over it (`generate [length big, length big] ..`) is priced at this
/// fraction of the input per dimension, not at the whole input.
pub const FILTER_KEPT: f64 = 0.5;

/// A filter lane's result extent, [`FILTER_KEPT`] of its space's points, adding its
/// compaction (every point, [`CostParams::compact`]) to `w`.
fn filter_estimate(space: &[f64], w: &mut Work) -> Vec<f64> {
    let points: f64 = space.iter().product();
    w.compact += points;
    vec![(points * FILTER_KEPT).ceil()]
}

/// Iterations counted for a loop whose count is not a constant.
pub const UNKNOWN_TRIPS: f64 = 16.0;

/// The terms priced per unit at a rate of their own (operations by class, access
/// patterns), each a field of [`Work`] and of [`CostParams`] of the same name: `m!` applied
/// to the list, the one place it is written.
macro_rules! rated_terms {
    ($m:ident) => {
        $m!(
            flop,
            div,
            sqrt,
            transcendental,
            transcendental_f64,
            int,
            compare,
            gather,
            strided,
            compact,
            scan,
            scatter
        )
    };
}

/// The parameters of the model for one backend. Throughputs are operations per second over
/// the whole device (all cores).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostParams {
    /// What these parameters describe (`cpu default`, `gpu default`, `calibrated on HOST`).
    pub name: String,
    /// Main-memory bandwidth, bytes per second.
    pub bandwidth: f64,
    /// Fixed cost of one kernel launch (or one parallel pass), seconds.
    pub launch: f64,
    /// Float add, subtract, multiply, negate, min/max, abs, conversions: per second.
    pub flop: f64,
    /// Float divide and remainder: per second.
    pub div: f64,
    /// `sqrt`: per second.
    pub sqrt: f64,
    /// `exp log sin cos tan tanh pow atan2` (and version 2's) of `f32`: per second.
    pub transcendental: f64,
    /// The same of `f64` (eqfuse's `f64` functions work in double-double where `f32`'s
    /// need one precision, and a vector holds half as many): per second.
    #[serde(default = "default_transcendental_f64")]
    pub transcendental_f64: f64,
    /// Integer arithmetic (including integer divide) and index arithmetic: per second.
    pub int: f64,
    /// Comparisons, logical operations, selects and branches: per second.
    pub compare: f64,
    /// Extra cost per element read through a computed (non-contiguous) index: index
    /// arithmetic and a cache line touched for a few bytes. Per second.
    pub gather: f64,
    /// Seconds per instruction of a kernel's element functions, once per kernel: code size
    /// (compilation, instruction cache, registers). It is what makes a loop beat the same
    /// body unrolled.
    #[serde(default = "default_code")]
    pub code: f64,
    /// A matrix product's rate through the target's GEMM library (the CPU's
    /// `matrixmultiply`, the GPU's cuBLAS), `f32` multiply-adds counted as two operations:
    /// per second (`f64` at half of it). 0: the target runs contractions as the reductions
    /// they are defined as (no GEMM library).
    #[serde(default = "default_gemm")]
    pub gemm: f64,
    /// Bytes of cache one core has to itself (its L2): a row block's later phases read its
    /// rows from cache when a row of every phase fits. `eqfuse calibrate` stores what the
    /// system reports.
    #[serde(default = "default_cache")]
    pub cache: f64,
    /// Elements a `filter` compacts per second, beyond its predicate and its bytes: each
    /// element's place in the result is a running count of the kept ones, and it is
    /// written at a computed position.
    #[serde(default = "default_compact")]
    pub compact: f64,
    /// Elements of a scan per second, beyond its operator and its bytes: the running value
    /// is carried from each element to the next, so a pass over a part of the array waits
    /// on each step.
    #[serde(default = "default_scan")]
    pub scan: f64,
    /// Elements read across an array's rows per second, beyond their bytes: a transpose's
    /// reads, each a cache line touched for a few bytes.
    #[serde(default = "default_strided")]
    pub strided: f64,
    /// Elements a `permute` writes at computed places per second, beyond their bytes.
    #[serde(default = "default_scatter")]
    pub scatter: f64,
}

fn default_transcendental_f64() -> f64 {
    CostParams::cpu_default().transcendental_f64
}

fn default_strided() -> f64 {
    CostParams::cpu_default().strided
}

fn default_scatter() -> f64 {
    CostParams::cpu_default().scatter
}

fn default_compact() -> f64 {
    CostParams::cpu_default().compact
}

fn default_scan() -> f64 {
    CostParams::cpu_default().scan
}

fn default_cache() -> f64 {
    ROW_BLOCK_CACHE_BYTES
}

fn default_code() -> f64 {
    1e-8
}

fn default_gemm() -> f64 {
    CostParams::cpu_default().gemm
}

impl CostParams {
    /// A CPU of a few cores with vector units (the 2-core AVX-512 development machine): the
    /// rates of the kernels eqfuse generates, fitted to measured times of every program of
    /// the suites (`benches/model_fit.py`, docs/performance.md) with the bandwidth and the
    /// launch held at what `eqfuse calibrate` measures; `div` and `sqrt`, which the suites
    /// barely use, as `eqfuse calibrate` measures them.
    pub fn cpu_default() -> CostParams {
        CostParams {
            name: "cpu default".into(),
            bandwidth: 41e9,
            launch: 20e-6,
            flop: 4.5e10,
            div: 1e10,
            sqrt: 6e9,
            // eqfuse's own `f32` functions vectorise 16 wide; the `f64` ones work in
            // double-double, 8 wide
            transcendental: 3e9,
            transcendental_f64: 2.7e8,
            // index arithmetic mostly: hoisted or vectorised with the loop
            int: 1e11,
            compare: 1.5e11,
            gather: 3.5e9,
            code: 1e-8,
            // matrixmultiply's sgemm on the 2 AVX-512 cores
            gemm: 2e11,
            cache: ROW_BLOCK_CACHE_BYTES,
            compact: 1.3e9,
            scan: 1e9,
            strided: 1.8e9,
            scatter: 1.4e9,
        }
    }

    /// The rates (per second) of the terms of [`Work::rated`], in its order.
    pub fn rates(&self) -> [(&'static str, f64); 12] {
        macro_rules! list {
            ($($f:ident),*) => { [$((stringify!($f), self.$f)),*] };
        }
        rated_terms!(list)
    }

    /// [`CostParams::rates`], to set.
    pub fn rates_mut(&mut self) -> [(&'static str, &mut f64); 12] {
        macro_rules! list {
            ($($f:ident),*) => { [$((stringify!($f), &mut self.$f)),*] };
        }
        rated_terms!(list)
    }

    /// An H100-class GPU: ~3 TB/s, ~5 µs per launch, tens of Tflop/s.
    pub fn gpu_default() -> CostParams {
        CostParams {
            name: "gpu default (H100-class)".into(),
            bandwidth: 3.0e12,
            launch: 5e-6,
            flop: 3.0e13,
            div: 4.0e12,
            sqrt: 4.0e12,
            transcendental: 2.0e12,
            transcendental_f64: 1.0e12,
            int: 1.5e13,
            compare: 1.5e13,
            gather: 2.0e11,
            code: 1e-8,
            // cuBLAS's f32 GEMM without TF32 (about 50 Tflop/s peak on an H100)
            gemm: 4.0e13,
            // the CUDA executor runs a row block as one kernel, but it is priced as its
            // phases: priced as cached, the products of a matrix product (a generate and a
            // reduce over [n, m, k], a block per (i, j)) undercut cuBLAS in the model and ran
            // 400 times slower on an H200
            cache: 0.0,
            // not measured on a GPU yet: a filter's compaction and a scan's carry at the
            // bandwidth's ratio to the CPU's; reads across rows and scattered writes at the
            // gather's rate
            compact: 1e11,
            scan: 7.5e10,
            strided: 2.0e11,
            scatter: 2.0e11,
        }
    }
}

use eqfuse_ir::ast::BinOp;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{
    Arg, Block, Func, Inst, Kernel, LaneOp, Origin, PermuteDest, Plan, Reg, Step, ValueId,
};
use eqfuse_ir::types::ElemType;
use std::collections::{HashMap, HashSet};

/// What one kernel of a plan is predicted to cost.
#[derive(Clone, Debug, PartialEq)]
pub struct StepCost {
    /// The kernel's index in [`Plan::kernels`].
    pub kernel: usize,
    /// Predicted seconds.
    pub seconds: f64,
    /// Scalar operations (all classes).
    pub ops: f64,
    /// What it does, term by term (`seconds` is its price, `work.bytes` its bytes through
    /// main memory).
    pub work: Work,
}

/// A plan's predicted cost: per step, and in all.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCost {
    /// One entry per kernel, in [`Plan::kernels`] order (host steps cost nothing here).
    pub kernels: Vec<StepCost>,
    /// The sum, seconds (an `if` costs its dearer branch).
    pub total: f64,
    /// What the plan does, term by term: the kernels' work, a loop's body times its
    /// iterations, an `if`'s dearer branch (`total` is its price).
    pub work: Work,
}

/// Operation counts of a function, per evaluation, by class.
#[derive(Clone, Debug, Default)]
struct Ops {
    /// The operation classes and access patterns counted per evaluation (the fields of
    /// [`Work::rated`]; `strided` counts a point whose reads walk an array across its rows
    /// once, however many such reads it makes).
    w: Work,
    /// Read sites: (array, evaluations per evaluation of the function, whether its index
    /// is the same at every point of the space, its neighbourhood: [`neighbourhood`]).
    reads: Vec<(ValueId, f64, bool, Option<Vec<Reg>>)>,
    /// Read sites at an index computed from data: (array, evaluations per evaluation of
    /// the function). [`kernel_cost`] prices them as gathers when the array is larger than
    /// a core's own cache ([`CostParams::cache`]).
    gathers: Vec<(ValueId, f64)>,
    /// Instructions (code size, not executions).
    insts: f64,
}

impl Ops {
    /// Adds `o`'s read sites, gathers and instructions (not its [`Ops::w`]).
    fn add_sites(&mut self, o: Ops) {
        self.reads.extend(o.reads);
        self.gathers.extend(o.gathers);
        self.insts += o.insts;
    }

    /// Scalar operations, all classes, per evaluation.
    fn count(&self) -> f64 {
        let w = &self.w;
        w.flop + w.div + w.sqrt + w.transcendental + w.transcendental_f64 + w.int + w.compare
    }
}

/// `count` units at `rate` per second, in seconds (none: 0, whatever the rate).
fn per(count: f64, rate: f64) -> f64 {
    if count == 0.0 {
        0.0
    } else {
        count / rate
    }
}

/// What a kernel (or a plan) does, by the terms of the model: each term is priced at its
/// parameter ([`Work::seconds`]), so a predicted time is linear in the inverse rates, and
/// `benches/model_fit.py` fits the rates of a machine to measured times from these counts
/// (`explain --json` prints them, `work`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Work {
    /// Launches (parallel passes): [`CostParams::launch`] each.
    pub launches: f64,
    /// Bytes through main memory.
    pub bytes: f64,
    /// Bytes read from, or kept in, a core's own cache ([`CACHE_SPEEDUP`] times faster).
    pub cached: f64,
    /// Evaluations of each operation class ([`CostParams`]'s field of the same name).
    pub flop: f64,
    pub div: f64,
    pub sqrt: f64,
    pub transcendental: f64,
    /// `f64` transcendental functions ([`CostParams::transcendental_f64`]).
    pub transcendental_f64: f64,
    pub int: f64,
    pub compare: f64,
    /// Reads at an index computed from data, from an array larger than a core's cache.
    pub gather: f64,
    /// Points whose reads walk arrays across their rows ([`CostParams::strided`]).
    pub strided: f64,
    /// Instructions of element functions, once per kernel ([`CostParams::code`]).
    pub code: f64,
    /// Multiply-adds of GEMM calls, counted as two operations, `f64` twice over.
    pub gemm: f64,
    /// Elements a filter compacts ([`CostParams::compact`]).
    pub compact: f64,
    /// Elements of scans ([`CostParams::scan`]): a running value carried from each element
    /// to the next.
    pub scan: f64,
    /// Elements a `permute` writes at computed places ([`CostParams::scatter`]).
    pub scatter: f64,
}

impl Work {
    /// The predicted seconds of this work with parameters `p`.
    pub fn seconds(&self, p: &CostParams) -> f64 {
        let rated: f64 = self.rated().iter().zip(p.rates()).map(|((_, c), (_, r))| per(*c, r)).sum();
        self.unrated_seconds(p) + rated
    }

    /// The seconds of the terms not in [`Work::rated`]: launches, bytes, code size and
    /// GEMM operations (what `eqfuse calibrate` measures apart from its probes' fit).
    pub fn unrated_seconds(&self, p: &CostParams) -> f64 {
        self.launches * p.launch
            + per(self.bytes, p.bandwidth)
            + per(self.cached, p.bandwidth * CACHE_SPEEDUP)
            + self.code * p.code
            + per(self.gemm, p.gemm)
    }

    /// The terms priced per unit at a [`CostParams`] rate of the same name
    /// ([`CostParams::rates`], in the same order): operations by class and the access
    /// patterns.
    pub fn rated(&self) -> [(&'static str, f64); 12] {
        macro_rules! list {
            ($($f:ident),*) => { [$((stringify!($f), self.$f)),*] };
        }
        rated_terms!(list)
    }

    /// Adds `k` times `o`.
    pub fn add(&mut self, o: &Work, k: f64) {
        macro_rules! add {
            ($($f:ident),*) => { $(self.$f += k * o.$f;)* };
        }
        add!(launches, bytes, cached, code, gemm);
        rated_terms!(add);
    }
}

/// Counts `f`'s operations: those per evaluation (loops times their trip count), and
/// those computed once per kernel: an instruction whose value is the same at every point
/// ([`varying`]), not under a branch or a loop that varies, is hoisted out of the loop
/// over the space (the C compiler does; the CUDA compiler keeps it in a register), so it
/// costs once, not once per point (a scan that recomputes an output's invariant element
/// rather than read it, for one). Reads stay per
/// evaluation (one at an invariant index is one element, [`Ops::reads`]).
fn count_ops(f: &Func, p: &CostParams) -> (Ops, Ops) {
    // what follows the space's last index (over two dimensions and more)
    let inner = match f.params.len() {
        0 | 1 => HashSet::new(),
        r => f.flows_from(HashSet::from([(r - 1) as Reg]), |_| false),
    };
    let varies = f.varying();
    let cx = Count {
        f,
        p,
        uniform_ifs: f.uniform_ifs_given(&varies),
        varies,
        data: data_dependent(f),
        inner,
        defs: f.body.definitions(),
    };
    let (mut per, mut once) = (Ops::default(), Ops::default());
    cx.block(&f.body, 1.0, true, (&mut per, &mut once), &mut HashMap::new());
    (per, once)
}

/// What [`count_ops`] knows of the function it counts.
struct Count<'a> {
    f: &'a Func,
    p: &'a CostParams,
    varies: HashSet<Reg>,
    data: HashSet<Reg>,
    inner: HashSet<Reg>,
    defs: HashMap<Reg, &'a Inst>,
    /// The `if`s that branch the same way at every point ([`Func::uniform_ifs`]).
    uniform_ifs: HashSet<Reg>,
}

impl<'a> Count<'a> {
    /// Counts `root` (run `m0` times per evaluation; `uniform0`: the same way at every
    /// point) into `per` (per evaluation) and `once` (once per run); `consts` holds the
    /// integer constants seen so far (a loop's count).
    fn block(
        &self,
        root: &'a Block,
        m0: f64,
        uniform0: bool,
        (per, once): (&mut Ops, &mut Ops),
        consts: &mut HashMap<Reg, i64>,
    ) {
        let reg_type = |r: &Reg| self.f.reg_types.get(*r as usize).copied();
        let float = |r: &Reg| reg_type(r).is_some_and(|t| t.is_float());
        let (varies, data, inner, defs) = (&self.varies, &self.data, &self.inner, &self.defs);
        // (block, multiplier, whether the block runs the same way at every point), iteratively
        let mut stack: Vec<(&Block, f64, bool)> = vec![(root, m0, uniform0)];
        while let Some((b, m, uniform)) = stack.pop() {
            per.insts += b.insts.len() as f64;
            for i in &b.insts {
                let hoisted = uniform
                    && !matches!(i, Inst::Read { .. })
                    && i.dsts().iter().all(|d| !varies.contains(d));
                if let Inst::If { dst, then_block, else_block, .. } = i {
                    if !hoisted && self.uniform_ifs.contains(dst) {
                        self.uniform_if([then_block, else_block], m, (&mut *per, &mut *once), consts);
                        continue;
                    }
                }
                let ops = if hoisted { &mut *once } else { &mut *per };
                match i {
                    Inst::Const { dst, value } => {
                        if let eqfuse_ir::value::Scalar::I64(v) = value {
                            consts.insert(*dst, *v);
                        }
                    }
                    Inst::Unary { dst, .. } => {
                        if float(dst) {
                            ops.w.flop += m
                        } else {
                            ops.w.int += m
                        }
                    }
                    Inst::Binary { op, a, .. } => match op {
                        _ if op.is_comparison() || op.is_logical() => ops.w.compare += m,
                        BinOp::Div | BinOp::Rem if float(a) => ops.w.div += m,
                        _ if float(a) => ops.w.flop += m,
                        _ => ops.w.int += m,
                    },
                    Inst::Call { f: func, args, .. } => match func {
                        ScalarFn::Sqrt => ops.w.sqrt += m,
                        f if f.is_transcendental() => {
                            let wide = args.first().and_then(reg_type) == Some(ElemType::F64);
                            if wide {
                                ops.w.transcendental_f64 += m
                            } else {
                                ops.w.transcendental += m
                            }
                        }
                        ScalarFn::Clamp => {
                            if args.first().is_some_and(float) {
                                ops.w.flop += 2.0 * m
                            } else {
                                ops.w.int += 2.0 * m
                            }
                        }
                        _ => {
                            if args.first().is_some_and(float) {
                                ops.w.flop += m
                            } else {
                                ops.w.int += m
                            }
                        }
                    },
                    Inst::Read { array, index, .. } => {
                        let invariant = !index.iter().any(|r| varies.contains(r));
                        // a read at an index computed from what was read (a gather): a scattered
                        // access. Indices computed from the space's own (`i + 1`, `clamp ..`,
                        // `j * 2`) stay near the walk and cost their arithmetic only; one at
                        // the same index everywhere is one element, read once.
                        let gather = !invariant && index.iter().any(|r| data.contains(r));
                        let near = (!invariant && !gather).then(|| neighbourhood(defs, varies, index));
                        ops.reads.push((*array, m, invariant, near));
                        if gather {
                            ops.gathers.push((*array, m));
                        } else if let Some((last, rest)) = index.split_last() {
                            // the walk across rows is paid once per point however many
                            // arrays it reads so (the code walks them in tiles together)
                            if !inner.contains(last) && rest.iter().any(|r| inner.contains(r)) {
                                ops.w.strided = ops.w.strided.max(m);
                            }
                        }
                    }
                    Inst::Dim { .. } | Inst::Load { .. } => {}
                    Inst::If { then_block, else_block, .. } => {
                        ops.w.compare += m;
                        stack.push((then_block, m, hoisted));
                        stack.push((else_block, m, hoisted));
                    }
                    Inst::Loop { count, body, .. } => {
                        let trips = consts.get(count).map_or(UNKNOWN_TRIPS, |&c| c.max(0) as f64);
                        stack.push((body, m * trips, hoisted));
                    }
                }
            }
        }
    }

    /// An `if` that branches the same way at every point: taken out of the loop, decided
    /// once, one arm per point: its dearer arm's operations count (both arms' reads and
    /// code, the worst case).
    fn uniform_if(
        &self,
        arms: [&'a Block; 2],
        m: f64,
        (per, once): (&mut Ops, &mut Ops),
        consts: &mut HashMap<Reg, i64>,
    ) {
        once.w.compare += 1.0;
        let counted = arms.map(|a| {
            let (mut ap, mut ao) = (Ops::default(), Ops::default());
            self.block(a, m, false, (&mut ap, &mut ao), consts);
            (ap, ao)
        });
        let dear = usize::from(counted[1].0.w.seconds(self.p) > counted[0].0.w.seconds(self.p));
        for (k, (ap, ao)) in counted.into_iter().enumerate() {
            if k == dear {
                // a point walks across rows once, however many of its reads do
                let strided = per.w.strided.max(ap.w.strided);
                per.w.add(&ap.w, 1.0);
                per.w.strided = strided;
            }
            per.add_sites(ap);
            once.w.add(&ao.w, 1.0);
            once.add_sites(ao);
        }
    }
}

/// The farthest shift, in elements along an axis, that [`neighbourhood`] takes for a
/// neighbour's: a stencil's reach, not a second walk of the array.
const NEAR: i64 = 64;

/// A read's index with each component traced back through a shift by a small constant
/// (`i + 1`, at most [`NEAR`]) and a clamp by values the same at every point
/// (`clamp (i - 1) 0 (n - 1)`, `min i k`) to the register it offsets: sites of one array
/// with the same neighbourhood (a stencil's) touch the same lines of memory, which the
/// kernel brings in once. A shift by a size or an input (`a[i + k]`) is another walk.
fn neighbourhood(defs: &HashMap<Reg, &Inst>, varies: &HashSet<Reg>, index: &[Reg]) -> Vec<Reg> {
    let fixed = |r: &Reg| !varies.contains(r);
    let near = |r: &Reg| match defs.get(r) {
        Some(Inst::Const { value, .. }) => value.as_i128().is_some_and(|c| c.abs() <= NEAR as i128),
        _ => false,
    };
    index
        .iter()
        .map(|&r| {
            let mut r = r;
            // at most as many steps as there are definitions: no cycle runs forever
            for _ in 0..defs.len() {
                r =
                    match defs.get(&r) {
                        Some(Inst::Binary { op: BinOp::Add | BinOp::Sub, a, b, .. }) if near(b) => *a,
                        Some(Inst::Binary { op: BinOp::Add, a, b, .. }) if near(a) => *b,
                        Some(Inst::Call {
                            f: ScalarFn::Clamp | ScalarFn::Min | ScalarFn::Max, args, ..
                        }) if args.len() > 1 && args[1..].iter().all(fixed) => args[0],
                        _ => break,
                    };
            }
            r
        })
        .collect()
}

/// The registers of `f` computed from an array's element: a read's result and whatever is
/// computed from it (a read at such an index is a gather).
fn data_dependent(f: &Func) -> HashSet<Reg> {
    f.flows_from(HashSet::new(), |i| matches!(i, Inst::Read { .. }))
}

/// Estimated extents and element counts of a plan's values.
struct Sizes<'a> {
    given: Extents<'a>,
    scalars: HashMap<ValueId, f64>,
    dims: HashMap<ValueId, Vec<f64>>,
}

impl Sizes<'_> {
    fn arg(&self, a: &Arg) -> f64 {
        match a {
            Arg::Const(c) => (*c).max(0) as f64,
            Arg::Value(v) => self.scalars.get(v).copied().unwrap_or(DEFAULT_SIZE as f64),
        }
    }

    fn elements(&self, v: ValueId) -> f64 {
        self.dims.get(&v).map_or(DEFAULT_SIZE as f64, |d| d.iter().product())
    }

    /// A host scalar's value, when it is simple integer arithmetic on known sizes.
    fn eval(&self, f: &Func) -> Option<f64> {
        let mut regs: HashMap<Reg, f64> = HashMap::new();
        for i in &f.body.insts {
            match i {
                Inst::Const { dst, value } => {
                    regs.insert(*dst, value.as_f64());
                }
                Inst::Load { dst, value } => {
                    regs.insert(*dst, *self.scalars.get(value)?);
                }
                Inst::Dim { dst, array, axis } => {
                    let k = *regs.get(axis)? as usize;
                    regs.insert(*dst, *self.dims.get(array)?.get(k)?);
                }
                Inst::Binary { dst, op, a, b } => {
                    let (x, y) = (*regs.get(a)?, *regs.get(b)?);
                    let v = match op {
                        BinOp::Add => x + y,
                        BinOp::Sub => x - y,
                        BinOp::Mul => x * y,
                        BinOp::Div if y != 0.0 => (x / y).trunc(),
                        _ => return None,
                    };
                    regs.insert(*dst, v);
                }
                Inst::Call { dst, f: ScalarFn::Convert(_), args } => {
                    regs.insert(*dst, *regs.get(args.first()?)?);
                }
                _ => return None,
            }
        }
        regs.get(f.ret.first()?).copied()
    }
}

/// The predicted cost of `plan` with parameters `p`, its sizes and inputs as `extents`
/// says.
pub fn plan_cost(plan: &Plan, p: &CostParams, extents: Extents<'_>) -> PlanCost {
    let mut s = Sizes { given: extents, scalars: HashMap::new(), dims: HashMap::new() };
    for (v, info) in plan.values.iter().enumerate() {
        match info.origin {
            Origin::Size => {
                let n = s.given.sizes.get(&info.name).copied().unwrap_or(DEFAULT_SIZE);
                s.scalars.insert(v, n as f64);
            }
            Origin::Input => {
                if let Some(d) = s.given.inputs.get(&info.name).filter(|d| d.len() == info.rank) {
                    s.dims.insert(v, d.iter().map(|x| *x as f64).collect());
                }
            }
            Origin::Computed => {}
        }
    }
    let mut kernels = Vec::new();
    let work = steps_cost(plan, &plan.steps, p, &mut s, &mut kernels);
    PlanCost { kernels, total: work.seconds(p), work }
}

/// A contraction through the GEMM library: its multiply-adds at [`CostParams::gemm`]
/// (half of it for `f64`), each operand read once and the result written once.
fn contraction_cost(
    plan: &Plan,
    kernel: &Kernel,
    c: &eqfuse_ir::plan::contract::Contraction,
    p: &CostParams,
    s: &mut Sizes<'_>,
) -> StepCost {
    let space: Vec<f64> = kernel.space.iter().map(|a| s.arg(a)).collect();
    let points: f64 = space.iter().product();
    let out: Vec<f64> = space[..space.len().saturating_sub(1)].to_vec();
    let (mut bytes, mut weight) = (0.0, 1.0);
    if let Some(lane) = kernel.lanes.first() {
        let size = elem_size(plan, lane.dst);
        if size > 4.0 {
            weight = 2.0;
        }
        bytes += out.iter().product::<f64>() * size;
        s.dims.insert(lane.dst, out);
    }
    for o in [&c.a, &c.b] {
        let read: f64 = o.axes.iter().map(|d| space.get(*d).copied().unwrap_or(1.0)).product();
        let size = elem_size(plan, o.array);
        bytes += read.min(s.elements(o.array)) * size;
    }
    let ops = 2.0 * points;
    let work = Work { launches: 1.0, bytes, gemm: ops * weight, ..Work::default() };
    StepCost { kernel: 0, seconds: work.seconds(p), ops, work }
}

/// The cost of `steps`, adding one entry per kernel to `kernels`.
fn steps_cost(
    plan: &Plan,
    steps: &[Step],
    p: &CostParams,
    s: &mut Sizes<'_>,
    kernels: &mut Vec<StepCost>,
) -> Work {
    let mut total = Work::default();
    for step in steps {
        match step {
            Step::Scalar { dst, body } => {
                if let Some(x) = s.eval(body) {
                    s.scalars.insert(*dst, x.max(0.0));
                }
            }
            Step::Assert { .. } => {}
            Step::RowBlock { kernels: phases, local } => {
                let inner =
                    phases.iter().map(|k| k.space.last().map_or(1.0, |a| s.arg(a))).fold(1.0, f64::max);
                let fits = inner * 8.0 * phases.len() as f64 <= p.cache;
                total.add(&block_cost(plan, phases, local, (fits, true), p, s, kernels), 1.0)
            }
            // the CPU backend's segments are sized to fit its cache; the GPU's parameters
            // (a cache of 0) price the phases as the kernels its executor runs
            Step::SegmentBlock { kernels: phases, local } => {
                let cpu = p.cache > 0.0;
                total.add(&block_cost(plan, phases, local, (cpu, cpu), p, s, kernels), 1.0)
            }
            Step::Kernel(kernel) => {
                let c = kernel_cost(plan, kernel, p, s, &HashSet::new(), &HashSet::new());
                total.add(&c.work, 1.0);
                kernels.push(StepCost { kernel: kernels.len(), ..c });
            }
            Step::Loop(l) => {
                // the body once per iteration: a `for` count known from the sizes, else
                // one iteration (a `while` runs an unknown number of times)
                let times = match &l.form {
                    eqfuse_ir::plan::LoopKind::For { count, .. } => {
                        s.scalars.get(count).copied().unwrap_or(1.0).max(0.0)
                    }
                    eqfuse_ir::plan::LoopKind::While { .. } => 1.0,
                };
                for st in l.step_lists() {
                    total.add(&steps_cost(plan, st, p, s, kernels), times);
                }
                for (d, st) in l.dst.iter().zip(&l.state) {
                    if let Some(x) = s.dims.get(st).cloned() {
                        s.dims.insert(*d, x);
                    }
                }
            }
            Step::If { then_steps, then_value, else_steps, else_value, dst, .. } => {
                // a branch whose value it does not compute (an input, an earlier result)
                // copies it, as an output that is an input does
                let copy = |steps: &[Step], v: ValueId, s: &Sizes<'_>| {
                    let made = steps.iter().any(|st| st.writes().contains(&v));
                    let info = plan.values.get(v);
                    if made || info.is_none_or(|x| x.rank == 0) {
                        return Work::default();
                    }
                    let bytes = 2.0 * s.elements(v) * elem_size(plan, v);
                    // as a copy kernel: a launch, its bytes, one read instruction
                    Work { launches: 1.0, bytes, code: 1.0, ..Work::default() }
                };
                let mut a = steps_cost(plan, then_steps, p, s, kernels);
                a.add(&copy(then_steps, *then_value, s), 1.0);
                let mut b = steps_cost(plan, else_steps, p, s, kernels);
                b.add(&copy(else_steps, *else_value, s), 1.0);
                total.add(if a.seconds(p) >= b.seconds(p) { &a } else { &b }, 1.0);
                if let Some(d) = s.dims.get(then_value).cloned() {
                    s.dims.insert(*dst, d);
                }
            }
        }
    }
    total
}

/// How many times faster than main memory a core streams what its own cache holds: a row
/// block's phases write and read their rows there, which costs little but not nothing
/// (a row block of 13 phases ran 4.6 times slower than the one kernel they make, fused,
/// when the two were priced the same). Measured on the 2-core AVX-512 development machine:
/// `b[i] = a[i] * c + b[i]` over 2 × 256 KiB per core, 720 GB/s, against 44–76 GB/s from
/// memory; 10 is the conservative end.
pub const CACHE_SPEEDUP: f64 = 10.0;

/// [`CostParams::cache`] where nothing is measured: the most bytes of one row of every phase
/// of a row block for the block to be priced as reading its rows from cache after the first
/// phase (a core's L2 holds a few such rows).
pub const ROW_BLOCK_CACHE_BYTES: f64 = 512.0 * 1024.0;

/// A row block or a scan block: one launch (`one_launch`); when a block of every phase
/// fits a core's own cache (`fits`: for a row block, a row of every phase within
/// [`CostParams::cache`]), a phase's reads of what an earlier phase read or wrote come from
/// there, and what the block keeps per block (`local`) is written there, not to memory:
/// those bytes cost [`CACHE_SPEEDUP`] times less than memory's. A cache of 0 (the GPU's
/// parameters) prices the phases as kernels of their own.
fn block_cost(
    plan: &Plan,
    phases: &[Kernel],
    local: &[ValueId],
    (fits, one_launch): (bool, bool),
    p: &CostParams,
    s: &mut Sizes<'_>,
    kernels: &mut Vec<StepCost>,
) -> Work {
    let mut hot = HashSet::new();
    let kept: HashSet<ValueId> = if fits { local.iter().copied().collect() } else { HashSet::new() };
    let mut total = Work::default();
    for (n, k) in phases.iter().enumerate() {
        let mut c = kernel_cost(plan, k, p, s, &hot, &kept);
        if n > 0 && one_launch {
            c.work.launches = (c.work.launches - 1.0).max(0.0);
            c.seconds = c.work.seconds(p);
        }
        total.add(&c.work, 1.0);
        kernels.push(StepCost { kernel: kernels.len(), ..c });
        if fits {
            hot.extend(k.reads());
            hot.extend(k.writes());
        }
    }
    total
}

/// The bytes of one element of value `v` (4 where the plan does not say).
fn elem_size(plan: &Plan, v: ValueId) -> f64 {
    plan.values.get(v).map_or(4, |x| x.elem.size_bytes()) as f64
}

/// A kernel's cost; reads of the values in `hot` are in cache, and the results in `kept`
/// are written to cache, not to memory (both at [`CACHE_SPEEDUP`] times memory's rate).
fn kernel_cost(
    plan: &Plan,
    kernel: &Kernel,
    p: &CostParams,
    s: &mut Sizes<'_>,
    hot: &HashSet<ValueId>,
    kept: &HashSet<ValueId>,
) -> StepCost {
    if let Some(c) = kernel.contraction.as_ref().filter(|_| p.gemm > 0.0) {
        return contraction_cost(plan, kernel, c, p, s);
    }
    let space: Vec<f64> = kernel.space.iter().map(|a| s.arg(a)).collect();
    // a reshape of a materialised value is a view of its elements: nothing moves
    if let (Some(_), [lane]) = (kernel.view_of, kernel.lanes.as_slice()) {
        s.dims.insert(lane.dst, space);
        return StepCost { kernel: 0, seconds: 0.0, ops: 0.0, work: Work::default() };
    }
    let points: f64 = space.iter().product();
    // bytes through memory, and `cached`: read from or kept in a core's own cache (a row block's)
    let mut w = Work { launches: 1.0, ..Work::default() };
    let mut ops_total = 0.0;
    let mut fs: Vec<(&Func, f64)> = vec![(&kernel.elem, points)];
    // a part of a group writes what its head writes: a row per reduced row, or the space
    let mut part_dims = space.clone();
    for lane in &kernel.lanes {
        let elem_bytes = elem_size(plan, lane.dst);
        let out_dims: Vec<f64> = match &lane.op {
            LaneOp::Generate => space.clone(),
            LaneOp::Part => part_dims.clone(),
            LaneOp::Reduce { op, .. } => {
                fs.push((op, points));
                part_dims = space[..space.len().saturating_sub(1)].to_vec();
                part_dims.clone()
            }
            LaneOp::Scan { op, .. } => {
                fs.push((op, points));
                w.scan += points;
                part_dims = space.clone();
                space.clone()
            }
            LaneOp::Filter { pred } => {
                fs.push((pred, points));
                filter_estimate(&space, &mut w)
            }
            LaneOp::Permute { op, dest, target } => {
                fs.push((op, points));
                fs.push((target, points));
                w.scatter += points;
                match dest {
                    PermuteDest::Array(v) => {
                        let d = s.dims.get(v).cloned().unwrap_or_else(|| vec![points]);
                        // the copy of `dest`
                        w.bytes += 2.0 * d.iter().product::<f64>() * elem_bytes;
                        d
                    }
                    // made in place: the output's own write below is all it costs
                    PermuteDest::Fill { shape, .. } => shape.iter().map(|a| s.arg(a)).collect(),
                }
            }
        };
        let out_bytes = out_dims.iter().product::<f64>() * elem_bytes;
        if kept.contains(&lane.dst) {
            w.cached += out_bytes;
        } else {
            w.bytes += out_bytes;
        }
        s.dims.insert(lane.dst, out_dims);
    }
    // each read site of the element functions touches its array at most once per element;
    // whether the site may find it in cache where an earlier kernel of the block read it
    let mut sites: Vec<(ValueId, f64, bool)> = Vec::new();
    // a reduction across rows folds runs of rows side by side (the column walk): its reads
    // across rows stay along them
    let column_walk =
        kernel.lanes.iter().any(|l| matches!(l.op, LaneOp::Reduce { .. })) && kernel.elem.walks_columns();
    for (f, evals) in fs {
        let (mut ops, once) = count_ops(f, p);
        if column_walk {
            ops.w.strided = 0.0;
        }
        // a gather from an array a core's cache holds costs its index arithmetic only
        for &(v, m) in &ops.gathers {
            if s.elements(v) * elem_size(plan, v) > p.cache {
                ops.w.gather += m;
            }
        }
        let runs = evals.min(1.0);
        w.add(&ops.w, evals);
        w.add(&once.w, runs);
        w.code += ops.insts;
        ops_total += ops.count() * evals + once.count() * runs;
        // a site at the same index everywhere touches one element; sites of one array in
        // one neighbourhood (a stencil's), the most any of them reads
        let mut near: HashMap<(ValueId, &[Reg]), usize> = HashMap::new();
        for (v, m, invariant, hood) in &ops.reads {
            let n = if *invariant { 1.0 } else { evals * m };
            // a gather (a read neither at one index nor near the point) reaches anywhere in
            // its array: an earlier kernel of a block brought in the block's rows, not the
            // array, so it is in cache only where the whole array fits. A read at one index
            // is one element from memory wherever its kernel is in the block (else which of
            // two kernels came first in a block decided the price of its one element)
            let gather = !*invariant && hood.is_none();
            let may_be_hot = !*invariant && (!gather || s.elements(*v) * elem_size(plan, *v) <= p.cache);
            match hood.as_deref().map(|h| near.entry((*v, h))) {
                Some(std::collections::hash_map::Entry::Occupied(e)) => {
                    let site: &mut (ValueId, f64, bool) = &mut sites[*e.get()];
                    site.1 = site.1.max(n);
                }
                Some(std::collections::hash_map::Entry::Vacant(e)) => {
                    e.insert(sites.len());
                    sites.push((*v, n, may_be_hot));
                }
                None => sites.push((*v, n, may_be_hot)),
            }
        }
    }
    for (v, evals, may_be_hot) in sites {
        let b = evals.min(s.elements(v)) * elem_size(plan, v);
        if may_be_hot && hot.contains(&v) {
            w.cached += b;
        } else {
            w.bytes += b;
        }
    }
    StepCost { kernel: 0, seconds: w.seconds(p), ops: ops_total, work: w }
}
