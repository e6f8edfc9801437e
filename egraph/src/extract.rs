//! Acyclic extraction: one node per e-class, chosen bottom-up so the choice can never form
//! a cycle, preferring terms with fewer free parameters.
//!
//! The algorithm is Knuth's generalisation of Dijkstra's (the "superior functions" of his
//! 1977 grammar problem): a class is *settled* when its cheapest node whose children are
//! all settled comes off a priority queue, and a node only enters the queue once all its
//! children are settled. Whatever the cost function, a settled class refers only to classes
//! settled before it, so the extracted term is a DAG; when costs grow from children to
//! parents (as a tree cost does) the choice is the optimal one.
//!
//! **Dead parameters.** A class may hold a closed node and, merged with it, an open node
//! whose parameters are dead (`g a b` where `g` ignores `b`, equal to a closed `R`). De
//! Bruijn parameters only mean something under the binders of the context the node came
//! from, so such an open node must not be extracted where the class is used elsewhere
//! (inside another lambda, with parameters of other types). [`needed`] computes, for every
//! class, the parameters all its nodes need (a fixpoint of intersections); a node whose
//! extracted term mentions more than its class needs pays [`DEAD_PARAM`] per extra
//! parameter. The penalty is part of the cost, so costs still grow from children to parents
//! and the choice stays optimal for the penalised cost.

use crate::analysis::{Facts, Kind, ParamSet};
use crate::idmap::IdMap;
use crate::lang::ArrayLang;
use egg::{EGraph, Id, Language, RecExpr};
use eqfuse_ir::error::Result;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// What extraction settled for one class.
#[derive(Clone, Debug)]
pub struct Settled {
    /// The chosen node (children canonical).
    pub node: ArrayLang,
    /// Its cost (the cost function's, children included).
    pub cost: f64,
    /// The free parameters of the extracted term.
    pub free: ParamSet,
}

/// The choice of one node per reachable class.
#[derive(Clone, Debug, Default)]
pub struct Choice {
    /// By canonical class.
    pub classes: IdMap<Settled>,
}

/// A node's cost given its class and its children's (`child(c)`: the chosen cost of child
/// class `c`).
pub type NodeCost<'a> = dyn FnMut(Id, &ArrayLang, &dyn Fn(Id) -> f64) -> f64 + 'a;

/// The cost added per parameter a node mentions beyond what its class needs.
pub const DEAD_PARAM: f64 = 1e9;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Key {
    cost: f64,
    node: usize,
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        self.cost.total_cmp(&other.cost).then(self.node.cmp(&other.node))
    }
}

/// Chooses a node for every class of `eg` that has a finite (acyclic) term.
///
/// `cost(class, node, child)` is a node's cost given its children's (`child(c)` is the
/// settled cost of child class `c`).
pub fn choose(
    eg: &EGraph<ArrayLang, Facts>,
    cost: impl FnMut(Id, &ArrayLang, &dyn Fn(Id) -> f64) -> f64,
) -> Choice {
    let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
    ids.sort();
    let need = needed(eg, &ids);
    choose_with(eg, &need, true, cost)
}

/// [`choose`] with the parameters each class needs computed already ([`needed`]), and
/// local improvement only when `improve_after` (a cost that never falls from child to
/// parent does not need it).
pub fn choose_with(
    eg: &EGraph<ArrayLang, Facts>,
    need: &IdMap<ParamSet>,
    improve_after: bool,
    mut cost: impl FnMut(Id, &ArrayLang, &dyn Fn(Id) -> f64) -> f64,
) -> Choice {
    let mut ids: Vec<Id> = eg.classes().map(|c| c.id).collect();
    ids.sort();
    let mut nodes: Vec<(Id, ArrayLang)> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    // the nodes that have each class as a child, by class number (egg's ids are dense)
    let mut parents: Vec<Vec<usize>> = vec![Vec::new(); ids.last().map_or(0, |c| usize::from(*c) + 1)];
    let mut kids: Vec<Id> = Vec::new();
    for &c in &ids {
        for n in &eg[c].nodes {
            let n = n.clone().map_children(|k| eg.find(k));
            kids.clear();
            kids.extend_from_slice(n.children());
            kids.sort();
            kids.dedup();
            for k in &kids {
                if let Some(p) = parents.get_mut(usize::from(*k)) {
                    p.push(nodes.len());
                }
            }
            pending.push(kids.len());
            nodes.push((c, n));
        }
    }
    let mut choice = Choice { classes: IdMap::with_capacity(parents.len()) };
    let mut heap: BinaryHeap<Reverse<Key>> = BinaryHeap::new();
    let mut scored: Vec<Option<Settled>> = vec![None; nodes.len()];
    let mut push =
        |i: usize, choice: &Choice, heap: &mut BinaryHeap<Reverse<Key>>, scored: &mut [Option<Settled>]| {
            let (class, n) = &nodes[i];
            let (c, free) = node_cost(eg, choice, need, *class, n, &mut cost);
            scored[i] = Some(Settled { node: n.clone(), cost: c, free });
            heap.push(Reverse(Key { cost: c, node: i }));
        };
    for (i, p) in pending.iter().enumerate() {
        if *p == 0 {
            push(i, &choice, &mut heap, &mut scored);
        }
    }
    while let Some(Reverse(key)) = heap.pop() {
        let class = nodes[key.node].0;
        if choice.classes.contains_key(&class) {
            continue;
        }
        let Some(settled) = scored[key.node].take() else { continue };
        choice.classes.insert(class, settled);
        for &p in parents.get(usize::from(class)).map_or(&[][..], |v| &v[..]) {
            pending[p] -= 1;
            if pending[p] == 0 && !choice.classes.contains_key(&nodes[p].0) {
                push(p, &choice, &mut heap, &mut scored);
            }
        }
    }
    if improve_after {
        improve(eg, &mut choice, need, &mut cost);
    }
    choice
}

