//! # eqfuse-codegen
//!
//! C source for plans: the one scalar emitter ([`scalar`]) that turns a plan's element
//! functions into straight-line C, shared by the two targets, and the skeletons around it:
//!
//! - [`cuda`]: one self-contained CUDA C file per kernel, compiled by NVRTC (the CUDA
//!   executor, `eqfuse-exec-cuda`);
//! - [`c`]: one C translation unit per plan, compiled by the system C compiler and run on
//!   CPU threads (the CPU executor, `eqfuse-exec-cpu`).
//!
//! The two targets differ in their skeletons (grid-stride loops and block reductions on
//! the GPU, chunk functions over `[lo, hi)` on the CPU) and in a few spellings ([`Dialect`]),
//! never in the scalar code: every CPU test of generated code exercises the element
//! functions the GPU runs.
//!
//! This crate writes text; it runs nothing and needs no compiler. It also holds the code
//! caches' shared policy ([`cache`]): the private directories and checked entries through
//! which both executors (and the tests' CUDA emulator) keep and load compiled code.

pub mod c;
pub mod cache;
pub mod cuda;
mod flat;
pub mod layout;
pub mod prelude;
pub mod prelude_ints;
pub mod scalar;
pub mod site;

pub use layout::{Layout, Slot};

use eqfuse_ir::plan::{Func, Kernel, Origin, Plan, Step, ValueId};
use eqfuse_ir::types::ElemType;
use std::collections::HashSet;

/// The target language of generated code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// CUDA C++ for NVRTC: `__device__` functions, the argument block by value.
    Cuda,
    /// C11 for the system C compiler: `static inline` functions, the argument block by
    /// pointer; an error sets a flag and the element's computation goes on without reading
    /// out of bounds or dividing by zero (the chunk is then rerun by the interpreter for the
    /// exact message).
    C,
}

/// The 0-d values of a plan that are known on the host before any kernel reads them:
/// scalar inputs, sizes and host scalar steps. They are passed to kernels by value; every
/// other value is read through a device pointer.
pub fn host_known(plan: &Plan) -> HashSet<ValueId> {
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
                // a `for` loop's counter is written on the host before every iteration
                Step::Loop(l) => {
                    if let eqfuse_ir::plan::LoopKind::For { counter, .. } = &l.form {
                        out.insert(*counter);
                    }
                    for steps in l.step_lists() {
                        walk(steps, out);
                    }
                }
                Step::Kernel(_) | Step::RowBlock { .. } | Step::SegmentBlock { .. } | Step::Assert { .. } => {
                }
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
pub fn cty(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "bool",
        ElemType::I32 => "int",
        ElemType::I64 => "long long",
        ElemType::I8 => "int8_t",
        ElemType::I16 => "int16_t",
        ElemType::U8 => "uint8_t",
        ElemType::U16 => "uint16_t",
        ElemType::U32 => "uint32_t",
        ElemType::U64 => "uint64_t",
        ElemType::F32 => "float",
        ElemType::F64 => "double",
    }
}

/// The suffix of the prelude's per-type helpers (`eq_min_f32`, ...).
pub fn suffix(t: ElemType) -> &'static str {
    t.name()
}

/// The member of `EqScalar` holding a value of type `t`.
pub fn scalar_member(t: ElemType) -> &'static str {
    match t {
        ElemType::Bool => "b",
        ElemType::I32 => "i32",
        ElemType::I64 => "i64",
        ElemType::I8 => "i8",
        ElemType::I16 => "i16",
        ElemType::U8 => "u8",
        ElemType::U16 => "u16",
        ElemType::U32 => "u32",
        ElemType::U64 => "u64",
        ElemType::F32 => "f32",
        ElemType::F64 => "f64",
    }
}

/// The operators the runtime knows to be commutative (recognised in the plan: the
/// contraction pass uses the same recogniser).
pub use eqfuse_ir::plan::{known_op, KnownOp};

/// `reduce over [n] -> dot` for the file's header.
pub fn describe(plan: &Plan, k: &Kernel) -> String {
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
            let what = l.op.name();
            format!("{} ({what})", name(l.dst))
        })
        .collect();
    let text = format!("{} over [{}] -> {}", k.kind, space.join(", "), lanes.join(", "));
    text.replace(['\n', '\r'], " ")
}

