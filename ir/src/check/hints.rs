//! "Did you mean" help for the habits of NumPy users: each hint is a note added to an error,
//! `help: <what> ...: <fragment>`, whose fragment is `.eqf` text that, written in place
//! of the expression the error points at (or, for [`HintKind::BroadcastInLambda`], the
//! whole `map`), checks, runs, and gives the value the NumPy expression would
//! (`ir/tests/hints_run.rs` substitutes and runs every kind). Where no such fragment exists
//! the checker adds no hint, or a note in words only (`IN_LAMBDA`).

use crate::ast::{Expr, ExprKind};
use crate::types::Dim;

/// The kinds of hints, one per way the checker words them; each note starts with
/// `help: ` and its kind's [`HintKind::lead`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HintKind {
    /// A NumPy or Python name eqfuse spells otherwise (`where`, `maximum`, `cumsum`, ...).
    NumpyName,
    /// A misspelt name or builtin: the nearest name in scope or builtin.
    DidYouMean,
    /// A binary operator given arrays: `map` it, or index inside a `generate`.
    ArrayOperands,
    /// A unary operator given an array: `map` it.
    ArrayOperand,
    /// A float and an integer operand: convert the integer.
    IntAndFloat,
    /// `reduce max -inf xs`: the negative argument needs parentheses.
    NegativeArgument,
    /// `map` over arrays of different ranks: index the smaller inside a `generate`.
    Broadcast,
    /// A `map` whose lambda uses a whole array (NumPy broadcasting): a `generate` that
    /// indexes it.
    BroadcastInLambda,
    /// A scalar function given an array: `map` it.
    ScalarFnOnArray,
    /// `max m` or `min m` with one array: a reduction.
    WholeReduction,
    /// `sum (xs > t)`: count (or average) where a comparison holds.
    CountTrue,
    /// `xs[a:b]`: `slice` (the parser's note, worded with this lead).
    NumpySlice,
}

impl HintKind {
    /// Every kind.
    pub const ALL: [HintKind; 12] = [
        HintKind::NumpyName,
        HintKind::DidYouMean,
        HintKind::ArrayOperands,
        HintKind::ArrayOperand,
        HintKind::IntAndFloat,
        HintKind::NegativeArgument,
        HintKind::Broadcast,
        HintKind::BroadcastInLambda,
        HintKind::ScalarFnOnArray,
        HintKind::WholeReduction,
        HintKind::CountTrue,
        HintKind::NumpySlice,
    ];

    /// The words every note of this kind starts with, after `help: `.
    pub fn lead(self) -> &'static str {
        match self {
            HintKind::NumpyName => "eqfuse has no `",
            HintKind::DidYouMean => "did you mean",
            HintKind::ArrayOperands => "operators work on scalars; apply `",
            HintKind::ArrayOperand => "unary operators work on scalars",
            HintKind::IntAndFloat => "eqfuse never converts implicitly",
            HintKind::NegativeArgument => "a negative argument needs parentheses",
            HintKind::Broadcast => "eqfuse does not broadcast; index the smaller array",
            HintKind::BroadcastInLambda => "eqfuse does not broadcast; a lambda reads",
            HintKind::ScalarFnOnArray => "scalar functions take scalars",
            HintKind::WholeReduction => "`max` and `min` compare two scalars",
            HintKind::CountTrue => "to count where a comparison holds",
            HintKind::NumpySlice => "NumPy slices are written with `slice`",
        }
    }
}

/// The kind of a note, if it is a hint.
pub fn kind_of(note: &str) -> Option<HintKind> {
    let rest = note.strip_prefix("help: ")?;
    HintKind::ALL.iter().copied().filter(|k| rest.starts_with(k.lead())).max_by_key(|k| k.lead().len())
}

/// The `.eqf` fragment of a hint: the text between the last ``: ` `` and the closing
/// backquote.
pub fn fragment(note: &str) -> Option<&str> {
    let start = note.rfind(": `")? + 3;
    note.get(start..)?.strip_suffix('`')
}

