//! A scan's forms. An exclusive scan combined element by element with its input, by the
//! scan's own operator, is the inclusive scan: `ex[i] = ne op a[0] op .. op a[i-1]`, so
//! `ex[i] op a[i]` is `in[i]`, the same operations in the same order (bit for bit), one pass
//! instead of a scan and a map.
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`); every
//! rule spends the fusion budget ([`Gas`]).

use crate::fusion::gassed;
use crate::node_rule::{kinds, Select};
use crate::phase::Phase;
use crate::rule::{Rule, Theme};
use crate::{Gas, EG};
use egg::Id;
use eqfuse_egraph::ArrayLang;

/// The scan rules, sharing `gas`, each with its identity ([`crate::catalogue`]).
pub fn table(gas: &Gas) -> Vec<Rule> {
    vec![Rule {
        identity: r"map op (scan_exclusive op ne a) a == scan op ne a",
        theme: Theme::Scans,
        spends_gas: true,
        rewrite: gassed("scan-from-exclusive", gas, Select::kinds(kinds![Map]), from_exclusive),
        in_phases: vec![Phase::Fuse],
    }]
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
