//! What `explain` says an intermediate value of a plan stands for: the source expression
//! its kernel computes (`t0 (= reduce (+) 0.0 xs, line 3)`), found by the source position
//! the plan keeps for it.

use eqfuse_ir::ast::{Expr, Item};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::Span;
use eqfuse_ir::plan::{Origin, Plan, ValueId};

/// The longest expression text shown; longer ones are cut with `...`.
const MAX_TEXT: usize = 48;

/// Where a computed value of a plan comes from in the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueOrigin {
    /// The expression, printed on one line (cut to `MAX_TEXT` characters).
    pub expr: String,
    /// Its 1-based line.
    pub line: u32,
    /// Its 1-based column.
    pub column: u32,
}

/// The source expression of value `v` of `plan`: a computed value whose position the plan
/// knows, found in `checked`'s program text.
pub fn origin(checked: &Checked, plan: &Plan, v: ValueId) -> Option<ValueOrigin> {
    let info = plan.values.get(v)?;
    if info.origin != Origin::Computed {
        return None;
    }
    let span = info.span?;
    let e = expr_at(checked, span)?;
    let mut expr = eqfuse_ir::print::print_expr(e);
    if expr.chars().count() > MAX_TEXT {
        expr = expr.chars().take(MAX_TEXT - 3).collect::<String>() + "...";
    }
    Some(ValueOrigin { expr, line: span.line, column: span.col })
}

/// Whether `name` is a name of the program (an input, a `let`, an output): a value so
/// named needs no explanation.
pub fn is_source_name(checked: &Checked, name: &str) -> bool {
    checked.inputs.contains_key(name) || checked.lets.contains_key(name) || checked.outputs.contains_key(name)
}

/// How `explain` names value `v`: its name, and for an intermediate the program does not
/// name, the expression it stands for: `t0 (= reduce (+) 0.0 xs, line 3)`.
pub fn describe(checked: &Checked, plan: &Plan, v: ValueId) -> String {
    let Some(info) = plan.values.get(v) else { return format!("v{v}") };
    if is_source_name(checked, &info.name) {
        return info.name.clone();
    }
    match origin(checked, plan, v) {
        Some(o) => format!("{} (= {}, line {})", info.name, o.expr, o.line),
        None => info.name.clone(),
    }
}

/// The expression of the program whose position is `span` (the outermost one, when
/// several start and end there). Iterative: no recursion over deep programs.
fn expr_at(checked: &Checked, span: Span) -> Option<&Expr> {
    let mut stack: Vec<&Expr> = Vec::new();
    for item in checked.program.items.iter().rev() {
        match item {
            Item::Let { value, .. } => stack.push(value),
            Item::Output { value: Some(value), .. } => stack.push(value),
            _ => {}
        }
    }
    while let Some(e) = stack.pop() {
        if e.span.start == span.start && e.span.end == span.end {
            return Some(e);
        }
        let kids: Vec<&Expr> = e.kind.children().collect();
        stack.extend(kids.into_iter().rev());
    }
    None
}
