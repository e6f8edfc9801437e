//! Selects in one form: a negated condition swaps the branches instead
//! (`if !c then a else b == if c then b else a`), so that a select written either way
//! inside a reduction (`if x < t then x else ne`, `if !(x < t) then ne else x`) is the
//! same e-class and costs the same.
//!
//! Taking a condition that no element changes out of a `map` (unswitching) is
//! `hoist-unswitch`, with the hoisting rules (`crate::hoist`).
//!
//! Each rule's identity is in its entry of [`table`] (the catalogue, `eqfuse rules`).

use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use egg::rewrite as rw;

/// The select rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    themed(
        Theme::Selects,
        &[Phase::Simplify, Phase::Fuse],
        vec![(
            r"if !c then a else b == if c then b else a",
            rw!("select-not"; "(if (not ?c) ?a ?b)" => "(if ?c ?b ?a)"),
        )],
    )
}
