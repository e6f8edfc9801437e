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

use egg::Language;
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang;
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

/// The strict sets of nodes, memoised (one per lowering).
#[derive(Default)]
pub(crate) struct Strict {
    memo: HashMap<usize, Rc<HashSet<usize>>>,
}

impl Strict {
    /// `strict(i)`.
    pub fn of(&mut self, v: &View<'_>, i: usize) -> Rc<HashSet<usize>> {
        if let Some(s) = self.memo.get(&i) {
            return s.clone();
        }
        let mut set = HashSet::new();
        self.walk(v, i, &mut |n| set.insert(n));
        let set = Rc::new(set);
        self.memo.insert(i, set.clone());
        set
    }

    /// Visits `strict(i)`: `visit(n)` says whether to go on below `n` (false when `n`
    /// and so what it computes is known already).
    pub fn walk(&mut self, v: &View<'_>, i: usize, visit: &mut dyn FnMut(usize) -> bool) {
        let mut stack = vec![i];
        while let Some(n) = stack.pop() {
            if !visit(n) || v.opaque(n) {
                continue;
            }
            let kid = |c: &egg::Id| usize::from(*c);
            match &v.nodes[n] {
                ArrayLang::If([c, t, e]) => {
                    stack.push(kid(c));
                    let (st, se) = (self.of(v, kid(t)), self.of(v, kid(e)));
                    stack.extend(st.iter().filter(|x| se.contains(x)));
                }
                ArrayLang::And([a, _]) | ArrayLang::Or([a, _]) => stack.push(kid(a)),
                ArrayLang::Iterate([k, _, x]) => stack.extend([kid(k), kid(x)]),
                ArrayLang::App(c) => {
                    let Some((f, args)) = c.split_first() else { continue };
                    let ArrayLang::Lam([_, b]) = &v.nodes[kid(f)] else { continue };
                    // the arguments the body computes on every path (its parameters are
                    // computed where first used), and the body's closed subterms
                    let k = args.len();
                    for x in self.of(v, kid(b)).iter() {
                        match &v.nodes[*x] {
                            ArrayLang::Param(p) if (p.index as usize) < k => {
                                stack.push(kid(&args[k - 1 - p.index as usize]));
                            }
                            _ if v.free[*x].is_empty() => stack.push(*x),
                            _ => {}
                        }
                    }
                }
                other => stack.extend(other.children().iter().map(kid)),
            }
        }
    }
}
