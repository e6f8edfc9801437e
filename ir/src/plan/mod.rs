//! `Plan`: what the executors run — kernels over index spaces, the buffers between them,
//! and the host scalar steps that size them.
//!
//! The optimiser lowers an extracted term to a `Plan` (`eqfuse_lower::lower`); the CPU and
//! CUDA executors and the plan interpreter ([`eval`]) consume it, and never see the
//! e-graph; all three run the host steps through one step walker ([`exec::run_steps`]),
//! which names each kernel by its [`KernelId`]. A plan is a list of [`Step`]s in dependency
//! order:
//!
//! - [`Step::Scalar`]: a host scalar computed once (`m = t0 / f64 n`, a dimension
//!   `n - 1`);
//! - [`Step::Kernel`]: a pass over an index space ([`Kernel::space`]) that writes one or
//!   more results ([`Lane`]s: several results of one pass are a multi-output kernel);
//! - [`Step::RowBlock`]: kernels over the same rows run as one pass over blocks of rows;
//! - [`Step::Assert`]: a shape check made at run time (`E-SHAPE` when it fails);
//! - [`Step::If`]: the program's lazy `if` over arrays: two lists of steps, one runs;
//! - [`Step::Loop`]: a loop over arrays (`loop ... for` / `while`): a body of steps run
//!   again and again over the loop's state ([`LoopStep`]).
//!
//! Every value a plan names — program inputs, size names, host scalars, kernel results — is
//! a [`ValueId`] into [`Plan::values`]. A scalar is a 0-d value.
//!
//! Element functions are [`Func`]s: straight-line code over registers, with nested
//! [`Block`]s for the lazy forms (`if`, `&&`, `||`) and for loops (`iterate`). A register is
//! assigned once per evaluation of its block; a subterm used twice in one element function
//! is computed once (it is one register).
//!
//! ```text
//! -- dotp, fused:
//! k0 reduce over [n] -> dot
//!   elem(r0) { r1 = xs[r0]; r2 = ys[r0]; r3 = r1 * r2 } -> r3
//!   dot: f32 = reduce r3
//!     op(r0, r1) { r2 = r0 + r1 } -> r2
//!     ne() { r0 = 0.0f32 } -> r0
//! ```
//!
//! A multi-output kernel has one element function with a result per lane:
//!
//! ```text
//! -- blackscholes: d1 and d2 computed once per point for both prices
//! k0 generate over [n] -> call, put
//!   elem(i0) = ...; r20 = ...call...; r31 = ...put... -> (r20, r31)
//! ```

mod assert;
mod balance;
mod collapse;
pub mod contract;
pub mod dot;
mod edges;
pub mod eval;
pub mod exec;
#[cfg(any(test, feature = "testgen"))]
pub mod fixtures;
mod known;
mod lanes;
mod loops;
pub mod print;
pub mod remap;
mod uniform;
pub use uniform::{UNIFORM_IF_LIMIT, UNIFORM_IF_MAX_INSTS};

pub use crate::interp::named_shape;
pub use assert::assert_error;
pub use balance::balanced_bounds;
pub use edges::EdgeSplit;
pub use exec::KernelId;
pub use known::{known_op, KnownOp};
pub use loops::{LoopKind, LoopStep};

use crate::ast::{BinOp, UnOp};
use crate::error::Span;
use crate::interp::scalar::ScalarFn;
use crate::types::ElemType;
use crate::value::Scalar;

/// A value of the plan: an index into [`Plan::values`].
pub type ValueId = usize;

/// A register of a [`Func`].
pub type Reg = u32;

