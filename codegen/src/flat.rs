//! The run-time condition under which a kernel over a space of several dimensions may run
//! as one loop over its flattened points ([`eqfuse_ir::plan::Func::flat_reads`]), for
//! both dialects: the element function then gets index `(0, .., 0, f)` for flat point `f`,
//! which every one of its reads turns into offset `f` of its array.

use crate::scalar::InSpace;
use crate::Layout;
use eqfuse_ir::plan::{Func, Plan};

/// The C condition (over the argument block's fields) under which `elem`, over a space of
/// extents `exts` (C expressions, at least two), computes point `f` of the flattened space
/// from index `(0, .., 0, f)`: every array it reads at the point is read unchecked (in
/// `in_space`, each axis by its own index) and has the space's extents along every axis
/// but the first. `None` when the element function uses its indices otherwise.
pub(crate) fn flat_condition(
    plan: &Plan,
    layout: &mut Layout,
    elem: &Func,
    in_space: &[InSpace],
    exts: &[String],
) -> Option<String> {
    let rank = exts.len();
    let arrays = elem.flat_reads(rank)?;
    let identity: Vec<usize> = (0..rank).collect();
    let mut conds = Vec::new();
    for a in arrays {
        if !in_space.iter().any(|s| s.array == a && s.axes == identity) {
            return None;
        }
        for (d, ext) in exts.iter().enumerate().skip(1) {
            conds.push(format!("{} == {ext}", layout.dim(plan, a, d)));
        }
    }
    Some(if conds.is_empty() { "1".to_string() } else { conds.join(" && ") })
}
