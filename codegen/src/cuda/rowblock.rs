//! A row block ([`eqfuse_ir::plan::Step::RowBlock`]) as one CUDA kernel: a block of threads
//! per row, running every phase over its row before the next phase starts, so that the row
//! crosses main memory once and later phases read it (and what earlier phases made of it)
//! from the caches.
//!
//! ```text
//! for (row = blockIdx.x; row < rows; row += gridDim.x) {
//!   { phase 0: each thread folds and writes its elements j = threadIdx.x, + EQ_BLOCK, ...;
//!     block reduction; thread 0 writes the row's result }  __syncthreads();
//!   { phase 1: ... reads phase 0's results at [row] and [row, j] }  __syncthreads();
//!   { an outer phase (a map over the rows' results): thread 0 computes the row's element }
//!   ...
//! }
//! ```
//!
//! A phase's results go to their values' own buffers, whose fields are plain pointers
//! ([`Layout::set_written`]): a read of them in a later phase, behind the barrier, sees the
//! write (a `const __restrict__` read could go through the non-coherent cache). What only
//! later phases read (softmax's `exp (m - mx)`: the step's `local`) is kept in shared
//! memory instead when a row of it fits ([`kept`]), so it never reaches memory.
//!
//! Only what needs no error record joins: every read is proven in bounds
//! ([`GenOptions::unchecked`], checked by the host before the launch) and no instruction can
//! fail. Otherwise ([`generate`] gives `None`) the runtime runs the phases one by one, as
//! kernels of their own, which also report a failing element exactly. Phases are row phases
//! (generate and reduce lanes over `outer ++ [inner]`) or, with one outer dimension, outer
//! phases (generate lanes over the rows).

use super::skeleton::{common_fields, kernel_head, row_loop, unflatten, Gen};
use super::{GenOptions, KernelCode, Skeleton};
use crate::{cty, Dialect, Layout};
use eqfuse_ir::plan::{Kernel, LaneOp, Plan, ValueId};
use eqfuse_ir::types::ElemType;
use std::collections::HashSet;
use std::fmt::Write as _;

/// Appends a formatted line to a `String` (writing to a `String` cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = writeln!($dst, $($arg)*);
    }};
}

/// Bytes of shared memory a block keeps its row of the block's kept results in
/// ([`kept`]); rows of more go to the results' own buffers.
pub const KEPT_BYTES: usize = 32 << 10;

/// The results of the row block that only its later phases read, each on its own row
/// (`local` of [`eqfuse_ir::plan::Step::RowBlock`], generate lanes of row phases), widest
/// element first: a block keeps its row of them in shared memory, one after the other,
/// when a row of all of them fits in [`KEPT_BYTES`] ([`kept_fit`]), so they never reach
/// memory. The runtime then gives them no buffer of their own.
pub fn kept(plan: &Plan, kernels: &[Kernel], local: &[ValueId]) -> Vec<(ValueId, ElemType)> {
    let rank = kernels.first().map_or(0, |k| k.space.len());
    let mut out: Vec<(ValueId, ElemType)> = kernels
        .iter()
        .filter(|k| k.space.len() == rank)
        .flat_map(|k| &k.lanes)
        .filter(|l| matches!(l.op, LaneOp::Generate) && local.contains(&l.dst))
        .filter_map(|l| plan.values.get(l.dst).map(|v| (l.dst, v.elem)))
        .collect();
    // widest first, so that each starts aligned after the ones before
    out.sort_by_key(|(v, t)| (std::cmp::Reverse(t.size_bytes()), *v));
    out
}

/// Whether rows of `len` elements of every kept result fit in [`KEPT_BYTES`].
pub fn kept_fit(kept: &[(ValueId, ElemType)], len: usize) -> bool {
    let per = kept_width(kept);
    per > 0 && len.checked_mul(per).is_some_and(|b| b <= KEPT_BYTES)
}

/// Bytes of one element of every kept result.
fn kept_width(kept: &[(ValueId, ElemType)]) -> usize {
    kept.iter().map(|(_, t)| t.size_bytes()).sum()
}

/// The file name of the row block whose first phase is kernel `first`.
pub fn file_name(first: usize) -> String {
    format!("k{first}_rowblock.cu")
}

