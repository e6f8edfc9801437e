//! Substitution into an extracted representative (docs/design-decisions.md, decision 3).
//!
//! Rules never push explicit substitutions through the e-graph. To beta-reduce
//! `(app (lam <t..> body) args)`, [`beta`] walks the *smallest term* of `body` (each class's
//! [`ClassFacts::best`](eqfuse_egraph::ClassFacts) node, whose children lead to strictly
//! smaller terms, so the walk ends) and adds the substituted copy. Classes that mention no
//! parameter the substitution touches are reused as they are, so the copy shares every
//! closed subterm with the original; each (class, binder depth) is visited once.
//!
//! The walk is recursive over the term's depth, bounded by [`MAX_DEPTH`]: past it the
//! rewrite is not applied (the optimiser runs on a thread with a large stack).

use crate::EG;
use egg::{Id, Language};
use eqfuse_egraph::{ArrayLang, DeBruijn, Kind};
use std::collections::{HashMap, HashSet};

/// The deepest term a substitution walks; deeper ones are left unreduced.
pub const MAX_DEPTH: u32 = 20_000;

/// What to do at a class during a [`walk`].
pub enum Step {
    /// The class is unchanged: reuse it.
    Keep,
    /// Replace the class by this one.
    Replace(Id),
    /// Replace the class by this one, walked in turn (at the same depth).
    Revisit(Id),
    /// Rebuild its smallest term with the children walked.
    Descend,
}

/// A rewrite of a term by walking its representative.
pub trait Visitor {
    /// Decides at class `c` (canonical), at binder depth `depth` (lambdas entered below the
    /// walk's root).
    fn step(&mut self, eg: &mut EG, c: Id, depth: u32) -> Option<Step>;

    /// Called when the walk of a [`Step::Revisit`] this visitor asked for is over.
    fn revisited(&mut self) {}

    /// How often this visitor has made a choice that depends on where the walk is (a
    /// choice a walk from elsewhere might make differently). A result computed while this
    /// count changed is not kept in a shared memo.
    fn context_choices(&self) -> usize {
        0
    }
}

/// Walks the representative of `root` with `v`, adding the rebuilt term; `None` when the
/// visitor gives up or the term is deeper than [`MAX_DEPTH`].
pub fn walk(eg: &mut EG, root: Id, v: &mut dyn Visitor) -> Option<Id> {
    walk_with(eg, root, v, &mut HashMap::new())
}

/// [`walk`] with a memo of what each (class, depth) became that outlives the walk: walks
/// with one visitor (the same substitution, the same index space) share their work. An
/// entry stays a sound equality whatever happens to the e-graph after it was made.
pub fn walk_with(
    eg: &mut EG,
    root: Id,
    v: &mut dyn Visitor,
    shared: &mut HashMap<(Id, u32), Id>,
) -> Option<Id> {
    let mut w = Walk { v, memo: HashMap::new(), shared: std::mem::take(shared), open: HashSet::new() };
    let r = w.go(eg, root, 0, 0);
    *shared = w.shared;
    r
}

/// [`walk`] of a class that sits at binder `depth` of the term the visitor walks (a walk
/// the visitor starts from inside its own, with its own memo).
pub fn walk_at(eg: &mut EG, root: Id, depth: u32, v: &mut dyn Visitor) -> Option<Id> {
    let mut w = Walk { v, memo: HashMap::new(), shared: HashMap::new(), open: HashSet::new() };
    w.go(eg, root, depth, 0)
}

/// One walk's state: what each (class, depth) became (in this walk, and in the memo it
/// shares with other walks), and the ones being walked now.
struct Walk<'v> {
    v: &'v mut dyn Visitor,
    memo: HashMap<(Id, u32), Id>,
    shared: HashMap<(Id, u32), Id>,
    open: HashSet<(Id, u32)>,
}

impl Walk<'_> {
    fn go(&mut self, eg: &mut EG, c: Id, depth: u32, stack: u32) -> Option<Id> {
        let c = eg.find(c);
        if let Some(&r) = self.memo.get(&(c, depth)).or_else(|| self.shared.get(&(c, depth))) {
            return Some(r);
        }
        // a class met again inside its own walk (a cyclic e-graph): give up the rewrite
        if stack > MAX_DEPTH || !self.open.insert((c, depth)) {
            return None;
        }
        let choices = self.v.context_choices();
        let r = self.step(eg, c, depth, stack);
        self.open.remove(&(c, depth));
        let r = r?;
        self.memo.insert((c, depth), r);
        if self.v.context_choices() == choices {
            self.shared.insert((c, depth), r);
        }
        Some(r)
    }

    fn step(&mut self, eg: &mut EG, c: Id, depth: u32, stack: u32) -> Option<Id> {
        Some(match self.v.step(eg, c, depth)? {
            Step::Keep => c,
            Step::Replace(r) => r,
            Step::Revisit(r) => {
                let r = self.go(eg, r, depth, stack + 1);
                self.v.revisited();
                r?
            }
            Step::Descend => {
                let node = eg[c].data.best.clone();
                let inner = match &node {
                    ArrayLang::Lam([p, _]) => match eg[*p].data.kind {
                        Kind::Params(k) => k,
                        _ => return None,
                    },
                    _ => 0,
                };
                let mut kids = Vec::with_capacity(node.children().len());
                for (k, ch) in node.children().iter().enumerate() {
                    // the body of a lam is under its binder; its parameter types are not
                    let d = if inner > 0 && k == 1 { depth + inner } else { depth };
                    kids.push(self.go(eg, *ch, d, stack + 1)?);
                }
                let mut it = kids.into_iter();
                let rebuilt = node.map_children(|_| it.next().unwrap_or(Id::from(0usize)));
                let r = eg.add(rebuilt);
                if r != c {
                    // the copy stands for the same source expression: it keeps its position
                    eg.analysis.derived.push((r, c));
                }
                r
            }
        })
    }
}

