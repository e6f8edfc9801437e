//! Rules that change floating-point results (docs/design-decisions.md, decision 7): off by default, on with
//! `OptimizeOptions::fast_math`. Their soundness tests compare within a tolerance.

use crate::build::{mul_by_reciprocal, zero_of};
use crate::cond::{is_float, is_float_two, on};
use crate::node_rule::{kinds, node_rule, Select};
use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use crate::{Rewrite, EG};
use egg::Language;
use egg::{rewrite as rw, Id};
use eqfuse_egraph::{ArrayLang, Literal};
use std::sync::Arc;

/// The fastmath rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    themed(
        Theme::FastMath,
        &[Phase::Simplify, Phase::Fuse],
        vec![
            (
                r#"(a + b) + c == a + (b + c) (floats: reassociation)"#,
                rw!("fm-add-assoc"; "(+ (+ ?a ?b) ?c)" => "(+ ?a (+ ?b ?c))" if on("?a", is_float)),
            ),
            (
                r#"(a * b) * c == a * (b * c) (floats: reassociation)"#,
                rw!("fm-mul-assoc"; "(* (* ?a ?b) ?c)" => "(* ?a (* ?b ?c))" if on("?a", is_float)),
            ),
            (
                r#"x + 0.0 == x (false for x = -0.0)"#,
                rw!("fm-add-zero"; "(+ ?x ?c)" => "?x" if on("?c", is_float_zero)),
            ),
            (
                r#"x * c + y * c == (x + y) * c (distributing a common factor)"#,
                rw!("fm-factor"; "(+ (* ?x ?c) (* ?y ?c))" => "(* (+ ?x ?y) ?c)" if on("?x", is_float)),
            ),
            (
                r#"x - x == 0.0 (false for NaN and infinities)"#,
                node_rule(
                    "fm-sub-self",
                    Select::when(
                        kinds![Sub],
                        |eg, n| matches!(n, ArrayLang::Sub([a, b]) if a == b && is_float(eg, *a)),
                    ),
                    Arc::new(|eg, _, n| zero_of(eg, *n.children().first()?)),
                ),
            ),
            (
                r#"x * 0.0 == 0.0 (false for NaN, infinities, negative x)"#,
                node_rule(
                    "fm-mul-zero",
                    Select::when(
                        kinds![Mul],
                        |eg, n| matches!(n, ArrayLang::Mul([a, c]) if is_float(eg, *a) && is_float_zero(eg, *c)),
                    ),
                    Arc::new(|eg, _, n| zero_of(eg, *n.children().first()?)),
                ),
            ),
            (
                r#"pow x 2 == x * x (libm's pow is not correctly rounded: 1 in ~1300 differs by an ulp)"#,
                rw!("fm-pow-two"; "(pow ?x ?c)" => "(* ?x ?x)" if on("?c", is_float_two)),
            ),
            (
                r#"x / c == x * (1 / c) for a constant c"#,
                node_rule(
                    "fm-div-const",
                    Select::when(
                        kinds![Div],
                        |eg, n| matches!(n, ArrayLang::Div([a, c]) if is_float(eg, *a) && eg[*c].data.constant.is_some()),
                    ),
                    Arc::new(mul_by_reciprocal),
                ),
            ),
        ],
    )
}

/// The rewrites of [`table`].
pub fn rules() -> Vec<Rewrite> {
    table().into_iter().map(|r| r.rewrite).collect()
}

fn is_float_zero(eg: &EG, id: Id) -> bool {
    match eg[id].data.constant {
        Some(Literal::F32(b)) => f32::from_bits(b) == 0.0,
        Some(Literal::F64(b)) => f64::from_bits(b) == 0.0,
        _ => false,
    }
}
