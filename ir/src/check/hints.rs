//! "Did you mean" help for the habits of NumPy users: each hint is a note (`help: ...`) added
//! to an error, with the `.eqf` way to write what the program tried.

use crate::ast::{Expr, ExprKind};
use crate::types::Dim;

/// `e` as an argument: as printed, in parentheses unless it is a name, a literal or an
/// index expression.
pub(crate) fn atom(e: &Expr) -> String {
    let s = super::text::show(e);
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Index { .. } => s,
        ExprKind::Lit(_) if !s.starts_with('-') => s,
        _ => format!("({s})"),
    }
}

/// NumPy and Python names that are not eqfuse builtins, with the eqfuse form; `{}` stands
/// for the argument (`sum`, `prod`, `mean`, `all`, `any` are builtins since version 2).
const NUMPY_NAMES: &[(&str, &str)] = &[
    ("product", "reduce (*) 1 {}"),
    ("amax", "reduce max (-inf) {}"),
    ("maximum", "reduce max (-inf) {}"),
    ("amin", "reduce min inf {}"),
    ("minimum", "reduce min inf {}"),
    ("cumsum", "scan (+) 0 {}"),
    ("cumprod", "scan (*) 1 {}"),
    ("len", "length {}"),
    ("shape", "size {} k"),
    ("dim", "size {} k"),
    ("arange", "iota {}"),
    ("range", "iota {}"),
    ("zeros", "fill [{}] 0.0"),
    ("ones", "fill [{}] 1.0"),
    ("square", "{} * {}"),
    ("power", "pow {} y"),
    ("float", "f64 {}"),
    ("float32", "f32 {}"),
    ("float64", "f64 {}"),
    ("int", "i64 {}"),
    ("int32", "i32 {}"),
    ("int64", "i64 {}"),
    ("where", "map (\\c a b -> if c then a else b) cs {} bs"),
    ("dot", "reduce (+) 0 (map (\\x y -> x * y) {} ys)"),
    ("True", "true"),
    ("False", "false"),
];

/// The help for an unbound `name`, applied to `arg` when there is one.
pub(crate) fn unbound(name: &str, arg: Option<&Expr>) -> Option<String> {
    let (_, form) = NUMPY_NAMES.iter().find(|(n, _)| *n == name)?;
    let arg = arg.map_or_else(|| "xs".to_string(), atom);
    Some(format!("help: eqfuse has no `{name}`; write `{}`", form.replace("{}", &arg)))
}

/// The help for an arithmetic or comparison operator given an array: `map` applies it
/// element by element.
pub(crate) fn array_operands(sym: &str, lhs: &Expr, lhs_array: bool, rhs: &Expr, rhs_array: bool) -> String {
    let form = match (lhs_array, rhs_array) {
        (true, true) => format!("map (\\x y -> x {sym} y) {} {}", atom(lhs), atom(rhs)),
        (true, false) => format!("map (\\x -> x {sym} {}) {}", atom(rhs), atom(lhs)),
        _ => format!("map (\\y -> {} {sym} y) {}", atom(lhs), atom(rhs)),
    };
    format!("help: operators work on scalars; apply `{sym}` to every element with `map`: `{form}`")
}

/// The help for a unary operator given an array.
pub(crate) fn array_operand(sym: &str, operand: &Expr) -> String {
    format!("help: operators work on scalars; apply `{sym}` to every element with `map`: `map (\\x -> {sym}x) {}`", atom(operand))
}

fn is_float(d: &str) -> bool {
    matches!(d, "f32" | "f64" | "a float type")
}

fn is_int(d: &str) -> bool {
    matches!(d, "i32" | "i64")
}

/// The help for a binary operator whose operands are a float and an integer (`dl`, `dr`
/// describe their types): convert the integer side.
pub(crate) fn int_and_float(sym: &str, lhs: &Expr, dl: &str, rhs: &Expr, dr: &str) -> Option<String> {
    let target = |d: &str| if d == "f64" { "f64" } else { "f32" };
    let form = if is_float(dl) && is_int(dr) {
        format!("{} {sym} {} {}", super::text::show(lhs), target(dl), atom(rhs))
    } else if is_int(dl) && is_float(dr) {
        format!("{} {} {sym} {}", target(dr), atom(lhs), super::text::show(rhs))
    } else {
        return None;
    };
    Some(format!("help: eqfuse never converts implicitly; convert the integer operand: `{form}`"))
}

/// The help for `reduce max -inf xs`, which parses as `(reduce max) - (inf xs)`: a negative
/// argument needs parentheses. `lhs` is the application short of arguments, `rhs` what `-`
/// was applied to.
pub(crate) fn negative_argument(lhs: &Expr, rhs: &Expr) -> String {
    let fixed = match &rhs.kind {
        ExprKind::Apply { func, args } => {
            let rest: Vec<String> = args.iter().map(atom).collect();
            format!("{} (-{}) {}", super::text::show(lhs), atom(func), rest.join(" "))
        }
        _ => format!("{} (-{})", super::text::show(lhs), atom(rhs)),
    };
    format!("help: a negative argument needs parentheses, else `-` subtracts: `{fixed}`")
}

/// The help for a `map` over arrays of different ranks (NumPy would broadcast): index the
/// smaller array inside a `generate` over the larger one's shape. `f` is the map's
/// function, `big` and `small` the two arrays with their shapes, `big_first` whether the
/// larger one came first.
pub(crate) fn broadcast(f: &Expr, big: (&Expr, &[Dim]), small: (&Expr, &[Dim]), big_first: bool) -> String {
    let generic = "help: eqfuse does not broadcast; index the smaller array inside a `generate` over the \
                   larger one's shape"
        .to_string();
    let (ExprKind::Var(bn), ExprKind::Var(sn)) = (&big.0.kind, &small.0.kind) else {
        return generic;
    };
    let (r, s) = (big.1.len(), small.1.len());
    if s > r || r > 6 {
        return generic;
    }
    let names: Vec<&str> = ["i", "j", "k", "l", "p", "q"].iter().copied().take(r).collect();
    let dims: Vec<String> = big
        .1
        .iter()
        .enumerate()
        .map(|(k, d)| match d {
            Dim::Known(_) | Dim::Size(_) => d.to_string(),
            _ => format!("size {bn} {k}"),
        })
        .collect();
    let big_ix = format!("{bn}[{}]", names.join(", "));
    let small_ix = format!("{sn}[{}]", names[r - s..].join(", "));
    let (a, b) = if big_first { (big_ix, small_ix) } else { (small_ix, big_ix) };
    format!(
        "help: eqfuse does not broadcast; index the smaller array inside a `generate` over the larger one's \
         shape: `generate [{}] (\\{} -> {} {a} {b})`",
        dims.join(", "),
        names.join(" "),
        atom(f)
    )
}
