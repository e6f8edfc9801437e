//! Which scalar values an expression computes on every path: its *strict* subterms.
//!
//! Lowering uses them so that a value needed on both sides of an `if`, or needed both inside
//! a branch and after the `if`, is computed once before it instead of once per place: the
//! plan then does not depend on which of two equal terms (`if c then a[i] else f a[i]` or
//! `let v = a[i] in if c then v else f v`) the extraction chose. Computing such a value
//! early is safe: the code computes it on every path anyway.
//!
//! `strict(i)` (relative to the environment of `i`) holds `i` and
//! - of `if c t e`: `c`, and what both `t` and `e` compute;
//! - of `a && b`, `a || b`: `a` (`b` is evaluated on one path only);
//! - of `iterate n f x`: `n` and `x` (the body may run no time);
//! - of an application `(\.. -> b) a..`: the arguments for the parameters `b` computes on
//!   every path (an argument is computed where the body first uses it), and `b`'s strict
//!   subterms with no free parameter (the same values whatever the environment);
//! - of any other scalar operation: its operands;
//! - nothing under a lambda otherwise, inside an array operation (a kernel of its own) or
//!   inside a host `if` (its branches are steps of their own).
//!
//! The sets are bitsets over the term's nodes where large ([`NodeSet`]) and memoised for
//! every `if` (its own set and the intersection of its branches'), so that a chain of `if`s
//! (an unrolled recurrence) costs one set operation per link instead of a walk of the
//! whole chain below it.

mod set;

use egg::Language;
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang;
use set::Bits;
pub(crate) use set::NodeSet;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// The term lowering works on, as the strictness walk needs it.
pub(crate) struct View<'a> {
    pub nodes: &'a [ArrayLang],
    pub kinds: &'a [Kind],
    /// Free parameters of each node.
    pub free: &'a [Vec<u32>],
    /// The host `if`s (lazy steps).
    pub branching: &'a HashSet<usize>,
}

impl View<'_> {
    /// A node whose operands are not evaluated as part of it here: an array, an array
    /// operation, a lambda, a host `if`.
    fn opaque(&self, n: usize) -> bool {
        let node = &self.nodes[n];
        !matches!(self.kinds[n], Kind::Scalar(_) | Kind::Tuple(_))
            || node.array_op().is_some()
            || matches!(node, ArrayLang::Lam(_) | ArrayLang::Params(_))
            || self.branching.contains(&n)
    }
}

/// The nodes of the term with no free parameter, and its parameter nodes.
struct Masks {
    closed: Bits,
    params: Bits,
}

/// The strict sets of nodes, memoised (one per lowering).
#[derive(Default)]
pub(crate) struct Strict {
    memo: HashMap<usize, Rc<NodeSet>>,
    /// Of each `if` met: what both its branches compute.
    both: HashMap<usize, Rc<NodeSet>>,
    masks: Option<Rc<Masks>>,
}

fn kid(c: &egg::Id) -> usize {
    usize::from(*c)
}

/// The argument an application `(\.. -> b) args` passes for parameter node `x` of `b`,
/// if `x` is one of the lambda's own parameters.
fn arg_of(v: &View<'_>, args: &[egg::Id], x: usize) -> Option<usize> {
    let k = args.len();
    match &v.nodes[x] {
        ArrayLang::Param(p) if (p.index as usize) < k => Some(kid(&args[k - 1 - p.index as usize])),
        _ => None,
    }
}

impl Strict {
    fn masks(&mut self, v: &View<'_>) -> Rc<Masks> {
        if let Some(m) = &self.masks {
            return m.clone();
        }
        let len = v.nodes.len();
        let (mut closed, mut params) = (Bits::new(len), Bits::new(len));
        for n in 0..len {
            if v.free[n].is_empty() {
                closed.insert(n);
            }
            if matches!(v.nodes[n], ArrayLang::Param(_)) {
                params.insert(n);
            }
        }
        let m = Rc::new(Masks { closed, params });
        self.masks = Some(m.clone());
        m
    }

