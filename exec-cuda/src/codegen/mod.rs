//! CUDA C generation: one self-contained `.cu` file per [`Kernel`] of a plan.
//!
//! A file holds the [prelude](prelude) (error record, wrapping integer arithmetic,
//! saturating conversions, NaN-propagating `min`/`max`, ordered warp/block reductions and
//! scans, compare-and-swap loops), the kernel's argument block `EqArgs`, its element
//! function and lane functions as `__device__` functions of straight-line C ([`func`]), and
//! one or more `extern "C" __global__` entry points from a small set of skeletons
//! ([`skeleton`]):
//!
//! | kernel | skeleton | entry points |
//! | --- | --- | --- |
//! | generate lanes only (`map`, `gather`, `copy`, ...) | grid-stride loop, multi-index from the flat index | `_map` |
//! | reduce over a 1-d space (plus generate lanes) | one launch: each thread folds a chunk, block tree with warp shuffles, the last block (atomic counter) combines the per-block partials | `_reduce` |
//! | reduce over rank >= 2 (rows) | a warp per row or a block per row, chosen at launch by the row length | `_reduce_warp`, `_reduce_block` |
//! | scan over a 1-d space | reduce-then-scan: per-block reduce, one-block scan of the block sums, final scan | `_scan_up`, `_scan_mid`, `_scan_down` |
//! | scan over rank >= 2 | a block per row, tiles with a carry | `_scan_rows` |
//! | filter | count per block, scan of the counts, scatter | `_filter_count`, `_filter_offsets`, `_filter_scatter` |
//! | permute | grid-stride loop, atomics (`atomicAdd`, `atomicMin`/`Max`, compare-and-swap loops) | `_permute` |
//!
//! Every entry point takes one parameter, `const EqArgs A`: a struct of 8-byte fields
//! (pointers, `long long` extents and dimensions, host scalars in an 8-byte union), listed in
//! [`KernelCode::slots`] in order, which the runtime fills and passes as one blob. Reductions
//! and scans keep their operands in order (the language requires only associativity);
//! when the operator is a recognised commutative one (`+`, `*`, `min`, `max`) the elements
//! are dealt to threads in strides (coalesced), otherwise in contiguous chunks.

pub(crate) mod func;
pub(crate) mod prelude;
pub(crate) mod skeleton;

use eqfuse_ir::ast::BinOp;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Func, Inst, Kernel, LaneOp, Origin, Plan, Reg, Step, ValueId};
use eqfuse_ir::types::ElemType;
use std::collections::HashSet;
use std::fmt::Write as _;

/// What the runtime writes into one 8-byte field of a kernel's argument block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The error record (device pointer).
    ErrRecord,
    /// The launch's number, for the error record (`i64`).
    KernelId,
    /// Extent `k` of the space (`i64`).
    Extent(usize),
    /// The number of elements of the space (`i64`).
    Total,
    /// The product of every extent but the innermost (`i64`).
    Rows,
    /// Elements per block of a chunked launch (scan and filter over 1-d spaces).
    Chunk,
    /// Blocks of a chunked launch.
    Blocks,
    /// 1 when every extent, the number of elements and the number of rows are below 2^32
    /// (indices can be computed in 32 bits), else 0.
    Narrow,
    /// Value `v`'s device buffer.
    Array(ValueId),
    /// Dimension `k` of value `v` (`i64`).
    Dim(ValueId, usize),
    /// A 0-d value known on the host, passed by value (its bytes, little-endian, in the low
    /// bytes of the field).
    HostScalar(ValueId),
    /// Lane `k`'s output buffer.
    Out(usize),
    /// Scratch buffer `k` of [`KernelCode::scratch`].
    Scratch(usize),
}

/// A scratch buffer a skeleton needs: `fixed + per_block * blocks` bytes, zeroed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scratch {
    /// Bytes whatever the grid.
    pub fixed: usize,
    /// Bytes per block of the launch grid.
    pub per_block: usize,
}