/// A note in words for an array used whole inside a lambda (no fragment: the `map` or
/// `generate` around it is where a rewrite goes, [`HintKind::BroadcastInLambda`]).
pub(crate) const IN_LAMBDA: &str =
    "help: a lambda works on scalars: read an array inside it one element at a time, by indexing it";

fn hint(kind: HintKind, detail: &str, fragment: &str) -> String {
    format!("help: {}{detail}: `{fragment}`", kind.lead())
}

/// What the checker knows of an argument when it words a hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// A scalar; whether a float.
    Scalar { float: bool },
    /// An array of `rank`; whether of floats.
    Array { rank: usize, float: bool },
    /// It does not check.
    Unknown,
}

impl Arg {
    fn is_array(self) -> bool {
        matches!(self, Arg::Array { .. })
    }
}

/// `e` printed in full (a fragment is never shortened, as messages are).
fn full(e: &Expr) -> String {
    crate::print::print_expr(e)
}

/// `e` as an argument: as printed, in parentheses unless it is a name, a literal or an
/// index expression.
pub(crate) fn atom(e: &Expr) -> String {
    let s = full(e);
    match &e.kind {
        ExprKind::Var(_) | ExprKind::Index { .. } => s,
        ExprKind::Lit(_) if !s.starts_with('-') => s,
        _ => format!("({s})"),
    }
}

/// The names `e` mentions.
fn mentions(e: &Expr, out: &mut Vec<String>) {
    if let ExprKind::Var(n) = &e.kind {
        out.push(n.clone());
    }
    if let ExprKind::Lambda { params, .. } = &e.kind {
        out.extend(params.iter().cloned());
    }
    for c in e.kind.children() {
        mentions(c, out);
    }
}

/// `k` parameter names from `pool` (primed until none is mentioned by `avoid`).
fn fresh(pool: &[&str], k: usize, avoid: &[&Expr]) -> Vec<String> {
    let mut used = Vec::new();
    for e in avoid {
        mentions(e, &mut used);
    }
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let mut n = pool.get(i).map_or_else(|| format!("v{i}"), |s| (*s).to_string());
        while used.contains(&n) || out.contains(&n) {
            n.push('\'');
        }
        out.push(n);
    }
    out
}

/// `f` applied element by element: `map F A B` where all of `args` are arrays of one rank
/// and `func` is passable, else a lambda over the arrays that inlines the scalars; `body`
/// builds the lambda's body from the arguments' texts. `None` when the arrays' ranks
/// differ or no argument is an array.
fn elementwise(
    args: &[&Expr],
    kinds: &[Arg],
    func: Option<&str>,
    body: impl Fn(&[String]) -> String,
) -> Option<String> {
    let ranks: Vec<usize> = kinds
        .iter()
        .filter_map(|k| if let Arg::Array { rank, .. } = k { Some(*rank) } else { None })
        .collect();
    if ranks.is_empty() || ranks.iter().any(|r| *r != ranks[0]) || kinds.contains(&Arg::Unknown) {
        return None;
    }
    if let (Some(f), true) = (func, kinds.iter().all(|k| k.is_array())) {
        let a: Vec<String> = args.iter().map(|a| atom(a)).collect();
        return Some(format!("map {f} {}", a.join(" ")));
    }
    let scalars: Vec<&Expr> =
        args.iter().zip(kinds).filter(|(_, k)| !k.is_array()).map(|(a, _)| *a).collect();
    let names = fresh(&["x", "y", "z", "w"], args.len(), &scalars);
    let mut params = Vec::new();
    let mut arrays = Vec::new();
    let mut texts = Vec::new();
    for ((a, k), n) in args.iter().zip(kinds).zip(&names) {
        if k.is_array() {
            params.push(n.clone());
            arrays.push(atom(a));
            texts.push(n.clone());
        } else {
            texts.push(atom(a));
        }
    }
    Some(format!("map (\\{} -> {}) {}", params.join(" "), body(&texts), arrays.join(" ")))
}

