//! How many arguments each builtin takes, for the checker's messages about a wrong count.
//! Below `expr` (which reports a builtin applied to too few arguments) and `builtins`.

use super::text::plural;

/// The builtins of one float argument with a float result.
pub(crate) const FLOAT_UNARY: &[&str] = &[
    "sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "round", "log2", "log10", "exp2",
    "expm1", "log1p", "erf", "erfc", "lgamma",
];

/// The exact number of arguments of a builtin (`None` for `map`, which takes at least 2).
pub(crate) fn arity(name: &str) -> Option<usize> {
    Some(match name {
        "map" => return None,
        "pi" => 0,
        "iota" | "transpose" | "reverse" | "abs" | "length" | "popcount" | "clz" | "isnan" | "isinf"
        | "sum" | "prod" | "mean" | "all" | "any" | "argmin" | "argmax" => 1,
        "generate" | "fill" | "filter" | "gather" | "reshape" | "concat" | "min" | "max" | "pow"
        | "atan2" | "size" | "dot" => 2,
        "reduce" | "scan" | "scan_exclusive" | "backpermute" | "slice" | "clamp" | "iterate" => 3,
        "permute" | "reduce_segments" | "scan_segments" => 4,
        n if FLOAT_UNARY.contains(&n) => 1,
        _ => 1,
    })
}

/// "2 arguments", "at least 2 arguments".
pub(crate) fn arity_text(name: &str) -> String {
    match arity(name) {
        Some(k) => format!("{k} {}", plural(k, "argument", "arguments")),
        None => "at least 2 arguments (a function and one or more arrays)".into(),
    }
}