/// The launch protocol of a kernel: which entry points run, in which order, on what grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Skeleton {
    /// Generate lanes only: `entry` over the space in a grid-stride loop.
    Map { entry: String },
    /// Reduce (and generate) lanes over a 1-d space, one launch. Scratch 0 is the block
    /// counter; scratch `1 + k` the partials of the `k`-th reduce lane.
    FullReduce { entry: String },
    /// Reduce (and generate) lanes over rank >= 2: a warp or a block per row.
    RowReduce { warp: String, block: String },
    /// A scan over a 1-d space: `up` (per-block reduce into scratch 0), `mid` (one block:
    /// exclusive scan of the block sums), `down` (final scan seeded by the block's prefix).
    Scan1d { up: String, mid: String, down: String },
    /// A scan along rows (rank >= 2): a block per row.
    ScanRows { entry: String },
    /// A filter: `count` (kept per block into scratch 0), `offsets` (one block: exclusive scan
    /// of the counts, the total into scratch 1), then the host sizes the output, `scatter`.
    Filter { count: String, offsets: String, scatter: String },
    /// A permute: the output starts as a copy of `dest`, then `entry` combines atomically.
    Permute { entry: String, dest: ValueId },
}

/// The generated code of one kernel.
#[derive(Clone, Debug)]
pub(crate) struct KernelCode {
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
}

/// Options that change the generated source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GenOptions {
    /// Threads per block (a multiple of 32, at most 1024).
    pub block: u32,
    /// Allow `atomicAdd` on `f32` (flushes subnormals) in permutes.
    pub fast_math: bool,
}

/// The 0-d values of a plan that are known on the host before any kernel reads them:
/// scalar inputs, sizes and host scalar steps. They are passed to kernels by value; every
/// other value is read through a device pointer.
pub(crate) fn host_known(plan: &Plan) -> HashSet<ValueId> {
    fn walk(steps: &[Step], out: &mut HashSet<ValueId>) {
        for s in steps {
            match s {
                Step::Scalar { dst, .. } => {
                    out.insert(*dst);
                }
                Step::If { then_steps, else_steps, .. } => {
                    walk(then_steps, out);
                    walk(else_steps, out);
                }
                Step::Kernel(_) | Step::Assert { .. } => {}
            }
        }
    }
    let mut out: HashSet<ValueId> = plan
        .values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.rank == 0 && matches!(v.origin, Origin::Input | Origin::Size))
        .map(|(i, _)| i)
        .collect();
    walk(&plan.steps, &mut out);
    out
}

/// The C type of an element type.
pub(crate) fn cty(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "bool",
        ElemType::I32 => "int",
        ElemType::I64 => "long long",
        ElemType::F32 => "float",
        ElemType::F64 => "double",
    }
}

/// The suffix of the prelude's per-type helpers (`eq_min_f32`, ...).
pub(crate) fn suffix(t: ElemType) -> &'static str {
    t.name()
}

/// The member of `EqScalar` holding a value of type `t`.
pub(crate) fn scalar_member(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "b",
        ElemType::I32 => "i32",
        ElemType::I64 => "i64",
        ElemType::F32 => "f32",
        ElemType::F64 => "f64",
    }
}

/// A binary operator the runtime knows to be commutative (and, for permute, to have a
/// hardware atomic for some types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KnownOp {
    Add,
    Mul,
    Min,
    Max,
}

/// Recognises `op(a, b) = a + b` (either order), `a * b`, `min a b`, `max a b`.
pub(crate) fn known_op(op: &Func) -> Option<KnownOp> {
    if op.params.len() != 2 || op.ret.len() != 1 {
        return None;
    }
    let [inst] = op.body.insts.as_slice() else { return None };
    let both = |a: Reg, b: Reg| (a, b) == (0, 1) || (a, b) == (1, 0);
    let (dst, k) = match inst {
        Inst::Binary { dst, op: BinOp::Add, a, b } if both(*a, *b) => (*dst, KnownOp::Add),
        Inst::Binary { dst, op: BinOp::Mul, a, b } if both(*a, *b) => (*dst, KnownOp::Mul),
        Inst::Call { dst, f: ScalarFn::Min, args } if args.len() == 2 && both(args[0], args[1]) => {
            (*dst, KnownOp::Min)
        }
        Inst::Call { dst, f: ScalarFn::Max, args } if args.len() == 2 && both(args[0], args[1]) => {
            (*dst, KnownOp::Max)
        }
        _ => return None,
    };
    (op.ret == [dst]).then_some(k)
}