/// `op` over every element of an array of `rank` (NumPy's reduction over all axes): one
/// `reduce` per dimension.
fn whole(op: &str, ne: &str, a: &Expr, rank: usize) -> String {
    let mut s = atom(a);
    for _ in 0..rank {
        s = format!("(reduce {op} {ne} {s})");
    }
    s.strip_prefix('(').and_then(|t| t.strip_suffix(')')).map_or(s.clone(), str::to_string)
}

/// The eqfuse form of NumPy's or Python's `name` applied to `args`, if there is one.
fn numpy_form(name: &str, args: &[&Expr], kinds: &[Arg]) -> Option<String> {
    let first = kinds.first().copied().unwrap_or(Arg::Unknown);
    let a0 = args.first().map(|a| atom(a));
    Some(match (name, args.len(), first) {
        ("True", 0, _) => "true".into(),
        ("False", 0, _) => "false".into(),
        ("product", 1, Arg::Array { rank: 1, .. }) => format!("prod {}", a0?),
        ("amax", 1, Arg::Array { rank, float: true }) => whole("max", "(-inf)", args[0], rank),
        ("amin", 1, Arg::Array { rank, float: true }) => whole("min", "inf", args[0], rank),
        ("maximum" | "fmax", 2, _) => {
            elementwise(args, kinds, Some("max"), |t| format!("max {} {}", t[0], t[1]))?
        }
        ("minimum" | "fmin", 2, _) => {
            elementwise(args, kinds, Some("min"), |t| format!("min {} {}", t[0], t[1]))?
        }
        ("power", 2, _) => elementwise(args, kinds, Some("pow"), |t| format!("pow {} {}", t[0], t[1]))?,
        ("cumsum", 1, Arg::Array { rank: 1, .. }) => format!("scan (+) 0 {}", a0?),
        ("cumprod", 1, Arg::Array { rank: 1, .. }) => format!("scan (*) 1 {}", a0?),
        ("len", 1, Arg::Array { .. }) => format!("length {}", a0?),
        ("arange" | "range", 1, Arg::Scalar { float: false }) => format!("iota {}", a0?),
        ("zeros", 1, Arg::Scalar { float: false }) => format!("fill [{}] 0.0", full(args[0])),
        ("ones", 1, Arg::Scalar { float: false }) => format!("fill [{}] 1.0", full(args[0])),
        ("absolute", 1, Arg::Array { .. }) => format!("map abs {}", a0?),
        ("square", 1, Arg::Array { .. }) => {
            elementwise(args, kinds, None, |t| format!("{} * {}", t[0], t[0]))?
        }
        ("square", 1, Arg::Scalar { .. }) => format!("{} * {}", a0.clone()?, a0?),
        ("float" | "float64" | "double", 1, _) => convert("f64", args, kinds)?,
        ("float32" | "single", 1, _) => convert("f32", args, kinds)?,
        ("int" | "int64", 1, _) => convert("i64", args, kinds)?,
        ("int32", 1, _) => convert("i32", args, kinds)?,
        ("clip", 3, Arg::Array { .. }) => {
            elementwise(args, kinds, None, |t| format!("clamp {} {} {}", t[0], t[1], t[2]))?
        }
        ("where", 3, _) => {
            elementwise(args, kinds, None, |t| format!("if {} then {} else {}", t[0], t[1], t[2]))?
        }
        _ => return None,
    })
}

/// A conversion of `args[0]` to `t`: `t x` for a scalar, `map t xs` for an array.
fn convert(t: &str, args: &[&Expr], kinds: &[Arg]) -> Option<String> {
    match kinds.first()? {
        Arg::Scalar { .. } => Some(format!("{t} {}", atom(args[0]))),
        Arg::Array { .. } => Some(format!("map {t} {}", atom(args[0]))),
        Arg::Unknown => None,
    }
}

