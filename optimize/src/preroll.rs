//! Long chains of one map, rolled into a loop before saturation.
//!
//! `map f (map f (.. (map f x)))` with `k` maps of one function is `map (\y -> iterate k f y)
//! x`: the identity of the `loop-chain` rule, lifted from scalar applications to maps. The
//! phases would reach the same form (the fuse phase builds the `k`-deep body, the loops
//! phase rolls it), but their e-graph grows by some 26 nodes per map, so a chain of tens of
//! thousands of maps (what tools emit when they unroll a loop) stops at the node limit
//! unfused. Rolled first, it is a handful of nodes.
//!
//! A chain is rolled when it has at least [`MIN_CHAIN`] maps, `f` takes one parameter and
//! mentions no parameter of an enclosing lambda (so it means the same one binder deeper),
//! and every inner map of the chain is used only by the next (a map read elsewhere is
//! shared work, computed once; rolling past it would compute it twice). Shorter chains are
//! left to the rules, which show their work in `explain`.
//!
//! Both forms evaluate `f` on each element `k` times in the same order, so results are bit
//! for bit the same.

use egg::{Id, Language, RecExpr};
use eqfuse_egraph::{ArrayLang, DeBruijn, Literal, Term};
use std::collections::HashMap;

/// The shortest chain rolled before saturation.
pub const MIN_CHAIN: usize = 64;

/// `term` with every chain of at least [`MIN_CHAIN`] maps of one function rolled (module
/// docs), and how many applications the rolls folded (`k - 1` for a chain of `k` maps, as
/// `loop-chain` counts them); `None` when there is none. Names and
/// positions follow the nodes that remain; a rolled chain takes those of its outermost map.
pub(crate) fn roll(term: &Term) -> Option<(Term, usize)> {
    let nodes = term.expr.as_ref();
    let n = nodes.len();
    let mut uses = vec![0usize; n];
    for node in nodes {
        for c in node.children() {
            uses[usize::from(*c)] += 1;
        }
    }
    // for each map of a closed one-parameter function: its chain's length and base
    let mut chain: Vec<Option<(usize, Id)>> = vec![None; n];
    let mut open = vec![0u32; n];
    for (i, node) in nodes.iter().enumerate() {
        open[i] = needs(nodes, node, &open);
        if let ArrayLang::Map(ch) = node {
            let [f, a] = ch[..] else { continue };
            if !one_param_closed(nodes, f, &open) {
                continue;
            }
            let inner = match &nodes[usize::from(a)] {
                ArrayLang::Map(ch2) if ch2[..] == [f, ch2[1]] && uses[usize::from(a)] == 1 => {
                    chain[usize::from(a)]
                }
                _ => None,
            };
            chain[i] = Some(inner.map_or((1, a), |(k, base)| (k + 1, base)));
        }
    }
    if !chain.iter().any(|c| c.is_some_and(|(k, _)| k >= MIN_CHAIN)) {
        return None;
    }
    // rebuild from the root down, so that the inner maps of a rolled chain are left out
    let mut out = RecExpr::default();
    let mut made: HashMap<usize, Id> = HashMap::new();
    let mut rolled = 0;
    // an explicit stack: a chain's depth is unbounded
    let mut stack = vec![(n - 1, false)];
    while let Some((i, ready)) = stack.pop() {
        if made.contains_key(&i) {
            continue;
        }
        let node = &nodes[i];
        if !ready {
            // a rolled chain's children are its function and its base, not the next map
            let kids: Vec<usize> = match (node, chain[i]) {
                (ArrayLang::Map(ch), Some((k, base))) if k >= MIN_CHAIN => {
                    vec![usize::from(ch[0]), usize::from(base)]
                }
                _ => node.children().iter().map(|c| usize::from(*c)).collect(),
            };
            stack.push((i, true));
            stack.extend(kids.into_iter().filter(|c| !made.contains_key(c)).map(|c| (c, false)));
            continue;
        }
        let id = match (node, chain[i]) {
            (ArrayLang::Map(ch), Some((k, base))) if k >= MIN_CHAIN => {
                rolled += k - 1;
                let f = *made.get(&usize::from(ch[0]))?;
                let x = *made.get(&usize::from(base))?;
                let ArrayLang::Lam([types, _]) = &nodes[usize::from(ch[0])] else { return None };
                let ArrayLang::Params(pt) = &nodes[usize::from(*types)] else { return None };
                let ty = *pt.0.first()?;
                let t = out.add(ArrayLang::Params(pt.clone()));
                let count = out.add(ArrayLang::Lit(Literal::I64(i64::try_from(k).ok()?)));
                let y = out.add(ArrayLang::Param(DeBruijn { index: 0, ty }));
                let body = out.add(ArrayLang::Iterate([count, f, y]));
                let g = out.add(ArrayLang::Lam([t, body]));
                out.add(ArrayLang::Map(vec![g, x].into_boxed_slice()))
            }
            _ => {
                let mut copy = node.clone();
                for c in copy.children_mut() {
                    // every child was made before its parent (the walk's order)
                    *c = *made.get(&usize::from(*c))?;
                }
                out.add(copy)
            }
        };
        made.insert(i, id);
    }
    Some((term.renumbered(out, |i| made.get(&i).map(|&id| usize::from(id))), rolled))
}

/// How many enclosing binders `node`'s parameters need (0: it mentions none from outside),
/// given its children's (`open`, by node index).
fn needs(nodes: &[ArrayLang], node: &ArrayLang, open: &[u32]) -> u32 {
    match node {
        ArrayLang::Param(p) => p.index + 1,
        ArrayLang::Lam([types, body]) => {
            let arity = match &nodes[usize::from(*types)] {
                ArrayLang::Params(pt) => pt.arity(),
                _ => 0,
            };
            open[usize::from(*body)].saturating_sub(arity)
        }
        _ => node.children().iter().map(|c| open[usize::from(*c)]).max().unwrap_or(0),
    }
}

/// Whether node `f` is a lambda of one parameter that mentions no enclosing parameter.
fn one_param_closed(nodes: &[ArrayLang], f: Id, open: &[u32]) -> bool {
    let ArrayLang::Lam([types, body]) = &nodes[usize::from(f)] else { return false };
    let ArrayLang::Params(pt) = &nodes[usize::from(*types)] else { return false };
    pt.0.len() == 1 && open[usize::from(*body)] <= 1
}