/// A whole plan.
///
/// Plans are made by the optimiser (`eqfuse::optimize(..)?.result.plan`, or
/// `eqfuse_optimize::optimize(..)?.plan`), printed by `eqfuse explain`, and run by the plan
/// interpreter ([`eval::eval`]), the CPU executor (`eqfuse_exec_cpu::run`) and the CUDA
/// executor (`eqfuse_exec_cuda::run`). One written by hand, `out[i] = xs[i] * 2.0` over
/// `[n]`:
///
/// ```
/// use eqfuse_ir::ast::BinOp;
/// use eqfuse_ir::plan::{Arg, Block, Func, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Plan, Step, ValueInfo};
/// use eqfuse_ir::types::ElemType;
/// use eqfuse_ir::value::{Scalar, Value};
///
/// let v = |name: &str, rank, origin, elem| ValueInfo { name: name.into(), elem, rank, origin, span: None };
/// let plan = Plan {
///     values: vec![
///         v("xs", 1, Origin::Input, ElemType::F64),   // value 0
///         v("n", 0, Origin::Size, ElemType::I64),     // value 1
///         v("out", 1, Origin::Computed, ElemType::F64), // value 2
///     ],
///     steps: vec![Step::Kernel(Kernel {
///         kind: KernelKind::Map,
///         space: vec![Arg::Value(1)],                  // over [n]
///         elem: Func {
///             params: vec![ElemType::I64],             // r0: the index
///             reg_types: vec![ElemType::I64, ElemType::F64, ElemType::F64, ElemType::F64],
///             body: Block { insts: vec![
///                 Inst::Read { dst: 1, array: 0, index: vec![0] },   // r1 = xs[r0]
///                 Inst::Const { dst: 2, value: Scalar::F64(2.0) },   // r2 = 2.0
///                 Inst::Binary { dst: 3, op: BinOp::Mul, a: 1, b: 2 }, // r3 = r1 * r2
///             ] },
///             ret: vec![3],
///             spans: vec![],                            // no source positions
///         },
///         lanes: vec![Lane { dst: 2, op: LaneOp::Generate }],  // out[r0] = r3
///         span: None,
///         contraction: None,                         // not a matrix product
///         view_of: None,                             // not a reshape
///     })],
///     outputs: vec![("out".into(), 2)],
/// };
/// assert!(plan.to_string().contains("r3 = r1 * r2"));
///
/// let mut inputs = indexmap::IndexMap::new();
/// inputs.insert("xs".to_string(), Value::F64(ndarray::arr1(&[1.0, 2.5]).into_dyn()));
/// let mut sizes = indexmap::IndexMap::new();
/// sizes.insert("n".to_string(), 2);
/// let out = eqfuse_ir::plan::eval::eval(&plan, &inputs, &sizes)?;
/// assert_eq!(out["out"], Value::F64(ndarray::arr1(&[2.0, 5.0]).into_dyn()));
/// # Ok::<(), eqfuse_ir::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Every value the plan names.
    pub values: Vec<ValueInfo>,
    /// The steps, in an order that respects their dependencies.
    pub steps: Vec<Step>,
    /// The program's outputs in order: name and value.
    pub outputs: Vec<(String, ValueId)>,
}

/// What a value is.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueInfo {
    /// Its name: the input, size, `let` or output name it stands for, else `t<k>`.
    pub name: String,
    /// Element type (a size is `i64`).
    pub elem: ElemType,
    /// Rank (0: a scalar).
    pub rank: usize,
    /// Where it comes from.
    pub origin: Origin,
    /// The source expression a computed value stands for, where known (`explain` names an
    /// unnamed intermediate after it).
    pub span: Option<Span>,
}

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A program input, by its name.
    Input,
    /// A size name, bound from the inputs' shapes.
    Size,
    /// Computed by a step of the plan.
    Computed,
}

/// One step of a plan.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// `dst = body()`, evaluated once on the host (`body` has no parameters).
    Scalar {
        /// The 0-d value written.
        dst: ValueId,
        /// The computation.
        body: Func,
    },
    /// A pass over an index space.
    Kernel(Kernel),
    /// Kernels run as one pass over blocks of rows (row-block fusion): consecutive kernels
    /// over the same outer dimensions (all but the innermost; or, for one outer dimension,
    /// exactly it), each reading what an earlier one wrote only on its own row (the
    /// optimiser's `rowblock` pass says exactly what may join). Running them one after the
    /// other, as kernels of their own, is the same; an executor that can runs every kernel
    /// over a block of rows before the next block, so the rows cross main memory once.
    RowBlock {
        /// The phases, in order.
        kernels: Vec<Kernel>,
        /// Results of the phases that only later phases of this block read, each on its
        /// own row (`e[i, j]` of a softmax): an executor that runs block by block may keep
        /// them for the block's rows only, in a buffer the size of a block, and never write
        /// them to memory. They are not in the plan's values after the block (no step
        /// after it, no output, no `if` branch's value reads them).
        local: Vec<ValueId>,
    },
    /// A kernel of two passes over a whole 1-d space (a scan: its segments' totals, then the
    /// scan from each segment's carry; a filter: its segments' counts, then the kept
    /// elements written at their offsets) and kernels over the same space that ride along
    /// its passes. Running them one after the other, as kernels of their own, is the same;
    /// an executor that can runs them segment by segment:
    ///
    /// - a **scan block**: after the scan, kernels that read its result only at their own
    ///   point (a stream compaction's exclusive scan of flags and the permute that reads
    ///   `pos[i]`: scan–scatter fusion) run over each segment right after the scan does, so
    ///   the scan's result never crosses main memory;
    /// - a **filter block**: after the filter, kernels that read nothing it makes (its
    ///   sibling reductions of the same input) run over each segment in the filter's
    ///   counting pass, while the segment is in cache.
    ///
    /// The optimiser's `segblock` pass says exactly what may join.
    SegmentBlock {
        /// The phases: the scan or the filter (one lane, a 1-d space) first.
        kernels: Vec<Kernel>,
        /// Results of the phases that only later phases of this block read, each at its
        /// own point (the scan's `pos`): an executor that runs segment by segment may keep
        /// them for the segment only, in a buffer the size of a segment. They are not in
        /// the plan's values after the block.
        local: Vec<ValueId>,
    },
    /// `dst = if cond then (then_steps; then_value) else (else_steps; else_value)`: an `if`
    /// of the program whose branches compute arrays (or run kernels) — only the taken
    /// branch's steps run, as the language's lazy `if` requires.
    If {
        /// A `bool` 0-d value.
        cond: ValueId,
        /// Run when `cond` holds.
        then_steps: Vec<Step>,
        /// The result of `then_steps`.
        then_value: ValueId,
        /// Run otherwise.
        else_steps: Vec<Step>,
        /// The result of `else_steps`.
        else_value: ValueId,
        /// Written: the taken branch's result.
        dst: ValueId,
    },
    /// A loop over arrays (`loop ... for` / `while`): its body, a list of steps optimised as
    /// a program of its own, runs once per iteration over the state ([`LoopStep`]).
    Loop(Box<LoopStep>),
    /// A run-time check (`map` over arrays whose shapes are not known to be equal, a
    /// `reshape` whose element counts are not, a `slice` not known to be in range): `cond`
    /// (no parameters, a `bool` result) must hold, else the run fails with `code` and
    /// `message`, its placeholders filled in ([`assert_error`]).
    Assert {
        /// The condition.
        cond: Func,
        /// The error's code (`E-SHAPE` for shapes that disagree, `E-INDEX` for a slice out
        /// of range).
        code: crate::error::Code,
        /// What is wrong, for the error (names the operation and the arrays). `{k}` stands
        /// for the extents `shown[k]` as a shape (`[10, 3]`), `{k#}` for their product and
        /// `{k!}` for them without brackets (`10, 3`; one extent: a number).
        message: String,
        /// The extents the message shows, evaluated when the check fails.
        shown: Vec<Vec<Arg>>,
        /// Where in the program text the checked operation is.
        span: Option<Span>,
    },
}