/// The fields of an argument block, in order, with their C declarations.
#[derive(Debug, Default)]
pub(crate) struct Layout {
    fields: Vec<(Slot, String, String)>,
}

impl Layout {
    /// The field for `slot` (declared `decl name;` the first time), as `A.name`.
    fn field(&mut self, slot: Slot, decl: impl FnOnce() -> (String, String)) -> String {
        if let Some((_, _, name)) = self.fields.iter().find(|(s, _, _)| *s == slot) {
            return format!("A.{name}");
        }
        let (ty, name) = decl();
        let out = format!("A.{name}");
        self.fields.push((slot, ty, name));
        out
    }

    pub(crate) fn err(&mut self) -> String {
        self.field(Slot::ErrRecord, || ("long long*".into(), "err".into()))
    }
    pub(crate) fn kid(&mut self) -> String {
        self.field(Slot::KernelId, || ("long long".into(), "kid".into()))
    }
    pub(crate) fn extent(&mut self, k: usize) -> String {
        self.field(Slot::Extent(k), || ("long long".into(), format!("ext{k}")))
    }
    pub(crate) fn total(&mut self) -> String {
        self.field(Slot::Total, || ("long long".into(), "total".into()))
    }
    pub(crate) fn rows(&mut self) -> String {
        self.field(Slot::Rows, || ("long long".into(), "rows".into()))
    }
    pub(crate) fn chunk(&mut self) -> String {
        self.field(Slot::Chunk, || ("long long".into(), "chunk".into()))
    }
    pub(crate) fn narrow(&mut self) -> String {
        self.field(Slot::Narrow, || ("long long".into(), "narrow".into()))
    }
    pub(crate) fn blocks(&mut self) -> String {
        self.field(Slot::Blocks, || ("long long".into(), "blocks".into()))
    }
    /// Value `v`'s buffer, read-only.
    pub(crate) fn array(&mut self, plan: &Plan, v: ValueId) -> String {
        let (ty, name) = value_type_name(plan, v);
        self.field(Slot::Array(v), || (format!("const {ty}* __restrict__ /* {name} */"), format!("v{v}")))
    }
    pub(crate) fn dim(&mut self, plan: &Plan, v: ValueId, k: usize) -> String {
        let (_, name) = value_type_name(plan, v);
        self.field(Slot::Dim(v, k), || (format!("long long /* {name} dim {k} */"), format!("v{v}_d{k}")))
    }
    pub(crate) fn host_scalar(&mut self, plan: &Plan, v: ValueId) -> String {
        let (ty, name) = value_type_name(plan, v);
        let member = plan.values.get(v).map(|i| scalar_member(i.elem)).unwrap_or("i64");
        let base =
            self.field(Slot::HostScalar(v), || (format!("EqScalar /* {name}: {ty} */"), format!("s{v}")));
        format!("{base}.{member}")
    }
    pub(crate) fn out(&mut self, k: usize, ty: ElemType, name: &str) -> String {
        self.field(Slot::Out(k), || (format!("{}* __restrict__ /* {name} */", cty(ty)), format!("out{k}")))
    }
    pub(crate) fn scratch(&mut self, k: usize, ty: &str, name: &str) -> String {
        self.field(Slot::Scratch(k), || (format!("{ty}*"), name.to_string()))
    }