/// The help for an unbound `name` applied to `args` (whose kinds are `kinds`): the eqfuse
/// form of a NumPy name, else the nearest of `names` (those in scope, then the builtins).
pub(crate) fn unbound<'a>(
    name: &str,
    args: &[&Expr],
    kinds: &[Arg],
    names: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let scalar_pair = matches!(name, "maximum" | "fmax" | "minimum" | "fmin" | "power")
        && kinds.len() == 2
        && kinds.iter().all(|k| matches!(k, Arg::Scalar { .. }));
    let form = if scalar_pair {
        let f = match name {
            "maximum" | "fmax" => "max",
            "minimum" | "fmin" => "min",
            _ => "pow",
        };
        Some(format!("{f} {} {}", atom(args[0]), atom(args[1])))
    } else {
        numpy_form(name, args, kinds)
    };
    if let Some(form) = form {
        return Some(hint(HintKind::NumpyName, &format!("{name}`; write"), &form));
    }
    let near = super::did_you_mean::nearest(name, names)?;
    Some(hint(HintKind::DidYouMean, "", near))
}

/// The help for an arithmetic or comparison operator given an array, outside lambdas:
/// `map` applies it element by element; arrays of different ranks are indexed inside a
/// `generate` over the larger one's shape (`big` the larger one's shape).
pub(crate) fn array_operands(sym: &str, lhs: (&Expr, Arg), rhs: (&Expr, Arg), big: &[Dim]) -> Option<String> {
    let form = match (lhs.1, rhs.1) {
        (Arg::Array { rank: a, .. }, Arg::Array { rank: b, .. }) if a != b => {
            let (bx, sx) = if a > b { (lhs.0, rhs.0) } else { (rhs.0, lhs.0) };
            return broadcast_form(&|x, y| format!("{x} {sym} {y}"), (bx, big), (sx, a.min(b)), a > b)
                .map(|g| hint(HintKind::Broadcast, " inside a `generate` over the larger one's shape", &g));
        }
        _ => elementwise(&[lhs.0, rhs.0], &[lhs.1, rhs.1], None, |t| format!("{} {sym} {}", t[0], t[1]))?,
    };
    Some(hint(HintKind::ArrayOperands, &format!("{sym}` to every element with `map`"), &form))
}

/// The help for a unary operator given an array.
pub(crate) fn array_operand(sym: &str, operand: &Expr) -> String {
    let x = fresh(&["x"], 1, &[]).remove(0);
    hint(
        HintKind::ArrayOperand,
        &format!("; apply `{sym}` to every element with `map`"),
        &format!("map (\\{x} -> {sym}{x}) {}", atom(operand)),
    )
}

fn is_float(d: &str) -> bool {
    matches!(d, "f32" | "f64" | "a float type")
}

fn is_int(d: &str) -> bool {
    matches!(d, "i8" | "i16" | "i32" | "i64" | "u8" | "u16" | "u32" | "u64")
}

/// The help for a binary operator whose operands are a float and an integer (`dl`, `dr`
/// describe their types): convert the integer side.
pub(crate) fn int_and_float(sym: &str, lhs: &Expr, dl: &str, rhs: &Expr, dr: &str) -> Option<String> {
    let target = |d: &str| if d == "f64" { "f64" } else { "f32" };
    let side = |e: &Expr| {
        // the operand as it stands in `lhs sym rhs`: parenthesised unless it binds tighter
        match &e.kind {
            ExprKind::Binary { .. } | ExprKind::Let { .. } | ExprKind::If { .. } => format!("({})", full(e)),
            _ => full(e),
        }
    };
    let form = if is_float(dl) && is_int(dr) {
        format!("{} {sym} {} {}", side(lhs), target(dl), atom(rhs))
    } else if is_int(dl) && is_float(dr) {
        format!("{} {} {sym} {}", target(dr), atom(lhs), side(rhs))
    } else {
        return None;
    };
    Some(hint(HintKind::IntAndFloat, "; convert the integer operand", &form))
}