/// An extent: a constant, or a host scalar (an `i64` value) known before the kernel runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// A constant.
    Const(i64),
    /// An `i64` 0-d value.
    Value(ValueId),
}

/// What a kernel does, as `explain` names it (the strings of [`KernelKind::as_str`], which
/// `explain --json` and messages use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// One element per point of the space from the inputs' elements at that point.
    Map,
    /// One element per point from an index function (`generate`, `iota`, `fill`, and
    /// multi-output passes that do not reduce).
    Generate,
    /// A reduction of the innermost dimension (a multi-output pass that reduces too).
    Reduce,
    /// An inclusive or exclusive scan.
    Scan,
    /// A `filter`: the elements that pass, in order.
    Filter,
    /// A `permute`: elements combined into their targets.
    Permute,
    /// Reads at computed positions: `gather`, `backpermute`, `transpose`, `reverse`,
    /// `slice`, `concat`.
    Gather,
    /// A copy of whole elements (`reshape`, a materialised value).
    Copy,
    /// A matrix product, run as a GEMM call where the executor has one
    /// ([`contract::Contraction`]).
    Contract,
}

impl KernelKind {
    /// Every kind.
    pub const ALL: [KernelKind; 9] = [
        KernelKind::Map,
        KernelKind::Generate,
        KernelKind::Reduce,
        KernelKind::Scan,
        KernelKind::Filter,
        KernelKind::Permute,
        KernelKind::Gather,
        KernelKind::Copy,
        KernelKind::Contract,
    ];

    /// The kind named `name` (as [`KernelKind::as_str`] writes it).
    ///
    /// ```
    /// use eqfuse_ir::plan::KernelKind;
    /// for k in KernelKind::ALL {
    ///     assert_eq!(KernelKind::from_name(k.as_str()), Some(k));
    /// }
    /// assert_eq!(KernelKind::from_name("fold"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<KernelKind> {
        KernelKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Its name in `explain` and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            KernelKind::Map => "map",
            KernelKind::Generate => "generate",
            KernelKind::Reduce => "reduce",
            KernelKind::Scan => "scan",
            KernelKind::Filter => "filter",
            KernelKind::Permute => "permute",
            KernelKind::Gather => "gather",
            KernelKind::Copy => "copy",
            KernelKind::Contract => "contract",
        }
    }
}

