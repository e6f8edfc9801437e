//! Staged loops: a block of elements computed first by a loop whose iterations do not
//! depend on each other, which the C compiler vectorises (the element functions, with
//! their `exp` or `log`, are the expensive part), then used in order by a second loop (a
//! scan's fold, a filter's compaction, a permute's scatter), which cannot vectorise.

use std::fmt::Write as _;

/// How many elements a staged loop ([`staged`]) computes before it uses them.
pub(crate) const STAGED: usize = 256;

/// Lines of a loop over the elements `[j0, j1)` in blocks of [`STAGED`]: first `compute`
/// for every element of the block, by a loop whose iterations do not depend on each other
/// (the compiler vectorises it: the element functions are the expensive part), which sets
/// the variables `vars` (C type, name; declared here), kept in a buffer on the stack; then
/// `body` for each element in order, with the variables read back. `j` is the element's
/// index in both loops.
pub(super) fn staged(
    e: &mut String,
    ind: &str,
    vars: &[(&str, String)],
    compute: &[String],
    body: &[String],
) {
    w!(e, "{ind}for (long long jb = j0; jb < j1; jb += {STAGED}) {{");
    w!(e, "{ind}  const long long je = j1 - jb < {STAGED} ? j1 : jb + {STAGED};");
    for (t, v) in vars {
        w!(e, "{ind}  {t} {v}_b[{STAGED}];");
    }
    w!(e, "{ind}  for (long long j = jb; j < je; ++j) {{");
    for (t, v) in vars {
        w!(e, "{ind}    {t} {v};");
    }
    for c in compute {
        w!(e, "{ind}    {c}");
    }
    for (_, v) in vars {
        w!(e, "{ind}    {v}_b[j - jb] = {v};");
    }
    w!(e, "{ind}  }}");
    w!(e, "{ind}  for (long long j = jb; j < je; ++j) {{");
    for (t, v) in vars {
        w!(e, "{ind}    const {t} {v} = {v}_b[j - jb];");
    }
    for b in body {
        w!(e, "{ind}    {b}");
    }
    w!(e, "{ind}  }}");
    w!(e, "{ind}}}");
}