/// The help for `reduce max -inf xs`, which parses as `(reduce max) - (inf xs)`: a negative
/// argument needs parentheses. `lhs` is the application short of arguments, `rhs` what `-`
/// was applied to.
pub(crate) fn negative_argument(lhs: &Expr, rhs: &Expr) -> String {
    let fixed = match &rhs.kind {
        ExprKind::Apply { func, args } => {
            let rest: Vec<String> = args.iter().map(atom).collect();
            format!("{} (-{}) {}", full(lhs), atom(func), rest.join(" "))
        }
        _ => format!("{} (-{})", full(lhs), atom(rhs)),
    };
    hint(HintKind::NegativeArgument, ", else `-` subtracts", &fixed)
}

/// Index names for a `generate` of `rank` that `f` does not mention.
fn index_names(rank: usize, avoid: &[&Expr]) -> Vec<String> {
    fresh(&["i", "j", "k", "l", "p", "q"], rank, avoid)
}

/// The dimensions of `big` (a name) as a `generate` writes them.
fn dims_text(bn: &str, shape: &[Dim]) -> Vec<String> {
    shape
        .iter()
        .enumerate()
        .map(|(k, d)| match d {
            Dim::Known(_) | Dim::Size(_) => d.to_string(),
            _ => format!("size {bn} {k}"),
        })
        .collect()
}

/// `generate [dims of big] (\i j -> f(big[i, j], small[j]))` (the arguments in their order),
/// or `None` unless both arrays are names and the smaller's rank is at most the larger's.
fn broadcast_form(
    f: &dyn Fn(&str, &str) -> String,
    big: (&Expr, &[Dim]),
    small: (&Expr, usize),
    big_first: bool,
) -> Option<String> {
    let (ExprKind::Var(bn), ExprKind::Var(sn)) = (&big.0.kind, &small.0.kind) else {
        return None;
    };
    let (r, s) = (big.1.len(), small.1);
    if s > r || r > 6 {
        return None;
    }
    let names = index_names(r, &[]);
    let big_ix = format!("{bn}[{}]", names.join(", "));
    let small_ix = format!("{sn}[{}]", names[r - s..].join(", "));
    let (a, b) = if big_first { (big_ix, small_ix) } else { (small_ix, big_ix) };
    Some(format!("generate [{}] (\\{} -> {})", dims_text(bn, big.1).join(", "), names.join(" "), f(&a, &b)))
}

/// The help for a `map` over arrays of different ranks (NumPy would broadcast): index the
/// smaller array inside a `generate` over the larger one's shape. `f` is the map's
/// function, `big` and `small` the two arrays with their shapes, `big_first` whether the
/// larger one came first.
pub(crate) fn broadcast(f: &Expr, big: (&Expr, &[Dim]), small: (&Expr, &[Dim]), big_first: bool) -> String {
    let generic = "help: eqfuse does not broadcast; index the smaller array inside a `generate` over the \
                   larger one's shape"
        .to_string();
    let f = atom(f);
    match broadcast_form(&|a, b| format!("{f} {a} {b}"), big, (small.0, small.1.len()), big_first) {
        Some(g) => hint(HintKind::Broadcast, " inside a `generate` over the larger one's shape", &g),
        None => generic,
    }
}

/// `e` with every free use of a name in `arrays` (an array's name and rank) read at the last
/// `rank` of `ix` instead; `None` where such an array is used otherwise than whole (it is
/// already indexed: the error is elsewhere) or shadowed.
fn index_arrays(e: &Expr, arrays: &[(String, usize)], ix: &[String]) -> Option<Expr> {
    match &e.kind {
        ExprKind::Var(n) => match arrays.iter().find(|(a, _)| a == n) {
            Some((_, rank)) => {
                let indices = ix[ix.len() - rank..].iter().map(|i| Expr::var(i.clone(), e.span)).collect();
                Some(Expr::new(ExprKind::Index { array: Box::new(e.clone()), indices }, e.span))
            }
            None => Some(e.clone()),
        },
        ExprKind::Index { array, .. } if matches!(&array.kind, ExprKind::Var(n) if arrays.iter().any(|(a, _)| a == n)) => {
            None
        }
        ExprKind::Lambda { params, .. } if params.iter().any(|p| arrays.iter().any(|(a, _)| a == p)) => None,
        ExprKind::Let { name, .. } if arrays.iter().any(|(a, _)| a == name) => None,
        _ => {
            let mut out = e.clone();
            for c in out.kind.children_mut() {
                *c = index_arrays(c, arrays, ix)?;
            }
            Some(out)
        }
    }
}

