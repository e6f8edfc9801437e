//! Scalar algebra that holds bit for bit (IEEE-754 floats, wrapping integers), as the
//! reference interpreter computes. Constant folding itself is the analysis' job
//! ([`eqfuse_egraph::analysis`]); these are the identities with a non-constant side.
//!
//! Float zeros are signed, so `x + 0.0 == x` is **false** for `x = -0.0`: on floats only
//! `x + (-0.0)` and `x - 0.0` drop their zero. `x * 0 == 0` is false for NaN, infinities and
//! negative floats, so it is an integer rule.

use crate::build::{mul_by_reciprocal, zero_of};
use crate::cond::*;
use crate::node_rule::{kinds, node_rule, Select};
use crate::phase::Phase;
use crate::rule::{themed, Rule, Theme};
use crate::{Rewrite, EG};
use egg::{rewrite as rw, Id};
use eqfuse_egraph::{ArrayLang, Literal};
use std::sync::Arc;

/// The scalar rules, each with its identity ([`crate::catalogue`]).
pub fn table() -> Vec<Rule> {
    themed(
        Theme::Scalar,
        &[Phase::Simplify, Phase::Fuse],
        vec![
            (r#"x * 1 == x"#, rw!("scalar-mul-one"; "(* ?x ?c)" => "?x" if on("?c", is_one))),
            (r#"1 * x == x"#, rw!("scalar-one-mul"; "(* ?c ?x)" => "?x" if on("?c", is_one))),
            (r#"x / 1 == x"#, rw!("scalar-div-one"; "(/ ?x ?c)" => "?x" if on("?c", is_one))),
            (
                r#"x + 0 == x (integers), x + (-0.0) == x (floats)"#,
                rw!("scalar-add-zero"; "(+ ?x ?c)" => "?x" if on("?c", add_neutral)),
            ),
            (
                r#"0 + x == x (integers), (-0.0) + x == x (floats)"#,
                rw!("scalar-zero-add"; "(+ ?c ?x)" => "?x" if on("?c", add_neutral)),
            ),
            (
                r#"x - 0 == x (integers and +0.0)"#,
                rw!("scalar-sub-zero"; "(- ?x ?c)" => "?x" if on("?c", is_pos_zero)),
            ),
            (
                r#"x * 0 == 0 (integers)"#,
                rw!("scalar-mul-zero"; "(* ?x ?c)" => "?c" if on("?c", is_int_zero)),
            ),
            (
                r#"0 * x == 0 (integers)"#,
                rw!("scalar-zero-mul"; "(* ?c ?x)" => "?c" if on("?c", is_int_zero)),
            ),
            (r#"-(-x) == x (also for the wrapping MIN)"#, rw!("scalar-neg-neg"; "(neg (neg ?x))" => "?x")),
            (r#"!!x == x"#, rw!("scalar-not-not"; "(not (not ?x))" => "?x")),
            (r#"abs (abs x) == abs x"#, rw!("scalar-abs-abs"; "(abs (abs ?x))" => "(abs ?x)")),
            (
                r#"min x +inf == x (NaN stays NaN; MAX for integers)"#,
                rw!("scalar-min-top"; "(min ?x ?c)" => "?x" if on("?c", is_top)),
            ),
            (
                r#"max x -inf == x (MIN for integers)"#,
                rw!("scalar-max-bottom"; "(max ?x ?c)" => "?x" if on("?c", is_bottom)),
            ),
            (r#"min x x == x"#, rw!("scalar-min-self"; "(min ?x ?x)" => "?x")),
            (r#"max x x == x"#, rw!("scalar-max-self"; "(max ?x ?x)" => "?x")),
            (r#"x && true == x"#, rw!("scalar-and-true"; "(&& ?x ?c)" => "?x" if on("?c", is_true))),
            (r#"x || false == x"#, rw!("scalar-or-false"; "(|| ?x ?c)" => "?x" if on("?c", is_false))),
            (
                r#"if true then t else e == t"#,
                rw!("scalar-if-true"; "(if ?c ?t ?e)" => "?t" if on("?c", is_true)),
            ),
            (
                r#"if false then t else e == e"#,
                rw!("scalar-if-false"; "(if ?c ?t ?e)" => "?e" if on("?c", is_false)),
            ),
            (r#"if c then t else t == t"#, rw!("scalar-if-same"; "(if ?c ?t ?t)" => "?t")),
            (
                r#"iterate n f x == x for n <= 0 (no trip)"#,
                rw!("scalar-iterate-none"; "(iterate ?n ?f ?x)" => "?x" if on("?n", is_nonpositive)),
            ),
            (
                r#"iterate n (\y -> e) x == e for n >= 1 and e not mentioning any parameter"#,
                rw!("scalar-iterate-const"; "(iterate ?n (lam ?t ?e) ?x)" => "?e"
                        if on("?n", is_positive) if on("?e", crate::build::closed)),
            ),
            (
                r#"if !c then t else e == if c then e else t"#,
                rw!("scalar-if-not"; "(if (not ?c) ?t ?e)" => "(if ?c ?e ?t)"),
            ),
            (
                r#"a - (a - x) == x (integers: wrapping arithmetic is a group; not floats)"#,
                rw!("scalar-sub-sub"; "(- ?a (- ?a ?x))" => "?x" if on("?a", is_int)),
            ),
            (
                r#"x / 2^k == x * 2^-k (both are the correctly rounded x * 2^-k)"#,
                node_rule(
                    "scalar-div-pow2",
                    Select::when(
                        kinds![Div],
                        |eg, n| matches!(n, ArrayLang::Div([_, c]) if is_exact_reciprocal(eg, *c)),
                    ),
                    Arc::new(mul_by_reciprocal),
                ),
            ),
            (
                r#"x == x is true (integers and bools: NaN != NaN)"#,
                node_rule(
                    "scalar-eq-self",
                    Select::when(
                        kinds![Eq],
                        |eg, n| matches!(n, ArrayLang::Eq([a, b]) if a == b && !is_float(eg, *a)),
                    ),
                    Arc::new(|eg, _, _| Some(eg.add(ArrayLang::Lit(Literal::Bool(true))))),
                ),
            ),
            (
                r#"x - x == 0 (integers)"#,
                node_rule(
                    "scalar-sub-self",
                    Select::when(
                        kinds![Sub],
                        |eg, n| matches!(n, ArrayLang::Sub([a, b]) if a == b && is_int(eg, *a)),
                    ),
                    Arc::new(|eg, _, n| zero_of(eg, *n.children().first()?)),
                ),
            ),
            (
                r#"T x == x when x already has type T"#,
                node_rule(
                    "scalar-convert-same",
                    Select::when(
                        kinds![ToI8, ToI16, ToI32, ToI64, ToU8, ToU16, ToU32, ToU64, ToF32, ToF64],
                        same_type_conversion,
                    ),
                    Arc::new(|_, _, n| n.children().first().copied()),
                ),
            ),
        ],
    )
}

/// The rewrites of [`table`].
pub fn rules() -> Vec<Rewrite> {
    table().into_iter().map(|r| r.rewrite).collect()
}

use egg::Language;

fn add_neutral(eg: &EG, id: Id) -> bool {
    is_int_zero(eg, id) || is_neg_zero(eg, id)
}

fn same_type_conversion(eg: &EG, n: &ArrayLang) -> bool {
    use eqfuse_ir::types::ElemType as T;
    let (a, t) = match *n {
        ArrayLang::ToI32([a]) => (a, T::I32),
        ArrayLang::ToI64([a]) => (a, T::I64),
        ArrayLang::ToF32([a]) => (a, T::F32),
        ArrayLang::ToF64([a]) => (a, T::F64),
        ArrayLang::ToI8([a]) => (a, T::I8),
        ArrayLang::ToI16([a]) => (a, T::I16),
        ArrayLang::ToU8([a]) => (a, T::U8),
        ArrayLang::ToU16([a]) => (a, T::U16),
        ArrayLang::ToU32([a]) => (a, T::U32),
        ArrayLang::ToU64([a]) => (a, T::U64),
        _ => return false,
    };
    eg[a].data.kind == eqfuse_egraph::Kind::Scalar(t)
}