/// The row block of `kernels` (numbered from `first` in [`Plan::kernels`] order, keeping
/// `local` per block) as one kernel, or `None` when it cannot be one (module docs). `Err`
/// says why the plan is malformed.
pub fn generate(
    plan: &Plan,
    kernels: &[Kernel],
    local: &[ValueId],
    first: usize,
    opts: GenOptions,
    host: &HashSet<ValueId>,
) -> Result<Option<KernelCode>, String> {
    let Some(k0) = kernels.first() else { return Ok(None) };
    let r = k0.space.len();
    if r < 2 || !opts.unchecked {
        return Ok(None);
    }
    let written: Vec<ValueId> = kernels.iter().flat_map(|k| k.lanes.iter().map(|l| l.dst)).collect();
    let mut layout = Layout::new(Dialect::Cuda);
    layout.set_written(&written);
    common_fields(&mut layout, r);
    let rows = layout.rows();
    let len = layout.extent(r - 1);
    let entry = format!("eq_k{first}_rowblock");
    let (mut funcs, mut phases, mut in_space) = (String::new(), String::new(), Vec::new());
    let mut described = Vec::new();
    for (p, k) in kernels.iter().enumerate() {
        let rank = k.space.len();
        let row_phase = rank == r;
        if !(row_phase || (rank == 1 && r == 2)) {
            return Ok(None);
        }
        let reduces = k.lanes.iter().filter(|l| matches!(l.op, LaneOp::Reduce { .. })).count();
        let lanes_ok =
            k.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate | LaneOp::Reduce { .. } | LaneOp::Part));
        if !lanes_ok || (!row_phase && reduces > 0) {
            return Ok(None);
        }
        described.push(format!("k{}: {}", first + p, crate::describe(plan, k)));
        let mut g = Gen::new(plan, k, first + p, opts, host)?;
        g.tag = format!("_p{p}");
        g.by_value = true;
        g.set_layout(std::mem::replace(&mut layout, Layout::new(Dialect::Cuda)));
        let elem_name = g.name("eq_elem");
        g.func(&elem_name, &k.elem, &format!("phase {p}: the element function"))?;
        let mut s = String::new();
        w!(s, "    {{ // phase {p}: k{} ({})", first + p, k.kind.as_str());
        if row_phase {
            let (reds, commutative) = g.reduce_lanes()?;
            s.push_str(&g.block_partials(&reds, "      "));
            s.push_str(&g.reduce_setup(&reds, "      ", true));
            let threads = ("threadIdx.x", "EQ_BLOCK", "EQ_BLOCK");
            s.push_str(&row_loop("      ", threads, commutative, r - 1));
            s.push_str(&g.fold_body("f", "        "));
            w!(s, "      }}");
            for &i in &reds {
                w!(s, "      acc{i} = {}(acc{i}, ne{i}, op{i}, eq_sh{i});", g.reduce_fn(i, true));
            }
            if !reds.is_empty() {
                w!(s, "      if (threadIdx.x == 0) {{");
                for &i in &reds {
                    let o = g.outs_of(i);
                    s.push_str(&g.store_value(i, &format!("acc{i}"), &o, "row", "        "));
                }
                w!(s, "      }}");
            }
        } else {
            w!(s, "      if (threadIdx.x == 0) {{");
            s.push_str(&g.fold_body("row", "        "));
            w!(s, "      }}");
        }
        w!(s, "    }}");
        w!(s, "    __syncthreads();");
        let (lay, f, _, _, ins) = g.finish();
        layout = lay;
        funcs.push_str(&f);
        in_space.extend(ins);
        phases.push_str(&s);
    }
    // a phase that could fail would need the error record's launch to be its own
    if funcs.contains("eq_fail(") {
        return Ok(None);
    }
    let kept = kept(plan, kernels, local);
    let mut body = kernel_head(&entry);
    w!(body, "  // a block per row");
    w!(body, "  const long long len = {len};");
    let per = kept_width(&kept);
    if let Some(most) = KEPT_BYTES.checked_div(per) {
        w!(body, "  // the row of what only later phases read, kept here when it fits");
        w!(body, "  __shared__ double eq_kept[{}];", KEPT_BYTES / 8);
        w!(body, "  const bool eq_in_shared = len <= {most};");
    }
    w!(body, "  for (long long row = blockIdx.x; row < {rows}; row += gridDim.x) {{");
    body.push_str(&unflatten(&mut layout, "row", r - 1, "    "));
    if per > 0 {
        // the phases index kept results as the whole array (`row * len + j`): their fields
        // point `row * len` elements before the block's row of them
        w!(body, "    EqArgs eq_b = A;");
        w!(body, "    if (eq_in_shared) {{");
        let mut off = 0usize;
        for (v, t) in &kept {
            let field = layout.array(plan, *v);
            let field = field.trim_start_matches("A.");
            let ct = cty(*t);
            w!(body, "      eq_b.{field} = ({ct}*)((char*)eq_kept + {off} * len) - row * len;");
            off += t.size_bytes();
        }
        w!(body, "    }}");
        w!(body, "    const EqArgs& A = eq_b;");
    }
    body.push_str(&phases);
    w!(body, "  }}");
    w!(body, "}}\n");
    let head = format!("row block k{first}..k{}: {}", first + kernels.len() - 1, described.join("; "));
    let groups = kernels.iter().flat_map(|k| &k.lanes).any(|l| l.op.width() > 1);
    let source = super::assemble(&head, opts, groups, &layout, &funcs, &body);
    Ok(Some(KernelCode {
        file: file_name(first),
        source,
        skeleton: Skeleton::RowBlock { entry },
        slots: layout.slots(),
        scratch: Vec::new(),
        in_space,
    }))
}