/// The help for a `map` whose lambda `\x y -> body` uses whole arrays (`arrays`: the names
/// the body mentions that are arrays outside it, with their ranks) where NumPy would
/// broadcast: `generate [dims] (\i j -> let x = a[i, j] in ... body')`, `body'` reading
/// each of `arrays` at the last indices. `mapped` are the map's arrays, names all, of
/// shape `shape`.
pub(crate) fn broadcast_in_lambda(
    params: &[String],
    body: &Expr,
    mapped: &[&Expr],
    shape: &[Dim],
    arrays: &[(String, usize)],
) -> Option<String> {
    let r = shape.len();
    if r == 0 || r > 6 || params.len() != mapped.len() || arrays.iter().any(|(_, k)| *k > r || *k == 0) {
        return None;
    }
    let names: Vec<&str> = mapped
        .iter()
        .map(|a| if let ExprKind::Var(n) = &a.kind { Some(n.as_str()) } else { None })
        .collect::<Option<_>>()?;
    let ix = index_names(r, &[body]);
    let new_body = index_arrays(body, arrays, &ix)?;
    let mut text = full(&new_body);
    for (p, a) in params.iter().zip(&names).rev() {
        text = format!("let {p} = {a}[{}] in {text}", ix.join(", "));
    }
    let g = format!("generate [{}] (\\{} -> {text})", dims_text(names[0], shape).join(", "), ix.join(" "));
    Some(hint(
        HintKind::BroadcastInLambda,
        " one element of an array at a time; index it in a `generate`",
        &g,
    ))
}

/// The help for scalar function `f` given `args` of which some are arrays, outside lambdas.
pub(crate) fn scalar_fn_on_array(f: &str, args: &[&Expr], kinds: &[Arg]) -> Option<String> {
    let form = elementwise(args, kinds, Some(f), |t| format!("{f} {}", t.join(" ")))?;
    Some(hint(HintKind::ScalarFnOnArray, &format!("; apply `{f}` to every element with `map`"), &form))
}

/// The help for `max m` or `min m` given one array of floats (NumPy's `max(m)`): the
/// largest (smallest) element, over every dimension.
pub(crate) fn whole_reduction(f: &str, arg: &Expr, kind: Arg) -> Option<String> {
    let Arg::Array { rank, float: true } = kind else { return None };
    let ne = if f == "max" { "(-inf)" } else { "inf" };
    Some(hint(
        HintKind::WholeReduction,
        &format!(
            "; the {} element of an array is a reduction",
            if f == "max" { "largest" } else { "smallest" }
        ),
        &whole(f, ne, arg, rank),
    ))
}

/// The help for `sum (a > b)` or `mean (a > b)` with arrays (NumPy counts `True` as 1):
/// convert the comparison to numbers inside the `map`.
pub(crate) fn count_true(f: &str, sym: &str, lhs: (&Expr, Arg), rhs: (&Expr, Arg)) -> Option<String> {
    let conv = if f == "mean" { "f64" } else { "i64" };
    let m =
        elementwise(&[lhs.0, rhs.0], &[lhs.1, rhs.1], None, |t| format!("{conv} ({} {sym} {})", t[0], t[1]))?;
    Some(hint(HintKind::CountTrue, &format!(", `{f}` numbers made of it"), &format!("{f} ({m})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_are_told_apart() {
        for k in HintKind::ALL {
            let note = format!("help: {} x: `y`", k.lead());
            assert_eq!(kind_of(&note), Some(k), "{note}");
            assert_eq!(fragment(&note), Some("y"));
        }
        assert_eq!(kind_of(IN_LAMBDA), None);
    }
}