impl std::fmt::Display for KernelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for KernelKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A pass over an index space, writing one result per lane.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// What `explain` calls it.
    pub kind: KernelKind,
    /// The index space, outermost dimension first (at least one dimension).
    pub space: Vec<Arg>,
    /// The element function: one `i64` parameter per dimension of the space (outermost
    /// first), and one result per lane (`elem.ret[k]` is lane `k`'s element). The lanes of a
    /// multi-output kernel share it, so what they have in common is computed once.
    pub elem: Func,
    /// The results computed in this pass (more than one: a multi-output kernel). Every lane
    /// of a kernel with several lanes is a `Generate`, a `Reduce` or a [`LaneOp::Part`] of a
    /// reduction over a group; a scan over a group is the only other kernel of several lanes
    /// (its head lane and its parts).
    pub lanes: Vec<Lane>,
    /// Where in the program text the operation the kernel computes is: the position of its
    /// own errors (a negative size, a permute target out of bounds), and of an element's
    /// error whose instruction has none.
    pub span: Option<Span>,
    /// Set when the kernel is a matrix product ([`contract::Contraction::of`]): an executor
    /// with a GEMM library may run it as library calls; `elem` and `lanes` remain its
    /// definition, which every other executor runs.
    pub contraction: Option<contract::Contraction>,
    /// Set to `v` when the kernel is a `reshape` of the materialised value `v`: its one
    /// [`LaneOp::Generate`] lane holds `v`'s elements in `v`'s row-major order, in the shape
    /// of the space. An executor whose buffers can be shared may give the result `v`'s
    /// storage instead of copying it (a view) once the space's extents are known to count
    /// `v`'s elements; `elem` and `lanes` remain its definition, which every other executor
    /// runs (and which reports a shape that cannot hold them).
    pub view_of: Option<ValueId>,
}

/// One result of a kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// The value written.
    pub dst: ValueId,
    /// What is done with the elements (this lane's result of [`Kernel::elem`]).
    pub op: LaneOp,
}

/// What a lane does with the elements `elem(ix)` of its kernel's space.
#[derive(Clone, Debug, PartialEq)]
pub enum LaneOp {
    /// `dst[ix] = elem(ix)`: `dst` has the space's shape.
    Generate,
    /// `dst[outer] = ne op e(outer, 0) op ... op e(outer, last)`: the innermost dimension
    /// is reduced (`dst` has rank `space.len() - 1`; a scalar for a 1-d space).
    ///
    /// **Over a group** (version 2's `reduce` over `(a, b, ..)`, `argmin`): when `op` has
    /// `w > 1` results the lane is the head of `w` lanes that fold together: `op` takes `2w`
    /// parameters (the accumulator's `w` components, then the element's `w`) and returns `w`,
    /// `ne` returns `w`; the element is `elem.ret[h .. h + w]` (`h` this lane's index), and the
    /// next `w - 1` lanes of the kernel are [`LaneOp::Part`]s receiving components `1 .. w`
    /// of the result (this lane's `dst` receives component 0). The group's components are
    /// separate arrays and separate registers: a tuple never reaches memory as a struct.
    Reduce {
        /// The associative operator: two parameters, one result (`2w` and `w` over a group).
        op: Func,
        /// The neutral element: no parameters.
        ne: Func,
    },
    /// An inclusive (`exclusive: false`) or exclusive scan along the innermost dimension
    /// (over a group as [`LaneOp::Reduce`] is: `op` with `w > 1` results heads `w` lanes).
    Scan {
        /// The associative operator.
        op: Func,
        /// The neutral element.
        ne: Func,
        /// `scan_exclusive`.
        exclusive: bool,
    },
    /// Component `j` of the group reduction or scan `j` lanes before it
    /// ([`LaneOp::Reduce`]): `dst` receives that component of the result. Its element is
    /// `elem.ret` at its own index, which the head lane's operator folds.
    Part,
    /// 1-d space only: `dst` holds the elements for which `pred(elem(i))` holds, in order.
    Filter {
        /// The predicate: one parameter (the element), a `bool` result.
        pred: Func,
    },
    /// `dst` starts as a copy of `dest`; for every `ix` with `t = target(ix)`: when `t` is
    /// `-1` (a rank-1 `dest`) the element is dropped, else `dst[t] = op(dst[t], elem(ix))`.
    Permute {
        /// The associative and commutative operator.
        op: Func,
        /// What the result starts as: a copy of an array, or a constant fill.
        dest: PermuteDest,
        /// The target: one `i64` parameter per dimension of the space, one `i64` result per
        /// dimension of `dest`.
        target: Func,
    },
}

/// What a permute's result starts as ([`LaneOp::Permute`]).
#[derive(Clone, Debug, PartialEq)]
pub enum PermuteDest {
    /// A copy of this array.
    Array(ValueId),
    /// `fill shape value` with a constant `value` (of the lane's element type), made by the
    /// permute itself: lowering gives a constant `fill` that only a permute reads no kernel
    /// of its own, so the destination costs no pass and no copy (a stream compaction's
    /// `permute (\a b -> b) (fill [total] 0.0) ..` is one kernel, not two).
    Fill {
        /// The extents (at least one).
        shape: Vec<Arg>,
        /// Every element.
        value: Scalar,
        /// Where the `fill` is in the program text: the position of its shape's errors.
        span: Option<Span>,
    },
}