/// Local improvement: where a class has a node cheaper than its choice given the choices of
/// its children (a cost that falls from child to parent, as a `proj` of a shared `multi`
/// does, is not seen by the settling order), take it unless it would close a cycle. Costs
/// are recomputed in dependency order after each pass; at most a few passes.
fn improve(
    eg: &EGraph<ArrayLang, Facts>,
    choice: &mut Choice,
    need: &IdMap<ParamSet>,
    cost: &mut NodeCost<'_>,
) {
    let ids: Vec<Id> = choice.classes.keys().collect();
    let mut changed = true;
    for _ in 0..8 {
        recost(eg, choice, &ids, need, cost);
        changed = false;
        for &c in &ids {
            for n in &eg[c].nodes {
                // the chosen node itself, or a node with a child without a choice: nothing
                // to weigh (compared before the node is copied in canonical form)
                let chosen = &choice.classes[&c].node;
                let canonical_kids = || n.children().iter().map(|k| eg.find(*k));
                if n.matches(chosen) && canonical_kids().eq(chosen.children().iter().copied())
                    || canonical_kids().any(|k| !choice.classes.contains_key(&k))
                {
                    continue;
                }
                let n = n.clone().map_children(|k| eg.find(k));
                let (k, free) = node_cost(eg, choice, need, c, &n, cost);
                let current = choice.classes[&c].cost;
                if k < current - 1e-9 * current.abs()
                    && !n.children().iter().any(|k| reaches(eg, choice, *k, c))
                {
                    choice.classes.insert(c, Settled { node: n, cost: k, free });
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // (after a pass that changed nothing, the costs are those its recost computed)
    if changed {
        recost(eg, choice, &ids, need, cost);
    }
}

/// A node's cost (with the dead-parameter penalty) and free parameters under `choice`.
fn node_cost(
    eg: &EGraph<ArrayLang, Facts>,
    choice: &Choice,
    need: &IdMap<ParamSet>,
    class: Id,
    n: &ArrayLang,
    cost: &mut NodeCost<'_>,
) -> (f64, ParamSet) {
    let settled = |c: Id| choice.classes.get(&c).map_or(f64::INFINITY, |s| s.cost);
    let free = free_of(eg, n, |c| choice.classes.get(&c).map(|s| &s.free));
    let extra = free.iter().filter(|p| !need.get(&class).is_some_and(|s| s.contains(*p))).count();
    (cost(class, n, &settled) + DEAD_PARAM * extra as f64, free)
}

/// Whether `from` reaches `to` through the chosen nodes.
fn reaches(eg: &EGraph<ArrayLang, Facts>, choice: &Choice, from: Id, to: Id) -> bool {
    let mut stack = vec![eg.find(from)];
    let mut seen = std::collections::HashSet::new();
    while let Some(c) = stack.pop() {
        if c == to {
            return true;
        }
        if !seen.insert(c) {
            continue;
        }
        if let Some(s) = choice.classes.get(&c) {
            stack.extend(s.node.children().iter().map(|k| eg.find(*k)));
        }
    }
    false
}

/// Recomputes every chosen class's cost and free set, children first.
fn recost(
    eg: &EGraph<ArrayLang, Facts>,
    choice: &mut Choice,
    ids: &[Id],
    need: &IdMap<ParamSet>,
    cost: &mut NodeCost<'_>,
) {
    // post-order over the chosen DAG, iteratively (`done` by class number: egg's ids are
    // dense)
    let mut done = vec![false; ids.iter().map(|c| usize::from(*c) + 1).max().unwrap_or(0)];
    let is_done = |done: &[bool], c: Id| done.get(usize::from(c)).copied().unwrap_or(false);
    let mut stack = Vec::new();
    for &root in ids {
        stack.push((root, false));
        while let Some((c, expanded)) = stack.pop() {
            if is_done(&done, c) {
                continue;
            }
            let Some(s) = choice.classes.get(&c) else { continue };
            if expanded {
                let (k, free) = node_cost(eg, choice, need, c, &s.node, cost);
                if let Some(s) = choice.classes.get_mut(&c) {
                    s.cost = k;
                    s.free = free;
                }
                if let Some(d) = done.get_mut(usize::from(c)) {
                    *d = true;
                }
                continue;
            }
            stack.push((c, true));
            for k in s.node.children() {
                if !is_done(&done, *k) {
                    stack.push((*k, false));
                }
            }
        }
    }
}

/// The parameters each class needs: the greatest fixpoint of "the intersection, over the
/// class's nodes, of the parameters a node mentions given its children's needs", from the
/// analysis's union. Bounded to a few passes (what is left is only less precise).
pub fn needed(eg: &EGraph<ArrayLang, Facts>, ids: &[Id]) -> IdMap<ParamSet> {
    let mut need: IdMap<ParamSet> = ids.iter().map(|c| (*c, eg[*c].data.free.clone())).collect();
    for _ in 0..32 {
        let mut changed = false;
        for c in ids {
            if need[c].is_empty() {
                continue;
            }
            let mut meet: Option<ParamSet> = None;
            for n in &eg[*c].nodes {
                let f = free_of(eg, n, |k| need.get(&eg.find(k)));
                meet = Some(match meet {
                    None => f,
                    Some(m) => m.intersect(&f),
                });
            }
            if let Some(m) = meet {
                if m != need[c] {
                    need.insert(*c, m);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    need
}

/// The free parameters of `node` given its children's (`None`: the child has no set yet,
/// counted as closed).
fn free_of<'a>(
    eg: &EGraph<ArrayLang, Facts>,
    node: &ArrayLang,
    child: impl Fn(Id) -> Option<&'a ParamSet>,
) -> ParamSet {
    let empty = ParamSet::empty();
    match node {
        ArrayLang::Param(p) => ParamSet::single(p.index),
        ArrayLang::Lam([n, body]) => {
            let b = child(*body).unwrap_or(&empty);
            match eg[*n].data.kind {
                Kind::Params(k) => b.under_binder(k),
                _ => b.clone(),
            }
        }
        n => {
            let mut s = ParamSet::empty();
            for c in n.children() {
                s.union_with(child(*c).unwrap_or(&empty));
            }
            s
        }
    }
}

/// The term `choice` gives `root` as a DAG (one node per class, children before parents),
/// with the node index of each class in it.
pub fn term_of(
    eg: &EGraph<ArrayLang, Facts>,
    choice: &Choice,
    root: Id,
) -> Result<(RecExpr<ArrayLang>, IdMap<usize>)> {
    let mut index: IdMap<usize> = IdMap::default();
    let mut term = RecExpr::default();
    let mut stack: Vec<(Id, bool)> = vec![(eg.find(root), false)];
    let mut open = std::collections::HashSet::new();
    let missing = || eqfuse_ir::error::internal("a class has no acyclic term to extract");
    while let Some((c, done)) = stack.pop() {
        if index.contains_key(&c) {
            continue;
        }
        let node = &choice.classes.get(&c).ok_or_else(missing)?.node;
        if done {
            let mut bad = false;
            let n = node.clone().map_children(|k| match index.get(&eg.find(k)) {
                Some(&i) => Id::from(i),
                None => {
                    bad = true;
                    Id::from(0usize)
                }
            });
            if bad {
                return Err(eqfuse_ir::error::internal("the extracted term has a cycle"));
            }
            index.insert(c, term.as_ref().len());
            term.add(n);
            continue;
        }
        if !open.insert(c) {
            return Err(eqfuse_ir::error::internal("the extracted term has a cycle"));
        }
        stack.push((c, true));
        for k in node.children() {
            let k = eg.find(*k);
            if !index.contains_key(&k) {
                stack.push((k, false));
            }
        }
    }
    Ok((term, index))
}
