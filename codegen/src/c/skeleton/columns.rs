//! Reductions that walk columns: a kernel over `[c, r]` reducing `r` whose element reads
//! an array across its rows (`a[i, j]` at outer index `j`, inner `i`: a transposed
//! matrix–vector product, column sums) reads one element of each row of `a` per step, so
//! a row of the space streams the whole array once and the kernel streams it `c` times.
//! Called with a few rows of the space at once (up to [`COLUMNS`]), the `run` entry instead
//! folds them inner index by inner index, each row's accumulator in an array: the reads
//! of one step are neighbours in memory, and the loop over the rows vectorises. Each row is
//! still folded in order, so the result is the plain left fold's.
//!
//! A space of more dimensions (`[n, m, k]` reducing `k`, an integer matrix product's
//! `a[i, p] * b[p, j]`, or a max-plus product's) is walked the same way over its rows,
//! in runs of rows that share every index but the last outer one, so that the loop over a
//! run has that index affine in the run's counter and vectorises.

use crate::cty;
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// The most rows of the space folded side by side (accumulators on the stack: 16 KiB a lane
/// at most). Many rows make a step of the walk a long run of neighbours in memory (a row of a
/// 2048-column matrix in one step, where 64 made each step a new page: column sums of a
/// `[2048, 2048]` `f32` matrix went from 2.5 to 1.0 ms); the executor gives a call that
/// many rows and splits the inner dimension instead.
pub const COLUMNS: usize = 2048;

/// The text placed at the start of a `run` entry (after `L`, the innermost extent) of a
/// kernel over a space of extents `exts` (C expressions; two or more) whose lanes are all
/// reductions of one component (element types `types`): when the call has between 2 and
/// [`COLUMNS`] rows, they are folded side by side and the entry returns.
pub(super) fn columns_path(prefix: &str, types: &[ElemType], exts: &[String]) -> String {
    let outer = exts.len().saturating_sub(1);
    let mut e = String::new();
    w!(e, "  if (r1 - r0 > 1 && r1 - r0 <= {COLUMNS}) {{");
    w!(e, "    const long long nr = r1 - r0;");
    for (i, t) in types.iter().enumerate() {
        w!(e, "    {} c{i}[{COLUMNS}];", cty(*t));
        w!(e, "    {} ne{i};", cty(*t));
        w!(e, "    ok &= {prefix}_ne{i}(A, -1, &ne{i});");
        w!(e, "    for (long long q = 0; q < nr; ++q) c{i}[q] = ne{i};");
    }
    w!(e, "    for (long long iL = j0; iL < j1; ++iL) {{");
    let fold = |e: &mut String, ind: &str, at: &str| {
        for i in 0..types.len() {
            w!(e, "{ind}ok &= {prefix}_op{i}(A, -1, c{i}[{at}], x{i}, &c{i}[{at}]);");
        }
    };
    if outer <= 1 {
        w!(e, "      for (long long q = 0; q < nr; ++q) {{");
        w!(e, "        const long long i0 = r0 + q;");
        e.push_str(&elem_at(prefix, types, "        ", 1, "i0 * L + iL"));
        fold(&mut e, "        ", "q");
        w!(e, "      }}");
    } else {
        // runs of rows sharing the indices before the last outer one, `l`
        let l = outer - 1;
        w!(e, "      for (long long row0 = r0; row0 < r1;) {{");
        // the run's first row's indices, the last outer one as its start `s<l>`
        let name = |d: usize| if d == l { format!("s{l}") } else { format!("i{d}") };
        super::outer_indices_of(&mut e, exts, "        ", "row0", &name);
        w!(
            e,
            "        const long long run = r1 - row0 < {} - s{l} ? r1 - row0 : {} - s{l};",
            exts[l],
            exts[l]
        );
        w!(e, "        for (long long q = 0; q < run; ++q) {{");
        w!(e, "          const long long i{l} = s{l} + q;");
        e.push_str(&elem_at(prefix, types, "          ", outer, "(row0 + q) * L + iL"));
        fold(&mut e, "          ", "row0 - r0 + q");
        w!(e, "        }}");
        w!(e, "        row0 += run;");
        w!(e, "      }}");
    }
    w!(e, "    }}");
    for (i, t) in types.iter().enumerate() {
        w!(e, "    for (long long q = 0; q < nr; ++q) (({}*)red[{i}])[q] = c{i}[q];", cty(*t));
    }
    w!(e, "    return ok;");
    w!(e, "  }}");
    e
}

/// The lines, indented by `ind`, that declare `x<i>` for each lane (element types `types`)
/// and compute them with the element function at point `(i0, .., i<outer - 1>, iL)`,
/// whose offset in the flattened space is the C expression `flat`.
pub(super) fn elem_at(prefix: &str, types: &[ElemType], ind: &str, outer: usize, flat: &str) -> String {
    let mut e = String::new();
    let mut call = format!("{prefix}_elem(A, {flat}");
    for d in 0..outer {
        let _ = write!(call, ", i{d}");
    }
    call.push_str(", iL");
    for (i, t) in types.iter().enumerate() {
        w!(e, "{ind}{} x{i};", cty(*t));
        let _ = write!(call, ", &x{i}");
    }
    w!(e, "{ind}ok &= {call});");
    e
}