/// Whether class `c` mentions a parameter at or above `from` (seen at its own depth).
fn mentions_from(eg: &EG, c: Id, from: u32) -> bool {
    eg[c].data.free.max().is_some_and(|m| m >= from)
}

/// Raises every parameter of `c` that is free at depth `cutoff` by `by`.
struct Shift {
    by: u32,
}

impl Visitor for Shift {
    fn step(&mut self, eg: &mut EG, c: Id, depth: u32) -> Option<Step> {
        if !mentions_from(eg, c, depth) {
            return Some(Step::Keep);
        }
        Some(match eg[c].data.best {
            ArrayLang::Param(p) => Step::Replace(
                eg.add(ArrayLang::Param(DeBruijn { index: p.index.checked_add(self.by)?, ty: p.ty })),
            ),
            _ => Step::Descend,
        })
    }
}

/// `c` with its free parameters raised by `by` (to move it under `by` binders).
pub fn shift(eg: &mut EG, c: Id, by: u32) -> Option<Id> {
    if by == 0 || eg[c].data.free.is_empty() {
        return Some(eg.find(c));
    }
    walk(eg, c, &mut Shift { by })
}

/// The body of a `k`-parameter lambda with its parameters replaced by `args` (source order,
/// as written at the application), its other free parameters lowered by `lower` (`k` when
/// the lambda goes away; less when the body goes under another lambda, see [`rebind`]).
struct Beta<'a> {
    k: u32,
    args: &'a [Id],
    lower: u32,
}

impl Visitor for Beta<'_> {
    fn step(&mut self, eg: &mut EG, c: Id, depth: u32) -> Option<Step> {
        if !mentions_from(eg, c, depth) {
            return Some(Step::Keep);
        }
        Some(match eg[c].data.best {
            ArrayLang::Param(p) if p.index >= depth => {
                let rel = p.index - depth;
                if rel < self.k {
                    // `$rel` is parameter number k-1-rel in source order
                    let arg = *self.args.get((self.k - 1 - rel) as usize)?;
                    // a parameter of another type is a dead one of another context (a class
                    // can hold an open node equal to a closed one): give the rewrite up
                    if eg[arg].data.kind != Kind::Scalar(p.ty) {
                        return None;
                    }
                    Step::Replace(shift(eg, arg, depth)?)
                } else {
                    Step::Replace(
                        eg.add(ArrayLang::Param(DeBruijn { index: p.index - self.lower, ty: p.ty })),
                    )
                }
            }
            _ => Step::Descend,
        })
    }
}

/// Beta-reduces `(app (lam <k types> body) args)`: the substituted body's class.
pub fn beta(eg: &mut EG, body: Id, args: &[Id]) -> Option<Id> {
    let k = u32::try_from(args.len()).ok()?;
    // `(\i.. -> body) i..` with the lambda's own parameters, in order, at the same depth
    // (a read `a[i]` of a producer over the same index space): the body itself
    if body_params_identity(eg, body, args, k) {
        return Some(eg.find(body));
    }
    walk(eg, body, &mut Beta { k, args, lower: k })
}

/// The body of a `k`-parameter lambda made the body of an `m`-parameter one (`m <= k`):
/// parameter `$p` becomes `params[k - 1 - p]`, a parameter node of the new lambda (several
/// old ones may become one) or a closed class; the other free parameters move down by
/// `k - m`.
pub fn rebind(eg: &mut EG, body: Id, params: &[Id], m: u32) -> Option<Id> {
    let k = u32::try_from(params.len()).ok()?;
    walk(eg, body, &mut Beta { k, args: params, lower: k.checked_sub(m)? })
}

/// Whether `args` are `$k-1 .. $0` (the parameters of a `k`-parameter lambda, in source
/// order) and `body` mentions no parameter past them: substituting them changes nothing.
fn body_params_identity(eg: &EG, body: Id, args: &[Id], k: u32) -> bool {
    if eg[body].data.free.max().is_some_and(|m| m >= k) {
        return false;
    }
    args.iter().enumerate().all(|(j, a)| {
        let want = k - 1 - j as u32;
        eg[*a].nodes.iter().any(|n| matches!(n, ArrayLang::Param(p) if p.index == want))
            && eg[*a].data.free.iter().all(|i| i == want)
    })
}

/// The `lam` node of a function class with `arity` parameters: its body.
pub fn lam_body(eg: &EG, f: Id, arity: usize) -> Option<Id> {
    eg[f].nodes.iter().find_map(|n| match n {
        ArrayLang::Lam([p, b]) => match &eg[*p].data.kind {
            Kind::Params(k) if *k as usize == arity => Some(*b),
            _ => None,
        },
        _ => None,
    })
}
