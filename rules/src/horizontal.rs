//! Horizontal fusion (docs/design-decisions.md, decision 2): kernels that traverse the same index space and
//! do not depend on each other become one pass with several results — mean and variance of
//! one array, the three n-body accelerations, the call and put prices of Black–Scholes.
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`).
//!
//! The rule runs in its own phase, on the e-graph of the term the previous phases
//! extracted, where each class has one node: "independent" is then plain reachability, and
//! the `multi` can never feed one of its own lanes (no cycle). The members of a group are
//! found greedily in the order of that term (children first, a dependency order that does
//! not depend on the order rules fired): each kernel joins the first group over its shape
//! that it does not depend on.

use crate::node_rule::{kinds, NodeSearcher, Select};
use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use crate::{Rewrite, EG};
use egg::{Id, Language, PatternAst, Subst, Symbol};
use eqfuse_egraph::{ArrayLang, SymDim};
use std::collections::HashMap;

/// The horizontal-fusion rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    let searcher = NodeSearcher::new(Select::kinds(kinds![Outputs]));
    let fuse = match egg::Rewrite::new("horizontal-fuse", searcher, Horizontal) {
        Ok(r) => r,
        Err(e) => unreachable!("horizontal-fuse: {e}"),
    };
    themed(
        Theme::Horizontal,
        &[Phase::Horizontal],
        vec![
            (
                r"generate sh f == proj k (multi sh .. (lgen f) ..), redomap op ne sh f == proj k (multi sh .. (lred op ne f) ..), for independent kernels over one shape",
                fuse,
            ),
            (
                r"for p = generate sh f: p == proj 0 m and reduce op ne p == proj 1 m with m = multi sh (lgen f) (lred op ne f) (the reduction also writes its producer for its other users: diagonal fusion)",
                crate::node_rule::node_rule(
                    "horizontal-diagonal",
                    Select::kinds(kinds![Reduce]),
                    std::sync::Arc::new(diagonal),
                ),
            ),
        ],
    )
}

/// The rewrites of [`table`].
pub fn rules() -> Vec<Rewrite> {
    table().into_iter().map(|r| r.rewrite).collect()
}

/// `reduce op ne p` with `p = generate sh f`: one pass writing `p` and reducing it.
fn diagonal(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Reduce([op, ne, p]) = *n else { return None };
    let (sh, f) = eg[p].nodes.iter().find_map(|n| match *n {
        ArrayLang::Generate([sh, f]) => Some((sh, f)),
        _ => None,
    })?;
    if ![op, ne, f, sh].iter().all(|c| crate::build::closed(eg, *c)) {
        return None;
    }
    let lg = eg.add(ArrayLang::LaneGen([f]));
    let lr = eg.add(ArrayLang::LaneRed([op, ne, f]));
    let m = eg.add(ArrayLang::Multi(vec![sh, lg, lr].into()));
    let (k0, k1) = (crate::build::lit_i64(eg, 0), crate::build::lit_i64(eg, 1));
    let p0 = eg.add(ArrayLang::Proj([k0, m]));
    eg.union(p, p0);
    Some(eg.add(ArrayLang::Proj([k1, m])))
}

struct Horizontal;

/// A lane: the class it computes and the lane node.
struct Member {
    class: Id,
    sh: Id,
    lane: ArrayLang,
}

fn lane_of(eg: &EG, class: Id) -> Option<(Id, ArrayLang)> {
    eg[class].nodes.iter().find_map(|n| match *n {
        ArrayLang::Generate([sh, f]) => Some((sh, ArrayLang::LaneGen([f]))),
        ArrayLang::Redomap([op, ne, sh, f]) => Some((sh, ArrayLang::LaneRed([op, ne, f]))),
        _ => None,
    })
}

/// Classes reachable from `root` through each class's smallest node, children first.
fn topo(eg: &EG, root: Id) -> Vec<Id> {
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(eg.find(root), false)];
    while let Some((c, done)) = stack.pop() {
        if done {
            order.push(c);
            continue;
        }
        if !seen.insert(c) {
            continue;
        }
        stack.push((c, true));
        for ch in eg[c].data.best.children() {
            let ch = eg.find(*ch);
            if !seen.contains(&ch) {
                stack.push((ch, false));
            }
        }
    }
    order
}

impl egg::Applier<ArrayLang, eqfuse_egraph::Facts> for Horizontal {
    fn apply_one(
        &self,
        eg: &mut EG,
        root: Id,
        _: &Subst,
        _: Option<&PatternAst<ArrayLang>>,
        _: Symbol,
    ) -> Vec<Id> {
        let order = topo(eg, root);
        // candidates and, for each class, which candidates it depends on (bit sets)
        let mut members: Vec<Member> = Vec::new();
        let mut cand_index: HashMap<Id, usize> = HashMap::new();
        // a kernel already in a group is a candidate again: a kernel that gained its index
        // form later (a map recast in this phase) joins a larger group, which the e-graph
        // then holds beside the smaller one (the same groups again add nothing new)
        for &c in &order {
            if let Some((sh, lane)) = lane_of(eg, c) {
                if eg[c].data.free.is_empty() {
                    cand_index.insert(c, members.len());
                    members.push(Member { class: c, sh, lane });
                }
            }
        }
        if members.len() < 2 {
            return Vec::new();
        }
        let words = members.len().div_ceil(64);
        let mut deps: HashMap<Id, Vec<u64>> = HashMap::new();
        for &c in &order {
            let mut d = vec![0u64; words];
            for ch in eg[c].data.best.children() {
                let ch = eg.find(*ch);
                if let Some(cd) = deps.get(&ch) {
                    for (x, y) in d.iter_mut().zip(cd) {
                        *x |= *y;
                    }
                }
                if let Some(&k) = cand_index.get(&ch) {
                    d[k / 64] |= 1 << (k % 64);
                }
            }
            deps.insert(c, d);
        }
        // greedy groups over equal shapes, in dependency order
        let shape_key = |eg: &EG, sh: Id| -> Option<Vec<SymDim>> {
            crate::build::dims(eg, sh).map(|ds| {
                ds.into_iter()
                    .map(|d| match d {
                        SymDim::Class(c) => SymDim::Class(eg.find(c)),
                        d => d,
                    })
                    .collect()
            })
        };
        // members in the loaded term's order (children first, so a dependency order too),
        // not in the order of the e-graph's ids, which depends on the order rules fired
        let mut rank: HashMap<Id, usize> = HashMap::new();
        crate::context::with(eg, |c| {
            for (i, id) in c.term_order.iter().enumerate() {
                rank.entry(eg.find(*id)).or_insert(i);
            }
        });
        let mut by_rank: Vec<usize> = (0..members.len()).collect();
        by_rank.sort_by_key(|&k| (rank.get(&members[k].class).copied().unwrap_or(usize::MAX), k));
        let mut groups: Vec<(Vec<SymDim>, Vec<usize>)> = Vec::new();
        for (k, m) in by_rank.into_iter().map(|k| (k, &members[k])) {
            let Some(key) = shape_key(eg, m.sh) else { continue };
            if key.iter().any(|d| matches!(d, SymDim::Dynamic)) {
                continue;
            }
            let dk = &deps[&m.class];
            let depends_on = |j: usize| dk[j / 64] & (1 << (j % 64)) != 0;
            match groups.iter_mut().find(|(gk, g)| *gk == key && !g.iter().any(|&j| depends_on(j))) {
                Some((_, g)) => g.push(k),
                None => groups.push((key, vec![k])),
            }
        }
        let mut changed = Vec::new();
        for (_, g) in groups.into_iter().filter(|(_, g)| g.len() >= 2) {
            let sh = members[g[0]].sh;
            let mut kids = vec![sh];
            for &k in &g {
                kids.push(eg.add(members[k].lane.clone()));
            }
            let multi = eg.add(ArrayLang::Multi(kids.into()));
            for (i, &k) in g.iter().enumerate() {
                let at = crate::build::lit_i64(eg, i as i64);
                let p = eg.add(ArrayLang::Proj([at, multi]));
                if eg.union(members[k].class, p) {
                    changed.push(p);
                }
            }
        }
        changed
    }
}