impl PermuteDest {
    /// The destination's rank (`None`: an array the plan does not have).
    pub fn rank(&self, plan: &Plan) -> Option<usize> {
        match self {
            PermuteDest::Array(v) => plan.values.get(*v).map(|i| i.rank),
            PermuteDest::Fill { shape, .. } => Some(shape.len()),
        }
    }

    /// The values it reads: the array, or the fill's extents that are host values.
    pub fn reads(&self) -> Vec<ValueId> {
        match self {
            PermuteDest::Array(v) => vec![*v],
            PermuteDest::Fill { shape, .. } => shape
                .iter()
                .filter_map(|a| match a {
                    Arg::Value(v) => Some(*v),
                    Arg::Const(_) => None,
                })
                .collect(),
        }
    }

    /// The shape and element count of a [`PermuteDest::Fill`] of extents `shape` at `span`,
    /// read as a kernel reads its space ([`Kernel::shape`]), so that every executor fails
    /// alike (a negative extent is `E-SHAPE` at the fill, naming `fill` as the reference
    /// interpreter does).
    pub fn fill_shape(
        shape: &[Arg],
        span: Option<Span>,
        load: impl FnMut(ValueId) -> crate::error::Result<Scalar>,
        name: impl Fn(ValueId) -> String,
    ) -> crate::error::Result<(Vec<usize>, usize)> {
        extents_shape("fill", shape, span, load, name)
    }
}

/// A scalar function as straight-line code.
///
/// Registers `0 .. params.len()` hold the parameters; every other register is assigned by
/// exactly one instruction. `ret` are the result registers (one, or one per component of a
/// tuple result).
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    /// Parameter types, in order (register `k` is parameter `k`).
    pub params: Vec<ElemType>,
    /// The element type of every register (`reg_types.len()` registers).
    pub reg_types: Vec<ElemType>,
    /// The code.
    pub body: Block,
    /// The result registers.
    pub ret: Vec<Reg>,
    /// Where in the program text the instructions that can fail come from (a read, a `size`,
    /// an integer division), by the register they write: run-time errors point there, as
    /// the reference interpreter's do. Registers with no entry have no known position.
    pub spans: Vec<(Reg, Span)>,
}

impl Func {
    /// The source position of the instruction writing register `r`, when known.
    pub fn span_of(&self, r: Reg) -> Option<Span> {
        self.spans.iter().find(|(x, _)| *x == r).map(|(_, s)| *s)
    }
}

/// A sequence of instructions, run in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Block {
    /// The instructions.
    pub insts: Vec<Inst>,
}

/// One instruction. `dst` registers are written, the others read.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    /// `dst = value`.
    Const {
        /// Written.
        dst: Reg,
        /// The constant.
        value: Scalar,
    },
    /// `dst = op a` (`-a`, `!a`).
    Unary {
        /// Written.
        dst: Reg,
        /// The operator.
        op: UnOp,
        /// Operand.
        a: Reg,
    },
    /// `dst = a op b`, for every operator but `&&` and `||` (which are [`Inst::If`]s: their
    /// right operand is lazy). Integer `/` and `%` by zero are `E-DIV-ZERO`.
    Binary {
        /// Written.
        dst: Reg,
        /// The operator.
        op: BinOp,
        /// Left operand.
        a: Reg,
        /// Right operand.
        b: Reg,
    },
    /// `dst = f(args)`: a scalar builtin (`exp`, `min`, `clamp`, conversions, ...).
    Call {
        /// Written.
        dst: Reg,
        /// The builtin.
        f: ScalarFn,
        /// Arguments.
        args: Vec<Reg>,
    },
    /// `dst = array[index..]`, one `i64` index per dimension; out of bounds is `E-INDEX`
    /// naming the array.
    Read {
        /// Written.
        dst: Reg,
        /// The array read.
        array: ValueId,
        /// The indices.
        index: Vec<Reg>,
    },
    /// `dst = size array axis` (`length a` is axis 0); an axis out of range is `E-INDEX`.
    Dim {
        /// Written.
        dst: Reg,
        /// The array.
        array: ValueId,
        /// The axis (an `i64` register).
        axis: Reg,
    },
    /// `dst = value`, a 0-d value of the plan (a scalar input, a size, a host scalar, a
    /// reduction's result).
    Load {
        /// Written.
        dst: Reg,
        /// The value.
        value: ValueId,
    },
    /// `dst = if cond then (then_block; then_ret) else (else_block; else_ret)`: only the
    /// taken block runs.
    If {
        /// Written.
        dst: Reg,
        /// A `bool` register.
        cond: Reg,
        /// Run when `cond` holds.
        then_block: Block,
        /// The result of `then_block`.
        then_ret: Reg,
        /// Run otherwise.
        else_block: Block,
        /// The result of `else_block`.
        else_ret: Reg,
    },
    /// `iterate`: `vars = inits`, then `count` times (none when `count <= 0`): run `body`,
    /// then `vars = nexts` (all at once); finally `dsts = vars`. `vars` are registers the
    /// body reads; the loop state may be a tuple of scalars.
    Loop {
        /// Written at the end: the final state.
        dsts: Vec<Reg>,
        /// The iteration count (an `i64` register).
        count: Reg,
        /// The initial state.
        inits: Vec<Reg>,
        /// The state registers the body reads.
        vars: Vec<Reg>,
        /// The body.
        body: Block,
        /// The next state, computed by the body.
        nexts: Vec<Reg>,
    },
}

