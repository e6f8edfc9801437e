//! What `explain` says an intermediate value of a plan stands for: the source expression
//! its kernel computes (`t0 (= reduce (+) 0.0 xs, line 3)`), found by the source position
//! the plan keeps for it.

use eqfuse_ir::ast::{Expr, Item};
use eqfuse_ir::check::Checked;
use eqfuse_ir::plan::{Origin, Plan, ValueId};
use std::collections::HashMap;

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

/// The program's expressions by source position and the plan's computed values by name,
/// indexed once, so that explaining every kernel of a plan is linear in its size (a search
/// of the whole program per kernel made `explain` of a 16 000-output program take longer
/// than its optimisation).
pub struct Origins<'a> {
    checked: &'a Checked,
    plan: &'a Plan,
    /// The first expression in program order (parents before children) at each span.
    by_span: HashMap<(usize, usize), &'a Expr>,
    /// The first computed value of each name.
    by_name: HashMap<&'a str, ValueId>,
}

impl<'a> Origins<'a> {
    /// Indexes `checked` and `plan` (`plan` made from `checked`).
    pub fn new(checked: &'a Checked, plan: &'a Plan) -> Origins<'a> {
        let mut by_span = HashMap::new();
        // iterative, items in order, each expression before its children: no recursion
        // over deep programs
        let mut stack: Vec<&Expr> = Vec::new();
        for item in checked.program.items.iter().rev() {
            match item {
                Item::Let { value, .. } => stack.push(value),
                Item::Output { value: Some(value), .. } => stack.push(value),
                _ => {}
            }
        }
        while let Some(e) = stack.pop() {
            by_span.entry((e.span.start, e.span.end)).or_insert(e);
            let kids: Vec<&Expr> = e.kind.children().collect();
            stack.extend(kids.into_iter().rev());
        }
        let mut by_name = HashMap::new();
        for (id, v) in plan.values.iter().enumerate() {
            if v.origin == Origin::Computed {
                by_name.entry(v.name.as_str()).or_insert(id);
            }
        }
        Origins { checked, plan, by_span, by_name }
    }

    /// The computed value named `name`, if the plan has one.
    pub fn value_id(&self, name: &str) -> Option<ValueId> {
        self.by_name.get(name).copied()
    }

    /// The source expression value `v` computes, when the plan knows where it is.
    pub fn origin(&self, v: ValueId) -> Option<ValueOrigin> {
        let info = self.plan.values.get(v)?;
        if info.origin != Origin::Computed {
            return None;
        }
        let span = info.span?;
        let e = self.by_span.get(&(span.start, span.end))?;
        let mut expr = eqfuse_ir::print::print_expr(e);
        if expr.chars().count() > MAX_TEXT {
            expr = expr.chars().take(MAX_TEXT - 3).collect::<String>() + "...";
        }
        Some(ValueOrigin { expr, line: span.line, column: span.col })
    }

    /// A value's name, and for a name not in the program the expression it computes:
    /// `t0 (= reduce (+) 0.0 xs, line 3)`.
    pub fn describe(&self, v: ValueId) -> String {
        let Some(info) = self.plan.values.get(v) else { return format!("v{v}") };
        if is_source_name(self.checked, &info.name) {
            return info.name.clone();
        }
        match self.origin(v) {
            Some(o) => format!("{} (= {}, line {})", info.name, o.expr, o.line),
            None => info.name.clone(),
        }
    }
}

/// Whether `name` is an input, `let` or output of the program.
pub fn is_source_name(checked: &Checked, name: &str) -> bool {
    checked.inputs.contains_key(name) || checked.lets.contains_key(name) || checked.outputs.contains_key(name)
}