    /// `struct EqArgs { ... };`
    fn declaration(&self) -> String {
        let mut s = String::from("// The kernel's argument block: 8-byte fields, filled by the host in this order.\nstruct EqArgs {\n");
        for (_, ty, name) in &self.fields {
            // `T* __restrict__ /* xs */` → `T* __restrict__ v0; // xs`
            let (decl, comment) = match ty.split_once("/*") {
                Some((d, c)) => (d.trim_end().to_string(), Some(c.trim_end_matches("*/").trim().to_string())),
                None => (ty.clone(), None),
            };
            let _ = match comment {
                Some(c) => writeln!(s, "  {decl} {name};  // {c}"),
                None => writeln!(s, "  {decl} {name};"),
            };
        }
        s.push_str("};\n");
        s
    }

    fn slots(&self) -> Vec<Slot> {
        self.fields.iter().map(|(s, _, _)| *s).collect()
    }
}

/// C type and name of value `v` (for declarations and comments).
fn value_type_name(plan: &Plan, v: ValueId) -> (&'static str, String) {
    match plan.values.get(v) {
        Some(info) => (cty(info.elem), info.name.replace("*/", "* /")),
        None => ("long long", format!("v{v}")),
    }
}

/// The kernel's file name: `k<index>_<kind>.cu`.
pub(crate) fn file_name(index: usize, kernel: &Kernel) -> String {
    let kind: String =
        kernel.kind.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    format!("k{index}_{kind}.cu")
}

/// Generates kernel number `index` of `plan` (numbered as [`Plan::kernels`] lists them).
/// `Err` says why the plan is malformed.
pub(crate) fn generate(
    plan: &Plan,
    kernel: &Kernel,
    index: usize,
    opts: GenOptions,
    host: &HashSet<ValueId>,
) -> Result<KernelCode, String> {
    let mut g = skeleton::Gen::new(plan, kernel, index, opts, host)?;
    let skel = g.build()?;
    let (layout, funcs, kernels, scratch) = g.finish();
    let mut src = String::new();
    let _ = writeln!(src, "// eqfuse: kernel k{index}, {}", describe(plan, kernel));
    let _ = writeln!(src, "// generated CUDA C; compiled by NVRTC on its own (no #include).");
    let _ = writeln!(src, "#define EQ_BLOCK {}", opts.block);
    if opts.fast_math {
        src.push_str("#define EQ_FAST_MATH 1\n");
    }
    src.push_str(prelude::PRELUDE);
    src.push('\n');
    src.push_str(&layout.declaration());
    src.push('\n');
    src.push_str(&funcs);
    src.push_str(&kernels);
    Ok(KernelCode {
        file: file_name(index, kernel),
        source: src,
        skeleton: skel,
        slots: layout.slots(),
        scratch,
    })
}

/// `reduce over [n] -> dot` for the file's header.
fn describe(plan: &Plan, k: &Kernel) -> String {
    let name = |v: ValueId| plan.values.get(v).map(|i| i.name.clone()).unwrap_or_else(|| format!("v{v}"));
    let space: Vec<String> = k
        .space
        .iter()
        .map(|a| match a {
            eqfuse_ir::plan::Arg::Const(c) => c.to_string(),
            eqfuse_ir::plan::Arg::Value(v) => name(*v),
        })
        .collect();
    let lanes: Vec<String> = k
        .lanes
        .iter()
        .map(|l| {
            let what = match &l.op {
                LaneOp::Generate => "generate",
                LaneOp::Reduce { .. } => "reduce",
                LaneOp::Scan { exclusive: false, .. } => "scan",
                LaneOp::Scan { exclusive: true, .. } => "scan_exclusive",
                LaneOp::Filter { .. } => "filter",
                LaneOp::Permute { .. } => "permute",
            };
            format!("{} ({what})", name(l.dst))
        })
        .collect();
    let text = format!("{} over [{}] -> {}", k.kind, space.join(", "), lanes.join(", "));
    text.replace(['\n', '\r'], " ")
}

/// A file that does not compile, saying why the kernel could not be generated.
pub(crate) fn error_source(index: usize, why: &str) -> String {
    let why = why.replace(['\n', '\r', '"'], " ");
    format!("// eqfuse: kernel k{index} could not be generated\n#error \"eqfuse: {why}\"\n")
}