impl Inst {
    /// Appends every register this instruction reads to `out`, its nested blocks' included
    /// (a superset: registers a nested block defines and reads itself are listed too).
    pub fn uses(&self, out: &mut Vec<Reg>) {
        match self {
            Inst::Const { .. } | Inst::Load { .. } => {}
            Inst::Unary { a, .. } => out.push(*a),
            Inst::Binary { a, b, .. } => out.extend([*a, *b]),
            Inst::Call { args, .. } => out.extend(args.iter().copied()),
            Inst::Read { index, .. } => out.extend(index.iter().copied()),
            Inst::Dim { axis, .. } => out.push(*axis),
            Inst::If { cond, then_block, then_ret, else_block, else_ret, .. } => {
                out.extend([*cond, *then_ret, *else_ret]);
                for j in then_block.insts.iter().chain(&else_block.insts) {
                    j.uses(out);
                }
            }
            Inst::Loop { count, inits, body, nexts, .. } => {
                out.push(*count);
                out.extend(inits.iter().copied());
                out.extend(nexts.iter().copied());
                for j in &body.insts {
                    j.uses(out);
                }
            }
        }
    }

    /// Renames every register this instruction reads or writes by `f`, its nested blocks'
    /// included.
    pub fn map_regs(&mut self, f: &impl Fn(Reg) -> Reg) {
        let block = |b: &mut Block| {
            for j in &mut b.insts {
                j.map_regs(f);
            }
        };
        match self {
            Inst::Const { dst, .. } | Inst::Load { dst, .. } => *dst = f(*dst),
            Inst::Unary { dst, a, .. } => (*dst, *a) = (f(*dst), f(*a)),
            Inst::Binary { dst, a, b, .. } => (*dst, *a, *b) = (f(*dst), f(*a), f(*b)),
            Inst::Call { dst, args, .. } => {
                *dst = f(*dst);
                args.iter_mut().for_each(|r| *r = f(*r));
            }
            Inst::Read { dst, index, .. } => {
                *dst = f(*dst);
                index.iter_mut().for_each(|r| *r = f(*r));
            }
            Inst::Dim { dst, axis, .. } => (*dst, *axis) = (f(*dst), f(*axis)),
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                (*dst, *cond, *then_ret, *else_ret) = (f(*dst), f(*cond), f(*then_ret), f(*else_ret));
                block(then_block);
                block(else_block);
            }
            Inst::Loop { dsts, count, inits, vars, body, nexts } => {
                *count = f(*count);
                for r in
                    dsts.iter_mut().chain(inits.iter_mut()).chain(vars.iter_mut()).chain(nexts.iter_mut())
                {
                    *r = f(*r);
                }
                block(body);
            }
        }
    }

    /// The registers this instruction writes (nested blocks' own registers not included).
    pub fn dsts(&self) -> Vec<Reg> {
        match self {
            Inst::Const { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Call { dst, .. }
            | Inst::Read { dst, .. }
            | Inst::Dim { dst, .. }
            | Inst::Load { dst, .. }
            | Inst::If { dst, .. } => vec![*dst],
            Inst::Loop { dsts, .. } => dsts.clone(),
        }
    }
}

impl Kernel {
    /// The value a `reshape` kernel may be a view of and the value it defines, `(source,
    /// result)`: set where [`Kernel::view_of`] is and the kernel has its one
    /// [`LaneOp::Generate`] lane. An executor still checks, once the extents are known, that
    /// the space counts the source's elements and that both have one element type.
    pub fn view_lane(&self) -> Option<(ValueId, ValueId)> {
        match self.lanes.as_slice() {
            [lane] if lane.op == LaneOp::Generate => Some((self.view_of?, lane.dst)),
            _ => None,
        }
    }

    /// The space as a shape and its element count, the host scalars among its extents read
    /// with `load` (and named with `name` in errors): `E-SHAPE` for a negative extent,
    /// `E-LIMIT` when the count overflows `i64` or does not fit in memory. An empty space or
    /// an extent that is not an `i64` is an internal error of the plan. Every executor sizes
    /// its kernels with this, so they all fail alike.
    pub fn shape(
        &self,
        load: impl FnMut(ValueId) -> crate::error::Result<Scalar>,
        name: impl Fn(ValueId) -> String,
    ) -> crate::error::Result<(Vec<usize>, usize)> {
        // a reshape's errors name the operation the program wrote
        let what = if self.view_of.is_some() { "reshape" } else { self.kind.as_str() };
        extents_shape(what, &self.space, self.span, load, name)
    }