    /// What both branches `t` and `e` of `if` node `n` compute: `strict(t) ∩ strict(e)`.
    fn both(&mut self, v: &View<'_>, n: usize, t: usize, e: usize) -> Rc<NodeSet> {
        if let Some(s) = self.both.get(&n) {
            return s.clone();
        }
        let (st, se) = (self.of(v, t), self.of(v, e));
        let s = Rc::new(st.intersect(&se, v.nodes.len()));
        self.both.insert(n, s.clone());
        s
    }

    /// `strict(i)`.
    ///
    /// A strict set is closed (it holds the strict set of each of its nodes), so the set of
    /// a node met below `i` whose set is known is added whole, and so is what both branches
    /// of an `if` compute; the closed nodes of an application's body make a closed set too
    /// (a node's strict subterms have no free parameter it does not have).
    pub fn of(&mut self, v: &View<'_>, i: usize) -> Rc<NodeSet> {
        if let Some(s) = self.memo.get(&i) {
            return s.clone();
        }
        let masks = self.masks(v);
        let mut acc = Bits::new(v.nodes.len());
        let mut stack = vec![i];
        while let Some(n) = stack.pop() {
            if acc.contains(n) {
                continue;
            }
            if n != i {
                let known = match self.memo.get(&n) {
                    Some(s) => Some(s.clone()),
                    // every `if`'s set is memoised: a chain of them is one step each
                    None if matches!(v.nodes[n], ArrayLang::If(_)) && !v.opaque(n) => Some(self.of(v, n)),
                    None => None,
                };
                if let Some(s) = known {
                    acc.union(&s);
                    continue;
                }
            }
            acc.insert(n);
            if v.opaque(n) {
                continue;
            }
            match &v.nodes[n] {
                ArrayLang::If([c, t, e]) => {
                    stack.push(kid(c));
                    acc.union(&self.both(v, n, kid(t), kid(e)));
                }
                ArrayLang::And([a, _]) | ArrayLang::Or([a, _]) => stack.push(kid(a)),
                ArrayLang::Iterate([k, _, x]) => stack.extend([kid(k), kid(x)]),
                ArrayLang::App(c) => {
                    let Some((f, args)) = c.split_first() else { continue };
                    let ArrayLang::Lam([_, b]) = &v.nodes[kid(f)] else { continue };
                    let sb = self.of(v, kid(b));
                    stack
                        .extend(sb.iter_masked(Some(&masks.params), None).filter_map(|x| arg_of(v, args, x)));
                    acc.union_masked(&sb, &masks.closed);
                }
                other => stack.extend(other.children().iter().map(kid)),
            }
        }
        let set = Rc::new(acc.into_set());
        self.memo.insert(i, set.clone());
        set
    }

    /// Visits `strict(i)`: `visit(n)` says whether to go on below `n` (false when `n`
    /// and so what it computes is known already). It is asked once about each node.
    pub fn walk(&mut self, v: &View<'_>, i: usize, visit: &mut dyn FnMut(usize) -> bool) {
        let masks = self.masks(v);
        let mut seen = Bits::new(v.nodes.len());
        seen.insert(i);
        let mut stack = vec![i];
        while let Some(n) = stack.pop() {
            if !visit(n) || v.opaque(n) {
                continue;
            }
            let next: Vec<usize> = match &v.nodes[n] {
                ArrayLang::If([c, t, e]) => {
                    let both = self.both(v, n, kid(t), kid(e));
                    std::iter::once(kid(c)).chain(both.iter_masked(None, Some(&seen))).collect()
                }
                ArrayLang::And([a, _]) | ArrayLang::Or([a, _]) => vec![kid(a)],
                ArrayLang::Iterate([k, _, x]) => vec![kid(k), kid(x)],
                ArrayLang::App(c) => {
                    let Some((f, args)) = c.split_first() else { continue };
                    let ArrayLang::Lam([_, b]) = &v.nodes[kid(f)] else { continue };
                    // the arguments the body computes on every path (its parameters are
                    // computed where first used), and the body's closed subterms
                    let sb = self.of(v, kid(b));
                    let args = sb.iter_masked(Some(&masks.params), None).filter_map(|x| arg_of(v, args, x));
                    args.chain(sb.iter_masked(Some(&masks.closed), Some(&seen))).collect()
                }
                other => other.children().iter().map(kid).collect(),
            };
            for x in next {
                if seen.insert(x) {
                    stack.push(x);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
