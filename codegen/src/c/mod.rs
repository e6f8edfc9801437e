//! C for the CPU: one translation unit per plan, compiled by the system C compiler and
//! called from rayon threads (`eqfuse-exec-cpu`).
//!
//! The unit holds the [`prelude`] (the shared scalar helpers, compiled as C11), and
//! for each kernel it can run natively an argument block type `EqArgs_k<i>`, the element
//! and lane functions from the shared scalar emitter ([`crate::scalar`]), and exported
//! entry points from the skeletons (module `skeleton`). [`abi`] declares each entry point
//! once, C parameters and Rust function type together, and its table says which skeleton
//! exports which: `eq_k<i>_run` and `eq_k<i>_combine` for generate and reduce lanes,
//! `_scan`, `_fold` and `_prefix` for a scan, `_count` and `_write` for a filter,
//! `_permute`, `_merge` and `_shared` for a permute.
//!
//! A scan over a group (its head lane and its parts) is one scan whose carry has a
//! component per lane. A scan or permute beside other lanes, and a filter of rank above 1,
//! run on the VM
//! ([`PlanCode::kernels`] says why for each).
//!
//! Rows are the unit of work: the host splits a kernel's rows into tasks of whole rows, or
//! a long row into fixed-size segments whose partial results `eq_k<i>_combine` folds in
//! order. The split depends only on the shape, so results do not depend on the thread
//! count. A reduce lane whose operator is a known commutative one (`+`, `*`, `min`, `max`),
//! and a reduction over a group that is a keyed selection (`argmin`, `argmax`: module
//! `interleave`), fold a row into [`ACCUMULATORS`] independent accumulators (element `j`
//! into accumulator `j mod W`), combined in a fixed order at the row's end: the compiler
//! vectorises that; other operators fold in order. A reduction's or scan's operator has
//! its `bool` `if`s of pure arms written as `bool` operators (module `eager`), which the
//! compiler vectorises where it leaves `c ? t : e` alone.
//!
//! An element that fails (a read out of bounds, an integer division by zero) does not
//! stop the loop: the entry point returns 0 and the host reruns the kernel on the
//! interpreter, which reports the error of the first failing element exactly as the other
//! backends do.

pub mod abi;
mod eager;
mod interleave;
pub mod prelude;
mod skeleton;

pub use skeleton::{COLUMNS, TILE_COLUMNS, TILE_ROWS};

use crate::Slot;
use eqfuse_ir::plan::Plan;
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// Independent accumulators of a reduce lane whose operator commutes, for an element type
/// of `bytes` bytes: four 64-byte vectors' worth.
pub fn accumulators(bytes: usize) -> usize {
    (256 / bytes.max(1)).clamp(8, 64)
}

/// The accumulators of an `f32` lane (see [`accumulators`]).
pub const ACCUMULATORS: usize = 64;

/// A kernel generated as C.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCode {
    /// The kernel's number (as [`Plan::kernels`] lists them).
    pub index: usize,
    /// Its entry points, by skeleton.
    pub entries: Entries,
    /// The argument block's 8-byte fields, in order.
    pub slots: Vec<Slot>,
    /// Per lane: `Some(t)` for a reduce lane of element type `t`, `None` for a generate lane.
    pub reduce: Vec<Option<ElemType>>,
    /// Arrays read without a bounds check, at indices of the space: before the launch, the
    /// host checks that the space's extent along each axis that indexes the array is at
    /// most the array's dimension (and runs the kernel on the VM otherwise, which reports
    /// the read that fails).
    pub in_space: Vec<crate::scalar::InSpace>,
}

/// A kernel's entry points, by skeleton: each names what its symbols are called for.
#[derive(Clone, Debug, PartialEq)]
pub enum Entries {
    /// Generate and reduce lanes: `run(A, r0, r1, j0, j1, part)` over rows `[r0, r1)` and
    /// innermost indices `[j0, j1)`; with reduce lanes, `combine(A, parts, n, out)` folds
    /// `n` partial results in order.
    Lanes {
        /// `run`'s symbol.
        run: String,
        /// `combine`'s symbol (kernels with reduce lanes).
        combine: Option<String>,
        /// How `run` walks the points of a call, which tells an executor how to cut the
        /// space into calls.
        order: Order,
    },
    /// A scan ([`ScanCode`]).
    Scan(ScanCode),
    /// A filter ([`FilterCode`]).
    Filter(FilterCode),
    /// A permute ([`PermuteCode`]).
    Permute(PermuteCode),
}

