//! A scan's forms. An exclusive scan combined element by element with its input, by the
//! scan's own operator, is the inclusive scan: `ex[i] = ne op a[0] op .. op a[i-1]`, so
//! `ex[i] op a[i]` is `in[i]`, the same operations in the same order (bit for bit), one pass
//! instead of a scan and a map.
//!
//! A prefix sum written as the sum of the elements up to each index,
//! `reduce op ne (generate [n, n] (\i j -> if j <= i then f j else ne))`, is that scan of
//! `generate [n] f` (quadratic work against linear): row `i` folds `f 0 .. f i` in order and
//! then only `ne`s, which change nothing (`ne` neutral for `op`); a left fold of the row is
//! the scan's element `i`, operation for operation. (`j < i`: the exclusive scan.)
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`); every
//! rule spends the fusion budget ([`Gas`]).

use crate::build::lam;
use crate::fusion::gassed;
use crate::legal::neutral_pair;
use crate::node_rule::{kinds, Select};
use crate::phase::Phase;
use crate::rule::{Rule, Theme};
use crate::subst::lam_body;
use crate::{Gas, EG};
use egg::Id;
use eqfuse_egraph::ArrayLang;
use eqfuse_ir::types::ElemType;

/// The scan rules, sharing `gas`, each with its identity ([`crate::catalogue`]).
pub fn table(gas: &Gas) -> Vec<Rule> {
    vec![
        Rule {
            identity: r"map op (scan_exclusive op ne a) a == scan op ne a",
            theme: Theme::Scans,
            spends_gas: true,
            rewrite: gassed("scan-from-exclusive", gas, Select::kinds(kinds![Map]), from_exclusive),
            in_phases: vec![Phase::Fuse],
        },
        Rule {
            identity: r"redomap op ne [n, n] (\i j -> if j <= i then f j else ne) == scan op ne (generate [n] f), when ne is neutral for op and f does not mention i (j < i: scan_exclusive; also the arms swapped under the negated test)",
            theme: Theme::Scans,
            spends_gas: true,
            rewrite: gassed("scan-triangular", gas, Select::kinds(kinds![Redomap]), triangular),
            in_phases: vec![Phase::Fuse],
        },
    ]
}

/// `map op (scan_exclusive op ne a) a` (the map's function the scan's operator, the
/// exclusive scan first): `scan op ne a`.
fn from_exclusive(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Map(c) = n else { return None };
    let [f, ex, a] = **c else { return None };
    let (op, ne) = eg[ex].nodes.iter().find_map(|m| match *m {
        ArrayLang::ScanEx([op, ne, x]) if eg.find(x) == eg.find(a) && eg.find(op) == eg.find(f) => {
            Some((op, ne))
        }
        _ => None,
    })?;
    Some(eg.add(ArrayLang::Scan([op, ne, a])))
}

/// Whether class `c` is the lambda parameter `$k`.
fn is_param(eg: &EG, c: Id, k: u32) -> bool {
    eg[c].nodes.iter().any(|n| matches!(n, ArrayLang::Param(p) if p.index == k))
}

/// For a test `cond` between the indices `i` (`$1`) and `j` (`$0`), and whether the arm
/// kept is the one it takes (`then`) or the other: `Some(true)` when that arm is kept
/// exactly for `j <= i`, `Some(false)` for `j < i`, `None` otherwise.
fn triangle(eg: &EG, cond: Id, then: bool) -> Option<bool> {
    eg[cond].nodes.iter().find_map(|n| {
        // `x <= y` or `x < y` (`strict`)
        let (x, y, strict) = match *n {
            ArrayLang::Le([a, b]) => (a, b, false),
            ArrayLang::Lt([a, b]) => (a, b, true),
            ArrayLang::Ge([a, b]) => (b, a, false),
            ArrayLang::Gt([a, b]) => (b, a, true),
            _ => return None,
        };
        let j_first = is_param(eg, x, 0) && is_param(eg, y, 1);
        let i_first = is_param(eg, x, 1) && is_param(eg, y, 0);
        match (then, j_first, i_first) {
            // taken: `j <= i` or `j < i`
            (true, true, _) => Some(!strict),
            // not taken: `!(i <= j)` is `j < i`, `!(i < j)` is `j <= i`
            (false, _, true) => Some(strict),
            _ => None,
        }
    })
}

/// `redomap op ne [n, n] (\i j -> if <j against i> then f j else ne)`: the (exclusive) scan.
fn triangular(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Redomap([op, ne, sh, f]) = *n else { return None };
    let [d0, d1] = eg[sh].nodes.iter().find_map(|m| match m {
        ArrayLang::Shape(ds) if ds.len() == 2 => Some([ds[0], ds[1]]),
        _ => None,
    })?;
    if eg.find(d0) != eg.find(d1) || !neutral_pair(eg, op, ne) {
        return None;
    }
    let body = lam_body(eg, f, 2)?;
    let ne_c = eg.find(ne);
    let (inclusive, keep) = eg[body].nodes.iter().find_map(|m| {
        let ArrayLang::If([c, t, e]) = *m else { return None };
        if eg.find(e) == ne_c {
            Some((triangle(eg, c, true)?, t))
        } else if eg.find(t) == ne_c {
            Some((triangle(eg, c, false)?, e))
        } else {
            None
        }
    })?;
    // `f j` mentions `j` alone: it is the body of a one-parameter lambda as it is
    if eg[keep].data.free.iter().any(|k| k != 0) {
        return None;
    }
    let f1 = lam(eg, vec![ElemType::I64], keep);
    let sh1 = eg.add(ArrayLang::Shape(vec![d0].into()));
    let g = eg.add(ArrayLang::Generate([sh1, f1]));
    Some(eg.add(if inclusive { ArrayLang::Scan([op, ne, g]) } else { ArrayLang::ScanEx([op, ne, g]) }))
}
