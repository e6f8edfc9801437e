//! Maps that transpose: a kernel of generate lanes over `[r, c]` whose element reads an
//! array across its rows (`a[j, i]` at point `(i, j)`, [`eqfuse_ir::plan::Func::walks_columns`])
//! reads, row by row, one element of each of `c` rows of `a`: every read touches another
//! cache line, rows a power of two apart share cache sets, and the loop stays scalar. The
//! `run` entry instead walks its call in tiles of [`TILE_COLUMNS`] inner indices by up to
//! [`TILE_ROWS`] rows: down each column of the tile first (the reads are neighbours in
//! memory), into a buffer on the stack, then the buffer's rows to the output (each a run of
//! [`TILE_COLUMNS`] neighbours). Every point is computed once, by the same element function,
//! so the results are those of the row-by-row walk.

use crate::cty;
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// The most rows of a tile (and the rows an executor should give a call).
pub const TILE_ROWS: usize = 256;

/// The inner indices of a tile.
pub const TILE_COLUMNS: usize = 8;

/// The text placed at the start of a `run` entry (after `L`, the innermost extent) of a
/// kernel over a 2-d space whose lanes all generate (element types `types`, written to the
/// output arrays `outs`): a call of more than one row walks its points in tiles, then the
/// entry returns (one row is walked as a row).
pub(super) fn tiles_path(prefix: &str, types: &[ElemType], outs: &[String]) -> String {
    let (tr, tc) = (TILE_ROWS, TILE_COLUMNS);
    let mut e = String::new();
    w!(e, "  if (r1 - r0 > 1) {{");
    for (i, t) in types.iter().enumerate() {
        w!(e, "    {} tile{i}[{}];", cty(*t), tr * tc);
    }
    w!(e, "    for (long long rb = r0; rb < r1; rb += {tr}) {{");
    w!(e, "      const long long re = rb + {tr} < r1 ? rb + {tr} : r1;");
    w!(e, "      for (long long jb = j0; jb < j1; jb += {tc}) {{");
    w!(e, "        const long long je = jb + {tc} < j1 ? jb + {tc} : j1;");
    w!(e, "        for (long long iL = jb; iL < je; ++iL) {{");
    w!(e, "          for (long long i0 = rb; i0 < re; ++i0) {{");
    e.push_str(&super::columns::elem_at(prefix, types, "            ", 1, "i0 * L + iL"));
    for i in 0..types.len() {
        w!(e, "            tile{i}[(iL - jb) * {tr} + (i0 - rb)] = x{i};");
    }
    w!(e, "          }}");
    w!(e, "        }}");
    w!(e, "        for (long long i0 = rb; i0 < re; ++i0) {{");
    w!(e, "          for (long long iL = jb; iL < je; ++iL) {{");
    for (i, o) in outs.iter().enumerate() {
        w!(e, "            {o}[i0 * L + iL] = tile{i}[(iL - jb) * {tr} + (i0 - rb)];");
    }
    w!(e, "          }}");
    w!(e, "        }}");
    w!(e, "      }}");
    w!(e, "    }}");
    w!(e, "    return ok;");
    w!(e, "  }}");
    e
}
