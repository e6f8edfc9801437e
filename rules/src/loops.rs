//! Loop recovery (docs/design-decisions.md, decision 3: loop introduction and joining): a chain
//! of applications of one function becomes an `iterate`.
//!
//! | rule | identity |
//! | --- | --- |
//! | `loop-chain` | `f (f (.. (f x)))` (`k >= 2` applications, some of them already `iterate n f`) `== iterate k f x` |
//! | `loop-join` | `iterate m f (iterate n f x) == iterate (m + n) f x` for constants `m, n >= 0` |
//!
//! Fusing a chain of identical maps builds a body that applies one element function `k`
//! times; these rules fold it back into a loop, which the cost model prefers (its code is
//! the body once: [`CostParams::code`](eqfuse_lower::model::CostParams)). Both sides
//! evaluate the same operations in the same order, so results and errors are bit for bit
//! the same. `f` sits at the same binder depth on both sides, so a function that mentions
//! an enclosing parameter stays correct. `iterate n f x` with `n <= 0` is `x`: only
//! constant counts `>= 0` are joined.
//!
//! `loop-chain` walks a whole chain at once (a chain of 1000 applications becomes one
//! `iterate 1000` in one step, instead of 999 joins), bounded by [`MAX_CHAIN`].

use crate::build::const_i64;
use crate::node_rule::{kinds, node_rule, Select};
use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use crate::{Rewrite, EG};
use egg::Id;
use eqfuse_egraph::ArrayLang;
use std::sync::Arc;

/// The longest chain one application of `loop-chain` walks.
pub const MAX_CHAIN: i64 = 1 << 20;

/// The loops rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    themed(
        Theme::Loops,
        &[Phase::Loops],
        vec![
            (
                r#"f (f .. (f x)) == iterate k f x"#,
                node_rule(
                    "loop-chain",
                    Select::when(kinds![App], |_, n| matches!(n, ArrayLang::App(c) if c.len() == 2)),
                    Arc::new(chain),
                ),
            ),
            (
                r#"iterate m f (iterate n f x) == iterate (m + n) f x, for m, n >= 0"#,
                node_rule("loop-join", Select::kinds(kinds![Iterate]), Arc::new(join)),
            ),
        ],
    )
}

/// The rewrites of [`table`].
pub fn rules() -> Vec<Rewrite> {
    table().into_iter().map(|r| r.rewrite).collect()
}

/// `(n, x)` when class `c` holds `f` applied `n >= 1` times to `x` in one node (`app f x`,
/// or `iterate n f x` with a constant `n >= 1`).
fn one_step(eg: &EG, c: Id, f: Id) -> Option<(i64, Id)> {
    eg[c].nodes.iter().find_map(|n| match n {
        ArrayLang::App(k) if k.len() == 2 && eg.find(k[0]) == f => Some((1, k[1])),
        ArrayLang::Iterate([cnt, g, x]) if eg.find(*g) == f => {
            const_i64(eg, *cnt).filter(|v| *v >= 1).map(|v| (v, *x))
        }
        _ => None,
    })
}

fn chain(eg: &mut EG, at: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::App(k) = n else { return None };
    let [f, x] = k[..] else { return None };
    let f = eg.find(f);
    let mut total: i64 = 1;
    let mut base = eg.find(x);
    let mut seen = std::collections::HashSet::from([eg.find(at)]);
    while let Some((m, next)) = one_step(eg, base, f) {
        let next = eg.find(next);
        // a class that is `f` of itself (a cycle) ends the walk
        if !seen.insert(base) || seen.contains(&next) {
            break;
        }
        total = total.checked_add(m)?;
        base = next;
        if total >= MAX_CHAIN {
            break;
        }
    }
    if total < 2 {
        return None;
    }
    let cnt = crate::build::lit_i64(eg, total);
    Some(eg.add(ArrayLang::Iterate([cnt, f, base])))
}

fn join(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let ArrayLang::Iterate([m, f, inner]) = *n else { return None };
    let m = const_i64(eg, m).filter(|v| *v >= 0)?;
    let f = eg.find(f);
    let (k, x) = eg[inner].nodes.iter().find_map(|n| match n {
        ArrayLang::Iterate([cnt, g, x]) if eg.find(*g) == f => {
            const_i64(eg, *cnt).filter(|v| *v >= 0).map(|v| (v, *x))
        }
        _ => None,
    })?;
    let cnt = crate::build::lit_i64(eg, m.checked_add(k)?);
    Some(eg.add(ArrayLang::Iterate([cnt, f, x])))
}
