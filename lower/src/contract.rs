//! The lowering pass that marks contractions: every kernel that is a matrix–matrix product
//! ([`Contraction::of`], where the legality lives; a matrix–vector product stays the fused
//! reduction it is, see [`Contraction::is_matrix_product`]) gets its
//! [`Kernel::contraction`] and is named `contract`. The cost model then prices it at the GEMM rate, and the extraction's
//! search over what to materialise sees that price (docs/contractions.md).

use eqfuse_ir::plan::contract::Contraction;
use eqfuse_ir::plan::{Kernel, KernelKind, Plan, Step};

/// Marks the contractions of `plan`, the kernels of `if` branches included.
pub(crate) fn mark(plan: &mut Plan) {
    let mut steps = std::mem::take(&mut plan.steps);
    walk(&mut steps, plan);
    plan.steps = steps;
}

fn walk(steps: &mut [Step], plan: &Plan) {
    for st in steps {
        match st {
            Step::Kernel(k) => mark_kernel(k, plan),
            Step::If { then_steps, else_steps, .. } => {
                walk(then_steps, plan);
                walk(else_steps, plan);
            }
            Step::Loop(l) => {
                if let eqfuse_ir::plan::LoopKind::While { steps, .. } = &mut l.form {
                    walk(steps, plan);
                }
                walk(&mut l.body, plan);
            }
            // marked before row blocks are grouped; a contraction never joins one
            Step::RowBlock { .. } | Step::SegmentBlock { .. } | Step::Scalar { .. } | Step::Assert { .. } => {
            }
        }
    }
}

fn mark_kernel(k: &mut Kernel, plan: &Plan) {
    if let Some(c) = Contraction::of(k, plan).filter(|c| c.is_matrix_product(k.space.len())) {
        k.contraction = Some(c);
        k.kind = KernelKind::Contract;
    }
}