/// Checks that kernel `index` is well formed for code generation (a space, lanes, one `i64`
/// parameter per dimension, one result per lane of its lane's type) and returns the lanes'
/// element types.
pub fn lane_types(plan: &Plan, k: &Kernel, index: usize) -> Result<Vec<ElemType>, String> {
    if k.space.is_empty() {
        return Err(format!("kernel k{index} has an empty space"));
    }
    if k.lanes.is_empty() {
        return Err(format!("kernel k{index} has no lanes"));
    }
    if k.elem.ret.len() != k.lanes.len() {
        return Err(format!(
            "kernel k{index}: an element function of {} results for {} lanes",
            k.elem.ret.len(),
            k.lanes.len()
        ));
    }
    if k.elem.params.len() != k.space.len() || k.elem.params.iter().any(|t| *t != ElemType::I64) {
        return Err(format!(
            "kernel k{index}: the element function's parameters are not one i64 per dimension of the space"
        ));
    }
    let mut types = Vec::new();
    for (lane, &r) in k.lanes.iter().zip(&k.elem.ret) {
        let t = plan.values.get(lane.dst).map(|i| i.elem).ok_or_else(|| format!("no value v{}", lane.dst))?;
        let rt = k.elem.reg_types.get(r as usize).copied();
        if rt != Some(t) {
            return Err(format!(
                "kernel k{index}: lane `{}` is {t} but its element is not",
                value_name(plan, lane.dst)
            ));
        }
        types.push(t);
    }
    Ok(types)
}

/// Value `v`'s name, for comments and messages.
pub fn value_name(plan: &Plan, v: ValueId) -> String {
    plan.values.get(v).map(|i| i.name.clone()).unwrap_or_else(|| format!("v{v}"))
}

/// Checks a reduction's operator (`ty -> ty -> ty`) and neutral element (a `ty` constant
/// function).
pub fn check_op(op: &Func, ne: &Func, ty: ElemType) -> Result<(), String> {
    if op.params != [ty, ty] || op.ret.len() != 1 || op.reg_types.get(op.ret[0] as usize) != Some(&ty) {
        return Err(format!("an operator that is not {ty} -> {ty} -> {ty}"));
    }
    if !ne.params.is_empty() || ne.ret.len() != 1 || ne.reg_types.get(ne.ret[0] as usize) != Some(&ty) {
        return Err(format!("a neutral element that is not a {ty} constant function"));
    }
    Ok(())
}

/// Checks a reduction over a group of component types `tys` (`w = tys.len()`): `op` takes
/// the accumulator's `w` components then the element's and returns `w` of those types,
/// `ne` takes nothing and returns `w`.
pub fn check_group_op(op: &Func, ne: &Func, tys: &[ElemType]) -> Result<(), String> {
    let ret_types = |f: &Func| -> Vec<Option<ElemType>> {
        f.ret.iter().map(|&r| f.reg_types.get(r as usize).copied()).collect()
    };
    let want: Vec<Option<ElemType>> = tys.iter().map(|&t| Some(t)).collect();
    let params: Vec<ElemType> = tys.iter().chain(tys).copied().collect();
    if op.params != params || ret_types(op) != want {
        return Err(format!("an operator over a group that is not {tys:?} -> {tys:?} -> {tys:?}"));
    }
    if !ne.params.is_empty() || ret_types(ne) != want {
        return Err(format!("a neutral element that is not a {tys:?} constant function"));
    }
    Ok(())
}

/// The C expressions of a permute destination's extents: an array's dimensions, or a
/// fill's extents (constants, host scalars). Both targets' permute skeletons check
/// targets against these.
pub(crate) fn dest_dims(
    layout: &mut Layout,
    plan: &Plan,
    dest: &eqfuse_ir::plan::PermuteDest,
) -> Vec<String> {
    match dest {
        eqfuse_ir::plan::PermuteDest::Array(v) => {
            let drank = plan.values.get(*v).map_or(0, |i| i.rank);
            (0..drank).map(|d| layout.dim(plan, *v, d)).collect()
        }
        eqfuse_ir::plan::PermuteDest::Fill { shape, .. } => shape
            .iter()
            .map(|a| match a {
                eqfuse_ir::plan::Arg::Const(c) => format!("{c}LL"),
                eqfuse_ir::plan::Arg::Value(v) => layout.host_scalar(plan, *v),
            })
            .collect(),
    }
}
