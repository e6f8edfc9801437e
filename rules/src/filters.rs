//! The size of a `filter` computed from its input: `length (filter p xs)` counts the
//! elements `p` keeps, one pass over `xs` that writes nothing, where the filter itself
//! writes the kept elements and reads them back. With `fuse-reduce-filter` (the reductions
//! of a filter from its input, in `fusion.rs`) a program that materialises a filter only
//! for its length and its reductions needs no filter at all (docs/phrasings.md).
//!
//! The count is exact (an `i64` sum of ones), and the predicate runs on the same elements
//! as the filter's; an error the predicate reports on some element is reported by both.
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`); every
//! rule spends the fusion budget ([`Gas`]).

use crate::build::{closed, const_i64, elem, lam, lit_i64, param};
use crate::fusion::gassed;
use crate::node_rule::{kinds, Select};
use crate::phase::Phase;
use crate::rule::{Rule, Theme};
use crate::{Gas, EG};
use egg::Id;
use eqfuse_egraph::ArrayLang;
use eqfuse_ir::types::ElemType;

/// The filter rules, sharing `gas`, each with its identity ([`crate::catalogue`]).
pub fn table(gas: &Gas) -> Vec<Rule> {
    vec![Rule {
        identity: r"length (filter p xs) == reduce (+) 0 (map (\x -> if p x then 1 else 0) xs) (also size (filter p xs) 0)",
        theme: Theme::Filters,
        spends_gas: true,
        rewrite: gassed("filter-length", gas, Select::kinds(kinds![Length, Dim]), filter_length),
        in_phases: vec![Phase::Fuse],
    }]
}

/// The `(p, xs)` of a `filter p xs` node in class `c`.
fn filter_in(eg: &EG, c: Id) -> Option<(Id, Id)> {
    eg[c].nodes.iter().find_map(|n| match *n {
        ArrayLang::Filter([p, a]) => Some((p, a)),
        _ => None,
    })
}

/// `length (filter p xs)` (or `size (filter p xs) 0`) as the sum of `if p x then 1 else 0`.
fn filter_length(eg: &mut EG, _: Id, n: &ArrayLang) -> Option<Id> {
    let filtered = match *n {
        ArrayLang::Length([a]) => a,
        ArrayLang::Dim([a, k]) if const_i64(eg, k) == Some(0) => a,
        _ => return None,
    };
    let (p, xs) = filter_in(eg, filtered)?;
    if !closed(eg, p) || !closed(eg, xs) {
        return None;
    }
    let t = elem(eg, xs)?;
    let x = param(eg, 0, t);
    let keep = eg.add(ArrayLang::App(vec![p, x].into()));
    let (one, zero) = (lit_i64(eg, 1), lit_i64(eg, 0));
    let body = eg.add(ArrayLang::If([keep, one, zero]));
    let f = lam(eg, vec![t], body);
    let flags = eg.add(ArrayLang::Map(vec![f, xs].into()));
    let (a, b) = (param(eg, 1, ElemType::I64), param(eg, 0, ElemType::I64));
    let sum = eg.add(ArrayLang::Add([a, b]));
    let op = lam(eg, vec![ElemType::I64, ElemType::I64], sum);
    Some(eg.add(ArrayLang::Reduce([op, zero, flags])))
}