/// How a [`Entries::Lanes`] kernel's `run` entry walks the points of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Row by row, each row's points in order: any cut serves.
    Rows,
    /// Called with 2 to [`COLUMNS`] rows, it folds them side by side, inner index by inner
    /// index (a reduction reading across the rows of an array): an executor should give it
    /// many rows per call, splitting the innermost dimension instead.
    Columns,
    /// In tiles of [`TILE_COLUMNS`] inner indices by up to [`TILE_ROWS`] rows, each tile's
    /// points computed down its columns and written row by row (generate lanes reading an
    /// array across its rows: a transposition): an executor should give it calls of many
    /// rows and many inner indices (blocks of the space, not whole rows).
    Tiles,
}

/// A permute's entry points: `permute(A, j0, j1, dst, touched)` combines elements
/// `[j0, j1)` (flat, row-major over the space) into `dst` at their targets — where
/// `touched` is not null, a target not yet touched takes the element and is marked, so that
/// `dst` may be a partial result — and `merge(A, dst, part, touched, n)` combines the
/// touched entries of a partial `part` of `n` entries into `dst`. A target out of bounds
/// (other than `-1` into a rank-1 destination, which drops the element) fails the call.
///
/// Where the operator allows it, `shared(A, j0, j1, dst)` combines elements `[j0, j1)` into
/// a `dst` that other calls write at the same time ([`Shared`]): no partials, no merge.
#[derive(Clone, Debug, PartialEq)]
pub struct PermuteCode {
    /// `permute`'s symbol.
    pub permute: String,
    /// `merge`'s symbol.
    pub merge: String,
    /// `shared`'s symbol and what it does, where the operator allows one.
    pub shared: Option<(String, Shared)>,
    /// The element type.
    pub ty: ElemType,
    /// What the result starts as: a copy of an array, or a fill the host makes.
    pub dest: eqfuse_ir::plan::PermuteDest,
}

/// How a permute's `shared` entry writes into the one result every call shares: each write
/// is atomic, so calls on several threads are no data race, and the order in which
/// elements with one target combine is unspecified, as the language allows (`permute`'s
/// operator must commute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shared {
    /// `\a b -> b`: each element is stored (a relaxed atomic store); of several elements
    /// with one target, any may be the one that stays.
    KeepNew,
    /// `\a b -> a`: nothing is stored (the result is the destination); the elements and
    /// their targets are still computed and checked, for their errors.
    KeepOld,
    /// A known commutative operator (`+`, `*`, `min`, `max`, `&&`, `||`): combined
    /// atomically, by `__atomic_fetch_add` for an integer `+`, else by a compare-and-swap
    /// loop on the value's bits.
    Atomic,
}

/// A filter's entry points: `count(A, j0, j1, n)` and `write(A, j0, j1, dst)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterCode {
    /// `count`'s symbol.
    pub count: String,
    /// `write`'s symbol.
    pub write: String,
    /// The element type.
    pub ty: ElemType,
}

/// A scan's entry points: `scan(A, r0, r1, j0, j1, carry)` (rows `[r0, r1)`,
/// innermost indices `[j0, j1)`, starting from the carry, or the neutral element when
/// `carry` is null): `fold(A, row, j0, j1, part)` writes a segment's total, `prefix(A,
/// parts, n, carries)` the exclusive prefix of `n` totals, in order (the operator need not
/// commute). A scan over a group of `w` components (its head lane and `w - 1`
/// [`eqfuse_ir::plan::LaneOp::Part`]s) passes every carry, total and partial by
/// component: one pointer per component, each to its own array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanCode {
    /// `scan`'s symbol.
    pub scan: String,
    /// `fold`'s symbol.
    pub fold: String,
    /// `prefix`'s symbol.
    pub prefix: String,
    /// The components' element types, one per lane (one for a scan of one lane).
    pub tys: Vec<ElemType>,
}

/// A plan's C translation unit.
#[derive(Clone, Debug)]
pub struct PlanCode {
    /// The C source (empty of kernels when none could be generated).
    pub source: String,
    /// Per kernel of [`Plan::kernels`]: its entry points, or why it runs on the VM.
    pub kernels: Vec<Result<KernelCode, String>>,
}