    /// The values this kernel reads: arrays read by index or by dimension, loaded scalars,
    /// permute destinations and the space's extents, without repeats, in first-use order.
    pub fn reads(&self) -> Vec<ValueId> {
        let mut out = Vec::new();
        let mut add = |v: ValueId| {
            if !out.contains(&v) {
                out.push(v);
            }
        };
        for a in &self.space {
            if let Arg::Value(v) = a {
                add(*v);
            }
        }
        let mut fs: Vec<&Func> = vec![&self.elem];
        for l in &self.lanes {
            if let LaneOp::Permute { dest, .. } = &l.op {
                dest.reads().into_iter().for_each(&mut add);
            }
            fs.extend(l.op.funcs());
        }
        for f in fs {
            f.body.visit(&mut |i| match i {
                Inst::Read { array, .. } | Inst::Dim { array, .. } => add(*array),
                Inst::Load { value, .. } => add(*value),
                _ => {}
            });
        }
        out
    }

    /// The values this kernel writes, lane by lane.
    pub fn writes(&self) -> Vec<ValueId> {
        self.lanes.iter().map(|l| l.dst).collect()
    }
}

/// [`Kernel::shape`] of a space `space` at `span`, its errors naming `kind`.
fn extents_shape(
    kind: &str,
    space: &[Arg],
    span: Option<Span>,
    mut load: impl FnMut(ValueId) -> crate::error::Result<Scalar>,
    name: impl Fn(ValueId) -> String,
) -> crate::error::Result<(Vec<usize>, usize)> {
    use crate::error::{Code, Error};
    let internal = |what: String| crate::error::internal(what);
    if space.is_empty() {
        return Err(internal(format!("`{}` kernel over an empty space", kind)));
    }
    let mut dims = Vec::with_capacity(space.len());
    for a in space {
        dims.push(match a {
            Arg::Const(c) => *c,
            Arg::Value(v) => match load(*v)? {
                Scalar::I64(n) => n,
                other => {
                    return Err(internal(format!(
                        "the extent `{}` is {}, not i64",
                        name(*v),
                        other.elem_type()
                    )))
                }
            },
        });
    }
    let shown = || format!("[{}]", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "));
    let mut shape = Vec::with_capacity(dims.len());
    let mut n: i64 = 1;
    for &d in &dims {
        let Ok(du) = usize::try_from(d) else {
            return Err(Error {
                span,
                ..Error::new(Code::Shape, format!("`{}`: negative size {d} in shape {}", kind, shown()))
            });
        };
        n = n.checked_mul(d).ok_or_else(|| {
            Error::limit(format!("`{}`: the size of shape {} overflows i64", kind, shown())).or_at(span)
        })?;
        shape.push(du);
    }
    let total = usize::try_from(n)
        .map_err(|_| Error::limit(format!("`{}`: size {n} does not fit in memory", kind)).or_at(span))?;
    Ok((shape, total))
}

impl Block {
    /// Every instruction, nested blocks included (iteratively; a block's own before those
    /// of the blocks nested in it).
    pub fn all_insts(&self) -> Vec<&Inst> {
        let mut out = Vec::new();
        let mut stack: Vec<&Block> = vec![self];
        while let Some(b) = stack.pop() {
            for i in &b.insts {
                out.push(i);
                match i {
                    Inst::If { then_block, else_block, .. } => {
                        stack.push(then_block);
                        stack.push(else_block);
                    }
                    Inst::Loop { body, .. } => stack.push(body),
                    _ => {}
                }
            }
        }
        out
    }

    /// The instruction that writes each register, nested blocks included.
    pub fn definitions(&self) -> std::collections::HashMap<Reg, &Inst> {
        self.all_insts().into_iter().flat_map(|i| i.dsts().into_iter().map(move |d| (d, i))).collect()
    }

    /// Calls `f` on every instruction, nested blocks included (iteratively).
    pub fn visit(&self, f: &mut dyn FnMut(&Inst)) {
        self.all_insts().into_iter().for_each(f);
    }

    /// Calls `f` on every instruction, nested blocks included (iteratively), each before
    /// the blocks nested in it (which `f` may have replaced).
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Inst)) {
        let mut stack: Vec<&mut Block> = vec![self];
        while let Some(b) = stack.pop() {
            for i in &mut b.insts {
                f(i);
                match i {
                    Inst::If { then_block, else_block, .. } => {
                        stack.push(then_block);
                        stack.push(else_block);
                    }
                    Inst::Loop { body, .. } => stack.push(body),
                    _ => {}
                }
            }
        }
    }
}