impl PlanCode {
    /// Whether any kernel runs natively.
    pub fn any(&self) -> bool {
        self.kernels.iter().any(Result::is_ok)
    }
}

/// Generates the C translation unit of `plan`.
pub fn generate(plan: &Plan) -> PlanCode {
    let host = crate::host_known(plan);
    let mut src = String::new();
    src.push_str("// eqfuse: generated C for the CPU; one function per kernel chunk.\n");
    let math = eqfuse_ir::math::c_source();
    for part in [
        prelude::HEAD,
        crate::prelude::SCALAR_HEAD,
        crate::prelude::SCALAR_HELPERS,
        crate::prelude_ints::BIT_COUNTS,
        crate::prelude_ints::SCALAR_INTS,
        math,
        prelude::TAIL,
    ] {
        src.push_str(part);
    }
    let mut kernels = Vec::new();
    for (index, k) in plan.kernels().into_iter().enumerate() {
        if k.contraction.is_some() {
            // run as GEMM calls; the VM runs its definition where GEMM cannot (a read out
            // of bounds, for its error)
            kernels.push(Err("a contraction: runs as GEMM calls".to_string()));
            continue;
        }
        let r = skeleton::generate(plan, k, index, &host);
        match r {
            Ok((code, text)) => {
                let _ = writeln!(src, "{KERNEL_MARK}{index}: {} ----", crate::describe(plan, k));
                src.push_str(&text);
                kernels.push(Ok(code));
            }
            Err(why) => kernels.push(Err(why)),
        }
    }
    PlanCode { source: src, kernels }
}

/// What starts each kernel's text in a plan's source (after the prelude): [`split`] cuts
/// there.
const KERNEL_MARK: &str = "\n// ---- kernel k";

/// A plan's source ([`PlanCode::source`]) as translation units that compile separately and
/// link into one shared object: each is the prelude (whose functions are all `static`, and
/// its types and macros are declarations only) followed by whole kernels, in order, at
/// least `piece_bytes` of kernel text per unit but the last. A source of at most
/// `piece_bytes` of kernel text (or of one kernel) is one unit, the source itself.
///
/// A kernel's text defines only its own names (`EqArgs_k<i>`, its `static` functions, its
/// exported `eq_k<i>_...` entry points), so no unit refers to another's definitions.
pub fn split(source: &str, piece_bytes: usize) -> Vec<String> {
    let starts: Vec<usize> = source.match_indices(KERNEL_MARK).map(|(i, _)| i).collect();
    let Some(&first) = starts.first() else { return vec![source.to_string()] };
    let prelude = &source[..first];
    if source.len() - first <= piece_bytes || starts.len() == 1 {
        return vec![source.to_string()];
    }
    let mut pieces = Vec::new();
    let mut piece = String::from(prelude);
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(source.len());
        piece.push_str(&source[start..end]);
        if piece.len() - prelude.len() >= piece_bytes && end < source.len() {
            pieces.push(std::mem::replace(&mut piece, String::from(prelude)));
        }
    }
    pieces.push(piece);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_splits_at_kernels_and_each_piece_has_the_prelude() {
        let src = format!(
            "PRELUDE{KERNEL_MARK}0: a ----\nAAAA{KERNEL_MARK}1: b ----\nBBBB{KERNEL_MARK}2: c ----\nCCCC\n"
        );
        // small enough: the source itself
        assert_eq!(split(&src, 1 << 20), vec![src.clone()]);
        // one kernel per piece
        let pieces = split(&src, 1);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| p.starts_with("PRELUDE\n// ---- kernel k")));
        assert!(pieces[0].contains("AAAA") && !pieces[0].contains("BBBB"));
        assert!(pieces[2].ends_with("CCCC\n"));
        // the kernels' text, in order, is the source's
        let kernels: String = pieces.iter().map(|p| &p["PRELUDE".len()..]).collect();
        assert_eq!(format!("PRELUDE{kernels}"), src);
        // two kernels to a piece at most
        assert_eq!(split(&src, 40).len(), 2);
        // no kernel: one piece
        assert_eq!(split("PRELUDE", 1), vec!["PRELUDE".to_string()]);
    }
}