impl Plan {
    /// Whether the plan folds floats (a float reduction, scan or permute), whose order is
    /// free: a result computed from one may differ from the reference's by rounding, and a
    /// non-float result where that rounding crosses a comparison.
    pub fn folds_floats(&self) -> bool {
        fn folds(k: &Kernel, plan: &Plan) -> bool {
            k.lanes.iter().any(|l| {
                let float =
                    plan.values.get(l.dst).is_some_and(|v| matches!(v.elem, ElemType::F32 | ElemType::F64));
                float
                    && matches!(
                        l.op,
                        LaneOp::Reduce { .. } | LaneOp::Scan { .. } | LaneOp::Permute { .. } | LaneOp::Part
                    )
            })
        }
        fn walk(steps: &[Step], plan: &Plan) -> bool {
            steps.iter().any(|s| match s {
                Step::Kernel(k) => folds(k, plan),
                Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => {
                    kernels.iter().any(|k| folds(k, plan))
                }
                Step::If { then_steps, else_steps, .. } => walk(then_steps, plan) || walk(else_steps, plan),
                Step::Loop(l) => l.step_lists().into_iter().any(|steps| walk(steps, plan)),
                _ => false,
            })
        }
        walk(&self.steps, self)
    }

    /// Every kernel of the plan in execution order (the kernels of an `if`'s branches in
    /// place of the `if`, the `then` branch's first): kernel `i` is [`KernelId`]`(i)`.
    pub fn kernels(&self) -> Vec<&Kernel> {
        exec::kernel_steps(self)
            .into_iter()
            .flat_map(|(_, s)| match s {
                Step::Kernel(k) => std::slice::from_ref(k),
                Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => kernels.as_slice(),
                _ => &[],
            })
            .collect()
    }
}

impl Step {
    /// The values this step reads.
    pub fn reads(&self) -> Vec<ValueId> {
        match self {
            Step::Kernel(k) => k.reads(),
            Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => {
                // what the phases read from outside the block
                let inside: Vec<ValueId> = kernels.iter().flat_map(Kernel::writes).collect();
                let mut out = Vec::new();
                for r in kernels.iter().flat_map(Kernel::reads) {
                    if !inside.contains(&r) && !out.contains(&r) {
                        out.push(r);
                    }
                }
                out
            }
            Step::If { cond, then_steps, then_value, else_steps, else_value, .. } => {
                // what the branches read from outside them
                let mut out = vec![*cond];
                for (steps, v) in [(then_steps, then_value), (else_steps, else_value)] {
                    let inside: Vec<ValueId> = steps.iter().flat_map(Step::writes).collect();
                    for r in steps.iter().flat_map(Step::reads).chain([*v]) {
                        if !inside.contains(&r) && !out.contains(&r) {
                            out.push(r);
                        }
                    }
                }
                out
            }
            Step::Loop(l) => {
                // what the loop reads from outside it: its initial state, its count, and
                // what its condition and body read that neither they nor the state are
                let mut inside: Vec<ValueId> = l.state.clone();
                if let LoopKind::For { counter, .. } = &l.form {
                    inside.push(*counter);
                }
                for steps in l.step_lists() {
                    inside.extend(steps.iter().flat_map(Step::writes));
                }
                let mut out = l.init.clone();
                if let LoopKind::For { count, .. } = &l.form {
                    out.push(*count);
                }
                for steps in l.step_lists() {
                    for r in steps.iter().flat_map(Step::reads).chain(l.next.iter().copied()) {
                        if !inside.contains(&r) && !out.contains(&r) {
                            out.push(r);
                        }
                    }
                }
                out
            }
            Step::Scalar { body, .. } | Step::Assert { cond: body, .. } => {
                let mut out = Vec::new();
                body.body.visit(&mut |i| match i {
                    Inst::Read { array: v, .. }
                    | Inst::Dim { array: v, .. }
                    | Inst::Load { value: v, .. }
                        if !out.contains(v) =>
                    {
                        out.push(*v)
                    }
                    _ => {}
                });
                out
            }
        }
    }

    /// What kind of block a block step is, as `explain` names it: `row` (a row block),
    /// `scan` or `filter` (a segment block, by its first phase); `None` for any other step.
    pub fn block_kind(&self) -> Option<&'static str> {
        match self {
            Step::RowBlock { .. } => Some("row"),
            Step::SegmentBlock { kernels, .. } => {
                Some(if kernels.first().is_some_and(|k| k.kind == KernelKind::Filter) {
                    "filter"
                } else {
                    "scan"
                })
            }
            _ => None,
        }
    }

    /// The values this step writes.
    pub fn writes(&self) -> Vec<ValueId> {
        match self {
            Step::Kernel(k) => k.writes(),
            Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => {
                kernels.iter().flat_map(Kernel::writes).collect()
            }
            Step::Scalar { dst, .. } | Step::If { dst, .. } => vec![*dst],
            Step::Loop(l) => l.dst.clone(),
            Step::Assert { .. } => Vec::new(),
        }
    }
}
